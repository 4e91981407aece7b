"""The report's figures draw what their captions say: the lesion-size plot an interval for every
point that has one (and a hollow point where there is none to draw), the scatter labels that
never sit on one another."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.container import ErrorbarContainer

from medscope.protocols.counterfactual import plots


def _size_metrics() -> pd.DataFrame:
    """One model's ESG per quartile: Q1 and Q4 with intervals over several cases, Q2 over one
    case (its bootstrap cannot vary: bounds equal the value), Q3 without bounds."""
    rows = [("Q1", 0.4, 0.1, 0.8, 7), ("Q2", 0.5, 0.5, 0.5, 1), ("Q3", 0.2, None, None, 5), ("Q4", -0.1, -0.4, 0.3, 6)]
    return pd.DataFrame([{"model": "reader", "condition": "agent", "test_set": "main", "metric": "esg",
                          "breakdown": f"size_quartile={q}", "value": v, "ci_low": lo, "ci_high": hi, "n_cases": n}
                         for q, v, lo, hi, n in rows])


def test_size_plot_draws_an_interval_for_every_point_that_has_one_and_no_other():
    points = plots.size_quartile_points(_size_metrics(), ["reader"])
    assert points.set_index("quartile").interval.to_dict() == {"Q1": True, "Q2": False, "Q3": False, "Q4": True}
    fig = plots.esg_by_size_quartile_figure(points, ["reader"])
    try:
        ax = fig.axes[0]
        (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        # the vertical bars drawn: exactly Q1's and Q4's intervals, at their x positions 0 and 3
        segments = [seg for coll in bars.lines[2] for seg in coll.get_segments()]
        drawn = sorted((round(float(s[0, 0]), 6), round(float(min(s[:, 1])), 6), round(float(max(s[:, 1])), 6))
                       for s in segments)
        assert drawn == [(0.0, 0.1, 0.8), (3.0, -0.4, 0.3)]
        # Q2 and Q3 are hollow points at their values, and the legend says what a hollow point is
        hollow = [ln for ln in ax.lines if ln.get_marker() == "o" and ln.get_markerfacecolor() == "white"
                  and len(ln.get_xdata())]
        assert [(list(ln.get_xdata()), list(ln.get_ydata())) for ln in hollow] == [([1.0, 2.0], [0.5, 0.2])]
        assert "no interval (one case, or none computed)" in [t.get_text() for t in ax.get_legend().get_texts()]
    finally:
        plt.close(fig)


def test_scatter_labels_of_runs_on_one_spot_do_not_overlap():
    # a model's sighted, blind and plain runs with near-identical rates, and two constant policies
    table = pd.DataFrame([
        {"label": "my-vlm [agent]", "ccr": 0.70, "erased": 0.40, "esg": 0.30, "constant": False},
        {"label": "my-vlm [blind]", "ccr": 0.70, "erased": 0.41, "esg": 0.02, "constant": False},
        {"label": "my-vlm [plain]", "ccr": 0.71, "erased": 0.40, "esg": 0.25, "constant": False},
        {"label": "always-present [agent]", "ccr": 1.0, "erased": 1.0, "esg": 0.0, "constant": True},
        {"label": "always-present [blind]", "ccr": 1.0, "erased": 0.99, "esg": 0.0, "constant": True},
    ])
    fig = plots.claims_vs_ccr_figure(table)
    try:
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        labels = [t for t in ax.texts if t.get_text() in set(table.label)]
        assert sorted(t.get_text() for t in labels) == sorted(table.label)
        boxes = {t.get_text(): t.get_window_extent(renderer) for t in labels}
        overlapping = [(a, b) for a, b in itertools.combinations(boxes, 2) if boxes[a].overlaps(boxes[b])]
        assert overlapping == []
        # each label still belongs to its point: anchored at the point's own coordinates
        for t in labels:
            r = table[table.label == t.get_text()].iloc[0]
            assert np.allclose(t.xy, (r.ccr, 100 * r.erased))
    finally:
        plt.close(fig)
