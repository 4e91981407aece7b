"""Issue 32, the fifth campaign: kinds of bad input written after the remaining items were done
(rejects' error_class, links out of --path, NaN fractions, partial eval runs, truncated pair
candidates, missing checkpoints, the ChestX-Det / QaTa / HyperKvasir audit), across every
reader: the 2D folder formats, SIIM, NIfTI labels, BraTS, LGG, the VQA releases, ChestX-Det,
QaTa-COV19, HyperKvasir, dataset / model / training configs, the JSON of runs, tables, URLs,
paths and pair sets.

The expectations were written from the docs (docs/cohorts-bad-input.md) before the first run.
Cohort kinds use campaign 4's harness: a good layout is loaded (the baseline), one bad input is
planted, and the load is repeated; every baseline case must come back identical and the
planted file must end as the kind says (a named reject, ``ANY`` reject or ignored row, or
``KEPT`` as a case), never as an exception. The first run's outcome is in
docs/cohorts-bad-input.md ("The fifth campaign").
"""

import io
import json
import os
import pickle
import unicodedata

import nibabel as nib
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.fixtures.cohort_bad_layouts import save_with_orientation, write_raw
from tests.fixtures.cohort_layouts import _save, colour_image, gray_image, rect_mask, rle_encode, truncated_bytes, write_dicom
from medscope import cohorts, config as cfgmod
from medscope.io import records, safe_text
from medscope.errors import MedScopeError
from tests.test_bad_input_campaign4 import (
    ANY,
    IMF,
    KEPT,
    ORGANS,
    _brats_case,
    _imf_pair,
    _lgg_folder,
    _load,
    _nii_pair,
    _labels,
    _png,
    _siim_add,
    _vqarad_edit,
    brats,
    imf,
    lgg,
    nii,
    pathvqa,
    run_kind,
    siim,
    vqarad,
)

pytestmark = pytest.mark.timeout(120)

NFD_E = unicodedata.normalize("NFD", "é")
assert NFD_E != "é"


def _mask_png(h=32, w=40, box=(5, 5, 15, 15), mode=None, scale=255, dtype=np.uint8):
    return _png((rect_mask(h, w, *box).astype(dtype) * scale), mode=mode)


# --------------------------------------------------------------------------- image-mask-folder


def _plant_imf(kind):
    def plant(root):
        if kind == "mask named .jpg holding PNG bytes":
            write_raw(root, "images/B.png", _png(gray_image(32, 40, 21)))
            write_raw(root, "masks/B_mask.jpg", _mask_png())
            return {"images/B.png": KEPT}
        if kind == "1-bit mask":
            buf = io.BytesIO()
            Image.fromarray(rect_mask(32, 40, 5, 5, 15, 15)).convert("1").save(buf, "PNG")
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 22)), mask_bytes=buf.getvalue()): KEPT}
        if kind == "RGBA mask drawn in alpha only":
            rgba = np.zeros((32, 40, 4), np.uint8)
            rgba[5:15, 5:15, 3] = 255
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 23)), mask_bytes=_png(rgba)): ANY}
        if kind == "accented file name":
            return {_imf_pair(root, "é-1", _png(gray_image(32, 40, 24))): KEPT}
        if kind == "1 x 600 strip":
            m = np.zeros((1, 600), np.uint8)
            m[0, 10:50] = 255
            return {_imf_pair(root, "B", _png(gray_image(1, 600, 25)), mask_bytes=_png(m)): KEPT}
        if kind == "JPEG cut mid-scan":
            return {_imf_pair(root, "B", truncated_bytes(colour_image(32, 40, 26), "JPEG"), ext="jpg"): "unreadable image"}
        if kind == "16-bit 0/1 mask":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 27)), mask_bytes=_mask_png(scale=1, dtype=np.uint16)): KEPT}
        if kind == "symlink to a file inside the root":
            write_raw(root, "originals/x.png", _png(gray_image(32, 40, 28)))
            os.symlink(root / "originals" / "x.png", root / "images" / "B.png")
            write_raw(root, "masks/B_mask.png", _mask_png())
            return {"images/B.png": KEPT}
        if kind == "hard link to another image":
            os.link(root / "images" / "G0.png", root / "images" / "B.png")
            write_raw(root, "masks/B_mask.png", _mask_png())
            return {"images/B.png": KEPT}
        if kind == "image and mask in a nested folder":
            write_raw(root, "images/site/B.png", _png(gray_image(32, 40, 29)))
            write_raw(root, "masks/site/B_mask.png", _mask_png())
            return {"images/site/B.png": KEPT}
        if kind == "EXIF-rotated image and mask":
            save_with_orientation(f"{root}/images/B.png", gray_image(32, 40, 30), 3)
            save_with_orientation(f"{root}/masks/B_mask.png", rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint8) * 255, 3)
            return {"images/B.png": KEPT}
        raise AssertionError(kind)

    return plant


IMF_KINDS = ["mask named .jpg holding PNG bytes", "1-bit mask", "RGBA mask drawn in alpha only", "accented file name",
             "1 x 600 strip", "JPEG cut mid-scan", "16-bit 0/1 mask", "symlink to a file inside the root",
             "hard link to another image", "image and mask in a nested folder", "EXIF-rotated image and mask"]


@pytest.mark.parametrize("kind", IMF_KINDS)
def test_image_mask_folder(tmp_path, kind):
    run_kind(tmp_path, "image-mask-folder", imf, _plant_imf(kind), IMF)


# --------------------------------------------------------------------------- kvasir-seg, busi


def _kvasir(root):
    from tests.fixtures.cohort_layouts import write_kvasir

    write_kvasir(root)


def _plant_kvasir(kind):
    def plant(root):
        mask = rect_mask(48, 64, 10, 8, 29, 27).astype(np.uint8) * 255
        if kind == "PNG bytes in a .jpg image":
            write_raw(root, "images/cjz0001.jpg", _png(colour_image(48, 64, 40)))
            _save(f"{root}/masks/cjz0001.jpg", mask, "JPEG", quality=90)
            return {"images/cjz0001.jpg": KEPT}
        if kind == "low-quality JPEG mask":
            _save(f"{root}/images/cjz0002.jpg", colour_image(48, 64, 41), "JPEG", quality=95)
            _save(f"{root}/masks/cjz0002.jpg", mask, "JPEG", quality=30)  # ringing well past the edges
            return {"images/cjz0002.jpg": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["PNG bytes in a .jpg image", "low-quality JPEG mask"])
def test_kvasir_seg(tmp_path, kind):
    run_kind(tmp_path, "kvasir-seg", _kvasir, _plant_kvasir(kind))


def _busi(root):
    from tests.fixtures.cohort_layouts import write_busi

    write_busi(root)


def _plant_busi(kind):
    def plant(root):
        img = np.stack([gray_image(40, 56, 50)] * 3, axis=2)
        if kind == "second mask file merged":
            _save(f"{root}/benign/benign (77).png", img)
            _save(f"{root}/benign/benign (77)_mask.png", rect_mask(40, 56, 2, 2, 10, 10).astype(np.uint8) * 255)
            _save(f"{root}/benign/benign (77)_mask_1.png", rect_mask(40, 56, 30, 20, 40, 30).astype(np.uint8) * 255)
            return {"benign/benign (77).png": KEPT}
        if kind == "normal image with a black mask":
            _save(f"{root}/normal/normal (78).png", img)
            _save(f"{root}/normal/normal (78)_mask.png", np.zeros((40, 56), np.uint8))
            return {"normal/normal (78).png": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["second mask file merged", "normal image with a black mask"])
def test_busi(tmp_path, kind):
    run_kind(tmp_path, "busi", _busi, _plant_busi(kind))


# --------------------------------------------------------------------------- siim-rle


def _plant_siim(kind):
    def plant(root):
        if kind == "RLE with a negative start":
            return {_siim_add(root, "1.9.1", b"1.9.1,-5 3\n"): "malformed RLE"}
        if kind == "two rows for one image (two regions)":
            a, b = rect_mask(32, 32, 2, 2, 8, 8), rect_mask(32, 32, 20, 20, 28, 28)
            line = f"1.9.0,{rle_encode(a)}\n1.9.0,{rle_encode(b)}\n".encode()
            return {_siim_add(root, "1.9.0", line): KEPT}
        if kind == "CSV with a UTF-8 BOM":
            p = root / "train-rle.csv"
            p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
            return {}
        if kind == "DICOM cut in its pixel data":
            rel = _siim_add(root, "1.9.2", b"1.9.2,-1\n")
            data = (root / rel).read_bytes()
            (root / rel).write_bytes(data[: len(data) - 300])
            return {rel: ANY}
        if kind == "DICOM without a CSV row":
            write_dicom(f"{root}/dicom-images-train/x/1.9.3.dcm", gray_image(32, 32, 3), "pat-3")
            return {"dicom-images-train/x/1.9.3.dcm": ANY}
        raise AssertionError(kind)

    return plant


SIIM_KINDS = ["RLE with a negative start", "two rows for one image (two regions)", "CSV with a UTF-8 BOM",
              "DICOM cut in its pixel data", "DICOM without a CSV row"]


@pytest.mark.parametrize("kind", SIIM_KINDS)
def test_siim(tmp_path, kind):
    run_kind(tmp_path, "siim-rle", siim, _plant_siim(kind))


# --------------------------------------------------------------------------- nifti-labels, brats, lgg


def _plant_nii(kind):
    def plant(root):
        img = np.full((12, 12, 5), 40, np.int16)
        if kind == "float32 label map of whole numbers":
            return {_nii_pair(root, 3, img, _labels(np.float32)): KEPT}
        if kind == "label affine off by 1e-9":
            rel = _nii_pair(root, 3, img, None)
            aff = np.eye(4)
            aff[0, 3] = 1e-9
            nib.save(nib.Nifti1Image(_labels(), aff, dtype=np.uint8), f"{root}/labelsTr/label0003.nii.gz")
            return {rel: KEPT}
        if kind == "label affine shifted 10 mm":
            rel = _nii_pair(root, 3, img, None)
            aff = np.eye(4)
            aff[0, 3] = 10.0
            nib.save(nib.Nifti1Image(_labels(), aff, dtype=np.uint8), f"{root}/labelsTr/label0003.nii.gz")
            return {rel: "label affine differs"}
        if kind == "zero-byte .nii.gz":
            rel = _nii_pair(root, 3, img, _labels())
            (root / rel).write_bytes(b"")
            return {rel: "corrupt NIfTI"}
        raise AssertionError(kind)

    return plant


NII_KINDS = ["float32 label map of whole numbers", "label affine off by 1e-9", "label affine shifted 10 mm",
             "zero-byte .nii.gz"]


@pytest.mark.parametrize("kind", NII_KINDS)
def test_nifti_labels(tmp_path, kind):
    run_kind(tmp_path, "nifti-labels", nii, _plant_nii(kind), ORGANS)


def _plant_brats(kind):
    def plant(root):
        if kind == "label 3 in a 2021 segmentation":
            def three(s):
                s = s.copy()
                s[s == 1] = 3
                return s
            return {_brats_case(root, 5, seg=three): ANY}
        if kind == "FLAIR and segmentation shapes differ":
            return {_brats_case(root, 6, flair=lambda f: f[:-2]): ANY}
        if kind == "folder with only a segmentation":
            rel = _brats_case(root, 7)
            os.remove(root / rel)
            return {rel.rsplit("/", 1)[0]: "missing FLAIR"}
        raise AssertionError(kind)

    return plant


BRATS_KINDS = ["label 3 in a 2021 segmentation", "FLAIR and segmentation shapes differ", "folder with only a segmentation"]


@pytest.mark.parametrize("kind", BRATS_KINDS)
def test_brats(tmp_path, kind):
    run_kind(tmp_path, "brats", brats, _plant_brats(kind))


def _plant_lgg(kind):
    def plant(root):
        folder = _lgg_folder(root)
        rel = str(folder.relative_to(root))
        if kind == "non-numeric slice suffix":
            _save(str(folder / f"{folder.name}_abc.tif"), np.zeros((32, 32, 3), np.uint8), "TIFF")
            return {f"{rel}/{folder.name}_abc.tif": ANY}
        if kind == "zero-byte slice image":
            (folder / f"{folder.name}_61.tif").write_bytes(b"")
            _save(str(folder / f"{folder.name}_61_mask.tif"), np.zeros((32, 32), np.uint8), "TIFF")
            return {f"{rel}/{folder.name}_61.tif": ANY}
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["non-numeric slice suffix", "zero-byte slice image"])
def test_lgg(tmp_path, kind):
    run_kind(tmp_path, "lgg-mri", lgg, _plant_lgg(kind))


# --------------------------------------------------------------------------- VQA releases


def _vqa_kind(tmp_path, fmt, build, plant):
    """Baseline kept; the planted record or file gets a reject with ``want`` (or ANY), or KEPT."""
    root = tmp_path / "data"
    build(root)
    base_rows, _ = _load(fmt, root, None)
    want, match = plant(root)
    rows, rejects = _load(fmt, root, None)
    for k, r in base_rows.items():
        assert rows.get(k) == r, f"good item {k} lost or changed"
    if want == KEPT:
        assert set(rows) - set(base_rows), "the planted record should be an item"
        return
    got = [v for k, v in rejects.items() if match in k]
    assert got, f"no reject row for {match}: {rejects}"
    assert want == ANY or want in got, f"{match}: {got}"


def _plant_vqarad(kind):
    def plant(root):
        q = json.loads((root / "VQA_RAD Dataset Public.json").read_text())[0]
        if kind == "question is null":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9101, "question": None}])
            return ANY, "9101"
        if kind == "record without image_name":
            _vqarad_edit(root, lambda d: d + [{k: v for k, v in {**q, "qid": 9102}.items() if k != "image_name"}])
            return ANY, "9102"  # first run: the test guessed the item was named after the JSON file
        if kind == "200 KB question":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9103, "question": "Is there " + "x" * 200_000 + "?"}])
            return KEPT, ""
        if kind == "trailing comma":
            p = root / "VQA_RAD Dataset Public.json"
            p.write_text(p.read_text()[:-1] + ",]")
            return "corrupt JSON", "VQA_RAD Dataset Public.json"
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["question is null", "record without image_name", "200 KB question", "trailing comma"])
def test_vqa_rad(tmp_path, kind):
    if kind == "trailing comma":  # the one file is unusable: one reject naming it, no crash
        root = tmp_path / "data"
        vqarad(root)
        _plant_vqarad(kind)(root)
        rows, rejects = _load("vqa-rad", root, None)
        assert rows == {} and list(rejects.values()) == ["corrupt JSON"]
        return
    _vqa_kind(tmp_path, "vqa-rad", vqarad, _plant_vqarad(kind))


def _slake_vqa(root):
    from tests.fixtures.replay_layouts import smooth_image, write_slake

    write_slake(root, 2, {2: smooth_image(9)}, {})


def _plant_slake(kind):
    def plant(root):
        if kind == "absolute img_name":
            data = json.loads((root / "train.json").read_text())
            data.append({**data[0], "qid": 99001, "img_name": "/etc/passwd"})
            (root / "train.json").write_text(json.dumps(data))
            return "path leaves the input root", "train.json"
        if kind == "truncated train.json":
            p = root / "train.json"
            p.write_bytes(p.read_bytes()[:50])
            return "corrupt JSON", "train.json"
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["absolute img_name", "truncated train.json"])
def test_slake_vqa(tmp_path, kind):
    if kind == "truncated train.json":  # the train split is lost as one named reject; test is kept
        root = tmp_path / "data"
        _slake_vqa(root)
        base_rows, _ = _load("slake-vqa", root, None)
        _plant_slake(kind)(root)
        rows, rejects = _load("slake-vqa", root, None)
        assert rows and all(rows[k] == base_rows[k] for k in rows)
        assert any("train.json" in k and v == "corrupt JSON" for k, v in rejects.items()), rejects
        return
    _vqa_kind(tmp_path, "slake-vqa", _slake_vqa, _plant_slake(kind))


def test_pathvqa_pickle_of_a_dict(tmp_path):
    root = tmp_path / "data"
    pathvqa(root)
    (root / "pvqa" / "qas" / "train" / "train_qa.pkl").write_bytes(pickle.dumps({"image": "train_0000"}))
    rows, rejects = _load("pathvqa", root, None)
    assert rows and all(k.split("/")[-1].startswith("test") for k in rows)  # test split kept
    assert rejects.get("qas/train/train_qa.pkl") == "corrupt pickle"


# --------------------------------------------------------------------------- ChestX-Det, QaTa, HyperKvasir


def _chestx(root):
    from tests.fixtures.release_layouts import write_chestx_det

    write_chestx_det(root)


def _chestx_add(root, rec, image=True, disk_name=None):
    p = root / "ChestX_Det_train.json"
    data = json.loads(p.read_text())
    data.append(rec)
    p.write_text(json.dumps(data))
    if image:
        _save(f"{root}/train/{disk_name or rec['file_name']}", gray_image(64, 64, 60), "PNG")


def _plant_chestx(kind):
    def plant(root):
        if kind == "polygon with a NaN coordinate":
            _chestx_add(root, {"file_name": "50001.png", "syms": ["Nodule"], "boxes": [[0, 0, 1, 1]],
                               "polygons": [[[10, 10], [float("nan"), 10], [20, 18]]]})
            return {"train/50001.png": "bad polygon"}
        if kind == "syms is a string":
            _chestx_add(root, {"file_name": "50002.png", "syms": "Nodule", "boxes": [],
                               "polygons": [[[10, 10], [20, 10], [20, 18]]]})
            return {"train/50002.png": ANY}
        if kind == "NFD file_name, NFC file on disk":
            _chestx_add(root, {"file_name": f"caf{NFD_E}.png", "syms": [], "boxes": [], "polygons": []},
                        disk_name="café.png")
            return {"train/café.png": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["polygon with a NaN coordinate", "syms is a string", "NFD file_name, NFC file on disk"])
def test_chestx_det(tmp_path, kind):
    run_kind(tmp_path, "chestx-det", _chestx, _plant_chestx(kind))


def _qata(root):
    from tests.fixtures.release_layouts import write_qata

    write_qata(root)


def test_qata_nfd_image_nfc_mask(tmp_path):
    def plant(root):
        base = root / "QaTa-COV19-v2" / "Train Set"
        _save(f"{base}/Images/covid_caf{NFD_E}.png", gray_image(40, 40, 61))
        _save(f"{base}/Ground-truths/mask_covid_café.png", rect_mask(40, 40, 4, 6, 15, 20).astype(np.uint8) * 255)
        return {f"QaTa-COV19-v2/Train Set/Images/covid_caf{NFD_E}.png": KEPT}

    run_kind(tmp_path, "qata-cov19", _qata, plant)


def _hyperkvasir(root):
    from tests.fixtures.release_layouts import write_hyperkvasir

    write_hyperkvasir(root)


def _plant_hk(kind):
    def plant(root):
        base = "labeled-images/lower-gi-tract/anatomical-landmarks"
        if kind == "class folder in upper case":
            _save(f"{root}/{base}/Cecum/cc01.jpg", colour_image(36, 44, 62), "JPEG", quality=90)
            return {f"{base}/Cecum/cc01.jpg": KEPT}
        if kind == "PNG image in a class folder":
            _save(f"{root}/{base}/ileum/cc02.png", colour_image(36, 44, 63))
            return {f"{base}/ileum/cc02.png": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.parametrize("kind", ["class folder in upper case", "PNG image in a class folder"])
def test_hyperkvasir(tmp_path, kind):
    run_kind(tmp_path, "hyperkvasir", _hyperkvasir, _plant_hk(kind))


# --------------------------------------------------------------------------- configs


def _err(fn):
    with pytest.raises(MedScopeError) as err:
        fn()
    return str(err.value)


@pytest.mark.parametrize("body,field", [
    ("limits: {max_image_pixels: 1.0e+400}\n", "max_image_pixels"),
    ("limits: {max_file_byte: 10}\n", "max_file_byte"),
])
def test_dataset_config(tmp_path, body, field):
    f = tmp_path / "ds.yaml"
    f.write_text(body)
    msg = _err(lambda: cohorts.dataset_config("image-mask-folder", str(f)))
    assert str(f) in msg and field in msg


@pytest.mark.parametrize("body,needle,secret", [
    ("models:\n  - {name: a, kind: openai, model: m, tpm: -5}\n", "tpm", None),
    ("models:\n  - {name: a, kind: openai, model: m}\n  - {name: a, kind: openai, model: n}\n", "unique", None),
    ("models:\n  - {name: a, kind: openai, model: m, api_key_env: sk-live-abc123XYZ}\n", "api_key_env", "abc123XYZ"),
    ("models:\n  - {name: a, kind: openai, model: m, base_url: 'https://bob:hunter2pw@h.org/v1', temperature: .inf}\n",
     "temperature", "hunter2pw"),
    ("models: null\n", "models", None),
])
def test_models_config(tmp_path, body, needle, secret):
    from medscope.models.config import ModelsConfig

    f = tmp_path / "m.yaml"
    f.write_text(body)
    msg = _err(lambda: cfgmod.load(ModelsConfig, str(f)))
    assert str(f) in msg and needle in msg
    assert secret is None or secret not in msg


@pytest.mark.parametrize("body,field", [("lr: .nan\n", "lr"), ("batch_size: 0\n", "batch_size")])
def test_train_recipe(tmp_path, body, field):
    from medscope.training.recipes import load_recipe

    f = tmp_path / "r.yaml"
    f.write_text("name: r\nallowed_kinds: [original]\n" + body)
    msg = _err(lambda: load_recipe(str(f)))
    assert str(f) in msg and field in msg


# --------------------------------------------------------------------------- run JSON and tables


@pytest.mark.parametrize("text", ['{"items": "it', "[1, 2, 3]"])
def test_bad_sweep_json_names_the_file(tmp_path, text):
    from pipelines.score import items_of

    (tmp_path / "episodes").mkdir()
    (tmp_path / "sweep.json").write_text(text)
    assert "sweep.json" in _err(lambda: items_of(str(tmp_path / "episodes")))


def test_zero_byte_episode_part_is_named_by_score(tmp_path):
    from pipelines.score import score

    (tmp_path / "episodes").mkdir()
    (tmp_path / "episodes" / "part-k1.parquet").write_bytes(b"")
    (tmp_path / "sweep.json").write_text(json.dumps({"items": "x.parquet", "done": 1}))
    assert "part-k1.parquet" in _err(lambda: score(str(tmp_path), str(tmp_path / "scored")))


def _views_with_frac(value):
    from medscope.training.synthetic_views import synthetic_views

    rows = synthetic_views(2, seed=3, size=32)
    rows[0]["lesion_area_frac"] = value
    return rows


def test_views_fraction_just_over_one_is_refused():
    assert "lesion_area_frac" in _err(lambda: records.to_table("views", _views_with_frac(1.0000001)))


def test_cases_table_with_nan_fraction_is_refused_on_read(tmp_path):
    from medscope.views.synthetic_cases import synthetic_cases

    table = records.to_table("cases", synthetic_cases(3, size=32))
    frac = table.column("lesion_area_frac").to_pylist()
    frac[1] = float("nan")
    table = table.set_column(table.column_names.index("lesion_area_frac"), "lesion_area_frac", pa.array(frac))
    pq.write_table(table, tmp_path / "cases.parquet")
    assert "cases.parquet" in _err(lambda: records.read_table("cases", str(tmp_path / "cases.parquet")))


def test_csv_named_views_parquet_is_named(tmp_path):
    (tmp_path / "views.parquet").write_text("view_id,split\nv1,test\n")
    assert "views.parquet" in _err(lambda: records.read_table("views", str(tmp_path / "views.parquet")))


# --------------------------------------------------------------------------- URLs and paths


@pytest.mark.parametrize("text,want", [
    ("https://bob:p%40ss@h.org/v1", "https://***@h.org/v1"),
    ("ftp://anon:pw@files.example.org/x", "ftp://***@files.example.org/x"),
    ('{"base_url": "http://u:pw@127.0.0.1:9/v1"}', '{"base_url": "http://***@127.0.0.1:9/v1"}'),
])
def test_redaction(text, want):
    assert safe_text.redact_urls(text) == want


@pytest.mark.parametrize("rel,want", [("a/%2e%2e/b.png", "a/%2e%2e/b.png"), ("", None), ("a\x00b.png", None),
                                      ("./../x.png", None)])
def test_inside_root(rel, want):
    if want is None:
        with pytest.raises(MedScopeError):
            safe_text.inside_root(rel)
    else:
        assert safe_text.inside_root(rel) == want


# --------------------------------------------------------------------------- pair sets


@pytest.mark.parametrize("damage,reason", [("delete", "unreadable file"), ("empty", "unreadable image")])
def test_pairs_build_with_a_damaged_approved_candidate(tmp_path, damage, reason):
    from medscope.pairs import review as rv
    from medscope.pairs.generators import ProceduralGenerator
    from tests.pairs.test_construction import _two_condition_spec

    spec = _two_condition_spec()
    work = tmp_path / "work"
    rv.generate_round(spec, str(work), ProceduralGenerator(spec.generator))
    rv.decide(str(work), ["all-pending"], "approve", reviewer="dr-a")
    cand = next(c for c in rv.load_review(str(work))["candidates"] if c["photo_type"] == "mismatched")
    path = work / cand["image"]
    path.unlink() if damage == "delete" else path.write_bytes(b"")
    built = rv.build(spec, str(work), str(tmp_path / "set"))
    assert built["conditions"] == 1
    [entry] = built["incomplete"]
    assert entry["unreadable"][0]["reason"] == reason
