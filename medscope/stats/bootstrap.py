"""Case-clustered bootstrap (counterfactual paper §3.9; the benchmark-MCQ paper Methods: B = 2000, seed 42), vectorised.

A *cluster* is the unit resampled with replacement: a case (one source image with all its
views), or a patient / near-copy group for the group bootstrap. Every metric here is a ratio of
sums (or a signed combination of ratios), so a resample is fully described by how often each
cluster was drawn. With per-cluster sufficient statistics ``num[C, S]`` and ``den[C, S]`` (S
statistics: every term of every metric of every model and subgroup) and the draw counts
``W[B, C]``, all resamples of all statistics are two matrix products, ``W @ num`` and
``W @ den``: one set of resampled clusters is shared by every metric and model, which also
makes every paired comparison paired by construction.

References: the bootstrap and its percentile interval: B. Efron, Ann. Stat. 7(1), 1979; B. Efron,
R. Tibshirani, An Introduction to the Bootstrap, Chapman & Hall, 1993. Resampling clusters (cases),
not observations: A. C. Davison, D. V. Hinkley, Bootstrap Methods and Their Application,
Cambridge University Press, 1997, §3.8; C. A. Field, A. H. Welsh, "Bootstrapping clustered
data", J. R. Stat. Soc. B 69(3), 2007.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medscope.errors import MedScopeError

DEFAULT_B = 2000
DEFAULT_SEED = 42


def resample_indices(n_clusters: int, n_boot: int = DEFAULT_B, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``[B, C]`` cluster indices drawn with replacement; row b is resample b.

    Parameters
    ----------
    n_clusters : int
        Number of clusters C (cases, patients or groups) to draw from.
    n_boot : int, optional
        Number of resamples B. Default 2000 (:data:`DEFAULT_B`).
    seed : int, optional
        Seed of ``numpy.random.default_rng``. Default 42 (:data:`DEFAULT_SEED`).

    Returns
    -------
    numpy.ndarray
        int64 ``[B, C]``, values in ``[0, C)``.

    Raises
    ------
    MedScopeError
        When ``n_clusters`` is below 1 (an empty selection).

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    .. [2] Benchmark-MCQ paper, Methods.
    """
    if n_clusters < 1:
        # an empty selection (a model with no views of a metric's kind in this test set): a clear,
        # catchable error, so a report or a test family leaves that cell empty instead of failing
        raise MedScopeError("bootstrap needs at least one case: the selection is empty")
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_clusters, size=(n_boot, n_clusters))


def counts_from_indices(idx: np.ndarray, n_clusters: int) -> np.ndarray:
    """``[B, C]`` int32: how many times each cluster appears in each resample (multinomial counts).

    Integers, so one matrix serves every model and metric exactly (and as float32 below).

    Parameters
    ----------
    idx : numpy.ndarray
        int ``[B, C]`` cluster indices, each in ``[0, n_clusters)`` (from :func:`resample_indices`).
    n_clusters : int
        Number of clusters C.

    Returns
    -------
    numpy.ndarray
        int32 ``[B, n_clusters]``; each row sums to the number of draws per resample.
    """
    n_boot = idx.shape[0]
    flat = (idx + np.arange(n_boot)[:, None] * n_clusters).ravel()
    return np.bincount(flat, minlength=n_boot * n_clusters).reshape(n_boot, n_clusters).astype(np.int32)


def resample_counts(n_clusters: int, n_boot: int = DEFAULT_B, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Draw counts of ``n_boot`` cluster resamples (:func:`resample_indices`, counted).

    Parameters
    ----------
    n_clusters : int
        Number of clusters C.
    n_boot : int, optional
        Number of resamples B. Default 2000.
    seed : int, optional
        Seed of the generator. Default 42.

    Returns
    -------
    numpy.ndarray
        int32 ``[B, C]``: how many times each cluster is drawn in each resample.

    Raises
    ------
    MedScopeError
        When ``n_clusters`` is below 1.

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    .. [2] Benchmark-MCQ paper, Methods.
    """
    return counts_from_indices(resample_indices(n_clusters, n_boot, seed), n_clusters)


def cluster_sums(values: np.ndarray, codes: np.ndarray, n_clusters: int) -> np.ndarray:
    """Sum the rows of ``values`` ([n, S]) per cluster code -> ``[C, S]``.

    Parameters
    ----------
    values : array_like
        ``[n]`` or ``[n, S]`` per-row statistics (a 1-D input is taken as one column).
    codes : array_like of int
        ``[n]`` cluster code of each row, in ``[0, n_clusters)``.
    n_clusters : int
        Number of clusters C.

    Returns
    -------
    numpy.ndarray
        float64 ``[C, S]``; zero for a cluster without rows.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    out = np.zeros((n_clusters, values.shape[1]))
    np.add.at(out, np.asarray(codes), values)
    return out


def exact_in_float32(a: np.ndarray, n_clusters: int | None = None) -> np.ndarray:
    """Per column: True where every resampled sum of the column is exact in float32.

    A column of integers whose absolute values times the number of clusters stay below 2**24:
    every product count x value and every partial sum of a resample (whose counts add up to the
    number of clusters, ``n_clusters``: the rows of ``a`` by default) is then an integer float32
    holds exactly, in any summation order, so the
    float32 product equals the float64 one bit for bit.

    Parameters
    ----------
    a : array_like
        ``[C, S]`` per-cluster values.
    n_clusters : int or None, optional
        Total draw count of one resample; ``None`` (or 0) for the number of rows of ``a``.

    Returns
    -------
    numpy.ndarray
        bool ``[S]``; all True when ``a`` has no rows.
    """
    a = np.asarray(a, dtype=float)
    if a.shape[0] == 0:
        return np.ones(a.shape[1], dtype=bool)
    integral = (a == np.round(a)).all(axis=0)
    return integral & (np.abs(a).max(axis=0) * (n_clusters or a.shape[0]) < 2 ** 24)


def ratio_samples(num: np.ndarray, den: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``[B, S]`` resampled ratios sum(num)/sum(den); NaN where a resample has no denominator.

    One kernel for the case, paired and group bootstraps (a group bootstrap passes group sums,
    see :func:`regroup`; a paired comparison subtracts two columns of the same resamples).
    Numerators are zero wherever their denominators are (indicator x denominator per view), and
    the denominators repeat across models (every model sees the same views), so the columns are
    taken in blocks sharing one distinct denominator: each block is a dense product over only the
    clusters where that denominator is non-zero (a subgroup's statistics involve only its own
    clusters), divided by one resampled denominator. Blocks whose values are exact in float32
    (counts and indicator sums: :func:`exact_in_float32`) multiply in float32, twice the BLAS
    rate with identical results; the others (rewards) in float64. An empty resample gives
    0/0 = NaN, never an infinity.

    Parameters
    ----------
    num : array_like
        ``[C, S]`` per-cluster numerator sums.
    den : array_like
        ``[C, S]`` per-cluster denominator sums.
    counts : numpy.ndarray
        ``[B, C]`` draw counts (:func:`resample_counts`).

    Returns
    -------
    numpy.ndarray
        float64 ``[B, S]`` resampled ratios; NaN where the resampled denominator is 0.

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    .. [2] Benchmark-MCQ paper, Methods.
    """
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    inverse, uniq = unique_columns(den)
    n_boot = counts.shape[0]
    counts_t = np.ascontiguousarray(counts.T)  # [C, B]: a cluster's counts are one contiguous row
    c32, c64 = counts_t.astype(np.float32), counts_t.astype(np.float64)
    dens = uniq.T @ c64  # [U, B]: every distinct resampled denominator (integers: exact in float64)
    # a numerator outside its denominator's clusters would be a caller's bug; it is still summed
    # (over every cluster), as the plain loop would
    within = bool(np.all((num == 0) | (den != 0)))
    out = np.empty((num.shape[1], n_boot))  # [S, B], rows contiguous
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(uniq.shape[1] + 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        for u in range(uniq.shape[1]):
            cols = order[bounds[u]:bounds[u + 1]]
            rows = np.flatnonzero(uniq[:, u]) if within else np.arange(num.shape[0])
            if rows.size == 0:
                out[cols] = np.nan  # 0/0 in every resample: no cluster has this statistic
                continue
            vals = num[np.ix_(rows, cols)].T  # [block columns, clusters]; zero elsewhere
            exact = exact_in_float32(vals.T, n_clusters=num.shape[0])
            for pick, cm, dt in ((exact, c32, np.float32), (~exact, c64, np.float64)):
                if pick.any():
                    block = np.ascontiguousarray(vals[pick], dtype=dt) @ cm[rows]
                    out[cols[pick]] = np.divide(block, dens[u], dtype=np.float64)
    return out.T


def unique_columns(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each column's distinct pattern, ``[rows, U]`` distinct columns), by hashing bytes.

    Parameters
    ----------
    a : numpy.ndarray
        ``[rows, S]`` array.

    Returns
    -------
    inverse : numpy.ndarray
        int64 ``[S]``: the index, among the distinct columns, of each column of ``a``.
    distinct : numpy.ndarray
        ``[rows, U]``: the distinct columns, in order of first appearance.
    """
    seen: dict[bytes, int] = {}
    inverse = np.empty(a.shape[1], dtype=np.int64)
    cols = np.ascontiguousarray(a.T)
    for j in range(cols.shape[0]):
        inverse[j] = seen.setdefault(cols[j].tobytes(), len(seen))
    firsts = np.zeros(len(seen), dtype=np.int64)
    firsts[inverse[::-1]] = np.arange(a.shape[1])[::-1]
    return inverse, a[:, firsts]


def percentile_ci(samples: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0 (numpy's linear interpolation), ignoring resamples where
    the statistic is undefined (NaN).

    One vectorised sort of contiguous rows (numpy's SIMD sort is faster here than a partition
    with four pivots); NaNs sort last, so a statistic with n defined resamples reads its
    order statistics from the first n places of its row.

    Parameters
    ----------
    samples : array_like
        ``[B, ...]`` resampled statistics; NaN marks a resample where the statistic is undefined.
    level : float, optional
        Coverage of the two-sided interval, in (0, 1). Default 0.95.

    Returns
    -------
    low, high : numpy.ndarray
        Interval bounds of shape ``samples.shape[1:]``; NaN where no resample is defined (or B is 0).

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    .. [2] Benchmark-MCQ paper, Methods.
    """
    q = np.array([(1 - level) / 2, (1 + level) / 2])
    x = np.moveaxis(np.asarray(samples, dtype=float), 0, -1)
    shape, n = x.shape[:-1], x.shape[-1]
    if n == 0:
        return np.full(shape, np.nan), np.full(shape, np.nan)
    flat = np.sort(x.reshape(-1, n), axis=1)
    n_valid = np.full(flat.shape[0], n, dtype=np.int64)
    some_nan = np.isnan(flat[:, -1])  # tiny subgroups: only these rows are counted
    n_valid[some_nan] = n - np.isnan(flat[some_nan]).sum(axis=1)
    last = np.maximum(n_valid, 1)[:, None] - 1
    h = last * q  # [R, 2] fractional ranks
    f = np.floor(h).astype(np.int64)
    rows = np.arange(flat.shape[0])[:, None]
    lo_v, hi_v = flat[rows, f], flat[rows, np.minimum(f + 1, last)]
    out = lo_v + (h - f) * (hi_v - lo_v)
    out[n_valid == 0] = np.nan
    return out[:, 0].reshape(shape), out[:, 1].reshape(shape)


@dataclass(frozen=True)
class Paired:
    """A paired bootstrap comparison A - B over shared clusters."""

    diff: float
    ci_low: float
    ci_high: float
    p: float  # 0.0 when no resample reaches zero from the other side
    n_boot: int

    @property
    def p_text(self) -> str:
        return format_p(self.p, self.n_boot)


def format_p(p: float, n_boot: int) -> str:
    """p for a table: ``< 2/B`` when no resample crossed zero (counterfactual paper §3.9).

    p is twice the smaller tail proportion, so the smallest non-zero value is 2/B: with
    B = 2,000 resamples the paper's "smallest reportable value is 1/1000", and "p < 0.001" means
    no resample crossed zero.

    Parameters
    ----------
    p : float or None
        The p-value; ``None`` or NaN when undefined.
    n_boot : int
        Number of resamples B.

    Returns
    -------
    str
        ``"n/a"`` when undefined; ``"< 2/B"`` (two significant digits) when ``p`` is 0; else ``p`` to three
        decimals, or in ``.1e`` form below 0.001.

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    """
    if p is None or np.isnan(p):
        return "n/a"
    if p <= 0.0:
        return f"< {2 / n_boot:.2g}"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def p_text(p: float | None, n_boot: int = 0) -> str:
    """A p-value as every report line and table cell writes it: ``p = 0.012``, ``p < 0.001``.

    Three decimals from 0.001 up; below, ``p < 0.001``. A bootstrap p of 0 (no resample crossed
    zero) is below 2/B, its smallest non-zero value (counterfactual paper §3.9): ``p < 0.001`` when
    2/B is at most 0.001 (B ≥ 2,000), else ``p < 2/B`` (``p < 0.01`` at B = 200).

    Parameters
    ----------
    p : float or None
        The p-value; None or NaN when undefined.
    n_boot : int, optional
        Bootstrap resamples B behind it; 0 for an exact test's p.

    Returns
    -------
    str
        ``"p = 0.012"``, ``"p < 0.001"``, ``"p < 0.01"`` or ``"p n/a"``.

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    """
    if p is None or not np.isfinite(p):
        return "p n/a"
    if n_boot and p <= 0.0 and 2 / n_boot > 0.001:
        return f"p < {2 / n_boot:.2g}"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {min(p, 1.0):.3f}"


def two_sided_p(diff_samples: np.ndarray) -> np.ndarray:
    """Twice the smaller tail proportion of the bootstrap differences at zero, capped at 1.

    Parameters
    ----------
    diff_samples : array_like
        ``[B]`` or ``[B, S]`` bootstrap differences; NaN resamples are left out.

    Returns
    -------
    numpy.ndarray
        p per statistic (shape ``diff_samples.shape[1:]``); NaN where no resample is defined.

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    .. [2] Benchmark-MCQ paper, Methods.
    """
    d = np.asarray(diff_samples, dtype=float)
    valid = ~np.isnan(d)
    n = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(valid, d <= 0, False).sum(axis=0) / n
        high = np.where(valid, d >= 0, False).sum(axis=0) / n
    return np.minimum(1.0, 2 * np.minimum(low, high))


def paired(point_a: float, point_b: float, samples_a: np.ndarray, samples_b: np.ndarray,
           level: float = 0.95) -> Paired:
    """Paired comparison from the two models' statistics on the *same* resamples.

    Parameters
    ----------
    point_a, point_b : float
        The two models' point estimates.
    samples_a, samples_b : array_like
        ``[B]`` the two models' statistics on the same resamples.
    level : float, optional
        Coverage of the percentile interval. Default 0.95.

    Returns
    -------
    Paired
        The difference A - B, its percentile interval, the two-sided p of :func:`two_sided_p`, and
        ``n_boot`` (the number of resamples, NaN ones included).

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    .. [2] Benchmark-MCQ paper, Methods.
    """
    d = np.asarray(samples_a, dtype=float) - np.asarray(samples_b, dtype=float)
    lo, hi = percentile_ci(d[:, None], level)
    return Paired(float(point_a - point_b), float(lo[0]), float(hi[0]), float(two_sided_p(d)), len(d))


def codes_of(labels) -> tuple[np.ndarray, np.ndarray]:
    """(unique labels sorted, integer code per row).

    Parameters
    ----------
    labels : array_like
        One label per row; each is compared as its ``str``.

    Returns
    -------
    uniq : numpy.ndarray
        The distinct labels as strings, sorted.
    codes : numpy.ndarray
        int ``[n]``: the index in ``uniq`` of each row's label.
    """
    uniq, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return uniq, codes.ravel()


def regroup(per_case: np.ndarray, case_to_group: np.ndarray, n_groups: int) -> np.ndarray:
    """Case sufficient statistics -> group (patient / near-copy group) ones, for the group bootstrap.

    Parameters
    ----------
    per_case : array_like
        ``[C]`` or ``[C, S]`` per-case sufficient statistics.
    case_to_group : array_like of int
        ``[C]`` group code of each case, in ``[0, n_groups)``.
    n_groups : int
        Number of groups G.

    Returns
    -------
    numpy.ndarray
        float64 ``[G, S]`` per-group sums (:func:`cluster_sums`).
    """
    return cluster_sums(per_case, case_to_group, n_groups)
