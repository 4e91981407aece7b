"""§5.4 zero-shot edit ratings as a protocol: items, one-turn episodes, reply reading, AUCs."""

from __future__ import annotations

import numpy as np
import pytest

from medscope import protocols
from medscope.io import records
from medscope.images import decode_png
from medscope.models.base import Completion, Decoding
from medscope.protocols.edit_rating.scoring import rating_aucs, read_rating
from medscope.qc.visibility import format_ratings


class FlatPatchRater:
    """Rates an image 0.9 when it holds a perfectly flat 6x6 patch (a visible fill), else 0.1."""

    name = "flat-rater"

    def complete(self, messages, decoding):
        png = next(p.png for p in messages[0].parts if p.png)
        g = decode_png(png, gray=True).astype(float)
        win = np.lib.stride_tricks.sliding_window_view(g, (6, 6))
        flat = bool((win.std(axis=(-1, -2)) == 0).any())
        return Completion(text="0.9" if flat else "Probability: 10%")


def test_read_rating():
    assert read_rating("0.7") == 0.7 and read_rating("about 70%") == 0.7 and read_rating("p = .25") == 0.25
    assert read_rating("edited: 3 regions, probability 0.4") == 0.4  # 3 is no probability
    assert read_rating("no idea") is None


def test_zero_shot_ratings_protocol_end_to_end(tmp_path):
    from tests.protocols.counterfactual.test_edit_visibility import make_views

    rows = make_views(10, visible=True)
    base = {"source": "s", "imaging_type": "x", "finding": "f", "question": "q?", "question_kind": "presence",
            "critical": False, "lesion_area_frac": 0.04, "lesion_bbox": None, "width": 48, "height": 48,
            "recipe_hash": "r", "private": False, "endpoint_allowlist": None, "degradation": None}
    views = [dict(base, **r, view_id=f"{r['case_id']}/{r['kind']}", tool="telea",
                  expected="absent" if r["kind"] == "target_removal" else "present") for r in rows]
    for v in views:
        v["split"] = "test"
    # the random removal of case 0 is an invisible edit: the rater misses it
    views[2]["image"] = views[0]["image"]
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", views, uri)
    proto = protocols.load("edit_rating")
    items = proto.load_items(uri)
    assert len(items) == 30 and proto.conditions() == ("zero_shot",)
    model = FlatPatchRater()
    eps = []
    for it in items:
        r = proto.run_episode(it, model, "zero_shot", Decoding())
        eps.append({"run_id": "x", "protocol": "edit_rating", "model": "flat-rater", "condition": "zero_shot",
                    "item_id": it.item_id, "case_id": it.case_id, "request_key": it.item_id, "prompt_version": "v",
                    "decoding": "g", "turns": None, "raw_text": r.raw_text, "action": r.action, "answer": r.answer,
                    "claims_finding": None, "box": None, "confidence": r.confidence, "tool_calls": 0,
                    "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1,
                    "error": None})
    res = rating_aucs(records.to_table("episodes", eps), records.read_table("views", uri), n_boot=50)["flat-rater"]
    # T vs O: every erased view rated 0.9, every original 0.1 -> 1; R vs O: 9 of 10 edits seen ->
    # AUC = (9 * 10 + 1 * 10 * 0.5) / 100 = 0.95 (the missed one ties with every original)
    assert res["T_vs_O"]["auc"] == 1.0
    assert res["R_vs_O"]["auc"] == pytest.approx(0.95)
    assert (res["target_rated_edited"], res["target_rated_unedited"], res["unparseable"]) == (10, 0, 0)
    assert "| flat-rater | 0.950" in format_ratings({"flat-rater": res})


def test_visibility_report_carries_the_zero_shot_table():
    from medscope.qc.visibility import report_markdown

    entry = {"episodes": 6, "unparseable": 1, "T_vs_O": {"auc": 0.7, "ci_low": 0.6, "ci_high": 0.8},
             "target_rated_unedited": 1, "target_rated_between": 0, "target_rated_edited": 1}
    md = report_markdown({"train_split": "train", "test_split": "test", "zero_shot": {"m": entry}})
    assert "| m | – | 0.700 [0.600, 0.800] | 1 / 0 / 1 | 1 of 6 |" in md


def test_score_rates_against_the_test_sets_fixed_views(tmp_path, capsys):
    """Issue 50: the test set's rated views are recomputed from the views table; an episode of any
    other view is excluded under its rule, never rated, and a view without a rating episode is a
    failed unit against the fixed denominator, deciding the exit code as eval run's --max-failed.

    10 cases x (O, T, R) = 30 views, all in the test split; case 0's random removal is invisible
    (rated 0.1). Planted views outside the test set, each holding a visible fill (rated 0.9, which
    would lower R vs O if read as originals): a failed-QC original, a train-split original, a
    natural negative; and an episode of a view in no table. c001's original and random removal
    have no episode, c002's target removal is a failed call, c003's original is unparseable.
    By hand: 30 views; rated 26, unparseable 1, missing 3; excluded 5 (one per rule). T vs O: 9
    T at 0.9 vs 8 O at 0.1 -> 1. R vs O: 9 R (8 at 0.9, c000's at 0.1) vs 8 O at 0.1 -> (8 * 8 +
    1 * 8 * 0.5) / 72 = 68 / 72. Exit 3 (3 of 26 + 1 + 3 = 30 units missing)."""
    import json

    from tests.protocols.counterfactual.test_edit_visibility import make_views
    from pipelines import cli

    rows = make_views(10, visible=True)
    base = {"source": "s", "imaging_type": "x", "finding": "f", "question": "q?", "question_kind": "presence",
            "critical": False, "lesion_area_frac": 0.04, "lesion_bbox": None, "width": 48, "height": 48,
            "recipe_hash": "r", "private": False, "endpoint_allowlist": None, "degradation": None}
    views = [dict(base, **{**r, "split": "test"}, view_id=f"{r['case_id']}/{r['kind']}", tool="telea",
                  expected="absent" if r["kind"] == "target_removal" else "present") for r in rows]
    views[2]["image"] = views[0]["image"]
    flat = views[1]["image"]
    views += [dict(views[0], view_id="bad/original", case_id="bad", passed=False, reject_reason="paired_control_failed",
                   image=flat),
              dict(views[0], view_id="train/original", case_id="train", split="train", image=flat),
              dict(views[0], view_id="nn/natural_negative", case_id="nn", kind="natural_negative", image=flat)]
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", views, uri)
    proto = protocols.load("edit_rating")
    model = FlatPatchRater()
    eps = []
    for v in views + [dict(views[1], view_id="ghost/original")]:
        if v["view_id"] in ("c001/original", "c001/random_removal"):
            continue
        r = proto.run_episode(protocols.base.Item(item_id=v["view_id"], case_id=v["case_id"], question="q",
                                                  truth="", images=(v["image"],)), model, "zero_shot", Decoding())
        ep = {"run_id": "x", "protocol": "edit_rating", "model": "flat-rater", "condition": "zero_shot",
              "item_id": v["view_id"], "case_id": v["case_id"], "request_key": v["view_id"], "prompt_version": "v",
              "decoding": "g", "turns": None, "raw_text": r.raw_text, "action": r.action, "answer": r.answer,
              "claims_finding": None, "box": None, "confidence": r.confidence, "tool_calls": 0, "input_tokens": 0,
              "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1, "error": None}
        if v["view_id"] == "c002/target_removal":
            ep.update(raw_text=None, action="unparseable", answer=None, confidence=None, error="HTTP 500")
        if v["view_id"] == "c003/original":
            ep.update(raw_text="no idea", action="unparseable", answer=None, confidence=None)
        eps.append(ep)
    records.write_table("episodes", eps, str(tmp_path / "episodes.parquet"))
    args = ["score", "--episodes", str(tmp_path / "episodes.parquet"), "--items", uri, "--protocol", "edit_rating",
            "--n-boot", "20"]
    assert cli.main([*args, "--out", str(tmp_path / "strict")]) == 3
    err = capsys.readouterr().err
    assert "test set main: 30 views" in err and "3 of 30 episodes are missing (flat-rater:zero_shot 3 of 30" in err
    cov = json.loads((tmp_path / "strict" / "run.json").read_text())["coverage"]
    assert (cov["views"], cov["scored"], cov["unclear"], cov["missing"], cov["excluded"]) == (30, 26, 1, 3, 5)
    assert cov["excluded_by_rule"] == {"failed_call": 1, "failed_qc": 1, "not_a_rated_kind": 1, "not_in_items": 1,
                                       "outside_split": 1}
    assert cov["by_model_condition"][0]["missing_views"] == ["c001/original", "c001/random_removal",
                                                             "c002/target_removal"]
    res = json.loads((tmp_path / "strict" / "edit_ratings.json").read_text())["flat-rater"]
    assert res["T_vs_O"]["auc"] == 1.0
    assert res["R_vs_O"]["auc"] == pytest.approx(68 / 72)
    assert (res["episodes"], res["unparseable"], res["target_rated_edited"]) == (27, 1, 9)
    assert cli.main([*args, "--out", str(tmp_path / "ok"), "--max-failed", "3"]) == 0


def test_score_excludes_a_second_episode_of_a_view_and_rates_the_first(tmp_path, capsys):
    """Issue 50: 10 cases x (O, T, R), all in the test split, case 0's random removal invisible. By
    hand, as the end-to-end test: T vs O = 1, R vs O = (9 * 10 + 1 * 10 * 0.5) / 100 = 0.95 over
    30 rated episodes. A second episode of c000's original rated 0.9 would, rated too, tie with
    every T: T vs O = (10 * 10 + 10 * 0.5) / 110; it is excluded as duplicate_episode, listed in
    rejects, and no view is missing (exit 0)."""
    import json

    from tests.protocols.counterfactual.test_edit_visibility import make_views
    from pipelines import cli

    base = {"source": "s", "imaging_type": "x", "finding": "f", "question": "q?", "question_kind": "presence",
            "critical": False, "lesion_area_frac": 0.04, "lesion_bbox": None, "width": 48, "height": 48,
            "recipe_hash": "r", "private": False, "endpoint_allowlist": None, "degradation": None}
    views = [dict(base, **{**r, "split": "test"}, view_id=f"{r['case_id']}/{r['kind']}", tool="telea",
                  expected="absent" if r["kind"] == "target_removal" else "present") for r in make_views(10, visible=True)]
    by_id = {v["view_id"]: v for v in views}
    by_id["c000/random_removal"]["image"] = by_id["c000/original"]["image"]
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", views, uri)
    proto = protocols.load("edit_rating")
    model = FlatPatchRater()
    eps = []
    for it in proto.load_items(uri):
        r = proto.run_episode(it, model, "zero_shot", Decoding())
        eps.append({"run_id": "x", "protocol": "edit_rating", "model": "flat-rater", "condition": "zero_shot",
                    "item_id": it.item_id, "case_id": it.case_id, "request_key": it.item_id, "prompt_version": "v",
                    "decoding": "g", "turns": None, "raw_text": r.raw_text, "action": r.action, "answer": r.answer,
                    "claims_finding": None, "box": None, "confidence": r.confidence, "tool_calls": 0,
                    "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1,
                    "error": None})
    first = next(e for e in eps if e["item_id"] == "c000/original")
    assert first["confidence"] == 0.1
    eps.append(dict(first, run_id="y", request_key="again", raw_text="0.9", answer="0.900", confidence=0.9))
    records.write_table("episodes", eps, str(tmp_path / "episodes.parquet"))
    out = tmp_path / "scored"
    assert cli.main(["score", "--episodes", str(tmp_path / "episodes.parquet"), "--items", uri, "--protocol",
                     "edit_rating", "--n-boot", "20", "--out", str(out)]) == 0
    assert "duplicate_episode 1" in capsys.readouterr().err
    cov = json.loads((out / "run.json").read_text())["coverage"]
    assert (cov["views"], cov["scored"], cov["missing"], cov["excluded_by_rule"]) == (30, 30, 0, {"duplicate_episode": 1})
    rejects = records.read_table("rejects", str(out / "rejects.parquet")).to_pylist()
    assert [(r["item_id"], r["reason"]) for r in rejects] == [("flat-rater/zero_shot/c000/original", "duplicate_episode")]
    assert "in run y" in rejects[0]["detail"]
    res = json.loads((out / "edit_ratings.json").read_text())["flat-rater"]
    assert res["T_vs_O"]["auc"] == 1.0
    assert res["R_vs_O"]["auc"] == pytest.approx(0.95)
    assert res["episodes"] == 30
