"""Selective prediction (counterfactual paper §3.8, §5.5): risk-coverage and AURC.

Views are ranked by the model's stated confidence, highest first. A missing confidence (refer,
clarify, unparseable, or a model that states none) ranks last. Risk at coverage k/n is the
share of wrong (not correct) views among the k ranked first; AURC is the mean of that risk
over k = 1..n. Ties:

- ``ties="stable"`` (the paper's convention, §5.5): ties keep the order of the table, so the
  risk at a cutoff inside a tie is one arbitrary member of that tie's range.
- ``ties="mean"``: the expected risk over every order of each tie (errors of a tie are spread
  evenly over its positions). A policy with one confidence for every view then has a flat
  curve at its error rate, whatever the order of the table.

References: selective risk and the risk-coverage curve: R. El-Yaniv, Y. Wiener, "On the
foundations of noise-free selective classification", JMLR 11, 2010; AURC: Y. Geifman, G. Uziel,
R. El-Yaniv, "Bias-reduced uncertainty estimation for deep neural classifiers", ICLR 2019.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Curve:
    coverage: np.ndarray  # k / n, k = 1..n
    risk: np.ndarray  # errors among the first k / k


TIES = ("stable", "mean")


def cumulative_errors(errors_sorted: np.ndarray, conf_sorted: np.ndarray, ties: str = "stable") -> np.ndarray:
    """Errors among the first k = 1..n views (sorted by confidence, highest first).

    With ``ties="mean"``, inside a run of equal confidences the count grows linearly from the
    errors before the run to the errors after it (its expectation over the run's orders).

    Parameters
    ----------
    errors_sorted : array_like of bool or float
        ``[n]`` 1 where the view is wrong, in ranked order.
    conf_sorted : array_like of float
        ``[n]`` the confidences in the same order (read only with ``ties="mean"``).
    ties : {'stable', 'mean'}
        Tie rule (module docstring).

    Returns
    -------
    numpy.ndarray
        float ``[n]``: expected errors among the first k views, k = 1..n.

    Raises
    ------
    ValueError
        When ``ties`` is not one of ``TIES``.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, not {ties!r}")
    errs = np.asarray(errors_sorted, dtype=float)
    cum = np.cumsum(errs)
    if ties == "stable" or len(errs) == 0:
        return cum
    c = np.asarray(conf_sorted, dtype=float)
    start = np.r_[True, c[1:] != c[:-1]]  # first position of each run of equal confidence
    run = np.cumsum(start) - 1
    starts = np.flatnonzero(start)
    ends = np.r_[starts[1:], len(c)]  # one past the last position of each run
    before = np.r_[0.0, cum][starts]  # errors ranked above the run
    rate = (cum[ends - 1] - before) / (ends - starts)
    pos = np.arange(len(c)) - starts[run] + 1  # 1-based position inside the run
    return before[run] + pos * rate[run]


def risk_coverage(correct: np.ndarray, confidence: np.ndarray, ties: str = "stable") -> Curve:
    """The risk-coverage curve: views ranked by confidence, highest first (missing last).

    Parameters
    ----------
    correct : array_like of bool
        ``[n]`` whether each view is correct.
    confidence : array_like of float
        ``[n]`` stated confidence; NaN: none, ranked last.
    ties : {'stable', 'mean'}
        Tie rule (module docstring).

    Returns
    -------
    Curve
        ``coverage`` k / n and ``risk`` errors among the first k / k, k = 1..n (empty for n = 0).

    References
    ----------
    .. [1] counterfactual paper, §3.8, §5.5.
    """
    correct = np.asarray(correct, dtype=bool)
    conf = np.asarray(confidence, dtype=float)
    conf = np.where(np.isnan(conf), -np.inf, conf)
    order = np.argsort(-conf, kind="stable")
    errors = cumulative_errors(~correct[order], conf[order], ties)
    k = np.arange(1, len(correct) + 1)
    return Curve(k / max(len(correct), 1), errors / k)


def risk_at(curve: Curve, coverage: float) -> float:
    """Selective risk when the ``coverage`` share of views with the highest confidence is kept.

    Parameters
    ----------
    curve : Curve
        A risk-coverage curve (``risk_coverage``).
    coverage : float
        Share of views kept, in (0, 1]; the first ceil(coverage * n) views (at least 1).

    Returns
    -------
    float
        The risk there; NaN for an empty curve.
    """
    n = len(curve.risk)
    if n == 0:
        return float("nan")
    k = min(n, max(1, math.ceil(round(coverage * n, 9))))
    return float(curve.risk[k - 1])


def aurc(curve: Curve) -> float:
    """Area under the risk-coverage curve: the mean risk over k = 1..n.

    Parameters
    ----------
    curve : Curve
        A risk-coverage curve (``risk_coverage``).

    Returns
    -------
    float
        NaN for an empty curve.

    References
    ----------
    .. [1] counterfactual paper, §5.5.
    """
    return float(np.mean(curve.risk)) if len(curve.risk) else float("nan")


def bootstrap(correct: np.ndarray, confidence: np.ndarray, cluster: np.ndarray, counts: np.ndarray,
              coverages=(1.0, 0.7), ties: str = "stable") -> np.ndarray:
    """``[B, len(coverages) + 1]``: risk at each coverage and AURC in each resample.

    Resample b holds view i ``counts[b, cluster[i]]`` times. The ranking is the full-data stable
    sort; a view drawn several times appears as adjacent ties, which is one member of the
    arbitrary tie order the stable sort allows. Not a sum of per-cluster statistics, so this is
    a loop over resamples (cheap: one repeat and one cumsum each).

    Parameters
    ----------
    correct : array_like of bool
        ``[n]`` whether each view is correct.
    confidence : array_like of float
        ``[n]`` stated confidence; NaN: none, ranked last.
    cluster : array_like of int
        ``[n]`` each view's cluster code, a column of ``counts``.
    counts : numpy.ndarray
        ``[B, n_clusters]`` draw counts of each cluster in each resample.
    coverages : iterable of float
        Coverages of the risk columns.
    ties : {'stable', 'mean'}
        Tie rule (module docstring).

    Returns
    -------
    numpy.ndarray
        float ``[B, len(coverages) + 1]``; a row is NaN when its resample holds no view.
    """
    correct = np.asarray(correct, dtype=bool)
    conf = np.where(np.isnan(np.asarray(confidence, float)), -np.inf, np.asarray(confidence, float))
    order = np.argsort(-conf, kind="stable")
    err_sorted = (~correct[order]).astype(np.int64)
    conf_sorted = conf[order]
    cl_sorted = np.asarray(cluster)[order]
    out = np.full((counts.shape[0], len(coverages) + 1), np.nan)
    for b in range(counts.shape[0]):
        reps = counts[b, cl_sorted].astype(np.int64)
        errs = np.repeat(err_sorted, reps)
        n = len(errs)
        if n == 0:
            continue
        risk = cumulative_errors(errs, np.repeat(conf_sorted, reps), ties) / np.arange(1, n + 1)
        for j, c in enumerate(coverages):
            out[b, j] = risk[min(n, max(1, math.ceil(round(c * n, 9)))) - 1]
        out[b, -1] = risk.mean()
    return out
