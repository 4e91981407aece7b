"""``medscope probe``: the volumetric organ-presence probe on Ray Data (organ-presence paper).

build: volumes are sharded in blocks (one volume a block for small cohorts, up to 8 for large
ones: ``volumes_per_block``) and streamed. Pass 1 counts organ voxels per slice
(slices table) and the driver pools the hysteretic states into cohort frequency and
co-occurrence; pass 2 samples slices, picks negatives and renders only the chosen slices, each
task writing its volume's probe_items part file. Bad volumes become rejects rows.
show: items per organ, strategy and stratum, and the co-occurrence heat map.
Evaluation and scoring are the shared ``medscope eval run --protocol organ_presence`` and
``medscope score`` (medscope/protocols/organ_presence/).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

import pydantic

from medscope import config as cfgmod
from medscope.io import layout, records, safe_text, storage
from pipelines.support.flags import add_action, add_config_flags, cli, config_from_args
from medscope.config import StrictModel, content_hash
from medscope.errors import MedScopeError
from medscope.volumes import build as B
from medscope.volumes.config import ProbeConfig
from medscope.volumes.nifti import VolumeError
from medscope.protocols.organ_presence import tables as _probe_tables  # noqa: F401 - registers slices, probe_items
from medscope.volumes.presence import CohortStats

from pipelines.support.jobs import units_per_block
from pipelines.support.peak_memory import peak_rss_kib, reset_peak_rss

DEFAULT_CONFIG = "configs/probe/default.yaml"


def _stamp(out: dict, t_start: float) -> dict:
    """Task result + its peak RSS and wall-clock stamps (for start-up vs steady timing)."""
    out.update(rss_mb=peak_rss_kib() / 1024.0, t_start=t_start, t_end=time.time(), pid=os.getpid())
    return out


def _reject_for(vol: dict, err: Exception, stage: str) -> dict:
    reason = err.reason if isinstance(err, VolumeError) else "unreadable"
    detail = err.detail if isinstance(err, VolumeError) else str(err)
    return records.reject_row("probe_items", vol.get("source") or "volumes", vol.get("case_id", "?"), stage, reason, detail)


def count_task(row: dict, cfg_json: str) -> dict:
    """Ray task, pass 1: one volume -> its states, slices rows and notes, or a reject.

    Parameters
    ----------
    row : dict
        ``{"volume": str}``: one row of the volumes table as JSON.
    cfg_json : str
        The :class:`ProbeConfig` as JSON (``model_dump_json``).

    Returns
    -------
    dict
        ``"case_id"``, ``"ok"`` and ``"payload"`` (JSON: the organ states, ``z_mm``, slices rows and notes
        when ``ok``; a list of one reject row, stage ``"load"``, when not), stamped with ``"rss_mb"``,
        ``"t_start"``, ``"t_end"`` and ``"pid"``.
    """
    t_start = time.time()
    reset_peak_rss()
    vol = json.loads(row["volume"])
    cfg = ProbeConfig.model_validate_json(cfg_json)
    try:
        res = B.count_volume(vol, cfg)
    except MedScopeError as err:
        return _stamp({"case_id": vol["case_id"], "ok": False, "payload": json.dumps([_reject_for(vol, err, "load")])},
                      t_start)
    payload = {
        "states": B.states_to_json(res["organs"], res["states"]),
        "z_mm": res["z_mm"].tolist(),
        "slices": res["slices"],
        "notes": res["notes"],
    }
    return _stamp({"case_id": vol["case_id"], "ok": True, "payload": json.dumps(payload)}, t_start)


def count_block(batch: dict, cfg_json: str) -> dict:
    """Ray Data batch, pass 1: ``count_task`` over each volume of one block.

    Parameters
    ----------
    batch : dict
        A Ray Data batch: ``"volume"``, the block's volumes rows as JSON strings.
    cfg_json : str
        The :class:`ProbeConfig` as JSON (``model_dump_json``).

    Returns
    -------
    dict
        Column name to list: the :func:`count_task` results of the block's volumes, column by column.
    """
    return _columns([count_task({"volume": v}, cfg_json) for v in batch["volume"]])


def _columns(results: list[dict]) -> dict:
    return {k: [r[k] for r in results] for k in results[0]}


def items_task(row: dict, cfg_json: str, stats_json: str, items_uri: str, montage_uri: str) -> dict:
    """Ray task, pass 2: one volume -> its probe_items part file (skipped when already written).

    Parameters
    ----------
    row : dict
        ``{"volume": str}``: one row of the volumes table as JSON.
    cfg_json : str
        The :class:`ProbeConfig` as JSON (``model_dump_json``).
    stats_json : str
        The cohort's :class:`CohortStats` (frequency, co-occurrence) as JSON, from pass 1.
    items_uri : str
        The probe_items table folder; the volume's part file is written there.
    montage_uri : str
        Folder of the per-volume montage PNGs (written when ``cfg.montage``).

    Returns
    -------
    dict
        ``"case_id"``, ``"n_items"`` (items written; -1 when the part file already existed, 0 on a reject)
        and ``"reject"`` (a reject row as JSON, stage ``"items"``, or ``""``), stamped with ``"rss_mb"``,
        ``"t_start"``, ``"t_end"`` and ``"pid"``.
    """
    t_start = time.time()
    reset_peak_rss()
    vol = json.loads(row["volume"])
    cfg = ProbeConfig.model_validate_json(cfg_json)
    key = B.part_key(vol["case_id"])
    if records.has_part(items_uri, key):
        return _stamp({"case_id": vol["case_id"], "n_items": -1, "reject": ""}, t_start)
    try:
        loaded = B.load_row(vol)  # once, for the items and the montage
        rows = B.volume_items(vol, cfg, CohortStats.from_dict(json.loads(stats_json)), vol=loaded)
        records.write_part("probe_items", rows, items_uri, key)
        if cfg.montage:
            storage.write_bytes(storage.join(montage_uri, f"{key}.png"),
                                B.volume_montage(vol, cfg.montage_window, vol=loaded))
    except MedScopeError as err:
        return _stamp({"case_id": vol["case_id"], "n_items": 0, "reject": json.dumps(_reject_for(vol, err, "items"))},
                      t_start)
    return _stamp({"case_id": vol["case_id"], "n_items": len(rows), "reject": ""}, t_start)


def items_block(batch: dict, **kw) -> dict:
    """Ray Data batch, pass 2: ``items_task`` over each volume of one block.

    Parameters
    ----------
    batch : dict
        A Ray Data batch: ``"volume"``, the block's volumes rows as JSON strings.
    **kw
        ``cfg_json``, ``stats_json``, ``items_uri`` and ``montage_uri``, passed to :func:`items_task`.

    Returns
    -------
    dict
        Column name to list: the :func:`items_task` results of the block's volumes, column by column.
    """
    return _columns([items_task({"volume": v}, **kw) for v in batch["volume"]])


# up to 8 volumes a block, at least 8 blocks a worker (pipelines.support.jobs.units_per_block)
MAX_VOLUMES_PER_BLOCK = 8
BLOCKS_PER_WORKER = 8


def volumes_per_block(n_volumes: int, workers: int) -> int:
    """Volumes in one Ray Data block (one task) for ``n_volumes`` over ``workers`` workers.

    Parameters
    ----------
    n_volumes : int
        Volumes in the build.
    workers : int
        Ray Data workers.

    Returns
    -------
    int
        ``n_volumes // (BLOCKS_PER_WORKER * workers)``, between 1 and ``MAX_VOLUMES_PER_BLOCK``.
    """
    return units_per_block(n_volumes, workers, MAX_VOLUMES_PER_BLOCK, BLOCKS_PER_WORKER)


@contextlib.contextmanager
def _all_cpus_to_tasks(cpu_budget: int | None = None):
    """Let the build's tasks use every CPU of the cluster while it runs.

    Ray Data's per-operator reservation holds back part of the budget; on a small cluster
    (2 CPUs) that leaves a single map task running at a time, whatever the concurrency asked
    for (measured: 6 one-second tasks take 6.7 s with it, 3.3 s without). Our tasks are
    CPU-bound and their outputs tiny, so the reservation buys nothing here.

    ``cpu_budget``: CPUs' worth of tasks Ray Data may submit, above the cluster's own where a
    block is queued per worker, so that Ray starts each the moment a worker frees (``task_pool``).
    """
    import ray

    ctx = ray.data.DataContext.get_current()
    old, old_limits = ctx.op_resource_reservation_enabled, ctx.execution_options.resource_limits
    ctx.op_resource_reservation_enabled = False
    if cpu_budget is not None:
        ctx.execution_options.resource_limits = old_limits.copy(cpu=min(old_limits.cpu, cpu_budget))
    try:
        yield
    finally:
        ctx.op_resource_reservation_enabled = old
        ctx.execution_options.resource_limits = old_limits


def task_pool(workers: int | None, cpus: int) -> tuple[int, int]:
    """(workers, tasks Ray Data keeps in flight) for ``workers`` (None: every CPU) on ``cpus``.

    Ray Data 2.60 notices a finished task only at its wait loop's 0.1 s timeout while another
    task still runs, and a map task's end takes two turns of that loop: ~0.2 s idle per block
    per worker on two busy cores (ray-project/ray#42377, #45934; docs/benchmarks.md). Where
    every CPU is a worker, one more block per worker is submitted than can run: Ray queues it
    and hands it to the first worker that frees, with no wait on the loop. With fewer workers
    than CPUs nothing is queued: the extra tasks would run at once and break the cap.

    Parameters
    ----------
    workers : int or None
        Workers asked for; None for one a CPU.
    cpus : int
        CPUs of the Ray cluster.

    Returns
    -------
    workers : int
        ``workers``, or ``cpus`` when None.
    in_flight : int
        Tasks kept in flight: twice the workers when they are at least ``cpus``, else the workers.
    """
    size = workers or cpus
    return (size, 2 * size) if size >= cpus else (size, size)


def build(volumes_uri: str, out_uri: str, cfg: ProbeConfig, progress: bool = True) -> dict:
    """Build the probe from a volumes table; returns a summary (counts, rejects, timing).

    Parameters
    ----------
    volumes_uri : str
        The volumes table (or the cohort folder holding it).
    out_uri : str
        The build folder: slices, cohort stats, probe_items parts, montages, rejects and recipe.json.
    cfg : ProbeConfig
        Sampling and rendering settings; ``cfg.workers`` (None: every CPU) sizes the task pool.
    progress : bool, optional
        Show progress on stderr.

    Returns
    -------
    dict
        ``"volumes"``, ``"volumes_used"``, ``"items_written"``, ``"volumes_resumed"``, ``"rejects"`` and
        ``"notes"`` (counts by reason), ``"probe_items"`` and ``"slices"`` (URIs), ``"sampling"`` (see
        :func:`sampling_record`), ``"worker_peak_rss_mb"``, ``"seconds"``, ``"volumes_per_block"``,
        ``"tasks_in_flight"`` and ``"timing"`` (per pass).

    Raises
    ------
    MedScopeError
        When the volumes table is empty, or when ``out_uri`` holds items of another config or cohort.

    References
    ----------
    .. [1] organ-presence paper
    """
    import ray

    from pipelines.support.raycluster import ensure_ray

    vols = records.read_table("volumes", volumes_uri).to_pylist()
    if not vols:
        raise MedScopeError(f"{volumes_uri}: the volumes table is empty")
    ensure_ray()
    cpus = int(ray.cluster_resources().get("CPU", 1))
    workers, in_flight = task_pool(cfg.workers, cpus)
    with _all_cpus_to_tasks(cpu_budget=cpus + in_flight - workers if in_flight > workers else None):
        return _build(vols, out_uri, cfg, progress, workers, in_flight)


def _build(vols: list[dict], out_uri: str, cfg: ProbeConfig, progress: bool, workers: int, in_flight: int) -> dict:
    import ray

    from pipelines.support.jobs import Progress, map_timing

    t_build = time.time()
    cfg_json = cfg.model_dump_json()
    rows = [{"volume": json.dumps(v)} for v in vols]
    compute = ray.data.TaskPoolStrategy(size=in_flight)
    per_block = volumes_per_block(len(rows), workers)

    def blocks(n: int) -> int:
        return -(-n // per_block)

    # Pass 1: a block of volumes a task; results stream back a volume a row as blocks finish.
    ds = ray.data.from_items(rows, override_num_blocks=blocks(len(rows)))
    stats, slices, rejects, ok, rss = CohortStats(), [], [], [], [0.0]
    stamps: list[tuple[float, float, int]] = []
    timing = {}
    prog = Progress("probe: counted", len(rows)) if progress else None
    counted = ds.map_batches(count_block, batch_size=None, fn_kwargs={"cfg_json": cfg_json}, compute=compute)
    for res in counted.iter_rows():
        payload = json.loads(res["payload"])
        rss.append(res["rss_mb"])
        stamps.append((res["t_start"], res["t_end"], res["pid"]))
        if res["ok"]:
            organs, states = B.states_from_json(payload["states"])
            stats.add_volume(organs, states)
            slices += payload["slices"]
            rejects += payload["notes"]
            ok.append(res["case_id"])
        else:
            rejects += payload
        if prog:
            prog.update()
    timing["pass1"] = map_timing(t_build, stamps)
    stats_json = json.dumps(stats.to_dict(), sort_keys=True)
    _check_recipe(out_uri, cfg, stats_json)
    slices.sort(key=lambda r: (r["case_id"], r["z"]))
    records.write_table("slices", slices, layout.ProbeBuild(out_uri).slices)
    storage.write_text(layout.ProbeBuild(out_uri).cohort_stats, stats_json)

    # Pass 2: items and renders, each task writes its own part file.
    items_uri = layout.ProbeBuild(out_uri).probe_items
    ok_set = set(ok)
    rows2 = [r for r, v in zip(rows, vols) if v["case_id"] in ok_set]
    n_items, resumed = 0, 0
    if rows2:
        t_pass2, stamps = time.time(), []
        ds2 = ray.data.from_items(rows2, override_num_blocks=blocks(len(rows2)))
        kw = {"cfg_json": cfg_json, "stats_json": stats_json, "items_uri": items_uri,
              "montage_uri": layout.ProbeBuild(out_uri).montages}
        prog = Progress("probe: items", len(rows2)) if progress else None
        for res in ds2.map_batches(items_block, batch_size=None, fn_kwargs=kw, compute=compute).iter_rows():
            rss.append(res["rss_mb"])
            stamps.append((res["t_start"], res["t_end"], res["pid"]))
            if res["reject"]:
                rejects.append(json.loads(res["reject"]))
            elif res["n_items"] < 0:
                resumed += 1
            else:
                n_items += res["n_items"]
            if prog:
                prog.update()
        timing["pass2"] = map_timing(t_pass2, stamps)
    rejects.sort(key=lambda r: (r["item_id"], r["stage"], r["reason"], r["detail"] or ""))
    records.write_table("rejects", rejects, layout.ProbeBuild(out_uri).rejects)
    reasons: dict[str, int] = {}
    notes: dict[str, int] = {}
    for r in rejects:
        # organ_never_present rows note a kept volume (its items are flagged absent_from_volume)
        bucket = notes if r["reason"] == "organ_never_present" else reasons
        bucket[r["reason"]] = bucket.get(r["reason"], 0) + 1
    return {
        "volumes": len(vols),
        "volumes_used": len(ok),
        "items_written": n_items,
        "volumes_resumed": resumed,
        "rejects": reasons,
        "notes": notes,
        "probe_items": items_uri,
        "sampling": sampling_record(cfg),
        "slices": layout.ProbeBuild(out_uri).slices,
        # the highest peak RSS of a worker process during one task (peaks are reset per task)
        "worker_peak_rss_mb": round(max(rss), 1),
        "seconds": round(time.time() - t_build, 3),
        "volumes_per_block": per_block,
        "tasks_in_flight": in_flight,
        "timing": timing,
    }


def _check_recipe(out_uri: str, cfg: ProbeConfig, stats_json: str) -> None:
    """Part files are write-once; refuse to mix items of another config or cohort into one folder."""
    recipe = content_hash(cfg.model_copy(update={"workers": None}).model_dump_json() + stats_json)
    uri = layout.ProbeBuild(out_uri).recipe
    if storage.exists(uri):
        old = safe_text.read_json_object(uri).get("recipe")
        if old != recipe:
            raise MedScopeError(
                f"{out_uri} holds probe items of another config or cohort (recipe {old} != {recipe}); "
                "use a new --out"
            )
    else:
        storage.write_text(uri, json.dumps({"recipe": recipe, "sampling": sampling_record(cfg)}))


def sampling_record(cfg: ProbeConfig) -> dict:
    """How the items were drawn, for the run record (build summary and recipe.json): slices a volume,
    positives a slice (POPE's balance, or every present organ), negatives a slice and strategy, and
    the vessels kept out of the adversarial setting.

    Parameters
    ----------
    cfg : ProbeConfig
        The probe config.

    Returns
    -------
    dict
        ``"slices_per_volume"``, ``"positives_per_slice"`` (``"all present"`` when unset),
        ``"negatives_per_slice"``, ``"strategies"`` and ``"adversarial_excludes_vessels"``.
    """
    return {"slices_per_volume": cfg.slices_per_volume,
            "positives_per_slice": cfg.positives_per_slice if cfg.positives_per_slice is not None else "all present",
            "negatives_per_slice": cfg.negatives_per_slice, "strategies": list(cfg.strategies),
            "adversarial_excludes_vessels": list(cfg.vessels)}


def load_config(path: str | None) -> ProbeConfig:
    """The probe config at ``path``, or the default :class:`ProbeConfig` when there is none.

    Parameters
    ----------
    path : str or None
        URI of a probe config YAML, or None.

    Returns
    -------
    ProbeConfig
        The parsed config, or the defaults.
    """
    if path is None:
        return ProbeConfig()
    return cfgmod.load(ProbeConfig, path)


def run_job(cfg: ProbeConfig) -> dict:
    """``python -m pipelines.probe --config F`` (needs ``volumes`` and ``out`` in F).

    Parameters
    ----------
    cfg : ProbeConfig
        The probe config, with ``volumes`` (volumes table URI) and ``out`` (output URI) set.

    Returns
    -------
    dict
        The build summary (see :func:`build`).

    Raises
    ------
    MedScopeError
        When ``volumes`` or ``out`` is missing.
    """
    if not cfg.volumes or not cfg.out:
        raise MedScopeError("the probe config needs 'volumes' (volumes table URI) and 'out' (output URI)")
    return build(cfg.volumes, cfg.out, cfg)


def register(sub) -> None:
    """Add the ``probe`` verb (``build``, ``show``) to the ``medscope`` command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommand table of the ``medscope`` parser; ``probe build`` gets the :class:`ProbeConfig`
        flags and prints :func:`run_job`'s summary, ``probe show`` the :class:`ProbeShowConfig` flags and
        prints :func:`show` as JSON.
    """
    p = sub.add_parser("probe", help="volumetric organ-presence probe (organ-presence paper)")
    verbs = p.add_subparsers(dest="probe_verb", metavar="VERB")
    verbs.required = True
    b = verbs.add_parser("build", help="volumes table -> probe_items (+ slices, rejects) on Ray Data")
    add_config_flags(b, ProbeConfig)
    b.set_defaults(func=_build_cmd)
    add_action(verbs, "show", ProbeShowConfig, lambda a: print(json.dumps(show(a.uri, a.png), indent=2)),
               "items per organ, strategy and stratum; co-occurrence heat map PNG")


class ProbeShowConfig(StrictModel):
    """``medscope probe show``: counts of a probe build and its co-occurrence heat map."""

    uri: str = pydantic.Field(description="a probe build folder (or its probe_items table)",
                              json_schema_extra=cli(positional=True))
    png: str | None = pydantic.Field(None, description="where to write the heat map (default: <build>/cooccurrence.png)")


def _build_cmd(args) -> None:
    from pipelines.support.jobs import print_summary

    print_summary(run_job(config_from_args(args, source="medscope probe build")))


def show(uri: str, png: str | None = None) -> dict:
    """Counts of items per organ / strategy / stratum, and the co-occurrence heat map.

    Parameters
    ----------
    uri : str
        A probe build folder, or its probe_items table.
    png : str, optional
        Where to write the co-occurrence heat map; default ``<build>/cooccurrence.png``. Written only when
        the build has its cohort stats.

    Returns
    -------
    dict
        ``"items"``, ``"cases"``, ``"by_organ_truth"``, ``"by_strategy"``, ``"by_strategy_stratum"``
        (counts keyed ``"a / b"``, sorted), ``"absent_from_volume"``, and ``"heatmap"`` (the PNG's URI)
        when one was written.

    Raises
    ------
    MedScopeError
        When the table holds no probe items.
    """
    items_uri, folder = layout.table_uri("probe_items", uri), layout.folder_of("probe_items", uri)
    # imported here, not at the top: the build's Ray workers import this module, and scoring
    # pulls in scipy.stats (~2 s of a fresh process)
    from medscope.protocols.organ_presence.scoring import ITEM_COLUMNS

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
    stats_uri = layout.ProbeBuild(folder).cohort_stats
    if storage.exists(stats_uri):
        # imported here for the same reason as ITEM_COLUMNS: matplotlib is not for the workers
        from medscope.protocols.organ_presence.plots import cooccurrence_png

        png = png or layout.ProbeBuild(folder).cooccurrence
        storage.write_bytes(png, cooccurrence_png(CohortStats.from_dict(safe_text.read_json_object(stats_uri))))
        summary["heatmap"] = png
    return summary


if __name__ == "__main__":
    from pipelines.support.jobs import job_main

    sys.exit(job_main("probe", ProbeConfig, run_job))
