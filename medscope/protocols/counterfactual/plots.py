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


def claims_vs_ccr_figure(table: pd.DataFrame):
    """The open figure of :func:`claims_vs_ccr`, its point labels moved apart where they would
    overlap (a model's sighted and blind runs often sit on one spot).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``label``, ``ccr``, ``erased`` (a share), ``esg`` (the points' colour) and ``constant``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, drawn once so that its labels' extents are final.
    """
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    real = table[~table.constant]
    sc = ax.scatter(real.ccr, 100 * real.erased, c=real.esg, cmap="viridis", vmin=0, vmax=1, s=45,
                    edgecolor="k", zorder=3)
    notes = []

    def note(r, **kw):  # labels on the right half point left, so none runs into the colour bar
        right = r.ccr > 0.6
        notes.append(ax.annotate(r.label, (r.ccr, 100 * r.erased), xytext=(-5 if right else 5, kw.pop("dy", 3)),
                                 textcoords="offset points", ha="right" if right else "left", **kw))

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
    _separate(fig, notes)
    return fig


def _separate(fig, notes: list) -> None:
    """Move each label that overlaps one placed before it down by its own height, until none
    overlaps (labels are offset in points, their extents measured in pixels)."""
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    placed = []
    for text in notes:
        for _ in range(len(notes) + 1):  # each step clears one placed label at least
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(p) for p in placed):
                break
            dx, dy = text.xyann
            text.xyann = (dx, dy - (box.height + 2) * 72.0 / fig.dpi)
        placed.append(text.get_window_extent(renderer))


def claims_vs_ccr(table: pd.DataFrame) -> bytes:
    """Erased-lesion claims (% of erased views) against CCR, one point per model; constant
    policies as grey crosses, labelled, since both axes are gamed by always answering one way.
    Labels that would overlap are moved apart.

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
    return png(claims_vs_ccr_figure(table))


QUARTILES = ("Q1", "Q2", "Q3", "Q4")


def size_quartile_points(metrics: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The points of the lesion-size plot: each model's ESG per lesion-area quartile, with its
    interval where one can be drawn.

    A bootstrap over one case cannot vary, so a quartile of one case has no interval to show
    (its bounds equal its value); neither has a value whose bounds were not computed. Such a
    point is drawn hollow, and the report says so, rather than under a caption that promises an
    interval for every point.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Metrics rows; the ``esg`` rows with breakdown ``size_quartile=Q1`` ... ``Q4`` are read.
    models : list of str
        The models, in the legend's order.

    Returns
    -------
    pandas.DataFrame
        One row per model and quartile with a value: ``model``, ``quartile``, ``value``, ``lo``,
        ``hi``, ``n_cases`` and ``interval`` (True: finite bounds over at least two cases).
    """
    rows = []
    for m in models:
        esg = metrics[(metrics.model == m) & (metrics.metric == "esg")]
        for q in QUARTILES:
            r = esg[esg.breakdown == f"size_quartile={q}"]
            if not len(r) or pd.isna(r.value.iloc[0]):
                continue
            lo, hi, n = r.ci_low.iloc[0], r.ci_high.iloc[0], int(r.n_cases.iloc[0])
            rows.append({"model": m, "quartile": q, "value": float(r.value.iloc[0]),
                         "lo": float(lo) if pd.notna(lo) else np.nan, "hi": float(hi) if pd.notna(hi) else np.nan,
                         "n_cases": n, "interval": bool(pd.notna(lo) and pd.notna(hi) and n >= 2)})
    return pd.DataFrame(rows, columns=["model", "quartile", "value", "lo", "hi", "n_cases", "interval"])


def esg_by_size_quartile_figure(points: pd.DataFrame, models: list[str]):
    """The lesion-size figure from :func:`size_quartile_points`: one dodged series per model,
    filled points with their 95% interval, hollow points without one, n under each quartile.

    Parameters
    ----------
    points : pandas.DataFrame
        :func:`size_quartile_points`' rows.
    models : list of str
        The models drawn, in the legend's order.

    Returns
    -------
    matplotlib.figure.Figure
        The open figure (:func:`esg_by_size_quartile` saves and closes it).
    """
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    width = 0.7 / max(len(models), 1)
    ns = points.groupby("quartile").n_cases.max().to_dict() if len(points) else {}
    for i, m in enumerate(models):
        part = points[points.model == m].set_index("quartile").reindex(list(QUARTILES))
        x = np.arange(4) + (i - (len(models) - 1) / 2) * width
        line, = ax.plot(x, part.value, "-", lw=1, label=m)
        with_ci = part.interval.fillna(False).astype(bool).to_numpy()
        if with_ci.any():
            ax.errorbar(x[with_ci], part.value[with_ci], yerr=error_bars(part.value[with_ci], part.lo[with_ci],
                                                                           part.hi[with_ci]),
                        fmt="o", capsize=3, color=line.get_color())
        bare = ~with_ci & part.value.notna().to_numpy()
        if bare.any():
            ax.plot(x[bare], part.value[bare], "o", mfc="white", color=line.get_color())
    if len(points) and not points.interval.all():
        ax.plot([], [], "o", mfc="white", color="grey", label="no interval (one case, or none computed)")
    ax.set_xticks(range(4), [f"{q}{' (smallest)' if q == 'Q1' else ''}\nn = {ns.get(q, 0)}" for q in QUARTILES])
    ax.set_xlabel("quartile of lesion area (share of image); n = cases with a lesion mask")
    ax.set_ylabel("ESG")
    ax.set_ylim(-1.05, 1.05)
    ax.axhline(0, color="grey", lw=0.8, ls=":")
    if models:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return fig


def esg_by_size_quartile(metrics: pd.DataFrame, models: list[str]) -> bytes:
    """ESG with 95% interval per lesion-area quartile, one dodged series per model, n (cases with
    a lesion mask) under each quartile, the legend outside the data; a point with no interval to
    draw (:func:`size_quartile_points`) is hollow.

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
    return png(esg_by_size_quartile_figure(size_quartile_points(metrics, models), models))


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
