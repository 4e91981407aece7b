"""The probe's section of the report: specificity by strategy and format, and its plot (seed 003)."""

from __future__ import annotations

import io

import numpy as np

from medscope import layout, records
from medscope.protocols.organ_presence.scoring import NEGATIVE_STRATEGIES


def _fmt(v, lo, hi) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if lo is None or (isinstance(lo, float) and np.isnan(lo)):
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def _breakdown(row: dict) -> dict:
    return dict(p.split("=", 1) for p in row["breakdown"].split(";") if "=" in p)


def specificity_table(metrics: list[dict], metric: str = "specificity") -> list[dict]:
    """One row per model x condition: the metric per negative strategy (value, low, high)."""
    table: dict[tuple, dict] = {}
    for r in metrics:
        b = _breakdown(r)
        if r["metric"] != metric or b.get("strategy") not in NEGATIVE_STRATEGIES or "z>" in r["breakdown"]:
            continue
        key = (r["model"], r["condition"], b.get("render", ""))
        table.setdefault(key, {"model": key[0], "condition": key[1], "render": key[2]})[b["strategy"]] = (
            r["value"], r["ci_low"], r["ci_high"])
    return [table[k] for k in sorted(table)]


def probe_report_section(metrics: list[dict]) -> tuple[str, str, dict[str, bytes]]:
    """(title, markdown, {file name: PNG bytes}) of the probe for the report.

    ``metrics``: rows of the probe's metrics table (``medscope score`` of an organ-presence run).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title = "Volumetric organ presence (POPE for 3D anatomy)"
    spec = specificity_table(metrics, "specificity")
    conf = {(r["model"], r["condition"], r["render"]): r for r in specificity_table(metrics, "confident_specificity")}
    sens = {(r["model"], r["condition"]): r for r in metrics
            if r["metric"] == "sensitivity" and r["breakdown"].startswith("strategy=positive")}
    lines = [
        "Specificity on real absences (no pixel altered) by negative strategy, with case-clustered 95% CIs; "
        "confident-answer specificity drops hedged replies from numerator and denominator.",
        "",
        "| model | condition | sensitivity | " + " | ".join(f"spec. {s}" for s in NEGATIVE_STRATEGIES)
        + " | conf. spec. adversarial |",
        "|---|---|---|" + "---|" * len(NEGATIVE_STRATEGIES) + "---|",
    ]
    for r in spec:
        s = sens.get((r["model"], r["condition"]))
        sv = _fmt(s["value"], s["ci_low"], s["ci_high"]) if s else "–"
        cells = [_fmt(*r.get(st, (None, None, None))) for st in NEGATIVE_STRATEGIES]
        c = conf.get((r["model"], r["condition"], r["render"]), {}).get("adversarial", (None, None, None))
        lines.append(f"| {r['model']} | {r['condition']} | {sv} | " + " | ".join(cells) + f" | {_fmt(*c)} |")
    slopes = [r for r in metrics if r["metric"] == "zdist_slope_per_mm" and r["value"] is not None]
    if slopes:
        lines += ["", "Correct rejection vs z-distance (logistic slope, log-odds per mm, cluster-robust CI):", ""]
        lines += [f"- {r['model']} / {r['condition']}: {_fmt(r['value'], r['ci_low'], r['ci_high'])}" for r in slopes]
    cues = [r for r in metrics if r["metric"] == "hedge_cue_share"]
    if cues:
        lines += ["", "Hedge cues (first cue that fired, share of hedged negatives):", ""]
        lines += [f"- {r['model']} / {r['condition']}: {r['breakdown'].rsplit('cue=', 1)[-1]} {r['value']:.2f}"
                  for r in cues]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    xs = np.arange(len(NEGATIVE_STRATEGIES))
    for r in spec:
        vals = [r.get(s, (np.nan, np.nan, np.nan)) for s in NEGATIVE_STRATEGIES]
        v = np.array([np.nan if x[0] is None else x[0] for x in vals], dtype=float)
        lo = np.array([np.nan if x[1] is None else x[1] for x in vals], dtype=float)
        hi = np.array([np.nan if x[2] is None else x[2] for x in vals], dtype=float)
        ax.errorbar(xs, v, yerr=[np.nan_to_num(v - lo), np.nan_to_num(hi - v)], marker="o", capsize=3,
                    label=f"{r['model']} · {r['condition']}")
    ax.set_xticks(xs, NEGATIVE_STRATEGIES)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("specificity")
    ax.set_title("Organ-presence probe: specificity by negative strategy")
    if spec:
        ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    # the renderer writes images where the report lives (any URI), so nothing is written here
    return title, "\n".join(lines), {"probe_specificity.png": buf.getvalue()}


def report_sections(scored_run: str, work_dir: str) -> tuple[list, dict]:
    """The probe's report section: the specificity table and the specificity-by-strategy plot."""
    from medscope.report.render import Image, Raw, Section

    metrics = records.read_table("metrics", layout.ScoredRun(scored_run).metrics).to_pylist()
    title, markdown, pngs = probe_report_section(metrics)
    blocks: list = [Raw(markdown)]
    blocks += [Image(png, name, "probe specificity by negative strategy") for name, png in pngs.items()]
    return [Section(title, blocks)], {}
