"""The benchmark-MCQ paper's statistics (Methods, "Statistics and reproducibility"), arrays in, numbers out.

- accuracy: fraction of valid responses that are correct (invalid ones are excluded);
- random baseline: mean of 1/k over a pool's questions (k = that question's option count);
- every interval: a case-clustered percentile bootstrap that resamples cases, not questions
  (B = 2000, seed 42; ``medscope.stats.bootstrap``), 95 %;
- Δ = sighted - blind on the questions valid in both runs, from the per-question difference,
  so one resampled case set serves both arms;
- Family 1: accuracy above chance, one-sided, statistic mean(1[correct] - 1/k) over the valid
  pool, p = share of resamples <= 0; Family 2: Δ != 0, two-sided percentile-inversion p;
  Benjamini-Hochberg within each family (statsmodels); both at B = 10,000;
- TOST against ±margin (0.05): p = max(P*(Δ <= -m), P*(Δ >= +m)); the 90 % interval is reported,
  equivalence is declared when it lies inside (-m, +m).

References: the case (cluster) bootstrap: A. C. Davison, D. V. Hinkley, Bootstrap Methods and
Their Application, Cambridge University Press, 1997, §3.8; Benjamini-Hochberg: Y. Benjamini,
Y. Hochberg, J. R. Stat. Soc. B 57(1), 1995; TOST: D. J. Schuirmann, J. Pharmacokinet.
Biopharm. 15(6), 1987.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medscope.stats import bootstrap as bs


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float
    n_cases: int
    n_items: int


def ratio_bootstrap(cases, num, den, b: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED) -> tuple[float, np.ndarray, int]:
    """(sum(num)/sum(den), [B] resampled ratios resampling whole cases, number of cases).

    Parameters
    ----------
    cases : array_like
        ``[N]`` case id of each row (the cluster that is resampled whole).
    num : array_like
        ``[N]`` numerator of each row (e.g. 1 for a correct answer).
    den : array_like
        ``[N]`` denominator of each row (e.g. 1 for each counted answer).
    b : int, optional
        Number of resamples B (default 2000).
    seed : int, optional
        Seed of the resampling (default 42).

    Returns
    -------
    point : float
        sum(num) / sum(den) over all rows.
    samples : numpy.ndarray
        ``[B]`` resampled ratios; NaN where a resample has no denominator.
    n_cases : int
        Number of distinct cases.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility".
    .. [2] A. C. Davison, D. V. Hinkley, Bootstrap Methods and Their Application, 1997, §3.8.
    """
    uniq, codes = bs.codes_of(cases)
    n = bs.cluster_sums(np.asarray(num, dtype=float), codes, len(uniq))
    d = bs.cluster_sums(np.asarray(den, dtype=float), codes, len(uniq))
    samples = bs.ratio_samples(n, d, bs.resample_counts(len(uniq), b, seed))[:, 0]
    return float(n.sum() / d.sum()), samples, len(uniq)


def _estimate(cases, values, b, seed, level=0.95) -> tuple[Estimate, np.ndarray]:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return Estimate(np.nan, np.nan, np.nan, 0, 0), np.full(b, np.nan)
    point, samples, n_cases = ratio_bootstrap(cases, values, np.ones_like(values), b, seed)
    lo, hi = bs.percentile_ci(samples[:, None], level)
    return Estimate(point, float(lo[0]), float(hi[0]), n_cases, int(values.size)), samples


def accuracy(cases, correct, valid, b: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED) -> Estimate:
    """Accuracy over the valid responses with its 95 % case-clustered interval.

    Parameters
    ----------
    cases : array_like
        ``[N]`` case id of each response.
    correct : array_like of bool
        ``[N]`` whether each response is correct (ignored where not valid).
    valid : array_like of bool
        ``[N]`` whether each response is a valid option letter; invalid ones are excluded.
    b : int, optional
        Number of resamples B (default 2000).
    seed : int, optional
        Seed of the resampling (default 42).

    Returns
    -------
    Estimate
        Accuracy over the valid responses, its 95 % case-clustered percentile interval, the number of
        cases and of valid responses; all NaN (and 0 counts) when no response is valid.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility".
    """
    valid = np.asarray(valid, dtype=bool)
    return _estimate(np.asarray(cases, dtype=object)[valid], np.asarray(correct, dtype=float)[valid], b, seed)[0]


def random_baseline(k) -> float:
    """Mean of 1/k over the pool's questions.

    Parameters
    ----------
    k : array_like of int
        Option count of each question of the pool.

    Returns
    -------
    float
        mean(1 / k); NaN for an empty pool.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility".
    """
    k = np.asarray(k, dtype=float)
    return float(np.mean(1.0 / k)) if k.size else float("nan")


def above_chance(cases, correct, k, b: int = 10_000, seed: int = bs.DEFAULT_SEED) -> tuple[Estimate, float]:
    """(mean(1[correct] - 1/k) over the valid pool with its interval, one-sided bootstrap p).

    Parameters
    ----------
    cases : array_like
        ``[N]`` case id of each valid response.
    correct : array_like of bool
        ``[N]`` whether each valid response is correct.
    k : array_like of int
        ``[N]`` option count of each response's question.
    b : int, optional
        Number of resamples B (default 10,000, the tests' resolution).
    seed : int, optional
        Seed of the resampling (default 42).

    Returns
    -------
    estimate : Estimate
        mean(1[correct] - 1/k) with its 95 % case-clustered interval (NaN when empty).
    p : float
        One-sided bootstrap p: the share of resamples <= 0 (NaN when no resample is defined).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility" (Family 1).
    """
    diff = np.asarray(correct, dtype=float) - 1.0 / np.asarray(k, dtype=float)
    est, samples = _estimate(cases, diff, b, seed)
    s = samples[~np.isnan(samples)]
    return est, float(np.mean(s <= 0.0)) if s.size else float("nan")


@dataclass(frozen=True)
class Delta:
    sighted: float
    blind: float
    delta: Estimate
    p: float  # two-sided, Δ != 0
    tost_p: float
    ci90_low: float
    ci90_high: float
    equivalent90: bool  # the 90 % interval lies inside (-margin, +margin)


def paired_delta(cases, correct_sighted, correct_blind, b: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED,
                 margin: float = 0.05) -> Delta:
    """Δ = sighted - blind over questions valid in both runs (rows here), with its 95 % interval,
    two-sided p, TOST p and 90 % interval, from one case-clustered resample of the difference.

    Parameters
    ----------
    cases : array_like
        ``[N]`` case id of each question valid in both runs.
    correct_sighted : array_like of bool
        ``[N]`` whether the sighted reply is correct.
    correct_blind : array_like of bool
        ``[N]`` whether the blind reply is correct.
    b : int, optional
        Number of resamples B (default 2000).
    seed : int, optional
        Seed of the resampling (default 42).
    margin : float, optional
        TOST equivalence margin m (default 0.05).

    Returns
    -------
    Delta
        Sighted and blind accuracy on these rows, Δ with its 95 % interval, the two-sided p (Δ != 0),
        the TOST p = max(P*(Δ <= -m), P*(Δ >= +m)), the 90 % interval and whether it lies inside
        (-m, +m). With no rows, every figure is NaN and ``equivalent90`` False.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility" (Family 2).
    .. [2] D. J. Schuirmann, J. Pharmacokinet. Biopharm. 15(6), 1987 (TOST).
    """
    cs, cb = np.asarray(correct_sighted, dtype=float), np.asarray(correct_blind, dtype=float)
    est, samples = _estimate(cases, cs - cb, b, seed)
    s = samples[~np.isnan(samples)]
    if not s.size:
        return Delta(np.nan, np.nan, est, np.nan, np.nan, np.nan, np.nan, False)
    p = float(bs.two_sided_p(s[:, None])[0])
    tost_p = float(max(np.mean(s <= -margin), np.mean(s >= margin)))
    lo90, hi90 = bs.percentile_ci(s[:, None], 0.90)
    lo90, hi90 = float(lo90[0]), float(hi90[0])
    return Delta(float(cs.mean()), float(cb.mean()), est, p, tost_p, lo90, hi90, bool(-margin < lo90 and hi90 < margin))


def bh(pvalues) -> np.ndarray:
    """Benjamini-Hochberg q-values (statsmodels ``multipletests``, ``fdr_bh``); NaN stays NaN.

    Parameters
    ----------
    pvalues : array_like of float
        The p-values of one family; NaN entries are left out of the adjustment.

    Returns
    -------
    numpy.ndarray
        float q-values, same shape as ``pvalues``; NaN where p is NaN.

    References
    ----------
    .. [1] Y. Benjamini, Y. Hochberg, J. R. Stat. Soc. B 57(1), 1995.
    """
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    q = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        q[ok] = multipletests(p[ok], method="fdr_bh")[1]
    return q


def verdict(q: float, tost_q: float, alpha: float = 0.05) -> str:
    """Table 4's verdict: Effect (q < alpha), Equivalent (TOST q < alpha), both, or neither.

    Parameters
    ----------
    q : float
        Benjamini-Hochberg q-value of Δ != 0.
    tost_q : float
        Benjamini-Hochberg q-value of the TOST.
    alpha : float, optional
        Significance level (default 0.05).

    Returns
    -------
    str
        'Effect (small)' when both q's are below alpha, 'Effect', 'Equivalent', or 'Undetermined'.

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 4.
    """
    effect, equivalent = bool(q < alpha), bool(tost_q < alpha)
    if effect and equivalent:
        return "Effect (small)"
    return "Effect" if effect else "Equivalent" if equivalent else "Undetermined"
