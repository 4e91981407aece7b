"""§5.4 edit-visibility detectors on views whose edits are visible (a flat fill in textured
tissue) or invisible (the 'edit' leaves the pixels as they were): the ResNet-18 and the linear
probe on a tiny random Qwen2-VL's vision tower find the first and cannot find the second."""

from __future__ import annotations

import numpy as np
import pytest

from medscope.images import encode_png
from medscope.qc import visibility as vis


def make_views(n_cases: int, visible: bool, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_cases):
        img = rng.integers(40, 215, (48, 48), dtype=np.uint8)
        lesion = np.zeros((48, 48), bool)
        lesion[8:18, 8:18] = True
        control = np.zeros((48, 48), bool)
        control[28:40, 28:40] = True
        split = "train" if i % 2 == 0 else "test"
        base = {"case_id": f"c{i:03d}", "passed": True, "split": split}
        for kind, region in (("original", None), ("target_removal", lesion), ("random_removal", control)):
            out = img.copy()
            if region is not None and visible:
                out[region] = int(img[region].mean())  # a flat fill: a visible trace
            rows.append(dict(base, kind=kind, image=encode_png(out),
                             edit_mask=None if region is None else encode_png(region)))
    return rows


def test_crops_pair_each_edit_region_with_its_counterpart():
    X, y, cases, splits = vis.edit_crops(make_views(4, True), "R_vs_O", size=32, field="crop")
    assert X.shape == (8, 32, 32) and list(y) == [1, 0] * 4 and list(cases[:2]) == ["c000", "c000"]
    # R vs O crops cover the same place: identical where nothing was edited
    X0, *_ = vis.edit_crops(make_views(4, False), "R_vs_O", size=32, field="crop")
    assert np.array_equal(X0[0], X0[1])


def test_probes_read_whole_views_by_default_as_the_paper_does():
    """§5.4: "A ResNet-18 trained on 5,126 training views separates random-removal from original
    views": the probe's input is the whole view, resized; crops are an option, labelled as such."""
    import cv2

    from medscope.images import decode_png, to_gray

    views = make_views(2, True)
    X, y, _, _ = vis.edit_crops(views, "R_vs_O", size=24)
    r = next(v for v in views if v["kind"] == "random_removal")
    whole = cv2.resize(to_gray(decode_png(r["image"])), (24, 24), interpolation=cv2.INTER_AREA) / 255.0
    assert X.shape == (4, 24, 24) and np.allclose(X[0], whole)
    crop_md = vis.report_markdown({"field": "crop", "size": 64, "train_split": "train", "test_split": "test"})
    view_md = vis.report_markdown({"field": "view", "size": 224, "train_split": "train", "test_split": "test"})
    assert "not comparable with the paper's" in crop_md and "whole views" in view_md


def test_auc_interval_by_hand_on_a_perfect_and_a_tied_score():
    labels = np.array([1, 0, 1, 0])
    cases = np.array(["a", "a", "b", "b"], dtype=object)
    res = vis.auc_with_ci(np.array([0.9, 0.1, 0.8, 0.2]), labels, cases, n_boot=50)
    assert res["auc"] == 1.0 and res["ci_low"] == 1.0 and res["n_cases"] == 2
    assert vis.auc_with_ci(np.full(4, 0.5), labels, cases, n_boot=20)["auc"] == 0.5


@pytest.mark.slow
def test_probes_find_visible_edits_and_not_invisible_ones(torch_one_thread):
    from medscope.models.tiny_vlm import build_tiny_qwen2vl

    vlm = build_tiny_qwen2vl(seed=0)
    # whole views at their own 48 px (§5.4 tests whole views; a flat 12-px fill is then plain to see)
    seen = vis.run_edit_detectors(make_views(24, True), vlm=vlm, size=48, epochs=3, n_boot=100)
    assert seen["R_vs_O"]["resnet18"]["auc"] > 0.9
    assert seen["R_vs_O"]["linear_probe"]["auc"] > 0.8
    assert seen["R_vs_O"]["n_test"] == 24 and "linear_probe" in seen["T_vs_R"]
    blind = vis.run_edit_detectors(make_views(16, False), vlm=vlm, size=48, epochs=1, n_boot=50)
    # identical inputs for both classes: every score ties, AUC exactly one half
    assert blind["R_vs_O"]["resnet18"]["auc"] == pytest.approx(0.5)
    assert blind["R_vs_O"]["linear_probe"]["auc"] == pytest.approx(0.5)


def test_visibility_cli_writes_the_report_section(tmp_path, torch_one_thread):
    from medscope.io import records
    from pipelines import cli

    rows = make_views(12, True)
    base = {"source": "s", "imaging_type": "x", "finding": "f", "question": "q?", "question_kind": "presence",
            "critical": False, "lesion_area_frac": 0.04, "lesion_bbox": None, "width": 48, "height": 48,
            "recipe_hash": "r", "private": False, "endpoint_allowlist": None, "degradation": None}
    views = [dict(base, **r, view_id=f"{r['case_id']}/{r['kind']}", tool="telea",
                  expected="absent" if r["kind"] == "target_removal" else "present") for r in rows]
    records.write_table("views", views, str(tmp_path / "views.parquet"))
    out = tmp_path / "vis.json"
    cli.main(["visibility", "--views", str(tmp_path / "views.parquet"), "--out", str(out), "--size", "32",
              "--epochs", "1", "--n-boot", "20"])
    md = vis.report_markdown(__import__("json").loads(out.read_text()))
    assert "| R_vs_O | resnet18 |" in md and "(6) |" in md
