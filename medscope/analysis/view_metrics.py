"""Metrics of the counterfactual paper §3.8 from a scores table, with case-clustered bootstrap intervals (§3.9).

Every metric is a signed sum of ratio *terms*; a term is (per-view numerator indicator,
per-view denominator indicator). With O, T, R, N, D the original, target-removal,
random-removal, natural-negative and degraded views (the only evaluation kinds:
``medscope.analysis.testsets.EVAL_KINDS``; a scores table never holds the training-only kinds,
and they would count in no denominator here if it did):

- esg = P(absent answer or refer | T) - P(absent answer or refer | R)
- strict_esg: the same with explicit absent answers only
- ccr = P(correct | O u R) (the answerable views; Table 5: "CCR over the 438 original and
  random-removal views"; C3's "sensitivity on unedited lesions", Table 8's "CCR (unedited
  lesions)"); sensitivity = P(correct | O) (addition: original views only, not a paper metric)
- erased_claims = P(claims | T); healthy_claims = P(claims | N)
- grounded_accuracy = P(correct with IoU >= threshold, box not oversized | O)
- clarify_rate = P(clarify | D)
- net_utility = mean reward over O u T u R u N u D (all views of the test set, §3.8);
  net_utility_no_degraded = mean reward over O u T u R u N (§5.5, "without the degraded views")
- control_denial = P(absent answer or refer | R) (Table 10 "Denial"); referral_rate =
  P(refer | O u R); unparseable_rate over O u T u R u N u D.

Selective prediction (``medscope.analysis.selective_risk``), with the same resampled clusters:

- ``selective_risk@c`` and ``aurc``: §5.5's figures, on the answerable views O u R ranked by
  stated confidence, ties in table order. On this view set a constant "always claims the
  finding" policy is never wrong (risk 0, the best possible AURC), which is why the paper does
  not rank models by it; these rows reproduce the paper's numbers only.
- ``decision_risk@c`` and ``decision_aurc`` (an addition, not in the paper): the same curve on
  every view that expects an answer (O u T u R u N), with ties averaged over their orderings.
  There a constant policy's curve is flat at its error rate (always claim: |T u N| / |O u T u R
  u N|; always absent: |O u R| / ...; refer or clarify: 1), so no constant policy looks better
  than its own chance-level error, on any data.

Breakdowns: imaging type, lesion-size quartile, asked finding, source (Table 15, §5.6), and
erasure tool (Table 12; T and R views only, grouped by the tool that made the edit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.analysis import selective_risk as selective
from medscope.stats import bootstrap as bs
from medscope.analysis.testsets import EVAL_KINDS

ANSWERABLE = ("original", "random_removal")  # §3.8: CCR is over O u R
DECISION = ("original", "target_removal", "random_removal", "natural_negative")  # views expecting an answer
TERMS = (
    "absref_T", "absref_R", "abs_T", "abs_R", "correct_A", "correct_O", "claims_T", "claims_N",
    "grounded_O", "clarify_D", "reward_all", "refer_A", "unparse_all", "reward_noD",
)
METRICS: dict[str, tuple[tuple[int, str], ...]] = {
    "esg": ((1, "absref_T"), (-1, "absref_R")),
    "strict_esg": ((1, "abs_T"), (-1, "abs_R")),
    "ccr": ((1, "correct_A"),),
    "sensitivity": ((1, "correct_O"),),  # addition: O only; C3's endpoint is ccr
    "erased_claims": ((1, "claims_T"),),
    "healthy_claims": ((1, "claims_N"),),
    "grounded_accuracy": ((1, "grounded_O"),),
    "clarify_rate": ((1, "clarify_D"),),
    "net_utility": ((1, "reward_all"),),
    "net_utility_no_degraded": ((1, "reward_noD"),),
    "control_denial": ((1, "absref_R"),),
    "referral_rate": ((1, "refer_A"),),
    "unparseable_rate": ((1, "unparse_all"),),
}
BREAKDOWNS = ("imaging_type", "size_quartile", "finding", "source", "tool")
EDIT_KINDS = ("target_removal", "random_removal")  # the views a tool breakdown groups
COVERAGES = (1.0, 0.7)


def view_terms(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per-view numerators and denominators of every term: two ``[n_views, len(TERMS)]`` arrays.

    Parameters
    ----------
    df : pandas.DataFrame
        Scores rows: ``kind``, ``action``, ``claims_finding``, ``correct``, ``grounded``, ``reward``.

    Returns
    -------
    num : numpy.ndarray
        float ``[n_views, len(TERMS)]``: each term's numerator (an indicator, or the reward), zero
        wherever its denominator is.
    den : numpy.ndarray
        float ``[n_views, len(TERMS)]``: 1 where the view is in the term's denominator, else 0.

    References
    ----------
    .. [1] counterfactual paper, §3.8.
    """
    kind = df["kind"].to_numpy(dtype=object)
    action = df["action"].to_numpy(dtype=object)
    answered = action == "answer"
    claims = answered & df["claims_finding"].fillna(False).to_numpy(dtype=bool)
    absent = answered & ~claims
    refer = action == "refer"
    correct = df["correct"].to_numpy(dtype=bool)
    is_ = {k: kind == k for k in ("original", "target_removal", "random_removal", "natural_negative", "degraded")}
    ans = np.isin(kind, ANSWERABLE)
    evaluated = np.isin(kind, EVAL_KINDS)  # net utility: the test set's five kinds, nothing else
    no_d = np.isin(kind, DECISION)
    pairs = {
        "absref_T": (absent | refer, is_["target_removal"]),
        "absref_R": (absent | refer, is_["random_removal"]),
        "abs_T": (absent, is_["target_removal"]),
        "abs_R": (absent, is_["random_removal"]),
        "correct_A": (correct, ans),
        "correct_O": (correct, is_["original"]),
        "claims_T": (claims, is_["target_removal"]),
        "claims_N": (claims, is_["natural_negative"]),
        "grounded_O": (df["grounded"].to_numpy(dtype=bool), is_["original"]),
        "clarify_D": (action == "clarify", is_["degraded"]),
        "reward_all": (df["reward"].to_numpy(dtype=float), evaluated),
        "refer_A": (refer, ans),
        "unparse_all": (action == "unparseable", evaluated),
        "reward_noD": (df["reward"].to_numpy(dtype=float), no_d),
    }
    den = np.stack([pairs[t][1] for t in TERMS], axis=1).astype(float)
    num = np.stack([np.asarray(pairs[t][0], dtype=float) for t in TERMS], axis=1) * den
    return num, den


def size_quartiles(df: pd.DataFrame) -> pd.Series:
    """``Q1``..``Q4`` of lesion area over the lesion cases of the table; None for lesion-free cases.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows with ``case_id`` and ``lesion_area_frac`` (a case's area: its views' largest; NaN read as 0).

    Returns
    -------
    pandas.Series
        Per row, ``"Q1"`` to ``"Q4"`` by the quartiles of the lesion cases' areas (a case at a cut
        falls in the lower quartile); None for a case with area 0. Aligned to ``df``'s index.
    """
    area = df["lesion_area_frac"].fillna(0.0).astype(float)
    per_case = area.groupby(df["case_id"]).max()
    lesion = per_case[per_case > 0]
    out = pd.Series([None] * len(df), index=df.index, dtype=object)
    if lesion.empty:
        return out
    cuts = np.quantile(lesion.to_numpy(), [0.25, 0.5, 0.75])
    q = np.searchsorted(cuts, per_case.to_numpy(), side="left") + 1
    label = pd.Series([f"Q{i}" for i in q], index=per_case.index).where(per_case > 0, None)
    return df["case_id"].map(label)


@dataclass
class SufficientStats:
    """Per-case sums of every term for every (model, condition, breakdown) key."""

    case_ids: np.ndarray  # [C]
    keys: list[tuple[str, str, str]]  # (model, condition, breakdown)
    num: np.ndarray  # [C, K * len(TERMS)]
    den: np.ndarray

    def column(self, key_index: int, term: str) -> int:
        return key_index * len(TERMS) + TERMS.index(term)

    def index(self, key: tuple[str, str, str]) -> int:
        return self.keys.index(key)


def sufficient_stats(scores: pd.DataFrame, breakdowns=BREAKDOWNS, case_ids=None) -> SufficientStats:
    """Per-case term sums for every model x condition, overall and per breakdown group.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table (one test set): the ``view_terms`` columns, ``case_id``, ``model``,
        ``condition`` and the breakdown columns.
    breakdowns : iterable of str
        Of ``BREAKDOWNS``; a column the table lacks is skipped. ``tool`` groups the T and R views only.
    case_ids : array_like of str, optional
        The cases, in the order of the statistics' rows; rows of other cases are dropped. Default the
        table's sorted distinct cases.

    Returns
    -------
    SufficientStats
        ``case_ids`` [C]; ``keys``: (model, condition, breakdown), the breakdown ``"all"`` or
        ``"<dim>=<group>"``; ``num`` and ``den`` ``[C, K * len(TERMS)]`` per-case term sums.
    """
    df = scores.reset_index(drop=True)
    if case_ids is None:
        case_ids = np.unique(df["case_id"].to_numpy(dtype=object).astype(str))
    pos = {c: i for i, c in enumerate(case_ids)}
    case_code = df["case_id"].map(pos)
    keep = case_code.notna().to_numpy()
    df, case_code = df[keep].reset_index(drop=True), case_code[keep].to_numpy(dtype=np.int64)
    n_cases, n_terms = len(case_ids), len(TERMS)
    num_v, den_v = view_terms(df)
    mc = list(zip(df["model"].astype(str), df["condition"].astype(str)))
    mc_labels = sorted(set(mc))
    mc_pos = {x: i for i, x in enumerate(mc_labels)}
    mc_code = np.array([mc_pos[x] for x in mc], dtype=np.int64) if mc else np.zeros(0, np.int64)
    labels = {"all": pd.Series(["all"] * len(df))}
    if "size_quartile" in breakdowns:
        labels["size_quartile"] = size_quartiles(df)
    if "tool" in breakdowns and "tool" in df.columns:
        labels["tool"] = df["tool"].where(df["kind"].isin(EDIT_KINDS), None)
    for b in breakdowns:
        if b not in ("size_quartile", "tool"):
            if b not in df.columns:  # a scores table written before the column existed
                continue
            labels[b] = df[b]
    keys, blocks_num, blocks_den = [], [], []
    for dim, lab in labels.items():
        lab = lab.to_numpy(dtype=object)
        ok = pd.notna(lab)
        groups = sorted(set(lab[ok].astype(str)))
        if not groups:
            continue
        g_code = np.full(len(df), -1)
        g_pos = {g: i for i, g in enumerate(groups)}
        g_code[ok] = [g_pos[str(v)] for v in lab[ok]]
        n_keys = len(mc_labels) * len(groups)
        flat = (mc_code * len(groups) + g_code) * n_cases + case_code
        sel = ok
        size = n_keys * n_cases
        num = np.stack([np.bincount(flat[sel], weights=num_v[sel, t], minlength=size) for t in range(n_terms)], 1)
        den = np.stack([np.bincount(flat[sel], weights=den_v[sel, t], minlength=size) for t in range(n_terms)], 1)
        # [K, C, T] -> [C, K, T]
        blocks_num.append(num.reshape(n_keys, n_cases, n_terms).transpose(1, 0, 2))
        blocks_den.append(den.reshape(n_keys, n_cases, n_terms).transpose(1, 0, 2))
        for m, c in mc_labels:
            for g in groups:
                keys.append((m, c, "all" if dim == "all" else f"{dim}={g}"))
    num = np.concatenate(blocks_num, axis=1).reshape(n_cases, -1)
    den = np.concatenate(blocks_den, axis=1).reshape(n_cases, -1)
    return SufficientStats(np.asarray(case_ids), keys, num, den)


def metric_matrix() -> np.ndarray:
    """``[len(TERMS), len(METRICS)]`` signs: metric values = term ratios @ this.

    Returns
    -------
    numpy.ndarray
        float ``[len(TERMS), len(METRICS)]`` of the signs 1, -1 and 0 of ``METRICS``.
    """
    m = np.zeros((len(TERMS), len(METRICS)))
    for j, spec in enumerate(METRICS.values()):
        for sign, term in spec:
            m[TERMS.index(term), j] = sign
    return m


def metric_values(num_sum: np.ndarray, den_sum: np.ndarray) -> np.ndarray:
    """Ratios of summed terms -> metrics: ``[..., K*T]`` -> ``[..., K, M]`` (NaN where undefined).

    Parameters
    ----------
    num_sum, den_sum : numpy.ndarray
        ``[..., K * len(TERMS)]`` summed term numerators and denominators.

    Returns
    -------
    numpy.ndarray
        ``[..., K, len(METRICS)]`` metric values; NaN where a term's denominator is 0.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num_sum / den_sum
    return ratios_to_metrics(r)


def metric_counts(num_sum: np.ndarray, den_sum: np.ndarray) -> list[list[str | None]]:
    """Each metric's point value as its ratios' text (``medscope.analysis.exact``), so a rule can
    be decided on the counts: ``[K][M]`` of ``"14/100"``, ``"30/100 - 10/100"`` or None.

    Parameters
    ----------
    num_sum, den_sum : numpy.ndarray
        ``[K * len(TERMS)]`` summed term numerators and denominators.

    Returns
    -------
    list of list of (str or None)
        Per key and metric, ``exact.counts_text`` of its signed ratios; None where a denominator is 0.

    References
    ----------
    .. [1] counterfactual paper, §3.6, §3.8.
    """
    from medscope.analysis import exact

    num = np.asarray(num_sum, dtype=float).reshape(-1, len(TERMS))
    den = np.asarray(den_sum, dtype=float).reshape(-1, len(TERMS))
    idx = [[(sign, TERMS.index(term)) for sign, term in spec] for spec in METRICS.values()]
    return [[exact.counts_text([(sign, num[k, t], den[k, t]) for sign, t in terms]) for terms in idx]
            for k in range(num.shape[0])]


def ratios_to_metrics(ratios: np.ndarray, axis: int = -1) -> np.ndarray:
    """Term ratios ``[..., K*T]`` -> metrics ``[..., K, M]``; an undefined term makes its metric NaN.

    With ``axis=0`` the terms run along the first axis instead (``[K*T, ...]`` -> ``[K, M, ...]``),
    the layout the bootstrap produces.

    Parameters
    ----------
    ratios : numpy.ndarray
        Term ratios, ``[..., K * len(TERMS)]`` (or ``[K * len(TERMS), ...]`` with ``axis=0``).
    axis : int
        -1 or 0: the axis the terms run along (any other value is read as -1).

    Returns
    -------
    numpy.ndarray
        float ``[..., K, len(METRICS)]``, or ``[K, len(METRICS), ...]`` with ``axis=0``.
    """
    if axis == 0:
        r = ratios.reshape((-1, len(TERMS)) + ratios.shape[1:])
        pick = lambda t: r[:, t]  # noqa: E731
        out = np.empty((r.shape[0], len(METRICS)) + ratios.shape[1:])
        put = lambda j: out[:, j]  # noqa: E731
    else:
        r = ratios.reshape(ratios.shape[:-1] + (-1, len(TERMS)))
        pick = lambda t: r[..., t]  # noqa: E731
        out = np.empty(r.shape[:-1] + (len(METRICS),))
        put = lambda j: out[..., j]  # noqa: E731
    for j, spec in enumerate(METRICS.values()):
        sign, term = spec[0]
        dst = put(j)
        np.multiply(pick(TERMS.index(term)), sign, out=dst)
        for sign, term in spec[1:]:
            dst += sign * pick(TERMS.index(term))
    return out


def compute(scores: pa.Table | pd.DataFrame, n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED,
            breakdowns=BREAKDOWNS, cluster: str = "case_id", level: float = 0.95,
            coverages=COVERAGES) -> pa.Table:
    """The metrics table: every metric for every model, condition, test set and breakdown group.

    Intervals are percentile intervals over ``n_boot`` resamples of clusters (cases by default;
    ``cluster="group_id"`` or ``"patient_id"`` resamples whole groups). One set of resamples
    serves every metric, model and group. ``n_boot=0`` gives point estimates only.

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table; rows without a ``test_set`` are read as ``"main"``.
    n_boot : int
        Resamples B (default 2000); 0: no intervals.
    seed : int
        Seed of the resamples (default 42).
    breakdowns : iterable of str
        Breakdown dimensions (``BREAKDOWNS``).
    cluster : str
        The scores column whose values are resampled: ``"case_id"``, ``"group_id"`` or
        ``"patient_id"`` (a case with no value is its own cluster).
    level : float
        Coverage of the percentile intervals, in (0, 1).
    coverages : iterable of float
        Coverages of the ``selective_risk@c`` and ``decision_risk@c`` rows.

    Returns
    -------
    pyarrow.Table
        A validated ``metrics`` table: one row per model, condition, test set, breakdown group and
        metric with a defined value (``value``, ``ci_low``, ``ci_high``, ``n_cases``, ``n_boot``).

    Raises
    ------
    MedScopeError
        When ``cluster`` is not a scores column.

    References
    ----------
    .. [1] counterfactual paper, §3.8, §3.9, §5.5.
    """
    df = scores.to_pandas(use_threads=False) if isinstance(scores, pa.Table) else scores
    rows = []
    for test_set, part in df.groupby(df["test_set"].fillna("main"), sort=True):
        rows += _compute_one(part, str(test_set), n_boot, seed, breakdowns, cluster, level, coverages)
    return records.to_table("metrics", rows)


def _cluster_map(df: pd.DataFrame, case_ids: np.ndarray, cluster: str) -> tuple[np.ndarray, int]:
    if cluster == "case_id":
        return np.arange(len(case_ids)), len(case_ids)
    if cluster not in df.columns:
        raise MedScopeError(f"cannot cluster on {cluster!r}: not a scores column")
    first = df.groupby("case_id")[cluster].first()
    labels = [first.get(c) if pd.notna(first.get(c)) else f"case:{c}" for c in case_ids]
    uniq, codes = bs.codes_of(labels)
    return codes, len(uniq)


def bootstrap_metric_samples(stats: SufficientStats, n_boot: int, seed: int, cluster_codes=None,
                             n_clusters=None, counts=None) -> np.ndarray:
    """``[B, K, M]`` resampled metric values, all keys on one shared set of resampled clusters.

    Parameters
    ----------
    stats : SufficientStats
        Per-case term sums (``sufficient_stats``).
    n_boot : int
        Resamples B, when ``counts`` is not given.
    seed : int
        Seed of the resamples, when ``counts`` is not given.
    cluster_codes : array_like of int, optional
        ``[C]`` cluster code of each case: cases are summed into clusters before resampling. Default:
        each case is a cluster.
    n_clusters : int, optional
        Number of clusters, with ``cluster_codes``.
    counts : numpy.ndarray, optional
        ``[B, n_clusters]`` draw counts to use (``bootstrap.resample_counts``), so that other
        statistics share the resamples.

    Returns
    -------
    numpy.ndarray
        ``[B, K, len(METRICS)]``; NaN where a resample leaves a term without denominator.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    num, den = stats.num, stats.den
    if cluster_codes is not None:
        num, den = bs.regroup(num, cluster_codes, n_clusters), bs.regroup(den, cluster_codes, n_clusters)
    if counts is None:
        counts = bs.resample_counts(num.shape[0], n_boot, seed)
    terms_first = bs.ratio_samples(num, den, counts).T  # [K*T, B], contiguous
    return np.moveaxis(ratios_to_metrics(terms_first, axis=0), -1, 0)  # [B, K, M] view


def _compute_one(df, test_set, n_boot, seed, breakdowns, cluster, level, coverages) -> list[dict]:
    stats = sufficient_stats(df, breakdowns)
    point = metric_values(stats.num.sum(0), stats.den.sum(0))  # [K, M]
    exact_counts = metric_counts(stats.num.sum(0), stats.den.sum(0))  # [K][M]: the rules read these
    n_cases = _n_cases(stats)
    counts = case_cluster = None
    if n_boot:
        codes, n_cl = _cluster_map(df, stats.case_ids, cluster)
        counts = bs.resample_counts(n_cl, n_boot, seed)  # one set of resamples for everything below
        samples = bootstrap_metric_samples(stats, n_boot, seed, None if cluster == "case_id" else codes, n_cl,
                                           counts=counts)
        lo, hi = bs.percentile_ci(samples, level)
        case_cluster = dict(zip(stats.case_ids, codes))
    else:
        lo = hi = np.full(point.shape, np.nan)
    names = list(METRICS)
    rows = []
    for k, (model, cond, brk) in enumerate(stats.keys):
        for j, name in enumerate(names):
            if n_cases[k, j] == 0:
                continue
            rows.append(_row(model, cond, test_set, brk, name, point[k, j], lo[k, j], hi[k, j], n_cases[k, j],
                             n_boot or None, exact_counts[k][j]))
    for (model, cond), part in df.groupby(["model", "condition"], sort=True):
        for kinds, ties, prefix, auc_name in SELECTIVE:
            rows += _selective_rows(part[part["kind"].isin(kinds)], model, cond, test_set, ties, prefix, auc_name,
                                    coverages, counts, case_cluster, level, n_boot)
    return rows


# (view kinds, tie rule, risk name, AURC name): §5.5's figures, then the guarded addition
SELECTIVE = (
    (ANSWERABLE, "stable", "selective_risk", "aurc"),
    (DECISION, "mean", "decision_risk", "decision_aurc"),
)


def _selective_rows(views, model, cond, test_set, ties, prefix, auc_name, coverages, counts, case_cluster, level,
                    n_boot) -> list[dict]:
    """Risk at each coverage and AURC of one model on one view set, with bootstrap intervals."""
    if views.empty:
        return []
    correct, conf = views["correct"].to_numpy(bool), views["confidence"].to_numpy(float)
    curve = selective.risk_coverage(correct, conf, ties)
    values = [selective.risk_at(curve, c) for c in coverages] + [selective.aurc(curve)]
    ci = np.full((len(values), 2), np.nan)
    if counts is not None:
        view_cluster = views["case_id"].astype(str).map(case_cluster).to_numpy(dtype=np.int64)
        boot = selective.bootstrap(correct, conf, view_cluster, counts, coverages, ties)
        ci = np.stack(bs.percentile_ci(boot, level), axis=1)
    n = int(views["case_id"].nunique())
    names = [f"{prefix}@{c:.2f}" for c in coverages] + [auc_name]
    return [_row(model, cond, test_set, "all", name, v, lo, hi, n, n_boot or None)
            for name, v, (lo, hi) in zip(names, values, ci)]


def _n_cases(stats: SufficientStats) -> np.ndarray:
    has = (stats.den > 0).reshape(stats.den.shape[0], -1, len(TERMS))  # [C, K, T]
    used = metric_matrix() != 0  # [T, M]
    return (np.einsum("ckt,tm->ckm", has.astype(float), used.astype(float)) > 0).sum(axis=0)


def _row(model, cond, test_set, brk, metric, value, lo, hi, n, n_boot=None, counts=None) -> dict:
    def f(x):
        return None if x is None or not np.isfinite(x) else float(x)

    return {"model": model, "condition": cond, "test_set": test_set, "breakdown": brk, "metric": metric,
            "value": f(value), "ci_low": f(lo), "ci_high": f(hi), "n_cases": int(n),
            "reference": None, "p_value": None, "n_boot": n_boot, "counts": counts if f(value) is not None else None}
