"""Paired model comparisons over shared cases (counterfactual paper §3.9, Table 6).

For each model against a reference, on the cases both were run on (and of those, the views
both have: a view without an episode on one side is left out of both), every metric's difference
(model - reference), its percentile interval and p = twice the smaller tail proportion are taken
from one set of resampled cases shared by both models (and by every metric), so the pairing of
views within a case is kept. The rows have the metrics-table schema with ``reference`` set.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.analysis import exact, view_metrics as mt
from medscope.stats import bootstrap as bs

PRIMARY = ("esg", "erased_claims", "healthy_claims", "ccr", "net_utility")


DIRECTIONS = ("model", "paper")


def orient(df: pd.DataFrame, direction: str = "model") -> pd.DataFrame:
    """Comparison rows in the orientation asked for. ``model``: model − reference, as computed;
    ``paper``: reference − model, Table 6's "MedScope-4B minus each model" (value and interval
    negated, the interval's ends swapped; p and n unchanged: the test is the same).

    Parameters
    ----------
    df : pandas.DataFrame
        Comparison rows (metrics schema with ``reference`` set), model − reference.
    direction : {'model', 'paper'}
        The orientation wanted.

    Returns
    -------
    pandas.DataFrame
        ``df`` itself for 'model' (or when empty); a negated copy for 'paper'.

    Raises
    ------
    MedScopeError
        When ``direction`` is neither.

    References
    ----------
    .. [1] counterfactual paper, Table 6.
    """
    if direction not in DIRECTIONS:
        raise MedScopeError(f"direction {direction!r}: choose model (model − reference) or paper (reference − model)")
    if direction == "model" or df.empty:
        return df
    out = df.copy()
    out["value"], out["ci_low"], out["ci_high"] = -df["value"], -df["ci_high"], -df["ci_low"]
    return out


def pool_models(scores: pd.DataFrame, pools: dict[str, list[str]]) -> pd.DataFrame:
    """``scores`` plus each pool's seeds relabelled as one model (counterfactual paper §3.7 C4, Table 8's
    "pooled over seeds"): a case keeps every seed's views, so the case bootstrap resamples them
    together and a pooled comparison stays paired by case.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table.
    pools : dict of str to list of str
        Pool name -> the models pooled under it.

    Returns
    -------
    pandas.DataFrame
        ``scores`` with, appended, each pool's members' rows under the pool's name.

    Raises
    ------
    MedScopeError
        When a member has no scores, or a pool's name is already a scored model.

    References
    ----------
    .. [1] counterfactual paper, §3.7 (C4), Table 8.
    """
    parts = [scores]
    for name, members in pools.items():
        missing = sorted(set(members) - set(scores["model"]))
        if missing:
            raise MedScopeError(f"pool {name}: no scores for {missing}")
        if name in set(scores["model"]):
            raise MedScopeError(f"pool {name}: a model of that name is already scored")
        parts.append(scores[scores["model"].isin(members)].assign(model=name))
    return pd.concat(parts, ignore_index=True)


def parse_pools(specs: list[str] | None) -> dict[str, list[str]]:
    """``["cmcc=cmcc_s0,cmcc_s1,cmcc_s2", ...]`` -> {name: members}.

    Parameters
    ----------
    specs : list of str or None
        ``"NAME=MODEL1,MODEL2,..."`` each (the ``--pool`` options).

    Returns
    -------
    dict of str to list of str
        Pool name -> member models (blank names dropped); empty for None.

    Raises
    ------
    MedScopeError
        When a spec has no name or no members.
    """
    out = {}
    for spec in specs or []:
        name, _, members = spec.partition("=")
        if not name or not members:
            raise MedScopeError(f"pool {spec!r}: use NAME=MODEL_SEED0,MODEL_SEED1,...")
        out[name] = [m.strip() for m in members.split(",") if m.strip()]
    return out


def parse_reference(reference: str) -> tuple[str, str | None]:
    """``"MODEL"`` or ``"MODEL:CONDITION"`` -> (model, condition).

    Parameters
    ----------
    reference : str
        The reference as ``--reference`` names it.

    Returns
    -------
    model : str
        The text before the first ``:``.
    condition : str or None
        The text after it; None when there is none.
    """
    model, _, cond = reference.partition(":")
    return model, cond or None


def paired_samples(df: pd.DataFrame, a: tuple[str, str], b: tuple[str, str], n_boot: int, seed: int,
                   breakdowns=(), cluster: str = "case_id", with_counts: bool = False):
    """Point values and ``[B, G, M]`` resampled metrics of a and b on their shared cases, each
    side read on the views both have.

    Returns (groups, point_a, point_b, samples_a, samples_b, n_shared_cases).

    Parameters
    ----------
    df : pandas.DataFrame
        Scores rows of one test set.
    a, b : tuple of (str, str)
        (model, condition) of the two sides.
    n_boot : int
        Resamples B.
    seed : int
        Seed of the resamples.
    breakdowns : iterable of str
        Breakdown dimensions (``view_metrics.BREAKDOWNS``); default none: ``"all"`` only.
    cluster : str
        The column resampled: ``"case_id"``, ``"group_id"`` or ``"patient_id"``.
    with_counts : bool, optional
        Also return each side's ratios as text (``view_metrics.metric_counts``), ``[G][M]`` each.

    Returns
    -------
    groups : list of str
        The breakdown groups both sides have (``"all"``, ``"<dim>=<group>"``), sorted.
    point_a, point_b : numpy.ndarray
        ``[G, M]`` metric values on the shared cases, M = ``len(view_metrics.METRICS)``.
    samples_a, samples_b : numpy.ndarray
        ``[B, G, M]`` resampled values, both sides on the same resamples.
    n_shared_cases : int
        Cases both sides were run on.
    counts_a, counts_b : list of list of (str or None)
        With ``with_counts`` only: each side's ratios per group and metric.

    Raises
    ------
    MedScopeError
        When the two share no case, or ``cluster`` is not a scores column.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    pa_ = df[(df["model"] == a[0]) & (df["condition"] == a[1])]
    pb_ = df[(df["model"] == b[0]) & (df["condition"] == b[1])]
    # paired over the views both sides have: a view one side lacks (a missing episode, an
    # unclear reading) would otherwise move one side's numbers and show a difference between
    # identical decisions
    both_views = np.intersect1d(pa_["view_id"].astype(str).unique(), pb_["view_id"].astype(str).unique())
    pa_ = pa_[pa_["view_id"].astype(str).isin(both_views)]
    pb_ = pb_[pb_["view_id"].astype(str).isin(both_views)]
    shared = np.intersect1d(pa_["case_id"].astype(str).unique(), pb_["case_id"].astype(str).unique())
    if len(shared) == 0:
        raise MedScopeError(f"{a[0]} and {b[0]} share no cases")
    both = pd.concat([pa_.assign(model="A", condition="x"), pb_.assign(model="B", condition="x")])
    stats = mt.sufficient_stats(both, breakdowns, case_ids=shared)
    groups = sorted({k[2] for k in stats.keys})
    ia = [stats.index(("A", "x", g)) if ("A", "x", g) in stats.keys else None for g in groups]
    ib = [stats.index(("B", "x", g)) if ("B", "x", g) in stats.keys else None for g in groups]
    keep = [i for i, (x, y) in enumerate(zip(ia, ib)) if x is not None and y is not None]
    groups = [groups[i] for i in keep]
    ia, ib = [ia[i] for i in keep], [ib[i] for i in keep]
    point = mt.metric_values(stats.num.sum(0), stats.den.sum(0))
    codes, n_cl = mt._cluster_map(both, stats.case_ids, cluster)
    samples = mt.bootstrap_metric_samples(stats, n_boot, seed, None if cluster == "case_id" else codes, n_cl)
    if with_counts:  # each side's ratios on the shared views, for the exact difference
        counts = mt.metric_counts(stats.num.sum(0), stats.den.sum(0))
        return (groups, point[ia], point[ib], samples[:, ia], samples[:, ib], len(shared),
                [counts[i] for i in ia], [counts[i] for i in ib])
    return groups, point[ia], point[ib], samples[:, ia], samples[:, ib], len(shared)


def compare(scores: pa.Table | pd.DataFrame, reference: str, n_boot: int = bs.DEFAULT_B,
            seed: int = bs.DEFAULT_SEED, metric_names=PRIMARY, breakdowns=(), cluster: str = "case_id",
            models: list[str] | None = None, pools: dict[str, list[str]] | None = None) -> pa.Table:
    """Every model (or ``models``) minus ``reference`` ("MODEL" or "MODEL:CONDITION"), per test set;
    ``pools`` adds seed-pooled models first (``pool_models``).

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table; rows without a ``test_set`` are read as ``"main"``.
    reference : str
        ``"MODEL"`` or ``"MODEL:CONDITION"``; without a condition, each model's condition is compared
        with the reference's same condition when it has it, else the reference's first. With a
        condition, the reference model's other conditions are compared with it as well (``m:agent``
        minus ``m:blind``: does the model read the image?).
    n_boot : int
        Resamples B (default 2000).
    seed : int
        Seed of the resamples (default 42).
    metric_names : iterable of str
        Metrics compared (``view_metrics.METRICS`` names); default ``PRIMARY``.
    breakdowns : iterable of str
        Breakdown dimensions; default none (``"all"`` only).
    cluster : str
        The column resampled: ``"case_id"``, ``"group_id"`` or ``"patient_id"``.
    models : list of str, optional
        The models compared; default every model but the reference.
    pools : dict of str to list of str, optional
        Seed-pooled models to add first (``pool_models``).

    Returns
    -------
    pyarrow.Table
        A ``metrics`` table of differences: ``value`` (model - reference), ``ci_low``, ``ci_high``,
        ``p_value``, ``n_cases`` (shared cases), ``reference`` ``"MODEL:CONDITION"``; a difference
        that is undefined is left out.

    Raises
    ------
    MedScopeError
        When the reference model or a metric is unknown, or a pool is invalid.

    References
    ----------
    .. [1] counterfactual paper, §3.9, Table 6.
    """
    df = scores.to_pandas(use_threads=False) if isinstance(scores, pa.Table) else scores.copy()
    if pools:
        df = pool_models(df, pools)
    df["test_set"] = df["test_set"].fillna("main")
    ref_model, ref_cond = parse_reference(reference)
    if ref_model not in set(df["model"]):
        raise MedScopeError(f"reference model {ref_model!r} is not in the scores; models: {', '.join(sorted(set(df['model'])))}")
    names = list(mt.METRICS)
    unknown = [m for m in metric_names if m not in names]
    if unknown:
        raise MedScopeError(f"unknown metric(s) {unknown}; known: {', '.join(names)}")
    rows = []
    for test_set, part in df.groupby("test_set", sort=True):
        ref_conds = sorted(set(part.loc[part["model"] == ref_model, "condition"]))
        if not ref_conds:
            continue
        for (model, cond), _ in part.groupby(["model", "condition"], sort=True):
            # with a reference condition, the reference model's other conditions are compared with it
            # too: sighted minus blind is what says whether a single model reads the image
            itself = model == ref_model and (ref_cond is None or cond == ref_cond)
            if itself or (models and model not in models):
                continue
            rc = ref_cond or (cond if cond in ref_conds else ref_conds[0])
            groups, pa_, pb_, sa, sb, n, ca, cb = paired_samples(part, (model, cond), (ref_model, rc), n_boot, seed,
                                                                breakdowns, cluster, with_counts=True)
            d = sa - sb
            lo, hi = bs.percentile_ci(d)
            p = bs.two_sided_p(d)
            for g_i, g in enumerate(groups):
                for name in metric_names:
                    j = names.index(name)
                    val = pa_[g_i, j] - pb_[g_i, j]
                    if not np.isfinite(val):
                        continue
                    rows.append({"model": model, "condition": cond, "test_set": str(test_set), "breakdown": g,
                                 "metric": name, "value": float(val), "ci_low": _f(lo[g_i, j]),
                                 "ci_high": _f(hi[g_i, j]), "n_cases": int(n), "reference": f"{ref_model}:{rc}",
                                 "p_value": _f(p[g_i, j]), "n_boot": int(n_boot),
                                 "counts": exact.difference(ca[g_i][j], cb[g_i][j])})
    return records.to_table("metrics", rows)


def _f(x):
    return float(x) if np.isfinite(x) else None


def seed_pairs(scores: pa.Table | pd.DataFrame, pairs: list[tuple[str, str]], n_boot: int = bs.DEFAULT_B,
               seed: int = bs.DEFAULT_SEED, metric_names=PRIMARY) -> pa.Table:
    """Per-seed paired comparisons (counterfactual paper §3.9): ``pairs`` = [(arm_seed0, baseline_seed0), ...].

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    pairs : list of tuple of (str, str)
        (model, reference) pairs, each compared with ``compare``.
    n_boot : int
        Resamples B of each comparison.
    seed : int
        Seed of the resamples.
    metric_names : iterable of str
        Metrics compared.

    Returns
    -------
    pyarrow.Table
        A ``metrics`` table: every pair's difference rows.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    df = scores.to_pandas(use_threads=False) if isinstance(scores, pa.Table) else scores
    parts = [compare(df, ref, n_boot, seed, metric_names, models=[model]).to_pandas(use_threads=False) for model, ref in pairs]
    return records.to_table("metrics", pd.concat(parts, ignore_index=True).to_dict("records"))


def arm_comparisons(scores: pa.Table | pd.DataFrame, reference: str, n_boot: int = bs.DEFAULT_B,
                    seed: int = bs.DEFAULT_SEED, metric_names=PRIMARY, cluster: str = "case_id") -> pa.Table:
    """Seed runs (``<arm>@seed<k>``, ``medscope.analysis.training_seeds``) against reference arm ``reference``:

    - per seed pair (§3.9: "each seed pair also compared by paired bootstrap"; §3.7 C4: "each
      pair from that seed's recipe adapter"): ``arm@seed<k>`` - ``reference@seed<k>`` for every
      arm and every seed both have, each on its own case bootstrap;
    - pooled (§3.7 C4: "the pooled interval"): every arm's seeds pooled as the model ``arm``
      (``pool_models``) minus the reference's seeds pooled, and every model that is no seed run
      (a base checkpoint, an API model) minus the pooled reference.

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table whose seed runs are named ``<arm>@seed<k>``.
    reference : str
        The reference arm (without ``@seed<k>``).
    n_boot : int
        Resamples B of each comparison.
    seed : int
        Seed of the resamples.
    metric_names : iterable of str
        Metrics compared.
    cluster : str
        The column resampled: ``"case_id"``, ``"group_id"`` or ``"patient_id"``.

    Returns
    -------
    pyarrow.Table
        A ``metrics`` table: the per-seed-pair rows, then the pooled rows.

    Raises
    ------
    MedScopeError
        When ``reference`` has no seed runs, or a plain model has an arm's name.

    References
    ----------
    .. [1] counterfactual paper, §3.7 (C4), §3.9.
    """
    from medscope.analysis import training_seeds as sd

    df = scores.to_pandas(use_threads=False) if isinstance(scores, pa.Table) else scores.copy()
    pools = sd.arm_pools(df["model"].unique())
    if reference not in pools:
        raise MedScopeError(f"reference arm {reference!r} has no seed runs ({reference}@seed<k>); arms: {', '.join(pools) or 'none'}")
    ref_seeds = {sd.arm_and_seed(m)[1]: m for m in pools[reference]}
    pairs = [(m, ref_seeds[sd.arm_and_seed(m)[1]]) for arm, members in pools.items() if arm != reference
             for m in members if sd.arm_and_seed(m)[1] in ref_seeds]
    parts = [compare(df, ref, n_boot, seed, metric_names, cluster=cluster, models=[model]).to_pandas(use_threads=False) for model, ref in pairs]
    plain = sorted(m for m in df["model"].unique() if sd.arm_and_seed(m)[1] is None)
    pooled_models = [a for a in pools if a != reference] + plain
    if pooled_models:
        parts.append(compare(df, reference, n_boot, seed, metric_names, cluster=cluster, models=pooled_models,
                             pools=pools).to_pandas(use_threads=False))
    rows = pd.concat(parts, ignore_index=True).to_dict("records") if parts else []
    return records.to_table("metrics", rows)


def equivalence(scores: pa.Table | pd.DataFrame, model: str, reference: str, metric: str, margin: float = 0.05,
                n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED, condition: str = "agent",
                condition_reference: str | None = None):
    """TOST of model - reference on ``metric`` against +-margin (benchmark-MCQ paper: 90% interval inside).

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    model, reference : str
        The two models, compared under the same ``condition`` on their shared cases.
    metric : str
        A ``view_metrics.METRICS`` name.
    margin : float
        Equivalence margin, in the metric's units.
    n_boot : int
        Resamples B.
    seed : int
        Seed of the resamples.
    condition : str
        The evaluation condition of both (of ``model`` when ``condition_reference`` is given).
    condition_reference : str, optional
        The reference's condition, when it is not ``model``'s (``m:agent`` against ``m:blind``).

    Returns
    -------
    Tost
        The 90% interval of the difference, whether it lies inside (-margin, +margin), and the TOST p.

    Raises
    ------
    MedScopeError
        When the two share no case, or every resample is NaN.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    from medscope.stats import inference

    df = scores.to_pandas(use_threads=False) if isinstance(scores, pa.Table) else scores
    _, pa_, pb_, sa, sb, _ = paired_samples(df, (model, condition), (reference, condition_reference or condition),
                                            n_boot, seed)
    j = list(mt.METRICS).index(metric)
    return inference.tost(float(pa_[0, j] - pb_[0, j]), sa[:, 0, j] - sb[:, 0, j], margin)
