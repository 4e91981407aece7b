"""Issue 32, the fresh campaign: kinds of bad input written *after* the guarded reader layer,
across every reader (2D folders, SIIM CSV + DICOM, NIfTI labels, BraTS, LGG, the VQA JSON and
pickle releases, dataset / model configs, the JSON files of runs and packs, image bytes in
tables, URL redaction, the folder lock).

Each cohort kind builds a good layout, loads it once (the baseline), plants one bad input and
loads again. Clean means: every baseline case comes back identical, and the planted file ends
as what the kind expects (a reject with the named reason, ``ANY`` reject reason, or ``KEPT`` as
a case), never an exception. Non-cohort kinds expect one clear MedScopeError naming the file
(and the field), or the right value. The first run's clean rate is in docs/cohorts-bad-input.md;
a kind that still fails is marked xfail with its reason.
"""

import gzip
import io
import json
import os
import pickle

import nibabel as nib
import numpy as np
import pytest
from PIL import Image

from tests.fixtures.cohort_bad_layouts import write_raw
from tests.fixtures.cohort_layouts import _save, gray_image, rect_mask, rle_encode, write_dicom, write16
from medscope import cohorts, config as cfgmod, images
from medscope.io import folder_lock, records, safe_text
from medscope.errors import MedScopeError

pytestmark = pytest.mark.timeout(120)

KEPT, ANY = "kept", "any reason"
IMF = {"mask_suffix": "_mask"}


def _png(array, mode=None):
    buf = io.BytesIO()
    Image.fromarray(array, mode=mode).save(buf, format="PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------- harness


def _key(fmt, root, row):
    if "image_uri" in row:
        return row["image_uri"].rsplit(str(root) + "/", 1)[-1]
    if "released_id" in row:
        return f"{row['image_file']}#{row['released_id']}"
    return row["source_file"]


def _load(fmt, root, overrides):
    cfg = cohorts.dataset_config(fmt, overrides=overrides)
    table, rejects = cohorts.load(fmt, str(root), cfg)
    records.to_table("rejects", rejects)  # every row storable
    rows = {_key(fmt, root, r): r for r in table.to_pylist()}
    return rows, {r["item_id"]: r["reason"] for r in rejects}


def run_kind(tmp_path, fmt, build, plant, overrides=None):
    root = tmp_path / "data"
    build(root)
    base_rows, base_rejects = _load(fmt, root, overrides)
    assert base_rows, "the good layout must give cases"
    expected = plant(root)
    rows, rejects = _load(fmt, root, overrides)
    for k, r in base_rows.items():  # every good case is kept, unchanged
        assert rows.get(k) == r, f"good case {k} lost or changed"
    for k, why in base_rejects.items():
        assert rejects.get(k) == why
    for item, want in expected.items():
        if want == KEPT:
            assert item in rows, f"{item} should be a case; rejects: {rejects.get(item)}"
        elif want == ANY:
            assert item in rejects, f"{item} has no reject row"
        else:
            assert rejects.get(item) == want, f"{item}: got {rejects.get(item)!r}, want {want!r}"
    new = set(rows) - set(base_rows) - {k for k, w in expected.items() if w == KEPT}
    assert not new, f"unexpected new cases {new}"


# --------------------------------------------------------------------------- builders


def imf(root):
    h, w = 32, 40
    for i, box in enumerate(((3, 4, 12, 20), (20, 2, 39, 9))):
        _save(f"{root}/images/G{i}.png", gray_image(h, w, i + 1))
        _save(f"{root}/masks/G{i}_mask.png", rect_mask(h, w, *box).astype(np.uint8) * 255)


def _imf_pair(root, name, image_bytes, mask=None, mask_bytes=None, ext="png"):
    write_raw(root, f"images/{name}.{ext}", image_bytes)
    if mask_bytes is None:
        mask_bytes = _png((rect_mask(32, 40, 5, 5, 15, 15) if mask is None else mask).astype(np.uint8) * 255)
    write_raw(root, f"masks/{name}_mask.png", mask_bytes)
    return f"images/{name}.{ext}"


def siim(root):
    d = f"{root}/dicom-images-train"
    rows = []
    for i in range(2):
        m = rect_mask(32, 32, 2 + i, 3, 10, 15)
        write_dicom(f"{d}/s{i}/1.2.{i}.dcm", gray_image(32, 32, i + 1), f"pat-{i}")
        rows.append(f"1.2.{i},{rle_encode(m)}")
    write_raw(root, "train-rle.csv", ("ImageId,EncodedPixels\n" + "\n".join(rows) + "\n").encode())


def _siim_add(root, image_id, line, write=True, sub="x"):
    if write:
        write_dicom(f"{root}/dicom-images-train/{sub}/{image_id}.dcm", gray_image(32, 32, 9), "pat-9")
    with open(f"{root}/train-rle.csv", "ab") as fh:
        fh.write(line)
    return f"dicom-images-train/{sub}/{image_id}.dcm"


ORGANS = {"organ_map": {1: "spleen", 2: "liver"}}


def nii(root):
    for i in (1, 2):
        _nii_pair(root, i, np.full((12, 12, 5), 40, np.int16), _labels())


def _labels(dtype=np.uint8):
    lab = np.zeros((12, 12, 5), dtype)
    lab[2:6, 2:6, 1:3] = 1
    lab[6:10, 6:10, 2:4] = 2
    return lab


def _nii_pair(root, i, image, label, affine=None, header=None, kind=nib.Nifti1Image):
    affine = np.eye(4) if affine is None else affine
    os.makedirs(f"{root}/imagesTr", exist_ok=True)
    os.makedirs(f"{root}/labelsTr", exist_ok=True)
    nib.save(kind(image, affine, dtype=image.dtype), f"{root}/imagesTr/img{i:04d}.nii.gz")
    if label is not None:
        nib.save(nib.Nifti1Image(label, affine, header=header, dtype=label.dtype), f"{root}/labelsTr/label{i:04d}.nii.gz")
    return f"imagesTr/img{i:04d}.nii.gz"


def vqarad(root):
    from tests.fixtures.replay_layouts import write_vqa_rad

    write_vqa_rad(root, 3, {}, {})


def _vqarad_edit(root, fn):
    p = root / "VQA_RAD Dataset Public.json"
    data = json.loads(p.read_text())
    out = fn(data)
    if isinstance(out, bytes):
        p.write_bytes(out)
    else:
        p.write_text(json.dumps(out))


def pathvqa(root):
    from tests.fixtures.replay_layouts import smooth_image, write_pathvqa

    write_pathvqa(root, 3, {7: smooth_image(77)}, {})


def brats(root):
    from tests.fixtures.release_layouts import _brats_volumes, _nii

    flair, seg = _brats_volumes(0, (1, 4))
    d = "BraTS2021_Training_Data/BraTS2021_00000"
    _nii(f"{root}/{d}/BraTS2021_00000_flair.nii.gz", flair)
    _nii(f"{root}/{d}/BraTS2021_00000_seg.nii.gz", seg)


def _brats_case(root, n, flair=None, seg=None):
    from tests.fixtures.release_layouts import _brats_volumes, _nii

    f0, s0 = _brats_volumes(n, (1, 4))
    d = f"BraTS2021_Training_Data/BraTS2021_{n:05d}"
    _nii(f"{root}/{d}/BraTS2021_{n:05d}_flair.nii.gz", f0 if flair is None else flair(f0))
    _nii(f"{root}/{d}/BraTS2021_{n:05d}_seg.nii.gz", s0 if seg is None else seg(s0))
    return f"{d}/BraTS2021_{n:05d}_flair.nii.gz"


def lgg(root):
    from tests.fixtures.release_layouts import write_lgg

    write_lgg(root)


def _lgg_folder(root):
    return next(p for p in sorted(root.rglob("TCGA_*")) if p.is_dir())


# --------------------------------------------------------------------------- cohort kinds

def _gif(frames):
    buf = io.BytesIO()
    ims = [Image.fromarray(f) for f in frames]
    ims[0].save(buf, format="GIF", save_all=True, append_images=ims[1:])
    return buf.getvalue()


def _cmyk_jpeg():
    buf = io.BytesIO()
    Image.fromarray(np.dstack([gray_image(32, 40, 3)] * 3)).convert("CMYK").save(buf, format="JPEG")
    return buf.getvalue()


def _ihdr_zero_width():
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 0, 32, 8, 0, 0, 0, 0)) + chunk(b"IEND", b"")


def _big_text_png():
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "x" * 3_000_000)
    buf = io.BytesIO()
    Image.fromarray(gray_image(32, 40, 4)).save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def _palette_mask():
    img = Image.fromarray(rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint8), mode="L").convert("P")
    img.putpalette([0, 0, 0, 0, 0, 0] + [0] * 762)  # index 1 drawn black: the index is the label
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _tiff16be():
    ramp = (np.arange(32 * 40, dtype=np.uint16).reshape(32, 40) * 3)
    img = Image.frombytes("I;16B", (40, 32), ramp.astype(">u2").tobytes())
    buf = io.BytesIO()
    img.save(buf, format="TIFF")
    return buf.getvalue()


def _plant_imf(kind):
    def plant(root):
        if kind == "zero-byte image":
            return {_imf_pair(root, "B", b""): "unreadable image"}
        if kind == "png signature only":
            return {_imf_pair(root, "B", b"\x89PNG\r\n\x1a\n"): "unreadable image"}
        if kind == "animated gif":
            # .gif is not an extension of this layout: an ``ignored`` row (first run expected a reject)
            _imf_pair(root, "B", _gif([gray_image(32, 40, 1), gray_image(32, 40, 2)]), ext="gif")
            return {}
        if kind == "multi-page tiff mask":
            buf = io.BytesIO()
            pages = [Image.fromarray(rect_mask(32, 40, 1, 1, 9, 9).astype(np.uint8) * 255)] * 2
            pages[0].save(buf, format="TIFF", save_all=True, append_images=pages[1:])
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 5)), mask_bytes=buf.getvalue()): "multi-page image"}
        if kind == "1x1 image whole mask":
            return {_imf_pair(root, "B", _png(gray_image(1, 1, 5)), mask=np.ones((1, 1), bool)): "whole-image mask"}
        if kind == "zero-width IHDR":
            return {_imf_pair(root, "B", _ihdr_zero_width()): ANY}
        if kind == "16-bit 0/65535 mask":
            rel = _imf_pair(root, "B", _png(gray_image(32, 40, 6)), mask_bytes=b"")
            write16(f"{root}/masks/B_mask.png", rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint16) * 65535)
            return {rel: KEPT}
        if kind == "newline in file name":
            return {_imf_pair(root, "B\nC", _png(gray_image(32, 40, 7))): KEPT}
        if kind == "folder named like an image":
            os.makedirs(f"{root}/images/folder.png")
            return {}
        if kind == "3 MB PNG text chunk":
            return {_imf_pair(root, "B", _big_text_png()): KEPT}
        if kind == "palette mask drawn black":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 8)), mask_bytes=_palette_mask()): KEPT}
        if kind == "CMYK JPEG image":
            return {_imf_pair(root, "B", _cmyk_jpeg(), ext="jpg"): KEPT}
        if kind == "LA image":
            return {_imf_pair(root, "B", _png(np.dstack([gray_image(32, 40, 9), np.full((32, 40), 255, np.uint8)]),
                                                 mode="LA")): KEPT}
        if kind == "big-endian 16-bit TIFF":
            return {_imf_pair(root, "B", _tiff16be(), ext="tif"): KEPT}
        if kind == "constant float image":
            buf = io.BytesIO()
            Image.fromarray(np.full((32, 40), 3.5, np.float32)).save(buf, format="TIFF")
            return {_imf_pair(root, "B", buf.getvalue(), ext="tif"): KEPT}
        if kind == "upper-case extension":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 10)), ext="PNG"): KEPT}
        if kind == "hidden mask file":
            write_raw(root, "masks/.G0_mask.png", b"\0")
            return {}
        if kind == "garbage after IEND":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 11)) + b"trailing junk" * 100): KEPT}
        if kind == "mask 1 px larger":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 12)), mask=rect_mask(33, 40, 2, 2, 8, 8)):
                    "mask size differs"}
        if kind == "symlinked image file":
            os.makedirs(root.parent / "elsewhere", exist_ok=True)
            (root.parent / "elsewhere" / "x.png").write_bytes(_png(gray_image(32, 40, 13)))
            os.symlink(root.parent / "elsewhere" / "x.png", root / "images" / "B.png")
            write_raw(root, "masks/B_mask.png", _png(rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint8) * 255))
            return {"images/B.png": "path leaves the input root"}  # issue 32: never read from outside --path
        raise AssertionError(kind)

    return plant


IMF_KINDS = ["zero-byte image", "png signature only", "animated gif", "multi-page tiff mask", "1x1 image whole mask",
             "zero-width IHDR", "16-bit 0/65535 mask", "newline in file name", "folder named like an image",
             "3 MB PNG text chunk", "palette mask drawn black", "CMYK JPEG image", "LA image",
             "big-endian 16-bit TIFF", "constant float image", "upper-case extension", "hidden mask file",
             "garbage after IEND", "mask 1 px larger", "symlinked image file"]


@pytest.mark.parametrize("kind", IMF_KINDS)
def test_image_mask_folder(tmp_path, kind):
    run_kind(tmp_path, "image-mask-folder", imf, _plant_imf(kind), IMF)


def _plant_siim(kind):
    def plant(root):
        if kind == "duplicate ImageId in two studies":
            a = _siim_add(root, "1.9.9", b"1.9.9,-1\n", sub="a")
            b = _siim_add(root, "1.9.9", b"", sub="b")
            return {a: "duplicate ImageId", b: "duplicate ImageId"}
        if kind == "PNG renamed .dcm":
            write_raw(root, "dicom-images-train/x/1.9.8.dcm", _png(gray_image(32, 32, 1)))
            _siim_add(root, "1.9.8", b"1.9.8,-1\n", write=False)
            return {"dicom-images-train/x/1.9.8.dcm": ANY}
        if kind == "blank and whitespace lines":
            _siim_add(root, "1.9.7", b"\n   \n\t\n1.9.7,-1\n\n")
            return {"dicom-images-train/x/1.9.7.dcm": KEPT}
        if kind == "tab inside RLE":
            return {_siim_add(root, "1.9.6", b"1.9.6,1\t2\n"): KEPT}  # a tab is whitespace between RLE numbers
        if kind == "extra third column":
            return {_siim_add(root, "1.9.5", b"1.9.5,-1,extra\n"): KEPT}
        if kind == "RLE of huge numbers":
            return {_siim_add(root, "1.9.4", b"1.9.4,1 99999999999999999999999\n"): "malformed RLE"}
        if kind == "quoted ImageId":
            return {_siim_add(root, "1.9.3", b'"1.9.3","-1"\n'): KEPT}
        if kind == "CSV without final newline, CR endings":
            p = root / "train-rle.csv"
            p.write_bytes(p.read_bytes().replace(b"\n", b"\r").rstrip(b"\r"))
            return {}
        if kind == "UTF-16 LE CSV without BOM":
            p = root / "train-rle.csv"
            p.write_bytes(p.read_bytes().decode().encode("utf-16-le"))
            return {}
        if kind == "zero-row DICOM":
            import pydicom

            write_dicom(f"{root}/dicom-images-train/x/1.9.2.dcm", gray_image(32, 32, 2), "pat-z")
            ds = pydicom.dcmread(f"{root}/dicom-images-train/x/1.9.2.dcm")
            ds.Rows = 0
            ds.save_as(f"{root}/dicom-images-train/x/1.9.2.dcm")
            _siim_add(root, "1.9.2", b"1.9.2,-1\n", write=False)
            return {"dicom-images-train/x/1.9.2.dcm": ANY}
        raise AssertionError(kind)

    return plant


SIIM_KINDS = ["duplicate ImageId in two studies", "PNG renamed .dcm", "blank and whitespace lines", "tab inside RLE",
              "extra third column", "RLE of huge numbers", "quoted ImageId", "CSV without final newline, CR endings",
              "UTF-16 LE CSV without BOM", "zero-row DICOM"]


@pytest.mark.parametrize("kind", SIIM_KINDS)
def test_siim(tmp_path, kind):
    run_kind(tmp_path, "siim-rle", siim, _plant_siim(kind))


def _plant_nii(kind):
    def plant(root):
        img = np.full((12, 12, 5), 40, np.int16)
        if kind == "uint64 labels":
            return {_nii_pair(root, 3, img, _labels(np.uint64)): KEPT}
        if kind == "negative int64 label":
            lab = _labels(np.int64)
            lab[0, 0, 0] = -5
            return {_nii_pair(root, 3, img, lab): "non-integer label map"}
        if kind == "NIfTI-2 image":
            return {_nii_pair(root, 3, img, _labels(), kind=nib.Nifti2Image): KEPT}
        if kind == "truncated plain .nii":
            rel = _nii_pair(root, 3, img, _labels())
            data = gzip.decompress((root / rel).read_bytes())
            os.remove(root / rel)
            (root / "imagesTr" / "img0003.nii").write_bytes(data[: len(data) - 100])
            os.rename(root / "labelsTr" / "label0003.nii.gz", root / "labelsTr" / "label0003.nii")
            return {"imagesTr/img0003.nii": "corrupt NIfTI"}
        if kind == "trailing singleton 4th axis":
            return {_nii_pair(root, 3, img[..., None], _labels()[..., None]): KEPT}
        if kind == "all-background label map":
            return {_nii_pair(root, 3, img, np.zeros((12, 12, 5), np.uint8)): KEPT}
        if kind == "zero-size axis":
            return {_nii_pair(root, 3, np.zeros((12, 12, 0), np.int16), np.zeros((12, 12, 0), np.uint8)): ANY}
        if kind == "two gzip members":
            rel = _nii_pair(root, 3, img, _labels())
            raw = gzip.decompress((root / rel).read_bytes())
            (root / rel).write_bytes(gzip.compress(raw[:200]) + gzip.compress(raw[200:]))
            return {rel: KEPT}
        if kind == "NaN in the sform":
            aff = np.eye(4)
            aff[0, 3] = np.nan
            return {_nii_pair(root, 3, img, _labels(), affine=aff): "invalid affine"}
        if kind == "float64 image with inf":
            f = img.astype(np.float64)
            f[1, 1, 1] = -np.inf
            return {_nii_pair(root, 3, f, _labels()): "non-finite voxels"}
        raise AssertionError(kind)

    return plant


NII_KINDS = ["uint64 labels", "negative int64 label", "NIfTI-2 image", "truncated plain .nii",
             "trailing singleton 4th axis", "all-background label map", "zero-size axis", "two gzip members",
             "NaN in the sform", "float64 image with inf"]


@pytest.mark.parametrize("kind", NII_KINDS)
def test_nifti_labels(tmp_path, kind):
    run_kind(tmp_path, "nifti-labels", nii, _plant_nii(kind), ORGANS)


def _plant_brats(kind):
    def plant(root):
        if kind == "half-valued segmentation":
            return {_brats_case(root, 5, seg=lambda s: s.astype(np.float32) * 0.5): "non-integer label map"}
        if kind == "2-D FLAIR":
            return {_brats_case(root, 6, flair=lambda f: f[:, :, 3]): ANY}
        if kind == "segmentation with 4th singleton axis":
            return {_brats_case(root, 7, seg=lambda s: s[..., None]) + f"#z={z}": KEPT for z in (4, 7, 10, 13)}
        if kind == "two FLAIR files":
            rel = _brats_case(root, 8)
            data = (root / rel).read_bytes()
            (root / rel.replace("_flair", "_copy_flair")).write_bytes(data)
            return {posixpath_dirname(rel): "missing FLAIR"}
        if kind == "all-inf FLAIR":
            return {_brats_case(root, 9, flair=lambda f: np.full_like(f, np.inf)): "non-finite voxels"}
        raise AssertionError(kind)

    return plant


def posixpath_dirname(rel):
    return rel.rsplit("/", 1)[0]


BRATS_KINDS = ["half-valued segmentation", "2-D FLAIR", "segmentation with 4th singleton axis", "two FLAIR files",
               "all-inf FLAIR"]


@pytest.mark.parametrize("kind", BRATS_KINDS)
def test_brats(tmp_path, kind):
    run_kind(tmp_path, "brats", brats, _plant_brats(kind))


def _plant_lgg(kind):
    def plant(root):
        folder = _lgg_folder(root)
        rel = str(folder.relative_to(root))
        if kind == "slice number 0":
            _save(str(folder / f"{folder.name}_0.tif"), np.zeros((32, 32, 3), np.uint8), "TIFF")
            _save(str(folder / f"{folder.name}_0_mask.tif"), np.zeros((32, 32), np.uint8), "TIFF")
            return {}
        if kind == "zero-byte mask":
            _save(str(folder / f"{folder.name}_60.tif"), np.zeros((32, 32, 3), np.uint8), "TIFF")
            (folder / f"{folder.name}_60_mask.tif").write_bytes(b"")
            return {f"{rel}/{folder.name}_60.tif": "unreadable mask"}
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["slice number 0", "zero-byte mask"])
def test_lgg(tmp_path, kind):
    run_kind(tmp_path, "lgg-mri", lgg, _plant_lgg(kind))


def _first_key(root):
    data = json.loads((root / "VQA_RAD Dataset Public.json").read_text())
    q = data[0]
    return q, f"VQA_RAD Image Folder/{q['image_name']}#{q['qid']}"


def _plant_vqarad(kind):
    def plant(root):
        q, key = _first_key(root)
        if kind == "top-level object":
            _vqarad_edit(root, lambda d: {"questions": d})
            return None
        if kind == "integer image name":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9001, "image_name": 123}])
            return {"VQA_RAD Image Folder/123#9001": "missing image"}
        if kind == "answer is a list":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9002, "answer": ["yes", "no"]}])
            return {f"VQA_RAD Image Folder/{q['image_name']}#9002": "empty answer"}
        if kind == "UTF-16 JSON":
            _vqarad_edit(root, lambda d: json.dumps(d).encode("utf-16"))
            return {}
        if kind == "UTF-8 BOM JSON":
            _vqarad_edit(root, lambda d: b"\xef\xbb\xbf" + json.dumps(d).encode())
            return {}
        if kind == "same record twice":
            _vqarad_edit(root, lambda d: d + [q])
            return {key: "duplicate record"}
        if kind == "backslash climb":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9003, "image_name": "..\\..\\secret.jpg"}])
            return {"VQA_RAD Dataset Public.json[9]": "path leaves the input root"}
        if kind == "NaN qid":
            _vqarad_edit(root, lambda d: json.dumps(d + [{**q, "qid": float("nan")}]).encode())
            return {f"VQA_RAD Image Folder/{q['image_name']}#nan": KEPT}
        raise AssertionError(kind)

    return plant


VQA_KINDS = ["top-level object", "integer image name", "answer is a list", "UTF-16 JSON", "UTF-8 BOM JSON",
             "same record twice", "backslash climb", "NaN qid"]


@pytest.mark.parametrize("kind", VQA_KINDS)
def test_vqa_rad(tmp_path, kind):
    root = tmp_path / "data"
    vqarad(root)
    base_rows, _ = _load("vqa-rad", root, None)
    expected = _plant_vqarad(kind)(root)
    rows, rejects = _load("vqa-rad", root, None)
    if expected is None:  # the whole file is unusable: one reject naming it, no crash
        assert rows == {} and list(rejects.values()) == ["corrupt JSON"]
        return
    for k, r in base_rows.items():
        assert rows.get(k) == r
    for item, want in expected.items():
        if want == KEPT:
            assert item in rows
        else:
            got = {k: v for k, v in rejects.items() if k.endswith(item) or k == item}
            assert want in got.values(), f"{item}: {rejects}"


def _plant_pvqa(kind):
    def plant(root):
        p = root / "pvqa" / "qas" / "train" / "train_qa.pkl"
        if kind == "pickle calling os.system":
            class Evil:
                def __reduce__(self):
                    return (os.system, ("touch " + str(root / "PWNED"),))

            p.write_bytes(pickle.dumps([Evil()]))
        elif kind == "truncated pickle":
            p.write_bytes(p.read_bytes()[:40])
        return "qas/train/train_qa.pkl"

    return plant


@pytest.mark.parametrize("kind", ["pickle calling os.system", "truncated pickle"])
def test_pathvqa(tmp_path, kind):
    root = tmp_path / "data"
    pathvqa(root)
    item = _plant_pvqa(kind)(root)
    rows, rejects = _load("pathvqa", root, None)
    assert rows and all(k.split("/")[-1].startswith("test") for k in rows)  # test split kept
    assert rejects.get(item) == "corrupt pickle" and not (root / "PWNED").exists()


# --------------------------------------------------------------------------- configs


def _err(fn):
    with pytest.raises(MedScopeError) as err:
        fn()
    return str(err.value)


@pytest.mark.parametrize("body,field", [
    ("limits: {max_file_bytes: 10}\nlimits: {max_file_bytes: 20}\n", "limits"),
    ("limits: {max_file_bytes: -1}\n", "max_file_bytes"),
    ("whole_mask_frac: .nan\n", "whole_mask_frac"),
    ("patient_id_regex: '(?P<p'\n", "patient_id_regex"),
])
def test_dataset_config_values(tmp_path, body, field):
    f = tmp_path / "ds.yaml"
    f.write_text(body)
    msg = _err(lambda: cohorts.dataset_config("image-mask-folder", str(f)))
    assert str(f) in msg and field in msg


@pytest.mark.parametrize("body,needle", [
    ("models:\n\t- {name: a, kind: openai}\n", "YAML"),
    ("models: !!python/object/apply:os.system ['true']\n", "YAML"),
    ("models:\n  - {name: a, kind: openai, temperature: .inf}\n", "temperature"),
    ("models:\n  - {name: a, kind: openai, max_output_tokens: 0}\n", "max_output_tokens"),
])
def test_models_config_values(tmp_path, body, needle):
    from medscope.models.config import ModelsConfig

    f = tmp_path / "m.yaml"
    f.write_text(body)
    msg = _err(lambda: cfgmod.load(ModelsConfig, str(f)))
    assert str(f) in msg and needle in msg


def test_utf16_yaml_config_reads_or_names_the_file(tmp_path):
    from medscope.models.config import ModelsConfig

    f = tmp_path / "m.yaml"
    f.write_bytes("models:\n  - {name: a, kind: openai}\n".encode("utf-16"))
    try:
        assert cfgmod.load(ModelsConfig, str(f)).models[0].name == "a"
    except MedScopeError as err:
        assert str(f) in str(err)


# --------------------------------------------------------------------------- run / pack JSON files


def test_key_json_that_is_a_list_names_the_file(tmp_path):
    from medscope.reader import pack

    (tmp_path / "key.json").write_text("[1, 2]")
    assert "key.json" in _err(lambda: pack.read_key(str(tmp_path)))


def test_truncated_import_json_names_the_file(tmp_path):
    from pipelines.cohort import show_summary

    (tmp_path / "import.json").write_text('{"status": "compl')
    assert "import.json" in _err(lambda: show_summary(str(tmp_path)))


def test_sweep_json_with_bom_is_read(tmp_path):
    from pipelines.score import items_of

    (tmp_path / "episodes").mkdir()
    (tmp_path / "sweep.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"items": "items.parquet"}).encode())
    assert items_of(str(tmp_path / "episodes")) == "items.parquet"


def test_utf16_answer_file_is_decoded(tmp_path):
    from medscope.reader import answers

    f = tmp_path / "a.json"
    f.write_bytes(json.dumps({"format": answers.ANSWERS_FORMAT, "pack_hash": "zz", "reader": {"id": "r"}}).encode("utf-16"))
    _, rejects, _ = answers.load_answers([str(f)], {"h": {"items": []}})
    assert [r["reason"] for r in rejects] == ["unknown_pack"]  # decoded and parsed: only the pack is unknown


# --------------------------------------------------------------------------- image bytes in tables


@pytest.mark.parametrize("data", [None, b"", b"GIF89a" + b"\0" * 20, b"\x89PNG\r\n\x1a\n"])
def test_decode_png_of_bad_bytes_is_one_clear_error(data):
    assert "decode" in _err(lambda: images.decode_png(data)) or data is None


# --------------------------------------------------------------------------- URLs and paths


@pytest.mark.parametrize("url,want", [
    ("https://host/a@b", "https://host/a@b"),
    ("s3://AKIAXXX:secretkey@bucket/x", "s3://***@bucket/x"),
    ("http://u:p@[::1]:8000/v1", "http://***@[::1]:8000/v1"),
    ("see https://k@h.org and http://a:b@c.org", "see https://***@h.org and http://***@c.org"),
])
def test_redaction(url, want):
    assert safe_text.redact_urls(url) == want


@pytest.mark.parametrize("rel,want", [("a/./b.png", "a/b.png"), ("C:\\x.png", None), ("a/b/../../..", None),
                                      ("file:///etc/passwd", None)])
def test_inside_root(rel, want):
    if want is None:
        with pytest.raises(MedScopeError):
            safe_text.inside_root(rel)
    else:
        assert safe_text.inside_root(rel) == want


def test_garbage_lock_file_is_refused_with_its_path(tmp_path):
    (tmp_path / folder_lock.LOCK_NAME).write_bytes(b"\xff\xfe garbage")
    with pytest.raises(MedScopeError) as err:
        with folder_lock.writer_lock(str(tmp_path), "cohort import"):
            pass
    assert folder_lock.LOCK_NAME in str(err.value)
    assert (tmp_path / folder_lock.LOCK_NAME).read_bytes() == b"\xff\xfe garbage"  # not taken over
