"""Case-clustered bootstrap (seed 000 §3.9; seed 001 Methods: B = 2000, seed 42), vectorised.

A *cluster* is the unit resampled with replacement: a case (one source image with all its
views), or a patient / near-copy group for the group bootstrap. Every metric here is a ratio of
sums (or a signed combination of ratios), so a resample is fully described by how often each
cluster was drawn. With per-cluster sufficient statistics ``num[C, S]`` and ``den[C, S]`` (S
statistics: every term of every metric of every model and subgroup) and the draw counts
``W[B, C]``, all resamples of all statistics are two matrix products, ``W @ num`` and
``W @ den``: one set of resampled clusters is shared by every metric and model, which also
makes every paired comparison paired by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medscope.errors import MedScopeError

DEFAULT_B = 2000
DEFAULT_SEED = 42


def resample_indices(n_clusters: int, n_boot: int = DEFAULT_B, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``[B, C]`` cluster indices drawn with replacement; row b is resample b."""
    if n_clusters < 1:
        # an empty selection (a model with no views of a metric's kind in this test set): a clear,
        # catchable error, so a report or a test family leaves that cell empty instead of failing
        raise MedScopeError("bootstrap needs at least one case: the selection is empty")
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_clusters, size=(n_boot, n_clusters))


def counts_from_indices(idx: np.ndarray, n_clusters: int) -> np.ndarray:
    """``[B, C]`` how many times each cluster appears in each resample (multinomial counts)."""
    n_boot = idx.shape[0]
    flat = (idx + np.arange(n_boot)[:, None] * n_clusters).ravel()
    return np.bincount(flat, minlength=n_boot * n_clusters).reshape(n_boot, n_clusters).astype(np.float64)


def resample_counts(n_clusters: int, n_boot: int = DEFAULT_B, seed: int = DEFAULT_SEED) -> np.ndarray:
    return counts_from_indices(resample_indices(n_clusters, n_boot, seed), n_clusters)


def cluster_sums(values: np.ndarray, codes: np.ndarray, n_clusters: int) -> np.ndarray:
    """Sum the rows of ``values`` ([n, S]) per cluster code -> ``[C, S]``."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    out = np.zeros((n_clusters, values.shape[1]))
    np.add.at(out, np.asarray(codes), values)
    return out


def ratio_samples(num: np.ndarray, den: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``[B, S]`` resampled ratios sum(num)/sum(den); NaN where a resample has no denominator.

    The numerators are mostly zero (a subgroup's statistics involve only its own clusters),
    so they are multiplied as a sparse matrix; the denominators repeat across models (every
    model sees the same views), so only the distinct columns are multiplied. Numerators are
    zero wherever denominators are (they are indicator x denominator per view), so an empty
    resample gives 0/0 = NaN, never an infinity.
    """
    from scipy import sparse

    inverse, uniq = unique_columns(den)
    num_t = sparse.csr_matrix(num.T) @ counts.T  # [S, B], rows contiguous
    den_t = uniq.T @ counts.T  # [U, B]
    with np.errstate(invalid="ignore", divide="ignore"):
        for u in range(den_t.shape[0]):
            rows = inverse == u
            num_t[rows] /= den_t[u]
    return num_t.T


def unique_columns(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each column's distinct pattern, ``[rows, U]`` distinct columns), by hashing bytes."""
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
    the statistic is undefined (NaN). Uses a partial sort along contiguous rows."""
    q = np.array([(1 - level) / 2, (1 + level) / 2])
    x = np.moveaxis(np.asarray(samples, dtype=float), 0, -1)
    shape, n = x.shape[:-1], x.shape[-1]
    flat = x.reshape(-1, n)
    h = (n - 1) * q
    f = np.floor(h).astype(int)
    kth = sorted({int(min(k, n - 1)) for k in (f[0], f[0] + 1, f[1], f[1] + 1)})
    part = np.partition(flat, kth, axis=1)
    nxt = np.minimum(f + 1, n - 1)
    out = part[:, f] + (h - f) * (part[:, nxt] - part[:, f])
    lo, hi = out[:, 0].copy(), out[:, 1].copy()
    for j in np.flatnonzero(np.isnan(flat).any(axis=1)):  # tiny subgroups: the slow path is fine
        col = flat[j][~np.isnan(flat[j])]
        lo[j], hi[j] = np.percentile(col, q * 100) if col.size else (np.nan, np.nan)
    return lo.reshape(shape), hi.reshape(shape)


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
    """p for a table: ``< 2/B`` when no resample crossed zero (seed 000 §3.9).

    p is twice the smaller tail proportion, so the smallest non-zero value is 2/B: with
    B = 2,000 resamples the paper's "smallest reportable value is 1/1000", and "p < 0.001" means
    no resample crossed zero.
    """
    if p is None or np.isnan(p):
        return "n/a"
    if p <= 0.0:
        return f"< {2 / n_boot:.2g}"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def two_sided_p(diff_samples: np.ndarray) -> np.ndarray:
    """Twice the smaller tail proportion of the bootstrap differences at zero, capped at 1."""
    d = np.asarray(diff_samples, dtype=float)
    valid = ~np.isnan(d)
    n = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(valid, d <= 0, False).sum(axis=0) / n
        high = np.where(valid, d >= 0, False).sum(axis=0) / n
    return np.minimum(1.0, 2 * np.minimum(low, high))


def paired(point_a: float, point_b: float, samples_a: np.ndarray, samples_b: np.ndarray,
           level: float = 0.95) -> Paired:
    """Paired comparison from the two models' statistics on the *same* resamples."""
    d = np.asarray(samples_a, dtype=float) - np.asarray(samples_b, dtype=float)
    lo, hi = percentile_ci(d[:, None], level)
    return Paired(float(point_a - point_b), float(lo[0]), float(hi[0]), float(two_sided_p(d)), len(d))


def codes_of(labels) -> tuple[np.ndarray, np.ndarray]:
    """(unique labels sorted, integer code per row)."""
    uniq, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return uniq, codes.ravel()


def regroup(per_case: np.ndarray, case_to_group: np.ndarray, n_groups: int) -> np.ndarray:
    """Case sufficient statistics -> group (patient / near-copy group) ones, for the group bootstrap."""
    return cluster_sums(per_case, case_to_group, n_groups)
