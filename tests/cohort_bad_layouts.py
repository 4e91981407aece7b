"""Bad input of every kind issue 20 lists, planted beside the good cases of cohort_layouts.

Each ``add_bad_*`` writer adds files to a cohort folder written by ``cohort_layouts`` and
returns ``(good, bad, ignored)``: ``good`` maps a relative path (as the loader must print
it) to the expected (lesion fraction, bbox) or None; ``bad`` maps item id -> reject reason;
``ignored`` maps item id -> ignore reason. Expectations are worked out here from what was
drawn, never from the loader. Crafted "bomb" files carry a header promising a huge array
and almost no data: decoding them would allocate gigabytes, so a guard that checks only
after decoding fails loudly instead of passing by luck.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import zlib

import numpy as np
from PIL import Image

from cohort_layouts import _save, colour_image, expect, gray_image, rect_mask, rle_encode, write_dicom

NON_UTF8 = b"caf\xe9"  # Latin-1 e-acute: not valid UTF-8
NON_UTF8_SHOWN = "caf\\xe9"  # how guarded.display_name prints it


def fs_path(root, rel: bytes | str) -> bytes:
    """A path as bytes, so names that are not valid UTF-8 can be created."""
    rel = rel if isinstance(rel, bytes) else rel.encode()
    return os.fsencode(str(root)) + b"/" + rel


def save_bytes_name(root, rel: bytes, array, fmt):
    path = fs_path(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format=fmt)
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())


def png_bomb(width: int, height: int, colour: bool = False) -> bytes:
    """A PNG whose IHDR promises width x height pixels, with one compressed row of data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2 if colour else 0, 0, 0, 0)
    row = b"\0" * (1 + width * (3 if colour else 1))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(row)) + chunk(b"IEND", b"")


def write_raw(root, rel, data: bytes):
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def fifo(root, rel):
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mkfifo(path)


def symlink(root, rel, target):
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def save_with_orientation(path, array, orientation, fmt="PNG"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    exif = Image.Exif()
    exif[0x0112] = orientation
    Image.fromarray(array).save(path, format=fmt, exif=exif)


_ZERO_CHUNK = 1 << 24


def deflate_zeros(prefix: bytes, n_zeros: int) -> bytes:
    """Raw deflate of ``prefix`` + ``n_zeros`` zero bytes, built fast: one fully flushed block
    of 16 MiB zeros repeated (a full flush resets the window, so copies of it chain validly)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(b"\0" * _ZERO_CHUNK) + c.flush(zlib.Z_FULL_FLUSH)
    rest = c.compress(b"\0" * (n_zeros % _ZERO_CHUNK)) + c.flush(zlib.Z_FINISH)
    return head + block * (n_zeros // _ZERO_CHUNK) + rest


def gzip_zeros(prefix: bytes, n_zeros: int) -> bytes:
    """A gzip member holding ``prefix`` + ``n_zeros`` zero bytes (see :func:`deflate_zeros`)."""
    crc, zeros = zlib.crc32(prefix), b"\0" * _ZERO_CHUNK
    for _ in range(n_zeros // _ZERO_CHUNK):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(b"\0" * (n_zeros % _ZERO_CHUNK), crc)
    size = (len(prefix) + n_zeros) & 0xFFFFFFFF
    return b"\x1f\x8b\x08\0\0\0\0\0\0\xff" + deflate_zeros(prefix, n_zeros) + struct.pack("<II", crc & 0xFFFFFFFF, size)


def add_bad_2d(root, images="images", masks="masks", ext="jpg"):
    """Kvasir-SEG / image-mask-folder bad kinds (mask file name = image stem + ``ext``)."""
    good, bad, ignored = {}, {}, {}
    h, w = 48, 64
    m = rect_mask(h, w, 4, 6, 20, 30)
    fmt = "JPEG" if ext == "jpg" else "PNG"
    # a file name that is not valid UTF-8: a good case, printed with \x escapes
    save_bytes_name(root, f"{images}/".encode() + NON_UTF8 + f".{ext}".encode(), colour_image(h, w, 30), fmt)
    save_bytes_name(root, f"{masks}/".encode() + NON_UTF8 + f".{ext}".encode(), m.astype(np.uint8) * 255, fmt)
    good[f"{images}/{NON_UTF8_SHOWN}.{ext}"] = expect(m)
    # EXIF orientation 6 (stored landscape, shown rotated 90 deg clockwise); mask drawn on the shown image
    stored = colour_image(h, w, 31)
    save_with_orientation(f"{root}/{images}/turned.png", stored, 6)
    shown_mask = rect_mask(w, h, 2, 40, 30, 60)  # displayed image is w rows x h columns
    _save(f"{root}/{masks}/turned.png", shown_mask.astype(np.uint8) * 255)
    good[f"{images}/turned.png"] = expect(shown_mask)
    _save(f"{root}/{images}/sideways.png", colour_image(h, w, 32))
    save_with_orientation(f"{root}/{masks}/sideways.png", m.astype(np.uint8) * 255, 9)
    bad[f"{images}/sideways.png"] = "bad EXIF orientation"
    # two candidate masks for one image
    _save(f"{root}/{images}/twice.png", colour_image(h, w, 33))
    _save(f"{root}/{masks}/twice.png", m.astype(np.uint8) * 255)
    _save(f"{root}/{masks}/twice.jpg", m.astype(np.uint8) * 255, "JPEG")
    bad[f"{images}/twice.png"] = "ambiguous mask"
    # a mask no image claims
    _save(f"{root}/{masks}/ghost.png", m.astype(np.uint8) * 255)
    bad[f"{masks}/ghost.png"] = "mask without image"
    # a FIFO named like an image, a symlink to /dev/zero, a dangling symlink, a FIFO as mask
    fifo(root, f"{images}/pipe.png")
    bad[f"{images}/pipe.png"] = "not a regular file"
    symlink(root, f"{images}/zero.png", "/dev/zero")
    bad[f"{images}/zero.png"] = "path leaves the input root"  # a link out of --path is never read
    symlink(root, f"{images}/dangling.png", f"{root}/nowhere.png")
    bad[f"{images}/dangling.png"] = "unreadable file"
    _save(f"{root}/{images}/piped_mask.png", colour_image(h, w, 34))
    fifo(root, f"{masks}/piped_mask.png")
    bad[f"{images}/piped_mask.png"] = "not a regular file"
    # decompression bombs: headers promise 12000 x 12000 (144 Mpx: under Pillow's error cap,
    # above the default max_image_pixels), data is one row
    _save(f"{root}/{images}/maskbomb.png", colour_image(h, w, 35))
    write_raw(root, f"{masks}/maskbomb.png", png_bomb(12000, 12000))
    bad[f"{images}/maskbomb.png"] = "over max_image_pixels"
    write_raw(root, f"{images}/imagebomb.png", png_bomb(12000, 12000, colour=True))
    _save(f"{root}/{masks}/imagebomb.png", m.astype(np.uint8) * 255)
    bad[f"{images}/imagebomb.png"] = "over max_image_pixels"
    # files that are no image: listed as ignored, not silently skipped
    write_raw(root, f"{images}/README.txt", b"exported 2024\n")
    ignored[f"{images}/README.txt"] = "not a png/jpg/jpeg/bmp/tif/tiff file"
    write_raw(root, f"{masks}/.DS_Store", b"\0\0\0\1Bud1")
    ignored[f"{masks}/.DS_Store"] = "hidden file"
    # a symlink loop: the folder links to itself
    symlink(root, f"{images}/again", ".")
    ignored[f"{images}/again"] = "folder already listed (symlink loop or repeat)"
    return good, bad, ignored


def add_bad_busi(root):
    good, bad, ignored = {}, {}, {}
    h, w = 40, 56
    c = rect_mask(h, w, 10, 10, 30, 25)
    _save(f"{root}/Malignant/malignant (9).png", gray_image(h, w, 40))
    _save(f"{root}/Malignant/malignant (9)_mask.png", c.astype(np.uint8) * 255)
    good["Malignant/malignant (9).png"] = expect(c)
    _save(f"{root}/benign/benign (99)_mask_2.png", c.astype(np.uint8) * 255)  # stray mask, no image
    bad["benign/benign (99)_mask_2.png"] = "mask without image"
    save_bytes_name(root, b"normal/" + NON_UTF8 + b" (3).png", gray_image(h, w, 41), "PNG")
    good[f"normal/{NON_UTF8_SHOWN} (3).png"] = None
    write_raw(root, "notes.txt", b"BUSI 2020\n")
    ignored["notes.txt"] = "outside the BUSI class folders"
    write_raw(root, "benign/Thumbs.db", b"\0" * 16)
    ignored["benign/Thumbs.db"] = "not a png/jpg/jpeg/bmp/tif/tiff file"
    fifo(root, "benign/benign (50).png")
    bad["benign/benign (50).png"] = "not a regular file"
    return good, bad, ignored


def add_symlinked_subfolder(root, elsewhere):
    """(good, bad) of image-mask-folder: images/site2 -> a folder outside the cohort, whose
    image is refused (issue 32: nothing is read from outside --path); images/site3 -> a folder
    inside the cohort (``extra/site3``), which is followed."""
    h, w = 32, 40
    m = rect_mask(h, w, 5, 5, 20, 12)
    _save(f"{elsewhere}/site2/P010_a.png", gray_image(h, w, 50))
    symlink(root, "images/site2", f"{elsewhere}/site2")
    _save(f"{root}/masks/site2/P010_a.png", m.astype(np.uint8) * 255)
    _save(f"{root}/extra/site3/P011_a.png", gray_image(h, w, 51))
    symlink(root, "images/site3", f"{root}/extra/site3")
    _save(f"{root}/masks/site3/P011_a.png", m.astype(np.uint8) * 255)
    return {"images/site3/P011_a.png": expect(m)}, {"images/site2/P010_a.png": "path leaves the input root"}


def dicom_header_bomb(path, rows, cols):
    """An uncompressed DICOM whose Rows x Columns promise far more pixels than it holds."""
    write_dicom(path, np.zeros((4, 4), np.uint8), "pat-bomb")
    import pydicom

    ds = pydicom.dcmread(path)
    ds.Rows, ds.Columns = rows, cols
    ds.save_as(path, enforce_file_format=True)


def deflated_dicom(path, pixels, patient_id, pad_bytes=0):
    """A Deflated Explicit VR Little Endian DICOM; ``pad_bytes`` of zeros inflate from a
    private element appended after the pixels (streamed, so the fixture stays small)."""
    import pydicom
    from pydicom.filewriter import write_dataset, write_file_meta_info
    from pydicom.filebase import DicomBytesIO

    write_dicom(path, pixels, patient_id)
    ds = pydicom.dcmread(path)
    ds.file_meta.TransferSyntaxUID = pydicom.uid.DeflatedExplicitVRLittleEndian
    body = DicomBytesIO()
    body.is_little_endian, body.is_implicit_VR = True, False
    write_dataset(body, ds)
    prefix = body.getvalue()
    if pad_bytes:
        # a (7FE1,1010) private OB element after the pixels; pydicom would inflate all of it
        # before parsing anything
        prefix += struct.pack("<HH", 0x7FE1, 0x1010) + b"OB\0\0" + struct.pack("<I", pad_bytes)
    out = [deflate_zeros(prefix, pad_bytes)]
    meta = DicomBytesIO()
    meta.is_little_endian, meta.is_implicit_VR = True, False
    write_file_meta_info(meta, ds.file_meta, enforce_standard=True)
    with open(path, "wb") as fh:
        fh.write(b"\0" * 128 + b"DICM" + meta.getvalue() + b"".join(out))


def add_bad_siim(root):
    """SIIM-ACR bad kinds; rewrites train-rle.csv with the bad rows first, so a row that
    swallowed what follows would lose the good cases after it."""
    good, bad, ignored = {}, {}, {}
    h, w = 32, 32
    d = "dicom-images-train"
    m = rect_mask(h, w, 3, 3, 9, 12)
    lines = []
    for i, kind in enumerate(["utf8", "quote", "huge", "norle"], start=20):
        write_dicom(f"{root}/{d}/bad/1.2.3.{i}.dcm", gray_image(h, w, i), f"pat-{i}")
    lines.append(b"1.2.3.20, 3 4 \xff\xfe 2")
    bad[f"{d}/bad/1.2.3.20.dcm"] = "CSV row not UTF-8"
    lines.append(b'1.2.3.21,"3 4 5 2')  # unclosed quote: must not swallow the rows below
    bad[f"{d}/bad/1.2.3.21.dcm"] = "malformed CSV row"
    lines.append(b'1.2.3.22, "' + b"1 " * 70000 + b'"')  # a quoted field over csv's 128 KiB limit
    bad[f"{d}/bad/1.2.3.22.dcm"] = "malformed CSV row"
    lines.append(b"1.2.3.23,")  # ImageId without EncodedPixels: not "no pneumothorax"
    bad[f"{d}/bad/1.2.3.23.dcm"] = "missing RLE"
    lines.append(b", 1 2")
    lines.append(b"1.2.9.9, 1 \xff")  # not UTF-8, and no such image: the line is the reject
    with open(f"{root}/train-rle.csv", "rb") as fh:
        old = fh.read().split(b"\n")
    header, rest = old[0], [ln for ln in old[1:] if ln]
    first_bad = 2  # line numbers of the rows without a usable ImageId, 1-based after the header
    bad[f"train-rle.csv:line {first_bad + 4}"] = "CSV row without ImageId"
    bad[f"train-rle.csv:line {first_bad + 5}"] = "CSV row not UTF-8"
    # a deflated DICOM (fine), a header bomb, a FIFO, a name that is not UTF-8, a non-image file
    deflated_dicom(f"{root}/{d}/defl/1.2.3.30.dcm", gray_image(h, w, 30), "pat-30")
    rest.append(b"1.2.3.30, " + rle_encode(m).encode())
    good[f"{d}/defl/1.2.3.30.dcm"] = expect(m)
    dicom_header_bomb(f"{root}/{d}/bomb/1.2.3.31.dcm", 60000, 60000)
    rest.append(b"1.2.3.31, -1")
    bad[f"{d}/bomb/1.2.3.31.dcm"] = "over max_image_pixels"
    fifo(root, f"{d}/pipe/1.2.3.32.dcm")
    rest.append(b"1.2.3.32, -1")
    bad[f"{d}/pipe/1.2.3.32.dcm"] = "not a regular file"
    save_bytes_name(root, f"{d}/png/".encode() + NON_UTF8 + b".png", gray_image(h, w, 33), "PNG")
    bad[f"{d}/png/{NON_UTF8_SHOWN}.png"] = "missing mask"
    write_raw(root, f"{d}/index.html", b"<html></html>")
    ignored[f"{d}/index.html"] = "not a dcm/png/jpg/jpeg file"
    with open(f"{root}/train-rle.csv", "wb") as fh:
        fh.write(b"\r".join([header] + lines + rest) + b"\r")  # CR-only line endings throughout
    return good, bad, ignored


def nifti_bytes_with_zero_sform(shape, dtype=np.int16) -> bytes:
    """An uncompressed NIfTI-1 whose sform is all zeros (sform_code 1) and qform unset."""
    import nibabel as nib

    hdr = nib.Nifti1Header()
    hdr.set_data_shape(shape)
    hdr.set_data_dtype(dtype)
    hdr["sform_code"], hdr["qform_code"] = 1, 0
    for row in ("srow_x", "srow_y", "srow_z"):
        hdr[row] = [0, 0, 0, 0]
    hdr["vox_offset"] = 352
    return hdr.binaryblock + b"\0" * 4 + np.zeros(shape, dtype).tobytes()


def nifti_header_bomb(shape, dtype=np.float32) -> bytes:
    """A gzipped NIfTI-1 header promising ``shape`` x ``dtype`` with a few bytes of data."""
    import nibabel as nib

    hdr = nib.Nifti1Header()
    hdr.set_data_shape(shape)
    hdr.set_data_dtype(dtype)
    hdr.set_sform(np.diag([1.0, 1.0, 1.0, 1.0]), 1)
    hdr["vox_offset"] = 352
    return gzip.compress(hdr.binaryblock + b"\0" * 4 + b"\0" * 64)


def add_bad_nifti(root):
    import nibabel as nib

    good, bad, ignored = {}, {}, {}
    shape, affine = (16, 16, 6), np.diag([0.8, 0.8, 2.5, 1.0])
    img = np.full(shape, -1000, np.int16)
    rgb_dtype = np.dtype([("R", "u1"), ("G", "u1"), ("B", "u1")])
    nib.save(nib.Nifti1Image(img, affine), f"{root}/imagesTr/img0020.nii.gz")
    nib.save(nib.Nifti1Image(np.zeros(shape, rgb_dtype), affine), f"{root}/labelsTr/label0020.nii.gz")
    bad["imagesTr/img0020.nii.gz"] = "non-integer label map"
    write_raw(root, "imagesTr/img0021.nii", nifti_bytes_with_zero_sform(shape))
    write_raw(root, "labelsTr/label0021.nii", nifti_bytes_with_zero_sform(shape, np.uint8))
    bad["imagesTr/img0021.nii"] = "invalid affine"
    nib.save(nib.Nifti1Image(np.zeros(shape, np.uint8), affine), f"{root}/labelsTr/label0099.nii.gz")
    bad["labelsTr/label0099.nii.gz"] = "label map without image"
    write_raw(root, "imagesTr/img0022.nii.gz", nifti_header_bomb((2000, 2000, 300)))  # 4.8 GB promised
    nib.save(nib.Nifti1Image(np.zeros(shape, np.uint8), affine), f"{root}/labelsTr/label0022.nii.gz")
    bad["imagesTr/img0022.nii.gz"] = "over max_decoded_bytes"
    nib.save(nib.Nifti1Image(img, affine), f"{root}/imagesTr/img0023.nii.gz")
    fifo(root, "labelsTr/label0023.nii.gz")
    bad["imagesTr/img0023.nii.gz"] = "not a regular file"
    name = b"img0024" + NON_UTF8
    with open(fs_path(root, b"imagesTr/" + name + b".nii.gz"), "wb") as fh:
        fh.write(gzip.compress(nib.Nifti1Image(img, affine).to_bytes()))
    bad[f"imagesTr/img0024{NON_UTF8_SHOWN}.nii.gz"] = "file name not UTF-8"
    write_raw(root, "labelsTr/dataset.json", b"{}")
    ignored["labelsTr/dataset.json"] = "not a nii.gz/nii file"
    return good, bad, ignored
