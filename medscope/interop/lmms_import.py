"""lmms-eval's logged samples as a MedScope eval run (``medscope eval import --from lmms-eval``, docs/interop.md).

lmms-eval's ``--log_samples`` writes, per task, ``<time>_samples_<task>.jsonl`` (one JSON line per
doc: its ``doc_id``, ``target``, the model's ``resps`` / ``filtered_resps`` and what the task's
``process_results`` returned) beside ``<time>_results.json`` (the model's name and arguments). Each
reply becomes an episode of the counterfactual protocol's ``plain`` condition, read by MedScope's
reader exactly as ``medscope eval`` reads a reply (``agent_episode.replay``), and written as an eval
run (``episodes/`` parts, ``rejects/``, ``sweep.json``) that ``score``, ``compare``, ``stats`` and
``report`` take unchanged.

A sample is matched to a view by the view id it carries (the ``item_id`` a MedScope task's
``process_results`` logged, else its ``target``, which a MedScope task sets to the view id). A sample
without one, naming a view not among the items, or repeating a view already imported, is a reject
with its reason.
"""

from __future__ import annotations

import glob
import json
import os
from collections import Counter

from medscope.errors import MedScopeError
from medscope.io import layout, records, storage
from medscope.seeding import stable_hash

SOURCE = "lmms-eval"


def sample_files(logs: str) -> list[str]:
    """lmms-eval's sample logs under ``logs`` (a ``*_samples_*.jsonl`` file, or a folder searched
    recursively), sorted.

    Parameters
    ----------
    logs : str
        A samples file or lmms-eval's ``--output_path`` folder.

    Returns
    -------
    list of str
        The samples files.

    Raises
    ------
    MedScopeError
        When there are none.
    """
    if os.path.isfile(logs):
        return [logs]
    found = sorted(glob.glob(os.path.join(logs, "**", "*_samples_*.jsonl"), recursive=True))
    if not found:
        raise MedScopeError(f"eval import: no lmms-eval samples (*_samples_*.jsonl, written by --log_samples) under {logs}")
    return found


def model_of(samples_file: str) -> str | None:
    """The model's name lmms-eval recorded beside a samples file (its ``*_results.json``).

    Parameters
    ----------
    samples_file : str
        A ``<time>_samples_<task>.jsonl``.

    Returns
    -------
    str or None
        ``model_version=`` of its model arguments, else its ``model_name``, else the model backend; None
        without a results file.
    """
    stamp = os.path.basename(samples_file).split("_samples_")[0]
    results = os.path.join(os.path.dirname(samples_file), f"{stamp}_results.json")
    if not os.path.exists(results):
        return None
    with open(results, encoding="utf-8") as fh:
        data = json.load(fh)
    config = data.get("config") or {}
    args = str(config.get("model_args") or "")
    for pair in args.split(","):
        key, _, value = pair.partition("=")
        if key.strip() in ("model_version", "model", "pretrained") and value.strip():
            return value.strip()
    return data.get("model_name") or config.get("model") or None


def reply_of(sample: dict) -> str | None:
    """The model's reply in one logged sample (the filtered response, else the raw one).

    Parameters
    ----------
    sample : dict
        One line of a samples file.

    Returns
    -------
    str or None
        The reply text; None when the sample holds none.
    """
    for key in ("filtered_resps", "resps"):
        value = sample.get(key)
        while isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            return value
    return None


def item_id_of(sample: dict) -> str | None:
    """The view id a logged sample carries (a MedScope task's logged reading, else ``target``).

    Parameters
    ----------
    sample : dict
        One line of a samples file.

    Returns
    -------
    str or None
        The view id, or None.
    """
    for value in sample.values():
        if isinstance(value, dict) and isinstance(value.get("item_id"), str):
            return value["item_id"]
    target = sample.get("target")
    return target if isinstance(target, str) and target else None


def import_lmms_eval(logs: str, items: str, out: str, model: str | None = None,
                     protocol_options: dict | None = None) -> dict:
    """Write lmms-eval's logged replies as a MedScope eval run of the counterfactual protocol.

    Parameters
    ----------
    logs : str
        lmms-eval's ``--output_path`` folder (searched for samples files) or one samples file.
    items : str
        The views table the replies answer (or its build folder): the one exported to lmms-eval.
    out : str
        The eval run folder written (``episodes/``, ``rejects/``, ``sweep.json``).
    model : str, optional
        The model's name in the run (default: the one lmms-eval recorded; see :func:`model_of`).
    protocol_options : dict, optional
        The counterfactual protocol's eval options (``test_set``, ``resize_long_side``, ``templates``...),
        as the task was exported with; None for the defaults.

    Returns
    -------
    dict
        What ``sweep.json`` records: ``protocol``, ``protocol_spec``, ``protocol_options``, ``items``,
        ``models``, ``conditions``, ``done`` (episodes written), ``rejected`` and ``rejects_by_reason``,
        ``samples_files``.

    Raises
    ------
    MedScopeError
        When no samples file is found, a file is not JSON lines, or no model name is given or recorded.

    References
    ----------
    .. [1] counterfactual paper, §3.1 (plain condition), §3.10 (evaluation harness).
    """
    from medscope import protocols
    from medscope.protocols.base import parse_options
    from medscope.protocols.counterfactual.agent_episode import replay
    from medscope.protocols.counterfactual.protocol import CounterfactualProtocol
    from medscope.interop import hf_export, lmms_hooks

    files = sample_files(logs)
    kind, table_uri = hf_export.detect_items(items)
    if kind.table != "views":
        raise MedScopeError(f"eval import: {items} holds {kind.table}; lmms-eval replies are imported against "
                            "the counterfactual views the task was exported from")
    options = parse_options(protocols.options_class(CounterfactualProtocol), protocol_options or {}, "counterfactual",
                            verbs=("eval",), given_at="eval import")
    protocol = CounterfactualProtocol(options)
    by_id = {i.item_id: i for i in protocol.load_items(table_uri)}
    settings = protocol.settings
    run = layout.EvalRun(out)
    run_id = stable_hash("eval-import", out)
    seen: set[tuple[str, str]] = set()
    rejects: list[dict] = []
    models: set[str] = set()
    done = 0
    for path in files:
        name = model or model_of(path)
        if not name:
            raise MedScopeError(f"eval import: {path} has no results file naming its model; pass --model NAME")
        with open(path, encoding="utf-8") as fh:
            lines = [line for line in fh if line.strip()]
        for number, line in enumerate(lines, 1):
            where = f"{os.path.basename(path)}:{number}"
            try:
                sample = json.loads(line)
            except ValueError:
                raise MedScopeError(f"eval import: {where} is not a JSON line") from None
            item_id, reply = item_id_of(sample), reply_of(sample)
            if item_id is None:
                rejects.append(records.reject_row("episodes", SOURCE, where, "import", "no_item_id",
                                                  "the sample carries no view id (item_id or target)"))
                continue
            if item_id not in by_id:
                rejects.append(records.reject_row("episodes", SOURCE, item_id, "import", "item_not_in_items",
                                                  f"{where}: view {item_id} is not an evaluation view of {items}"))
                continue
            if reply is None:
                rejects.append(records.reject_row("episodes", SOURCE, item_id, "import", "no_reply",
                                                  f"{where}: the sample holds no response"))
                continue
            if (name, item_id) in seen:
                rejects.append(records.reject_row("episodes", SOURCE, item_id, "import", "duplicate_reply",
                                                  f"{where}: a second reply of {name} to this view; the first is kept"))
                continue
            seen.add((name, item_id))
            item = by_id[item_id]
            result = replay(item, lmms_hooks.CONDITION, [reply], settings).result
            key = stable_hash(SOURCE, protocol.name, item_id, name, lmms_hooks.CONDITION, protocol.prompt_version,
                              length=24)
            tokens = (sample.get("token_counts") or [{}])[0] if isinstance(sample.get("token_counts"), list) else {}
            row = {"run_id": run_id, "protocol": protocol.name, "model": name, "condition": lmms_hooks.CONDITION,
                   "item_id": item_id, "case_id": item.case_id, "request_key": key,
                   "prompt_version": protocol.prompt_version, "decoding": SOURCE,
                   "turns": [{"role": t.get("role"), "text": t.get("text"), "image_ref": t.get("image_ref")}
                             for t in result.turns],
                   "raw_text": result.raw_text, "action": result.action, "answer": result.answer,
                   "claims_finding": result.claims_finding, "box": result.box, "confidence": result.confidence,
                   "tool_calls": 0, "input_tokens": int((tokens or {}).get("input_tokens") or 0),
                   "output_tokens": int((tokens or {}).get("output_tokens") or 0), "cost_usd": 0.0,
                   "latency_s": 0.0, "attempts": 1, "error": None, "reading": result.reading,
                   "reading_rule": result.reading_rule, "reading_note": result.reading_note}
            records.write_part("episodes", [row], run.episodes, key)
            models.add(name)
            done += 1
    if rejects:
        records.write_part("rejects", rejects, run.rejects, stable_hash("import-rejects", *files, length=16))
    summary = {"run_id": run_id, "protocol": protocol.name, "prompt_version": protocol.prompt_version,
               "protocol_spec": protocols.spec_of(protocol), "protocol_options": options.values_at("eval"),
               "imported_from": SOURCE, "samples_files": files, "items": items, "out": out,
               "models": [{"name": m, "kind": SOURCE, "model": m, "endpoint": None} for m in sorted(models)],
               "conditions": [lmms_hooks.CONDITION], "done": done, "already_written": 0, "skipped_finished": 0,
               "rejected": len(rejects),
               "rejects_by_reason": dict(sorted(Counter(r["reason"] for r in rejects).items())),
               "episodes": run.episodes, "rejects": run.rejects}
    storage.write_text(run.summary, json.dumps(summary, indent=2, sort_keys=True))
    return summary
