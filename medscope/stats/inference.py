"""Tests and adjustments around the bootstrap (counterfactual paper §3.9, the benchmark-MCQ paper Methods, the paired-modality paper §5).

Thin wrappers over scipy / statsmodels where they fit (Fisher, exact McNemar, Benjamini-
Hochberg, clustered GLM), and the few procedures the papers define themselves: the equivalence
test on a bootstrap interval, accuracy against a mixed-k chance level, Bonferroni over a named
family, seeds as mean +- sd.

References: Fisher's exact test: R. A. Fisher, J. R. Stat. Soc. 85(1), 1922. Exact McNemar:
Q. McNemar, Psychometrika 12(2), 1947. Bonferroni: O. J. Dunn, "Multiple comparisons among
means", JASA 56, 1961. Benjamini-Hochberg: Y. Benjamini, Y. Hochberg, "Controlling the false
discovery rate", J. R. Stat. Soc. B 57(1), 1995. TOST: D. J. Schuirmann, J. Pharmacokinet.
Biopharm. 15(6), 1987. Cluster-robust (sandwich) GLM errors: K.-Y. Liang, S. L. Zeger,
Biometrika 73(1), 1986.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from medscope.errors import MedScopeError
from medscope.stats import bootstrap as bs


def fisher_exact(success_a: int, n_a: int, success_b: int, n_b: int, alternative: str = "two-sided"):
    """Fisher's exact test of two proportions on small subsets (counterfactual paper §3.9): (odds ratio, p).

    Parameters
    ----------
    success_a, n_a : int
        Successes and trials of group A.
    success_b, n_b : int
        Successes and trials of group B.
    alternative : {"two-sided", "less", "greater"}, optional
        Alternative hypothesis, passed to ``scipy.stats.fisher_exact``. Default ``"two-sided"``.

    Returns
    -------
    odds_ratio : float
        The sample odds ratio.
    p : float
        The p-value.

    Raises
    ------
    MedScopeError
        When a success count is negative or exceeds its trials.

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    """
    if min(success_a, success_b) < 0 or success_a > n_a or success_b > n_b:
        raise MedScopeError("fisher_exact: successes must lie between 0 and n")
    res = sps.fisher_exact([[success_a, n_a - success_a], [success_b, n_b - success_b]], alternative=alternative)
    return float(res.statistic), float(res.pvalue)


def mcnemar_exact(correct_a, correct_b):
    """Exact McNemar test on paired binary outcomes (paired-modality paper §5): (b, c, p).

    b: A right and B wrong; c: A wrong and B right. Uses statsmodels' exact binomial version.

    Parameters
    ----------
    correct_a, correct_b : array_like of bool
        ``[n]`` per-item correctness of A and B on the same items.

    Returns
    -------
    b : int
        Items A got right and B wrong.
    c : int
        Items A got wrong and B right.
    p : float
        The exact (binomial) two-sided p-value.

    Raises
    ------
    MedScopeError
        When the two vectors differ in shape.

    References
    ----------
    .. [1] Paired-modality paper, §5.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise MedScopeError("mcnemar_exact: the two outcome vectors must be paired (same length)")
    table = [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]
    res = mcnemar(table, exact=True)
    return table[0][1], table[1][0], float(res.pvalue)


def bonferroni(p_values, alpha: float = 0.05) -> tuple[float, list[bool]]:
    """Bonferroni over one named family: (threshold alpha/m, significant per test).

    Parameters
    ----------
    p_values : array_like of float
        The family's m p-values.
    alpha : float, optional
        Family-wise error rate. Default 0.05.

    Returns
    -------
    threshold : float
        ``alpha / m`` (``alpha`` for an empty family).
    significant : list of bool
        Per test, ``p <= threshold``.
    """
    p = np.asarray(p_values, dtype=float)
    thr = alpha / max(len(p), 1)
    return thr, [bool(x <= thr) for x in p]


def benjamini_hochberg(p_values, alpha: float = 0.05) -> tuple[list[bool], np.ndarray]:
    """BH false-discovery control within one family (statsmodels ``fdr_bh``): (reject, q).

    Parameters
    ----------
    p_values : array_like of float
        The family's p-values.
    alpha : float, optional
        False discovery rate. Default 0.05.

    Returns
    -------
    reject : list of bool
        Per test, whether it is rejected at ``alpha``.
    q : numpy.ndarray
        BH-adjusted p-values; empty for an empty family.
    """
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p_values, dtype=float)
    if len(p) == 0:
        return [], np.zeros(0)
    reject, q, _, _ = multipletests(p, alpha=alpha, method="fdr_bh")
    return [bool(r) for r in reject], q


def adjust_families(rows: list[dict], alpha: float = 0.05, method: str = "bh") -> list[dict]:
    """Add ``q`` (BH) or ``bonferroni`` verdicts to rows ``{"family", "p", ...}``, within each family.

    Parameters
    ----------
    rows : list of dict
        Each with ``"family"`` (the family's name) and ``"p"``; other keys are kept.
    alpha : float, optional
        Error rate within each family. Default 0.05.
    method : {"bh", "bonferroni"}, optional
        Benjamini-Hochberg (adds ``q`` and ``significant``) or Bonferroni (adds ``threshold`` and
        ``significant``). Default ``"bh"``.

    Returns
    -------
    list of dict
        Copies of ``rows``, in the same order, with the added keys.

    Raises
    ------
    MedScopeError
        When ``method`` is neither ``"bh"`` nor ``"bonferroni"`` (and ``rows`` is not empty).
    """
    out = [dict(r) for r in rows]
    families: dict[str, list[int]] = {}
    for i, r in enumerate(out):
        families.setdefault(r["family"], []).append(i)
    for idx in families.values():
        ps = [out[i]["p"] for i in idx]
        if method == "bh":
            rej, q = benjamini_hochberg(ps, alpha)
            for i, r, qq in zip(idx, rej, q):
                out[i].update(q=float(qq), significant=r)
        elif method == "bonferroni":
            thr, rej = bonferroni(ps, alpha)
            for i, r in zip(idx, rej):
                out[i].update(threshold=thr, significant=r)
        else:
            raise MedScopeError(f"unknown multiplicity method {method!r} (bh | bonferroni)")
    return out


@dataclass(frozen=True)
class Tost:
    diff: float
    ci90_low: float
    ci90_high: float
    margin: float
    equivalent: bool  # the 90% interval lies inside (-margin, +margin)
    p: float  # max of the two one-sided bootstrap p-values


def tost(point_diff: float, diff_samples, margin: float = 0.05) -> Tost:
    """Two one-sided tests against +-margin from bootstrap differences (benchmark-MCQ paper Methods).

    Parameters
    ----------
    point_diff : float
        Point estimate of the difference.
    diff_samples : array_like of float
        ``[B]`` bootstrap differences; NaN resamples are left out.
    margin : float, optional
        Equivalence margin, in the metric's units. Default 0.05.

    Returns
    -------
    Tost
        The 5th-95th percentile interval of the differences, ``equivalent`` when it lies inside
        ``(-margin, +margin)``, and ``p``, the larger of the two one-sided bootstrap p-values.

    Raises
    ------
    MedScopeError
        When every resample is NaN.

    References
    ----------
    .. [1] Benchmark-MCQ paper, Methods.
    """
    d = np.asarray(diff_samples, dtype=float)
    d = d[~np.isnan(d)]
    if not d.size:  # the metric is undefined in every resample (no views of its kind)
        raise MedScopeError("TOST: the difference is undefined in every resample (no views of the metric's kind)")
    lo, hi = np.percentile(d, [5, 95])
    p_low = float(np.mean(d <= -margin))  # H0: diff <= -margin
    p_high = float(np.mean(d >= margin))  # H0: diff >= +margin
    return Tost(float(point_diff), float(lo), float(hi), margin, bool(lo > -margin and hi < margin),
                max(p_low, p_high))


@dataclass(frozen=True)
class Chance:
    accuracy: float
    baseline: float  # mean of 1/k over the pool
    excess: float
    p_bootstrap: float  # one-sided, case-clustered: share of resamples with excess <= 0
    p_binomial: float  # scipy binomtest against the baseline (exact when every item has the same k)


def accuracy_vs_chance(correct, n_options, case_ids, n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED) -> Chance:
    """One-sided accuracy against chance (benchmark-MCQ paper Methods): statistic mean(1[correct] - 1/k).

    Parameters
    ----------
    correct : array_like
        ``[n]`` per-item correctness (bool or 0/1).
    n_options : array_like
        ``[n]`` number of options k of each item (at least 1).
    case_ids : array_like
        ``[n]`` case of each item: the cluster of the bootstrap.
    n_boot : int, optional
        Number of resamples. Default 2000.
    seed : int, optional
        Seed of the resamples. Default 42.

    Returns
    -------
    Chance
        Accuracy, the chance baseline (mean 1/k), the excess, the one-sided case-clustered bootstrap p
        (share of resamples with excess <= 0) and the one-sided binomial p against the baseline.

    Raises
    ------
    MedScopeError
        When an item has fewer than one option.

    References
    ----------
    .. [1] Benchmark-MCQ paper, Methods.
    """
    correct = np.asarray(correct, dtype=float)
    k = np.asarray(n_options, dtype=float)
    if (k < 1).any():
        raise MedScopeError("accuracy_vs_chance: every item needs at least one option")
    inv = 1.0 / k
    uniq, codes = bs.codes_of(case_ids)
    num = bs.cluster_sums(np.stack([correct - inv, np.ones_like(inv)], 1), codes, len(uniq))
    counts = bs.resample_counts(len(uniq), n_boot, seed)
    sums = counts @ num
    excess_b = sums[:, 0] / sums[:, 1]
    p_boot = float(np.mean(excess_b <= 0))
    binom = sps.binomtest(int(correct.sum()), len(correct), float(inv.mean()), alternative="greater")
    return Chance(float(correct.mean()), float(inv.mean()), float(np.mean(correct - inv)), p_boot, float(binom.pvalue))


def seeds_summary(values) -> tuple[float, float]:
    """Mean and sample standard deviation over seeds (counterfactual paper §3.9: mean +- sd over three seeds).

    Parameters
    ----------
    values : array_like of float
        One value per seed.

    Returns
    -------
    mean : float
        The mean.
    sd : float
        The sample standard deviation (``ddof=1``); 0.0 for a single value.

    References
    ----------
    .. [1] Counterfactual paper, §3.9.
    """
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def logistic_clustered(y, X: pd.DataFrame, groups, alpha: float = 0.05) -> pd.DataFrame:
    """Logistic regression with cluster-robust (case-clustered) intervals (statsmodels GLM).

    ``X`` holds the predictors (an intercept is added); ``groups`` the case (or patient) of
    each row. Returns one row per coefficient: coef, se, ci_low, ci_high, p, odds_ratio.

    Parameters
    ----------
    y : array_like
        ``[n]`` binary outcome (0/1).
    X : pandas.DataFrame
        ``[n, p]`` predictors, cast to float.
    groups : array_like
        ``[n]`` cluster (case or patient) of each row.
    alpha : float, optional
        One minus the coverage of the intervals. Default 0.05.

    Returns
    -------
    pandas.DataFrame
        Indexed by coefficient (``const`` first), columns ``coef``, ``se``, ``ci_low``, ``ci_high``,
        ``p`` and ``odds_ratio`` (``exp(coef)``).
    """
    import statsmodels.api as sm

    design = sm.add_constant(pd.DataFrame(X).astype(float), has_constant="add")
    _, codes = bs.codes_of(groups)
    fit = sm.GLM(np.asarray(y, dtype=float), design, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": codes})
    ci = fit.conf_int(alpha)
    return pd.DataFrame({"coef": fit.params, "se": fit.bse, "ci_low": ci[0], "ci_high": ci[1],
                         "p": fit.pvalues, "odds_ratio": np.exp(fit.params)})
