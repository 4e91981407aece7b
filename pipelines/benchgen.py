"""``medscope benchgen build | schema | phantom | show``: a private multiple-choice benchmark from an
institution's own reports and volumes (benchmark-MCQ paper Methods).

build: approved schema -> reports paired with volumes (rejects for the rest) -> generation
calls (report-derived questions; optionally LLM extraction) through the shared evaluation sweep
(rate-limited Ray actors, request-key cache, resume, privacy allow-list) -> deterministic rule
extraction and dataset-wide distractor pools -> one Ray Data task per study: montages + its
questions, each written as a write-once part (a rerun skips finished studies).

Output under ``--out`` (names in ``medscope.io.layout.BenchgenBuild``): ``items/`` (mcq_items parts), ``montages/``,
``rejects/``, ``generation/`` (the generation sweep: episodes, its own rejects), ``build.json``.
Then ``medscope eval run --protocol benchmark_mcq --items <out> --conditions sighted,blind``,
``medscope score`` and ``medscope report`` as for every protocol.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import Counter
from typing import Literal

from pydantic import Field as F

from medscope import config as cfgmod
from medscope.io import layout, records, safe_text, storage
from medscope.benchgen import cohort as cohortmod
from medscope.benchgen import demo_inputs
from medscope.benchgen import schema as schemamod
from medscope.benchgen.build import (build_cohorts, check_append, cohort_prefix, generation_record,
                                     render_study, study_questions)
from medscope.benchgen.extract import extract_with_rejects, read_extraction
from medscope.benchgen.generation import GenerationProtocol, study_item_id, write_studies
from medscope.benchgen.questions import REPORT_PROMPT, value_pools
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.models.config import ModelEntry, ModelsConfig
from medscope.protocols.benchmark_mcq import tables as _mcq_tables  # noqa: F401 - registers mcq_items, montages
from medscope.seeding import stable_hash
from pipelines.support.accounting import combine
from pipelines.support.flags import add_action, cli
from pipelines.support.jobs import job_main

GENERATION_PROTOCOL = "medscope.benchgen.generation:GenerationProtocol"
MCQ_PROTOCOL = "benchmark_mcq"
LOCAL_KEY_ENV = "MEDSCOPE_BENCHGEN_LOCAL_KEY"


class BuildConfig(StrictModel):
    """``medscope benchgen build`` flags, or ``python -m pipelines.benchgen --config F`` (the same keys)."""

    reports: str = F(description="reports export, CSV or JSONL: case_id, study, findings, impression")
    volumes: str = F(description="<root>/<case_id>/<sequence>.nii.gz or <sequence>/ (DICOM series)")
    schema_: str = F(alias="schema", description="approved schema YAML (see `benchgen schema init|approve`)")
    out: str = F(description="build folder URI (items/, montages/, rejects/, build.json)")
    cohort: str = F("cohort", description="cohort name (a column of every table)")
    private: bool = F(True, description="the cohort's reports are private (--no-private: they are not)")
    endpoint_allowlist: list[str] = F([], description="endpoint allowed to receive this cohort's report text",
                                      json_schema_extra=cli(repeat=True, aliases=("--allow-endpoint",), metavar="URL"))
    imaging_source: Literal["private", "public"] = F("private", description="where the images come from (Table 3)")
    matched_group: str | None = F(None, description="cohorts generated identically, compared in Table 3")
    extractor: Literal["rules", "llm"] = F("rules", description="how reports are read into schema values")
    report_questions: bool = F(True, description="also write report-derived questions (needs a generator; "
                                                 "--no-report-questions: schema-driven questions only)")
    generator_models: str | None = F(None, description="configs/models/<file>.yaml holding the question writer")
    generator_name: str | None = F(None, description="the writer's model name in generator_models (default: the first)",
                                   json_schema_extra=cli(aliases=("--generator",)))
    generator_entry: dict | None = F(None, description="inline model entry of the writer (programmatic use)")
    seed: int = F(42, description="seed of the distractor draws and sampling")
    grid: int = F(12, ge=1, description="montage side in tiles: grid x grid uniformly sampled axial slices")
    max_side: int = F(1536, ge=1, description="long side of a montage, pixels")
    workers: int = F(1, ge=1, description="pool actors of the generation sweep")
    concurrency: int = F(4, ge=1, description="generation requests in flight per pool actor")
    append: bool = F(False, description="add this cohort to a build folder that holds other cohorts (refused without it)")
    verify: Literal["rules", "llm"] = F("rules", description="rules: the offline report-grounded check only; llm: "
                                        "then the paper's second call, a verifier model asked whether the report "
                                        "states each kept key (cached, resumable)")
    verifier_name: str | None = F(None, description="the verifier's model name in generator_models (default: the "
                                                    "question writer)", json_schema_extra=cli(aliases=("--verifier",)))


def generator_of(cfg: BuildConfig) -> ModelEntry | None:
    """The question writer of a build: the inline entry, else a model of ``generator_models``.

    Parameters
    ----------
    cfg : BuildConfig
        Reads ``generator_entry`` (an inline model entry, used first), ``generator_models`` (models
        YAML) and ``generator_name`` (the model picked there; default: the file's first model).

    Returns
    -------
    ModelEntry or None
        The generator; None when neither ``generator_entry`` nor ``generator_models`` is given.

    Raises
    ------
    MedScopeError
        When ``generator_name`` is not a model of ``generator_models``.
    """
    if cfg.generator_entry:
        return ModelEntry.model_validate(cfg.generator_entry)
    if not cfg.generator_models:
        return None
    entries = cfgmod.load(ModelsConfig, cfg.generator_models).models
    pick = [e for e in entries if e.name == cfg.generator_name] if cfg.generator_name else entries[:1]
    if not pick:
        raise MedScopeError(f"no model {cfg.generator_name!r} in {cfg.generator_models}")
    return pick[0]


def check_privacy(cfg: BuildConfig, entry: ModelEntry | None) -> None:
    """Refuse before any call: a private cohort's report text goes only to allow-listed endpoints.

    Parameters
    ----------
    cfg : BuildConfig
        Reads ``private``, ``endpoint_allowlist`` and ``cohort``.
    entry : ModelEntry or None
        The model to receive report text; None: no call is made, nothing to check.

    Raises
    ------
    MedScopeError
        When ``entry`` may not receive the cohort's report text (private reports, endpoint not on
        the allow-list).
    """
    if entry is not None and not entry.may_receive(cfg.private, cfg.endpoint_allowlist):
        raise MedScopeError(
            f"refusing to build: generator {entry.name} at {entry.endpoint} is not on cohort {cfg.cohort}'s "
            "endpoint allow-list, and its reports are private (serve a model locally, e.g. vLLM or Ollama, "
            "and add its base URL to endpoint_allowlist)")


def generate(cfg: BuildConfig, entry: ModelEntry, studies: list[dict], conditions: list[str], schema_uri: str
             ) -> tuple[dict, dict]:
    """Run (or resume) the generation calls on the shared sweep; {(case, condition): reply}, summary.

    The studies are written as the sweep's items under ``cfg.out`` (``studies``); the sweep's
    episodes go to its ``generation/`` folder.

    Parameters
    ----------
    cfg : BuildConfig
        Reads ``out``, ``private``, ``endpoint_allowlist``, ``workers`` and ``concurrency``.
    entry : ModelEntry
        The generator model.
    studies : list of dict
        The paired studies (``case_id``, ``findings``, ``impression``, ...).
    conditions : list of str
        The generation calls to make per study: ``"questions"`` (report-derived questions) and/or
        ``"extract"`` (LLM extraction).
    schema_uri : str
        The approved schema YAML the generation protocol reads.

    Returns
    -------
    replies : dict
        ``{(case_id, condition): reply text}`` of the current studies' finished, error-free episodes
        of ``entry``.
    summary : dict
        The generation sweep's summary.
    """
    from pipelines.eval import EvalConfig, run_sweep

    studies_uri = layout.BenchgenBuild(cfg.out).studies
    write_studies(studies, studies_uri, cfg.private, cfg.endpoint_allowlist)
    gen_out = layout.BenchgenBuild(cfg.out).generation
    sweep = EvalConfig(views=studies_uri, models="(inline)", conditions=conditions, out=gen_out,
                       protocol=GENERATION_PROTOCOL, protocol_options={"schema": schema_uri},
                       workers=cfg.workers, concurrency=cfg.concurrency)
    summary = run_sweep(sweep, protocol=GenerationProtocol(schema_uri), entries=[entry])
    current = {study_item_id(s["case_id"], s["findings"], s["impression"]): s["case_id"] for s in studies}
    replies = {}
    eps = records.read_table("episodes", storage.join(gen_out, "episodes"),
                             columns=["item_id", "model", "condition", "raw_text", "error"]).to_pylist()
    for ep in eps:
        if ep["item_id"] in current and ep["model"] == entry.name and ep["raw_text"] and not ep["error"]:
            replies[(current[ep["item_id"]], ep["condition"])] = ep["raw_text"]
    return replies, summary


def verifier_of(cfg: BuildConfig, generator: ModelEntry | None) -> ModelEntry:
    """The verifier model: ``verifier_name`` in ``generator_models``, else the generator.

    Parameters
    ----------
    cfg : BuildConfig
        Reads ``verifier_name`` and ``generator_models`` (and, for the privacy check, ``private``,
        ``endpoint_allowlist`` and ``cohort``).
    generator : ModelEntry or None
        The question writer, the verifier when ``verifier_name`` is not set.

    Returns
    -------
    ModelEntry
        The verifier, checked to be allowed to receive the cohort's report text.

    Raises
    ------
    MedScopeError
        When ``verifier_name`` is set without ``generator_models`` or is not a model there, when there
        is no verifier at all, or when the verifier may not receive the reports (:func:`check_privacy`).
    """
    entry = generator
    if cfg.verifier_name:
        if not cfg.generator_models:
            raise MedScopeError("verifier_name needs generator_models (the file that holds the verifier)")
        entries = cfgmod.load(ModelsConfig, cfg.generator_models).models
        entry = next((e for e in entries if e.name == cfg.verifier_name), None)
        if entry is None:
            raise MedScopeError(f"no model {cfg.verifier_name!r} in {cfg.generator_models}")
    if entry is None:
        raise MedScopeError("verify: llm needs a verifier model (generator_models, and verifier_name or generator_name)")
    check_privacy(cfg, entry)
    return entry


def _study_task(row: dict, schema_uri: str, out: str, cohort: dict, seed: int, grid: int, max_side: int) -> dict:
    """One Ray Data task: a study's montages and questions, written as write-once parts."""
    task = json.loads(row["payload"])
    key, study = task["key"], task["study"]
    items_dir = layout.BenchgenBuild(out).items
    if records.has_part(items_dir, key):
        return {"case_id": study["case_id"], "status": "exists", "items": -1}
    schema = cfgmod.load(schemamod.Schema, schema_uri)
    montages, rejects = render_study(study, schema, grid, max_side, cohort=cohort["name"])
    fields = {k: tuple(v) for k, v in task["fields"].items()}
    pools = {k: Counter(v) for k, v in task["pools"].items()}
    rows, qrejects = study_questions(study, schema, fields, pools, task["generated"],
                                     {m["sequence"] for m in montages}, cohort, seed, task.get("verdicts"))
    records.write_part("montages", montages, layout.BenchgenBuild(out).montages, key)
    records.write_part("rejects", rejects + qrejects, layout.BenchgenBuild(out).rejects, key)
    records.write_part("mcq_items", rows, items_dir, key)  # last: it marks the study finished
    return {"case_id": study["case_id"], "status": "done", "items": len(rows)}


def build(cfg: BuildConfig) -> dict:
    """Build (or resume) a benchmark; returns the build summary (also written as build.json).

    Parameters
    ----------
    cfg : BuildConfig
        The build's settings (reports, volumes, approved schema, cohort, generator, extractor,
        verification, montage and sweep settings, ``out``).

    Returns
    -------
    dict
        The build summary: this cohort's counts (studies built and resumed, ``items`` and
        ``random_baseline`` per question type, options, rejects by reason), its generation record
        and hash, the generation and verification sweeps' summaries, ``accounting``, ``out`` and
        ``cohorts`` (every cohort in the build folder).

    Raises
    ------
    MedScopeError
        When the schema is not approved at both checkpoints, ``out`` holds other cohorts without
        ``append``, the generator is missing (``extractor: llm``) or not allowed to receive a private
        cohort's reports, or the verifier cannot be chosen (``verify: llm``).
    """
    from pipelines.support.raycluster import ensure_ray

    schema_uri = schemamod.resolve(cfg.schema_)
    check_append(cfg)
    approvals = schemamod.require_approved(schema_uri, REPORT_PROMPT)
    schema = cfgmod.load(schemamod.Schema, schema_uri)
    entry = generator_of(cfg)
    check_privacy(cfg, entry)
    reports, rejects = cohortmod.read_reports(cfg.reports)
    studies, pair_rejects = cohortmod.pair_studies(reports, cohortmod.index_volumes(cfg.volumes),
                                                   set(schema.sequences), cfg.cohort)
    rejects += pair_rejects
    conditions = (["questions"] if cfg.report_questions else []) + (["extract"] if cfg.extractor == "llm" else [])
    if cfg.extractor == "llm" and entry is None:
        raise MedScopeError("extractor llm needs a generator (generator_models / generator_name)")
    replies, gen_summary = {}, None
    if conditions and entry is not None and studies:
        replies, gen_summary = generate(cfg, entry, studies, conditions, schema_uri)
    verdicts, ver_summary = None, None
    if cfg.verify == "llm" and cfg.report_questions:
        from pipelines.benchgen_calls import verify

        verdicts, ver_summary = verify(cfg, verifier_of(cfg, entry), studies, replies)
    fields = {}
    for s in studies:
        if cfg.extractor == "llm":
            reply = replies.get((s["case_id"], "extract"))
            got, dropped = read_extraction(schema, reply or "", s["findings"], s["impression"])
            rejects += [records.reject_row("extraction", cfg.cohort, f"{s['case_id']}/{f}", "extract", why)
                        for f, why in dropped]
        else:
            got, unset = extract_with_rejects(schema, s["findings"], s["impression"])
            # a field the report never mentions is no question; one it mentions but does not settle
            # (no dominant lesion, a side-specific denial, conflicting statements) is a rejected question
            questions = {f.name: f.question for f in schema.fields}
            rejects += [records.reject_row("mcq_items", cfg.cohort, f"{s['case_id']}/rads/{f}", "extract",
                                           f"schema:{why}", questions[f])
                        for f, why in sorted(unset.items()) if why != "not_in_report"]
        fields[s["case_id"]] = got
    pools = value_pools(fields)
    cohort = {"name": cfg.cohort, "private": cfg.private, "endpoint_allowlist": cfg.endpoint_allowlist,
              "imaging_source": cfg.imaging_source, "matched_group": cfg.matched_group}
    hashes = {cp: approvals[cp]["sha256"] for cp in schemamod.CHECKPOINTS}
    tasks = []
    for s in studies:
        generated = replies.get((s["case_id"], "questions")) if entry is not None and cfg.report_questions else None
        if entry is not None and cfg.report_questions and generated is None:
            rejects.append(records.reject_row("mcq_items", cfg.cohort, s["case_id"], "generate", "generation_failed"))
        payload = {"study": s, "fields": fields[s["case_id"]], "pools": {k: dict(v) for k, v in pools.items()},
                   "generated": generated}
        if verdicts is not None:  # this study's verdicts only: a new verdict rebuilds just its study
            payload["verdicts"] = {k: v for k, v in verdicts.items() if k.startswith(f"{s['case_id']}#v")}
        payload["key"] = f"{cohort_prefix(cfg.cohort)}{s['case_id']}-" + stable_hash(json.dumps(payload, sort_keys=True), hashes, cohort,
                                                         cfg.seed, cfg.grid, cfg.max_side, length=12)
        tasks.append({"payload": json.dumps(payload)})
    keys = {json.loads(t["payload"])["key"] for t in tasks}
    prefix, driver = cohort_prefix(cfg.cohort), cohort_prefix(cfg.cohort) + "driver"
    for folder in ("items", "montages", "rejects"):  # this cohort's parts of an older build of other inputs go
        uri = getattr(layout.BenchgenBuild(cfg.out), folder)
        for stale in records.part_keys(uri) - keys - {driver}:
            if stale.startswith(prefix):  # never another cohort's
                storage.delete(records.part_uri(uri, stale))
    items_dir = layout.BenchgenBuild(cfg.out).items
    done = records.part_keys(items_dir)  # one listing; compacted parts count as done
    todo = [t for t in tasks if json.loads(t["payload"])["key"] not in done]
    results = [{"case_id": "", "status": "exists", "items": -1}] * (len(tasks) - len(todo))
    if todo:
        import ray

        ensure_ray()
        ds = ray.data.from_items(todo, override_num_blocks=len(todo))
        results += ds.map(_study_task, fn_kwargs={"schema_uri": schema_uri, "out": cfg.out, "cohort": cohort,
                                                 "seed": cfg.seed, "grid": cfg.grid, "max_side": cfg.max_side},
                         num_cpus=1).take_all()
    storage.delete(records.part_uri(layout.BenchgenBuild(cfg.out).rejects, driver))
    records.write_part("rejects", rejects, layout.BenchgenBuild(cfg.out).rejects, driver)
    write_review(cfg.out)
    summary = _summarise(cfg, schema_uri, approvals, entry, studies, results, gen_summary, ver_summary)
    return summary


REVIEW_COLUMNS = ("source", "item_id", "stage", "reason", "detail", "radiologist_agrees", "note")


def write_review(out: str) -> str:
    """``review_rejects.csv`` in a build folder: every rejected question (schema fields the report
    mentions but does not settle, generated questions the checks refused), one row each with its
    reason and the question / key, and two empty columns a radiologist fills in.

    Parameters
    ----------
    out : str
        The build folder (its ``rejects/`` already written).

    Returns
    -------
    str
        The CSV's URI.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("report-grounded check"); docs/benchgen.md, "Reviewing rejected questions".
    """
    import csv
    import io

    rej = records.read_table("rejects", layout.BenchgenBuild(out).rejects).to_pylist()
    rows = sorted((r for r in rej if r["table"] == "mcq_items" and r["stage"] in ("extract", "generate")),
                  key=lambda r: (r["source"], r["item_id"]))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(REVIEW_COLUMNS)
    for r in rows:
        w.writerow([r["source"], r["item_id"], r["stage"], r["reason"], r["detail"] or "", "", ""])
    uri = storage.join(out, "review_rejects.csv")
    storage.write_text(uri, buf.getvalue())
    return uri


def _summarise(cfg, schema_uri, approvals, entry, studies, results, gen_summary, ver_summary=None) -> dict:
    items = records.read_table("mcq_items", layout.BenchgenBuild(cfg.out).items,
                               columns=["cohort", "qtype", "k", "subcategory"]).to_pandas(use_threads=False)
    items = items[items["cohort"] == cfg.cohort]
    rej = records.read_table("rejects", layout.BenchgenBuild(cfg.out).rejects, columns=["source", "reason"])
    sources = {cfg.cohort, cfg.reports, cfg.volumes}  # a cohort's rejects name its inputs or the cohort
    rej_reasons = [r for s, r in zip(rej.column("source").to_pylist(), rej.column("reason").to_pylist())
                   if s in sources or (s or "").startswith((cfg.volumes, cfg.reports))]
    hashes = {cp: approvals[cp]["sha256"] for cp in schemamod.CHECKPOINTS}
    summary = {
        "cohort": cfg.cohort, "private": cfg.private, "schema": schema_uri, "approvals": approvals,
        "extractor": cfg.extractor, "seed": cfg.seed,
        "generator": None if entry is None else {"name": entry.name, "model": entry.model, "endpoint": entry.endpoint},
        "studies": len(studies), "studies_built": sum(r["status"] == "done" for r in results),
        "studies_resumed": sum(r["status"] == "exists" for r in results),
        "items": {q: int((items["qtype"] == q).sum()) for q in ("rads", "report")},
        "random_baseline": {q: float((1.0 / items.loc[items["qtype"] == q, "k"]).mean()) if (items["qtype"] == q).any()
                            else None for q in ("rads", "report")},
        "options": {str(k): int(n) for k, n in sorted(Counter(items["k"]).items())},
        "rejects": dict(sorted(Counter(rej_reasons).items())),
        "generation_record": generation_record(cfg, entry, hashes),
        "generation": None if gen_summary is None else {k: gen_summary[k] for k in (
            "units", "to_run", "skipped_finished", "refused_private", "done", "failed")},
        "verify": cfg.verify,
        "verification": None if ver_summary is None else {k: ver_summary[k] for k in (
            "units", "to_run", "skipped_finished", "refused_private", "done", "failed")},
        # the generation and verification calls' units (pipelines.support.accounting): failed ones
        # decide the exit code
        "accounting": combine([s["accounting"] for s in (gen_summary, ver_summary) if s is not None]),
        "out": cfg.out,
    }
    summary["generation_record_sha256"] = stable_hash(json.dumps(summary["generation_record"], sort_keys=True),
                                                      length=16)
    cohorts = {**build_cohorts(cfg.out), cfg.cohort: {k: v for k, v in summary.items() if k != "cohorts"}}
    summary["cohorts"] = dict(sorted(cohorts.items()))
    storage.write_text(layout.BenchgenBuild(cfg.out).manifest, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def show(uri: str) -> dict:
    """What a build holds: its manifest and its questions per type and subcategory.

    Parameters
    ----------
    uri : str
        A build folder.

    Returns
    -------
    dict
        The manifest (``build.json``) with ``subcategories`` (``{"<qtype>/<subcategory>": questions}``)
        and ``example`` (the first question's ``item_id``, ``question``, ``options``, ``answer``; None
        when the build has no question) added.
    """
    manifest = safe_text.read_json_object(layout.BenchgenBuild(uri).manifest)
    items = records.read_table("mcq_items", layout.BenchgenBuild(uri).items).to_pandas(use_threads=False)
    by_sub = items.groupby(["qtype", "subcategory"]).size()
    return {**manifest, "subcategories": {f"{q}/{s}": int(n) for (q, s), n in by_sub.items()},
            "example": None if items.empty else {k: items.iloc[0][k] if k != "options" else list(items.iloc[0][k])
                                                for k in ("item_id", "question", "options", "answer")}}


def build_demo_benchmark(out: str, n_cases: int = demo_inputs.DEMO_CASES,
                         n_cases_b: int = demo_inputs.DEMO_CASES_B) -> dict:
    """The benchmark-MCQ paper's embedded default: two phantom CT cohorts with liver lesions and reports written
    from their label maps (the second from another seed, sharing case ids, appended to the same
    build; both in one matched group, generated identically, so Table 3 compares them) -> the
    shipped liver schema, approved at both checkpoints (the demo stands in for the clinician) ->
    builds with the deterministic rule extractor and a loopback OpenAI-compatible server writing
    the report-derived questions and verifying each key the rules keep (``verify: llm``, the
    paper's second call). Returns the build summary with both cohorts' counts.

    Parameters
    ----------
    out : str
        Folder for the demo's inputs (cohorts, schema) and its build (``benchmark/``).
    n_cases : int, optional
        Phantom studies of the first cohort.
    n_cases_b : int, optional
        Phantom studies of the second cohort.

    Returns
    -------
    dict
        The last build's summary with ``generation_requests_served`` (requests the loopback server
        answered), ``build`` (the build folder), and ``items`` (per question type) and
        ``studies_built`` summed over both cohorts.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, Table 3.
    """
    from medscope.testing.benchgen_author import author_responder
    from medscope.testing.providers import FakeProvider

    out = storage.absolute(out)
    cohorts = demo_inputs.write_demo_cohorts(out, n_cases, n_cases_b)
    schema_uri = demo_inputs.write_approved_demo_schema(out)
    os.environ.setdefault(LOCAL_KEY_ENV, "local-server-no-key")  # a local OpenAI-compatible server takes any key
    author = FakeProvider("openai", responder=author_responder(schemamod.load_schema(schema_uri)))
    try:
        gen = {"name": "author-llm", "kind": "openai", "model": "local-author", "base_url": author.url,
               "api_key_env": LOCAL_KEY_ENV, "max_attempts": 2}
        for settings in demo_inputs.demo_build_settings(cohorts, schema_uri, storage.join(out, "benchmark"),
                                                        author.url, gen):
            cfg = BuildConfig.model_validate(settings)
            built = build(cfg)
        built["generation_requests_served"] = len(author.requests)
    finally:
        author.close()
    return {**built, "build": cfg.out, **demo_inputs.demo_totals(built["cohorts"])}


def register(sub) -> None:
    """Add the ``benchgen`` verb and its actions (build, schema, phantom, show).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``benchgen`` is added to them.
    """
    p = sub.add_parser("benchgen", help="build a private multiple-choice benchmark from reports + volumes (benchmark-MCQ paper)")
    verbs = p.add_subparsers(dest="benchgen_verb", metavar="ACTION")
    verbs.required = True

    add_action(verbs, "build", BuildConfig, _build, "reports + volumes + approved schema -> items, montages, rejects")

    add_action(verbs, "schema", SchemaActionConfig, _schema,
               "show a schema's checkpoint hashes, copy a shipped one, induce one, approve")
    add_action(verbs, "phantom", BenchgenPhantomConfig, _phantom,
               "write the phantom cohort: CT volumes with liver lesions + reports")
    add_action(verbs, "show", BuildShowConfig, lambda c: print(json.dumps(show(c.uri), indent=2, default=str)),
               "summarise a build folder")


class SchemaActionConfig(StrictModel):
    """``medscope benchgen schema show|init|induce|approve``."""

    action: Literal["show", "init", "induce", "approve"] = F(description="what to do with the schema",
                                                             json_schema_extra=cli(positional=True))
    schema_: str | None = F(None, alias="schema", json_schema_extra=cli(positional=True),
                            description="schema YAML, or a shipped name (liver | lung | brain) for show / init")
    out: str | None = F(None, description="init / induce: where to write the schema YAML")
    reports: str | None = F(None, description="induce: reports export (CSV / JSONL; one text field is split)")
    sample: int = F(200, ge=1, description="induce: reports in the stratified sample (by study)")
    organ: str = F("organ", description="induce: the organ the schema covers")
    sequence: list[str] = F([], description="induce: a sequence of the cohort (default ct:CT)",
                            json_schema_extra=cli(repeat=True, metavar="NAME:CT|MR|US"))
    min_support: int = F(2, ge=1, description="induce: reports a field's values each need")
    seed: int = F(42, description="induce: seed of the stratified sample")
    checkpoint: Literal[schemamod.CHECKPOINTS] | None = F(  # type: ignore[valid-type]
        None, description="approve: schema | templates")
    by: str = F("", description="approve: the reviewer's name")
    proposer: Literal["rules", "llm"] = F("rules", description="induce: rules (offline, term frequencies) or llm (a "
                                          "language model proposes fields from batches of the sample on the shared "
                                          "sweep; the sample keeps what it supports)")
    generator_models: str | None = F(None, description="induce --proposer llm: models YAML holding the proposer")
    generator_name: str | None = F(None, description="induce --proposer llm: the proposer's model name in "
                                   "generator_models (default: the first)", json_schema_extra=cli(aliases=("--generator",)))
    endpoint_allowlist: list[str] = F([], description="induce --proposer llm: an endpoint allowed to receive the "
                                      "report text", json_schema_extra=cli(repeat=True, aliases=("--allow-endpoint",),
                                                                           metavar="URL"))
    private: bool = F(True, description="induce --proposer llm: the reports are private (--no-private: they are not)")
    batch: int = F(25, ge=1, description="induce --proposer llm: reports per proposal call")


class BenchgenPhantomConfig(StrictModel):
    """``medscope benchgen phantom``."""

    out: str = F(description="output folder (volumes/, labels/ and reports.jsonl)")
    cases: int = F(6, ge=1, description="phantom studies to write")


class BuildShowConfig(StrictModel):
    """``medscope benchgen show``."""

    uri: str = F(description="a build folder", json_schema_extra=cli(positional=True))


def _phantom(a: BenchgenPhantomConfig) -> None:
    from medscope.benchgen.phantom import phantom_cohort

    print(json.dumps(phantom_cohort(a.out, n_cases=a.cases), indent=2))


def _build(cfg: BuildConfig) -> None:
    from pipelines.support.jobs import print_summary

    summary = build(cfg)
    print_summary(summary)
    if summary.get("accounting"):
        from pipelines.support.accounting import conclude

        conclude(summary, None, "benchgen build (generation calls)")


def _induce(a: SchemaActionConfig) -> None:
    import yaml

    from medscope.benchgen.induce import propose_rules, stratified_sample

    if not a.reports or not a.out:
        raise MedScopeError("benchgen schema induce --reports R --sample N --out Y")
    reports, rejects = cohortmod.read_reports(a.reports)
    sample = stratified_sample(reports, a.sample, a.seed)
    seqs = dict(s.split(":", 1) for s in (a.sequence or ["ct:CT"]))
    proposed, notes = propose_rules(sample, a.organ, seqs, a.min_support)
    summary = None
    if a.proposer == "llm":  # the paper's route: a language model proposes, the sample decides what stays
        proposed, notes, summary = _propose_llm(a, sample, proposed)
    if not proposed["fields"]:
        raise MedScopeError(f"no field found in {len(sample)} sampled reports (min support {a.min_support}); "
                            "sample more reports or lower --min-support")
    cfgmod.parse(schemamod.Schema, proposed, source="induced schema")  # what approve will load
    header = [f"# Proposed by `medscope benchgen schema induce` ({a.proposer} proposer); a clinician",
              "# reviews it, edits what is not visually answerable, then approves both checkpoints."]
    header += [f"# {n}" for n in notes] + [f"# reports read {len(reports)}, rejected {len(rejects)}"]
    storage.write_text(a.out, "\n".join(header) + "\n" + yaml.safe_dump(proposed, sort_keys=False))
    print(f"wrote {a.out}: {len(proposed['fields'])} field(s) from {len(sample)} sampled reports")
    for n in notes:
        print(f"  {n}")
    if summary is not None and summary.get("accounting"):
        from pipelines.support.accounting import conclude

        conclude(summary, None, "benchgen schema induce (proposal calls)")


def _propose_llm(a, sample: list[dict], rules_schema: dict) -> tuple[dict, list[str], dict]:
    """The proposer model's fields for ``sample``, grounded in it; the schema's frame (name,
    organ, sequences) is the rule proposer's. Its calls' sweep lives beside ``--out``."""
    from medscope.benchgen.proposer import ground_proposals
    from pipelines.benchgen_calls import propose

    cfg = BuildConfig.model_validate({"reports": a.reports, "volumes": "", "schema": "", "out": a.out,
                                      "private": a.private, "endpoint_allowlist": a.endpoint_allowlist,
                                      "generator_models": a.generator_models, "generator_name": a.generator_name})
    entry = generator_of(cfg)
    if entry is None:
        raise MedScopeError("--proposer llm needs --generator-models (and --generator NAME to pick one)")
    check_privacy(cfg, entry)
    proposals, problems, summary = propose(sample, a.organ, entry, a.out + ".proposals", cfg.private,
                                           cfg.endpoint_allowlist, batch=a.batch)
    fields, notes = ground_proposals(proposals, sample, a.min_support)
    notes += [f"proposal problem: {p}" for p in problems]
    schema = {**rules_schema, "name": rules_schema["name"], "fields": fields,
              "framework": f"induced from reports (language-model proposer {entry.name}, grounded in the sample)"}
    return schema, notes, summary


def _schema(a: SchemaActionConfig) -> None:
    if a.action == "induce":
        _induce(a)
        return
    if not a.schema_:
        raise MedScopeError(f"benchgen schema {a.action} needs a schema")
    if a.action == "init":
        if not a.out:
            raise MedScopeError("benchgen schema init NAME --out FILE")
        shutil.copyfile(schemamod.shipped_path(a.schema_), a.out)
        print(f"copied {a.schema_} schema to {a.out}; review it, then approve both checkpoints")
        return
    uri = schemamod.resolve(a.schema_)
    if a.action == "approve":
        if not a.checkpoint:
            raise MedScopeError("approve needs --checkpoint schema|templates and --by NAME")
        print(json.dumps(schemamod.approve(uri, a.checkpoint, a.by, REPORT_PROMPT), indent=2))
        return
    sch = cfgmod.load(schemamod.Schema, uri)
    print(f"schema {sch.name} ({sch.organ}; {sch.framework})")
    for f in sch.fields:
        print(f"  {f.name:<28} {f.type:<7} {f.subcategory:<22} {' | '.join(f.choices())}")
    hashes = schemamod.checkpoint_hashes(sch, REPORT_PROMPT)
    approved = schemamod.read_approval(uri)
    for cp in schemamod.CHECKPOINTS:
        got = (approved.get(cp) or {})
        state = "approved by " + got["by"] if got.get("sha256") == hashes[cp] else (
            "CHANGED since approval" if got else "not approved")
        print(f"  checkpoint {cp}: {hashes[cp][:16]}… {state}")


if __name__ == "__main__":
    sys.exit(job_main("benchgen build", BuildConfig, build))
