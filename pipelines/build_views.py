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
from pipelines.jobs import Progress, job_main

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
    hashes = {}
    for cid, img in zip(cases.column("case_id").to_pylist(), cases.column("image").to_pylist()):
        h, thumb = planmod.hash_case(img)
        if h is not None:
            hashes[cid] = (h, thumb)
    plan, cross_report = planmod.make_plan(meta, hashes, recipe)
    borrowed = {p[k] for p in plan.values() for k in ("recipient", "donor") if p[k]}
    image_of = dict(zip(cases.column("case_id").to_pylist(), cases.column("image").to_pylist()))
    pool = {cid: image_of[cid] for cid in sorted(borrowed)}

    t_plan = time.monotonic() - t0
    first_batch = None  # (seconds until the first batch came back, its cases): actor start-up
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
            first_batch = _run_ray(pending, args, recipe, workers, block_rows, quiet)
        elif engine == "local":
            writer = CaseViewWriter(**args)
            progress = None if quiet else Progress("cases", len(todo))
            for case in pending.to_pylist():
                writer.build_one(case)
                if progress:
                    progress.update()
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
                   map_seconds=round(t_map, 2), first_batch=first_batch)
    return summary


def _run_ray(pending: pa.Table, args: dict, recipe: Recipe, workers: int | None, block_rows: int, quiet: bool) -> None:
    import ray

    from pipelines.raycluster import cluster_gpus, ensure_ray

    ensure_ray()
    gpus = cluster_gpus()
    use_gpu = gpus > 0 and bool(MODEL_TOOLS & set(recipe.all_tools()))
    size = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    if use_gpu:
        size = min(size, int(gpus))
    # many small blocks so every actor of the pool gets work and progress is steady
    # from_items builds the blocks on the driver (no metadata tasks on the workers)
    n_blocks = max(1, -(-len(pending) // block_rows))
    ds = ray.data.from_items(pending.to_pylist(), override_num_blocks=n_blocks)
    pool_ref = ray.put(args.pop("pool"))
    plan_ref = ray.put(args.pop("plan"))
    done = ds.map_batches(
        _RayWriter, batch_size=block_rows, batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=size),
        fn_constructor_kwargs=dict(args, plan_ref=plan_ref, pool_ref=pool_ref),
        num_gpus=1 if use_gpu else 0, num_cpus=0 if use_gpu else 1,
    )
    progress = None if quiet else Progress("cases", len(pending))
    start, first = time.monotonic(), None
    for batch in done.iter_batches(batch_format="pyarrow", batch_size=None):
        if first is None:
            first = (time.monotonic() - start, batch.num_rows)
        if progress:
            progress.update(batch.num_rows)
    return first


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
    """``medscope bench views``: views per second of a plain loop, Ray with 1 and 2 workers."""
    import tempfile

    from medscope.views.synthetic import synthetic_cases
    from pipelines.raycluster import ensure_ray

    # views of 512 px images: enough work per case that the fixed cost of starting actors
    # (seconds on a loaded 2-core machine) does not hide the throughput being compared
    n, size = (32, 160) if args.quick else (96, 384)
    recipe = Recipe(seed=0)
    with tempfile.TemporaryDirectory(prefix="medscope-bench-views-") as tmp:
        cases = storage.join(tmp, "cases.parquet")
        try:
            from medscope.cohorts import phantom

            cases = phantom.generate(storage.join(tmp, "cohort"), n_cases=n, seed=0)["cases"]
            source = "phantom cohort"
        except ImportError:
            records.write_table("cases", synthetic_cases(n, seed=0, size=size), cases)
            source = f"synthetic cohort ({size} px)"
        ensure_ray()
        rates = {}
        for label, engine, workers in (("plain loop", "local", None), ("ray, 1 worker", "ray", 1), ("ray, 2 workers", "ray", 2)):
            s = build_views(cases, storage.join(tmp, label.replace(" ", "").replace(",", "-")), recipe,
                            workers=workers, engine=engine, quiet=True)
            rates[label] = s["views"] / max(s["map_seconds"], 1e-9)
            startup = f"  (first batch after {s['first_batch'][0]:.1f}s)" if s.get("first_batch") else ""
            print(f"{label:<16} {s['views']:>5} views in {s['map_seconds']:6.1f}s  {rates[label]:7.1f} views/s{startup}",
                  flush=True)
    print(f"cohort: {n} cases, {source}")
    print(f"ray 1 worker / plain loop : {rates['ray, 1 worker'] / rates['plain loop']:.2f}  (aim >= 0.75)")
    print(f"ray 2 workers / 1 worker  : {rates['ray, 2 workers'] / rates['ray, 1 worker']:.2f}  (aim >= 1.7)")


def main_argv(argv: list[str] | None = None) -> int:
    return job_main("build_views", BuildViewsConfig, run, argv)


if __name__ == "__main__":
    sys.exit(main_argv())
