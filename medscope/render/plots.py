"""Shared pieces of the report's figures (matplotlib, Agg backend): PNG bytes, error bars from
intervals, the grey band of the constant policies. Each protocol draws its own figures from
these (``protocols/counterfactual/plots.py``, ``protocols/organ_presence/plots.py``).

Constant policies are never drawn as competitors: a policy that ignores the image has ESG 0 by
construction and would otherwise sit at the "best" end of some axes (claims, selective risk).
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

BAND = "#cfcfcf"


def png(fig) -> bytes:
    """The figure as PNG bytes (no software tag, so identical figures give identical bytes); closes it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure; saved at 90 dpi with a tight bounding box, then closed.

    Returns
    -------
    bytes
        The PNG file.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def error_bars(y, lo, hi) -> np.ndarray:
    """matplotlib's ``yerr`` (distances below and above) from values and their interval bounds.

    Parameters
    ----------
    y : array_like of float
        The plotted values.
    lo, hi : array_like of float
        Their interval bounds, same length as ``y``.

    Returns
    -------
    numpy.ndarray
        Shape (2, n): distances below and above each value, clipped at 0, NaN read as 0.
    """
    y, lo, hi = (np.asarray(a, float) for a in (y, lo, hi))
    return np.vstack([np.nan_to_num(np.clip(y - lo, 0, None)), np.nan_to_num(np.clip(hi - y, 0, None))])


def band(ax, values, vertical=True, label="constant policies"):
    """One grey reference band over the range of the constant policies' values.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    values : iterable of float
        The constant policies' values; non-finite ones are skipped (none finite: nothing is drawn).
    vertical : bool
        True: a vertical band over an x range (``axvspan``); False: a horizontal one over a y range.
    label : str
        The band's legend label.
    """
    v = np.asarray([x for x in values if np.isfinite(x)], float)
    if not len(v):
        return
    lo, hi = v.min(), v.max()
    span = (ax.axvspan if vertical else ax.axhspan)
    line = (ax.axvline if vertical else ax.axhline)
    if hi - lo < 1e-9:
        line(lo, color=BAND, lw=6, zorder=0, label=label)
    else:
        span(lo, hi, color=BAND, zorder=0, label=label)
