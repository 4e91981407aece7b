"""Pre-registered rules at exact ties (issue 50): decided by the counts, as the paper's inequality
reads, never by floating point.

Worked by hand:

- §3.6, H3 <= H2 + 0.02 with healthy claims 14/100 and 12/100: 12/100 + 1/50 = 14/100, a tie,
  so the condition holds and stage 3 is selected. In floats 0.14 <= 0.12 + 0.02 is False
  (0.12 + 0.02 = 0.13999999999999999).
- §3.6, U3 >= U2 - 0.02 with net utility 12/100 and 14/100: 14/100 - 1/50 = 12/100, a tie; it
  holds. In floats 0.12 >= 0.14 - 0.02 is False.
- §3.7 C1, "lower by at least 5 points" with control denial 30/100 (matched) against 35/100
  (unmatched): the difference is exactly -1/20, so "needs <= -0.050" holds and "within margins"
  (|difference| under 5 points) does not. In floats 0.3 - 0.35 = -0.04999999999999999.
"""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
import pytest

from medscope.analysis import decision_rules as rules
from medscope.analysis import exact
from medscope.analysis import paired_differences as cmp
from medscope.analysis import view_metrics as mt
from medscope.io import records
from medscope.protocols.counterfactual import costs, rewards
from medscope.reproduce.derive import constant_policy_episodes
from medscope.testing import synthetic_runs as synthetic
from medscope.training.selection import select_stage


def test_the_floats_would_decide_these_ties_the_other_way():
    # the premise of every test below: without exact arithmetic each tie fails
    assert not (14 / 100 <= 12 / 100 + 0.02)
    assert not (12 / 100 >= 14 / 100 - 0.02)
    assert -(0.30 - 0.35) < 0.05


def test_counts_text_reads_back_exactly():
    assert exact.counts_text([(1, 14.0, 100.0)]) == "14/100"
    assert exact.value("14/100") == Fraction(7, 50)
    assert exact.counts_text([(1, 30, 100), (-1, 10, 100)]) == "30/100 - 10/100"
    # a reward sum: -945 over 1,115 views, and 122.1 summed in floats
    assert exact.counts_text([(1, -945.0, 1115)]) == "-945/1115"
    # always refers (Table 5): 507 x +0.5 and 438 x -0.3, summed in floats to 122.1 within 1e-12
    refer_sum = sum([0.5] * 507 + [-0.3] * 438)
    assert exact.counts_text([(1, refer_sum, 1115)]) == "122.1/1115"
    assert exact.value("122.1/1115") == Fraction(1221, 11150)
    assert exact.difference("30/100", "35/100") == "30/100 - 35/100"
    assert exact.value(exact.difference("30/100 - 10/100", "-945/1115")) == Fraction(1, 5) + Fraction(945, 1115)
    assert exact.counts_text([(1, 3, 0)]) is None
    assert exact.threshold(0.02) == Fraction(1, 50)
    with pytest.raises(ValueError, match="not a signed sum"):
        exact.value("0.14")


def _stage(u: str, h: str) -> dict:
    return {"U": float(exact.value(u)), "H": float(exact.value(h)), "U_counts": u, "H_counts": h}


def test_stage_3_is_selected_at_a_tie_on_healthy_claims():
    sel = select_stage({"stage1": _stage("58.5/100", "15/100"), "stage2": _stage("61/100", "12/100"),
                        "stage3": _stage("61.3/100", "14/100")})
    assert sel.chosen == "stage3"
    line = next(r for r in sel.reasons if r.startswith("stage3 vs stage2"))
    assert "H 0.140 <= 0.120 + 0.02 (exactly 7/50 <= 7/50) is True" in line
    # one claim more is beyond the margin: stage 2 against stage 1 (12/100 <= 15/100 + 0.02)
    sel = select_stage({"stage1": _stage("58.5/100", "15/100"), "stage2": _stage("61/100", "12/100"),
                        "stage3": _stage("61.3/100", "15/100")})
    assert sel.chosen == "stage2"


def test_stage_3_is_selected_at_a_tie_on_net_utility():
    sel = select_stage({"stage1": _stage("16/100", "10/100"), "stage2": _stage("14/100", "10/100"),
                        "stage3": _stage("12/100", "10/100")})
    assert sel.chosen == "stage3"
    assert "U 0.120 >= 0.140 - 0.02 (exactly 3/25 >= 3/25) is True" in sel.reasons[-1]


def test_values_without_counts_are_read_from_their_decimal_text():
    # a selection.json of an older run holds the rounded values only: 0.14 is read as 14/100
    sel = select_stage({"stage1": {"U": 0.585, "H": 0.136}, "stage2": {"U": 0.61, "H": 0.12},
                        "stage3": {"U": 0.613, "H": 0.14}})
    assert sel.chosen == "stage3"


def _healthy_views(n: int = 100):
    return synthetic.views(0, n, 0, seed=3)


def test_a_tie_from_scored_episodes_selects_stage_3_through_the_metrics_table():
    """The counts travel from the scores to the metrics table (``counts``) to the rule."""
    views = _healthy_views()
    ids = sorted(views.column("view_id").to_pylist())
    parts = []
    for model, claims in {"stage1": 20, "stage2": 12, "stage3": 14}.items():
        eps = constant_policy_episodes(views, {model: ("answer", False)}).to_pylist()
        for e in eps:
            e["claims_finding"] = e["item_id"] in ids[:claims]
        parts += eps
    scores, _ = rewards.score_episodes(records.to_table("episodes", parts), views, costs.load("table2"))
    table = mt.compute(scores, n_boot=0, breakdowns=()).to_pandas()
    got = table[(table.metric == "healthy_claims") & (table.model == "stage3")].iloc[0]
    assert got["counts"] == "14/100"
    # net utility: 86 x +1 and 14 x -2 over 100 views
    assert table[(table.metric == "net_utility") & (table.model == "stage3")].iloc[0]["counts"] == "58/100"
    table["test_set"] = "validation"
    # the harm side decides here: the utility tolerance of 1 lets every stage pass on U
    rule = rules.Rule(id="s", kind="stage_selection", test_set="validation", candidates=["stage1", "stage2", "stage3"],
                      utility="net_utility", harm="healthy_claims", utility_tolerance=1, harm_tolerance=0.02)
    verdict = rules.apply_rule(rule, table)
    assert verdict["verdict"] == "select stage3"
    assert verdict["lines"][2] == "stage3: net_utility = 58/100 = 0.580, healthy_claims = 14/100 = 0.140"


def _c1_row(counts: str | None, value: float) -> pd.DataFrame:
    return pd.DataFrame([{"model": "matched", "condition": "agent", "test_set": "fresh_external", "breakdown": "all",
                          "metric": "control_denial", "value": value, "ci_low": -0.09, "ci_high": -0.01,
                          "n_cases": 100, "reference": "unmatched:agent", "p_value": 0.01, "n_boot": 2000,
                          "counts": counts}])


def test_c1_at_exactly_minus_five_points_matters_and_is_not_within_margins():
    table = _c1_row("30/100 - 35/100", 0.30 - 0.35)
    lower = rules.Condition(test_set="fresh_external", metric="control_denial", model="matched",
                            reference="unmatched", direction="lower", min_effect=0.05)
    within = rules.Condition(test_set="fresh_external", metric="control_denial", model="matched",
                             reference="unmatched", within=0.05)
    ok, text = rules.evaluate_condition(lower, table)
    assert ok and text == ("control_denial(matched - unmatched, fresh_external) = 30/100 - 35/100 = -0.050 "
                           "[-0.090, -0.010]; needs <= -0.050, interval excluding 0")
    assert rules.evaluate_condition(within, table)[0] is False
    # one denial fewer on the unmatched arm: 30/100 - 34/100 is under 5 points
    table = _c1_row("30/100 - 34/100", 0.30 - 0.34)
    assert rules.evaluate_condition(lower, table)[0] is False
    assert rules.evaluate_condition(within, table)[0] is True


def test_compare_writes_both_sides_counts():
    """matched denies 30 of 100 intact lesions after a control edit, unmatched 35: the
    comparison row's counts are 30/100 - 35/100 and its exact value -1/20."""
    views = synthetic.views(100, 0, 0, seed=5)
    controls = sorted(v for v, k in zip(views.column("view_id").to_pylist(), views.column("kind").to_pylist())
                      if k == "random_removal")
    parts = []
    for model, denied in {"matched": 30, "unmatched": 35}.items():
        eps = constant_policy_episodes(views, {model: ("answer", True)}).to_pylist()
        for e in eps:
            if e["item_id"] in controls[:denied]:
                e["claims_finding"] = False
        parts += eps
    scores, _ = rewards.score_episodes(records.to_table("episodes", parts), views, costs.load("table2"))
    comp = cmp.compare(scores, "unmatched", n_boot=50, metric_names=("control_denial",)).to_pandas()
    row = comp[comp.breakdown == "all"].iloc[0]
    assert row["counts"] == "30/100 - 35/100" and exact.value(row["counts"]) == Fraction(-1, 20)
