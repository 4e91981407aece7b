"""The counterfactual run's opening summary and key figures (the counterfactual paper §5.1, Table 5,
Table 6, Figure 3): the metrics tables turned into ``medscope.protocols.counterfactual.summary`` rows, the
summary section, the forest plot and the erased-claims-vs-CCR scatter."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medscope.io import records, storage
from medscope.protocols.counterfactual import plots
from medscope.protocols.counterfactual import summary
from medscope.protocols.counterfactual.agent_episode import IMAGE_BLIND_CONDITIONS
from medscope.render.document import Image, Raw, Section, slug


def _val(metrics, model, cond, ts, metric):
    r = metrics[(metrics.model == model) & (metrics.condition == cond) & (metrics.test_set == ts)
                & (metrics.metric == metric) & (metrics.breakdown == "all")]
    if r.empty:
        return np.nan, np.nan, np.nan
    r = r.iloc[0]
    return tuple(float(x) if pd.notna(x) else np.nan for x in (r.value, r.ci_low, r.ci_high))


def model_rows(metrics: pd.DataFrame, keys, ts: str, constant: set, label) -> list[summary.ModelRow]:
    """One ``summary.ModelRow`` per (model, condition) of test set ``ts``.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Metrics rows; the breakdown ``all`` rows of ``esg``, ``erased_claims`` and ``net_utility`` are read.
    keys : iterable of tuple of (str, str)
        The (model, condition) runs, in order.
    ts : str
        The test set.
    constant : set of tuple
        The (model, condition) pairs that are constant policies.
    label : callable
        ``label(model, condition) -> str``, the row's name.

    Returns
    -------
    list of summary.ModelRow
        ESG with its interval and the cases it is over, erased-lesion claims and net utility (NaN
        when missing), one per key; ``shown`` says what a condition of ``IMAGE_BLIND_CONDITIONS``
        shows instead of the image.

    References
    ----------
    .. [1] counterfactual paper, §3.8, Table 5.
    """
    rows = []
    for m, c in keys:
        e, lo, hi = _val(metrics, m, c, ts, "esg")
        rows.append(summary.ModelRow(label(m, c), e, lo, hi, _val(metrics, m, c, ts, "erased_claims")[0],
                                     _val(metrics, m, c, ts, "net_utility")[0], (m, c) in constant,
                                     IMAGE_BLIND_CONDITIONS.get(c, ""), _cases(metrics, m, c, ts, "esg")))
    return rows


def _cases(metrics, model, cond, ts, metric) -> int:
    r = metrics[(metrics.model == model) & (metrics.condition == cond) & (metrics.test_set == ts)
                & (metrics.metric == metric) & (metrics.breakdown == "all")]
    return int(r.n_cases.iloc[0]) if len(r) and pd.notna(r.n_cases.iloc[0]) else 0


def differences(comps: pd.DataFrame, ts: str, constant: set, label) -> list[summary.Difference]:
    """Paired differences of non-constant models against the reference on test set ``ts``.

    Parameters
    ----------
    comps : pandas.DataFrame
        Comparison rows (``reference`` = "model" or "model:condition").
    ts : str
        The test set.
    constant : set of tuple
        The (model, condition) pairs that are constant policies; left out.
    label : callable
        ``label(model, condition) -> str``; the reference's condition defaults to the row's.

    Returns
    -------
    list of summary.Difference
        One per breakdown ``all`` row: value, 95% interval, p (NaN when missing), ``n_boot`` and
        the shared cases (0 when missing).

    References
    ----------
    .. [1] counterfactual paper, §3.9, Table 6.
    """
    out = []
    part = comps[(comps.breakdown == "all") & (comps.test_set == ts)]
    for r in part.itertuples():
        if (r.model, r.condition) in constant:
            continue
        ref_model, _, ref_cond = str(r.reference).partition(":")
        out.append(summary.Difference(label(r.model, r.condition), label(ref_model, ref_cond or r.condition),
                                      r.metric, float(r.value), float(r.ci_low), float(r.ci_high),
                                      float(r.p_value) if pd.notna(r.p_value) else np.nan,
                                      int(r.n_boot) if pd.notna(r.n_boot) else 0,
                                      int(r.n_cases) if pd.notna(r.n_cases) else 0))
    return out


def sources(manifest: dict) -> list[str]:
    """The image sources of the run's views table.

    Parameters
    ----------
    manifest : dict
        The scored run's ``run.json``; reads ``views``.

    Returns
    -------
    list of str
        The distinct non-empty ``source`` values, sorted; empty when the manifest names no views
        table or it does not exist.
    """
    uri = manifest.get("views")
    if not uri or not storage.exists(uri):
        return []
    return sorted({s for s in records.read_table("views", uri, columns=["source"]).column("source").to_pylist() if s})


def summary_section(rows, diffs, facts) -> Section:
    """The report's opening summary section, with the definition of ESG.

    Parameters
    ----------
    rows : list of summary.ModelRow
        The main test's rows (:func:`model_rows`).
    diffs : list of summary.Difference
        The paired differences (:func:`differences`).
    facts : summary.RunFacts
        The run's size, sources, test set and cost matrix.

    Returns
    -------
    Section
        "Summary: which models read the image?", anchor ``summary``.

    References
    ----------
    .. [1] counterfactual paper, §3.8.
    """
    lines = summary.summary_lines(rows, diffs, facts)
    lines.append("- Definitions: ESG = P(absent or refer | lesion erased) − P(absent or refer | an edit elsewhere), "
                 "counterfactual paper §3.8; details in [the main table](#main-" + slug(facts.test_set) + ") and [the paired differences](#paired).")
    return Section("Summary: which models read the image?", [Raw("\n".join(lines))], anchor="summary")


def figures_section(metrics, keys, ts, constant, label) -> Section:
    """Forest plot of ESG / erased claims / net utility and the erased-claims-vs-CCR scatter.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Metrics rows; breakdown ``all`` of ``esg``, ``erased_claims``, ``net_utility`` and ``ccr``.
    keys : iterable of tuple of (str, str)
        The (model, condition) runs, in order.
    ts : str
        The main test set.
    constant : set of tuple
        The (model, condition) pairs that are constant policies.
    label : callable
        ``label(model, condition) -> str``.

    Returns
    -------
    Section
        "Key figures", anchor ``figures``: ``forest.png`` and ``claims_vs_ccr.png`` with their captions.

    References
    ----------
    .. [1] counterfactual paper, §5.1, Table 5, Table 6.
    """
    long, wide = [], []
    for m, c in keys:
        const = (m, c) in constant
        row = {"label": label(m, c), "constant": const}
        for metric in ("esg", "erased_claims", "net_utility", "ccr"):
            v, lo, hi = _val(metrics, m, c, ts, metric)
            row[{"erased_claims": "erased"}.get(metric, metric)] = v
            if metric != "ccr":
                long.append({"label": label(m, c), "metric": metric, "value": v, "lo": lo, "hi": hi,
                             "constant": const})
        wide.append(row)
    long, wide = pd.DataFrame(long), pd.DataFrame(wide)
    n_const = int(wide.constant.sum())
    return Section("Key figures", [
        Image(plots.forest(long), "forest.png",
              "Forest plot: ESG, erased-lesion claims and net utility per model with 95% intervals; "
              "constant policies as one grey reference band"),
        Raw(f"Main test '{ts}': point = estimate, bar = 95% case-bootstrap interval. ESG is over erased and "
            "random-removal views, erased-lesion claims over erased views, net utility over all views. "
            f"Grey band: the range of the {n_const} constant-policy runs (the same decision on every view), which "
            "read no image and are a reference, not a competitor."),
        Image(plots.claims_vs_ccr(wide), "claims_vs_ccr.png",
              "Scatter of erased-lesion claims against CCR per model, coloured by ESG; constant policies as grey crosses"),
        Raw("Erased-lesion claims (% of erased views) against CCR (share of original and random-removal views "
            "answered correctly). Low claims alone do not mean a model reads the image: a model that rarely says "
            "'present' also has low CCR (counterfactual paper §5.1); the colour is ESG, which weighs both."),
    ], anchor="figures")
