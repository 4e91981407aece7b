"""Each loader on a tiny cohort in its real layout: good cases arrive, bad files become rejects."""

import json

import cv2
import numpy as np
import pytest

from tests.fixtures.cohort_layouts import (
    ramp16,
    rect_mask,
    write_busi,
    write_image_mask_folder,
    write_kvasir,
    write_nifti_labels,
    write_siim,
)
from medscope import cohorts, images
from medscope.io import records
from medscope.cohorts import common
from medscope.cohorts.siim_rle import rle_decode, rle_encode
from medscope.errors import MedScopeError
from medscope.seeding import stable_hash


def check_cases(table, rejects, good, bad, source):
    rows = {r["source_file"]: r for r in table.to_pylist()}
    assert set(rows) == set(good)
    assert {r["item_id"]: r["reason"] for r in rejects} == bad
    assert all(r["stage"] == "load" and r["source"] == source and r["table"] == "cases" for r in rejects)
    records.to_table("rejects", rejects)
    for rel, want in good.items():
        row = rows[rel]
        assert row["case_id"] == stable_hash(source, rel)
        img = images.decode_png(row["image"])
        assert img.shape[:2] == (row["height"], row["width"])
        if want is None:
            assert row["mask"] is None and not row["has_lesion"]
            assert row["lesion_area_frac"] == 0.0 and row["lesion_bbox"] is None
        else:
            frac, box = want
            mask = images.decode_mask(row["mask"])
            assert mask.shape == (row["height"], row["width"])
            assert row["has_lesion"]
            assert row["lesion_area_frac"] == pytest.approx(frac)
            assert row["lesion_bbox"] == box
    return rows


def test_kvasir_seg(tmp_path):
    good, bad = write_kvasir(tmp_path)
    table, rejects = cohorts.load("kvasir-seg", str(tmp_path))
    rows = check_cases(table, rejects, good, bad, "kvasir-seg")
    row = rows["images/cju0000.jpg"]
    assert row["imaging_type"] == "colonoscopy" and row["finding"] == "polyp"
    assert row["question"] == "Is there a polyp in this image?" and row["question_kind"] == "presence"
    assert images.decode_png(row["image"]).ndim == 3  # colour stays colour
    assert row["patient_id"] is None and row["split"] is None and row["group_id"] is None
    assert_16_bit_converted(rows["images/deep.png"])


def assert_16_bit_converted(row):
    """The 12-bit ramp is stretched to 0..255 by its own range: monotone, never wrapped modulo 256."""
    _, want = ramp16(row["height"], row["width"])
    assert np.array_equal(images.decode_png(row["image"], gray=True), want)


def test_busi_merges_masks_and_keeps_normals_lesion_free(tmp_path):
    good, bad = write_busi(tmp_path)
    table, rejects = cohorts.load("busi", str(tmp_path))
    rows = check_cases(table, rejects, good, bad, "busi")
    merged = images.decode_mask(rows["benign/benign (2).png"]["mask"])
    want = rect_mask(40, 56, 2, 2, 8, 8) | rect_mask(40, 56, 30, 20, 40, 30)
    assert np.array_equal(merged, want)
    # equal-channel RGB ultrasound is stored gray
    stored = cv2.imdecode(np.frombuffer(rows["benign/benign (1).png"]["image"], np.uint8), cv2.IMREAD_UNCHANGED)
    assert stored.shape == (40, 56)
    assert rows["normal/normal (1).png"]["imaging_type"] == "breast ultrasound"
    assert_16_bit_converted(rows["benign/benign (7).png"])


def test_busi_threshold_mode_keeps_graded_mask(tmp_path):
    write_busi(tmp_path)
    cfg = cohorts.dataset_config("busi", overrides={"non_binary_mask": "threshold"})
    table, rejects = cohorts.load("busi", str(tmp_path), cfg)
    rows = {r["source_file"]: r for r in table.to_pylist()}
    assert "malignant/malignant (2).png" in rows
    mask = images.decode_mask(rows["malignant/malignant (2).png"]["mask"])
    # grades 80 and 200: only the 200 square passes "> 127"
    assert np.array_equal(mask, rect_mask(40, 56, 20, 20, 29, 29))
    assert "non-binary mask" not in {r["reason"] for r in rejects}


def test_image_mask_folder_patient_ids_and_16_bit(tmp_path):
    good, bad = write_image_mask_folder(tmp_path)
    cfg = cohorts.dataset_config("image-mask-folder", overrides={"mask_suffix": "_mask", "patient_id_regex": r"^(P\d+)_"})
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), cfg)
    rows = check_cases(table, rejects, good, bad, "image-mask-folder")
    assert rows["images/P001_a.png"]["patient_id"] == "P001"
    img = images.decode_png(rows["images/P001_b.png"]["image"], gray=True)
    assert img.min() == 0 and img.max() == 255
    # worked by hand: pixel (row 10, col 7) holds 3 * 407 = 1221 of max 3837 -> 255 * 1221 / 3837 = 81.1
    assert img[10, 7] == 81
    assert_16_bit_converted(rows["images/P001_b.png"])


def test_image_mask_folder_missing_mask_can_mean_lesion_free(tmp_path):
    write_image_mask_folder(tmp_path)
    cfg = cohorts.dataset_config(
        "image-mask-folder", overrides={"mask_suffix": "_mask", "missing_mask_means_lesion_free": True}
    )
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), cfg)
    rows = {r["source_file"]: r for r in table.to_pylist()}
    assert rows["images/P002_a.png"]["has_lesion"] is False and rows["images/P002_a.png"]["mask"] is None
    assert "missing mask" not in {r["reason"] for r in rejects}


def test_rle_decode_against_hand_encoded_mask():
    # 3 rows x 4 columns. Column-major pixel numbers:
    #   0 3 6 9
    #   1 4 7 10
    #   2 5 8 11
    # Runs: pixels 1-2 (gap 1, len 2), pixels 6-7 (gap 3 after pixel 3, len 2), pixel 11 (gap 3, len 1)
    want = np.array(
        [
            [0, 0, 1, 0],
            [1, 0, 1, 0],
            [1, 0, 0, 1],
        ],
        dtype=bool,
    )
    assert np.array_equal(rle_decode("1 2 3 2 3 1", 3, 4), want)
    assert rle_encode(want) == "1 2 3 2 3 1"
    assert not rle_decode("-1", 3, 4).any()
    rng = np.random.default_rng(0)
    m = rng.random((7, 9)) > 0.6
    assert np.array_equal(rle_decode(rle_encode(m), 7, 9), m)


@pytest.mark.parametrize("bad", ["1 2 3", "a b", "0 13", "-1 2", "2 0"])
def test_rle_decode_rejects_malformed(bad):
    with pytest.raises(common.InputRejected) as err:
        rle_decode(bad, 3, 4)
    assert err.value.reason == "malformed RLE"


def test_siim_rle(tmp_path):
    good, bad = write_siim(tmp_path)
    table, rejects = cohorts.load("siim-rle", str(tmp_path))
    rows = check_cases(table, rejects, good, bad, "siim-acr")
    row = rows["dicom-images-train/1.2.1/1.2.1.1/1.2.3.1.dcm"]
    assert row["patient_id"] == "pat-1" and row["critical"] is True and row["finding"] == "pneumothorax"
    assert rows["dicom-images-train/png/1.2.3.4.png"]["patient_id"] is None
    assert rows["dicom-images-train/1.2.3/1.2.3.1/1.2.3.3.dcm"]["critical"] is True  # the question is critical
    assert_16_bit_converted(rows["dicom-images-train/1.2.2/1.2.2.1/1.2.3.2.dcm"])


def test_nifti_labels(tmp_path):
    good, bad = write_nifti_labels(tmp_path)
    cfg = cohorts.dataset_config("nifti-labels", str(tmp_path / "organs.yaml"))
    table, rejects = cohorts.load("nifti-labels", str(tmp_path), cfg)
    assert table.schema == records.schema("volumes")
    rows = {r["image_uri"].split(str(tmp_path) + "/")[1]: r for r in table.to_pylist()}
    assert set(rows) == set(good)
    assert {r["item_id"]: r["reason"] for r in rejects} == bad
    assert all(r["table"] == "volumes" for r in rejects)
    for rel, want in good.items():
        row = rows[rel]
        assert row["shape"] == want["shape"]
        assert row["spacing"] == pytest.approx(want["spacing"])
        assert row["orientation"] == "RAS"
        assert json.loads(row["organ_map"]) == {"1": "spleen", "2": "liver", "3": "aorta"}
        assert row["label_uri"].endswith(rel.replace("imagesTr/img", "labelsTr/label"))
    assert rows["imagesTr/img0001.nii.gz"]["patient_id"] == "0001"


def test_loader_errors_are_one_line(tmp_path):
    with pytest.raises(MedScopeError, match="no images under images/"):
        cohorts.load("kvasir-seg", str(tmp_path))
    with pytest.raises(MedScopeError, match="none of the BUSI class folders"):
        cohorts.load("busi", str(tmp_path))
    with pytest.raises(MedScopeError, match="unknown cohort format"):
        cohorts.load("dicom-zoo", str(tmp_path))
    with pytest.raises(MedScopeError, match="invalid DatasetConfig: patient_id_regex"):
        cohorts.dataset_config("busi", overrides={"patient_id_regex": "(unclosed"})
    with pytest.raises(MedScopeError, match="organ_map"):
        cohorts.dataset_config("nifti-labels", overrides={"organ_map": {0: "background"}})


def test_lesion_helpers_by_hand():
    m = np.zeros((10, 20), bool)
    m[2:5, 3:9] = True  # 3 rows x 6 columns = 18 of 200 pixels
    assert common.lesion_area_frac(m) == pytest.approx(18 / 200)
    assert common.lesion_bbox(m) == [3, 2, 8, 4]
    assert common.lesion_bbox(np.zeros((3, 3), bool)) is None
    cfg = cohorts.dataset_config("busi")
    with pytest.raises(common.InputRejected, match="whole-image mask"):
        common.binarize_mask(np.full((4, 4), 255, np.uint8), (4, 4), cfg)
    raw = np.zeros((4, 4), np.uint8)
    raw[0, 0] = 1
    assert common.binarize_mask(raw, (4, 4), cfg).sum() == 1
