"""The cross-cohort crosswalk (counterfactual paper §4.1) over all six release fixtures: a ChestX-Det "no
finding" film re-sized into QaTa-COV19's test set (as the paper found one NIH film in two
datasets) must be found across cohorts, reported in the right tier, and kept out of training."""

import io

import cv2
import numpy as np
import pytest
from PIL import Image

from tests.fixtures.release_layouts import write_brats, write_chestx_det, write_hyperkvasir, write_lgg, write_qata, write_slake
from medscope import cohorts
from medscope.qc import near_copies

WRITERS = {"slake": write_slake, "chestx-det": write_chestx_det, "hyperkvasir": write_hyperkvasir,
           "lgg-mri": write_lgg, "brats": write_brats, "qata-cov19": write_qata}


@pytest.fixture(scope="module")
def every_cohort(tmp_path_factory):
    root = tmp_path_factory.mktemp("cohorts")
    for fmt, writer in WRITERS.items():
        writer(root / fmt)
    film = cv2.imread(str(root / "chestx-det/train/36201.png"), cv2.IMREAD_GRAYSCALE)
    test_dir = root / "qata-cov19/QaTa-COV19-v2/Test Set"
    cv2.imwrite(str(test_dir / "Images/covid_77.png"), cv2.resize(film, (40, 40), interpolation=cv2.INTER_AREA))
    mask = np.zeros((40, 40), np.uint8)
    mask[5:15, 5:15] = 255
    cv2.imwrite(str(test_dir / "Ground-truths/mask_covid_77.png"), mask)
    cases = []
    for fmt in WRITERS:
        cases.extend(cohorts.load(fmt, str(root / fmt))[0].to_pylist())
    by_file = {(c["source"], c["source_file"]): c for c in cases}
    chest = by_file[("chestx-det", "train/36201.png")]
    qata = by_file[("qata-cov19", "QaTa-COV19-v2/Test Set/Images/covid_77.png")]
    qata["split"] = "test"  # QaTa's released test set, protected
    chest["split"] = "train"
    return cases, chest["case_id"], qata["case_id"]


def _corr64(png_a, png_b):
    """Pearson correlation of 64 x 64 area-resized gray thumbnails, computed here from scratch."""
    a, b = (cv2.resize(np.asarray(Image.open(io.BytesIO(p)).convert("L")), (64, 64),
                       interpolation=cv2.INTER_AREA).astype(float).ravel() for p in (png_a, png_b))
    return float(np.corrcoef(a, b)[0, 1])


def test_file_crosswalk_tiers_and_protection(every_cohort):
    cases, chest, qata = every_cohort
    by_source: dict[str, list[dict]] = {}
    for c in cases:
        by_source.setdefault(c["source"], []).append(c)
    report = near_copies.crosswalk(by_source)  # one set per cohort; the test split is protected
    # SLAKE xmlab1 (two lesion names) and ChestX-Det 36200 (two findings): one file, two cases each
    assert sum(report["images"].values()) == len(cases) and report["files"] == len(cases) - 2
    planted = [p for p in report["pairs"] if {p["source_file_a"], p["source_file_b"]} ==
               {"train/36201.png", "QaTa-COV19-v2/Test Set/Images/covid_77.png"}]
    assert len(planted) == 1 and planted[0]["tier"] in near_copies.COPY_TIERS and planted[0]["cross_set"]
    assert report["cross_set_by_tier"]["near_copy"] + report["cross_set_by_tier"]["identical"] >= 1
    # the train-split twin of a test image leaves train, because of that test case
    assert report["to_move"] == [{"case": f"chestx-det:{chest}", "split": "train",
                                  "because_of": [f"qata-cov19:{qata}"]}]
    assert report["pairs"]  # tiers below are checked on every reported pair
    png = {f"{c['source']}:{c['case_id']}": c["image"] for c in cases}
    for p in report["pairs"]:
        corr = _corr64(png[p["a"]], png[p["b"]])
        assert p["correlation"] == pytest.approx(corr, abs=1e-3)
        want = ("identical" if p["distance"] == 0 and corr >= 0.999 else "near_copy" if corr >= 0.97
                else "shared_anatomy")
        assert p["tier"] == want and corr >= 0.90


def test_views_plan_groups_the_twins_and_keeps_patients_whole(every_cohort):
    from medscope.views.plan import hash_case, make_plan
    from medscope.views.recipe import Recipe

    cases, chest, qata = every_cohort
    rows = [{k: v for k, v in c.items() if k not in ("image", "mask")} for c in cases]
    for r in rows:
        if r["case_id"] == chest:
            r["split"] = None  # the plan draws splits itself; only the test label is given
    plan, report, _pairs, _groups = make_plan(rows, {c["case_id"]: hash_case(c["image"]) for c in cases}, Recipe())
    cross = {(p["a"], p["b"]) for p in report["cross_cohort_pairs"]}
    assert tuple(sorted((chest, qata))) in cross
    assert plan[chest]["split"] == "test" and plan[chest]["group_id"] == plan[qata]["group_id"]
    for source in ("tcga-lgg", "brats"):  # one patient, one group, one split
        for pid in {c["patient_id"] for c in cases if c["source"] == source}:
            got = {plan[c["case_id"]]["split"] for c in cases if c["source"] == source and c["patient_id"] == pid}
            assert len(got) == 1
