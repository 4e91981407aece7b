"""Rewards (counterfactual paper Table 2, §3.4) and metrics (§3.8) against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.protocols.counterfactual import costs, rewards
from medscope.analysis import view_metrics as metrics
from medscope.testing import synthetic_runs as synthetic

# Hand-copied from the counterfactual paper Table 2 / §5.5, independent of the YAML files:
# row -> (correct, wrong, wrong_critical, refer, clarify)
TABLE2 = {
    "answerable": (1.0, -2.0, -4.0, -0.3, -0.3),
    "absent": (1.0, -2.0, None, 0.5, -0.5),
    "degraded": (0.25, -2.0, None, 0.0, 0.5),
}
EXPECTED = {
    "table2": TABLE2,
    "wrong_1": {"answerable": (1.0, -1.0, -2.0, -0.3, -0.3), "absent": (1.0, -1.0, None, 0.5, -0.5),
                "degraded": (0.25, -1.0, None, 0.0, 0.5)},
    "wrong_0.5": {"answerable": (1.0, -0.5, -1.0, -0.3, -0.3), "absent": (1.0, -0.5, None, 0.5, -0.5),
                  "degraded": (0.25, -0.5, None, 0.0, 0.5)},
    "refer_free_negatives": {"answerable": (1.0, -2.0, -4.0, -0.3, -0.3), "absent": (1.0, -2.0, None, 0.0, -0.5),
                             "degraded": (0.25, -2.0, None, 0.0, 0.5)},
    "refer_minus_0.3": {"answerable": (1.0, -2.0, -4.0, -0.3, -0.3), "absent": (1.0, -2.0, None, -0.3, -0.5),
                        "degraded": (0.25, -2.0, None, -0.3, 0.5)},
}
KIND_ROW = [("original", True, "answerable"), ("random_removal", True, "answerable"),
            ("unmatched_control", True, "answerable"), ("insertion", True, "answerable"),
            ("target_removal", False, "absent"), ("natural_negative", False, "absent"),
            ("degraded", True, "degraded"), ("degraded", False, "degraded")]


def one(matrix, kind, present, action, claims=None, critical=False, iou=np.nan, area=np.nan, tools=0):
    r, correct, grounded, _ = rewards.view_rewards(
        np.array([kind], object), np.array([action], object), np.array([bool(claims)]), np.array([present]),
        np.array([critical]), np.array([iou]), np.array([area]), np.array([tools]), matrix)
    return float(r[0]), bool(correct[0]), bool(grounded[0])


def test_all_five_matrices_ship_and_validate():
    assert costs.available() == ["table2", "refer_free_negatives", "refer_minus_0.3", "wrong_0.5", "wrong_1"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_cell_of_every_matrix(name):
    m = costs.load(name)
    for kind, present, row in KIND_ROW:
        correct, wrong, wrong_crit, refer, clarify = EXPECTED[name][row]
        assert one(m, kind, present, "answer", claims=present) == (correct, True, False)
        assert one(m, kind, present, "answer", claims=not present)[0] == wrong
        crit = one(m, kind, present, "answer", claims=not present, critical=True)[0]
        assert crit == (wrong_crit if row == "answerable" else wrong)
        assert one(m, kind, present, "refer")[0] == refer
        assert one(m, kind, present, "clarify")[0] == clarify
        assert one(m, kind, present, "unparseable")[0] == -1.0
        # critical changes nothing for a correct answer
        assert one(m, kind, present, "answer", claims=present, critical=True)[0] == correct


def test_box_bonus_iou_threshold_oversize_and_tool_cost():
    m = costs.load("table2")
    assert one(m, "original", True, "answer", True, iou=0.3, area=0.1) == (1.5, True, True)
    assert one(m, "random_removal", True, "answer", True, iou=0.8, area=0.1)[0] == 1.5
    assert one(m, "original", True, "answer", True, iou=0.29, area=0.1) == (1.0, True, False)
    assert one(m, "original", True, "answer", True, iou=0.9, area=0.51) == (1.0, True, False)  # over half
    assert one(m, "original", True, "answer", True, iou=0.9, area=0.5)[0] == 1.5  # exactly half still earns
    assert one(m, "target_removal", False, "answer", False, iou=0.9, area=0.1)[0] == 1.0  # no bonus there
    assert one(m, "degraded", True, "answer", True, iou=0.9, area=0.1)[0] == 0.25
    assert one(m, "original", True, "answer", False, iou=0.9, area=0.1)[0] == -2.0  # wrong: no bonus
    # 0 and 1 tool calls are free, each further one costs 0.05
    assert one(m, "original", True, "refer", tools=1)[0] == pytest.approx(-0.3)
    assert one(m, "original", True, "refer", tools=3)[0] == pytest.approx(-0.4)
    assert one(m, "natural_negative", False, "unparseable", tools=2)[0] == pytest.approx(-1.05)


def test_box_iou_in_pixels_and_from_0_1000():
    # a 200x100 image; lesion at pixels (20,10)-(60,50)
    lesion = np.array([[20.0, 10, 60, 50]])
    iou, area = rewards.box_iou(np.array([[20.0, 10, 60, 50]]), lesion, np.array([200]), np.array([100]))
    assert iou[0] == pytest.approx(1.0) and area[0] == pytest.approx(40 * 40 / 20000)
    iou, _ = rewards.box_iou(np.array([[20.0, 10, 40, 50]]), lesion, np.array([200]), np.array([100]))
    assert iou[0] == pytest.approx(0.5)
    # model reply units: (100,100)-(300,500) per mille of 200x100 is (20,10)-(60,50) in pixels
    px = rewards.per_mille_to_pixels(np.array([[100.0, 100, 300, 500]]), np.array([200]), np.array([100]))
    assert px.tolist() == [[20.0, 10.0, 60.0, 50.0]]
    iou, _ = rewards.box_iou(np.array([[np.nan] * 4]), lesion, np.array([200]), np.array([100]))
    assert np.isnan(iou[0])


def test_grounding_bonus_through_score_episodes_in_both_box_units():
    v = synthetic.views(1, 0, 0, seed=8, width=200, height=100)
    lesion = v.column("lesion_bbox")[0].as_py()
    e = constant_episodes(v, "answer", True).to_pylist()
    for row in e:
        row["box"] = lesion
    s, _ = rewards.score_episodes(records.to_table("episodes", e), v, costs.load("table2"))
    by_kind = dict(zip(s.column("kind").to_pylist(), s.column("reward").to_pylist()))
    assert by_kind == {"original": 1.5, "random_removal": 1.5, "target_removal": -2.0}
    for row in e:
        row["box"] = [round(lesion[0] * 5), round(lesion[1] * 10), round(lesion[2] * 5), round(lesion[3] * 10)]
    s, _ = rewards.score_episodes(records.to_table("episodes", e), v, costs.load("table2"), box_units="per_mille")
    assert s.column("grounded").to_pylist() == [True, False, True]
    with pytest.raises(MedScopeError, match="box_units"):
        rewards.score_episodes(records.to_table("episodes", e), v, costs.load("table2"), box_units="cm")


def constant_episodes(views, action, claims):
    rows = []
    for v in views.select(["view_id", "case_id"]).to_pylist():
        rows.append({"run_id": "r", "protocol": "counterfactual", "model": f"always-{action}-{claims}",
                     "condition": "agent", "item_id": v["view_id"], "case_id": v["case_id"], "request_key": v["view_id"],
                     "prompt_version": "v1", "decoding": "greedy", "turns": None, "raw_text": "", "action": action,
                     "answer": None, "claims_finding": claims, "box": None, "confidence": None, "tool_calls": 0,
                     "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1,
                     "error": None})
    return records.to_table("episodes", rows)


def test_paper_trivial_policies_net_utility_on_the_main_test_layout():
    """The counterfactual paper Table 5 / §5.5: always-refer 0.110 / -0.118 / -0.300; always-claim -0.478."""
    v = synthetic.views(219, 288, 170, seed=3)
    refer = constant_episodes(v, "refer", None)
    for name, expected in [("table2", 0.110), ("refer_free_negatives", -0.118), ("refer_minus_0.3", -0.300)]:
        s, _ = rewards.score_episodes(refer, v, costs.load(name))
        assert round(float(np.mean(s.column("reward").to_numpy())), 3) == expected
    s, _ = rewards.score_episodes(constant_episodes(v, "answer", True), v, costs.load("table2"))
    assert round(float(np.mean(s.column("reward").to_numpy())), 3) == -0.478
    s, _ = rewards.score_episodes(constant_episodes(v, "answer", False), v, costs.load("table2"))
    crit = sum(1 for r in v.select(["kind", "critical"]).to_pylist()
               if r["critical"] and r["kind"] in ("original", "random_removal"))
    assert float(np.mean(s.column("reward").to_numpy())) == pytest.approx((507 - 170 * 2 - 438 * 2 - 2 * crit) / 1115)


def test_every_constant_policy_has_esg_exactly_zero_on_random_data():
    rng = np.random.default_rng(7)
    policies = [("answer", True), ("answer", False), ("refer", None), ("clarify", None), ("unparseable", None)]
    for trial in range(12):
        v = synthetic.views(int(rng.integers(1, 30)), int(rng.integers(0, 30)), int(rng.integers(0, 10)),
                            seed=int(rng.integers(1 << 30)))
        eps = [constant_episodes(v, action, claims) for action, claims in policies]
        import pyarrow as pa

        s, _ = rewards.score_episodes(pa.concat_tables(eps), v, costs.load(costs.available()[trial % 5]))
        m = metrics.compute(s, n_boot=20, seed=trial).to_pandas()
        for name in ("esg", "strict_esg"):
            vals = m[m.metric == name]
            # every policy, overall and in every imaging-type / size / finding group
            assert vals.model.nunique() == len(policies) and len(vals) >= len(policies)
            assert (vals["value"] == 0.0).all(), trial
            assert (vals["ci_low"] == 0.0).all() and (vals["ci_high"] == 0.0).all()


def test_metrics_by_hand_on_a_tiny_table():
    # 2 lesion cases (O, T, R, D) + 1 negative; one model
    v = synthetic.views(2, 1, 2, seed=1)
    plan = {  # view kind -> (action, claims) per case index
        "L0000": {"original": ("answer", True), "target_removal": ("answer", True), "random_removal": ("answer", True),
                  "degraded": ("clarify", None)},
        "L0001": {"original": ("answer", False), "target_removal": ("refer", None), "random_removal": ("answer", False),
                  "degraded": ("answer", True)},
        "N0000": {"natural_negative": ("answer", True)},
    }
    e = constant_episodes(v, "refer", None).to_pylist()
    for row in e:
        case, kind = row["item_id"].split("/")
        row["action"], row["claims_finding"] = plan[case][kind]
    s, _ = rewards.score_episodes(records.to_table("episodes", e), v, costs.load("table2"))
    m = metrics.compute(s, n_boot=0).to_pandas()
    got = {r.metric: r.value for r in m[m.breakdown == "all"].itertuples()}
    # T: L0 claims, L1 refers -> absent-or-refer 1/2; R: L0 claims, L1 absent -> 1/2
    assert got["esg"] == 0.0
    assert got["strict_esg"] == pytest.approx(0 / 2 - 1 / 2)
    assert got["ccr"] == pytest.approx(2 / 4)  # L0 O and R correct
    assert got["erased_claims"] == pytest.approx(1 / 2)
    assert got["healthy_claims"] == 1.0
    assert got["clarify_rate"] == pytest.approx(1 / 2)
    assert got["control_denial"] == pytest.approx(1 / 2)
    crit = {r["case_id"]: r["critical"] for r in v.to_pylist()}
    wrong_l1 = -4.0 if crit["L0001"] else -2.0
    total = (1 - 2 + 1 + 0.5) + (wrong_l1 + 0.5 + wrong_l1 + 0.25) + (-2)
    assert got["net_utility"] == pytest.approx(total / 9)
    assert got["grounded_accuracy"] == 0.0


def test_unknown_view_becomes_a_reject_and_answer_without_claim_is_unparseable():
    v = synthetic.views(1, 1, 0, seed=2)
    e = constant_episodes(v, "answer", None).to_pylist()
    e.append(dict(e[0], item_id="ghost/original", request_key="ghost"))
    e.append(dict(e[1], request_key="again"))
    s, rej = rewards.score_episodes(records.to_table("episodes", e), v, costs.load("table2"))
    assert sorted(r["reason"] for r in rej) == ["duplicate_episode", "view_missing"]
    assert s.num_rows == v.num_rows
    assert set(s.column("action").to_pylist()) == {"unparseable"}
    assert set(s.column("reward").to_pylist()) == {-1.0}


def test_bad_cost_matrix_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: bad\nanswerable: {correct: 1, wrong: -2, refer: 0, clarify: 0}\n"
                 "absent: {correct: 1, wrong: -2, refer: 0, clarify: 0}\ndegraded: {correct: 1, wrong: -2, refer: 0, clarify: 0}\n")
    with pytest.raises(MedScopeError, match="wrong_critical"):
        costs.load(str(p))
    with pytest.raises(MedScopeError, match="no cost matrix"):
        costs.load("nope")


def test_rescore_matches_scoring_under_every_matrix():
    v = synthetic.views(20, 20, 10, seed=4)
    e = synthetic.episodes(v, synthetic.model_zoo(3), seed=4)
    for m in costs.load_all():
        s, _ = rewards.score_episodes(e, v, m)
        base, _ = rewards.score_episodes(e, v, costs.load("table2"))
        assert np.allclose(rewards.rescore(base, m), s.column("reward").to_numpy())


def test_size_quartiles_and_selective_risk():
    from medscope.analysis import selective_risk as selective

    c = selective.risk_coverage(np.array([True, False, True, False]), np.array([0.9, 0.9, 0.5, np.nan]))
    # order: 0.9 (correct), 0.9 (wrong, stable), 0.5 (correct), nan (wrong)
    assert np.allclose(c.risk, [0, 1 / 2, 1 / 3, 2 / 4])
    assert selective.risk_at(c, 0.5) == 0.5 and selective.risk_at(c, 1.0) == 0.5
    assert selective.aurc(c) == pytest.approx((0 + 0.5 + 1 / 3 + 0.5) / 4)
    v = synthetic.views(8, 2, 0, seed=5).to_pandas()
    q = metrics.size_quartiles(v)
    assert q[v.kind == "natural_negative"].isna().all()
    per_case = v[v.kind == "original"].set_index("case_id")["lesion_area_frac"].sort_values()
    labels = q[v.kind == "original"].set_axis(v[v.kind == "original"]["case_id"]).loc[per_case.index].tolist()
    assert labels == ["Q1", "Q1", "Q2", "Q2", "Q3", "Q3", "Q4", "Q4"] or math.isclose(per_case.iloc[1], per_case.iloc[2])


def test_selective_risk_bootstrap_matches_resampled_rows():
    from medscope.analysis import selective_risk as selective
    from medscope.stats import bootstrap as bs

    rng = np.random.default_rng(3)
    n_cases = 12
    cluster = np.repeat(np.arange(n_cases), 2)
    correct = rng.random(24) < 0.7
    conf = rng.random(24).round(3)  # distinct: no ties, so the expansion order is the sort order
    idx = bs.resample_indices(n_cases, 25, 9)
    counts = bs.counts_from_indices(idx, n_cases)
    boot = selective.bootstrap(correct, conf, cluster, counts, (1.0, 0.5))
    for b in range(25):
        rows = np.concatenate([np.flatnonzero(cluster == c) for c in idx[b]])
        curve = selective.risk_coverage(correct[rows], conf[rows])
        assert boot[b, 0] == pytest.approx(selective.risk_at(curve, 1.0))
        assert boot[b, 1] == pytest.approx(selective.risk_at(curve, 0.5))
        assert boot[b, 2] == pytest.approx(selective.aurc(curve))


def test_seed_runs_are_distinct_models_with_arm_and_seed_columns():
    """Two seeds of one arm on the same views are two models (<arm>@seed<k>): neither seed's
    episodes are dropped as a second episode, and the scores carry arm and seed; a plain model
    has neither. The same view twice under one model id is still a duplicate."""
    v = synthetic.views(2, 1, 0, seed=3)
    base = constant_episodes(v, "answer", True).to_pylist()
    eps = [dict(e, model=m, request_key=f"{m}/{e['item_id']}") for m in ("recipe@seed0", "recipe@seed1", "gpt-x") for e in base]
    s, rej = rewards.score_episodes(records.to_table("episodes", eps), v, costs.load("table2"))
    assert rej == [] and s.num_rows == 3 * v.num_rows
    got = s.to_pandas().groupby("model")[["arm", "seed"]].first()
    assert got.loc["recipe@seed0"].tolist() == ["recipe", 0] and got.loc["recipe@seed1"].tolist() == ["recipe", 1]
    assert got.loc["gpt-x"].isna().all()
    again = eps + [dict(eps[0], request_key="again")]
    s, rej = rewards.score_episodes(records.to_table("episodes", again), v, costs.load("table2"))
    assert [r["reason"] for r in rej] == ["duplicate_episode"] and s.num_rows == 3 * v.num_rows
