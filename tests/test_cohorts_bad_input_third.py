"""Issue 32, the third bad-input campaign: one test per class of the issue.

Every test places the bad input beside good cases and checks three things: the good cases are
kept (with their values), the bad one ends as a reject whose reason is named (or as one error
line naming the file and the field), and nothing else changes. Peak memory is measured in
tests/test_cohorts_bad_input_memory.py's way (a child process, ``VmHWM``) in
:func:`test_budgets_outside_the_importer_hold`.
"""

import gzip
import io
import json
import os
import socket
import subprocess
import sys
import unicodedata

import nibabel as nib
import numpy as np
import pytest
from PIL import Image

from tests.fixtures.cohort_bad_layouts import gzip_zeros, png_bomb, write_raw
from tests.fixtures.cohort_layouts import _save, expect, gray_image, rect_mask, write_image_mask_folder, write_nifti_labels, write_siim
from medscope import cohorts, config as cfgmod, images
from medscope.io import folder_lock, records, safe_text
from medscope.errors import MedScopeError
from medscope.volumes import nifti as vnifti

pytestmark = pytest.mark.timeout(120)


IMF = {"mask_suffix": "_mask"}


def imf_cfg():
    return cohorts.dataset_config("image-mask-folder", overrides=IMF)


def by_item(rejects, stage="load"):
    records.to_table("rejects", rejects)  # every row storable
    return {r["item_id"]: r["reason"] for r in rejects if r["stage"] == stage}


def detail_of(rejects, item):
    return next(r["detail"] for r in rejects if r["item_id"] == item)


# --------------------------------------------------------------------------- 1. ground truth


def test_int64_label_maps_are_range_checked_before_any_cast():
    # the probe's reader: in-range int64 labels survive exactly, 2**32 would wrap to 0
    lab = np.array([[[0, 1], [2, 4]]], np.int64)
    assert vnifti.integer_labels(lab).tolist() == lab.tolist()
    for value in (2**32, 2**32 + 2, -(2**31) - 1):
        bad = lab.copy()
        bad[0, 0, 0] = value
        with pytest.raises(vnifti.VolumeError) as err:
            vnifti.integer_labels(bad)
        assert err.value.reason == "label_out_of_range"
    with pytest.raises(vnifti.VolumeError) as err:
        vnifti.integer_labels(np.array([1.0, np.inf]))
    assert err.value.reason == "non_integer_labels"


def _nifti_pair(root, i, image, label, affine=np.eye(4)):
    os.makedirs(f"{root}/imagesTr", exist_ok=True)
    os.makedirs(f"{root}/labelsTr", exist_ok=True)
    nib.save(nib.Nifti1Image(image, affine), f"{root}/imagesTr/img{i:04d}.nii.gz")
    nib.save(nib.Nifti1Image(label, affine, dtype=label.dtype), f"{root}/labelsTr/label{i:04d}.nii.gz")
    return f"imagesTr/img{i:04d}.nii.gz"


def test_nifti_labels_refuse_wrapping_labels_nan_voxels_and_non_3d(tmp_path):
    good, bad = write_nifti_labels(tmp_path)
    img = np.full((16, 16, 6), 40, np.int16)
    wraps = np.zeros((16, 16, 6), np.int64)
    wraps[4:8, 4:8, 1:4] = 2**32 + 2  # would be label 2 (liver) after an int32 cast
    bad[_nifti_pair(tmp_path, 20, img, wraps)] = "label out of range"
    nan_img = np.full((16, 16, 6), 40.0, np.float32)
    nan_img[3, 3, 3] = np.nan
    nan_img[4, 4, 4] = np.inf
    bad[_nifti_pair(tmp_path, 21, nan_img, np.zeros((16, 16, 6), np.uint8))] = "non-finite voxels"
    bad[_nifti_pair(tmp_path, 22, np.zeros((4, 4, 3, 2, 2), np.int16), np.zeros((4, 4, 3, 2, 2), np.uint8))] = \
        "not a 3-D volume"
    cfg = cohorts.dataset_config("nifti-labels", overrides={"organ_map": {1: "spleen", 2: "liver", 3: "aorta"}})
    table, rejects = cohorts.load("nifti-labels", str(tmp_path), cfg)
    rows = {r["image_uri"].rsplit(str(tmp_path) + "/", 1)[-1]: r for r in table.to_pylist()}
    assert set(rows) == set(good)
    for rel, want in good.items():
        assert rows[rel]["shape"] == want["shape"]
    got = by_item(rejects)
    assert got == bad
    assert "2" in detail_of(rejects, "imagesTr/img0021.nii.gz")  # 2 non-finite voxels


def test_brats_refuses_wrapping_labels_and_nan_flair(tmp_path):
    from tests.fixtures.release_layouts import _nii, _brats_volumes, write_brats

    good, bad = write_brats(tmp_path)
    flair, seg = _brats_volumes(7, (1, 4))
    d = "BraTS2021_Training_Data/BraTS2021_00090"
    _nii(f"{tmp_path}/{d}/BraTS2021_00090_flair.nii.gz", flair)
    big = seg.astype(np.int64)
    big[big == 1] = 2**32 + 1  # wraps to 1 (necrotic core) under int32
    nib.save(nib.Nifti1Image(big, np.eye(4), dtype=np.int64), f"{tmp_path}/{d}/BraTS2021_00090_seg.nii.gz")
    bad[f"{d}/BraTS2021_00090_flair.nii.gz"] = "label out of range"
    d = "BraTS2021_Training_Data/BraTS2021_00091"
    nan_flair = flair.copy()
    nan_flair[5, 5, 5] = np.nan
    _nii(f"{tmp_path}/{d}/BraTS2021_00091_flair.nii.gz", nan_flair)
    _nii(f"{tmp_path}/{d}/BraTS2021_00091_seg.nii.gz", seg)
    bad[f"{d}/BraTS2021_00091_flair.nii.gz"] = "non-finite voxels"
    table, rejects = cohorts.load("brats", str(tmp_path))
    rows = {r["source_file"]: r for r in table.to_pylist()}
    assert set(rows) == set(good)
    for rel, want in good.items():
        assert rows[rel]["lesion_bbox"] == (None if want is None else want[1])
    assert by_item(rejects) == bad


def _tiff_bytes(pages):
    buf = io.BytesIO()
    first, *rest = [Image.fromarray(p) for p in pages]
    first.save(buf, format="TIFF", save_all=bool(rest), append_images=rest)
    return buf.getvalue()


def test_float_images_with_nan_or_inf_and_multipage_tiffs_are_rejected(tmp_path):
    good, bad = write_image_mask_folder(tmp_path)
    h, w = 32, 40
    m = rect_mask(h, w, 3, 4, 12, 20).astype(np.uint8) * 255
    ramp = np.linspace(0.0, 1.0, h * w, dtype=np.float32).reshape(h, w)
    write_raw(tmp_path, "images/P010_a.tif", _tiff_bytes([ramp]))  # a good float image
    _save(f"{tmp_path}/masks/P010_a_mask.png", m)
    good["images/P010_a.tif"] = expect(m > 0)
    for name, arr in (("P011_a", np.full((h, w), np.nan, np.float32)), ("P012_a", np.where(ramp > 0.5, np.inf, ramp))):
        write_raw(tmp_path, f"images/{name}.tif", _tiff_bytes([arr.astype(np.float32)]))
        _save(f"{tmp_path}/masks/{name}_mask.png", m)
        bad[f"images/{name}.tif"] = "non-finite pixels"
    write_raw(tmp_path, "images/P013_a.tif", _tiff_bytes([gray_image(h, w, 1), gray_image(h, w, 2)]))
    _save(f"{tmp_path}/masks/P013_a_mask.png", m)
    bad["images/P013_a.tif"] = "multi-page image"
    write_raw(tmp_path, "images/P014_a.png", gzip.compress(b""))  # not even an image
    bad["images/P014_a.png"] = "unreadable image"
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), imf_cfg())
    rows = {r["source_file"]: r for r in table.to_pylist()}
    assert set(rows) == set(good)
    assert rows["images/P010_a.tif"]["lesion_bbox"] == good["images/P010_a.tif"][1]
    # the float ramp is stretched to the full 8-bit range, never left black
    img = images.decode_png(rows["images/P010_a.tif"]["image"], gray=True)
    assert int(img.min()) == 0 and int(img.max()) == 255
    assert by_item(rejects) == bad
    assert "2 pages" in detail_of(rejects, "images/P013_a.tif")


# --------------------------------------------------------------------------- 2. budgets outside the importer

CHILD = r"""
import json, resource, sys
import nibabel, cv2, PIL.Image  # libraries are not data
from medscope import images
from medscope.io import safe_text
from medscope.volumes import nifti

def peak():  # VmHWM: ru_maxrss would carry pytest's own size over from the fork
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

root, out = sys.argv[1], {}
base = peak()
img = nifti.read_nifti(root + "/small-header-long-tail.nii.gz")
out["nifti_shape"] = list(img.shape)
try:
    nifti.read_nifti(root + "/claims-2GB.nii.gz")
except nifti.VolumeError as err:
    out["claims"] = err.reason
try:
    images.decode_png(open(root + "/bomb.png", "rb").read())
except Exception as err:
    out["bomb"] = type(err).__name__ + ": " + str(err)
out["small_png"] = list(images.decode_png(open(root + "/small.png", "rb").read()).shape)
try:
    safe_text.read_json(root + "/sparse.json", max_bytes=32 << 20)
except safe_text.BadText as err:
    out["sparse"] = err.reason
out["peak_delta"] = peak() - base
print(json.dumps(out))
"""


@pytest.mark.timeout(180)
def test_budgets_outside_the_importer_hold(tmp_path):
    """Gzipped NIfTI through the probe's reader, PNG bytes in tables, JSON files: sizes are
    checked before allocation. Budget: the importer's default ``max_decoded_bytes`` (1 GiB)
    must never be approached; the largest thing held here is a few MiB, so peak growth stays
    under 96 MiB (3 x the 32 MiB of the importer's memory test)."""
    hdr = nib.Nifti1Header()
    hdr.set_data_shape((8, 8, 4))
    hdr.set_data_dtype(np.int16)
    hdr.set_sform(np.eye(4), 1)
    hdr["vox_offset"] = 352
    # header + 512 voxel bytes, then 300 MB of zeros the header never asked for
    (tmp_path / "small-header-long-tail.nii.gz").write_bytes(gzip_zeros(hdr.binaryblock + b"\0" * 4, 300_000_000))
    big = nib.Nifti1Header()
    big.set_data_shape((1200, 1000, 900))  # 2.16 GB of int16, over the 1 GiB default
    big.set_data_dtype(np.int16)
    big.set_sform(np.eye(4), 1)
    (tmp_path / "claims-2GB.nii.gz").write_bytes(gzip.compress(big.binaryblock + b"\0" * 4))
    (tmp_path / "bomb.png").write_bytes(png_bomb(9000, 9000, colour=True))  # 243 MB once decoded
    buf = io.BytesIO()
    Image.fromarray(gray_image(20, 30, 1)).save(buf, format="PNG")
    (tmp_path / "small.png").write_bytes(buf.getvalue())
    with open(tmp_path / "sparse.json", "wb") as fh:
        fh.truncate(1_500_000_000)  # sparse: no disk used
    assert (tmp_path / "small-header-long-tail.nii.gz").stat().st_size < 2_000_000
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, timeout=150,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["nifti_shape"] == [8, 8, 4]
    assert got["claims"] == "over max_decoded_bytes"
    assert got["bomb"].startswith("MedScopeError") and "81000000 pixels" in got["bomb"]
    assert got["small_png"] == [20, 30, 3]
    assert got["sparse"] == "over max_file_bytes"
    print(f"peak grew by {got['peak_delta'] / 2**20:.0f} MiB")
    assert got["peak_delta"] < 96 << 20, f"peak grew by {got['peak_delta'] >> 20} MiB"


def test_lgg_slice_number_that_would_size_an_array_is_rejected(tmp_path):
    from tests.fixtures.release_layouts import write_lgg

    good, bad = write_lgg(tmp_path)
    folder = next(p for p in tmp_path.rglob("TCGA_*") if p.is_dir())
    name = f"{folder.name}_{'9' * 21}"
    _save(str(folder / f"{name}.tif"), gray_image(32, 32, 1), "TIFF")
    _save(str(folder / f"{name}_mask.tif"), np.zeros((32, 32), np.uint8), "TIFF")
    table, rejects = cohorts.load("lgg-mri", str(tmp_path))
    assert {r["source_file"] for r in table.to_pylist()} == set(good)
    got = by_item(rejects)
    rel = str((folder / f"{name}.tif").relative_to(tmp_path))
    assert got.pop(rel) == "slice number out of range"
    assert got.pop(rel.replace(".tif", "_mask.tif")) == "slice number out of range"
    assert got == bad


# --------------------------------------------------------------------------- 3. one bad file never sinks the run


def test_text_in_any_common_encoding_reads_the_same():
    text = "ImageId,EncodedPixels\r\n1.2.3,-1\r\ncafé,€ 1 2\r\n"
    want = text.replace("\r\n", "\n")
    for enc in ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "cp1252"):
        assert safe_text.decode_text(text.encode(enc), "x.csv") == want, enc
    assert safe_text.decode_text(b"a\rb\r", "x") == "a\nb\n"


def test_siim_csv_saved_as_utf16_gives_the_same_cases(tmp_path):
    good, bad = write_siim(tmp_path)
    t8, r8 = cohorts.load("siim-rle", str(tmp_path))
    csv_path = tmp_path / "train-rle.csv"
    csv_path.write_bytes(csv_path.read_bytes().decode("utf-8").encode("utf-16"))
    t16, r16 = cohorts.load("siim-rle", str(tmp_path))
    assert t16.to_pylist() == t8.to_pylist() and t16.num_rows == len(good)
    assert by_item(r16) == by_item(r8)


def _write_vqa_rad(root, names):
    data = []
    for i, name in enumerate(names):
        data.append({"qid": i + 1, "image_name": name, "image_organ": "CHEST", "answer": "yes", "answer_type": "CLOSED",
                     "question_type": "PRES", "question": "Is there a mass?", "phrase_type": "freeform"})
    (root / "VQA_RAD Dataset Public.json").write_text(json.dumps(data))


def test_json_errors_name_the_file_line_and_field(tmp_path):
    for text, reason in (('{"a": [1, 2', "not valid JSON"), ("[" * 5000 + "]" * 5000, "JSON nested too deeply"),
                         ('{"models": 1, "models": 2}', "duplicate key")):
        with pytest.raises(MedScopeError) as err:
            safe_text.loads_json(text, "sweep.json")
        assert str(err.value).startswith("sweep.json: " + reason)
    assert safe_text.loads_json('{"a": [1, {"b": null}]}', "x") == {"a": [1, {"b": None}]}

    from medscope.reader import pack

    (tmp_path / "key.json").write_text('{"format": "medscope-reader-key", "items": [')
    with pytest.raises(MedScopeError) as err:
        pack.read_key(str(tmp_path))
    assert str(tmp_path / "key.json") in str(err.value) and "truncated" in str(err.value)

    from pipelines.score import items_of

    (tmp_path / "run" / "episodes").mkdir(parents=True)
    (tmp_path / "run" / "sweep.json").write_text('{"items": "x.parquet", ')
    with pytest.raises(MedScopeError) as err:
        items_of(str(tmp_path / "run" / "episodes"))
    assert "sweep.json: not valid JSON" in str(err.value)


def test_deeply_nested_release_json_is_one_reject_beside_good_splits(tmp_path):
    from tests.fixtures.replay_layouts import write_slake

    write_slake(tmp_path, 3, {}, {})
    cfg = cohorts.dataset_config("slake-vqa")
    table_ok, _ = cohorts.load("slake-vqa", str(tmp_path), cfg)
    extra = next(n for n in cfg.question_files if not (tmp_path / n).exists())
    (tmp_path / extra).write_text("[" * 100_000 + "]" * 100_000)  # RecursionError in json before
    table, rejects = cohorts.load("slake-vqa", str(tmp_path), cfg)
    assert table.to_pylist() == table_ok.to_pylist() and table.num_rows > 0
    assert by_item(rejects)[extra] == "corrupt JSON"
    assert "JSON nested too deeply" in detail_of(rejects, extra)


def test_invalid_regex_in_a_dataset_config_names_the_file_and_field(tmp_path):
    bad = tmp_path / "btcv.yaml"
    bad.write_text("label_name_regex: ['img(', 'label']\n")
    with pytest.raises(MedScopeError) as err:
        cohorts.dataset_config("nifti-labels", str(bad))
    assert str(bad) in str(err.value) and "label_name_regex" in str(err.value)


def test_any_exception_on_one_file_is_that_files_reject(tmp_path, monkeypatch):
    from medscope.cohorts import image_mask_folder

    good, bad = write_image_mask_folder(tmp_path)
    real = image_mask_folder.image_and_mask_case

    def flaky(cfg, root, rel, *a, **kw):
        if rel == "images/P001_a.png":
            raise ZeroDivisionError("a library bug on one file")
        return real(cfg, root, rel, *a, **kw)

    monkeypatch.setattr(image_mask_folder, "image_and_mask_case", flaky)
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), imf_cfg())
    assert {r["source_file"] for r in table.to_pylist()} == set(good) - {"images/P001_a.png"}
    assert by_item(rejects) == {**bad, "images/P001_a.png": "unexpected error"}
    assert detail_of(rejects, "images/P001_a.png").startswith("ZeroDivisionError: a library bug")


def test_reader_answer_file_with_wrong_types_is_one_reject(tmp_path):
    from medscope.reader import answers

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": answers.ANSWERS_FORMAT, "pack_hash": "h", "reader": "not a mapping"}))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50_000)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"format": answers.ANSWERS_FORMAT, "pack_hash": "nope", "reader": {"id": "r1"}}))
    keys = {"h": {"items": [], "name": "p"}}
    _, rejects, _ = answers.load_answers([str(bad), str(deep), str(good)], keys)
    reasons = {r["item_id"]: r["reason"] for r in rejects}
    assert reasons[str(bad)] == "malformed_answer_file"
    assert reasons[str(deep)] == "unreadable_answer_file"
    assert reasons[str(good)] == "unknown_pack"  # the next file is still read


# --------------------------------------------------------------------------- 4. paths, names


def test_names_in_a_release_json_may_not_leave_the_dataset_folder(tmp_path):
    root = tmp_path / "vqarad"
    folder = root / "VQA_RAD Image Folder"
    _save(str(folder / "synpic1.jpg"), gray_image(40, 40, 1), "JPEG", quality=95)
    _save(str(tmp_path / "outside" / "secret.jpg"), gray_image(40, 40, 2), "JPEG", quality=95)
    _write_vqa_rad(root, ["synpic1.jpg", "../../outside/secret.jpg", "/etc/hostname"])
    table, rejects = cohorts.load("vqa-rad", str(root))
    assert [r["image_file"] for r in table.to_pylist()] == ["VQA_RAD Image Folder/synpic1.jpg"]
    reasons = {r["item_id"].rsplit("#", 1)[0]: r["reason"] for r in rejects}
    assert set(reasons.values()) == {"path leaves the input root"} and len(reasons) == 2


def test_nfd_mask_name_still_matches_its_nfc_image(tmp_path):
    h, w = 32, 40
    m = rect_mask(h, w, 5, 6, 20, 22)
    name = "Patient_é1"
    _save(f"{tmp_path}/images/{unicodedata.normalize('NFC', name)}.png", gray_image(h, w, 1))
    _save(f"{tmp_path}/masks/{unicodedata.normalize('NFD', name)}_mask.png", m.astype(np.uint8) * 255)
    _save(f"{tmp_path}/images/plain.png", gray_image(h, w, 2))
    _save(f"{tmp_path}/masks/plain_mask.png", m.astype(np.uint8) * 255)
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), imf_cfg())
    rows = table.to_pylist()
    assert len(rows) == 2 and all(r["lesion_bbox"] == expect(m)[1] for r in rows)
    assert rejects == []


# --------------------------------------------------------------------------- 5. secrets


def test_url_credentials_are_redacted_where_printed(capsys):
    from pipelines.support.jobs import guarded, print_summary

    url = "https://alice:s3cr3t-pw@llm.example.org/v1"
    assert safe_text.redact_url(url) == "https://***@llm.example.org/v1"
    assert safe_text.redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    print_summary({"base_url": url, "models": [{"endpoint": "http://tok123@h/x"}]})

    def boom():
        raise MedScopeError(f"cannot reach {url}")

    assert guarded(boom) == 2
    out = capsys.readouterr()
    assert "s3cr3t" not in out.out + out.err and "tok123" not in out.out
    assert "llm.example.org" in out.out and "llm.example.org" in out.err


# --------------------------------------------------------------------------- 6. config values


def test_config_values_are_validated_naming_file_and_field(tmp_path):
    from medscope.models.config import ModelsConfig
    from medscope.training.recipes import TrainRecipe

    ok = tmp_path / "ok.yaml"
    ok.write_text("models:\n  - {name: a, kind: openai, model: m, timeout_s: 5, max_attempts: 2}\n")
    assert cfgmod.load(ModelsConfig, str(ok)).models[0].max_attempts == 2
    for body, field in (("price_in_per_mtok: .nan", "price_in_per_mtok"), ("max_attempts: -3", "max_attempts"),
                        ("timeout_s: -1", "timeout_s"), ("rpm: .inf", "rpm")):
        f = tmp_path / f"{field}.yaml"
        f.write_text(f"models:\n  - {{name: a, kind: openai, model: m, {body}}}\n")
        with pytest.raises(MedScopeError) as err:
            cfgmod.load(ModelsConfig, str(f))
        assert str(f) in str(err.value) and field in str(err.value)
    dup = tmp_path / "dup.yaml"
    dup.write_text("models:\n  - {name: a, kind: openai}\nmodels:\n  - {name: b, kind: openai}\n")
    with pytest.raises(MedScopeError) as err:
        cfgmod.load(ModelsConfig, str(dup))
    assert str(dup) in str(err.value) and "duplicate key 'models'" in str(err.value)
    with pytest.raises(MedScopeError) as err:
        cfgmod.parse(TrainRecipe, {**_recipe_minimal(), "lr": float("inf")}, source="recipe.yaml")
    assert "recipe.yaml" in str(err.value) and "lr" in str(err.value)


def _recipe_minimal():
    return {"name": "r", "allowed_kinds": ["original"]}


# --------------------------------------------------------------------------- 8. one writer per folder


def test_a_second_import_into_a_busy_folder_is_refused(tmp_path):
    from pipelines.cohort import import_cohort, show_summary

    write_image_mask_folder(tmp_path / "data")
    out = tmp_path / "out"
    out.mkdir()
    (out / folder_lock.LOCK_NAME).write_text(json.dumps(
        {"token": "other", "host": socket.gethostname(), "pid": os.getppid(), "verb": "cohort import"}))
    with pytest.raises(MedScopeError) as err:
        import_cohort("image-mask-folder", str(tmp_path / "data"), str(out), overrides=IMF)
    assert f"pid {os.getppid()}" in str(err.value) and str(out) in str(err.value)
    assert sorted(os.listdir(out)) == [folder_lock.LOCK_NAME]  # nothing written
    # a lock whose writer is gone (SIGKILL) is taken over
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (out / folder_lock.LOCK_NAME).write_text(json.dumps({"token": "x", "host": socket.gethostname(), "pid": dead.pid}))
    summary = import_cohort("image-mask-folder", str(tmp_path / "data"), str(out), overrides=IMF)
    assert summary["cases"] == 2 and not (out / folder_lock.LOCK_NAME).exists()
    assert json.loads((out / "import.json").read_text())["status"] == "complete"
    show_summary(str(out))  # a complete folder reads back


def test_a_folder_another_writer_took_over_is_never_marked_complete(tmp_path, monkeypatch):
    from pipelines import cohort

    write_image_mask_folder(tmp_path / "data")
    out = str(tmp_path / "out")
    real = records.write_table

    def interleaved(name, table, uri):  # writer B resets the manifest while A writes its tables
        (tmp_path / "out" / "import.json").write_text(json.dumps({"status": "writing", "writer": "B"}))
        return real(name, table, uri)

    monkeypatch.setattr(cohort.records, "write_table", interleaved)
    with pytest.raises(MedScopeError, match="another import wrote into this folder"):
        cohort.import_cohort("image-mask-folder", str(tmp_path / "data"), out, overrides=IMF)
    assert json.loads((tmp_path / "out" / "import.json").read_text())["status"] == "writing"
    with pytest.raises(MedScopeError, match="did not finish"):
        cohort.show_summary(out)
