"""The counterfactual protocol's report figures (counterfactual paper), each returning PNG bytes.

- ``forest``: ESG, erased-lesion claims and net utility per model with 95% intervals, the
  constant policies as one grey reference band per panel (Table 5, Table 6).
- ``claims_vs_ccr``: erased-lesion claims against CCR (§5.1's ranking reversal).
- ``esg_by_size_quartile``: ESG by lesion-area quartile with n per quartile (Figure 3).
- ``risk_coverage``: selective risk against coverage on answerable views (§3.8, §5.5).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from medscope.render.plots import band, error_bars, png
from medscope.analysis import selective_risk as selective

# The counterfactual paper §3.8: CCR and selective risk are over the answerable views O ∪ R.
RISK_KINDS = ("original", "random_removal")


def forest(table: pd.DataFrame) -> bytes:
    """Forest plot: one panel per metric, one row per non-constant model, point and 95% interval.

    ``table``: columns label, metric (esg | erased_claims | net_utility), value, lo, hi, constant.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``label``, ``metric`` (``esg``, ``erased_claims`` as a share, ``net_utility``), ``value``,
        ``lo``, ``hi`` and ``constant`` (a constant policy: drawn as the panel's grey band).

    Returns
    -------
    bytes
        The figure as PNG.

    References
    ----------
    .. [1] counterfactual paper, Table 5, Table 6.
    """
    panels = [("esg", "ESG (higher: follows the image)"), ("erased_claims", "erased-lesion claims (%)"),
              ("net_utility", "net utility")]
    labels = list(dict.fromkeys(table[~table.constant].label))
    fig, axes = plt.subplots(1, 3, figsize=(10, 0.9 + 0.38 * max(len(labels), 1)), sharey=True)
    y = np.arange(len(labels))[::-1]
    for ax, (metric, title) in zip(axes, panels):
        part = table[table.metric == metric]
        scale = 100.0 if metric == "erased_claims" else 1.0
        band(ax, part[part.constant].value * scale)
        rows = part[~part.constant].set_index("label").reindex(labels)
        ax.errorbar(rows.value * scale, y, xerr=error_bars(rows.value * scale, rows.lo * scale, rows.hi * scale),
                    fmt="o", color="#1f4e79", capsize=3)
        if metric == "esg":
            ax.axvline(0, color="#555", lw=0.8, ls=":")
        ax.set_title(title, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, labels, fontsize=8)
    axes[0].set_ylim(-0.7, len(labels) - 0.3)
    if table.constant.any():
        fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, -0.02),
                   fontsize=8, frameon=False, ncol=2)
        fig.subplots_adjust(bottom=0.3 / (0.9 + 0.38 * max(len(labels), 1)) * 2.5)
    return png(fig)


def claims_vs_ccr(table: pd.DataFrame) -> bytes:
    """Erased-lesion claims (% of erased views) against CCR, one point per model; constant
    policies as grey crosses, labelled, since both axes are gamed by always answering one way.

    ``table``: columns label, ccr, erased, esg, constant.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``label``, ``ccr``, ``erased`` (a share), ``esg`` (the points' colour) and ``constant``.

    Returns
    -------
    bytes
        The figure as PNG.

    References
    ----------
    .. [1] counterfactual paper, §5.1.
    """
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    real = table[~table.constant]
    sc = ax.scatter(real.ccr, 100 * real.erased, c=real.esg, cmap="viridis", vmin=0, vmax=1, s=45,
                    edgecolor="k", zorder=3)
    def note(r, **kw):  # labels on the right half point left, so none runs into the colour bar
        right = r.ccr > 0.6
        ax.annotate(r.label, (r.ccr, 100 * r.erased), xytext=(-5 if right else 5, kw.pop("dy", 3)),
                    textcoords="offset points", ha="right" if right else "left", **kw)

    for r in real.itertuples():
        note(r, fontsize=7)
    const = table[table.constant].drop_duplicates(["ccr", "erased"])
    if len(const):
        ax.scatter(const.ccr, 100 * const.erased, marker="x", color="grey", label="constant policy", zorder=2)
        for r in const.itertuples():
            note(r, fontsize=6, color="grey", dy=-10)
        ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)
    fig.colorbar(sc, ax=ax, label="ESG")
    ax.set_xlabel("CCR (share of original and random-removal views answered correctly)")
    ax.set_ylabel("erased-lesion claims (% of erased views)")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-5, 105)
    ax.grid(alpha=0.3)
    return png(fig)


def esg_by_size_quartile(metrics: pd.DataFrame, models: list[str]) -> bytes:
    """ESG with 95% interval per lesion-area quartile, one dodged series per model, n (cases with
    a lesion mask) under each quartile, the legend outside the data.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Metrics rows; the ``esg`` rows with breakdown ``size_quartile=Q1`` ... ``Q4`` are drawn.
    models : list of str
        The models drawn, in the legend's order.

    Returns
    -------
    bytes
        The figure as PNG.

    References
    ----------
    .. [1] counterfactual paper, Figure 3.
    """
    qs = ["Q1", "Q2", "Q3", "Q4"]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    width = 0.7 / max(len(models), 1)
    ns = {}
    for i, m in enumerate(models):
        esg = metrics[(metrics.model == m) & (metrics.metric == "esg")]
        rows = [esg[esg.breakdown == f"size_quartile={q}"] for q in qs]
        y = np.array([r.value.iloc[0] if len(r) else np.nan for r in rows], float)
        lo = np.array([r.ci_low.iloc[0] if len(r) else np.nan for r in rows], float)
        hi = np.array([r.ci_high.iloc[0] if len(r) else np.nan for r in rows], float)
        for q, r in zip(qs, rows):
            if len(r):
                ns[q] = max(ns.get(q, 0), int(r.n_cases.iloc[0]))
        x = np.arange(4) + (i - (len(models) - 1) / 2) * width
        ax.errorbar(x, y, yerr=error_bars(y, lo, hi), fmt="o-", capsize=3, label=m, lw=1)
    ax.set_xticks(range(4), [f"{q}{' (smallest)' if q == 'Q1' else ''}\nn = {ns.get(q, 0)}" for q in qs])
    ax.set_xlabel("quartile of lesion area (share of image); n = cases with a lesion mask")
    ax.set_ylabel("ESG")
    ax.set_ylim(-1.05, 1.05)
    ax.axhline(0, color="grey", lw=0.8, ls=":")
    if models:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return png(fig)


def risk_coverage(scores: pd.DataFrame, models: list[str]) -> bytes:
    """Selective risk against coverage on the answerable views O ∪ R, ranked by stated confidence.

    Parameters
    ----------
    scores : pandas.DataFrame
        Scores rows; reads ``model``, ``kind``, ``correct`` and ``confidence``.
    models : list of str
        The models drawn; one without answerable views is left out.

    Returns
    -------
    bytes
        The figure as PNG.

    References
    ----------
    .. [1] counterfactual paper, §3.8, §5.5.
    """
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for m in models:
        part = scores[(scores.model == m) & scores.kind.isin(RISK_KINDS)]
        if part.empty:
            continue
        c = selective.risk_coverage(part.correct.to_numpy(bool), part.confidence.to_numpy(float))
        ax.plot(c.coverage, c.risk, label=f"{m} (AURC {selective.aurc(c):.3f}, n = {len(part)})")
    ax.set_xlabel("coverage (share of original + random-removal views kept, most confident first)")
    ax.set_ylabel("selective risk (share wrong)")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    if models:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return png(fig)
