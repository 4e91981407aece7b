"""The reader study's pre-specified statistics (counterfactual paper §7 "Pre-specified analysis").

References: AUC as the Mann-Whitney U: J. A. Hanley, B. J. McNeil, "The meaning and use of the
area under a receiver operating characteristic (ROC) curve", Radiology 143(1), 1982; J. Cohen,
Educ. Psychol. Meas. 20(1), 1960 (kappa); C. J. Clopper, E. S. Pearson, Biometrika 26(4), 1934.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import mannwhitneyu
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint


def rating_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """AUC of separating ``positive`` from ``negative`` scores (here the 1-4 edit ratings):
    P(score of a positive > score of a negative) + 1/2 P(tie), i.e. the Mann-Whitney U of the
    positives divided by n_pos * n_neg. NaN when either group is empty.

    Parameters
    ----------
    positive : array_like
        Scores of the positive group.
    negative : array_like
        Scores of the negative group.

    Returns
    -------
    float
        The AUC in [0, 1]; 0.5: no separation.

    References
    ----------
    .. [1] J. A. Hanley, B. J. McNeil, "The meaning and use of the area under a receiver operating
       characteristic (ROC) curve", Radiology 143(1), 1982.
    """
    positive, negative = np.asarray(positive, float), np.asarray(negative, float)
    if positive.size == 0 or negative.size == 0:
        return float("nan")
    u = mannwhitneyu(positive, negative, alternative="two-sided").statistic
    return float(u / (positive.size * negative.size))


def kappa(a: list, b: list, categories: tuple) -> float:
    """Cohen's kappa of two readers' paired labels over ``categories`` (statsmodels). NaN with
    no pair; 1.0 when both readers used one and the same category throughout (chance agreement
    is then 1, and the 0/0 is read as perfect agreement).

    Parameters
    ----------
    a, b : list
        The two readers' labels, paired by position; every label one of ``categories``.
    categories : tuple
        The label set (its order fixes the table's rows and columns).

    Returns
    -------
    float
        Cohen's kappa.

    References
    ----------
    .. [1] J. Cohen, "A coefficient of agreement for nominal scales", Educ. Psychol. Meas. 20(1), 1960.
    """
    if not a:
        return float("nan")
    idx = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for x, y in zip(a, b):
        table[idx[x], idx[y]] += 1
    pe = float((table.sum(0) * table.sum(1)).sum()) / table.sum() ** 2
    if np.isclose(pe, 1.0):
        return 1.0
    return float(cohens_kappa(table, return_results=False))


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided 1-alpha interval of k successes in n (statsmodels 'beta').

    Parameters
    ----------
    k : int
        Successes.
    n : int
        Trials.
    alpha : float, optional
        One minus the coverage (default 0.05: a 95% interval).

    Returns
    -------
    low, high : float
        The interval's ends; NaN, NaN when n is 0.

    References
    ----------
    .. [1] C. J. Clopper, E. S. Pearson, Biometrika 26(4), 1934.
    """
    if n == 0:
        return float("nan"), float("nan")
    lo, hi = proportion_confint(k, n, alpha=alpha, method="beta")
    return float(lo), float(hi)
