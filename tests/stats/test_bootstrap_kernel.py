"""The blocked count-matrix bootstrap kernel against the plain per-resample loop (counterfactual paper §3.9).

The plain loop gathers the drawn clusters of each resample and sums them; the kernel must give
the same resampled statistics: bit for bit where the sums are integers (counts and indicator
terms, multiplied in float32), to 1e-12 where they are not (rewards, multiplied in float64).
"""

from __future__ import annotations

import numpy as np
import pytest

from medscope.protocols.counterfactual import costs, rewards
from medscope.analysis import view_metrics as metrics
from medscope.testing import synthetic_runs as synthetic
from medscope.stats import bootstrap as bs


@pytest.fixture(scope="module")
def table():
    v = synthetic.views(14, 10, 6, seed=5)
    e = synthetic.episodes(v, synthetic.model_zoo(3, seed=4), seed=5)
    s, _ = rewards.score_episodes(e, v, costs.load("table2"))
    return s.to_pandas()


def loop_ratios(num, den, idx):
    """The obvious loop: per resample, gather the drawn clusters, sum, divide."""
    out = np.empty((idx.shape[0], num.shape[1]))
    with np.errstate(invalid="ignore", divide="ignore"):
        for b in range(idx.shape[0]):
            out[b] = num[idx[b]].sum(0) / den[idx[b]].sum(0)
    return out


def assert_same(got, ref, integral):
    assert got.shape == ref.shape
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    exact_cols = np.broadcast_to(integral, ref.shape)
    assert np.array_equal(got[ok & exact_cols], ref[ok & exact_cols])  # identical, not close
    assert np.max(np.abs(got - ref)[ok], initial=0.0) <= 1e-12


def test_case_bootstrap_equals_the_loop(table):
    stats = metrics.sufficient_stats(table)
    n = len(stats.case_ids)
    idx = bs.resample_indices(n, 60, 42)
    got = bs.ratio_samples(stats.num, stats.den, bs.counts_from_indices(idx, n))
    integral = (stats.num == np.round(stats.num)).all(0)
    assert integral.any() and not integral.all()  # both paths (float32 and float64) are exercised
    assert_same(got, loop_ratios(stats.num, stats.den, idx), integral)


def test_group_bootstrap_goes_through_the_same_kernel(table):
    stats = metrics.sufficient_stats(table, breakdowns=())
    codes, n_groups = metrics._cluster_map(table, stats.case_ids, "group_id")
    assert n_groups < len(stats.case_ids)
    idx = bs.resample_indices(n_groups, 50, 7)
    got = metrics.bootstrap_metric_samples(stats, 50, 7, codes, n_groups)  # [B, K, M]
    # the loop resamples groups and sums every case of each drawn group, straight from the cases
    members = [np.flatnonzero(codes == g) for g in range(n_groups)]
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.stack([metrics.metric_values(
            sum(stats.num[members[g]].sum(0) for g in idx[b]),
            sum(stats.den[members[g]].sum(0) for g in idx[b])) for b in range(50)])
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.nanmax(np.abs(got - ref)) <= 1e-12


def test_paired_differences_are_on_the_same_resamples(table):
    stats = metrics.sufficient_stats(table, breakdowns=())
    n, b = len(stats.case_ids), 80
    idx = bs.resample_indices(n, b, 3)
    samples = metrics.bootstrap_metric_samples(stats, b, 3)
    j = list(metrics.METRICS).index("ccr")
    ka, kb = 0, next(k for k, key in enumerate(stats.keys) if key[0] != stats.keys[0][0])
    with np.errstate(invalid="ignore", divide="ignore"):
        loop = np.stack([metrics.metric_values(stats.num[idx[r]].sum(0), stats.den[idx[r]].sum(0))
                         for r in range(b)])
    d_loop = loop[:, ka, j] - loop[:, kb, j]
    d_kernel = samples[:, ka, j] - samples[:, kb, j]
    assert np.array_equal(d_kernel, d_loop)  # ccr is an indicator ratio: identical
    point = metrics.metric_values(stats.num.sum(0), stats.den.sum(0))
    res = bs.paired(point[ka, j], point[kb, j], samples[:, ka, j], samples[:, kb, j])
    lo, hi = np.percentile(d_loop, [2.5, 97.5])
    assert res.ci_low == pytest.approx(lo, abs=1e-12) and res.ci_high == pytest.approx(hi, abs=1e-12)
    assert res.p == pytest.approx(min(1.0, 2 * min((d_loop <= 0).mean(), (d_loop >= 0).mean())))


def test_float32_only_where_exact():
    rng = np.random.default_rng(0)
    den = rng.integers(0, 3, size=(40, 4)).astype(float)
    num = np.stack([den[:, 0],  # small integers: float32
                    den[:, 1] * 3_000_000.0,  # integers too large for float32 sums: float64
                    den[:, 2] * 0.1,  # not integers: float64
                    den[:, 3]], 1)
    assert bs.exact_in_float32(num).tolist() == [True, False, False, True]
    idx = bs.resample_indices(40, 30, 1)
    got = bs.ratio_samples(num, den, bs.counts_from_indices(idx, 40))
    assert_same(got, loop_ratios(num, den, idx), np.array([True, True, False, True]))


def test_a_numerator_outside_its_denominator_is_still_summed():
    den = np.array([[1.0], [0.0], [2.0]])
    num = np.array([[1.0], [5.0], [0.0]])  # cluster 1 has a numerator but no denominator
    idx = np.array([[1, 1, 0], [1, 1, 1], [2, 0, 2]])
    got = bs.ratio_samples(num, den, bs.counts_from_indices(idx, 3))
    assert got[:, 0][0] == 11.0 and np.isinf(got[1, 0]) and got[2, 0] == pytest.approx(1 / 5)


def test_percentile_interval_matches_numpy_with_undefined_resamples():
    rng = np.random.default_rng(2)
    s = rng.normal(size=(500, 3))
    s[:123, 1] = np.nan  # a thin subgroup: 377 defined resamples
    s[:, 2] = np.nan  # never defined
    lo, hi = bs.percentile_ci(s)
    assert lo[0] == pytest.approx(np.percentile(s[:, 0], 2.5), abs=1e-14)
    assert hi[1] == pytest.approx(np.nanpercentile(s[:, 1], 97.5), abs=1e-14)
    assert np.isnan(lo[2]) and np.isnan(hi[2])
