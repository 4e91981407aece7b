"""``python -m pipelines.build_views --config F`` and ``medscope views build|show|export``.

cases -> plan (near-copy crosswalk, group splits, insertion recipients) on the driver
      -> Ray Data map_batches with an actor pool (each actor holds the recipe's tools, model
         weights loaded once; GPU actors when the cluster has GPUs) writing write-once part
         files per case under ``<out>/parts/`` -> cross-case QC on the driver (edit detector,
         keep rules, adversarial filtering) -> ``<out>/views.parquet``, ``<out>/rejects.parquet``,
         ``<out>/qc_report.json``.

The final tables are sorted by key, so they are byte-identical whatever the number of
workers or blocks; a rerun after a kill builds only the cases without a views part.
"""

from __future__ import annotations

import json
import sys
import time

import pyarrow as pa

from medscope import records, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.qc.finalize import finalize
from medscope.views import plan as planmod
from medscope.views.recipe import Recipe, load_recipe, recipe_hash
from medscope.views.tools import check_tool
from medscope.views.worker import CaseViewWriter, case_key, parts, read_features
from pipelines.support.jobs import Progress, job_main, map_timing

PLAN_COLUMNS = ["case_id", "source", "imaging_type", "patient_id", "split", "has_lesion"]
MODEL_TOOLS = {"lama", "sd"}


class BuildViewsConfig(StrictModel):
    cases: str
    out: str
    recipe: str | None = None
    tools: list[str] | None = None
    workers: int | None = None
    engine: str = "ray"


def output_uris(out: str) -> dict[str, str]:
    return {"views": storage.join(out, "views.parquet"), "rejects": storage.join(out, "rejects.parquet"),
            "qc_report": storage.join(out, "qc_report.json")}


def _check_recipe(out: str, recipe: Recipe, rhash: str) -> None:
    uri = storage.join(out, "recipe.json")
    if storage.exists(uri):
        held = json.loads(storage.read_text(uri)).get("recipe_hash")
        if held != rhash:
            raise MedScopeError(f"{out} holds views of recipe {held}, not {rhash}; choose another --out")
    else:
        storage.write_text(uri, json.dumps({"recipe_hash": rhash, "recipe": recipe.model_dump()}, indent=2, sort_keys=True))


def _log(msg: str) -> None:
    print(f"  views: {msg}", file=sys.stderr, flush=True)


def build_views(cases_uri: str, out: str, recipe: Recipe, *, workers: int | None = None, engine: str = "ray",
                block_rows: int = 4, quiet: bool = False) -> dict:
    """Build, QC and write the views of every case; returns the job summary."""
    if storage.protocol(out) == "memory" and engine == "ray":
        raise MedScopeError("memory:// output cannot be shared with Ray workers; use a path or s3://")
    t0 = time.monotonic()
    rhash = recipe_hash(recipe)
    for tool in recipe.all_tools():
        check_tool(tool, lama_model=recipe.lama_model, sd_model_dir=recipe.sd_model_dir)
    cases = records.read_table("cases", cases_uri)
    _check_recipe(out, recipe, rhash)
    rejects: list[dict] = []
    ids = cases.column("case_id").to_pylist()
    seen, keep = set(), []
    for i, cid in enumerate(ids):
        if cid in seen:
            rejects.append(records.reject("views", cases.column("source")[i].as_py(), cid, "load", "duplicate_case_id"))
        else:
            seen.add(cid)
            keep.append(i)
    if len(keep) < len(ids):
        cases = cases.take(keep)

    # the plan: hashes, near-copy groups, splits, borrowed images
    meta = cases.select(PLAN_COLUMNS).to_pylist()
    # the image column is converted to Python bytes once (it is the bulk of the table)
    image_of = dict(zip(cases.column("case_id").to_pylist(), cases.column("image").to_pylist()))
    hashes = {}
    for cid, img in image_of.items():
        h, thumb = planmod.hash_case(img)
        if h is not None:
            hashes[cid] = (h, thumb)
    plan, cross_report = planmod.make_plan(meta, hashes, recipe)
    borrowed = {p[k] for p in plan.values() for k in ("recipient", "donor") if p[k]}
    pool = {cid: image_of[cid] for cid in sorted(borrowed)}
    del image_of

    t_plan = time.monotonic() - t0
    timing = None  # map-stage start-up vs steady work, from per-case stamps (see map_timing)
    folders = parts(out)
    done = records.part_keys(folders["views"])
    todo = [i for i, cid in enumerate(cases.column("case_id").to_pylist()) if case_key(cid) not in done]
    if not quiet:
        _log(f"{len(cases)} cases, {len(cases) - len(todo)} already built, {len(todo)} to build ({engine})")
    if todo:
        pending = cases.take(todo)
        args = dict(recipe=recipe.model_dump(), rhash=rhash, out=out, plan=plan, pool=pool,
                    s3_endpoint=storage.s3_endpoint() if storage.protocol(out) == "s3" else None)
        if engine == "ray":
            timing = _run_ray(pending, args, recipe, workers, block_rows, quiet)
        elif engine == "local":
            t_start = time.time()
            writer = CaseViewWriter(**args)
            progress = None if quiet else Progress("cases", len(todo))
            stamps = []
            for case in pending.to_pylist():
                t_case = time.time()
                writer.build_one(case)
                stamps.append((t_case, time.time(), 0))
                if progress:
                    progress.update()
            timing = map_timing(t_start, stamps)
        else:
            raise MedScopeError(f"unknown engine {engine!r}; use ray or local")
    t_map = time.monotonic() - t0 - t_plan

    views = records.read_table("views", folders["views"])
    views = views.take(pa.compute.sort_indices(views, [("view_id", "ascending")]))
    part_rejects = records.read_table("rejects", folders["rejects"]).to_pylist()
    features = sorted(read_features(folders["features"]), key=lambda f: (f["view_id"], f["role"]))
    views, qc_rejects, qc_report = finalize(views, features, recipe)
    all_rejects = sorted(rejects + part_rejects + qc_rejects,
                         key=lambda r: (r["item_id"], r["stage"], r["reason"], r["detail"] or ""))
    uris = output_uris(out)
    records.write_table("views", views.combine_chunks(), uris["views"])
    records.write_table("rejects", all_rejects, uris["rejects"])
    report = {"recipe_hash": rhash, "crosswalk": cross_report, **qc_report}
    storage.write_text(uris["qc_report"], json.dumps(report, indent=2, sort_keys=True, default=float))
    summary = summarize(views, all_rejects, report)
    summary.update(out=out, views_uri=uris["views"], rejects_uri=uris["rejects"], cases=len(cases),
                   built_now=len(todo), seconds=round(time.monotonic() - t0, 2), plan_seconds=round(t_plan, 2),
                   map_seconds=round(t_map, 2), map_timing=timing)
    return summary


def _run_ray(pending: pa.Table, args: dict, recipe: Recipe, workers: int | None, block_rows: int,
             quiet: bool) -> dict:
    import ray

    from pipelines.support.raycluster import cluster_gpus, ensure_ray

    t_start = time.time()
    ensure_ray()
    gpus = cluster_gpus()
    use_gpu = gpus > 0 and bool(MODEL_TOOLS & set(recipe.all_tools()))
    size = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    if use_gpu:
        size = min(size, int(gpus))
    # many small blocks so every actor of the pool gets work and progress is steady;
    # from_items builds the blocks and their metadata on the driver (from_arrow would run one
    # metadata task per block on the workers: measured, and one of them crashed inside Ray)
    n_blocks = max(1, -(-len(pending) // block_rows))
    ds = ray.data.from_items(pending.to_pylist(), override_num_blocks=n_blocks)
    pool_ref = ray.put(args.pop("pool"))
    plan_ref = ray.put(args.pop("plan"))
    done = ds.map_batches(
        _RayWriter, batch_size=block_rows, batch_format="pyarrow",
        # two blocks in flight per actor keep it fed without queueing the tail of the
        # cohort on one actor while another idles
        compute=ray.data.ActorPoolStrategy(size=size, max_tasks_in_flight_per_actor=2),
        fn_constructor_kwargs=dict(args, plan_ref=plan_ref, pool_ref=pool_ref),
        num_gpus=1 if use_gpu else 0, num_cpus=0 if use_gpu else 1,
    )
    progress = None if quiet else Progress("cases", len(pending))
    stamps = []
    for batch in done.iter_batches(batch_format="pyarrow", batch_size=None):
        stamps += zip(*(batch.column(c).to_pylist() for c in ("t_start", "t_end", "pid")))
        if progress:
            progress.update(batch.num_rows)
    return map_timing(t_start, stamps)


class _RayWriter(CaseViewWriter):
    """CaseViewWriter whose plan and borrowed images come from the object store."""

    def __init__(self, plan_ref, pool_ref, **kwargs):
        import ray

        plan, pool = (ray.get(r) if isinstance(r, ray.ObjectRef) else r for r in (plan_ref, pool_ref))
        super().__init__(plan=plan, pool=pool, **kwargs)


def summarize(views: pa.Table, rejects: list[dict], report: dict) -> dict:
    """Counts per kind, tool and imaging type; QC pass rates and reasons; AUCs."""
    rows = views.select(["kind", "tool", "imaging_type", "passed", "reject_reason", "split"]).to_pylist()

    def count(key):
        out: dict[str, dict[str, int]] = {}
        for r in rows:
            d = out.setdefault(str(r[key]), {"views": 0, "passed": 0})
            d["views"] += 1
            d["passed"] += int(r["passed"])
        return dict(sorted(out.items()))

    reasons: dict[str, int] = {}
    for r in rejects:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    det, adv = report.get("edit_detector", {}), report.get("adversarial", {})
    return {
        "views": len(rows), "passed": sum(r["passed"] for r in rows),
        "by_kind": count("kind"), "by_tool": count("tool"), "by_imaging_type": count("imaging_type"),
        "by_split": count("split"), "reject_reasons": dict(sorted(reasons.items())),
        "edit_detector_heldout_auc": det.get("heldout_auc"), "edit_detector_train_auc": det.get("train_auc"),
        "adversarial_auc_before": adv.get("auc_before"), "adversarial_auc_after": adv.get("auc_after"),
        "adversarial_dropped_cases": adv.get("dropped"),
        "cross_cohort_pairs": len(report.get("crosswalk", {}).get("cross_cohort_pairs", [])),
        "near_copy_pairs_by_tier": report.get("crosswalk", {}).get("pairs_by_tier", {}),
    }


def run(cfg: BuildViewsConfig) -> dict:
    recipe = load_recipe(cfg.recipe, cfg.tools)
    return build_views(cfg.cases, cfg.out, recipe, workers=cfg.workers, engine=cfg.engine)


def bench(args) -> None:
    """``medscope bench views``: views/s of a plain loop, Ray with 1 worker and with 2 workers.

    All three run the real job (``build_views``: plan, map, QC) on the same generated cohort,
    one after the other in this process. For each, the map stage is split by per-case stamps
    into its fixed start-up (tool construction; for Ray also actor start-up and imports) and
    its steady throughput; end-to-end and steady ratios are printed side by side.
    """
    import os
    import tempfile

    from medscope.views.synthetic import synthetic_cases

    # sized so that the steady work (about 10 s for the plain loop on 2 idle cores) is large
    # next to the few seconds an actor pool takes to start; --quick is a smoke run only
    n, size = (24, 160) if args.quick else (240, 256)
    recipe = Recipe(seed=0)
    from pipelines.bench import parallel_ceiling

    load_before = os.getloadavg()[0]
    ceiling = [parallel_ceiling()[1]]
    with tempfile.TemporaryDirectory(prefix="medscope-bench-views-") as tmp:
        cases = storage.join(tmp, "cases.parquet")
        try:
            from medscope.cohorts import phantom

            cases = phantom.generate(storage.join(tmp, "cohort"), n_cases=n, seed=0)["cases"]
            source = "phantom cohort"
        except ImportError:
            records.write_table("cases", synthetic_cases(n, seed=0, size=size), cases)
            source = f"synthetic cohort ({size} px)"
        t = time.monotonic()
        from pipelines.support.raycluster import ensure_ray

        ensure_ray()
        cluster_s = time.monotonic() - t
        print(f"cohort: {n} cases, {source}; load average {load_before:.2f} at start", flush=True)
        # The first Ray Data job of a process starts worker processes for our runtime env; a
        # real build pays this once. It is measured here on a few cases and printed, so that
        # it neither hides in nor inflates whichever worker count happens to run first.
        few = storage.join(tmp, "few.parquet")
        records.write_table("cases", records.read_table("cases", cases).slice(0, 8), few)
        cold = build_views(few, storage.join(tmp, "cold"), recipe, workers=1, engine="ray", quiet=True)["map_timing"]
        print(f"first Ray job of the process (8 cases, 1 worker): start-up {cold['startup_s']:.1f}s; "
              f"Ray cluster start before it {cluster_s:.1f}s (both paid once per job)", flush=True)
        print(f"{'':<15} {'views':>5} {'start-up':>9} {'steady':>8} {'map':>7} {'whole job':>9}"
              f"   {'views/s end-to-end':>18} {'views/s steady':>15}", flush=True)
        res = {}
        for label, engine, workers in (("plain loop", "local", None), ("ray 1 worker", "ray", 1),
                                       ("ray 2 workers", "ray", 2)):
            s = build_views(cases, storage.join(tmp, label.replace(" ", "-")), recipe,
                            workers=workers, engine=engine, quiet=True)
            tm = s["map_timing"]
            res[label] = r = {"e2e": s["views"] / tm["total_s"], "steady": s["views"] / tm["steady_s"], **tm}
            print(f"{label:<15} {s['views']:>5} {tm['startup_s']:8.1f}s {tm['steady_s']:7.1f}s {tm['total_s']:6.1f}s"
                  f" {s['seconds']:8.1f}s   {r['e2e']:18.1f} {r['steady']:15.1f}", flush=True)
        ceiling.append(parallel_ceiling()[1])
    p, r1, r2 = res["plain loop"], res["ray 1 worker"], res["ray 2 workers"]
    print(f"load average {os.getloadavg()[0]:.2f} at end (figures are only meaningful on an idle machine)")
    print("start-up = map stage until the first case begins (tools; for Ray, actor start and imports);")
    print("steady = first case begun to last case done; map = start-up + steady; whole job adds the")
    print("driver's plan and QC, the same for all three. Ray runs each start their own actors.")
    print(f"ray 2 workers: workers began their first case at "
          f"{', '.join(f'{x:.1f}s' for x in r2['worker_first_case_s'])}")
    print(f"machine ceiling: two plain processes at once ran {ceiling[0]:.2f}x / {ceiling[1]:.2f}x the speed of one"
          " (before / after; no Ray; 2.0 on truly free cores)")
    print(f"{'ratio':<28} {'end-to-end':>10} {'steady':>7}   aim")
    print(f"{'ray 1 worker / plain loop':<28} {r1['e2e'] / p['e2e']:10.2f} {r1['steady'] / p['steady']:7.2f}   >= 0.75")
    print(f"{'ray 2 workers / 1 worker':<28} {r2['e2e'] / r1['e2e']:10.2f} {r2['steady'] / r1['steady']:7.2f}   >= 1.7")


def main_argv(argv: list[str] | None = None) -> int:
    return job_main("build_views", BuildViewsConfig, run, argv)


if __name__ == "__main__":
    sys.exit(main_argv())
