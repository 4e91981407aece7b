"""Verbs of ``medscope probe`` (build / show / score) and ``medscope bench probe``."""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time

from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.volumes.metrics import probe_metrics, score_episodes
from medscope.volumes.presence import CohortStats

ITEM_COLUMNS = ["item_id", "case_id", "z", "z_mm", "organ", "truth", "strategy", "stratum",
                "z_distance_mm", "absent_from_volume", "render"]


def register(sub) -> None:
    p = sub.add_parser("probe", help="volumetric organ-presence probe (seed 003)")
    verbs = p.add_subparsers(dest="probe_verb", metavar="VERB")
    verbs.required = True
    b = verbs.add_parser("build", help="volumes table -> probe_items (+ slices, rejects) on Ray Data")
    b.add_argument("--volumes", required=True, help="volumes table URI")
    b.add_argument("--out", required=True, help="output folder URI")
    b.add_argument("--config", default=None, help="configs/probe/<file>.yaml (default: built-in defaults)")
    b.set_defaults(func=_build_cmd)
    s = verbs.add_parser("show", help="items per organ, strategy and stratum; co-occurrence heat map PNG")
    s.add_argument("uri", help="a probe build folder (or its probe_items table)")
    s.add_argument("--png", default=None, help="where to write the heat map (default: <build>/cooccurrence.png)")
    s.set_defaults(func=lambda a: print(json.dumps(show(a.uri, a.png), indent=2)))
    c = verbs.add_parser("score", help="episodes x probe_items -> probe_scores and metrics tables")
    c.add_argument("--episodes", required=True)
    c.add_argument("--items", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--config", default=None)
    c.set_defaults(func=_score_cmd)


def _build_cmd(args) -> None:
    from pipelines.jobs import print_summary
    from pipelines.probe import build, load_config

    print_summary(build(args.volumes, args.out, load_config(args.config)))


def _items_uri(uri: str) -> tuple[str, str]:
    """(probe_items URI, build folder URI) from either."""
    inner = storage.join(uri, "probe_items")
    if storage.is_dir(inner):
        return inner, uri
    return uri, uri.rstrip("/").rsplit("/", 1)[0] if "/" in uri.rstrip("/") else "."


def show(uri: str, png: str | None = None) -> dict:
    """Counts of items per organ / strategy / stratum, and the co-occurrence heat map."""
    items_uri, folder = _items_uri(uri)
    rows = records.read_table("probe_items", items_uri, columns=ITEM_COLUMNS).to_pylist()
    if not rows:
        raise MedScopeError(f"{items_uri}: no probe items")

    def count(*keys):
        out: dict[str, int] = {}
        for r in rows:
            k = " / ".join(str(r[x]) for x in keys)
            out[k] = out.get(k, 0) + 1
        return dict(sorted(out.items()))

    summary = {
        "items": len(rows),
        "cases": len({r["case_id"] for r in rows}),
        "by_organ_truth": count("organ", "truth"),
        "by_strategy": count("strategy"),
        "by_strategy_stratum": count("strategy", "stratum"),
        "absent_from_volume": sum(1 for r in rows if r["absent_from_volume"]),
    }
    stats_uri = storage.join(folder, "cohort_stats.json")
    if storage.exists(stats_uri):
        png = png or storage.join(folder, "cooccurrence.png")
        storage.write_bytes(png, cooccurrence_png(CohortStats.from_dict(json.loads(storage.read_text(stats_uri)))))
        summary["heatmap"] = png
    return summary


def cooccurrence_png(stats: CohortStats) -> bytes:
    """Heat map of P(column organ present | row organ present) over slices."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names, m = stats.matrix()
    fig, ax = plt.subplots(figsize=(1.2 + 0.45 * len(names), 1.0 + 0.45 * len(names)))
    im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), [f"{n} ({stats.frequency(n):.2f})" for n in names], fontsize=7)
    ax.set_title("P(column present | row present), slice level", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def score(episodes_uri: str, items_uri: str, out_uri: str, cfg=None) -> dict:
    """Read episodes against probe items; write probe_scores.parquet and metrics.parquet under out."""
    from medscope.volumes.config import ProbeConfig

    cfg = cfg or ProbeConfig()
    items_uri, _ = _items_uri(items_uri)
    items = {r["item_id"]: r for r in records.read_table("probe_items", items_uri, columns=ITEM_COLUMNS).to_pylist()}
    cols = ["run_id", "model", "condition", "view_id", "case_id", "raw_text", "error"]
    episodes = [e for e in records.read_table("episodes", episodes_uri, columns=cols).to_pylist() if e["view_id"] in items]
    if not episodes:
        raise MedScopeError(f"{episodes_uri}: no episodes of the probe items in {items_uri}")
    scored, skipped = score_episodes(episodes, items, cfg.hedge_lexicon)
    metrics = probe_metrics(scored, far_mm=cfg.far_mm, b=cfg.bootstrap_b, seed=cfg.bootstrap_seed)
    records.write_table("probe_scores", scored, storage.join(out_uri, "probe_scores.parquet"))
    records.write_table("metrics", metrics, storage.join(out_uri, "metrics.parquet"))
    headline = {
        f"{m['model']} | {m['condition']} | {m['breakdown']}": round(m["value"], 3)
        for m in metrics if m["metric"] == "specificity" and m["value"] is not None and "z>" not in m["breakdown"]
        and "absent_from_volume" not in m["breakdown"]
    }
    return {"episodes": len(episodes), "scored": len(scored), "skipped_errors": skipped,
            "metrics": storage.join(out_uri, "metrics.parquet"), "specificity": headline}


def _score_cmd(args) -> None:
    from pipelines.jobs import print_summary
    from pipelines.probe import load_config

    print_summary(score(args.episodes, args.items, args.out, load_config(args.config)))


def bench(args) -> None:
    """Volumes/s with 1 and 2 Ray workers, and peak memory for 4 and 16 volumes."""
    from medscope.volumes.config import ProbeConfig
    from medscope.volumes.synthetic import write_synthetic_volumes
    from pipelines.probe import build
    from pipelines.raycluster import ensure_ray

    ensure_ray()
    shape = (96, 96, 48) if args.quick else (256, 256, 128)
    n_speed = 4 if args.quick else 8
    with tempfile.TemporaryDirectory() as tmp:
        vols = {n: write_synthetic_volumes(os.path.join(tmp, f"v{n}"), n, shape) for n in sorted({n_speed, 4, 16})}
        cfg = ProbeConfig(slices_per_volume=12)
        # Warm-up: worker start-up is not the probe's cost.
        build(vols[4], os.path.join(tmp, "warm"), cfg.model_copy(update={"workers": 2}), progress=False)
        # Alternate 1 and 2 workers and keep each one's best run: the machine may be shared.
        rate = {1: 0.0, 2: 0.0}
        for rep in range(1 if args.quick else 2):
            for w in (1, 2):
                t0 = time.perf_counter()
                build(vols[n_speed], os.path.join(tmp, f"speed{w}-{rep}"), cfg.model_copy(update={"workers": w}),
                      progress=False)
                rate[w] = max(rate[w], n_speed / (time.perf_counter() - t0))
        mem = {}
        for n in (4, 16):
            s = build(vols[n], os.path.join(tmp, f"mem{n}"), cfg.model_copy(update={"workers": 2}), progress=False)
            mem[n] = (s["worker_peak_rss_mb"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
    print(f"probe build, volumes {shape}, {n_speed} volumes for throughput")
    print(f"  1 worker : {rate[1]:.2f} volumes/s")
    print(f"  2 workers: {rate[2]:.2f} volumes/s   speed-up {rate[2] / rate[1]:.2f}x (aim >= 1.7x)")
    for n in (4, 16):
        print(f"  {n:>2} volumes: worker peak RSS {mem[n][0]:.0f} MB, driver peak RSS {mem[n][1]:.0f} MB")
    print(f"  peak memory ratio 16/4 volumes (workers): {mem[16][0] / mem[4][0]:.2f} (should stay ~1)")


def report_entry(metrics_uri: str, work_dir: str) -> tuple[str, list]:
    """(title, blocks) of the probe for ``build_report(extra_sections=...)`` / ``ctx.report_sections``:
    the specificity table (Markdown) and the specificity-by-strategy plot."""
    from medscope.report.render import Image, Raw
    from medscope.volumes.report import probe_report_section

    metrics = records.read_table("metrics", metrics_uri).to_pylist()
    title, markdown, pngs = probe_report_section(metrics, work_dir)
    blocks: list = [Raw(markdown)]
    for path in pngs:
        with open(path, "rb") as fh:
            blocks.append(Image(fh.read(), os.path.basename(path), "probe specificity by strategy"))
    return title, blocks
