"""The counterfactual paper to the letter: Table 5's trivial-policy rows through ``medscope score``.

The main test of Table 3 / Table 5 has 1,115 views: 219 lesion cases x (original, target
removal, random removal), 288 natural negatives and 170 degraded views (of lesion cases). The
expected values below are worked out by hand from Table 2's cost matrix and §3.8's
denominators, not by the engine:

- always claims the finding: O, R +1 each (438); T, N -2 each (507); D: claiming the finding on a
  degraded lesion view is the "correct" column, +0.25 (170). Net utility
  (438 - 1014 + 42.5) / 1115 = -533.5 / 1115 = -0.4785 -> Table 5: -0.478.
- always says it is absent: T, N +1 (507); O, R wrong: -2, or -4 on a critical finding; D: the
  absent answer on a degraded lesion view is wrong, -2 (170). With c critical lesion cases
  (2c views at -4) the sum is 507 - 2(438 - 2c) - 8c - 340 = -709 - 4c. Table 5's -0.848 needs
  -709 - 4c in [-946.1, -945.0], i.e. c = 59 (the only integer): the table below marks 59 of the
  219 lesion cases critical. Net utility -945 / 1115 = -0.8475 -> -0.848.
- always refers: O, R -0.3 (438); T, N +0.5 (507); D 0: (-131.4 + 253.5) / 1115 = 0.1095 -> 0.110.
- always clarifies (§4.2's fourth trivial policy; not a Table 5 row): O, R -0.3; T, N -0.5;
  D +0.5: (-131.4 - 253.5 + 85) / 1115 = -0.2690.

Unmatched controls and insertions (training pools, §3.2 / §3.7) are added to the table on the
test split, as an old build made them: they must change none of these numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.reproduce.derive import constant_policy_episodes
from medscope.testing import synthetic_runs as synthetic
from medscope.analysis import testsets
from pipelines import cli

N_LESION, N_NEG, N_DEG, N_CRITICAL = 219, 288, 170, 59
TRIVIAL = {  # policy -> (action, claims)
    "always_claims": ("answer", True),
    "always_absent": ("answer", False),
    "always_refers": ("refer", None),
    "always_clarifies": ("clarify", None),
}


def table5_views(extra_training_views: bool = True):
    views = synthetic.views(N_LESION, N_NEG, N_DEG, seed=0).to_pylist()
    lesion_cases = sorted({v["case_id"] for v in views if v["kind"] == "original"})
    critical = set(lesion_cases[:N_CRITICAL])
    for v in views:
        v["critical"] = v["case_id"] in critical
        v["source"] = "kvasir" if v["imaging_type"] == "colonoscopy" else "other"
        if v["kind"] in ("target_removal", "random_removal"):
            v["tool"] = "lama" if int(v["case_id"][1:]) % 2 == 0 else "transplant"
            v["view_id"] = f"{v['case_id']}/{v['kind']}/{v['tool']}"
    if extra_training_views:
        for case in lesion_cases[:40]:
            base = next(v for v in views if v["case_id"] == case and v["kind"] == "original")
            for kind in ("unmatched_control", "insertion"):
                views.append(dict(base, kind=kind, view_id=f"{case}/{kind}/transplant", tool="transplant"))
    return records.to_table("views", views)


def trivial_episodes(views, policies=TRIVIAL):
    """The episodes a sweep writes for image-blind policies (the builder ``medscope reproduce`` uses)."""
    return constant_policy_episodes(views, policies)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("table5")
    views = table5_views()
    records.write_table("views", views, str(root / "views.parquet"))
    records.write_table("episodes", trivial_episodes(views), str(root / "episodes.parquet"))
    rc = cli.main(["score", "--episodes", str(root / "episodes.parquet"), "--views", str(root / "views.parquet"),
                   "--out", str(root / "run"), "--n-boot", "50"])
    assert rc in (0, None)
    metrics = records.read_table("metrics", str(root / "run" / "metrics.parquet")).to_pandas()
    scores = records.read_table("scores", str(root / "run" / "scores.parquet")).to_pandas()
    rejects = records.read_table("rejects", str(root / "run" / "rejects.parquet")).to_pandas()
    return metrics, scores, rejects


def _value(metrics, model, metric, breakdown="all"):
    row = metrics[(metrics["model"] == model) & (metrics["metric"] == metric) & (metrics["breakdown"] == breakdown)]
    assert len(row) == 1, (model, metric, breakdown)
    return float(row["value"].iloc[0])


def test_composition_is_table_3s_main_test(scored):
    _, scores, rejects = scored
    one = scores[scores["model"] == "always_claims"]
    assert one["kind"].value_counts().to_dict() == {
        "original": 219, "target_removal": 219, "random_removal": 219, "natural_negative": 288, "degraded": 170}
    assert len(one) == 1115 and one["case_id"].nunique() == 507
    # the 80 training-pool views of each policy are rejects, never scores
    assert (rejects["reason"] == "not_an_evaluation_view").sum() == 80 * len(TRIVIAL)
    assert set(scores["test_set"]) == {"main"}


@pytest.mark.parametrize("model, ccr, esg, erased, healthy, utility", [
    # Table 5's three trivial rows, to the printed precision
    ("always_claims", 1.000, 0.000, 1.00, 1.00, -0.478),
    ("always_absent", 0.000, 0.000, 0.00, 0.00, -0.848),
    ("always_refers", 0.000, 0.000, 0.00, 0.00, 0.110),
])
def test_trivial_policies_reproduce_table_5(scored, model, ccr, esg, erased, healthy, utility):
    metrics, _, _ = scored
    assert round(_value(metrics, model, "ccr"), 3) == ccr
    assert round(_value(metrics, model, "esg"), 3) == esg
    assert round(_value(metrics, model, "erased_claims"), 3) == erased
    assert round(_value(metrics, model, "healthy_claims"), 3) == healthy
    assert round(_value(metrics, model, "net_utility"), 3) == utility


def test_exact_sums_and_the_fourth_policy(scored):
    metrics, _, _ = scored
    assert _value(metrics, "always_claims", "net_utility") == pytest.approx(-533.5 / 1115)
    assert _value(metrics, "always_absent", "net_utility") == pytest.approx(-945 / 1115)
    assert _value(metrics, "always_refers", "net_utility") == pytest.approx(122.1 / 1115)
    assert _value(metrics, "always_clarifies", "net_utility") == pytest.approx(-299.9 / 1115)
    # §5.5 without the degraded views: the mean over the 945 O/T/R/N views
    assert _value(metrics, "always_claims", "net_utility_no_degraded") == pytest.approx((438 - 1014) / 945)
    assert _value(metrics, "always_absent", "net_utility_no_degraded") == pytest.approx((507 - 2 * 320 - 4 * 118) / 945)
    assert _value(metrics, "always_refers", "net_utility_no_degraded") == pytest.approx((-131.4 + 253.5) / 945)
    assert _value(metrics, "always_clarifies", "net_utility_no_degraded") == pytest.approx((-131.4 - 253.5) / 945)
    assert _value(metrics, "always_clarifies", "clarify_rate") == 1.0


def test_every_constant_policy_has_esg_zero_overall_and_in_every_group(scored):
    metrics, _, _ = scored
    esg = metrics[(metrics["metric"].isin(["esg", "strict_esg"])) & metrics["reference"].isna()]
    assert set(esg["model"]) == set(TRIVIAL) and len(esg) > 4 * 2
    assert np.allclose(esg["value"].to_numpy(dtype=float), 0.0)


def test_constant_policies_cannot_look_best_on_the_decision_risk(scored):
    metrics, _, _ = scored
    # flat curves at each policy's error rate over the 945 views expecting an answer
    assert _value(metrics, "always_claims", "decision_aurc") == pytest.approx(507 / 945)
    assert _value(metrics, "always_absent", "decision_aurc") == pytest.approx(438 / 945)
    assert _value(metrics, "always_claims", "decision_risk@0.70") == pytest.approx(507 / 945)
    assert _value(metrics, "always_refers", "decision_aurc") == pytest.approx(1.0)
    # on §5.5's answerable views (O u R) always-claim is never wrong: the paper's figure, not a ranking
    assert _value(metrics, "always_claims", "aurc") == 0.0
    assert _value(metrics, "always_absent", "aurc") == 1.0


def test_breakdowns_by_tool_and_source(scored):
    metrics, _, _ = scored
    groups = set(metrics.loc[metrics["model"] == "always_claims", "breakdown"])
    assert {"tool=lama", "tool=transplant", "source=kvasir", "source=other"} <= groups
    assert not any(g.startswith("tool=none") for g in groups)
    # a tool group holds that tool's T and R views only: 110 lama cases (even ids) of 219
    row = metrics[(metrics["model"] == "always_claims") & (metrics["metric"] == "erased_claims")
                  & (metrics["breakdown"] == "tool=lama")]
    assert int(row["n_cases"].iloc[0]) == 110


def test_a_tool_following_policy_is_seen_per_tool(tmp_path):
    """Claims the finding after a LaMa erasure, says absent after a transplant one: Table 12's
    per-tool erased-lesion claims are 1 and 0, and ESG per tool 0 - ... by hand."""
    from medscope.protocols.counterfactual import costs, rewards
    from medscope.analysis import view_metrics as mt

    views = table5_views(extra_training_views=False)
    eps = trivial_episodes(views, {"m": ("answer", True)}).to_pylist()
    for e in eps:
        if e["item_id"].endswith("/transplant") or "/natural_negative" in e["item_id"]:
            e["claims_finding"] = False
    scores, _ = rewards.score_episodes(records.to_table("episodes", eps), views, costs.load("table2"))
    table = mt.compute(scores, n_boot=0).to_pandas()
    assert _value(table, "m", "erased_claims", "tool=lama") == 1.0
    assert _value(table, "m", "erased_claims", "tool=transplant") == 0.0
    # ESG by tool: P(abs|T) - P(abs|R): lama 0 - 0; transplant 1 - 1
    assert _value(table, "m", "esg", "tool=lama") == 0.0 and _value(table, "m", "esg", "tool=transplant") == 0.0
    assert _value(table, "m", "control_denial", "tool=transplant") == 1.0


def test_test_sets_name_their_splits_and_refuse_training_pools(tmp_path):
    from medscope.protocols.counterfactual.options import CounterfactualOptions
    from medscope.protocols.counterfactual.protocol import CounterfactualProtocol

    views = table5_views().to_pylist()
    for v in views[:30]:
        v["split"] = "validation"
    for v in views:
        v["image"] = b"png"
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", views, uri)
    items = CounterfactualProtocol().load_items(uri)
    kinds = pd.Series([i.meta["kind"] for i in items]).value_counts().to_dict()
    assert set(kinds) == set(testsets.EVAL_KINDS)  # no unmatched control, no insertion
    assert sum(kinds.values()) == 1115 - 30 and all(i.meta["split"] == "test" for i in items)
    assert {i.meta["test_set"] for i in items} == {"main"}
    val = CounterfactualProtocol(CounterfactualOptions(test_set="validation")).load_items(uri)
    assert len(val) == 30 and {i.meta["test_set"] for i in val} == {"validation"}
    with pytest.raises(MedScopeError, match="training pool"):
        CounterfactualProtocol(CounterfactualOptions(test_set="c1_unmatched_pool"))
    with pytest.raises(MedScopeError, match="never evaluated"):
        CounterfactualProtocol(CounterfactualOptions(test_set="mine", splits=["train"]))
    with pytest.raises(MedScopeError, match="name its split"):
        CounterfactualProtocol(CounterfactualOptions(test_set="mine"))
    assert CounterfactualProtocol(CounterfactualOptions(test_set="mine", splits=["test"])).splits == ("test",)


def test_sweeps_pass_their_test_set_to_protocols_that_take_one():
    from pipelines.eval import DEFAULT_PROTOCOL, load_protocol

    proto = load_protocol(DEFAULT_PROTOCOL, {})
    assert proto.test_set == "main" and proto.splits == ("test",)  # default: the main test, split test
    proto = load_protocol(DEFAULT_PROTOCOL, {"test_set": "validation"})
    assert proto.test_set == "validation" and proto.splits == ("validation",)
    proto = load_protocol(DEFAULT_PROTOCOL, {"test_set": "fresh_external", "splits": ["test"]})
    assert proto.splits == ("test",)
    # a score option is not the eval run's to set
    with pytest.raises(MedScopeError, match="'cost_matrix' of counterfactual is set at score, not at eval"):
        load_protocol(DEFAULT_PROTOCOL, {"cost_matrix": "table2"})
