"""``medscope demo``: the whole pipeline on the phantom cohort, top to bottom.

Each stage of the product adds one step to STEPS; the demo runs them in order on one
output URI and ends by saying where the report is. It must stay under five minutes on a
2-core machine, so every step uses the small settings of ``configs/demo.yaml``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pydantic

from medscope.io import storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from pipelines.support.flags import add_config_flags, config_from_args

DEFAULT_OUT = "demo-out"


@dataclass
class DemoContext:
    out: str  # root URI of this demo run
    seed: int = 0
    cases: int = 192
    paths: dict[str, str] = field(default_factory=dict)  # table name -> URI, filled by steps
    summary: dict[str, object] = field(default_factory=dict)
    # extra report sections, (title, markdown) or (title, {"markdown", "html"}), added by steps
    # before the report step (e.g. the volumetric probe's table and plot)
    report_sections: list = field(default_factory=list)

    def uri(self, *parts: str) -> str:
        return storage.join(self.out, *parts)


Step = Callable[[DemoContext], None]


def require_complete(summary: dict, step: str) -> dict:
    """The demo fails loudly (exit 3) when a sweep of one of its steps has a failed or refused
    unit: a demo that reports numbers over fewer units than it ran is a broken demo.

    Parameters
    ----------
    summary : dict
        A sweep's summary (as :func:`pipelines.eval.run_sweep` returns it): its ``"accounting"`` (with
        ``"failed"`` and ``"refused"`` unit counts) and its ``"out"`` URI are read.
    step : str
        The demo step's name, for the error message.

    Returns
    -------
    dict
        ``summary`` itself, unchanged, when no unit failed or was refused.

    Raises
    ------
    UnitsIncomplete
        When any unit failed or was refused (exit status ``EXIT_UNITS_FAILED``, 3); the accounting is
        printed to stderr first.
    """
    from pipelines.support.accounting import EXIT_UNITS_FAILED, UnitsIncomplete, render

    acc = summary["accounting"]
    if acc["failed"] or acc["refused"]:
        print(render(acc), file=sys.stderr, flush=True)
        raise UnitsIncomplete(f"demo step {step!r}: {acc['failed']} unit(s) failed and {acc['refused']} were refused "
                              f"(see {summary['out']}/sweep.json); the demo stops here", EXIT_UNITS_FAILED)
    return summary


def step_cohort(ctx: DemoContext) -> None:
    """Generate the phantom cohort (2D cases and 3D volumes) and show its counts.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; generates ``ctx.cases`` cases from ``ctx.seed`` under ``cohort/``, adds the cohort
        tables' URIs (``"cases"``, ``"volumes"``, ...) to ``ctx.paths`` and ``"cohort"`` to ``ctx.summary``.
    """
    from medscope.cohorts import phantom
    from pipelines.cohort import show_summary

    result = phantom.generate(ctx.uri("cohort"), n_cases=ctx.cases, seed=ctx.seed)
    ctx.paths.update(result)
    ctx.summary["cohort"] = show_summary(ctx.paths["cases"])


def step_probe_build(ctx: DemoContext) -> None:
    """Build the organ-presence probe items (organ-presence paper) from the phantom volumes on Ray Data.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["volumes"]`` and ``ctx.seed``, adds ``"probe_items"``,
        ``"probe_slices"`` and ``"probe"`` to ``ctx.paths`` and ``"probe"`` to ``ctx.summary``.

    References
    ----------
    .. [1] organ-presence paper
    """

    from pipelines.probe import build, load_config
    from medscope.config import shipped

    cfg = load_config(shipped("probe", "demo.yaml"))
    summary = build(ctx.paths["volumes"], ctx.uri("probe"), cfg.model_copy(update={"seed": ctx.seed}))
    ctx.paths["probe_items"] = summary["probe_items"]
    ctx.paths["probe_slices"] = summary["slices"]
    ctx.paths["probe"] = ctx.uri("probe")
    ctx.summary["probe"] = {k: summary[k] for k in ("volumes", "volumes_used", "items_written", "rejects", "notes")}


FIT_PLACEHOLDER = "fitted-by-demo"  # configs/models/demo.yaml: options.weights the fit step fills


def step_fit_reader(ctx: DemoContext) -> None:
    """Fit the classical reader on the TRAIN split's views (medscope.models.classical_fit), fill
    its weights into a copy of configs/models/demo.yaml, and hand the evaluation only the test
    split's views (the main test set), so that no model is scored on a view the reader was fitted on.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["views"]``, writes the reader's weights and a models config under
        ``reader/``, sets ``"views_all"``, ``"views"``, ``"models_config"`` (and ``"reader_weights"`` when
        fitted) in ``ctx.paths``, ``"fit_reader"`` in ``ctx.summary``, and adds a report section.

    Raises
    ------
    MedScopeError
        When no view of the test split passed QC (nothing to evaluate). A reader that cannot be fitted
        does not raise: it runs unfitted.
    """

    import pyarrow.compute as pc
    import yaml

    from medscope import config as cfgmod
    from medscope.io import records
    from medscope.errors import MedScopeError
    from medscope.models.classical_fit import fit_reader, save_artifact
    from medscope.models.config import ModelsConfig
    from medscope.config import shipped

    views = ctx.paths["views"]
    weights = ctx.uri("reader", "classical_reader.json")
    try:
        art = fit_reader(views, split="train")
        save_artifact(art, weights)
    except MedScopeError as err:
        # a tiny cohort's train split may lack views with or without the finding: said loudly,
        # and the reader runs unfitted (its blob rule) rather than stopping the demo
        print(f"  reader: not fitted ({err}); the classical reader runs its unfitted blob rule", file=sys.stderr)
        art, weights = None, None
    cfg = cfgmod.load(ModelsConfig, shipped("models", "demo.yaml"))
    models = []
    for e in cfg.models:
        d = e.model_dump(exclude_defaults=True)
        if e.options.get("weights") == FIT_PLACEHOLDER:
            opts = {k: v for k, v in e.options.items() if k != "weights"}
            d["options"] = {**opts, "weights": weights} if weights else opts
        models.append(d)
    models_uri = ctx.uri("reader", "models.yaml")
    storage.write_text(models_uri, yaml.safe_dump({"models": models}, sort_keys=False))
    # the main test set reads the test split only (counterfactual paper Table 3; medscope.analysis.testsets):
    # the sweep is given the views build itself, so the scored run finds its recipe (and additions)
    table = records.read_table("views", views, columns=["split", "passed"])
    held_out = table.filter(pc.equal(table.column("split"), "test"))
    ctx.paths.update(views_all=views, views=views, models_config=models_uri)
    n_eval = sum(held_out.column("passed").to_pylist())
    if n_eval == 0:  # an empty sweep would only fail later, at scoring, with less to go on
        raise MedScopeError(
            f"no view of the test split passed QC ({held_out.num_rows} test views built): the demo has nothing "
            f"to evaluate. Give it more cases (--cases): QC keeps about half of the target removals, so a "
            f"cohort of a dozen cases can leave the test split without a passed view")
    if art is None:
        ctx.summary["fit_reader"] = {"weights": None, "eval_views_passed": n_eval}
        ctx.report_sections.append(("Classical reader and evaluation split", (
            f"The classical reader could not be fitted (the train split lacks views with or without the "
            f"finding) and ran its unfitted blob rule. Every model in this report is evaluated on the "
            f"{n_eval} passed views of the **test** split only (the main test set).")))
        return
    ctx.paths["reader_weights"] = weights
    fitted = art["fitted_on"]
    print(f"  reader: fitted on {fitted['images']} train views ({fitted['present']} with the finding), "
          f"train balanced accuracy {fitted['train_balanced_accuracy']:.2f}; evaluating on {n_eval} passed "
          f"test views", file=sys.stderr)
    ctx.summary["fit_reader"] = {"weights": weights, **fitted, "eval_views_passed": n_eval}
    ctx.report_sections.append(("Classical reader and evaluation split", (
        f"The classical reader (a per-pixel logistic regression over multi-scale difference-of-Gaussians and "
        f"determinant-of-Hessian blob responses, max-pooled; it reads only pixels and is not a medical model) was fitted on {fitted['images']} views of the "
        f"**train** split ({fitted['present']} with the finding, {fitted['pixels']} sampled pixels; "
        f"train balanced accuracy {fitted['train_balanced_accuracy']:.2f}). Every model in this report is "
        f"evaluated on the {n_eval} passed views of the **test** split only (the main test set).")))

def split_volumes(case_ids: list[str]) -> tuple[list[str], list[str]]:
    """(train, held-out) volume ids for the probe's pixel reader: the sorted first half trains it
    (addition: the phantom's volumes carry no split), the rest is what the probe evaluates.

    Parameters
    ----------
    case_ids : list of str
        The volumes' case ids, in any order.

    Returns
    -------
    train : list of str
        The sorted first half (at least one id).
    held_out : list of str
        The rest, sorted.
    """
    ids = sorted(case_ids)
    half = max(1, len(ids) // 2)
    return ids[:half], ids[half:]


def step_probe_evaluate(ctx: DemoContext) -> None:
    """Fit the pixel organ reader (medscope.models.organ_reader) on every slice of the TRAIN
    volumes, then run it beside the two constant policies on the probe items of the held-out
    volumes through the same sweep, and score them with the organ-presence protocol (organ-presence paper);
    its specificity table and plot join the report.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["volumes"]`` and ``ctx.paths["probe_items"]``, writes under
        ``probe/``, sets ``"probe_metrics"`` and ``"probe_scored"`` in ``ctx.paths``, ``"probe_eval"`` in
        ``ctx.summary``, and adds a report section.

    Raises
    ------
    UnitsIncomplete
        When a unit of the evaluation sweep failed or was refused.

    References
    ----------
    .. [1] organ-presence paper
    """
    import json

    import pyarrow as pa
    import pyarrow.compute as pc

    from medscope.io import records
    from medscope.config import shipped
    from medscope.models.organ_reader import fit_organ_reader, save_reader, slices_of_volumes
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.probe import load_config
    from pipelines.score import score

    probe_cfg = load_config(shipped("probe", "demo.yaml"))
    volumes = records.read_table("volumes", ctx.paths["volumes"]).to_pylist()
    train, held_out = split_volumes([v["case_id"] for v in volumes])
    reader = fit_organ_reader(slices_of_volumes([v for v in volumes if v["case_id"] in train], probe_cfg))
    weights = ctx.uri("probe", "organ_reader.json")
    save_reader(reader, weights)
    baccs = [r["train_balanced_accuracy"] for r in reader["organs"].values()]
    print(f"  organ reader: fitted on {reader['slices']} slices of {len(train)} train volume(s), {len(baccs)} organs, "
          f"train balanced accuracy {min(baccs):.2f}-{max(baccs):.2f}", file=sys.stderr)
    items = records.read_table("probe_items", ctx.paths["probe_items"])
    items = items.filter(pc.is_in(items.column("case_id"), value_set=pa.array(held_out, pa.string())))
    items_uri = ctx.uri("probe", "eval_items.parquet")
    records.write_table("probe_items", items, items_uri)
    models = ctx.uri("probe", "models.yaml")
    storage.write_text(models, json.dumps({"models": [
        {"name": "always-present", "kind": "policy", "model": "always_present"},
        {"name": "always-absent", "kind": "policy", "model": "always_absent"},
        {"name": "organ-reader", "kind": "organ_reader", "model": "thumbnail_centroid", "options": {"weights": weights}},
    ]}, indent=1))
    out = ctx.uri("probe", "eval")
    require_complete(run_sweep(EvalConfig(
        items=items_uri, out=out, models=models, protocol="organ_presence",
        protocol_options={"probe_config": shipped("probe", "demo.yaml")},
        conditions=["verdict_json", "reasoning_json", "verdict_json+no_image", "verdict_json+blank"],
        workers=1, concurrency=4,
    )), "organ-presence probe evaluation")
    summary = score(out, ctx.uri("probe", "scored"), items_uri=items_uri)  # the probe config: the eval run's
    ctx.report_sections.append(("Organ reader (probe baseline)", (
        f"The organ reader (a per-organ nearest-centroid rule on {reader['grid']}x{reader['grid']} grey thumbnails; "
        f"it reads only pixels and is not a medical model) was fitted on all {reader['slices']} slices of the "
        f"**train** volumes ({', '.join(train)}); the probe evaluates the {items.num_rows} items of the held-out "
        f"volumes ({', '.join(held_out)}) only.")))
    ctx.paths.update(probe_metrics=summary["metrics"], probe_scored=ctx.uri("probe", "scored"))
    ctx.summary["probe_eval"] = {"episodes": summary["episodes"], "specificity": summary["specificity"]}


def step_evaluate(ctx: DemoContext) -> None:
    """Evaluate configs/models/demo.yaml (trivial policies + classical reader) on the views
    with the counterfactual agent protocol, agent and blind conditions; writes episodes, then
    compacts the run's write-once parts (``medscope compact``) before anything reads them.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["views"]`` and ``ctx.paths["models_config"]``, sets
        ``"episodes"`` and ``"eval"`` in ``ctx.paths`` and ``"evaluate"`` in ``ctx.summary``.

    Raises
    ------
    UnitsIncomplete
        When a unit of the sweep failed or was refused.
    """
    from medscope.io import parts
    from pipelines.eval import EvalConfig, run_sweep, show

    models = ctx.paths["models_config"]  # demo.yaml with the fitted reader's weights
    out = ctx.uri("eval")
    summary = require_complete(run_sweep(EvalConfig(items=ctx.paths["views"], models=models, out=out,
                                                    conditions=["agent", "blind"], workers=1, concurrency=4)),
                               "evaluate models")
    ctx.paths["episodes"] = summary["episodes"]
    ctx.paths["eval"] = out
    compacted = parts.compact(out)
    print("  compacted: " + ", ".join(f"{c['folder'].rstrip('/').rsplit('/', 1)[-1]} {c['parts_compacted']} parts -> "
                                      f"{c['compacted_files']} file(s), {c['rows']} rows" for c in compacted), file=sys.stderr)
    ctx.summary["evaluate"] = {"episodes": summary["done"] + summary["skipped_finished"],
                               "by_model_condition": show(out),
                               "compacted": {c["folder"].rstrip("/").rsplit("/", 1)[-1]:
                                             {k: c[k] for k in ("parts_compacted", "files_written", "rows")} for c in compacted}}


AUDIT_SAMPLE = 24  # replies of each eval run the demo's scripted labeller checks the reading on


def step_answers_audit(ctx: DemoContext) -> None:
    """Check the reply reading on the demo's own replies (``medscope answers audit`` / ``agreement``):
    a stratified sample of each eval run's replies (the models' evaluation and, when it ran, the
    probe's), labelled by the scripted labeller, which labels by what each demo model meant to
    decide and never looks at the reader's reading (:mod:`medscope.testing.scripted_labeller`),
    then the reader's agreement with it; the report's "How replies were read" shows the line.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["eval"]`` (and ``ctx.paths["probe"]``'s ``eval/`` when the
        probe was evaluated), writes ``answers_audit/`` inside each eval run, sets
        ``"answers_audit"`` in ``ctx.paths`` and ``"answers_audit"`` in ``ctx.summary``.
    """
    import json

    from medscope.answers.audit import LABELS_FORMAT, read_sample
    from medscope.io import layout
    from medscope.testing.scripted_labeller import scripted_labels
    from pipelines.answers import AnswersAgreementConfig, AnswersAuditConfig, agreement, audit

    runs = [ctx.paths["eval"]] + ([ctx.uri("probe", "eval")] if "probe_scored" in ctx.paths else [])
    ctx.summary["answers_audit"] = {}
    for run in runs:
        drawn = audit(AnswersAuditConfig(episodes=run, sample=AUDIT_SAMPLE, seed=ctx.seed), overwrite=True)
        folder = layout.AnswersAudit(drawn["out"])
        labels = {"format": LABELS_FORMAT, "sample_file": folder.sample, "sample_hash": drawn["sample_hash"],
                  "labeller": "scripted: the demo models' intended decisions (medscope.testing.scripted_labeller)",
                  "labels": scripted_labels(read_sample(folder.sample))}
        storage.write_text(folder.labels, json.dumps(labels, indent=1) + "\n")
        result = agreement(AnswersAgreementConfig(labels=folder.labels, episodes=run))
        print(f"  {drawn['protocol']}: {result['line']}", file=sys.stderr)
        ctx.paths.setdefault("answers_audit", folder.root)
        ctx.summary["answers_audit"][drawn["protocol"]] = {"out": folder.root, **{
            k: result["overall"][k] for k in ("n", "agree", "kappa", "flips", "unclear", "unsure")}}


EXPORT_LICENCE = "cc0-1.0"  # the phantom cohort is generated by MedScope: no one's data, no one's rights


def _upload_folder(local: str, uri: str) -> int:
    """Copy every file under a local folder to ``uri`` (same relative paths); the number of files."""
    import os

    n = 0
    for root, _, files in os.walk(local):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                storage.write_bytes(storage.join(uri, os.path.relpath(path, local).replace(os.sep, "/")), fh.read())
            n += 1
    return n


def step_export(ctx: DemoContext) -> None:
    """Export the demo's views both ways (``medscope export hf`` and ``export lmms-eval``) and read each back:
    the Hugging Face dataset with ``datasets.load_from_disk`` (the same view ids as the views that passed
    QC), the lmms-eval task's hooks (the first doc's messages are MedScope's plain condition).

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["views"]``, writes ``export/hf_views`` and (when the output is a
        local folder; lmms-eval loads its dataset from a local path) ``export/lmms_task``, sets
        ``"export_hf"`` / ``"export_lmms"`` in ``ctx.paths`` and ``"export"`` in ``ctx.summary``, and adds
        a report section.

    Raises
    ------
    MedScopeError
        When a dataset read back does not hold the views that were exported.
    """
    import importlib.util
    import os
    import tempfile

    import datasets

    from medscope.interop.hf_export import export_hf
    from medscope.interop.lmms_task import export_lmms_eval
    from medscope.io import records
    from medscope.protocols.counterfactual import prompts

    views = records.read_table("views", ctx.paths["views"], columns=["view_id", "passed"]).to_pylist()
    passed = sorted(r["view_id"] for r in views if r["passed"])
    local_out = storage.local_path(ctx.out)
    with tempfile.TemporaryDirectory(prefix="medscope-export-") as scratch:
        hf_dir = os.path.join(local_out, "export", "hf_views") if local_out else os.path.join(scratch, "hf_views")
        hf = export_hf(ctx.paths["views"], hf_dir, EXPORT_LICENCE)
        loaded = datasets.load_from_disk(hf_dir)
        back = sorted(v for split in loaded.values() for v in split["view_id"])
        if back != passed:
            raise MedScopeError(f"demo export: the dataset read back from {hf_dir} holds {len(back)} views, "
                                f"the views table {len(passed)} passed")
        hf_uri = ctx.uri("export", "hf_views")
        if not local_out:
            _upload_folder(hf_dir, hf_uri)
    splits = ", ".join(f"{name} {n}" for name, n in hf["splits"].items())
    print(f"  Hugging Face dataset: {hf['items']} views ({splits}) at {hf_uri}, read back with load_from_disk",
          file=sys.stderr)
    ctx.paths["export_hf"] = hf_uri
    ctx.summary["export"] = {"hf": {"views": hf["items"], "splits": hf["splits"], "out": hf_uri}}
    lines = [f"- **Hugging Face dataset** `{hf_uri}`: {hf['items']} views that passed QC ({splits}), with its card "
             f"(`README.md`: recipe, QC pass rates, near-copy tiers, additions; licence `{EXPORT_LICENCE}`, the "
             "phantom being generated). `datasets.load_from_disk` reads it; `push_to_hub` publishes it."]
    if local_out:
        task_dir = os.path.join(local_out, "export", "lmms_task")
        task = export_lmms_eval(ctx.paths["views"], task_dir)
        spec = importlib.util.spec_from_file_location("medscope_demo_lmms_task", os.path.join(task_dir, "utils.py"))
        hooks = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hooks)
        first = datasets.load_from_disk(os.path.join(task_dir, "dataset"))["test"][0]
        system = hooks.doc_to_messages(first)[0]["content"][0]["text"]
        if system != prompts.system_prompt("plain"):
            raise MedScopeError(f"demo export: the lmms-eval task {task_dir} does not send the plain condition's prompt")
        command = (f"lmms-eval --model openai --model_args model_version=MODEL,base_url=URL,api_key=KEY "
                   f"--tasks {task['task']} --include_path {task_dir} --log_samples --output_path lmms-logs")
        print(f"  lmms-eval task {task['task']!r}: {task['items']} views (test set {task['test_set']}) at {task_dir}; "
              f"run: {command}", file=sys.stderr)
        ctx.paths["export_lmms"] = task_dir
        ctx.summary["export"]["lmms_eval"] = {"task": task["task"], "views": task["items"], "test_set": task["test_set"],
                                              "out": task_dir}
        lines.append(f"- **lmms-eval task** `{task['task']}` at `{task_dir}`: the {task['items']} views of test set "
                     f"`{task['test_set']}` in MedScope's plain condition; its hooks call MedScope's reader and scoring, "
                     f"so lmms-eval prints ESG, CCR, the claim rates and net utility as `medscope score` computes them. "
                     f"Run: `{command}`; bring its logs back with `medscope eval import --from lmms-eval lmms-logs "
                     f"--items {ctx.paths['views']} --out E`, then `score` and `report` as usual.")
    else:
        print("  lmms-eval task: not written (the demo writes to object storage; lmms-eval loads a task's "
              "dataset from a local folder: run `medscope export lmms-eval --items VIEWS --out LOCAL_DIR`)",
              file=sys.stderr)
        lines.append("- **lmms-eval task**: not written here (lmms-eval loads a task's dataset from a local folder; "
                     "`medscope export lmms-eval --items VIEWS --out LOCAL_DIR` writes one).")
    ctx.report_sections.append(("Benchmarks that travel", "\n".join(
        ["The demo's views, exported for the harnesses people already use (docs/interop.md):", ""] + lines)))


def step_train_smoke(ctx: DemoContext) -> None:
    """LoRA stage 1 (SFT on label-derived trajectories) of the tiny random Qwen2-VL on the demo's
    training views, a few steps on Ray Train (configs/train/smoke.yaml). It shows the training
    path end to end; a real run uses configs/train/stage1_sft.yaml on GPUs (README, Training).

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["views_all"]`` (the whole views table), sets ``"adapter"`` in
        ``ctx.paths`` and ``"train"`` in ``ctx.summary``, and adds a report section.
    """

    from medscope.config import shipped
    from pipelines.train import TrainJob, run

    # the whole views table: training draws its train split (ctx.paths["views"] holds only the
    # held-out splits once the reader has been fitted)
    summary = run(TrainJob(recipe=shipped("train", "smoke.yaml"),
                           views=ctx.paths["views_all"], out=ctx.uri("train", "smoke")))
    ctx.paths["adapter"] = summary["adapter"]
    ctx.summary["train"] = {k: summary[k] for k in ("recipe", "method", "steps", "first_loss", "last_loss", "examples")}
    ctx.report_sections.append((
        "Training (smoke run)",
        f"Stage-1 SFT of the tiny random-initialised Qwen2-VL with LoRA (recipe `{summary['recipe']}`) on "
        f"{summary['examples']} label-derived trajectories of the training views, {summary['steps']} steps on "
        f"Ray Train: loss {summary['first_loss']:.3f} → {summary['last_loss']:.3f}. Adapter: `{summary['adapter']}`. "
        "This exercises the training path end to end; it is not a trained model.",
    ))


def step_benchgen(ctx: DemoContext) -> None:
    """The benchmark-MCQ paper: a contamination-controlled multiple-choice benchmark from phantom reports and
    volumes (rule extractor; a loopback OpenAI-compatible server writes the report-derived
    questions and verifies their keys), evaluated sighted and blind through the same sweep and scored by its protocol.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; writes under ``benchgen/``, sets ``"benchgen"`` and ``"benchgen_scored"`` in
        ``ctx.paths`` and ``"benchgen"`` in ``ctx.summary``.

    Raises
    ------
    UnitsIncomplete
        When a unit of the generation calls or of the evaluation sweep failed or was refused.

    References
    ----------
    .. [1] benchmark-MCQ paper
    """
    from medscope.config import shipped
    from pipelines.benchgen import MCQ_PROTOCOL, build_demo_benchmark
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.score import score

    built = build_demo_benchmark(ctx.uri("benchgen"))
    if built.get("accounting"):  # the generation calls of the build are a sweep too
        require_complete(built, "benchmark generation (benchmark-MCQ paper)")
    items = built["items"]
    print(f"  benchmark: {items['rads']} schema-driven + {items['report']} report-derived questions from "
          f"{built['studies_built']} studies in {len(built['cohorts'])} cohorts ({', '.join(built['cohorts'])})",
          file=sys.stderr)
    checked = [c for c in built["cohorts"].values() if c.get("verification")]
    if checked:  # the paper's second call on every key the rules kept
        refused = sum(n for c in checked for r, n in c["rejects"].items() if r.startswith("verification:"))
        print(f"  verification call: {sum(c['verification']['done'] for c in checked)} keys checked by the "
              f"verifier model, {refused} rejected", file=sys.stderr)
    out = ctx.uri("benchgen", "eval")
    require_complete(run_sweep(EvalConfig(items=built["build"], models=shipped("models", "benchgen_baselines.yaml"),
                                          out=out, protocol=MCQ_PROTOCOL, conditions=["sighted", "blind"], workers=1,
                                          concurrency=4)), "benchmark evaluation (benchmark-MCQ paper)")
    scored = ctx.uri("benchgen", "scored")
    summary = score(out, scored, items_uri=built["build"])
    ctx.paths.update(benchgen=built["build"], benchgen_scored=scored)
    ctx.summary["benchgen"] = {"questions": items, "episodes": summary["episodes"]}


def step_pairs(ctx: DemoContext) -> None:
    """The paired-modality paper: the embedded paired-modality set (phantom radiographs, drawn photo-like patches
    with and without a sign), photo only vs paired through the same sweep, extract-then-judge
    scoring with a loopback judge (Anthropic wire) and a second rule judge for agreement.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; writes under ``pairs/``, sets ``"pairs"`` and ``"pairs_scored"`` in ``ctx.paths``
        and ``"pairs"`` in ``ctx.summary``.

    Raises
    ------
    UnitsIncomplete
        When a unit of the sweep failed or was refused, or when the judge left replies unjudged.

    References
    ----------
    .. [1] paired-modality paper
    """
    import json

    from medscope.pairs.embedded import write_embedded_set
    from medscope.protocols.paired_modality.judge import rule_judge_responder
    from medscope.protocols.paired_modality.manifest import read_manifest, vocabulary
    from medscope.testing.providers import FakeProvider
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.pairs import DEMO_MODELS, PROTOCOL_SPEC, demo_judge_entry
    from pipelines.score import score

    built = write_embedded_set(ctx.uri("pairs", "set"))
    models = ctx.uri("pairs", "models.yaml")
    storage.write_text(models, json.dumps({"models": DEMO_MODELS}, indent=1))
    out = ctx.uri("pairs", "eval")
    require_complete(run_sweep(EvalConfig(items=built["manifest"], models=models, out=out, protocol=PROTOCOL_SPEC,
                                          conditions=["photo_only", "paired"], workers=1, concurrency=4)),
                     "paired-modality evaluation (paired-modality paper)")
    photos, _ = read_manifest(built["manifest"])
    judge = FakeProvider("anthropic", responder=rule_judge_responder(vocabulary(photos)))
    try:
        scored = ctx.uri("pairs", "scored")
        summary = score(out, scored, items_uri=built["manifest"], judge=demo_judge_entry(judge.url),
                        second_judge="rule-named-only")
    finally:
        judge.close()
    if summary.get("unjudged"):  # a reply the judge could not label is a failed unit of the judging
        from pipelines.support.accounting import EXIT_UNITS_FAILED, UnitsIncomplete

        raise UnitsIncomplete(f"demo step 'paired-modality scoring (paired-modality paper)': {summary['unjudged']} replies "
                              f"unjudged (see {scored}); the demo stops here", EXIT_UNITS_FAILED)
    ctx.paths.update(pairs=built["manifest"], pairs_scored=scored)
    ctx.summary["pairs"] = {"labelled": summary["labelled"], "kappa_fp": summary["kappa_fp"]}


def step_reproduce(ctx: DemoContext) -> None:
    """``medscope reproduce --check``: the four papers' derivable table cells beside the printed
    values (docs/reproduce.md); the page is written beside the report, which links it.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; writes under ``reproduce/``, sets ``"reproduce"`` (the HTML page) in ``ctx.paths``
        and ``"reproduce"`` in ``ctx.summary``, and adds the report section that links it.
    """
    import io

    from pipelines.reproduce import ReproduceConfig, report_section, reproduce

    printed = io.StringIO()
    summary = reproduce(ReproduceConfig(check=True, quiet=True, out=ctx.uri("reproduce")), stream=printed)
    print("  " + printed.getvalue().strip().splitlines()[-1], file=sys.stderr)
    ctx.paths["reproduce"] = summary["html"]
    ctx.summary["reproduce"] = {k: summary[k] for k in ("entries", "cells", "matched", "mismatched")}
    ctx.report_sections.append(report_section(summary, "../reproduce/"))


def step_score(ctx: DemoContext) -> None:
    """Score the evaluate step's episodes: rewards, metrics with case-bootstrap intervals.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["episodes"]`` and ``ctx.paths["views"]``, sets ``"scores"``,
        ``"metrics"`` and ``"scoring_run"`` in ``ctx.paths`` and ``"score"`` in ``ctx.summary``. The
        intervals use 1000 bootstrap resamples.
    """
    from pipelines.score import score

    run = ctx.uri("scoring")
    summary = score(ctx.paths["episodes"], run, items_uri=ctx.paths["views"], n_boot=1000)
    ctx.paths.update(scores=summary["scores"], metrics=summary["metrics"], scoring_run=run)
    ctx.summary["score"] = {k: summary[k] for k in ("episodes", "rejects", "models")}


def step_report(ctx: DemoContext) -> None:
    """The run report (Markdown + self-contained HTML); the demo ends here.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reports the runs ``ctx.paths["scoring_run"]`` and, where present,
        ``"probe_scored"``, ``"benchgen_scored"`` and ``"pairs_scored"``, with ``ctx.report_sections``;
        sets ``"report"`` (the HTML) in ``ctx.paths`` and ``"report"`` in ``ctx.summary``.
    """
    from medscope.report.build import build_report

    runs = [ctx.paths["scoring_run"]] + [ctx.paths[k] for k in ("probe_scored", "benchgen_scored", "pairs_scored")
                                         if k in ctx.paths]
    written = build_report(runs, ctx.uri("report"), extra_sections=ctx.report_sections, title="MedScope demo report")
    ctx.paths["report"] = written["html"]
    ctx.summary["report"] = written


def step_reader_pack(ctx: DemoContext) -> None:
    """A blinded reader-study pack of the test split's views (counterfactual paper §7): the static page a
    physician opens from a USB stick, and the answer key kept beside it.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["views_out"]`` and ``ctx.seed``, writes under ``reader-study/``,
        sets ``"reader_pack"`` and ``"reader_page"`` in ``ctx.paths``, ``"reader_pack"`` in
        ``ctx.summary``, and adds a report section.

    References
    ----------
    .. [1] counterfactual paper, §7
    """
    from medscope.io import layout
    from medscope.reader.pack import write_pack

    pack = layout.ReaderPack(ctx.uri("reader-study"))
    key = write_pack(ctx.paths["views_out"], pack.root, name="demo", seed=ctx.seed)
    ctx.paths.update(reader_pack=pack.root, reader_page=pack.page)
    ctx.summary["reader_pack"] = {"images": len(key["items"]), "per_kind": key["per_kind"], "pack_hash": key["pack_hash"]}
    print(f"  reader pack: {len(key['items'])} images ({key['per_kind']} per kind; asked {key['per_kind_requested']}: "
          f"the demo's test split is small), page {pack.page}", file=sys.stderr)
    ctx.report_sections.append(("Reader-study pack", (
        f"A blinded reading pack of {len(key['items'])} test-split images ({key['per_kind']} per kind: unmodified "
        f"with the finding, erased, control-edited with the same tool, lesion-free) is at `{pack.reading}` (open "
        f"`{layout.ReaderPack.PAGE}` in a browser); its answer key `{pack.key}` stays with the study team. "
        f"`medscope reader analyse --pack {pack.root} --answers FILES --out DIR` scores the readers' answer files "
        "(counterfactual paper §7).")))


def step_views(ctx: DemoContext) -> None:
    """Counterfactual views of the cohort with the offline tools (Telea, transplant) and QC.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; reads ``ctx.paths["cases"]``, writes under ``views/``, sets ``"views"``,
        ``"view_rejects"`` and ``"views_out"`` in ``ctx.paths`` and ``"views"`` in ``ctx.summary``.
    """

    from medscope.views.recipe import load_recipe
    from pipelines.views import build_views
    from medscope.config import shipped

    recipe = load_recipe(shipped("views", "demo.yaml"))
    out = ctx.uri("views")
    summary = build_views(ctx.paths["cases"], out, recipe, quiet=True)
    ctx.paths.update(views=summary["views_uri"], view_rejects=summary["rejects_uri"], views_out=out)
    kinds = ", ".join(f"{k} {d['passed']}/{d['views']}" for k, d in summary["by_kind"].items())
    print(f"  views: {summary['views']} built, {summary['passed']} passed QC ({kinds})", file=sys.stderr)
    ctx.summary["views"] = {k: summary[k] for k in ("views", "passed", "by_kind", "reject_reasons",
                                                     "edit_detector_heldout_auc", "adversarial_auc_before",
                                                     "adversarial_auc_after")}


STEPS: list[tuple[str, Step]] = [
    ("phantom cohort", step_cohort),
    ("counterfactual views", step_views),
    ("reader-study pack", step_reader_pack),
    ("organ-presence probe items", step_probe_build),
    ("organ-presence probe evaluation", step_probe_evaluate),
    ("fit the classical reader (train split)", step_fit_reader),
    ("evaluate models", step_evaluate),
    ("reading check on the demo's replies (answers audit, scripted labeller)", step_answers_audit),
    ("export the views: a Hugging Face dataset and an lmms-eval task", step_export),
    ("training smoke run", step_train_smoke),
    ("report-derived multiple-choice benchmark (benchmark-MCQ paper)", step_benchgen),
    ("paired-modality evaluation (paired-modality paper)", step_pairs),
    ("paper tables beside ours (reproduce --check)", step_reproduce),
    ("score", step_score),
    ("report", step_report),
]
# `--steps` names (the step function without its prefix) and what each needs run before it
STEP_NAMES = [fn.__name__.removeprefix("step_") for _, fn in STEPS]
NEEDS = {"views": ["cohort"], "reader_pack": ["views"], "probe_build": ["cohort"],
         "probe_evaluate": ["probe_build"], "fit_reader": ["views"], "evaluate": ["fit_reader"],
         "answers_audit": ["evaluate"], "export": ["views"],
         "train_smoke": ["views"], "score": ["evaluate"], "report": ["score"]}


def chosen_steps(names: list[str] | None) -> list[tuple[str, Step]]:
    """The steps to run, in pipeline order: all, or the named ones with what they need.

    Parameters
    ----------
    names : list of str or None
        Step names (the step function without ``step_``, as in ``STEP_NAMES``); None or empty for all.

    Returns
    -------
    list of (str, callable)
        ``(title, step)`` pairs from ``STEPS``, in pipeline order: the named steps and, transitively,
        what ``NEEDS`` says they need.

    Raises
    ------
    MedScopeError
        When a name is not a demo step.
    """
    if not names:
        return list(STEPS)
    unknown = sorted(set(names) - set(STEP_NAMES))
    if unknown:
        raise MedScopeError(f"unknown demo step(s) {unknown}; steps: {', '.join(STEP_NAMES)}")
    want: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in want:
            want.add(name)
            todo.extend(NEEDS.get(name, []))
    return [(title, fn) for (title, fn), name in zip(STEPS, STEP_NAMES) if name in want]


class DemoConfig(StrictModel):
    """``medscope demo`` flags, or ``python -m pipelines.demo --config configs/demo.yaml`` (what
    ``ray job submit`` runs)."""

    out: str = pydantic.Field(DEFAULT_OUT, description="output URI (a folder, or s3://bucket/prefix)")
    seed: int = pydantic.Field(0, description="run seed: every random choice derives from it")
    cases: int = pydantic.Field(192, ge=8, description=(
        "phantom 2D cases (half train the classical reader); the whole demo needs 32 or more (fewer leave too "
        "few test cases for the reader pack; a run of some steps may use fewer)"))
    steps: list[str] | None = pydantic.Field(
        None, description="only these steps and what they need, e.g. evaluate,report (default: all; "
                          "names: cohort, views, reader_pack, probe_build, probe_evaluate, fit_reader, evaluate, "
                          "answers_audit, export, train_smoke, benchgen, pairs, reproduce, score, report)")


def register(sub) -> None:
    """Add the ``demo`` verb to the ``medscope`` command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommand table of the ``medscope`` parser; the ``demo`` parser gets the
        :class:`DemoConfig` flags and runs :func:`run_config`.
    """
    p = sub.add_parser("demo", help="run the whole pipeline on the generated phantom cohort")
    add_config_flags(p, DemoConfig)
    p.set_defaults(func=lambda a: run_config(config_from_args(a, source="medscope demo")))


def run_config(cfg: DemoConfig) -> dict:
    """Run the demo a :class:`DemoConfig` describes (what ``medscope demo`` and the Ray job call).

    Parameters
    ----------
    cfg : DemoConfig
        The output URI, seed, phantom case count and (optionally) the steps to run.

    Returns
    -------
    dict
        ``"out"`` (the absolute output root), ``"paths"`` (table name to URI) and ``"summary"`` (each
        step's summary), from the run's :class:`DemoContext`.
    """
    ctx = run(DemoContext(out=cfg.out, seed=cfg.seed, cases=cfg.cases), cfg.steps)
    return {"out": ctx.out, "paths": ctx.paths, "summary": ctx.summary}


def run(ctx: DemoContext, steps: list[str] | None = None) -> DemoContext:
    """Run the chosen steps in pipeline order on one output root, timing each on stderr.

    Parameters
    ----------
    ctx : DemoContext
        The demo run; ``ctx.out`` is made absolute (steps hand URIs to Ray workers with other working
        directories).
    steps : list of str, optional
        Step names to run with what they need (see :func:`chosen_steps`); None for all.

    Returns
    -------
    DemoContext
        ``ctx`` itself, its ``paths`` and ``summary`` filled by the steps.
    """
    ctx.out = storage.absolute(ctx.out)  # steps hand URIs to Ray workers with other working dirs
    start = time.monotonic()
    plan = chosen_steps(steps)
    for i, (name, step) in enumerate(plan, 1):
        t0 = time.monotonic()
        print(f"[{i}/{len(plan)}] {name} ...", file=sys.stderr, flush=True)
        step(ctx)
        print(f"[{i}/{len(plan)}] {name} done in {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)
    print(f"demo finished in {time.monotonic() - start:.0f}s; outputs under {ctx.out}")
    if "report" in ctx.paths:
        print(f"report: {ctx.paths['report']}")
    return ctx


if __name__ == "__main__":
    from pipelines.support.jobs import job_main

    sys.exit(job_main("demo", DemoConfig, run_config))
