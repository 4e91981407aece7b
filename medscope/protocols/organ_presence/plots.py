"""The organ-presence protocol's figures (organ-presence paper): specificity per negative strategy
(the report), and the probe build's organ co-occurrence heat map (``medscope probe show``)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

# medscope.render.plots selects the Agg backend before pyplot loads
from medscope.render.plots import error_bars, png
import matplotlib.pyplot as plt  # noqa: E402


def specificity_by_strategy(table: pd.DataFrame, strategies) -> bytes:
    """Probe specificity per negative strategy with 95% intervals, one dodged series per
    model x condition; constant policies as dashed grey reference lines.

    ``table``: columns label, strategy, value, lo, hi, n, constant.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`report.specificity_long`'s table: columns ``label``, ``strategy``, ``value``, ``lo``,
        ``hi``, ``n``, ``constant``.
    strategies : sequence of str
        The negative strategies, in the order of the x axis.

    Returns
    -------
    bytes
        The figure as PNG.

    References
    ----------
    .. [1] organ-presence paper.
    """
    labels = list(dict.fromkeys(table[~table.constant].label))
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    xs = np.arange(len(strategies))
    # constant policies sit at 0 and 1 here, so a band would cover the whole axis: dashed lines instead
    for i, v in enumerate(sorted({round(float(x), 6) for x in table[table.constant].value if np.isfinite(x)})):
        ax.axhline(v, color="grey", ls="--", lw=1, zorder=0, label="constant policies" if i == 0 else None)
    width = 0.7 / max(len(labels), 1)
    for i, lab in enumerate(labels):
        rows = table[table.label == lab].set_index("strategy").reindex(list(strategies))
        x = xs + (i - (len(labels) - 1) / 2) * width
        ax.errorbar(x, rows.value, yerr=error_bars(rows.value, rows.lo, rows.hi), fmt="o", capsize=3, label=lab)
    ns = table.groupby("strategy").n.max()
    ax.set_xticks(xs, [f"{s}\nn = {int(ns.get(s, 0))}" for s in strategies])
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("specificity (absent on a real absence)")
    ax.set_xlabel("negative strategy; n = cases")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return png(fig)


def cooccurrence_png(stats) -> bytes:
    """Heat map of P(column organ present | row organ present) over a probe build's slices.

    Parameters
    ----------
    stats : medscope.volumes.presence.CohortStats
        Slice-level organ counts of the cohort (a probe build's ``cohort_stats.json``); each row's
        label carries the organ's slice frequency.

    Returns
    -------
    bytes
        The figure as PNG.

    References
    ----------
    .. [1] organ-presence paper
    """
    names, m = stats.matrix()
    fig, ax = plt.subplots(figsize=(1.2 + 0.45 * len(names), 1.0 + 0.45 * len(names)))
    im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), [f"{n} ({stats.frequency(n):.2f})" for n in names], fontsize=7)
    ax.set_title("P(column present | row present), slice level", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    # saved as `probe show` always wrote it (dpi 100, no tight bbox), not through render.plots.png,
    # so the heat map a user already has is redrawn the same
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()
