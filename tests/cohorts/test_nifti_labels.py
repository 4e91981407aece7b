"""The NIfTI label-map reader: bad volumes, label maps and affines planted beside good pairs."""

from __future__ import annotations

import gzip
import os

import nibabel as nib
import numpy as np
import pytest

from medscope import cohorts
from medscope.volumes import nifti as vnifti

from tests.fixtures.bad_input import ANY, KEPT, by_item, detail_of, run_kind
from tests.fixtures.cohort_layouts import write_nifti_labels


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


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", NII_KINDS)
def test_nifti_labels(tmp_path, kind):
    run_kind(tmp_path, "nifti-labels", nii, _plant_nii(kind), ORGANS)


def _plant_nii_more(kind):
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


NII_MORE_KINDS = ["float32 label map of whole numbers", "label affine off by 1e-9", "label affine shifted 10 mm",
             "zero-byte .nii.gz"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", NII_MORE_KINDS)
def test_nifti_labels_more_kinds(tmp_path, kind):
    run_kind(tmp_path, "nifti-labels", nii, _plant_nii_more(kind), ORGANS)


@pytest.mark.timeout(120)
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


def _nifti_label_pair(root, i, image, label, affine=np.eye(4)):
    os.makedirs(f"{root}/imagesTr", exist_ok=True)
    os.makedirs(f"{root}/labelsTr", exist_ok=True)
    nib.save(nib.Nifti1Image(image, affine), f"{root}/imagesTr/img{i:04d}.nii.gz")
    nib.save(nib.Nifti1Image(label, affine, dtype=label.dtype), f"{root}/labelsTr/label{i:04d}.nii.gz")
    return f"imagesTr/img{i:04d}.nii.gz"


@pytest.mark.timeout(120)
def test_nifti_labels_refuse_wrapping_labels_nan_voxels_and_non_3d(tmp_path):
    good, bad = write_nifti_labels(tmp_path)
    img = np.full((16, 16, 6), 40, np.int16)
    wraps = np.zeros((16, 16, 6), np.int64)
    wraps[4:8, 4:8, 1:4] = 2**32 + 2  # would be label 2 (liver) after an int32 cast
    bad[_nifti_label_pair(tmp_path, 20, img, wraps)] = "label out of range"
    nan_img = np.full((16, 16, 6), 40.0, np.float32)
    nan_img[3, 3, 3] = np.nan
    nan_img[4, 4, 4] = np.inf
    bad[_nifti_label_pair(tmp_path, 21, nan_img, np.zeros((16, 16, 6), np.uint8))] = "non-finite voxels"
    bad[_nifti_label_pair(tmp_path, 22, np.zeros((4, 4, 3, 2, 2), np.int16), np.zeros((4, 4, 3, 2, 2), np.uint8))] = \
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


def _no_orientation(arr, path, zooms):
    """A NIfTI-1 with sform_code = qform_code = 0 and pixdim[1:4] = ``zooms`` as written on disk."""
    img = nib.Nifti1Image(arr, None, dtype=arr.dtype)
    img.header["pixdim"][1:4] = zooms
    img.header["sform_code"] = 0
    img.header["qform_code"] = 0
    nib.save(img, path)


@pytest.mark.timeout(120)
def test_a_zero_voxel_size_without_sform_is_an_invalid_affine_not_an_invented_1_mm(tmp_path):
    # issue 51, ninth campaign: pixdim 0 and no sform / qform; nibabel's loader sets the zero
    # pixdims to 1 (a warning), so the volume was kept with spacing [1, 1, 1] its file never stated
    good, bad = write_nifti_labels(tmp_path)
    img = np.full((16, 16, 6), 40, np.int16)
    lab = np.zeros((16, 16, 6), np.uint8)
    lab[4:8, 4:8, 1:4] = 1
    _no_orientation(img, tmp_path / "imagesTr" / "img0021.nii.gz", (0, 0, 0))
    _no_orientation(lab, tmp_path / "labelsTr" / "label0021.nii.gz", (0, 0, 0))
    bad["imagesTr/img0021.nii.gz"] = "invalid affine"
    # the control: the same file with its voxel size written (0.8 x 0.8 x 2.5 mm) is kept at that size
    _no_orientation(img, tmp_path / "imagesTr" / "img0022.nii.gz", (0.8, 0.8, 2.5))
    _no_orientation(lab, tmp_path / "labelsTr" / "label0022.nii.gz", (0.8, 0.8, 2.5))
    cfg = cohorts.dataset_config("nifti-labels", overrides={"organ_map": {1: "spleen", 2: "liver", 3: "aorta"}})
    table, rejects = cohorts.load("nifti-labels", str(tmp_path), cfg)
    rows = {r["image_uri"].rsplit(str(tmp_path) + "/", 1)[-1]: r for r in table.to_pylist()}
    assert set(rows) == set(good) | {"imagesTr/img0022.nii.gz"}
    assert rows["imagesTr/img0022.nii.gz"]["spacing"] == pytest.approx([0.8, 0.8, 2.5])
    assert by_item(rejects) == bad
    assert "voxel size (0.0, 0.0, 0.0)" in detail_of(rejects, "imagesTr/img0021.nii.gz")
