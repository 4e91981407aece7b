"""``medscope views build|show|export``: counterfactual views and their QC (seed 000 §3.2–3.3)."""

from __future__ import annotations

import json

import cv2
import numpy as np

from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.images import decode_mask, decode_png, encode_png, to_rgb


def register(sub) -> None:
    p = sub.add_parser("views", help="build, inspect and export counterfactual views with automated QC")
    vs = p.add_subparsers(dest="views_cmd", metavar="CMD")
    vs.required = True
    b = vs.add_parser("build", help="build views of a cases table on Ray Data (resumable)")
    b.add_argument("--cases", required=True, help="cases table URI")
    b.add_argument("--out", required=True, help="output folder URI (views.parquet, rejects.parquet, qc_report.json)")
    b.add_argument("--recipe", default=None, help="configs/views/<name>.yaml (default: built-in defaults)")
    b.add_argument("--tools", default=None, help="comma-separated erasure tools, e.g. telea,transplant")
    b.add_argument("--workers", type=int, default=None, help="actor pool size (default: all CPUs)")
    b.add_argument("--local", action="store_true", help="plain loop in this process instead of Ray")
    b.set_defaults(func=cmd_build)
    s = vs.add_parser("show", help="counts per kind, tool, imaging type; QC pass rates, reasons, AUCs")
    s.add_argument("uri", help="views output folder (or a views.parquet)")
    s.set_defaults(func=cmd_show)
    e = vs.add_parser("export", help="PNG panels: original | erased | control, mask outlined")
    e.add_argument("uri", help="views output folder (or a views.parquet)")
    e.add_argument("--dir", required=True, help="folder for the PNG panels")
    e.add_argument("--n", type=int, default=12, help="how many cases (default 12)")
    e.set_defaults(func=cmd_export)


def cmd_build(args) -> None:
    from medscope.views.recipe import load_recipe
    from pipelines.build_views import build_views
    from pipelines.support.jobs import print_summary

    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None
    recipe = load_recipe(args.recipe, tools)
    print_summary(build_views(args.cases, args.out, recipe, workers=args.workers,
                              engine="local" if args.local else "ray"))


def _views_uri(uri: str) -> tuple[str, str | None]:
    if uri.endswith(".parquet"):
        return uri, None
    return storage.join(uri, "views.parquet"), storage.join(uri, "rejects.parquet")


def show_summary(uri: str) -> dict:
    """The summary ``views show`` prints (also used by the demo)."""
    from pipelines.build_views import summarize

    views_uri, rejects_uri = _views_uri(uri)
    views = records.read_table("views", views_uri)
    rejects = records.read_table("rejects", rejects_uri).to_pylist() if rejects_uri and storage.exists(rejects_uri) else []
    report = {}
    if rejects_uri:
        rep = storage.join(uri, "qc_report.json")
        if storage.exists(rep):
            report = json.loads(storage.read_text(rep))
    return summarize(views, rejects, report)


def cmd_show(args) -> None:
    s = show_summary(args.uri)
    print(f"{s['views']} views, {s['passed']} passed QC")
    for key in ("by_kind", "by_tool", "by_imaging_type", "by_split"):
        print(f"{key.replace('_', ' ')}:")
        for name, d in s[key].items():
            rate = d["passed"] / d["views"] if d["views"] else 0.0
            print(f"  {name:<20} {d['views']:>6} views  {d['passed']:>6} passed  ({rate:.0%})")
    print("reject reasons:")
    for name, n in s["reject_reasons"].items():
        print(f"  {name:<28} {n:>6}")

    def f(x):
        return "n/a" if x is None else f"{x:.3f}"

    print(f"edit detector AUC: train {f(s['edit_detector_train_auc'])}, held-out {f(s['edit_detector_heldout_auc'])}")
    print(f"adversarial filter AUC: before {f(s['adversarial_auc_before'])}, after {f(s['adversarial_auc_after'])}"
          f" ({s['adversarial_dropped_cases']} cases dropped)")
    print(f"near-copy pairs by tier: {s['near_copy_pairs_by_tier']}; cross-cohort pairs: {s['cross_cohort_pairs']}")


def _outlined(image: np.ndarray, mask: np.ndarray | None, color=(255, 0, 0)) -> np.ndarray:
    out = to_rgb(image).copy()
    if mask is not None and mask.any():
        contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
        cv2.drawContours(out, contours, -1, color, 1)
    return out


def export_panels(uri: str, folder: str, n: int = 12) -> list[str]:
    """Write up to ``n`` PNG panels (original | erased | control) for a person to look at."""
    views_uri, _ = _views_uri(uri)
    table = records.read_table("views", views_uri, columns=["view_id", "case_id", "kind", "tool", "image", "edit_mask", "passed"])
    by_case: dict[str, dict[str, dict]] = {}
    for r in table.to_pylist():
        if r["kind"] in ("original", "target_removal", "random_removal") and r["image"] is not None:
            by_case.setdefault(r["case_id"], {}).setdefault(r["kind"], r)
    written = []
    for cid in sorted(by_case)[:]:
        d = by_case[cid]
        if len(d) < 3:
            continue
        erased_mask = decode_mask(d["target_removal"]["edit_mask"])
        control_mask = decode_mask(d["random_removal"]["edit_mask"])
        panels = [
            _outlined(decode_png(d["original"]["image"]), erased_mask),
            _outlined(decode_png(d["target_removal"]["image"]), erased_mask),
            _outlined(decode_png(d["random_removal"]["image"]), control_mask, (0, 200, 255)),
        ]
        h = max(p.shape[0] for p in panels)
        gap = np.full((h, 4, 3), 255, np.uint8)
        row = np.hstack([panels[0], gap, panels[1], gap, panels[2]])
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in cid)
        status = "pass" if d["target_removal"]["passed"] else "fail"
        dest = storage.join(folder, f"{safe}_{d['target_removal']['tool']}_{status}.png")
        storage.write_bytes(dest, encode_png(row))
        written.append(dest)
        if len(written) >= n:
            break
    if not written:
        raise MedScopeError(f"{uri}: no case has original, target-removal and random-removal images to export")
    return written


def cmd_export(args) -> None:
    paths = export_panels(args.uri, args.dir, args.n)
    print(f"wrote {len(paths)} panels to {args.dir} (original | erased | control; red: erased mask, blue: control)")
