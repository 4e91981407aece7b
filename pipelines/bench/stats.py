"""``medscope bench stats``: the vectorised case bootstrap against the obvious per-resample loop."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from medscope.protocols.counterfactual import costs, rewards
from medscope.analysis import view_metrics as metrics
from medscope.stats import bootstrap as bs

TARGET = 20.0  # the target: the vectorised bootstrap at least 20x the naive loop (CPU seconds)


def bench_stats(args) -> None:
    """2,000 case-clustered resamples of every metric for 16 models on the 1,115-view layout.

    Runs in a child process pinned to one BLAS thread, so the figure is a one-core figure.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``quick`` (200 resamples instead of 2,000).

    Raises
    ------
    subprocess.CalledProcessError
        When the child fails, also when the vectorised bootstrap differs from the loop.
    """
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = f"from pipelines.bench.stats import _bench_body; _bench_body({bool(getattr(args, 'quick', False))})"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def _bench_body(quick: bool) -> None:
    import numpy as np

    from medscope.testing import synthetic_runs as synthetic

    n_boot = 200 if quick else 2000
    views = synthetic.views(219, 288, 170, seed=0)
    episodes = synthetic.episodes(views, synthetic.model_zoo(16), seed=0)
    scores, _ = rewards.score_episodes(episodes, views, costs.load())
    df = scores.to_pandas(use_threads=False)
    stats = metrics.sufficient_stats(df)
    n_cases, n_cols = stats.num.shape
    print(f"bench stats: {views.num_rows} views, {n_cases} cases, 16 models, {len(stats.keys)} model x group keys, "
          f"{len(metrics.METRICS)} metrics ({n_cols} ratio terms), B={n_boot}, 1 BLAS thread; "
          f"load average {os.getloadavg()[0]:.2f} at start")

    t0, c0 = time.perf_counter(), time.process_time()
    idx = bs.resample_indices(n_cases, n_boot, 42)
    counts = bs.counts_from_indices(idx, n_cases)
    fast = np.moveaxis(metrics.ratios_to_metrics(bs.ratio_samples(stats.num, stats.den, counts).T, axis=0), -1, 0)
    lo, hi = bs.percentile_ci(fast)
    t_fast, c_fast = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    slow = np.empty_like(fast)
    for b in range(n_boot):  # the obvious loop: gather the resampled cases, sum, divide
        rows = idx[b]
        slow[b] = metrics.metric_values(stats.num[rows].sum(0), stats.den[rows].sum(0))
    lo2, hi2 = bs.percentile_ci(slow)
    t_slow, c_slow = time.perf_counter() - t0, time.process_time() - c0
    ok = ~np.isnan(slow)
    same_nan = bool(np.array_equal(np.isnan(fast), np.isnan(slow)))
    max_diff = float(np.max(np.abs(fast - slow)[ok], initial=0.0))
    identical = float(np.mean(fast[ok] == slow[ok])) if ok.any() else 1.0
    ratio = c_slow / c_fast
    print(f"  vectorised (blocked count matrix @ per-case sums): {t_fast:.2f} s wall, {c_fast:.2f} s CPU")
    print(f"  naive per-resample loop:                           {t_slow:.2f} s wall, {c_slow:.2f} s CPU")
    print(f"  same resampled metrics: undefined in the same resamples {same_nan}; {identical:.1%} bit-identical, "
          f"max |difference| {max_diff:.1e} (bound 1e-12)")
    print(f"  ratio: {t_slow / t_fast:.1f}x wall, {ratio:.1f}x CPU (target >= {TARGET:.0f}x CPU): "
          f"{'met' if ratio >= TARGET else 'NOT met'}")
    print("  (both sides include the same percentile intervals; CPU seconds of one thread, so the ratio holds "
          "on a loaded machine better than wall time)")
    if not (same_nan and max_diff <= 1e-12):
        raise SystemExit("bench stats: the vectorised bootstrap differs from the loop")
