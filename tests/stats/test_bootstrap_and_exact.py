"""Bootstrap against a slow obvious reference; exact tests against scipy / statsmodels / hand values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from medscope.analysis import paired_differences as compare, view_metrics as metrics
from medscope.protocols.counterfactual import costs, rewards
from medscope.testing import synthetic_runs as synthetic
from medscope.stats import bootstrap as bs
from medscope.stats import inference, labelnoise


@pytest.fixture(scope="module")
def small():
    v = synthetic.views(15, 12, 8, seed=11)
    e = synthetic.episodes(v, synthetic.model_zoo(3, seed=2), seed=11)
    s, _ = rewards.score_episodes(e, v, costs.load("table2"))
    return s.to_pandas()


def slow_metric(views: list[dict], name: str) -> float:
    """Straight from the §3.8 definitions, one view at a time."""
    def rate(kinds, pred):
        sel = [v for v in views if v["kind"] in kinds]
        return sum(pred(v) for v in sel) / len(sel) if sel else float("nan")

    def absref(v):
        return v["action"] == "refer" or (v["action"] == "answer" and not v["claims_finding"])

    if name == "esg":
        return rate({"target_removal"}, absref) - rate({"random_removal"}, absref)
    if name == "ccr":
        return rate({"original", "random_removal"}, lambda v: v["correct"])
    if name == "erased_claims":
        return rate({"target_removal"}, lambda v: v["action"] == "answer" and v["claims_finding"])
    if name == "healthy_claims":
        return rate({"natural_negative"}, lambda v: v["action"] == "answer" and v["claims_finding"])
    if name == "net_utility":
        return sum(v["reward"] for v in views) / len(views)
    raise KeyError(name)


def test_vectorised_bootstrap_equals_a_per_resample_loop_on_the_same_resamples(small):
    b, seed = 40, 42
    df = small
    stats = metrics.sufficient_stats(df, breakdowns=())
    samples = metrics.bootstrap_metric_samples(stats, b, seed)  # [B, K, M]
    idx = bs.resample_indices(len(stats.case_ids), b, seed)
    by_case = {c: [] for c in stats.case_ids}
    names = list(metrics.METRICS)
    for k, (model, cond, _) in enumerate(stats.keys):
        rows = df[(df.model == model) & (df.condition == cond)].to_dict("records")
        by_case = {c: [r for r in rows if r["case_id"] == c] for c in stats.case_ids}
        for r in range(b):
            views = [v for i in idx[r] for v in by_case[stats.case_ids[i]]]
            for name in ("esg", "ccr", "erased_claims", "healthy_claims", "net_utility"):
                ref = slow_metric(views, name)
                got = samples[r, k, names.index(name)]
                assert (np.isnan(ref) and np.isnan(got)) or got == pytest.approx(ref, abs=1e-12)


def test_group_bootstrap_resamples_whole_groups(small):
    df = small.copy()
    stats = metrics.sufficient_stats(df, breakdowns=())
    codes, n_groups = metrics._cluster_map(df, stats.case_ids, "group_id")
    assert n_groups < len(stats.case_ids)  # lesion cases come two per group
    samples = metrics.bootstrap_metric_samples(stats, 30, 5, codes, n_groups)
    idx = bs.resample_indices(n_groups, 30, 5)
    groups = np.array([df[df.case_id == c].group_id.iloc[0] for c in stats.case_ids])
    uniq = np.unique(groups.astype(str))
    rows = df[df.model == stats.keys[0][0]].to_dict("records")
    for r in range(30):
        chosen = [uniq[i] for i in idx[r]]
        views = [v for g in chosen for v in rows if v["group_id"] == g]
        assert samples[r, 0, list(metrics.METRICS).index("net_utility")] == pytest.approx(
            slow_metric(views, "net_utility"), abs=1e-12)


def test_counts_match_indices_and_percentile_interval():
    idx = bs.resample_indices(5, 7, 3)
    counts = bs.counts_from_indices(idx, 5)
    for r in range(7):
        assert counts[r].tolist() == [float((idx[r] == c).sum()) for c in range(5)]
    s = np.arange(1, 101, dtype=float)[:, None]
    lo, hi = bs.percentile_ci(s)
    assert lo[0] == pytest.approx(np.percentile(s, 2.5)) and hi[0] == pytest.approx(np.percentile(s, 97.5))
    s2 = np.concatenate([s, np.full((100, 1), np.nan)], 1)
    s2[:50, 1] = np.arange(50)
    lo, hi = bs.percentile_ci(s2)
    assert lo[1] == pytest.approx(np.percentile(np.arange(50), 2.5))


def test_paired_p_is_twice_the_smaller_tail_and_below_one_over_b():
    d = np.array([-1.0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert bs.two_sided_p(d) == pytest.approx(0.2)
    res = bs.paired(1.0, 0.0, np.ones(2000) + np.linspace(0, 1, 2000), np.zeros(2000))
    assert res.p == 0.0 and res.p_text == "< 0.001"  # B = 2000: the smallest non-zero p is 2/B (§3.9)
    same = bs.paired(0.5, 0.5, np.ones(10), np.ones(10))
    assert same.p == 1.0


def test_compare_is_paired_and_consistent_with_the_metric_table(small):
    out = compare.compare(small, "model-00", n_boot=200, seed=1).to_pandas()
    m = metrics.compute(small, n_boot=0).to_pandas()
    for row in out.itertuples():
        a = m[(m.model == row.model) & (m.metric == row.metric) & (m.breakdown == "all")].value.iloc[0]
        b = m[(m.model == "model-00") & (m.metric == row.metric) & (m.breakdown == "all")].value.iloc[0]
        assert row.value == pytest.approx(a - b)
        assert row.ci_low <= row.value <= row.ci_high and row.reference == "model-00:agent"
    # a model against itself: difference exactly 0 in every resample, p = 1
    dup = pd.concat([small, small[small.model == "model-00"].assign(model="copy")])
    self_cmp = compare.compare(dup, "model-00", n_boot=50, models=["copy"]).to_pandas()
    assert (self_cmp.value == 0).all() and (self_cmp.ci_low == 0).all() and (self_cmp.p_value == 1).all()


def test_fisher_and_mcnemar_against_scipy():
    odds, p = inference.fisher_exact(3, 10, 9, 12)
    # hand: hypergeometric two-sided p from scipy's distribution (independent path)
    table_p = sps.hypergeom(22, 12, 10).pmf(np.arange(0, 11))
    obs = sps.hypergeom(22, 12, 10).pmf(3)
    assert p == pytest.approx(table_p[table_p <= obs * (1 + 1e-7)].sum())
    a = np.array([1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1, 1], bool)
    b = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0], bool)
    n01, n10, p = inference.mcnemar_exact(a, b)
    assert (n01, n10) == (6, 1)
    assert p == pytest.approx(sps.binomtest(1, 7, 0.5).pvalue)


def test_bh_and_bonferroni():
    from statsmodels.stats.multitest import multipletests

    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205]
    rej, q = inference.benjamini_hochberg(p)
    assert np.allclose(q, multipletests(p, method="fdr_bh")[1])
    # by hand: q_i = min_{j>=i} p_j * m / j
    m = len(p)
    hand = np.minimum.accumulate([p[i] * m / (i + 1) for i in range(m)][::-1])[::-1]
    assert np.allclose(q, np.minimum(hand, 1))
    assert rej == [bool(x <= 0.05) for x in q]
    thr, sig = inference.bonferroni([0.001, 0.002, 0.01], 0.05)
    assert thr == pytest.approx(0.05 / 3) and sig == [True, True, True]
    assert inference.bonferroni([0.001, 0.03], 0.05)[1] == [True, False]
    rows = inference.adjust_families([{"family": "a", "p": 0.01}, {"family": "a", "p": 0.04},
                                      {"family": "b", "p": 0.04}])
    assert rows[1]["q"] == pytest.approx(0.04) and rows[2]["q"] == pytest.approx(0.04)
    assert rows[0]["q"] == pytest.approx(0.02)


def test_tost_and_chance_and_seeds():
    rng = np.random.default_rng(0)
    eq = inference.tost(0.0, rng.normal(0, 0.01, 4000), 0.05)
    assert eq.equivalent and eq.p < 0.01
    ne = inference.tost(0.04, rng.normal(0.04, 0.02, 4000), 0.05)
    assert not ne.equivalent and ne.ci90_high > 0.05
    # 60 binary items (k=2) and 40 four-option items: baseline = mean(1/k) = (60*.5 + 40*.25)/100
    k = np.r_[np.full(60, 2), np.full(40, 4)]
    correct = rng.random(100) < 0.8
    res = inference.accuracy_vs_chance(correct, k, [f"c{i // 2}" for i in range(100)], n_boot=500)
    assert res.baseline == pytest.approx(0.4) and res.p_bootstrap < 0.01 and res.p_binomial < 0.01
    blind = inference.accuracy_vs_chance(np.r_[np.ones(1), np.zeros(99)], k, [str(i) for i in range(100)], n_boot=200)
    assert blind.p_bootstrap == 1.0 and blind.p_binomial > 0.99
    assert inference.seeds_summary([0.741, 0.76, 0.722]) == pytest.approx((0.741, np.std([0.741, 0.76, 0.722], ddof=1)))


def test_logistic_regression_clusters_duplicated_cases():
    import statsmodels.api as sm

    rng = np.random.default_rng(1)
    x = rng.normal(size=300)
    y = (rng.random(300) < 1 / (1 + np.exp(-(0.3 + 1.2 * x)))).astype(float)
    single = inference.logistic_clustered(y, pd.DataFrame({"x": x}), np.arange(300))
    logit = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
    assert np.allclose(single["coef"].to_numpy(), logit.params, atol=1e-6)
    # every case twice: same coefficients; clustering by case keeps the SE near the single-copy one,
    # while treating the copies as independent would shrink it by ~sqrt(2)
    dup = inference.logistic_clustered(np.r_[y, y], pd.DataFrame({"x": np.r_[x, x]}), np.r_[np.arange(300)] .tolist() * 2)
    assert np.allclose(dup["coef"], single["coef"], atol=1e-6)
    naive = sm.Logit(np.r_[y, y], sm.add_constant(np.r_[x, x])).fit(disp=0).bse[1]
    assert dup["se"].iloc[1] == pytest.approx(single["se"].iloc[1], rel=0.02)
    assert dup["se"].iloc[1] > 1.3 * naive
    assert dup["ci_low"].iloc[1] < dup["coef"].iloc[1] < dup["ci_high"].iloc[1]


def test_label_noise_panel_flags_and_removes_disputed_negatives(small):
    df = small.copy()
    neg_cases = sorted(df[df.kind == "natural_negative"].case_id.unique())
    target = neg_cases[0]
    for m in ("model-00", "model-01", "model-02"):
        sel = (df.model == m) & (df.case_id == target)
        df.loc[sel, "action"], df.loc[sel, "claims_finding"] = "answer", True
    others = neg_cases[1:]
    sel = df.case_id.isin(others) & (df.kind == "natural_negative")
    df.loc[sel & (df.model != "model-00"), "claims_finding"] = False
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    flagged = labelnoise.disputed_cases(table, ["model-00", "model-01", "model-02"], min_votes=3)
    assert flagged == [target]
    rest = labelnoise.without_cases(table, flagged)
    assert target not in set(rest.column("case_id").to_pylist()) and rest.num_rows == table.num_rows - 3


def test_seed_pairs_and_equivalence(small):
    df = small.copy()
    twin = df[df.model == "model-01"].assign(model="model-01-twin")
    both = pd.concat([df, twin])
    out = compare.seed_pairs(both, [("model-01", "model-00"), ("model-02", "model-00")], n_boot=100).to_pandas()
    assert set(out.model) == {"model-01", "model-02"} and (out.reference == "model-00:agent").all()
    eq = compare.equivalence(both, "model-01-twin", "model-01", "net_utility", 0.05, n_boot=100)
    assert eq.diff == 0 and eq.equivalent and eq.ci90_low == 0 == eq.ci90_high
    far = compare.equivalence(both, "model-02", "model-00", "esg", 0.05, n_boot=300)
    m = metrics.compute(small, n_boot=0).to_pandas()
    val = lambda mod: m[(m.model == mod) & (m.metric == "esg") & (m.breakdown == "all")].value.iloc[0]  # noqa: E731
    assert far.diff == pytest.approx(val("model-02") - val("model-00"))
    assert far.equivalent == (far.ci90_low > -0.05 and far.ci90_high < 0.05)
    from pipelines.score import format_comparisons

    text = format_comparisons(compare.compare(small, "model-00", n_boot=100).to_pandas(), adjust="bh")
    assert "q=" in text and "family of 10 comparisons, bh" in text


def test_metric_table_intervals_equal_percentiles_of_the_slow_loop(small):
    b = 60
    table = metrics.compute(small, n_boot=b, seed=42, breakdowns=()).to_pandas()
    case_ids = np.unique(small.case_id.astype(str))
    idx = bs.resample_indices(len(case_ids), b, 42)
    rows = small[small.model == "model-01"].to_dict("records")
    by_case = {c: [r for r in rows if r["case_id"] == c] for c in case_ids}
    for name in ("esg", "net_utility", "healthy_claims"):
        slow = np.array([slow_metric([v for i in idx[r] for v in by_case[case_ids[i]]], name) for r in range(b)])
        lo, hi = np.percentile(slow[~np.isnan(slow)], [2.5, 97.5])
        got = table[(table.model == "model-01") & (table.metric == name)].iloc[0]
        assert got.ci_low == pytest.approx(lo, abs=1e-12) and got.ci_high == pytest.approx(hi, abs=1e-12)
