"""Statistics of the paired-modality protocol (paired-modality paper, Table 1 and §5).

Rates are proportions of photographs with exact Clopper-Pearson 95% intervals; the photo-only
vs paired comparison on the same photographs is an exact McNemar test (binomial on the
discordant pairs); agreement between two judges is Cohen's kappa. Each wraps statsmodels so
the numbers are the library's, not ours.

References: C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits illustrated in
the case of the binomial", Biometrika 26(4), 1934; Q. McNemar, Psychometrika 12(2), 1947;
J. Cohen, "A coefficient of agreement for nominal scales", Educ. Psychol. Meas. 20(1), 1960.
"""

from __future__ import annotations

import math

import numpy as np


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a proportion k/n (paired-modality paper Table 1: "exact 95% CI").

    ``k`` events in ``n`` trials; returns (low, high) in [0, 1], NaNs when ``n`` is 0.

    Parameters
    ----------
    k : int
        Events.
    n : int
        Trials.
    alpha : float, optional
        1 - confidence level (default 0.05: a 95% interval).

    Returns
    -------
    low : float
        Lower bound, in [0, 1]; NaN when ``n`` is 0.
    high : float
        Upper bound, in [0, 1]; NaN when ``n`` is 0.

    References
    ----------
    .. [1] paired-modality paper, Table 1.
    .. [2] C. J. Clopper, E. S. Pearson, Biometrika 26(4), 1934.
    """
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return math.nan, math.nan
    lo, hi = proportion_confint(int(k), int(n), alpha=alpha, method="beta")
    return float(lo), float(hi)


def mcnemar_exact(before, after) -> dict:
    """Exact McNemar test of paired binary outcomes (paired-modality paper §5.2: photo only vs photo +
    radiograph on the same photographs).

    ``before`` / ``after``: equal-length boolean arrays (an error in each setting, one entry
    per photograph). Returns n, b (error only before), c (error only after), the two rates and
    the two-sided exact p (statsmodels ``mcnemar(exact=True)``: binomial on b + c at 1/2).

    Parameters
    ----------
    before : array_like of bool
        ``[N]`` error of each photograph in the first setting (photo only).
    after : array_like of bool
        ``[N]`` error of the same photographs in the second setting (paired).

    Returns
    -------
    dict
        ``n``, ``b``, ``c``, ``rate_before``, ``rate_after`` (NaN when n is 0) and ``p_value`` (NaN when
        n is 0).

    Raises
    ------
    ValueError
        When ``before`` and ``after`` differ in shape.

    References
    ----------
    .. [1] paired-modality paper, §5.2.
    .. [2] Q. McNemar, Psychometrika 12(2), 1947.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    x = np.asarray(before, dtype=bool)
    y = np.asarray(after, dtype=bool)
    if x.shape != y.shape:
        raise ValueError("before and after must pair one to one")
    a = int(np.sum(x & y))
    b = int(np.sum(x & ~y))
    c = int(np.sum(~x & y))
    d = int(np.sum(~x & ~y))
    n = len(x)
    p = float(mcnemar([[a, b], [c, d]], exact=True).pvalue) if n else math.nan
    return {"n": n, "b": b, "c": c, "rate_before": (a + b) / n if n else math.nan,
            "rate_after": (a + c) / n if n else math.nan, "p_value": p}


def cohen_kappa(labels_a, labels_b) -> dict:
    """Cohen's kappa between two judges' binary labels of the same responses (paired-modality paper asks
    that judge noise be visible). Returns kappa, observed agreement and n; kappa is NaN when
    chance agreement is 1 (both judges constant and equal).

    Parameters
    ----------
    labels_a : array_like of bool
        ``[N]`` one judge's labels.
    labels_b : array_like of bool
        ``[N]`` the other judge's labels of the same responses.

    Returns
    -------
    dict
        ``kappa`` (NaN when chance agreement is 1 or n is 0), ``agreement`` (observed share; NaN when n
        is 0) and ``n``.

    Raises
    ------
    ValueError
        When the two label arrays differ in shape.

    References
    ----------
    .. [1] J. Cohen, Educ. Psychol. Meas. 20(1), 1960.
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    x = np.asarray(labels_a, dtype=bool)
    y = np.asarray(labels_b, dtype=bool)
    if x.shape != y.shape:
        raise ValueError("the two judges must label the same responses")
    n = len(x)
    if n == 0:
        return {"kappa": math.nan, "agreement": math.nan, "n": 0}
    table = np.array([[np.sum(x & y), np.sum(x & ~y)], [np.sum(~x & y), np.sum(~x & ~y)]], dtype=float)
    agreement = float(np.trace(table) / n)
    chance = float((table.sum(0) * table.sum(1)).sum() / n**2)
    kappa = math.nan if chance >= 1.0 else float(cohens_kappa(table).kappa)
    return {"kappa": kappa, "agreement": agreement, "n": n}
