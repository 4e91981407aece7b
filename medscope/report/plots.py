"""Report figures (matplotlib, Agg backend): ESG by lesion-size quartile (seed 000 Figure 3)
and risk-coverage curves (§3.8, §5.5). Each function returns PNG bytes."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from medscope.scoring import selective  # noqa: E402


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def esg_by_size_quartile(metrics: pd.DataFrame, models: list[str]) -> bytes:
    """ESG with 95% interval per lesion-area quartile, one line per model."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    qs = ["Q1", "Q2", "Q3", "Q4"]
    for i, m in enumerate(models):
        rows = metrics[(metrics.model == m) & (metrics.metric == "esg")]
        vals = [rows[rows.breakdown == f"size_quartile={q}"] for q in qs]
        y = np.array([r.value.iloc[0] if len(r) else np.nan for r in vals], dtype=float)
        lo = np.array([r.ci_low.iloc[0] if len(r) else np.nan for r in vals], dtype=float)
        hi = np.array([r.ci_high.iloc[0] if len(r) else np.nan for r in vals], dtype=float)
        x = np.arange(4) + (i - len(models) / 2) * 0.04
        err = np.vstack([np.nan_to_num(y - lo), np.nan_to_num(hi - y)])
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=m)
    ax.set_xticks(range(4), [f"{q} (smallest)" if q == "Q1" else q for q in qs])
    ax.set_xlabel("quartile of lesion area (share of image)")
    ax.set_ylabel("ESG")
    ax.axhline(0, color="grey", lw=0.8)
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def risk_coverage(scores: pd.DataFrame, models: list[str]) -> bytes:
    """Selective risk against coverage on answerable views, ranked by stated confidence."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for m in models:
        part = scores[(scores.model == m) & scores.kind.isin(("original", "random_removal"))]  # O u R (§5.5)
        if part.empty:
            continue
        c = selective.risk_coverage(part.correct.to_numpy(bool), part.confidence.to_numpy(float))
        ax.plot(c.coverage, c.risk, label=f"{m} (AURC {selective.aurc(c):.3f})")
    ax.set_xlabel("coverage (share of answerable views kept, most confident first)")
    ax.set_ylabel("selective risk")
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7)
    return _png(fig)
