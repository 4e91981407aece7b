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
