"""``medscope eval``: items x models x conditions on Ray actors (counterfactual paper §3.10, §4.2, §5.5).

The sweep knows a protocol only through ``EvalProtocol`` (its items, conditions and episode
runner), so every protocol reuses it unchanged. For each unit it derives a request key from
(protocol, item, model, condition, prompt version, decoding); finished keys are read back from
the output and never requested again. Private items go only to endpoints on their allow-list.
A budget cap stops submitting once the spend reaches it; work in flight finishes and is kept.

The driver holds keys, not pixels: it reads the items without their images (ids,
privacy flags) and hands each worker a unit's item id with the block of ids around it; the
worker fetches that block from the items table by id and caches it (``load_items(uri, ids,
images)`` is part of the protocol contract).

The protocol is built from its typed options (``EvalProtocol.Options``): the options set at
eval (which items, how an episode runs) come from ``protocol_options:`` and the flags generated
from the model (``--test-set``, ``--max-turns``, ...; pipelines/support/protocol_flags.py), and
``sweep.json`` records them, so ``score`` takes them from there and never asks for them again.

Output under ``--out``: ``episodes/part-<key>.parquet`` (episodes schema), ``rejects/``
(privacy refusals and failed units) and ``sweep.json`` (what ran, with the protocol's eval
options; never a key).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import uuid
from collections import Counter, deque
from typing import Literal

import pydantic

from medscope import config as cfgmod
from medscope import protocols
from medscope.io import folder_lock, layout, records, safe_text, storage
from medscope.protocols.base import EvalProtocol, Item, parse_options
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.models import checkpoints
from medscope.models.config import ModelEntry, ModelsConfig
from medscope.seeding import stable_hash
from pipelines.support.accounting import Accounting, conclude, failure_reason
from pipelines.support.eval_drive import MAX_CONNECTION_FAILURES, drive_units, unit_outcome
from pipelines.support.flags import add_action, add_config_flags, cli, config_from_args
from pipelines.support.jobs import job_main, print_summary
from pipelines.support import preflight, protocol_flags

DEFAULT_PROTOCOL = "counterfactual"
FETCH_BLOCK = 64  # items a worker fetches from the items table at once (consecutive in the table)


class EvalConfig(StrictModel):
    """One evaluation sweep: ``medscope eval run`` flags, or ``python -m pipelines.eval --config F``."""

    items: str = pydantic.Field(validation_alias=pydantic.AliasChoices("items", "views"),
                                description="the protocol's item table (views, probe_items, ...) or the folder holding "
                                "it; repeat (or give a comma list) to evaluate several together",
                                json_schema_extra=cli(repeat=True, metavar="ITEMS"))
    models: str = pydantic.Field(description="models YAML (configs/models/<file>.yaml)")
    out: str = pydantic.Field(description="output folder URI (episodes/, rejects/, sweep.json)")
    conditions: list[str] = pydantic.Field(["agent"], description="conditions to run, e.g. agent,blind")
    budget_usd: float | None = pydantic.Field(None, ge=0, description="stop submitting once the spend reaches this")
    protocol: str = pydantic.Field(DEFAULT_PROTOCOL, description="protocol name (counterfactual, organ_presence, ...) or module:Class")
    protocol_options: dict = pydantic.Field({}, description=(
        "the protocol's options set at eval (YAML mapping; the same keys as its flags below, e.g. test_set)"))
    run_id: str | None = pydantic.Field(None, description="default: derived from the output URI, so a rerun resumes")
    workers: int = pydantic.Field(2, ge=1, description="pool actors for API and light models")
    concurrency: int = pydantic.Field(8, ge=1, description="requests in flight per pool actor")
    pool_resources: dict[str, float] = pydantic.Field({}, description=(
        "custom Ray resources each pool actor requests (YAML mapping, e.g. {eval_pool: 0.5}): only nodes "
        "that offer them take pool actors, e.g. to keep them off a head node"))
    max_actor_restarts: int = pydantic.Field(3, ge=0, description=(
        "replacements in a row for workers of one lane that die before that lane finishes another unit"))
    backoff_s: float = pydantic.Field(0.5, ge=0, description="base of the jittered exponential backoff")
    models_filter: list[str] | None = pydantic.Field(None, description="only these model names")
    # addition: the paper sets no tolerance; by default any failed or refused unit exits non-zero
    max_failed: float | None = pydantic.Field(None, ge=0, description="failed + refused units accepted before the exit "
                                              "code says so: a count (3) or a fraction of the units run (0.05)")
    # addition: no paper sets it (pipelines.support.eval_drive.MAX_CONNECTION_FAILURES)
    max_connection_failures: int = pydantic.Field(MAX_CONNECTION_FAILURES, ge=0, description=(
        "units in a row that cannot connect to one endpoint before its other units are not sent (0: never stop)"))
    preflight: bool = pydantic.Field(True, description=(
        "before Ray starts, one model-list request to each API model's endpoint (--no-preflight: offline, "
        "keys still checked)"))

    @pydantic.field_validator("items", mode="before")
    @classmethod
    def _sources(cls, v):
        """Several item sources (``--items A --items B``, a YAML list) become one comma list."""
        if isinstance(v, (list, tuple)):
            return ",".join(u.strip() for x in v for u in str(x).split(",") if u.strip())
        return v

    @pydantic.field_validator("conditions")
    @classmethod
    def _some(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("name at least one condition")
        return v


def load_protocol(spec: str, options: dict | None = None) -> EvalProtocol:
    """The protocol named ``spec`` (a folder of medscope.protocols, or module:Class), built with
    its typed options from ``options`` (the sweep's ``protocol_options``): only options set at
    eval are taken here; a score or report option is refused, naming the verb that sets it.

    Parameters
    ----------
    spec : str
        A protocol name (a folder of ``medscope.protocols``, e.g. ``"counterfactual"``) or
        ``"module:Class"``.
    options : dict, optional
        The protocol's options set at eval; None for the defaults.

    Returns
    -------
    EvalProtocol
        The protocol, built with its typed options.

    Raises
    ------
    MedScopeError
        When ``spec`` names no protocol or cannot be loaded, an option belongs to another verb (score,
        report), or the options fail validation.
    """
    cls = protocols.protocol_class(spec)
    name = getattr(cls, "name", spec)
    return cls(parse_options(protocols.options_class(cls), options, name, verbs=("eval",), given_at="eval"))


def request_key(protocol: EvalProtocol, item: Item, entry: ModelEntry, condition: str) -> str:
    """The deterministic key of one unit of work (and of its part file).

    Parameters
    ----------
    protocol : EvalProtocol
        The sweep's protocol: its ``name`` and ``prompt_version`` are hashed.
    item : Item
        The item (its ``item_id``).
    entry : ModelEntry
        The model: its ``name``, ``model`` and decoding key.
    condition : str
        The condition, e.g. ``"agent"``.

    Returns
    -------
    str
        A stable hash of 24 characters.
    """
    return stable_hash(
        protocol.name, item.item_id, entry.name, entry.model, condition, protocol.prompt_version,
        entry.decoding().key(), length=24,
    )


def driver_items(protocol: EvalProtocol, uri: str) -> list[Item]:
    """The sweep's items as the driver keeps them: read without pixels and cut down to their key
    and privacy fields (no images, question or meta), so the driver's memory is ids and flags,
    whatever the images weigh; workers fetch theirs by id.

    Parameters
    ----------
    protocol : EvalProtocol
        The sweep's protocol: its ``load_items`` reads the table without images.
    uri : str
        The items table (or a comma list of several, for a protocol that reads several).

    Returns
    -------
    list of Item
        The items in table order, with empty ``question``, ``truth``, ``images`` and ``meta``.
    """
    return [dataclasses.replace(i, question="", truth="", images=(), meta={})
            for i in protocol.load_items(uri, images=False)]


def finished_keys(episodes_uri: str) -> set[str]:
    """Request keys whose episode is already written (resume skips them). The one place the
    sweep lists finished work, so a change of how parts are stored (compaction) lands here.

    Parameters
    ----------
    episodes_uri : str
        The run's episodes folder.

    Returns
    -------
    set of str
        The request keys of the episodes written there.
    """
    return records.part_keys(episodes_uri)


def errored_keys(episodes_uri: str) -> dict[str, str]:
    """request key -> error of the finished episodes written with a permanent provider error: a
    resumed sweep never re-sends them, and still counts them as failed.

    Parameters
    ----------
    episodes_uri : str
        The run's episodes folder.

    Returns
    -------
    dict of str to str
        Request key to the error text, for episodes whose ``error`` is non-empty.
    """
    table = records.read_table("episodes", episodes_uri, columns=["request_key", "error"])
    return {k: e for k, e in zip(table.column("request_key").to_pylist(), table.column("error").to_pylist()) if e}


def fetch_blocks(items: list[Item], size: int = FETCH_BLOCK) -> dict[str, tuple[str, ...]]:
    """item id -> the block of consecutive item ids a worker fetches with it.

    Parameters
    ----------
    items : list of Item
        The sweep's items, in table order.
    size : int, optional
        Item ids a block (``FETCH_BLOCK``, 64).

    Returns
    -------
    dict of str to tuple of str
        Item id to its block: ``items`` cut into consecutive runs of ``size`` ids.
    """
    ids = [i.item_id for i in items]
    out: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(ids), size):
        block = tuple(ids[start:start + size])
        out.update(dict.fromkeys(block, block))
    return out


def allowed(item: Item, entry: ModelEntry) -> bool:
    """Privacy: whether ``item`` may be sent to ``entry``'s endpoint (ModelEntry.may_receive).

    Parameters
    ----------
    item : Item
        The item: its ``private`` flag and ``endpoint_allowlist`` are read.
    entry : ModelEntry
        The model whose endpoint would receive it.

    Returns
    -------
    bool
        True when the item may be sent.
    """
    return entry.may_receive(item.private, item.endpoint_allowlist)


def run_sweep(cfg: EvalConfig, protocol: EvalProtocol | None = None, entries: list[ModelEntry] | None = None) -> dict:
    """Run (or resume) a sweep; returns its summary. ``protocol``/``entries`` override the config.

    Parameters
    ----------
    cfg : EvalConfig
        The sweep: items, models YAML, output folder, conditions, budget, protocol and its options, Ray pool
        settings and model filter.
    protocol : EvalProtocol, optional
        The protocol to use instead of loading ``cfg.protocol`` with ``cfg.protocol_options``.
    entries : list of ModelEntry, optional
        The models to use instead of those of ``cfg.models`` (``cfg.models_filter`` still applies).

    Returns
    -------
    dict
        What is also written to ``sweep.json``: run id, protocol, prompt version, protocol spec and eval
        options, unit counts (``"units"``, ``"to_run"``, ``"skipped_finished"``, ``"refused_private"``,
        ``"done"``, ``"already_written"``, ``"failed"``, ``"retry_later"``, ``"permanent_errors"``),
        ``"spent_usd"``, ``"stopped"`` (``"budget"`` or None), ``"workers_lost"``, ``"units_sent_again"``,
        the ``"episodes"`` and ``"rejects"`` URIs, ``"models"`` (endpoints redacted), ``"conditions"``,
        ``"items"``, ``"out"`` and ``"accounting"`` (per model and condition).

    Raises
    ------
    MedScopeError
        When a local model's checkpoint is missing, a condition is not the protocol's, several item tables
        are given to a protocol that reads one, item ids repeat, or an API model with units to run
        fails the pre-flight (its key variable unset, its endpoint unreachable or refusing the key:
        :mod:`pipelines.support.preflight`), before Ray starts.

    References
    ----------
    .. [1] counterfactual paper, §3.10, §4.2, §5.5
    """
    protocol = protocol or load_protocol(cfg.protocol, cfg.protocol_options)
    entries = entries or cfgmod.load(ModelsConfig, cfg.models).models
    if cfg.models_filter:
        # a filter naming no model (a typo) ran nothing and exited 0 "results in ..." (issue 51)
        absent = sorted(set(cfg.models_filter) - {e.name for e in entries})
        if absent:
            raise MedScopeError(f"--models-filter {', '.join(absent)}: no such model in {cfg.models} "
                                f"(it names {', '.join(e.name for e in entries) or 'none'})")
        entries = [e for e in entries if e.name in set(cfg.models_filter)]
    if not entries:  # `models: []` ran nothing and exited 0 as if finished (issue 51)
        raise MedScopeError(f"{cfg.models}: lists no model to evaluate; add an entry under `models:`")
    checkpoints.require_local_models(entries, cfg.models)  # a missing checkpoint: one line, before Ray
    unknown = sorted(set(cfg.conditions) - set(protocol.conditions()))
    if unknown:
        raise MedScopeError(f"protocol {protocol.name} has no condition(s) {unknown}; it knows {list(protocol.conditions())}")
    if len(item_sources(cfg.items)) > 1 and not getattr(protocol, "multi_items", False):
        raise MedScopeError(f"protocol {protocol.name} reads one item table; --items named "
                            f"{len(item_sources(cfg.items))}: {cfg.items}")
    items = driver_items(protocol, cfg.items)
    dupes = sorted(k for k, n in Counter(i.item_id for i in items).items() if n > 1)
    if dupes:
        raise MedScopeError(f"{cfg.items}: item ids must be unique (they key the episodes); repeated: {dupes[:5]}")
    if not items:  # a sweep of nothing would exit 0 and look like a finished run
        raise MedScopeError(f"{cfg.items}: no items to evaluate (the item table has no rows the protocol "
                            f"{protocol.name} reads); check --items")
    # two sweeps into one --out would both write parts and sweep.json (issue 51): one writer at a time
    with folder_lock.writer_lock(cfg.out, "eval run"):
        return _sweep(cfg, protocol, entries, items)


def _sweep(cfg: EvalConfig, protocol: EvalProtocol, entries: list[ModelEntry], items: list[Item]) -> dict:
    """`run_sweep` once its inputs are checked, holding ``cfg.out``'s writer lock."""
    from pipelines.support.raycluster import cluster_gpus, ensure_ray

    run_id = cfg.run_id or stable_hash("eval", cfg.out)
    run = layout.EvalRun(cfg.out)
    episodes_uri, rejects_uri = run.episodes, run.rejects

    finished = finished_keys(episodes_uri)
    blocks = fetch_blocks(items)
    spent_before = _spent(episodes_uri) if cfg.budget_usd is not None and finished else 0.0
    todo: deque[dict] = deque()
    counts = Counter(skipped_finished=0, refused_private=0)
    acc = Accounting()
    errored = errored_keys(episodes_uri) if finished else {}
    for entry in entries:
        for condition in cfg.conditions:
            for item in items:
                key = request_key(protocol, item, entry, condition)
                if key in finished:
                    counts["skipped_finished"] += 1
                    if key in errored:  # written with a permanent error by an earlier run: still a failure
                        acc.add(entry.name, condition, "failed", failure_reason("done", errored[key]) + " (earlier run)")
                    else:
                        acc.add(entry.name, condition, "skipped")
                elif not allowed(item, entry):
                    counts["refused_private"] += 1
                    acc.add(entry.name, condition, "refused", endpoint=entry.endpoint, fix=ALLOW_FIX)
                    records.write_part("rejects", [records.reject_row(
                        "episodes", entry.name, item.item_id, "eval", "private_endpoint_not_allowed",
                        f"model={entry.name} condition={condition} endpoint not on the item's allow-list",
                    )], rejects_uri, key)
                else:  # keys only: the worker fetches the item (and its block) by id
                    todo.append({"key": key, "item_id": item.item_id, "block": blocks[item.item_id],
                                 "model": entry.name, "condition": condition})
    options = getattr(protocol, "options", None)
    summary = {"run_id": run_id, "protocol": protocol.name, "prompt_version": protocol.prompt_version,
               # what score builds the protocol from: its spec (module:Class too) and the options set at eval
               "protocol_spec": protocols.spec_of(protocol),
               "protocol_options": options.values_at("eval") if options is not None else dict(cfg.protocol_options),
               "units": len(items) * len(entries) * len(cfg.conditions), "to_run": len(todo), **counts}
    refused = f", {counts['refused_private']} refused (private items, endpoint not allow-listed)" \
        if counts["refused_private"] else ""
    print(f"eval {protocol.name}: {summary['units']} units, {len(finished)} already finished, "
          f"{len(todo)} to run{refused}", file=sys.stderr, flush=True)

    stopped = None
    if cfg.budget_usd is not None and spent_before >= cfg.budget_usd and todo:
        stopped, todo = "budget", deque()
    results: list[dict] = []
    workers_lost, sent_again, endpoints_stopped = 0, [], {}
    if todo:
        # a missing key or a down endpoint: one line per model now, not one failed unit each after Ray starts
        wanted = {u["model"] for u in todo}
        preflight.require([e for e in entries if e.name in wanted], reach=cfg.preflight)
        ensure_ray()
        driven = drive_units(cfg, protocol, entries, todo, episodes_uri, run_id, spent_before, cluster_gpus() > 0)
        results, stopped, workers_lost, sent_again = (driven.results, driven.stopped, driven.workers_lost,
                                                      driven.sent_again)
        endpoints_stopped = {safe_text.redact_url(e): why for e, why in driven.endpoints_stopped.items()}
        for res in results:
            if res["status"] in ("failed", "retry_later"):
                records.write_part("rejects", [records.reject_row(
                    "episodes", res["model"], res["item_id"], "eval", res["status"], res.get("error") or "",
                )], rejects_uri, f"{res['key']}-{res['status']}-{uuid.uuid4().hex[:6]}")
    status = Counter(r["status"] for r in results)
    for res in results:
        outcome, reason = unit_outcome(res)
        acc.add(res["model"], res["condition"], outcome, reason)
    ran = Counter(r["key"] for r in results)
    for unit in todo:  # never started: the budget stopped the sweep first
        if unit["key"] not in ran:
            acc.add(unit["model"], unit["condition"], "stopped")
    summary.update({
        "done": status["done"], "already_written": status["exists"], "failed": status["failed"],
        "retry_later": status["retry_later"], "permanent_errors": sum(1 for r in results if r.get("error") and r["status"] == "done"),
        "spent_usd": round(spent_before + sum(r.get("cost_usd") or 0.0 for r in results), 6),
        "stopped": stopped, "workers_lost": workers_lost, "endpoints_stopped": endpoints_stopped,
        # units in flight on a lost or unreachable worker, queued again: possibly requested (and billed) twice
        "units_sent_again": sorted(set(sent_again)), "episodes": episodes_uri, "rejects": rejects_uri,
        "models": [{"name": e.name, "kind": e.kind, "model": e.model, "endpoint": safe_text.redact_url(e.endpoint)} for e in entries],
        "conditions": list(cfg.conditions), "items": cfg.items, "out": cfg.out,
        "accounting": acc.to_dict(),
    })
    storage.write_text(run.summary, json.dumps(summary, indent=2, sort_keys=True))
    return summary


# what a refused unit's summary line tells the user to do (the allow-list is set when items are built)
ALLOW_FIX = ("to send them, rebuild the items with this endpoint on their allow-list (cohort config "
             "`endpoint_allowlist: [URL]`, or `benchgen build --allow-endpoint URL`), or serve the model locally")


def _spent(episodes_uri: str) -> float:
    table = records.read_table("episodes", episodes_uri, columns=["cost_usd"])
    return float(sum(table.column("cost_usd").to_pylist()))


# -- eval show -------------------------------------------------------------------------------
def show(uri: str) -> list[dict]:
    """Episodes per model and condition: unparseable rate, tool use, tokens, cost, errors, and
    how decisions were read (``read_by``: format / json / rules / judge counts).

    Parameters
    ----------
    uri : str
        An episodes table (or the eval run folder holding it).

    Returns
    -------
    list of dict
        One row per (model, condition), sorted: ``"model"``, ``"condition"``, ``"episodes"``,
        ``"unparseable_rate"`` (errors aside), ``"unclear"`` and ``"unclear_rate"`` (replies the reader did
        not commit on: left out of every n when scored), ``"tool_use_rate"``, ``"mean_tool_calls"``,
        ``"input_tokens"``, ``"output_tokens"``, ``"cost_usd"``, ``"errors"``, ``"mean_latency_s"`` (from
        each request sent to its reply, summed over an episode's requests), ``"mean_queued_s"`` (the wait
        for the rate limiter before sending; None for a table written before it was recorded, whose
        latency counted that wait too) and ``"read_by"`` (e.g. ``"format=3 json=1"``, or ``"-"``).
    """
    table = records.read_table("episodes", uri)
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in table.select(["model", "condition", "action", "tool_calls", "input_tokens", "output_tokens",
                             "cost_usd", "error", "latency_s", "queued_s", "reading"]).to_pylist():
        groups.setdefault((row["model"], row["condition"]), []).append(row)
    out = []
    for (model, condition), rows in sorted(groups.items()):
        n = len(rows)
        out.append({
            "model": model, "condition": condition, "episodes": n,
            "unparseable_rate": sum(r["action"] == "unparseable" and not r["error"] for r in rows) / n,
            "unclear": sum(r["action"] == "unclear" for r in rows),
            "unclear_rate": sum(r["action"] == "unclear" for r in rows) / n,
            "tool_use_rate": sum(r["tool_calls"] > 0 for r in rows) / n,
            "mean_tool_calls": sum(r["tool_calls"] for r in rows) / n,
            "input_tokens": sum(r["input_tokens"] for r in rows),
            "output_tokens": sum(r["output_tokens"] for r in rows),
            "cost_usd": round(sum(r["cost_usd"] for r in rows), 6),
            "errors": sum(1 for r in rows if r["error"]),
            "mean_latency_s": round(sum(r["latency_s"] for r in rows) / n, 3),
            "mean_queued_s": _mean_recorded([r["queued_s"] for r in rows]),
            "read_by": " ".join(f"{k}={v}" for k, v in sorted(Counter(r["reading"] for r in rows if r["reading"]).items()))
            or "-",
        })
    return out


def _mean_recorded(values: list) -> float | None:
    """The mean of the values a table recorded, or None when none was (a column added later)."""
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 3) if known else None


def failed_units(uri: str) -> list[dict]:
    """The units an eval run's ``rejects/`` holds, grouped by model and reason (what ``eval show``
    prints when a run wrote no episode, e.g. every unit failed).

    Parameters
    ----------
    uri : str
        The eval run folder or its ``episodes/``.

    Returns
    -------
    list of dict
        ``model``, ``reason`` (the status and the error's leading name,
        :func:`pipelines.support.accounting.failure_reason`; or the refusal's reason), ``units``
        and ``example`` (the first unit's full error text, credentials in URLs redacted), most
        units first; empty when the run has no rejects.
    """
    rejects = layout.EvalRun(uri.rstrip("/") or uri).rejects  # a run that wrote no episodes/ at all
    if not storage.is_dir(rejects):
        rejects = layout.EvalRun(layout.folder_of("episodes", uri)).rejects
    if not storage.is_dir(rejects):
        return []
    groups: dict[tuple[str, str], list[str]] = {}
    for r in records.read_table("rejects", rejects, columns=["source", "reason", "detail"]).to_pylist():
        reason = failure_reason(r["reason"], r["detail"]) if r["reason"] in ("failed", "retry_later") else r["reason"]
        groups.setdefault((r["source"], reason), []).append(r["detail"] or "")
    rows = [{"model": m, "reason": reason, "units": len(d), "example": safe_text.redact_urls(d[0])}
            for (m, reason), d in groups.items()]
    return sorted(rows, key=lambda r: (-r["units"], r["model"], r["reason"]))


def _print_show(uri: str) -> None:
    rows = show(uri)
    if not rows:
        failed = failed_units(uri)
        if not failed:
            print(f"no episodes under {uri}")
            return
        print(f"no episodes under {uri}: {sum(r['units'] for r in failed)} unit(s) failed or were refused, none done")
        for r in failed:
            print(f"  {r['model']}: {r['units']} {r['reason']}" + (f" (e.g. {r['example'][:200]})" if r["example"] else ""))
        print("failed units (not refused ones) are tried again by the next `medscope eval run` on the same --out; "
              "rejects/ holds each one")
        return
    cols = list(rows[0])
    cells = [[(f"{r[c]:.6f}" if c == "cost_usd" else f"{r[c]:.3f}") if isinstance(r[c], float)
              else "-" if r[c] is None else str(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    for row in [cols, *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))
    print("mean_latency_s: from each request sent to its reply (an episode's requests summed); "
          "mean_queued_s: waiting for the rate limiter before sending, apart" +
          ("" if all(r["mean_queued_s"] is not None for r in rows)
           else " ('-': not recorded by the release that ran it, whose latency included that wait)"))
    if any(r["unclear"] for r in rows):
        print("unclear: replies the reader did not commit on (its evidence disagreed); they count in no n. "
              "See how each was read: medscope answers read --episodes " + uri)
    rejects = layout.EvalRun(layout.folder_of("episodes", uri)).rejects
    if storage.is_dir(rejects):
        reasons = Counter(records.read_table("rejects", rejects, columns=["reason"]).column("reason").to_pylist())
        if reasons:
            print("rejects: " + ", ".join(f"{k}={v}" for k, v in sorted(reasons.items())))


def item_sources(uri: str) -> list[str]:
    """The item sources of an items argument (a comma list of several).

    Parameters
    ----------
    uri : str
        One items URI or a comma list of several.

    Returns
    -------
    list of str
        The URIs, stripped, empty ones dropped.
    """
    return [u.strip() for u in str(uri).split(",") if u.strip()]


def _run_cli(args) -> None:
    """``medscope eval run``: the sweep, its JSON summary, then the accounting and exit code."""
    protocol_flags.refuse_misplaced(args)
    cfg = config_from_args(args, source="medscope eval run")
    flagged = protocol_flags.given(args, protocols.options_class(protocols.protocol_class(cfg.protocol)), "eval")
    if flagged:  # a protocol option's flag wins over the same key of protocol_options
        cfg = cfg.model_copy(update={"protocol_options": {**cfg.protocol_options, **flagged}})
    summary = run_sweep(cfg)
    print_summary(summary)
    conclude(summary, cfg.max_failed, "eval run")


def protocol_named(argv: list[str]) -> list[str]:
    """The protocol an ``eval run`` command line is about: ``--protocol``, else its ``--config``
    file's ``protocol:``, else the default (counterfactual).

    Parameters
    ----------
    argv : list of str
        The command line's arguments.

    Returns
    -------
    list of str
        One protocol name (or ``module:Class`` spec).
    """
    known = protocol_flags.peek(argv, "--protocol", "--config")
    if known is None:
        return [DEFAULT_PROTOCOL]
    if known.protocol:
        return [known.protocol]
    data = cfgmod.load_yaml(known.config) if known.config else {}
    return [str((data or {}).get("protocol") or DEFAULT_PROTOCOL)]


def register(sub) -> None:
    """Add the ``eval`` verb (``run``, ``show``) to the ``medscope`` command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommand table of the ``medscope`` parser; ``eval run`` gets the :class:`EvalConfig` flags
        (``--views`` for ``--items``) and the protocol's eval options as flags, ``eval show`` the
        :class:`EvalShowConfig` flags.
    """
    p = sub.add_parser("eval", help="evaluate models on a protocol's items (rate-limited, resumable Ray sweep)")
    verbs = p.add_subparsers(dest="eval_verb", metavar="ACTION")
    verbs.required = True
    r = verbs.add_parser("run", help="run (or resume) a sweep: items x models x conditions")
    add_config_flags(r, EvalConfig, aliases={"items": ["views"]})
    protocol_flags.install(r, "eval", protocol_named)  # the protocol's eval options as flags
    r.set_defaults(func=_run_cli)
    add_action(verbs, "show", EvalShowConfig, lambda a: _print_show(a.uri),
               "episodes per model and condition; rejects by reason")
    add_action(verbs, "import", EvalImportConfig, _import_cli,
               "another harness's logged replies as an eval run (score / compare / stats / report take it)")


class EvalShowConfig(StrictModel):
    """``medscope eval show``: episodes per model and condition; rejects by reason."""

    uri: str = pydantic.Field(description="an eval run folder (or its episodes table)", json_schema_extra=cli(positional=True))


class EvalImportConfig(StrictModel):
    """``medscope eval import --from lmms-eval LOGS``: another harness's logged replies as a MedScope eval run of
    the counterfactual protocol (plain condition), read by MedScope's reader; unmatched replies are rejects."""

    from_: Literal["lmms-eval"] = pydantic.Field(alias="from", description="the harness that wrote the logs")
    logs: str = pydantic.Field(description="its logs: lmms-eval's --output_path folder (run with --log_samples) or one "
                               "samples file", json_schema_extra=cli(positional=True))
    items: str = pydantic.Field(description="the views table the task was exported from (or its build folder)")
    out: str = pydantic.Field(description="the eval run folder written (episodes/, rejects/, sweep.json)")
    model: str | None = pydantic.Field(None, description="the model's name (default: the one the logs record)")
    protocol_options: dict = pydantic.Field({}, description=(
        "the counterfactual protocol's eval options the task was exported with (YAML mapping, e.g. {test_set: main})"))


def _import_cli(cfg: EvalImportConfig) -> None:
    from medscope.interop.lmms_import import import_lmms_eval

    summary = import_lmms_eval(cfg.logs, cfg.items, cfg.out, model=cfg.model, protocol_options=cfg.protocol_options)
    print_summary(summary)


if __name__ == "__main__":
    sys.exit(job_main("eval", EvalConfig, run_sweep))
