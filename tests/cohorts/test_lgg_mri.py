"""The LGG MRI reader: bad slices and folders planted beside good cases."""

from __future__ import annotations

import numpy as np
import pytest

from medscope import cohorts

from tests.fixtures.bad_input import ANY, by_item, detail_of, run_kind
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import gray_image


def lgg(root):
    from tests.fixtures.release_layouts import write_lgg

    write_lgg(root)


def _lgg_folder(root):
    return next(p for p in sorted(root.rglob("TCGA_*")) if p.is_dir())


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


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["slice number 0", "zero-byte mask"])
def test_lgg(tmp_path, kind):
    run_kind(tmp_path, "lgg-mri", lgg, _plant_lgg(kind))


def _plant_lgg_more(kind):
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


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["non-numeric slice suffix", "zero-byte slice image"])
def test_lgg_more_kinds(tmp_path, kind):
    run_kind(tmp_path, "lgg-mri", lgg, _plant_lgg_more(kind))


@pytest.mark.timeout(120)
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


@pytest.mark.timeout(120)
def test_two_files_claiming_one_slice_are_a_conflict_naming_both(tmp_path):
    """Issue 51: ``_5.tif`` and a zero-padded re-export ``_05.tif`` (other pixels, other mask)
    were "duplicate copy ... same file as", which they are not. Both claim slice 5: neither is
    picked, every claimant (images and masks) is a reject naming the others."""
    from tests.fixtures.release_layouts import write_lgg

    write_lgg(tmp_path)
    folder = next(p for p in sorted(tmp_path.rglob("TCGA_CS_4941_*")) if p.is_dir())
    rel = str(folder.relative_to(tmp_path))
    _save(str(folder / f"{folder.name}_05.tif"), gray_image(32, 32, 3), "TIFF")
    mask = np.zeros((32, 32), np.uint8)
    mask[4:12, 4:12] = 255
    _save(str(folder / f"{folder.name}_05_mask.tif"), mask, "TIFF")
    table, rejects = cohorts.load("lgg-mri", str(tmp_path))
    claimants = [f"{rel}/{folder.name}_{n}{m}.tif" for n in ("5", "05") for m in ("", "_mask")]
    reasons = by_item(rejects)
    for item in claimants:
        assert reasons.get(item) == "conflicting slice files", reasons.get(item)
        assert all(other in detail_of(rejects, item) for other in claimants if other != item)
    assert not any(r["reason"] == "duplicate copy" and r["item_id"] in claimants for r in rejects)
    sources = {r["source_file"] for r in table.to_pylist()}
    assert not sources & set(claimants)
    # the patient's other lesion slices still arrive: 8 has the largest tumour, 11 is 3 slices away
    assert {f"{rel}/{folder.name}_{n}.tif" for n in (8, 11)} <= sources
