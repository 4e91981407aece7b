"""The paper's own cohorts in their released layouts: each loader on a fixture written
in its release's exact layout with the bad files real downloads contain."""

import io
import json

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.release_layouts import (
    write_brats,
    write_chestx_det,
    write_hyperkvasir,
    write_lgg,
    write_qata,
    write_slake,
)
from tests.fixtures.vqa_layouts import write_pathvqa, write_vqa_rad
from medscope import cohorts, images
from medscope.io import records
from medscope.cohorts.slices import choose_slices, tissue_fraction
from medscope.seeding import stable_hash
from tests.cohorts.test_loaders import check_cases


def ids(table):
    return sorted(table.column("case_id" if "case_id" in table.column_names else "item_id").to_pylist())


def test_slake_cases(tmp_path):
    good, bad, _, _ = write_slake(tmp_path)
    table, rejects = cohorts.load("slake", str(tmp_path))
    rows = check_cases(table, rejects, good, bad, "slake")
    cancer = rows["imgs/xmlab0/source.jpg#Liver Cancer"]
    assert cancer["finding"] == "liver cancer" and cancer["imaging_type"] == "ct"
    assert cancer["question"] == "Is there liver cancer in this image?"
    brain = [r for r in rows.values() if r["source_file"].startswith("imgs/xmlab1/")]
    assert len(brain) == 2 and {r["imaging_type"] for r in brain} == {"mri"}
    assert brain[0]["image"] == brain[1]["image"]  # two question-cases, one image file
    free = rows["imgs/xmlab2/source.jpg"]
    assert free["finding"] == "abnormality" and free["imaging_type"] == "ct"
    again, _ = cohorts.load("slake", str(tmp_path))
    assert ids(again) == ids(table)


def test_slake_questions(tmp_path):
    _, _, good, bad = write_slake(tmp_path)
    table, rejects = cohorts.load("slake-vqa", str(tmp_path))
    assert {r["item_id"]: r["reason"] for r in rejects} == bad
    rows = table.to_pylist()
    got = {(r["image_file"][len("imgs/"):], r["released_id"]): (r["split"], r["answer_type"]) for r in rows}
    assert got == good  # the Chinese question is not read, the English ones all are
    for r in rows:
        assert r["item_id"] == stable_hash("slake", r["image_file"], r["released_id"])
        assert images.decode_png(r["image"]).shape[:2] == (40, 48)
    test_q = {r["released_id"]: r for r in rows if r["split"] == "test"}
    assert test_q["100"]["answer"] == "Yes" and test_q["102"]["answer_type"] == "closed"
    assert test_q["100"]["image"] == test_q["101"]["image"]


def test_chestx_det(tmp_path):
    good, bad = write_chestx_det(tmp_path)
    table, rejects = cohorts.load("chestx-det", str(tmp_path))
    rows = check_cases(table, rejects, good, bad, "chestx-det")
    assert rows["train/36200.png#Pneumothorax"]["critical"] is True
    assert rows["train/36200.png#Effusion"]["critical"] is False
    # which findings are critical is the config's declaration (an addition), and a user's overrides it
    assert cohorts.dataset_config("chestx-det").critical_findings == ["pneumothorax"]
    for declared, want in (([], {"Pneumothorax": False, "Effusion": False}),
                           (["Effusion", "pneumothorax"], {"Pneumothorax": True, "Effusion": True})):
        cfg = cohorts.dataset_config("chestx-det", overrides={"critical_findings": declared})
        again = {r["source_file"]: r for r in cohorts.load("chestx-det", str(tmp_path), cfg)[0].to_pylist()}
        assert {c: again[f"train/36200.png#{c}"]["critical"] for c in want} == want
    assert rows["train/36199.png#Nodule"]["question"] == "Is there nodule in this chest radiograph?"
    assert rows["train/36201.png"]["finding"] == "abnormality"
    with Image.open(io.BytesIO(rows["train/36207.png"]["image"])) as stored:
        assert stored.mode == "L"  # an RGB export of a gray film is stored gray
    # keep the diffuse categories when the config says so: 36202 (Fibrosis) becomes a case
    cfg = cohorts.dataset_config("chestx-det", overrides={"exclude_categories": []})
    table2, rejects2 = cohorts.load("chestx-det", str(tmp_path), cfg)
    got = set(table2.column("source_file").to_pylist())
    assert {"train/36202.png#Fibrosis", "train/36199.png#Consolidation"} <= got
    assert "excluded category" not in {r["reason"] for r in rejects2}


def test_hyperkvasir(tmp_path):
    good, bad = write_hyperkvasir(tmp_path)
    table, rejects = cohorts.load("hyperkvasir", str(tmp_path))
    rows = check_cases(table, [r for r in rejects if r["stage"] == "load"], good, bad, "hyperkvasir")
    base = "labeled-images/lower-gi-tract/"
    other = "not a lesion-free class folder (lesion_free_classes)"
    assert {r["item_id"]: r["reason"] for r in rejects if r["stage"] == "ignored"} == {  # every file has a row
        "labeled-images/image-labels.csv": "not a png/jpg/jpeg/bmp/tif/tiff file",
        base + "anatomical-landmarks/cecum/.DS_Store": "hidden file",
        base + "pathological-findings/polyps/aa11.jpg": other,
        "labeled-images/upper-gi-tract/anatomical-landmarks/pylorus/bb22.jpg": other}
    assert {r["finding"] for r in rows.values()} == {"polyp"}
    assert {r["imaging_type"] for r in rows.values()} == {"colonoscopy"}


def test_lgg_mri(tmp_path):
    good, bad = write_lgg(tmp_path)
    table, rejects = cohorts.load("lgg-mri", str(tmp_path))
    rows = check_cases(table, rejects, good, bad, "tcga-lgg")
    assert {r["patient_id"] for r in rows.values()} == {"TCGA_CS_4941"}
    assert {r["group_id"] for r in rows.values()} == {"TCGA_CS_4941"}
    with Image.open(io.BytesIO(next(iter(rows.values()))["image"])) as stored:
        assert stored.mode == "RGB"  # the pre-contrast / FLAIR / post-contrast composite as released


def test_brats(tmp_path):
    good, bad = write_brats(tmp_path)
    table, rejects = cohorts.load("brats", str(tmp_path))
    rows = check_cases(table, rejects, good, bad, "brats")
    patients = {r["patient_id"] for r in rows.values()}
    assert patients == {"BraTS2021_00000", "BraTS20_Training_355", "BraTS-MEN-00012"}
    assert all(r["group_id"] == r["patient_id"] for r in rows.values())
    row = rows["BraTS2021_Training_Data/BraTS2021_00000/BraTS2021_00000_flair.nii.gz#z=7"]
    img = images.decode_png(row["image"], gray=True)
    assert img.shape == (24, 24) and img.max() == 255 and img[0, 0] == 0


def test_qata_cov19(tmp_path):
    good, bad = write_qata(tmp_path)
    table, rejects = cohorts.load("qata-cov19", str(tmp_path))
    check_cases(table, rejects, good, bad, "qata-cov19")


def test_vqa_rad(tmp_path):
    good, bad = write_vqa_rad(tmp_path)
    table, rejects = cohorts.load("vqa-rad", str(tmp_path))
    assert {r["item_id"]: r["reason"] for r in rejects} == bad
    got = {r["released_id"]: (r["split"], r["answer_type"], r["answer"]) for r in table.to_pylist()}
    assert got == good


def test_pathvqa(tmp_path):
    good, bad = write_pathvqa(tmp_path)
    table, rejects = cohorts.load("pathvqa", str(tmp_path))
    assert {r["item_id"]: r["reason"] for r in rejects} == bad
    got = {r["released_id"]: (r["answer_type"], r["answer"]) for r in table.to_pylist()}
    assert got == good
    assert set(table.column("split").to_pylist()) == {"test"}


def test_slice_rule_by_hand():
    # areas: slice 2 largest, 3 next to it (skipped), 6 taken; 0 too little tissue
    lesion = np.array([0.3, 0.0, 0.2, 0.15, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 0.0])
    tissue = np.array([0.1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.6, 0.4])
    les, free = choose_slices(lesion, tissue, n_lesion=3, n_free=2, gap=3, min_tissue=0.25, min_lesion=0.01)
    assert les == [2, 6]
    # free: no tumour within 3 of slices 0, 2, 3, 6 -> only 9, 10; 10 is within 3 of 9
    assert free == [9]
    img = np.zeros((10, 10))
    img[:5, :4] = 100.0
    img[0, 0] = 3.0  # below 5% of the maximum: background noise, not tissue
    assert tissue_fraction(img, 0.05) == pytest.approx(19 / 100)


def test_cli_import_and_show(tmp_path, capsys):
    from pipelines.cohort import import_cohort, show_summary

    write_vqa_rad(tmp_path / "rad")
    s = import_cohort("vqa-rad", str(tmp_path / "rad"), str(tmp_path / "out"))
    assert s["vqa_items"] == 3 and s["rejects"] == 4
    shown = show_summary(str(tmp_path / "out"))
    assert shown["vqa_items"]["by_answer_type"] == {"closed": 2, "open": 1}
    assert shown["vqa_items"]["images"] == 2 and shown["rejects"]["n"] == 4
    write_qata(tmp_path / "qata")
    s = import_cohort("qata-cov19", str(tmp_path / "qata"), str(tmp_path / "qout"))
    assert s["cases"] == 2 and s["lesion"] == 2
    assert records.read_table("cases", s["cases_uri"]).num_rows == 2
    assert json.dumps(show_summary(str(tmp_path / "qout")))  # a summary that serialises



WRITERS = {"slake": lambda p: write_slake(p)[:2], "chestx-det": write_chestx_det, "hyperkvasir": write_hyperkvasir,
           "lgg-mri": write_lgg, "brats": write_brats, "qata-cov19": write_qata}


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_import_show_and_stable_ids(fmt, tmp_path):
    """Each case format through ``cohort import`` twice (ids identical) and ``cohort show``."""
    from pipelines.cohort import import_cohort, show_summary

    good, bad = WRITERS[fmt](tmp_path / "raw")
    first = import_cohort(fmt, str(tmp_path / "raw"), str(tmp_path / "a"))
    second = import_cohort(fmt, str(tmp_path / "raw"), str(tmp_path / "b"))
    a = records.read_table("cases", first["cases_uri"]).column("case_id").to_pylist()
    b = records.read_table("cases", second["cases_uri"]).column("case_id").to_pylist()
    assert a == b and len(a) == len(good) and first["rejects"] == len(bad)
    shown = show_summary(str(tmp_path / "a"))
    assert shown["cases"]["n"] == len(good)
    assert shown["cases"]["lesion_free"] == sum(v is None for v in good.values())
    assert shown["rejects"]["n"] == len(bad)
    assert sum(shown["rejects"]["by_reason"].values()) == len(bad)


def test_cli_crosswalk(tmp_path):
    """``medscope crosswalk`` over imported cohorts: a cohort folder and a cases file, each named
    after its folder."""
    from pipelines import cli
    from pipelines.cohort import import_cohort

    write_qata(tmp_path / "q")
    write_hyperkvasir(tmp_path / "h")
    import_cohort("qata-cov19", str(tmp_path / "q"), str(tmp_path / "qo"))
    import_cohort("hyperkvasir", str(tmp_path / "h"), str(tmp_path / "ho"))
    sets = f"{tmp_path / 'qo'},{tmp_path / 'ho' / 'cases.parquet'}"
    assert cli.main(["crosswalk", "--sets", sets, "--out", str(tmp_path / "cw.json")]) == 0
    full = json.loads((tmp_path / "cw.json").read_text())
    assert full["files"] == 5 and full["files_by_set"] == {"ho": 3, "qo": 2}
    # every reported pair is a hash neighbour above the hash-only tier
    assert len(full["pairs"]) == sum(n for t, n in full["pairs_by_tier"].items() if t != "hash_only")


def test_released_splits_on_request(tmp_path):
    write_qata(tmp_path / "q")
    write_chestx_det(tmp_path / "c")
    plain, _ = cohorts.load("qata-cov19", str(tmp_path / "q"))
    assert set(plain.column("split").to_pylist()) == {None}  # by default the group splits decide
    cfg = cohorts.dataset_config("qata-cov19", overrides={"use_released_split": True})
    got = {r["source_file"]: r["split"] for r in cohorts.load("qata-cov19", str(tmp_path / "q"), cfg)[0].to_pylist()}
    assert got == {"QaTa-COV19-v2/Train Set/Images/covid_1.png": "train",
                   "QaTa-COV19-v2/Test Set/Images/sub-S09393_ses-E16849_run-1_bp-chest_vp-ap_cr.png": "test"}
    cfg = cohorts.dataset_config("chestx-det", overrides={"use_released_split": True})
    assert set(cohorts.load("chestx-det", str(tmp_path / "c"), cfg)[0].column("split").to_pylist()) == {"train"}
