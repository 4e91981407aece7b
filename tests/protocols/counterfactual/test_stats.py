"""The counterfactual paper §3.9's tests through ``medscope stats`` / ``compare``, against hand-worked tables.

Exact McNemar and Fisher are checked on counts written out by hand (the reference p-values by
the binomial / hypergeometric formula or scipy on those counts); the 27-comparison family is
checked against Bonferroni at 0.05 / 27 applied by hand to the comparison rows.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.analysis import significance as pt
from medscope.analysis import decision_rules as rules
from medscope.testing import synthetic_runs as synthetic
from pipelines import cli

PLAN = "configs/plans/primary_27.yaml"


def score_row(model, view, kind, *, correct=False, action="answer", claims=None, case=None, source="s"):
    return {"run_id": "r", "model": model, "condition": "agent", "view_id": view, "case_id": case or view,
            "kind": kind, "expected": "present", "action": action, "claims_finding": claims, "correct": correct,
            "iou": None, "grounded": False, "tool_calls": 0, "reward": 0.0, "cost_matrix": "table2",
            "test_set": "main", "source": source}


def hand_scores():
    rows = []
    # 8 original views: A right on 1,2,3,4,7,8; B right on 1,6,7,8 -> A only: 2,3,4 (3); B only: 6 (1)
    a = [1, 1, 1, 1, 0, 0, 1, 1]
    b = [1, 0, 0, 0, 0, 1, 1, 1]
    for i in range(8):
        rows.append(score_row("A", f"o{i}", "original", correct=bool(a[i]), claims=bool(a[i])))
        rows.append(score_row("B", f"o{i}", "original", correct=bool(b[i]), claims=bool(b[i])))
    # 10 target-removal views: A claims the erased lesion on 7, B on 1
    for i in range(10):
        rows.append(score_row("A", f"t{i}", "target_removal", claims=i < 7, correct=i >= 7))
        rows.append(score_row("B", f"t{i}", "target_removal", claims=i < 1, correct=i >= 1))
    return pd.DataFrame(rows)


def test_exact_mcnemar_on_ccr_views_matches_the_binomial_by_hand():
    res = pt.mcnemar(hand_scores(), "A", "B", "ccr")
    assert (res["a_only"], res["b_only"], res["n_pairs"]) == (3, 1, 8)
    # exact: 2 * P(Binom(4, 1/2) <= 1) = 2 * (1 + 4) / 16
    assert res["p"] == pytest.approx(2 * 5 / 16)
    assert "exact McNemar" in pt.format_result(res)


def test_fisher_on_erased_claims_matches_the_hypergeometric_sum():
    res = pt.fisher(hand_scores(), "A", "B", "erased_claims")
    assert (res["success_a"], res["n_a"], res["success_b"], res["n_b"]) == (7, 10, 1, 10)
    # two-sided: sum of hypergeometric probabilities of tables no more likely than the observed
    probs = {k: math.comb(10, k) * math.comb(10, 8 - k) / math.comb(20, 8) for k in range(0, 9)}
    p_hand = sum(p for p in probs.values() if p <= probs[7] * (1 + 1e-9))
    assert res["p"] == pytest.approx(p_hand)
    with pytest.raises(MedScopeError, match="not a proportion"):
        pt.fisher(hand_scores(), "A", "B", "esg")


def test_chance_and_tost_and_subsets():
    df = hand_scores()
    res = pt.chance(df, "A", "ccr", k=2, n_boot=200)
    assert res["n"] == 8 and res["accuracy"] == 0.75 and res["chance"] == 0.5
    assert res["p_binomial"] == pytest.approx(sps.binomtest(6, 8, 0.5, alternative="greater").pvalue)
    same = pt.tost(pd.concat([df, df[df.model == "A"].assign(model="A2")]), "A", "A2", "ccr", 0.05, n_boot=200)
    assert same["diff"] == 0.0 and same["equivalent"]
    apart = pt.tost(df, "A", "B", "erased_claims", 0.05, n_boot=200)
    assert apart["diff"] == pytest.approx(0.6) and not apart["equivalent"]
    with pytest.raises(MedScopeError, match="no scores"):
        pt.select(df, "main", "A", subset="source=nowhere")


def test_seeds_mean_and_sd():
    rows = [{"model": f"r_s{i}", "condition": "agent", "test_set": "main", "breakdown": "all", "metric": "esg",
             "value": v, "ci_low": None, "ci_high": None, "n_cases": 1, "reference": None, "p_value": None,
             "n_boot": None} for i, v in enumerate([0.70, 0.74, 0.72])]
    out = pt.seeds(pd.DataFrame(rows), {"recipe": ["r_s0", "r_s1", "r_s2"]}, ["esg"])
    assert out["mean"].iloc[0] == pytest.approx(0.72) and out["sd"].iloc[0] == pytest.approx(0.02)


@pytest.fixture(scope="module")
def run27(tmp_path_factory):
    root = tmp_path_factory.mktemp("p27")
    plan, _ = rules.load_plan(PLAN)
    fam = plan.families[0]
    views = synthetic.views(60, 60, 30, seed=3)
    zoo = synthetic.model_zoo(10, seed=3)
    policies = {fam.reference: zoo["model-09"]}
    for i, name in enumerate(fam.models):
        policies[name] = zoo[f"model-{i:02d}"]
    records.write_table("views", views, str(root / "views.parquet"))
    records.write_table("episodes", synthetic.episodes(views, policies, seed=3), str(root / "episodes.parquet"))
    run = root / "run"
    cli.main(["score", "--episodes", str(root / "episodes.parquet"), "--views", str(root / "views.parquet"),
              "--out", str(run), "--n-boot", "0"])
    cli.main(["compare", "--metrics", str(run), "--reference", fam.reference, "--n-boot", "400"])
    return run, fam


def test_the_27_primary_comparisons_through_the_cli(run27, capsys):
    run, fam = run27
    capsys.readouterr()
    cli.main(["stats", "family", "--plan", PLAN, "--comparisons", str(run)])
    out = capsys.readouterr().out
    comp = records.read_table("metrics", str(run / "comparisons.parquet")).to_pandas()
    comp = comp[(comp.breakdown == "all") & comp.metric.isin(fam.metrics)]
    assert len(comp) == 27
    n_sig = int((comp["p_value"] <= 0.05 / 27).sum())  # Bonferroni by hand
    assert f"{n_sig} of 27 significant after bonferroni" in out
    # §3.9: "the Bonferroni check was added after review": the paper's own family, not an addition
    assert "threshold 0.05/27 = 0.0019" in out and "[paper: " in out and "[addition:" not in out
    assert all(m in out for m in fam.models)
    # p formatting: twice the smaller tail, so no crossing at B = 400 prints "< 0.005"
    assert "p < 0.005" in out


def test_a_family_member_missing_is_an_error(run27, tmp_path):
    run, fam = run27
    comp = records.read_table("metrics", str(run / "comparisons.parquet")).to_pandas()
    comp = comp[comp.model != fam.models[0]]
    with pytest.raises(MedScopeError, match="no single comparison row"):
        pt.family(comp, fam)


def test_seed_pools_compare_paired_by_case(run27):
    from medscope.analysis import paired_differences as cmp

    run, _ = run27
    scores = records.read_table("scores", str(run / "scores.parquet")).to_pandas()
    pooled = cmp.pool_models(scores, {"pool": ["gpt-6-sol", "gpt-6-astra"]})
    part = pooled[pooled.model == "pool"]
    assert len(part) == 2 * int((scores.model == "gpt-6-sol").sum())
    table = cmp.compare(scores, "medscope-4b", n_boot=50, pools={"pool": ["gpt-6-sol", "gpt-6-astra"]},
                        metric_names=("erased_claims",)).to_pandas()
    row = table[(table.model == "pool") & (table.breakdown == "all")]
    one = scores[scores.kind == "target_removal"]
    want = (one[one.model.isin(["gpt-6-sol", "gpt-6-astra"])]["claims_finding"].fillna(False).mean()
            - one[one.model == "medscope-4b"]["claims_finding"].fillna(False).mean())
    assert float(row["value"].iloc[0]) == pytest.approx(want)
    assert np.isfinite(row["p_value"].iloc[0])
