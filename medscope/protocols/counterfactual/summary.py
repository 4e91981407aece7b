"""The report's opening summary, written from the numbers.

It answers "which models read the image?" before any table: a model *follows the image*
when its evidence sensitivity gap (ESG, the counterfactual paper §3.8) has a 95% case-bootstrap interval
that excludes 0 on the positive side; a constant policy (the same decision on every view)
is image-blind by construction (ESG = 0, the counterfactual paper Table 5); a model in a condition
that never shows it the case's image (``blind``, ``blank``) is image-blind by design, whatever its ESG
(a gap there comes from the question's wording, not from reading); any other model has no evidence
either way on this run. Then the headline paired differences (counterfactual paper §3.9, Table 6) and the
run's size and caveats.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medscope.stats.bootstrap import p_text

FOLLOWS = "follows the image"
CONSTANT = "image-blind (constant policy)"
BLIND_BY_DESIGN = "image-blind by design (the condition shows no image)"
UNCLEAR = "no evidence it follows the image"
AGAINST = "answers against the image"

MAX_HEADLINES = 4  # models whose paired differences the summary spells out
SMALL_N = 100  # below this many cases an interval is too wide to separate most models


@dataclass
class ModelRow:
    """One model (x condition) of the main test: ESG, erased-lesion claims and net utility with
    their 95% intervals (``lo``/``hi`` NaN when not computed), whether it is a constant policy, and
    ``shown``: what its condition shows instead of the case's image (empty when it shows the image);
    ``n_cases``: the cases its ESG is over (0: not known)."""
    label: str
    esg: float
    esg_lo: float = np.nan
    esg_hi: float = np.nan
    erased: float = np.nan
    net_utility: float = np.nan
    constant: bool = False
    shown: str = ""
    n_cases: int = 0


@dataclass
class Difference:
    """``label`` minus ``reference`` on ``metric``, paired bootstrap: value, 95% CI, p over ``n_boot``,
    over ``n_cases`` shared cases (0: not known)."""
    label: str
    reference: str
    metric: str
    value: float
    lo: float
    hi: float
    p: float
    n_boot: int = 0
    n_cases: int = 0


@dataclass
class RunFacts:
    n_cases: int
    n_views: int
    sources: list[str] = field(default_factory=list)
    test_set: str = "main"
    cost_matrix: str = ""


def constant_policies(scores: pd.DataFrame, keys=("model", "condition")) -> set[tuple]:
    """(model, condition) pairs whose decision (action and claimed finding) is the same on every
    view: image-blind by construction, whatever they are called.

    Parameters
    ----------
    scores : pandas.DataFrame
        Scores rows; reads ``action``, ``claims_finding`` and the ``keys`` columns.
    keys : tuple of str, optional
        The columns that name a run.

    Returns
    -------
    set of tuple
        The ``keys`` values of every run with one distinct decision.

    References
    ----------
    .. [1] counterfactual paper, Table 5.
    """
    # str() of each value, so a missing claim ("refer", None) is a decision too, not a dropped NaN
    dec = [f"{a}/{c}" for a, c in zip(scores["action"].astype(object), scores["claims_finding"].astype(object))]
    n = pd.Series(dec, index=scores.index).groupby([scores[k] for k in keys]).nunique()
    return {k for k, v in n.items() if v <= 1}


def verdict(row: ModelRow) -> str:
    """What the ESG interval says about one model: FOLLOWS if it excludes 0 on the positive side,
    AGAINST if on the negative side, CONSTANT for a constant policy, BLIND_BY_DESIGN for a condition
    that never shows the case's image (whatever its interval), else UNCLEAR.

    Parameters
    ----------
    row : ModelRow
        One model's main-test row.

    Returns
    -------
    str
        :data:`FOLLOWS`, :data:`AGAINST`, :data:`CONSTANT`, :data:`BLIND_BY_DESIGN` or :data:`UNCLEAR`.

    References
    ----------
    .. [1] counterfactual paper, §3.8.
    """
    if row.constant:
        return CONSTANT
    if row.shown:
        return BLIND_BY_DESIGN
    if np.isfinite(row.esg_lo) and row.esg_lo > 0:
        return FOLLOWS
    if np.isfinite(row.esg_hi) and row.esg_hi < 0:
        return AGAINST
    return UNCLEAR


def _ci(v, lo, hi, pct=False) -> str:
    f = (lambda x: f"{100 * x:.1f}%") if pct else (lambda x: f"{x:.3f}")
    if not np.isfinite(v):
        return "–"
    return f"{f(v)} [{f(lo)}, {f(hi)}]" if np.isfinite(lo) and np.isfinite(hi) else f(v)


def _esg(r: ModelRow) -> str:
    """A row's ESG with its interval and the cases it is over."""
    return f"ESG {_ci(r.esg, r.esg_lo, r.esg_hi)}" + (f" ({r.n_cases} cases)" if r.n_cases else "")




NAMES = {"esg": "ESG", "erased_claims": "erased-lesion claims", "net_utility": "net utility",
         "healthy_claims": "healthy-image claims", "ccr": "CCR"}


def summary_lines(rows: list[ModelRow], diffs: list[Difference], facts: RunFacts) -> list[str]:
    """The summary as Markdown lines (bulleted), from the main-test rows, the paired differences
    against the reference and the run's facts.

    Parameters
    ----------
    rows : list of ModelRow
        The main test's rows.
    diffs : list of Difference
        Paired differences against the reference; those of ESG, erased-lesion claims and net utility
        are spelled out for the first :data:`MAX_HEADLINES` models.
    facts : RunFacts
        The run's cases, views, sources, test set and cost matrix.

    Returns
    -------
    list of str
        Markdown bullets: the models by verdict, the headline differences, a caveat when a constant
        policy earns at least a reader's net utility, and the run's size and caveats.

    References
    ----------
    .. [1] counterfactual paper, §3.9, Table 6; §5.5.
    """
    by = {}
    for r in rows:
        by.setdefault(verdict(r), []).append(r)
    out = []
    follows = sorted(by.get(FOLLOWS, []), key=lambda r: -r.esg)
    if follows:
        out.append("- **Follow the image** (ESG 95% interval above 0): " + "; ".join(
            f"**{r.label}** {_esg(r)}" for r in follows) + ".")
    else:
        out.append("- **No model is shown to follow the image**: no ESG 95% interval lies above 0.")
    if by.get(UNCLEAR):
        out.append("- **No evidence either way** (ESG interval includes 0): " + "; ".join(
            f"{r.label} {_esg(r)}" for r in by[UNCLEAR]) + ".")
    if by.get(AGAINST):
        out.append("- **Answer against the image** (ESG interval below 0: more 'absent' after an edit elsewhere "
                   "than after the lesion is erased): " + "; ".join(
                       f"{r.label} {_esg(r)}" for r in by[AGAINST]) + ".")
    if by.get(BLIND_BY_DESIGN):
        out.append("- **Image-blind by design** (the condition never shows the case's image, so it cannot "
                   "follow it; an ESG away from 0 comes from the question's wording): " + "; ".join(
                       f"{r.label} ({r.shown}) {_esg(r)}" for r in by[BLIND_BY_DESIGN]) + ".")
    if by.get(CONSTANT):
        out.append("- **Image-blind by construction** (the same decision on every view; ESG 0; shown as a "
                   "reference, never ranked): " + ", ".join(r.label for r in by[CONSTANT]) + ".")
    heads = [d for d in diffs if d.metric in ("esg", "erased_claims", "net_utility") and np.isfinite(d.value)]
    labels = list(dict.fromkeys(d.label for d in heads))
    for label in labels[:MAX_HEADLINES]:  # one line per model; the paired table holds every comparison
        ds = [d for d in heads if d.label == label]
        shared = max(d.n_cases for d in ds)
        out.append(f"- **{label} minus {ds[0].reference}** (paired case bootstrap"
                   + (f" over {shared} shared cases" if shared else "") + "): " + "; ".join(
            f"{NAMES[d.metric]} {d.value:+.3f} [{d.lo:+.3f}, {d.hi:+.3f}], {p_text(d.p, d.n_boot)}" for d in ds) + ".")
    if len(labels) > MAX_HEADLINES:
        out.append(f"- {len(labels) - MAX_HEADLINES} more comparisons in [the paired differences](#paired).")
    readers = [r for r in rows if not r.constant and np.isfinite(r.net_utility)]
    blind = [r for r in rows if r.constant and np.isfinite(r.net_utility)]
    if readers and blind:
        best_b = max(blind, key=lambda r: r.net_utility)
        beaten = [r.label for r in readers if r.net_utility <= best_b.net_utility]
        if beaten:
            out.append(f"- **Caveat, cost matrix**: the constant policy {best_b.label} earns net utility "
                       f"{best_b.net_utility:.3f}, at or above {', '.join(beaten)}; under this matrix a policy "
                       "that never reads the image can look good (counterfactual paper §5.5), so read net utility beside ESG.")
    caveats = [f"{facts.n_cases} cases, {facts.n_views} views on test set '{facts.test_set}'"
               + (f", cost matrix `{facts.cost_matrix}`" if facts.cost_matrix else "")]
    if facts.n_cases < SMALL_N:
        caveats.append(f"fewer than {SMALL_N} cases, so intervals are wide and most differences are not resolved")
    if facts.sources and set(facts.sources) <= {"phantom"}:
        caveats.append("phantom (generated) images only: this shows the pipeline works, not how any model "
                       "performs on patients")
    out.append("- **Run**: " + "; ".join(caveats) + ".")
    return out


__all__ = ["AGAINST", "BLIND_BY_DESIGN", "CONSTANT", "Difference", "FOLLOWS", "ModelRow", "RunFacts", "UNCLEAR",
           "constant_policies", "summary_lines", "verdict"]
