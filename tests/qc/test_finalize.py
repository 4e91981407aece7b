"""Keep rules over a views table (counterfactual paper §3.3): failures propagate within a case, never across."""

from __future__ import annotations

import pyarrow as pa

from medscope.io import records
from medscope.views.finalize import finalize
from medscope.views.build import CaseContext, build_case_views
from medscope.views.recipe import Recipe
from medscope.views.synthetic_cases import synthetic_cases
from medscope.views.tools import make_eraser


def _views(recipe, split="train"):
    # train split: the only one with C1's unmatched edits (counterfactual paper §3.7, a training arm's pool)
    erasers = {t: make_eraser(t) for t in recipe.all_tools()}
    rows = []
    for case in synthetic_cases(6, seed=11, size=96):
        rows += build_case_views(case, recipe, erasers, CaseContext(split=split), "h")[0]
    return records.to_table("views", rows)


def test_a_failed_target_fails_its_pair_and_its_case_only():
    recipe = Recipe(edit_detector=False, tools=["telea"], control_tool={"telea": "telea"})
    table = _views(recipe)
    rows = table.to_pylist()
    assert all(r["passed"] for r in rows)  # telea on these blobs passes the contrast test
    victim = "syn-0001/target_removal/telea"
    passed = [r["view_id"] != victim for r in rows]
    reasons = [None if p else "lesion_still_stands_out" for p in passed]
    table = table.set_column(table.schema.get_field_index("passed"), "passed", pa.array(passed))
    table = table.set_column(table.schema.get_field_index("reject_reason"), "reject_reason", pa.array(reasons, pa.string()))
    out, rejects, report = finalize(table, [], recipe)
    got = {r["view_id"]: (r["passed"], r["reject_reason"]) for r in out.to_pylist()}
    assert got[victim] == (False, "lesion_still_stands_out")
    assert got["syn-0001/random_removal/telea"] == (False, "paired_target_failed")
    for kind in ("original", "unmatched_control", "degraded"):
        vid = next(v for v in got if v.startswith(f"syn-0001/{kind}/"))
        assert got[vid] == (False, "case_failed_qc")
    assert all(ok for v, (ok, _) in got.items() if not v.startswith("syn-0001/"))
    assert {r["item_id"] for r in rejects} == {v for v, (ok, _) in got.items() if v.startswith("syn-0001/") and v != victim}
    assert report["edit_detector"]["skipped"]


def test_all_tools_mode_pairs_each_tool_and_keeps_ids_unique():
    recipe = Recipe(edit_detector=False, tools=["telea", "ns", "transplant"], tool_mode="all", insertion=False)
    rows = _views(recipe).to_pylist()
    ids = [r["view_id"] for r in rows]
    assert len(ids) == len(set(ids))
    case = [r for r in rows if r["case_id"] == "syn-0000"]
    assert sorted(r["tool"] for r in case if r["kind"] == "target_removal") == ["ns", "telea", "transplant"]
    assert sorted(r["tool"] for r in case if r["kind"] == "random_removal") == ["ns", "telea", "transplant"]
    # the three random removals share one placement: same shape, same position, three tools
    masks = {r["edit_mask"] for r in case if r["kind"] == "random_removal"}
    assert len(masks) == 1
    assert sum(r["kind"] == "unmatched_control" for r in case) == 1
    # the test split gets the evaluation kinds only: no unmatched edit is ever a test view
    test_rows = _views(recipe, split="test").to_pylist()
    assert not any(r["kind"] == "unmatched_control" for r in test_rows)
    assert {r["kind"] for r in test_rows} == {"original", "target_removal", "random_removal", "degraded",
                                             "natural_negative"} & {r["kind"] for r in rows}
