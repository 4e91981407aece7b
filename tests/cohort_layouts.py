"""Tiny cohorts written in exactly the real datasets' on-disk layouts, good and bad files mixed.

Each writer returns what a correct loader must produce, worked out here from the pixels
the writer drew (not from the loader): ``good`` maps the image's relative path to its
expected (lesion area fraction, bbox) or None for lesion-free; ``bad`` maps relative path to
the expected reject reason. Other test modules reuse these writers.
"""

from __future__ import annotations

import gzip
import io
import os

import cv2
import numpy as np
from PIL import Image


def _save(path, array, fmt=None, **kw):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(array).save(path, format=fmt, **kw)


def rect_mask(h, w, x1, y1, x2, y2):
    """Boolean mask with the inclusive rectangle [x1, y1, x2, y2] set."""
    m = np.zeros((h, w), dtype=bool)
    m[y1 : y2 + 1, x1 : x2 + 1] = True
    return m


def expect(mask):
    ys, xs = np.nonzero(mask)
    return (mask.mean(), [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())])


def colour_image(h, w, seed):
    rng = np.random.default_rng(seed)
    base = np.zeros((h, w, 3), np.uint8)
    base[..., 0] = 150 + rng.integers(0, 40)
    base[..., 1] = np.linspace(40, 90, w, dtype=np.uint8)[None, :]
    base[..., 2] = 60
    return base


def gray_image(h, w, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(30, 200, size=(h, w), dtype=np.uint8)


def ramp16(h, w):
    """A 12-bit-range uint16 ramp (0..3*(h*w-1)) and the 8-bit image a loader must make of it."""
    ramp = (np.arange(h * w, dtype=np.uint16).reshape(h, w) * 3).astype(np.uint16)
    want = np.rint(ramp.astype(float) * 255.0 / float(ramp.max())).astype(np.uint8)
    return ramp, want


def write16(path, ramp):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cv2.imwrite(str(path), ramp)


def truncated_bytes(array, fmt):
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format=fmt)
    data = buf.getvalue()
    return data[: len(data) // 2]


def write_kvasir(root):
    """Kvasir-SEG: images/*.jpg + masks/*.jpg (JPEG masks: edges carry ringing)."""
    good, bad = {}, {}
    h, w = 48, 64
    for i, box in enumerate([(10, 8, 29, 27), (30, 20, 55, 40), (5, 5, 14, 12)]):
        name = f"cju{i:04d}.jpg"
        _save(f"{root}/images/{name}", colour_image(h, w, i), "JPEG", quality=95)
        m = rect_mask(h, w, *box)
        _save(f"{root}/masks/{name}", m.astype(np.uint8) * 255, "JPEG", quality=90)
        good[f"images/{name}"] = expect(m)
    # truncated JPEG image
    os.makedirs(f"{root}/images", exist_ok=True)
    with open(f"{root}/images/truncated.jpg", "wb") as fh:
        fh.write(truncated_bytes(colour_image(h, w, 9), "JPEG"))
    _save(f"{root}/masks/truncated.jpg", rect_mask(h, w, 1, 1, 5, 5).astype(np.uint8) * 255, "JPEG")
    bad["images/truncated.jpg"] = "unreadable image"
    # missing mask
    _save(f"{root}/images/nomask.jpg", colour_image(h, w, 10), "JPEG")
    bad["images/nomask.jpg"] = "missing mask"
    # mask of another size
    _save(f"{root}/images/small.jpg", colour_image(h, w, 11), "JPEG")
    _save(f"{root}/masks/small.jpg", rect_mask(24, 32, 1, 1, 9, 9).astype(np.uint8) * 255, "JPEG")
    bad["images/small.jpg"] = "mask size differs"
    # empty mask
    _save(f"{root}/images/empty.jpg", colour_image(h, w, 12), "JPEG")
    _save(f"{root}/masks/empty.jpg", np.zeros((h, w), np.uint8), "JPEG")
    bad["images/empty.jpg"] = "empty mask"
    # whole-image mask
    _save(f"{root}/images/whole.jpg", colour_image(h, w, 13), "JPEG")
    _save(f"{root}/masks/whole.jpg", np.full((h, w), 255, np.uint8), "JPEG")
    bad["images/whole.jpg"] = "whole-image mask"
    # graded (non-binary) mask: thresholded at > 127 under the Kvasir default
    _save(f"{root}/images/graded.jpg", colour_image(h, w, 14), "JPEG")
    grades = np.zeros((h, w), np.uint8)
    grades[8:24, 8:24] = 80
    grades[24:40, 32:56] = 200
    _save(f"{root}/masks/graded.jpg", grades, "JPEG", quality=95)
    good["images/graded.jpg"] = expect(rect_mask(h, w, 32, 24, 55, 39))
    # a 16-bit PNG among the JPEGs
    ramp, _ = ramp16(h, w)
    write16(f"{root}/images/deep.png", ramp)
    m = rect_mask(h, w, 40, 2, 50, 10)
    _save(f"{root}/masks/deep.png", m.astype(np.uint8) * 255)
    good["images/deep.png"] = expect(m)
    return good, bad


def write_busi(root):
    """BUSI: benign/ malignant/ normal/ with 'x (n).png' and 'x (n)_mask[_k].png' (PNG 0/255)."""
    good, bad = {}, {}
    h, w = 40, 56

    def pair(cls, n, masks, seed):
        name = f"{cls} ({n})"
        _save(f"{root}/{cls}/{name}.png", np.stack([gray_image(h, w, seed)] * 3, axis=2))
        for k, m in enumerate(masks):
            suffix = "_mask" if k == 0 else f"_mask_{k}"
            _save(f"{root}/{cls}/{name}{suffix}.png", m if m.dtype == np.uint8 else m.astype(np.uint8) * 255)
        return f"{cls}/{name}.png"

    a = rect_mask(h, w, 5, 5, 15, 12)
    good[pair("benign", 1, [a], 1)] = expect(a)
    b1, b2 = rect_mask(h, w, 2, 2, 8, 8), rect_mask(h, w, 30, 20, 40, 30)
    good[pair("benign", 2, [b1, b2], 2)] = expect(b1 | b2)  # two lesions merged
    c = rect_mask(h, w, 20, 10, 45, 35)
    good[pair("malignant", 1, [c], 3)] = expect(c)
    good[pair("normal", 1, [np.zeros((h, w), bool)], 4)] = None  # BUSI ships empty normal masks
    good[pair("normal", 2, [], 5)] = None
    bad[pair("benign", 3, [np.zeros((h, w), bool)], 6)] = "empty mask"
    bad[pair("benign", 4, [], 7)] = "missing mask"
    grades = np.zeros((h, w), np.uint8)
    grades[5:15, 5:15] = 80
    grades[20:30, 20:30] = 200
    bad[pair("malignant", 2, [grades], 8)] = "non-binary mask"
    bad[pair("malignant", 3, [np.ones((h, w), bool)], 9)] = "whole-image mask"
    bad[pair("benign", 5, [rect_mask(h + 4, w, 1, 1, 5, 5)], 10)] = "mask size differs"
    with open(f"{root}/benign/benign (6).png", "wb") as fh:
        fh.write(truncated_bytes(gray_image(h, w, 11), "PNG"))
    _save(f"{root}/benign/benign (6)_mask.png", rect_mask(h, w, 1, 1, 5, 5).astype(np.uint8) * 255)
    bad["benign/benign (6).png"] = "unreadable image"
    ramp, _ = ramp16(h, w)
    write16(f"{root}/benign/benign (7).png", ramp)
    m = rect_mask(h, w, 10, 10, 20, 30)
    _save(f"{root}/benign/benign (7)_mask.png", m.astype(np.uint8) * 255)
    good["benign/benign (7).png"] = expect(m)
    return good, bad


def write_image_mask_folder(root, *, sixteen_bit_value=None):
    """Generic images/ + masks/ with a patient id in the name: 'P001_a.png' + 'P001_a_mask.png'."""
    good, bad = {}, {}
    h, w = 32, 40
    m1 = rect_mask(h, w, 3, 4, 12, 20)
    _save(f"{root}/images/P001_a.png", gray_image(h, w, 1))
    _save(f"{root}/masks/P001_a_mask.png", m1.astype(np.uint8))  # 0/1 mask is binary too
    good["images/P001_a.png"] = expect(m1)
    m2 = rect_mask(h, w, 20, 2, 39, 9)
    ramp, _ = ramp16(h, w)  # 0..3837, 12-bit range
    write16(f"{root}/images/P001_b.png", ramp)
    _save(f"{root}/masks/P001_b_mask.png", m2.astype(np.uint8) * 255)
    good["images/P001_b.png"] = expect(m2)
    _save(f"{root}/images/P002_a.png", gray_image(h, w, 3))  # no mask file
    bad["images/P002_a.png"] = "missing mask"
    _save(f"{root}/images/P003_a.png", gray_image(h, w, 4))
    labels = np.zeros((h, w), np.uint8)
    labels[2:8, 2:8] = 1
    labels[10:20, 10:20] = 2
    _save(f"{root}/masks/P003_a_mask.png", labels)
    bad["images/P003_a.png"] = "non-binary mask"
    with open(f"{root}/images/P004_a.png", "wb") as fh:
        fh.write(b"this is not a PNG file")
    _save(f"{root}/masks/P004_a_mask.png", m1.astype(np.uint8) * 255)
    bad["images/P004_a.png"] = "unreadable image"
    _save(f"{root}/images/P005_a.png", gray_image(h, w, 5))
    _save(f"{root}/masks/P005_a_mask.png", rect_mask(h + 2, w + 2, 1, 1, 5, 5).astype(np.uint8) * 255)
    bad["images/P005_a.png"] = "mask size differs"
    _save(f"{root}/images/P006_a.png", gray_image(h, w, 6))
    _save(f"{root}/masks/P006_a_mask.png", np.zeros((h, w), np.uint8))
    bad["images/P006_a.png"] = "empty mask"
    _save(f"{root}/images/P007_a.png", gray_image(h, w, 7))
    _save(f"{root}/masks/P007_a_mask.png", np.full((h, w), 255, np.uint8))
    bad["images/P007_a.png"] = "whole-image mask"
    return good, bad


def rle_encode(mask):
    """SIIM-ACR run-length encoding: column-major, start relative to the end of the last run."""
    flat = mask.T.reshape(-1).astype(bool)
    runs, pos, i, n = [], 0, 0, flat.size
    while i < n:
        if flat[i]:
            j = i
            while j < n and flat[j]:
                j += 1
            runs += [i - pos, j - i]
            pos = j
            i = j
        else:
            i += 1
    return " ".join(str(r) for r in runs) if runs else "-1"


def write_dicom(path, pixels, patient_id):
    """A minimal uncompressed MONOCHROME2 DICOM file holding ``pixels`` (uint8 or uint16)."""
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.PatientID = patient_id
    ds.Modality = "CR"
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    bits = 16 if pixels.dtype == np.uint16 else 8
    ds.BitsAllocated = bits
    ds.BitsStored = bits
    ds.HighBit = bits - 1
    ds.PixelRepresentation = 0
    ds.PixelData = pixels.tobytes()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ds.save_as(path, enforce_file_format=True)


def write_siim(root):
    """SIIM-ACR: dicom-images-train/<study>/<series>/<id>.dcm (and .png) + train-rle.csv."""
    good, bad = {}, {}
    h, w = 32, 32
    d = "dicom-images-train"
    rows = []
    m1 = rect_mask(h, w, 2, 3, 10, 15)
    write_dicom(f"{root}/{d}/1.2.1/1.2.1.1/1.2.3.1.dcm", gray_image(h, w, 1), "pat-1")
    rows.append(("1.2.3.1", rle_encode(m1)))
    good[f"{d}/1.2.1/1.2.1.1/1.2.3.1.dcm"] = expect(m1)
    # two rows for one image: merged
    ma, mb = rect_mask(h, w, 0, 0, 4, 4), rect_mask(h, w, 20, 20, 30, 25)
    write_dicom(f"{root}/{d}/1.2.2/1.2.2.1/1.2.3.2.dcm", ramp16(h, w)[0], "pat-2")  # 16-bit DICOM
    rows += [("1.2.3.2", rle_encode(ma)), ("1.2.3.2", rle_encode(mb))]
    good[f"{d}/1.2.2/1.2.2.1/1.2.3.2.dcm"] = expect(ma | mb)
    # no finding
    write_dicom(f"{root}/{d}/1.2.3/1.2.3.1/1.2.3.3.dcm", gray_image(h, w, 3), "pat-3")
    rows.append(("1.2.3.3", "-1"))
    good[f"{d}/1.2.3/1.2.3.1/1.2.3.3.dcm"] = None
    # PNG image
    m4 = rect_mask(h, w, 10, 10, 12, 20)
    _save(f"{root}/{d}/png/1.2.3.4.png", gray_image(h, w, 4))
    rows.append(("1.2.3.4", rle_encode(m4)))
    good[f"{d}/png/1.2.3.4.png"] = expect(m4)
    # malformed RLE: odd number of values / not numbers / running past the image
    write_dicom(f"{root}/{d}/x/1.2.3.5.dcm", gray_image(h, w, 5), "pat-5")
    rows.append(("1.2.3.5", "12 4 7"))
    bad[f"{d}/x/1.2.3.5.dcm"] = "malformed RLE"
    write_dicom(f"{root}/{d}/x/1.2.3.6.dcm", gray_image(h, w, 6), "pat-6")
    rows.append(("1.2.3.6", "3 x 5 2"))
    bad[f"{d}/x/1.2.3.6.dcm"] = "malformed RLE"
    write_dicom(f"{root}/{d}/x/1.2.3.7.dcm", gray_image(h, w, 7), "pat-7")
    rows.append(("1.2.3.7", f"{h * w - 2} 5"))
    bad[f"{d}/x/1.2.3.7.dcm"] = "malformed RLE"
    # truncated DICOM
    os.makedirs(f"{root}/{d}/x", exist_ok=True)
    write_dicom(f"{root}/{d}/x/1.2.3.8.dcm", gray_image(h, w, 8), "pat-8")
    with open(f"{root}/{d}/x/1.2.3.8.dcm", "rb") as fh:
        data = fh.read()
    with open(f"{root}/{d}/x/1.2.3.8.dcm", "wb") as fh:
        fh.write(data[: len(data) - 600])
    rows.append(("1.2.3.8", rle_encode(m1)))
    bad[f"{d}/x/1.2.3.8.dcm"] = "unreadable image"
    # a run covering every pixel
    write_dicom(f"{root}/{d}/x/1.2.3.10.dcm", gray_image(h, w, 10), "pat-10")
    rows.append(("1.2.3.10", f"0 {h * w}"))
    bad[f"{d}/x/1.2.3.10.dcm"] = "whole-image mask"
    # image with no CSV row
    _save(f"{root}/{d}/png/1.2.3.9.png", gray_image(h, w, 9))
    bad[f"{d}/png/1.2.3.9.png"] = "missing mask"
    # CSV row without an image
    rows.append(("1.2.3.99", rle_encode(m1)))
    bad["train-rle.csv:1.2.3.99"] = "missing image"
    with open(f"{root}/train-rle.csv", "w") as fh:
        fh.write("ImageId, EncodedPixels\n")  # the Kaggle header has the space
        for image_id, rle in rows:
            fh.write(f"{image_id}, {rle}\n")
    return good, bad


def write_nifti_labels(root, organ_map=None):
    """Decathlon-style imagesTr/ + labelsTr/ (BTCV names img0001 / label0001) + organs YAML."""
    import nibabel as nib
    import yaml

    organ_map = organ_map or {1: "spleen", 2: "liver", 3: "aorta"}
    good, bad = {}, {}
    affine = np.diag([0.8, 0.8, 2.5, 1.0])
    shape = (16, 16, 6)

    def vol(i, label=None, label_shape=shape, label_affine=affine, label_dtype=np.uint8):
        img = np.full(shape, -1000, np.int16)
        img[4:12, 4:12, :] = 40
        os.makedirs(f"{root}/imagesTr", exist_ok=True)
        os.makedirs(f"{root}/labelsTr", exist_ok=True)
        nib.save(nib.Nifti1Image(img, affine), f"{root}/imagesTr/img{i:04d}.nii.gz")
        if label is None:
            label = np.zeros(label_shape, label_dtype)
            label[4:8, 4:8, 1:4] = 1
            label[8:12, 8:12, 2:6] = 2
        nib.save(nib.Nifti1Image(label.astype(label_dtype), label_affine), f"{root}/labelsTr/label{i:04d}.nii.gz")
        return f"imagesTr/img{i:04d}.nii.gz"

    good[vol(1)] = {"shape": list(shape), "spacing": [0.8, 0.8, 2.5]}
    good[vol(2)] = {"shape": list(shape), "spacing": [0.8, 0.8, 2.5]}
    bad[vol(3, label_shape=(16, 16, 5))] = "label shape differs"
    bad[vol(4, label_affine=np.diag([0.8, 0.8, 3.0, 1.0]))] = "label affine differs"
    soft = np.zeros(shape, np.float32)
    soft[4:8, 4:8, 1:4] = 0.5
    bad[vol(5, label=soft, label_dtype=np.float32)] = "non-integer label map"
    # corrupt image: a gzip stream cut in half
    vol(6)
    with open(f"{root}/imagesTr/img0006.nii.gz", "rb") as fh:
        data = fh.read()
    with open(f"{root}/imagesTr/img0006.nii.gz", "wb") as fh:
        fh.write(data[: len(data) // 2])
    bad["imagesTr/img0006.nii.gz"] = "corrupt NIfTI"
    with open(f"{root}/imagesTr/img0007.nii.gz", "wb") as fh:
        fh.write(gzip.compress(b"not a nifti header at all" * 20))
    bad["imagesTr/img0007.nii.gz"] = "corrupt NIfTI"
    img = nib.Nifti1Image(np.zeros(shape, np.int16), affine)
    nib.save(img, f"{root}/imagesTr/img0008.nii.gz")
    bad["imagesTr/img0008.nii.gz"] = "missing label map"
    with open(f"{root}/organs.yaml", "w") as fh:
        yaml.safe_dump({"organ_map": organ_map}, fh)
    return good, bad
