"""``medscope views build|show|export`` and ``python -m pipelines.views --config F`` (counterfactual paper §3.2–3.3).

cases, read in batches -> hashes and a staging table in row groups of one block each
      -> plan (near-copy crosswalk, group splits, insertion recipients) on the driver
      -> Ray Data map_batches with an actor pool over the blocks (each actor reads its block's
         pixels from the staging table and holds the recipe's tools, model weights loaded once;
         GPU actors when the cluster has GPUs) writing write-once part files per case under
         ``<out>/parts/`` -> cross-case QC on the driver on QC features and id columns only
         (edit detector, keep rules, adversarial filtering) -> ``<out>/views.parquet`` streamed
         from the parts, ``<out>/rejects.parquet``, ``<out>/qc_report.json``.

The driver never holds the cohort's pixels: its memory is one block of cases, one
group of views parts, and the per-case ids, hashes and QC features.

The final tables are sorted by key, so they are byte-identical whatever the number of
workers or blocks; a rerun after a kill builds only the cases without a views part.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from typing import Literal

import numpy as np
import pyarrow as pa
import pydantic

from medscope.analysis import thin_splits as thinmod
from medscope.io import layout, records, safe_text, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.qc import near_copies
from medscope.views.finalize import finalize
from medscope.views.summary import sorted_rejects, summarize
from medscope.views import plan as planmod
from medscope.views.recipe import Recipe, default_recipe, load_recipe, recipe_hash
from medscope.views.tools import check_tool
from medscope.views.stream import FLUSH_BYTES, QC_COLUMNS, stage_cases, write_views
from medscope.views.features import read_features, read_parts
from medscope.views.worker import CaseViewWriter, case_key, parts
from medscope.images import decode_mask, decode_png, encode_png
from medscope.render import gallery, palette
from pipelines.support.flags import add_action, add_config_flags, cli, config_from_args
from pipelines.support.jobs import Progress, job_main, map_timing, print_summary, units_per_block
from pipelines.support.peak_memory import memory_mb

MODEL_TOOLS = {"lama", "sd"}


class BuildViewsConfig(StrictModel):
    """One views build: ``medscope views build`` flags, or ``python -m pipelines.views --config F``."""

    cases: str = pydantic.Field(description="cases table, or the cohort folder holding it")
    out: str = pydantic.Field(description="output folder URI (views, rejects, QC report)")
    recipe: str | None = pydantic.Field(None, description="view recipe YAML, e.g. configs/views/demo.yaml (default: configs/views/training.yaml, "
                                                      "LaMa + transplant, where LAMA_MODEL names LaMa's weights, else "
                                                      "configs/views/offline.yaml, transplant + graft; the build says which)")
    tools: list[str] | None = pydantic.Field(None, description="erasure tools, overriding the recipe's, e.g. telea,transplant")
    workers: int | None = pydantic.Field(None, ge=1, description="actor pool size (default: all CPUs)")
    engine: Literal["ray", "local"] = pydantic.Field("ray", description="ray, or local: a plain loop in this process")
    # addition: the paper pairs every hash-close image; the cap bounds the driver's time and
    # memory (medscope.qc.near_copies.LARGE_GROUP says why 1,000)
    large_group: int = pydantic.Field(near_copies.LARGE_GROUP, ge=1, description="a hash-close group of more cases "
                                      "than this is not paired but kept whole, as one near-copy group in one split")


def output_uris(out: str) -> dict[str, str]:
    """The URIs of a views build's final outputs under ``out``.

    Parameters
    ----------
    out : str
        The views build's output folder.

    Returns
    -------
    dict of str to str
        ``views``, ``rejects``, ``qc_report``, ``near_copy_pairs`` and ``near_copy_groups``: each
        file's URI.
    """
    build = layout.ViewsBuild(out)
    return {"views": build.views, "rejects": build.rejects, "qc_report": build.qc_report,
            "near_copy_pairs": build.near_copy_pairs, "near_copy_groups": build.near_copy_groups}


def _check_recipe(out: str, recipe: Recipe, rhash: str) -> None:
    uri = layout.ViewsBuild(out).recipe
    if storage.exists(uri):
        held = safe_text.read_json_object(uri).get("recipe_hash")
        if held != rhash:
            raise MedScopeError(f"{out} holds views of recipe {held}, not {rhash}; choose another --out")
    else:
        storage.write_text(uri, json.dumps({"recipe_hash": rhash, "recipe": recipe.model_dump()}, indent=2, sort_keys=True))


def _earlier_splits(out: str) -> dict[str, dict]:
    """case_id -> {split, group_id} of an earlier build into ``out`` (a growing cohort keeps
    them): the split ledger, or, for a build older than the ledger, its views parts."""
    uri = layout.ViewsBuild(out).splits
    if storage.exists(uri):
        return safe_text.read_json_object(uri)
    folder = parts(out)["views"]
    if not (storage.is_dir(folder) and storage.list_files(folder, suffix=".parquet")):
        return {}
    rows = records.read_table("views", folder, columns=["case_id", "split", "group_id"]).to_pylist()
    return {r["case_id"]: {"split": r["split"], "group_id": r["group_id"]} for r in rows}


def _write_splits(out: str, pinned: dict[str, dict], plan: dict) -> None:
    """The split ledger: every case planned into ``out`` so far, earlier ones unchanged."""
    ledger = dict(pinned)
    ledger.update({cid: {"split": p["split"], "group_id": p["group_id"]} for cid, p in plan.items()})
    storage.write_text(layout.ViewsBuild(out).splits, json.dumps(ledger, indent=0, sort_keys=True))


def use_driver_allocator() -> str:
    """Arrow's allocator for the views-build driver: mimalloc, unless ``ARROW_DEFAULT_MEMORY_POOL``
    names another. The driver allocates many short-lived buffers of different sizes (a batch of
    cases, one case's views part, a row group of views) from a few threads, and with glibc's
    malloc (``system``) its peak grew more with the cohort: rebuilding a finished 100- and
    1,600-case build (the driver's phases without the map stage), 264 → 281 MB with ``system``
    and 258 → 270 MB with mimalloc (two runs each). Set here so that the figure does
    not depend on the pyarrow build's default (jemalloc in some wheels). Returns the backend.

    Returns
    -------
    str
        The backend name of Arrow's default memory pool after the call (``"mimalloc"``, or the one
        ``ARROW_DEFAULT_MEMORY_POOL`` names).
    """
    import os

    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        pa.set_memory_pool(pa.mimalloc_memory_pool())
    return pa.default_memory_pool().backend_name


def _log(msg: str) -> None:
    print(f"  views: {msg}", file=sys.stderr, flush=True)


def build_views(cases_uri: str, out: str, recipe: Recipe, *, workers: int | None = None, engine: str = "ray",
                block_rows: int = 4, quiet: bool = False, row_group_bytes: int = FLUSH_BYTES,
                large_group: int | None = None) -> dict:
    """Build, QC and write the views of every case; returns the job summary.

    ``block_rows`` cases make one unit of work; ``row_group_bytes`` bounds how much of the
    views table the driver gathers before writing it out as one Parquet row group.

    The driver holds ids, plan columns, crosswalk hashes and QC features, never the cohort's
    pixels: cases are read in batches and staged for the workers (medscope.views.stream), the
    cross-case QC reads the features parts and the views' id columns, and the final table is
    streamed from the views parts.

    Parameters
    ----------
    cases_uri : str
        The cases table, or the cohort folder holding it.
    out : str
        The output folder URI (views, rejects, QC report, parts, split ledger); ``memory://`` only
        with ``engine="local"``.
    recipe : Recipe
        The view recipe; a folder holding views of another recipe is refused.
    workers : int or None, optional
        Actor pool size of the Ray engine; None: all the cluster's CPUs (at most its GPUs when the
        recipe has a model tool and the cluster has GPUs).
    engine : {"ray", "local"}, optional
        ``"ray"``: Ray Data with an actor pool; ``"local"``: a plain loop in this process.
    block_rows : int, optional
        Cases in one unit of work (one staging row group).
    quiet : bool, optional
        No progress on stderr.
    row_group_bytes : int, optional
        Bytes of views the driver gathers before writing them out as one Parquet row group.
    large_group : int or None, optional
        A hash-close group of more cases than this is not paired: one near-copy group, listed in
        ``near_copy_groups.parquet``; None: ``near_copies.LARGE_GROUP`` (an addition).

    Returns
    -------
    dict
        The QC summary (:func:`medscope.views.summary.summarize`) with ``out``, ``views_uri``,
        ``rejects_uri``, ``cases`` (in the cohort), ``built_now`` (cases built by this run),
        ``seconds``, ``plan_seconds``, ``map_seconds``, ``map_timing`` (None when nothing was built),
        ``driver_memory_mb`` (the driver's memory at each phase's end) and ``thin_splits``: each
        evaluation split too small for a report interval (:func:`medscope.analysis.thin_splits.thin_splits`).

    Raises
    ------
    MedScopeError
        When ``out`` is ``memory://`` with the Ray engine, ``engine`` is unknown, a recipe tool is
        unavailable, or ``out`` holds views of another recipe.

    References
    ----------
    .. [1] counterfactual paper, §3.2, §3.3.
    """
    if storage.protocol(out) == "memory" and engine == "ray":
        raise MedScopeError("memory:// output cannot be shared with Ray workers; use a path or s3://")
    if engine not in ("ray", "local"):
        raise MedScopeError(f"unknown engine {engine!r}; use ray or local")
    t0 = time.monotonic()
    use_driver_allocator()
    memory = {"start": memory_mb()}  # the driver's RSS and peak at each phase's end (bench views)
    rhash = recipe_hash(recipe)
    for tool in recipe.all_tools():
        check_tool(tool, lama_model=recipe.lama_model, sd_model_dir=recipe.sd_model_dir)
    _check_recipe(out, recipe, rhash)
    build = layout.ViewsBuild(out)
    folders = parts(out)
    done = records.part_keys(folders["views"])
    # one pass over the cases, one block in memory: ids, plan columns, hashes, staging table
    staged = stage_cases(cases_uri, build.staged_cases, done, case_key, batch_rows=block_rows)
    if not staged.meta:  # else a build of 0 views exits 0, as if the cohort had been read (issue 51)
        raise MedScopeError(f"{cases_uri} holds no cases (0 rows): no views to build; give the cohort's cases.parquet "
                            "(medscope cohort import / cohort phantom write it)")
    memory["staged"] = memory_mb()
    pinned = _earlier_splits(out)
    plan, cross_report, pairs, large_groups = planmod.make_plan(staged.meta, staged.hashes, recipe, pinned,
                                                               large_group=large_group)
    # the pairs go to their own table now, not into the driver's QC report at the end
    records.write_table("near_copy_pairs", pairs, build.near_copy_pairs)
    records.write_table("near_copy_groups", large_groups, build.near_copy_groups)
    cross_report["near_copy_pairs_table"] = "near_copy_pairs.parquet"
    cross_report["near_copy_groups_table"] = "near_copy_groups.parquet"
    del pairs, large_groups
    _write_splits(out, pinned, plan)
    borrowed = {p[k] for p in plan.values() for k in ("recipient", "donor") if p[k]}
    where = {cid: staged.where[cid] for cid in sorted(borrowed) if cid in staged.where}
    n_cases, n_todo = len(staged.meta), sum(len(ids) for _, ids in staged.blocks)
    # the per-case staging state is not needed past the plan: the driver's peak comes at the end
    staged.hashes.close()  # its scratch file of thumbnails goes with it
    staged.meta, staged.hashes, staged.where = [], {}, {}
    memory["planned"] = memory_mb()

    t_plan = time.monotonic() - t0
    timing = None  # map-stage start-up vs steady work, from per-case stamps (see map_timing)
    if not quiet:
        _log(f"{n_cases} cases, {n_cases - n_todo} already built, {n_todo} to build ({engine})")
    if staged.blocks:
        args = dict(recipe=recipe.model_dump(), rhash=rhash, out=out, plan=plan, staged=build.staged_cases,
                    where=where, s3_endpoint=storage.s3_endpoint() if storage.protocol(out) == "s3" else None)
        if engine == "ray":
            timing = _run_ray(staged.blocks, n_todo, args, recipe, workers, quiet)
        else:
            t_start = time.time()
            writer = CaseViewWriter(**args)
            progress = None if quiet else Progress("cases", n_todo)
            stamps = []
            try:
                for rg, ids in staged.blocks:
                    for d in writer.build_block(rg, ids):
                        stamps.append((d["t_start"], d["t_end"], 0))
                        if progress:
                            progress.update()
            finally:
                writer.staged.close()
            timing = map_timing(t_start, stamps)
    staged.blocks, plan, where, args, writer = [], None, None, None, None  # held until the end otherwise
    if staged.staged:
        storage.delete(build.staging)
    memory["mapped"] = memory_mb()
    t_map = time.monotonic() - t0 - t_plan

    # cross-case QC on features and the views' id and QC columns: no pixels
    # (the parts are read one at a time and merged as they come: medscope.views.features)
    qc = read_parts("views", folders["views"], QC_COLUMNS)
    qc = qc.take(pa.compute.sort_indices(qc, [("view_id", "ascending")]))
    part_rejects = read_parts("rejects", folders["rejects"])
    features = read_features(folders["features"])  # columns, sorted by (view_id, role)
    memory["features"] = memory_mb()
    qc, qc_rejects, qc_report = finalize(qc, features, recipe)
    del features
    memory["qc"] = memory_mb()
    all_rejects = sorted_rejects([records.to_table("rejects", staged.rejects), part_rejects,
                                  records.to_table("rejects", qc_rejects)])
    del part_rejects, qc_rejects
    uris = output_uris(out)
    # the final table, streamed from the parts a few at a time (see medscope.views.stream)
    write_views(folders["views"], qc.combine_chunks(), case_key, uris["views"], row_group_bytes)
    records.write_table("rejects", all_rejects, uris["rejects"])
    report = {"recipe_hash": rhash, "crosswalk": cross_report, **qc_report}
    storage.write_text(uris["qc_report"], json.dumps(report, indent=2, sort_keys=True, default=float))
    memory["written"] = memory_mb()
    summary = summarize(qc, all_rejects, report)
    summary["thin_splits"] = [asdict(t) for t in thinmod.thin_splits(qc, recipe.split_fractions)]
    summary.update(out=out, views_uri=uris["views"], rejects_uri=uris["rejects"], cases=n_cases,
                   built_now=n_todo, seconds=round(time.monotonic() - t0, 2), plan_seconds=round(t_plan, 2),
                   map_seconds=round(t_map, 2), map_timing=timing, driver_memory_mb=memory)
    return summary


# up to 4 staging row groups (16 cases at the default 4 a row group) a block, at least 8 blocks
# an actor (units_per_block)
MAX_ROW_GROUPS_PER_BLOCK = 4
BLOCKS_PER_WORKER = 8


def row_groups_per_block(n_row_groups: int, workers: int) -> int:
    """Staging row groups in one Ray Data block (one actor call) for ``workers`` actors.

    Parameters
    ----------
    n_row_groups : int
        Staging row groups (blocks of cases) to build.
    workers : int
        Actors in the pool.

    Returns
    -------
    int
        Row groups per block: ``n_row_groups`` over 8 blocks an actor, between 1 and 4.
    """
    return units_per_block(n_row_groups, workers, MAX_ROW_GROUPS_PER_BLOCK, BLOCKS_PER_WORKER)


def _run_ray(blocks: list[tuple[int, list[str]]], n_todo: int, args: dict, recipe: Recipe, workers: int | None,
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
    # one Ray Data row per block of cases (a row group of the staging table: the worker reads
    # the pixels itself); a Ray block holds one row on a small cohort and several on a large
    # one (row_groups_per_block), so the driver's per-block cost is amortised while every actor
    # of the pool still gets many blocks; from_items builds the blocks on the driver (from_arrow
    # would run one metadata task per block on the workers: measured, and one of them crashed
    # inside Ray)
    items = [{"row_group": rg, "case_ids": ids} for rg, ids in blocks]
    per_block = row_groups_per_block(len(items), size)
    ds = ray.data.from_items(items, override_num_blocks=-(-len(items) // per_block))
    plan_ref = ray.put(args.pop("plan"))
    where_ref = ray.put(args.pop("where"))
    done = ds.map_batches(
        _RayWriter, batch_size=None, batch_format="pyarrow",
        # two blocks in flight per actor keep it fed without queueing the tail of the
        # cohort on one actor while another idles
        compute=ray.data.ActorPoolStrategy(size=size, max_tasks_in_flight_per_actor=2),
        fn_constructor_kwargs=dict(args, plan_ref=plan_ref, where_ref=where_ref),
        num_gpus=1 if use_gpu else 0, num_cpus=0 if use_gpu else 1,
    )
    progress = None if quiet else Progress("cases", n_todo)
    stamps = []
    for batch in done.iter_batches(batch_format="pyarrow", batch_size=None):
        stamps += zip(*(batch.column(c).to_pylist() for c in ("t_start", "t_end", "pid")))
        if progress:
            progress.update(batch.num_rows)
    return {**map_timing(t_start, stamps), "row_groups_per_block": per_block}


class _RayWriter(CaseViewWriter):
    """CaseViewWriter whose plan and borrowed images' places come from the object store."""

    def __init__(self, plan_ref, where_ref, **kwargs):
        import ray

        plan, where = (ray.get(r) if isinstance(r, ray.ObjectRef) else r for r in (plan_ref, where_ref))
        super().__init__(plan=plan, where=where, **kwargs)


def run(cfg: BuildViewsConfig) -> dict:
    """``medscope views build`` / the job: load the recipe (tools overridden) and build the views.

    Parameters
    ----------
    cfg : BuildViewsConfig
        Reads ``cases``, ``out``, ``recipe``, ``tools``, ``workers``, ``engine`` and ``large_group``.

    Returns
    -------
    dict
        The job summary of :func:`build_views`.
    """
    uri = cfg.recipe
    if uri is None:
        uri, why = default_recipe()
        print(f"views build: {why}", file=sys.stderr, flush=True)
    recipe = load_recipe(uri, cfg.tools)
    return build_views(cfg.cases, cfg.out, recipe, workers=cfg.workers, engine=cfg.engine, large_group=cfg.large_group)


def thin_warning(summary: dict) -> list[str]:
    """The warning lines for a build's thin evaluation splits (none when every split is large enough).

    Parameters
    ----------
    summary : dict
        A build or show summary holding ``thin_splits`` (dicts of
        :class:`medscope.analysis.thin_splits.ThinSplit`).

    Returns
    -------
    list of str
        :func:`medscope.analysis.thin_splits.warning_lines` of them.
    """
    return thinmod.warning_lines([thinmod.ThinSplit(**t) for t in summary.get("thin_splits", [])])


def large_group_lines(summary: dict) -> list[str]:
    """One line per hash-close group too large to pair: its size, the cap it is over, its split
    and representative, how many of its cases are near-copies of the representative.

    Parameters
    ----------
    summary : dict
        A build or show summary holding ``large_hash_groups`` (:func:`medscope.views.plan.large_group_summary`)
        and ``large_group_cap`` (absent in a report older than the cap: then not named).

    Returns
    -------
    list of str
        The lines, without newlines; none when no group was over the cap.
    """
    cap = summary.get("large_group_cap")
    over = f"over the cap of {cap:,}, so " if cap is not None else ""
    return [f"hash-close group of {g['cases']:,} cases ({over}not paired: one near-copy group, split {g['split']}): "
            f"represented by {g['representative']}, {g['near_copies_of_representative']:,} of them at the near-copy "
            f"correlation to it; members in near_copy_groups.parquet"
            for g in summary.get("large_hash_groups", [])]


def cmd_build(args) -> None:
    """``medscope views build``: build, print the summary, and end on stderr with a line for each
    hash-close group too large to pair and a warning for every evaluation split too small for a
    report interval.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``views build`` flags (``BuildViewsConfig``).
    """
    summary = run(config_from_args(args, source="medscope views build"))
    print_summary(summary)
    for line in large_group_lines(summary) + thin_warning(summary):
        print(line, file=sys.stderr)


def _job(cfg: "BuildViewsConfig") -> dict:
    """``python -m pipelines.views``: :func:`run`, with the thin-split warning on stderr."""
    summary = run(cfg)
    for line in large_group_lines(summary) + thin_warning(summary):
        print(line, file=sys.stderr)
    return summary


def register(sub) -> None:
    """Add the ``views`` verb and its commands (build, show, export).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``views`` is added to them.
    """
    p = sub.add_parser("views", help="build, inspect and export counterfactual views with automated QC")
    vs = p.add_subparsers(dest="views_cmd", metavar="CMD")
    vs.required = True
    b = vs.add_parser("build", help="build views of a cases table on Ray Data (resumable)")
    add_config_flags(b, BuildViewsConfig)
    b.set_defaults(func=cmd_build)
    add_action(vs, "show", ViewsShowConfig, cmd_show, "counts per kind, tool, imaging type; QC pass rates, reasons, AUCs")
    add_action(vs, "export", ViewsExportConfig, cmd_export, "PNG panels: original | erased | control, mask outlined")


class ViewsShowConfig(StrictModel):
    """``medscope views show``: counts and QC of a views build."""

    uri: str = pydantic.Field(description="views output folder (or a views.parquet)", json_schema_extra=cli(positional=True))


class ViewsExportConfig(StrictModel):
    """``medscope views export``: PNG panels of the first cases."""

    uri: str = pydantic.Field(description="views output folder (or a views.parquet)", json_schema_extra=cli(positional=True))
    dir: str = pydantic.Field(description="folder for the PNG panels")
    n: int = pydantic.Field(12, ge=1, description="how many cases")


def show_summary(uri: str) -> dict:
    """The summary ``views show`` prints (also used by the demo).

    Parameters
    ----------
    uri : str
        A views build folder, or its ``views.parquet``.

    Returns
    -------
    dict
        The summary of :func:`medscope.views.summary.summarize`: totals, counts by kind, tool,
        imaging type and split, reject reasons, the QC AUCs, keep rules and near-copy pair counts
        (from the build's ``rejects.parquet`` and ``qc_report.json`` when present), and
        ``thin_splits``: the evaluation splits too small for a report interval (the recipe's
        ``split_fractions`` from ``recipe.json`` say which are expected).
    """
    build = layout.ViewsBuild(layout.folder_of("views", uri))
    views = records.read_table("views", uri)
    rejects = records.read_table("rejects", build.rejects).to_pylist() if storage.exists(build.rejects) else []
    report = safe_text.read_json_object(build.qc_report) if storage.exists(build.qc_report) else {}
    recipe = safe_text.read_json_object(build.recipe).get("recipe", {}) if storage.exists(build.recipe) else {}
    summary = summarize(views, rejects, report)
    summary["thin_splits"] = [asdict(t) for t in thinmod.thin_splits(views, recipe.get("split_fractions"))]
    return summary


def cmd_show(args) -> None:
    """``medscope views show``: print a build's counts, QC pass rates, reject reasons and AUCs.

    Parameters
    ----------
    args : ViewsShowConfig
        The validated config; reads ``uri`` (a views build folder or its ``views.parquet``).
    """
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
    k = s["keep_rules"]
    if k:
        print(f"keep rules (§3.3): {k['kept_by_rules']} of {k['lesion_cases']} lesion cases kept; dropped by "
              f"(i) {k['dropped_rule_i']}, by (ii) {k['dropped_rule_ii']} ({k['dropped_rule_ii_only']} by (ii) alone)")
    print(f"near-copy pairs by tier: {s['near_copy_pairs_by_tier']}; cross-cohort pairs: {s['cross_cohort_pairs']}")
    for line in large_group_lines(s):
        print(line)
    for line in thin_warning(s):
        print(line)


def export_panels(uri: str, folder: str, n: int = 12) -> list[str]:
    """Write up to ``n`` PNG panels (original | erased | control) for a person to look at.

    A panel is written for each case (in case-id order) that has an original, a target-removal and a
    random-removal view with images, each view drawn as the report's gallery draws it
    (``medscope.render.gallery.panel``, colours from ``medscope.render.palette``): the lesion in
    yellow, the region an edit changed dashed cyan, at the view's own size.

    Parameters
    ----------
    uri : str
        A views build folder, or its ``views.parquet``.
    folder : str
        Where the panels are written, as ``<case>_<tool>_<pass|fail>.png``.
    n : int, optional
        The most panels to write.

    Returns
    -------
    list of str
        The URIs of the panels written.

    Raises
    ------
    MedScopeError
        When no case has all three views.
    """
    table = records.read_table("views", uri, columns=["view_id", "case_id", "kind", "tool", "image", "edit_mask",
                                                      "lesion_bbox", "passed"])
    by_case: dict[str, dict[str, dict]] = {}
    for r in table.to_pylist():
        if r["kind"] in ("original", "target_removal", "random_removal") and r["image"] is not None:
            by_case.setdefault(r["case_id"], {}).setdefault(r["kind"], r)
    written = []
    for cid in sorted(by_case)[:]:
        d = by_case[cid]
        if len(d) < 3:
            continue
        # the erased region is the dilated lesion mask: the lesion the other panels outline
        lesion = decode_mask(d["target_removal"]["edit_mask"]) if d["target_removal"]["edit_mask"] else None
        panels = [decode_png(gallery.panel(d[k], lesion, max_side=None)) for k in palette.PANEL_KINDS]
        h = max(p.shape[0] for p in panels)
        panels = [np.pad(p, ((0, h - p.shape[0]), (0, 0), (0, 0)), constant_values=255) for p in panels]
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
    """``medscope views export``: write the PNG panels and say where.

    Parameters
    ----------
    args : ViewsExportConfig
        The validated config; reads ``uri``, ``dir`` (the panels' folder) and ``n`` (the most panels).
    """
    paths = export_panels(args.uri, args.dir, args.n)
    print(f"wrote {len(paths)} panels to {args.dir} (original | erased | control; {palette.LEGEND}, "
          "as in the report's gallery)")


if __name__ == "__main__":
    sys.exit(job_main("views", BuildViewsConfig, _job))
