"""Issue 20: every kind of bad input beside good cases, for every format.

Each ends as a reject with a countable reason (or an ignored row, or a one-line CLI
error), never a hang (FIFOs, /dev/zero, symlink loops run under a timeout), never a lost
good case. Memory budgets are checked in tests/cohorts/test_memory_budget.py; each reader's own
planted kinds are in its file (tests/cohorts/test_<reader>.py).
"""

import io
import os

import numpy as np
import pytest
from PIL import Image

from medscope import cohorts, images
from medscope.cohorts import common
from medscope.errors import MedScopeError
from medscope.io import bounded, guarded, records
from medscope.seeding import stable_hash

from tests.fixtures.bad_input import _png, by_item, detail_of, imf_cfg
from tests.fixtures.cohort_bad_layouts import (
    add_bad_2d,
    add_bad_busi,
    add_bad_nifti,
    add_bad_siim,
    add_symlinked_subfolder,
)
from tests.fixtures.cohort_layouts import (
    _save,
    gray_image,
    rect_mask,
    write_busi,
    write_image_mask_folder,
    write_kvasir,
    write_nifti_labels,
    write_siim,
)

pytestmark = pytest.mark.timeout(300)  # a FIFO or an unbounded read would hang here, not pass (300 s: a busy machine)


def split(rejects):
    load = {r["item_id"]: r["reason"] for r in rejects if r["stage"] == "load"}
    ignored = {r["item_id"]: r["reason"] for r in rejects if r["stage"] == "ignored"}
    assert len(load) + len(ignored) == len(rejects)  # one row per file
    records.to_table("rejects", rejects)  # every row is storable (UTF-8 names)
    return load, ignored


def check(table, rejects, good, bad, ignored, source):
    rows = {r["source_file"]: r for r in table.to_pylist()}
    assert set(rows) == set(good)
    got_bad, got_ignored = split(rejects)
    assert got_bad == bad
    assert got_ignored == ignored
    for rel, want in good.items():
        row = rows[rel]
        assert row["case_id"] == stable_hash(source, rel)
        if want is None:
            assert row["mask"] is None and not row["has_lesion"]
        else:
            frac, box = want
            mask = images.decode_mask(row["mask"])
            assert mask.shape == (row["height"], row["width"])
            assert row["lesion_area_frac"] == pytest.approx(frac) and row["lesion_bbox"] == box
    return rows


def merged(*pairs):
    out = [{}, {}, {}]
    for pair in pairs:
        for i, d in enumerate(pair):
            out[i].update(d)
    return out


def test_kvasir_bad_input(tmp_path):
    good, bad, ignored = merged(write_kvasir(tmp_path) + ({},), add_bad_2d(tmp_path, ext="jpg"))
    table, rejects = cohorts.load("kvasir-seg", str(tmp_path))
    rows = check(table, rejects, good, bad, ignored, "kvasir-seg")
    # EXIF orientation 6: the stored 48x64 image is shown (and kept) turned 90 degrees clockwise
    turned = rows["images/turned.png"]
    assert (turned["width"], turned["height"]) == (48, 64)
    from tests.fixtures.cohort_layouts import colour_image

    assert np.array_equal(images.decode_png(turned["image"]), np.rot90(colour_image(48, 64, 31), k=-1))
    details = {r["item_id"]: r["detail"] for r in rejects}
    assert "50000000" in details["images/maskbomb.png"]  # the limit is in the reject
    assert details["images/pipe.png"] == "FIFO" and "resolves outside --path" in details["images/zero.png"]


def test_image_mask_folder_bad_input_and_symlinked_folder(tmp_path):
    root = tmp_path / "cohort"
    good, bad, ignored = add_bad_2d(root, ext="png")
    linked_good, linked_bad = add_symlinked_subfolder(root, tmp_path / "elsewhere")
    good.update(linked_good)
    bad.update(linked_bad)
    table, rejects = cohorts.load("image-mask-folder", str(root))
    check(table, rejects, good, bad, ignored, "image-mask-folder")


def test_busi_bad_input(tmp_path):
    good, bad, ignored = merged(write_busi(tmp_path) + ({},), add_bad_busi(tmp_path))
    table, rejects = cohorts.load("busi", str(tmp_path))
    rows = check(table, rejects, good, bad, ignored, "busi")
    assert rows["Malignant/malignant (9).png"]["has_lesion"]


def test_siim_bad_csv_rows_and_dicoms(tmp_path):
    good, bad, ignored = merged(write_siim(tmp_path) + ({},), add_bad_siim(tmp_path))
    table, rejects = cohorts.load("siim-rle", str(tmp_path))
    rows = check(table, rejects, good, bad, ignored, "siim-acr")
    assert rows["dicom-images-train/defl/1.2.3.30.dcm"]["patient_id"] == "pat-30"  # deflated DICOM read


def test_nifti_bad_input(tmp_path):
    good, bad = write_nifti_labels(tmp_path)
    g2, b2, ignored = add_bad_nifti(tmp_path)
    bad.update(b2)
    cfg = cohorts.dataset_config("nifti-labels", str(tmp_path / "organs.yaml"))
    table, rejects = cohorts.load("nifti-labels", str(tmp_path), cfg)
    got = {r["image_uri"].split(str(tmp_path) + "/")[1] for r in table.to_pylist()}
    assert got == set(good)
    got_bad, got_ignored = split(rejects)
    assert got_bad == bad and got_ignored == ignored
    assert all(r["table"] == "volumes" for r in rejects)


def test_limits_come_from_the_dataset_config(tmp_path):
    write_image_mask_folder(tmp_path)
    base = {"mask_suffix": "_mask"}
    cfg = cohorts.dataset_config("image-mask-folder", overrides={**base, "limits": {"max_file_bytes": 64}})
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), cfg)
    assert table.num_rows == 0
    # the text file of P004 is 22 bytes: under the limit, so still "unreadable image"
    reasons = {r["item_id"]: r["reason"] for r in rejects}
    assert reasons.pop("images/P004_a.png") == "unreadable image"
    assert set(reasons.values()) == {"over max_file_bytes"}
    # 32 x 40 = 1280 pixels: over a 1000-pixel budget, under a 1280-pixel one
    for limit, want_rows in ((1000, 0), (1280, 2)):
        cfg = cohorts.dataset_config("image-mask-folder", overrides={**base, "limits": {"max_image_pixels": limit}})
        table, rejects = cohorts.load("image-mask-folder", str(tmp_path), cfg)
        assert table.num_rows == want_rows
    # decoded bytes: a 32x40 gray image is 1280 B, a 16-bit one 2560 B
    cfg = cohorts.dataset_config("image-mask-folder", overrides={**base, "limits": {"max_decoded_bytes": 2000}})
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), cfg)
    assert table.column("source_file").to_pylist() == ["images/P001_a.png"]
    reason = {r["item_id"]: (r["reason"], r["detail"]) for r in rejects}["images/P001_b.png"]
    assert reason[0] == "over max_decoded_bytes" and "2560" in reason[1] and "2000" in reason[1]
    with pytest.raises(MedScopeError, match="max_file_bytes"):
        cohorts.dataset_config("busi", overrides={"limits": {"max_file_bytes": 0}})
    with pytest.raises(MedScopeError, match="max_pixels"):
        cohorts.dataset_config("busi", overrides={"limits": {"max_pixels": 5}})


def test_csv_fields_by_hand():
    assert guarded.csv_fields(b"a, 1 2 3") == ["a", "1 2 3"]
    long = b"1 " * 100000  # unquoted: no field-size limit applies
    assert guarded.csv_fields(b"a," + long)[1] == long.decode().strip()
    assert guarded.csv_fields(b'a, "1, 2"') == ["a", "1, 2"]
    for line, reason in ((b'a,"1 2', "malformed CSV row"), (b"a,\xc3", "CSV row not UTF-8")):
        with pytest.raises(bounded.InputRejected) as err:
            guarded.csv_fields(line)
        assert err.value.reason == reason
    data = b"\xef\xbb\xbfh1,h2\rx,1\r\n\ny,2\n"
    assert [(n, line) for n, line in guarded.csv_lines(data)] == [(1, b"h1,h2"), (2, b"x,1"), (4, b"y,2")]


def test_inflate_bounded_stops_at_the_limit():
    import gzip
    import zlib

    data = gzip.compress(b"\0" * 100_000)
    assert guarded.inflate_bounded(data, 100_000, 31) == b"\0" * 100_000
    assert guarded.inflate_bounded(data, 10, 31, strict=False) == b"\0" * 10
    with pytest.raises(bounded.InputRejected, match="over max_decoded_bytes"):
        guarded.inflate_bounded(data, 99_999, 31)
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = raw.compress(b"abc" * 10) + raw.flush()
    assert guarded.inflate_bounded(body, 30, -15) == b"abc" * 10
    with pytest.raises(bounded.InputRejected, match="corrupt DICOM"):
        guarded.inflate_bounded(b"\xff\xff\xff\xff", 30, -15, what="DICOM")


def test_to_uint8_in_bands_matches_the_whole_image_formula():
    rng = np.random.default_rng(1)
    a = rng.integers(100, 4000, size=(700, 600), dtype=np.uint16)  # bands of 436 rows: 2 of them
    lo, hi = 100.0, float(a.max())
    lo = float(a.min())
    want = np.clip(np.rint((a.astype(np.float64) - lo) * (255.0 / (hi - lo))), 0, 255).astype(np.uint8)
    assert np.array_equal(common.to_uint8(a), want)
    assert common.to_uint8(np.full((3, 3), 7, np.uint16)).max() == 0


def test_walk_lists_fifos_and_stops_at_symlink_loops(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.png").write_bytes(b"1")
    os.mkfifo(tmp_path / "a" / "p.png")
    os.symlink(tmp_path, tmp_path / "a" / "up")
    files, ignored = guarded.walk(str(tmp_path))
    assert files == ["a/p.png", "a/x.png"]
    assert ignored == [("a/up", "folder already listed (symlink loop or repeat)")]
    assert guarded.display_name(os.fsdecode(b"x\xff.png")) == "x\\xff.png"


@pytest.mark.timeout(120)
def test_rejects_name_the_exception_class_of_each_cause(tmp_path):
    root = tmp_path / "imf"
    m = rect_mask(32, 40, 5, 5, 20, 12).astype(np.uint8) * 255
    _save(f"{root}/images/good.png", gray_image(32, 40, 1))
    _save(f"{root}/masks/good_mask.png", m)
    truncated = _png(gray_image(32, 40, 2))[:60]
    (root / "images" / "cut.png").write_bytes(truncated)
    _save(f"{root}/masks/cut_mask.png", m)
    os.mkfifo(root / "images" / "pipe.png")
    _save(f"{root}/masks/pipe_mask.png", m)
    # what Pillow itself raises on the truncated bytes, worked out here, not by MedScope
    try:
        Image.open(io.BytesIO(truncated)).load()
        raise AssertionError("Pillow read a truncated PNG")
    except Exception as err:  # noqa: BLE001
        pillow_class = type(err).__name__
    cfg = cohorts.dataset_config("image-mask-folder", overrides={"mask_suffix": "_mask"})
    table, rejects = cohorts.load("image-mask-folder", str(root), cfg)
    assert table.column("source_file").to_pylist() == ["images/good.png"]
    got = {r["item_id"]: (r["reason"], r["error_class"]) for r in rejects if r["stage"] == "load"}
    assert got["images/cut.png"] == ("unreadable image", pillow_class)
    assert got["images/pipe.png"] == ("not a regular file", "InputRejected")  # MedScope's own check
    back = records.to_table("rejects", rejects)
    assert "error_class" in back.column_names


@pytest.mark.timeout(120)
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


def test_a_long_csv_field_reads_the_same_whichever_reader_ran_first():
    """csv's field limit is one setting per process: a SIIM row read before any other CSV reader
    lifted it was 'malformed CSV row', after it a run-length list (CI saw the second in a full run)."""
    import csv

    from medscope.io import guarded

    line = b'1.2.3.22, "' + b"1 " * 70000 + b'"'
    saved = csv.field_size_limit()
    try:
        csv.field_size_limit(128 * 1024)  # Python's default, as in a fresh process
        fields = guarded.csv_fields(line)
    finally:
        csv.field_size_limit(saved)
    assert fields[0] == "1.2.3.22" and len(fields[1].split()) == 70000
