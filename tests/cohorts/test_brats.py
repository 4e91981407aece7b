"""The BraTS reader: bad segmentations and FLAIR volumes planted beside good cases."""

from __future__ import annotations

import os

import nibabel as nib
import numpy as np
import pytest

from medscope import cohorts

from tests.fixtures.bad_input import ANY, KEPT, by_item, run_kind


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


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", BRATS_KINDS)
def test_brats(tmp_path, kind):
    run_kind(tmp_path, "brats", brats, _plant_brats(kind))


def _plant_brats_more(kind):
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


BRATS_MORE_KINDS = ["label 3 in a 2021 segmentation", "FLAIR and segmentation shapes differ", "folder with only a segmentation"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", BRATS_MORE_KINDS)
def test_brats_more_kinds(tmp_path, kind):
    run_kind(tmp_path, "brats", brats, _plant_brats_more(kind))


@pytest.mark.timeout(120)
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
