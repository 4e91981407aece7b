"""Verbs of ``medscope probe`` (build / show / score) and ``medscope bench probe``."""

from __future__ import annotations

import json
import os
import tempfile
import time

from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.protocols.organ_presence.scoring import probe_metrics, score_episodes
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
    from pipelines.support.jobs import print_summary
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
    from pipelines.support.jobs import print_summary
    from pipelines.probe import load_config

    print_summary(score(args.episodes, args.items, args.out, load_config(args.config)))


def bench(args) -> None:
    """``medscope bench probe``: volumes/s with 1 and 2 Ray workers; peak memory for 4 and 16 volumes.

    Every figure is a real ``build`` (both passes, files written) on the same synthetic NIfTI
    volumes. The first build of the process is reported apart: it pays the workers' start-up
    (process start, imports), which a real job pays once. The timed builds then alternate 1
    and 2 workers, twice, and every run is printed; the ratios use the mean of each.
    """
    import statistics

    from medscope.volumes.config import ProbeConfig
    from medscope.volumes.synthetic import write_synthetic_volumes
    from pipelines.probe import _peak_rss_mb, _reset_peak_rss, build
    from pipelines.support.raycluster import ensure_ray

    shape = (64, 64, 32) if args.quick else (192, 192, 96)
    n_speed = 16
    from pipelines.bench import parallel_ceiling

    load_before = os.getloadavg()[0]
    ceiling = [parallel_ceiling()[1]]
    with tempfile.TemporaryDirectory(prefix="medscope-bench-probe-") as tmp:
        # 16 volumes written once; the 4-volume table is its first 4 rows (same files)
        vols = {16: write_synthetic_volumes(os.path.join(tmp, "v16"), 16, shape)}
        vols[4] = os.path.join(tmp, "v4.parquet")
        records.write_table("volumes", records.read_table("volumes", vols[16]).slice(0, 4), vols[4])
        cfg = ProbeConfig(slices_per_volume=12)
        t = time.monotonic()
        ensure_ray()
        cluster_s = time.monotonic() - t
        print(f"probe build, synthetic volumes {shape} (.nii.gz), 12 slices per volume; "
              f"load average {load_before:.2f} at start", flush=True)
        cold = build(vols[4], os.path.join(tmp, "cold"), cfg.model_copy(update={"workers": 2}), progress=False)
        print(f"  first build of the process (4 volumes, 2 workers): {cold['seconds']:.1f}s, of which "
              f"{_startup(cold):.1f}s before the first volume started (worker start-up, paid once per job); "
              f"Ray cluster start before it {cluster_s:.1f}s", flush=True)
        print(f"  {'run':<12} {'volumes':>7} {'start-up':>9} {'steady':>8} {'build':>7}   "
              f"{'vol/s end-to-end':>16} {'vol/s steady':>13}", flush=True)
        runs: dict[int, list[dict]] = {1: [], 2: []}
        for rep in range(2):
            for w in (1, 2):
                s = build(vols[n_speed], os.path.join(tmp, f"speed{w}-{rep}"), cfg.model_copy(update={"workers": w}),
                          progress=False)
                r = {"e2e": n_speed / s["seconds"], "steady": n_speed / _steady(s), "startup": _startup(s),
                     "seconds": s["seconds"], "rss": s["worker_peak_rss_mb"]}
                runs[w].append(r)
                print(f"  {w} worker{'s' if w > 1 else ' '} #{rep + 1}  {n_speed:>7} {r['startup']:8.1f}s "
                      f"{_steady(s):7.1f}s {s['seconds']:6.1f}s   {r['e2e']:16.2f} {r['steady']:13.2f}", flush=True)
        mem = {}
        for n in (4, 16):
            _reset_peak_rss()
            s = build(vols[n], os.path.join(tmp, f"mem{n}"), cfg.model_copy(update={"workers": 2}), progress=False)
            mem[n] = (s["worker_peak_rss_mb"], _peak_rss_mb())
        ceiling.append(parallel_ceiling()[1])
    mean = {w: {k: statistics.mean(r[k] for r in runs[w]) for k in ("e2e", "steady")} for w in (1, 2)}
    print(f"  load average {os.getloadavg()[0]:.2f} at end (figures are only meaningful on an idle machine)")
    print("  start-up = both passes' time until their first volume began; steady = the rest of the two")
    print("  passes (first volume begun to last done); build = the whole build, driver work included")
    print(f"  machine ceiling: two plain processes at once ran {ceiling[0]:.2f}x / {ceiling[1]:.2f}x the speed of one"
          " (before / after; no Ray; 2.0 on truly free cores)")
    print(f"  2 workers / 1 worker, end-to-end: {mean[2]['e2e'] / mean[1]['e2e']:.2f}x   "
          f"steady: {mean[2]['steady'] / mean[1]['steady']:.2f}x   (aim >= 1.7x; means of 2 runs each)")
    for n in (4, 16):
        print(f"  {n:>2} volumes, 2 workers: worker peak RSS in one task {mem[n][0]:.0f} MB, "
              f"driver peak RSS during the build {mem[n][1]:.0f} MB")
    print(f"  peak memory 16 / 4 volumes: workers {mem[16][0] / mem[4][0]:.2f}, driver {mem[16][1] / mem[4][1]:.2f}"
          " (should stay ~1)")


def _startup(summary: dict) -> float:
    return sum(t["startup_s"] for t in summary["timing"].values())


def _steady(summary: dict) -> float:
    return sum(t["steady_s"] for t in summary["timing"].values())


def report_entry(metrics_uri: str, work_dir: str) -> tuple[str, list]:
    """(title, blocks) of the probe for ``build_report(extra_sections=...)`` / ``ctx.report_sections``:
    the specificity table (Markdown) and the specificity-by-strategy plot."""
    from medscope.report.render import Image, Raw
    from medscope.protocols.organ_presence.report import probe_report_section

    metrics = records.read_table("metrics", metrics_uri).to_pylist()
    title, markdown, pngs = probe_report_section(metrics, work_dir)
    blocks: list = [Raw(markdown)]
    for path in pngs:
        with open(path, "rb") as fh:
            blocks.append(Image(fh.read(), os.path.basename(path), "probe specificity by strategy"))
    return title, blocks
