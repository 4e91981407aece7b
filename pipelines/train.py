"""``medscope train`` / ``python -m pipelines.train --config F``: one training stage on Ray Train.

A TorchTrainer with one worker per GPU (or CPU workers; the code is the same). Checkpoints
(adapter + optimiser + step) go under ``<out>/ray/<name>`` through Ray Train's storage (any
URI: a path, file:// or s3://), the final adapter to ``<out>/adapter``. A killed worker is
restarted by Ray (``max_failures``) and resumes from the latest checkpoint; rerunning the same
command after the whole job died resumes the same way.
"""

from __future__ import annotations

import json
import os
import tempfile

import pydantic

from medscope import config as cfgmod
from medscope.io import layout, records, safe_text, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.training.evaluation import EvalSettings
from medscope.training.data import training_views
from pipelines.support.flags import add_config_flags, cli, config_from_args
from medscope.training.recipes import TrainRecipe
from medscope.models import checkpoints

VIEW_COLUMNS_FOR_CHECK = ("passed", "split", "kind")


class TrainJob(StrictModel):
    recipe: str = pydantic.Field(description="training recipe YAML (configs/train/<recipe>.yaml)")
    views: str = pydantic.Field(description="views table, or the views build folder holding it")
    out: str = pydantic.Field(description="run folder URI: checkpoints, adapter, summary")
    name: str | None = pydantic.Field(None, description="Ray Train run name (default: the recipe's)")
    num_workers: int = pydantic.Field(1, ge=1, description="Ray Train workers (one per GPU)")
    use_gpu: bool | None = pydantic.Field(None, description="default: use GPUs when the cluster has them")
    max_failures: int = pydantic.Field(2, ge=0, description="worker failures survived (resume from the last checkpoint)")
    overrides: dict = pydantic.Field({}, description="recipe fields to override (YAML mapping; the sweep sets seed, allowed_kinds ...)")
    evaluation: EvalSettings | None = pydantic.Field(None, description="score the final adapter on these views (YAML mapping)")
    # shorthands: folded into overrides / evaluation (over the values given there)
    seed: int | None = pydantic.Field(None, description="override the recipe's seed (overrides.seed)")
    init_adapter: str | None = pydantic.Field(
        None, description="continue from this adapter (stages 2, 3, DPO, C4; overrides.init_adapter)")
    eval_views: str | None = pydantic.Field(
        None, description="score the final adapter on this views table's validation split (evaluation.views)")

    @pydantic.model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data):
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("seed"), str) and data["seed"].strip().lstrip("-").isdigit():
            data["seed"] = int(data["seed"])  # a flag's text; anything else is left for the field to refuse
        over = {k: data[k] for k in ("seed", "init_adapter") if data.get(k) is not None}
        if over:
            data["overrides"] = {**(data.get("overrides") or {}), **over}
        if data.get("eval_views") is not None:
            data["evaluation"] = {"views": data["eval_views"]}
        return data

    @pydantic.field_validator("recipe", "views", "out")
    @classmethod
    def _absolute(cls, uri: str | None) -> str | None:
        # the Ray Train / Tune workers run in their own trial folder
        return storage.absolute(cfgmod.resolve(uri)) if uri else uri  # configs/... may be the shipped copy


def resolve_recipe(job: TrainJob) -> TrainRecipe:
    """The job's recipe YAML with the job's ``overrides`` merged on, parsed and checked.

    Parameters
    ----------
    job : TrainJob
        The training job: its ``recipe`` URI and its ``overrides`` are read.

    Returns
    -------
    TrainRecipe
        The merged recipe (see :func:`merge`).
    """
    base = cfgmod.load_yaml(job.recipe)
    return cfgmod.parse(TrainRecipe, merge(base, job.overrides), source=job.recipe)


def merge(base: dict, over: dict) -> dict:
    """``over`` laid on ``base``: mappings merged key by key (a job can name where stage 3's
    question sets live and keep the recipe's shares), anything else replaced.

    Parameters
    ----------
    base : dict
        The mapping laid on (not modified).
    over : dict
        The overriding mapping; a nested dict merges into a dict at the same key, any other value replaces.

    Returns
    -------
    dict
        A new mapping: ``base`` with ``over`` laid on, recursively.
    """
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def use_driver_storage(cfg: dict) -> None:
    """In a Ray Train / Tune worker: reach storage where the driver does. A worker may have
    started before the driver set its endpoint (by ``storage.configure`` or the environment), so
    the driver hands it over in the config; never credentials.

    Parameters
    ----------
    cfg : dict
        The worker config (see :func:`worker_config`); its ``"s3_endpoint"``, when set, configures storage.
    """
    if cfg.get("s3_endpoint"):
        storage.configure(s3_endpoint=cfg["s3_endpoint"])


def train_loop_per_worker(cfg: dict) -> None:
    """Runs in every Ray Train worker.

    Parameters
    ----------
    cfg : dict
        The worker config from :func:`worker_config`: ``"recipe"`` (a dumped :class:`TrainRecipe`),
        ``"views"`` and ``"out"`` URIs, ``"s3_endpoint"``, ``"evaluation"`` (dumped :class:`EvalSettings`
        or None) and ``"replay_excluded"`` (item ids or None). The worker resumes from Ray Train's latest
        checkpoint when there is one; rank 0 writes the adapter, the optional scores and the run records
        under ``cfg["out"]``.
    """
    import ray.train
    import torch
    from ray.train import Checkpoint

    from medscope.training.runner import make_worker_trainer
    from medscope.training.vlm import save_adapter

    recipe = TrainRecipe.model_validate(cfg["recipe"])
    use_driver_storage(cfg)
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    device = ray.train.torch.get_device() if torch.cuda.is_available() else torch.device("cpu")
    views = records.read_table("views", cfg["views"])
    excluded = set(cfg["replay_excluded"]) if cfg.get("replay_excluded") is not None else None
    trainer, info = make_worker_trainer(recipe, views, rank, world, device, replay_excluded=excluded)
    if recipe.deepspeed is None and world > 1:
        trainer.model = ray.train.torch.prepare_model(trainer.model)

    resumed_from = 0
    ckpt = ray.train.get_checkpoint()
    if ckpt:
        with ckpt.as_directory() as d:
            trainer.load_state(torch.load(os.path.join(d, "state.pt"), map_location=device, weights_only=False))
        resumed_from = trainer.step

    def on_step(tr, metrics):
        last = tr.step >= tr.total_steps
        # the step log says which attempt ran each step: 0, or the checkpoint step it resumed from
        tr.history[-1]["resumed_from"] = resumed_from
        metrics = {**metrics, "resumed_from": resumed_from, "total_steps": tr.total_steps}
        if tr.step % recipe.checkpoint_every and not last:
            ray.train.report(metrics)
            return
        with tempfile.TemporaryDirectory() as tmp:
            if rank == 0:
                torch.save(tr.state(), os.path.join(tmp, "state.pt"))
            ray.train.report(metrics, checkpoint=Checkpoint.from_directory(tmp) if rank == 0 else None)
        if rank == 0:  # a small progress file, for people (and the resume test) to watch
            storage.write_bytes(layout.TrainRun(cfg["out"]).progress,
                                json.dumps({"step": tr.step, "pid": os.getpid(), "resumed_from": resumed_from}).encode())

    trainer.fit(on_step)
    if rank == 0:
        save_adapter(trainer.peft, layout.TrainRun(cfg["out"]).adapter)
        summary = run_summary(recipe, trainer, info, resumed_from, world)
        if cfg.get("evaluation"):
            from medscope.training.evaluation import evaluate_all

            ev = EvalSettings.model_validate(cfg["evaluation"])
            metrics, per_set, rows = evaluate_all(trainer.vlm, trainer.peft, recipe.trajectory.prompt, ev, recipe.name,
                                                  lambda uri: records.read_table("views", uri).to_pylist())
            records.write_table("scores", rows, layout.TrainRun(cfg["out"]).scores)
            summary["eval"] = metrics
            if per_set:
                summary["eval_test_sets"] = per_set
        write_run_records(cfg["out"], summary, trainer.history)


def run_summary(recipe: TrainRecipe, trainer, info: dict, resumed_from: int = 0, world: int = 1) -> dict:
    """``train_summary.json``: what the run trained on (data counts, kinds), its steps and its
    schedule, as the recipe states them (counterfactual paper §3.5, §4.2).

    Parameters
    ----------
    recipe : TrainRecipe
        The recipe the run trained with.
    trainer : object
        The worker trainer after fitting: its ``step``, ``total_steps`` and ``history`` (per-step dicts
        with ``"loss"``) are read.
    info : dict
        The data counts and kinds from ``make_worker_trainer``, merged into the summary.
    resumed_from : int, optional
        The checkpoint step this attempt resumed from (0 for a fresh start).
    world : int, optional
        The number of Ray Train workers.

    Returns
    -------
    dict
        Recipe name, method, seed, steps and total steps, allowed kinds, workers, batch size, gradient
        accumulation, epochs, learning rate, warm-up fraction, ``n_views``, ``resumed_from``, first and
        last loss (None with no history), and every key of ``info``.

    References
    ----------
    .. [1] counterfactual paper, §3.5, §4.2
    """
    return {"recipe": recipe.name, "method": recipe.method, "seed": recipe.seed, "steps": trainer.step,
            "total_steps": trainer.total_steps, "allowed_kinds": recipe.allowed_kinds, "workers": world,
            "batch_size": recipe.batch_size, "grad_accum": recipe.grad_accum, "epochs": recipe.epochs,
            "lr": recipe.lr, "warmup_frac": recipe.warmup_frac, "n_views": recipe.n_views,
            "resumed_from": resumed_from, "first_loss": trainer.history[0]["loss"] if trainer.history else None,
            "last_loss": trainer.history[-1]["loss"] if trainer.history else None, **info}


def write_run_records(out: str, summary: dict, history: list[dict]) -> None:
    """The run summary and the per-step log (loss, lr, examples): what shows a recipe's steps and
    schedule, and that arms are step- and schedule-matched.

    Parameters
    ----------
    out : str
        The run folder URI (a :class:`medscope.io.layout.TrainRun`).
    summary : dict
        The run summary, written as indented JSON to the run's summary file.
    history : list of dict
        The per-step log, written one JSON object a line to the run's log file.
    """
    storage.write_bytes(layout.TrainRun(out).summary, json.dumps(summary, indent=2).encode())
    storage.write_bytes(layout.TrainRun(out).log, "".join(json.dumps(h) + "\n" for h in history).encode())


def ray_storage(uri: str):
    """(storage_path, storage_filesystem) for Ray Train: local paths as they are, anything else
    (s3://, memory-less remote) through a pyarrow wrapper of our fsspec filesystem, so the
    endpoint and credentials are the ones ``medscope.io.storage`` uses.

    Parameters
    ----------
    uri : str
        Where Ray Train keeps its checkpoints: a path, file:// or s3:// URI.

    Returns
    -------
    storage_path : str
        The path within the filesystem.
    storage_filesystem : pyarrow.fs.PyFileSystem or None
        None for local paths, else a pyarrow wrapper of the fsspec filesystem.

    Raises
    ------
    MedScopeError
        For a memory:// URI (Ray Train workers need shared storage).
    """
    if storage.protocol(uri) == "file":
        return storage.filesystem(uri)[1], None
    if storage.protocol(uri) == "memory":
        raise MedScopeError("Ray Train checkpoints need shared storage: use a path or s3:// for --out")
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    fs, path = storage.filesystem(uri)
    return path, PyFileSystem(FSSpecHandler(fs))


def replay_exclusions(job: TrainJob, recipe: TrainRecipe) -> list[str] | None:
    """Stage 3 on the driver, once: the replay questions whose image is a near-copy of an
    evaluation image (counterfactual paper §3.5, §4.1), written with the image each copies to the run's
    ``rejects.parquet``; the workers get their ids and hash nothing. None for other methods.

    Parameters
    ----------
    job : TrainJob
        The training job: the rejects are written to its run folder (``job.out``).
    recipe : TrainRecipe
        The resolved recipe (the job's YAML with its overrides laid on).

    Returns
    -------
    list of str or None
        The sorted ``item_id`` of every rejected replay question, or None when the recipe is not a
        replay recipe, has no question sets or a VQA share of 0.

    References
    ----------
    .. [1] counterfactual paper, §3.5, §4.1
    """
    if recipe.method != "replay" or not recipe.replay.question_sets or recipe.replay.vqa_share == 0:
        return None
    from medscope.training.runner import replay_pools

    _, rejects = replay_pools(recipe)
    records.write_table("rejects", rejects, layout.TrainRun(job.out).rejects)
    return sorted(r["item_id"] for r in rejects)


def worker_config(job: TrainJob, recipe: TrainRecipe, replay_excluded: list[str] | None = None) -> dict:
    """What every Train worker gets: the recipe, the URIs, and the driver's S3 endpoint as
    ``medscope.io.storage`` resolves it (configured or from the environment).

    Parameters
    ----------
    job : TrainJob
        The training job: its ``views``, ``out`` and ``evaluation`` are passed on.
    recipe : TrainRecipe
        The resolved recipe (the job's YAML with its overrides laid on).
    replay_excluded : list of str, optional
        Replay question ids the workers leave out (see :func:`replay_exclusions`).

    Returns
    -------
    dict
        ``"recipe"`` (the dumped recipe), ``"views"``, ``"out"``, ``"s3_endpoint"`` (or None),
        ``"evaluation"`` (dumped, or None) and ``"replay_excluded"``.
    """
    return {"recipe": recipe.model_dump(), "views": job.views, "out": job.out, "s3_endpoint": storage.s3_endpoint(),
            "evaluation": job.evaluation.model_dump() if job.evaluation else None,
            "replay_excluded": replay_excluded}


def build_trainer(job: TrainJob, recipe: TrainRecipe | None = None, replay_excluded: list[str] | None = None):
    """The TorchTrainer for ``job`` (not yet fitted).

    Parameters
    ----------
    job : TrainJob
        The training job: workers, GPU use (default: whether the cluster has GPUs), run name (default:
        the recipe's), failures survived; checkpoints go under its run folder, two kept.
    recipe : TrainRecipe, optional
        The resolved recipe; resolved from ``job`` when None.
    replay_excluded : list of str, optional
        Replay question ids the workers leave out.

    Returns
    -------
    ray.train.torch.TorchTrainer
        Running :func:`train_loop_per_worker` with :func:`worker_config`'s config.
    """
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    from pipelines.support.raycluster import cluster_gpus

    recipe = recipe or resolve_recipe(job)
    use_gpu = cluster_gpus() > 0 if job.use_gpu is None else job.use_gpu
    path, fs = ray_storage(layout.TrainRun(job.out).ray)
    return TorchTrainer(
        train_loop_per_worker,
        train_loop_config=worker_config(job, recipe, replay_excluded),
        scaling_config=ScalingConfig(num_workers=job.num_workers, use_gpu=use_gpu),
        run_config=RunConfig(
            name=job.name or recipe.name,
            storage_path=path,
            storage_filesystem=fs,
            failure_config=FailureConfig(max_failures=job.max_failures),
            checkpoint_config=CheckpointConfig(num_to_keep=2),
        ),
    )


def check_deepspeed(recipe: TrainRecipe, use_gpu: bool) -> None:
    """A DeepSpeed ZeRO recipe runs on CUDA GPUs only: say so in one line before any worker
    starts, rather than fail inside every worker restart.

    Parameters
    ----------
    recipe : TrainRecipe
        The resolved recipe; its ``deepspeed`` block (None when absent) is read.
    use_gpu : bool
        Whether the run will use GPUs.

    Raises
    ------
    MedScopeError
        When the recipe uses DeepSpeed ZeRO and the run has no GPUs.
    """
    if recipe.deepspeed is not None and not use_gpu:
        raise MedScopeError(f"recipe {recipe.name} uses DeepSpeed ZeRO-{recipe.deepspeed.stage}, which needs CUDA GPUs, "
                            "and this Ray cluster has none (or use_gpu is false): run it on a GPU node, or use the "
                            "same recipe without its `deepspeed:` block (configs/train/stage1_sft.yaml)")


def run(job: TrainJob) -> dict:
    """Run one training stage on Ray Train and return its summary (what ``medscope train`` calls).

    Parameters
    ----------
    job : TrainJob
        The training job. The recipe's base checkpoint, the views table and its usable views for the
        recipe's allowed kinds, and DeepSpeed's need for GPUs are checked on the driver first.

    Returns
    -------
    dict
        The run's ``train_summary.json`` (see :func:`run_summary`, with ``"eval"`` and
        ``"eval_test_sets"`` when the job has an evaluation) and ``"adapter"``, the final adapter's URI.

    Raises
    ------
    MedScopeError
        When there is no views table at ``job.views``, the DeepSpeed check fails, or Ray Train reports an
        error.
    """
    from pipelines.support.raycluster import ensure_ray

    recipe = resolve_recipe(job)
    checkpoints.require_base(recipe.base, f"recipe {job.recipe}")  # before Ray and any worker
    ensure_ray()
    if not storage.exists(job.views):
        raise MedScopeError(f"no views table at {job.views}")
    # Checked on the driver so that unusable input fails once, in one line, instead of in
    # every worker restart that Ray Train's failure policy would attempt.
    training_views(records.read_table("views", job.views, columns=list(VIEW_COLUMNS_FOR_CHECK)),
                   recipe.allowed_kinds)
    from pipelines.support.raycluster import cluster_gpus

    check_deepspeed(recipe, cluster_gpus() > 0 if job.use_gpu is None else job.use_gpu)
    result = build_trainer(job, recipe, replay_exclusions(job, recipe)).fit()
    if result.error:
        raise MedScopeError(f"training failed: {result.error}")
    return safe_text.read_json_object(layout.TrainRun(job.out).summary) | {"adapter": layout.TrainRun(job.out).adapter}


def select_stages(runs: dict[str, str], out: str, previous: str | None = None) -> dict:
    """Apply the §3.6 rule to the validation metrics each stage's run recorded (``evaluation``
    in its job), and write ``selection.json`` with the choice and the numbers behind it.

    Parameters
    ----------
    runs : dict of str to str
        Stage name to run folder URI, in stage order; each run's summary must hold ``"eval"``
        (``net_utility`` and ``healthy_claims``).
    out : str
        URI of the ``selection.json`` to write.
    previous : str, optional
        The previous release's run folder (amendment 1), or None.

    Returns
    -------
    dict
        What was written: ``"chosen"`` (the stage name), ``"adapter"`` (its adapter URI), ``"reasons"``,
        ``"numbers"`` and ``"runs"``.

    Raises
    ------
    MedScopeError
        When a run has no validation metrics.

    References
    ----------
    .. [1] counterfactual paper, §3.6
    """
    from medscope.training.selection import select_stage

    def uh(run: str) -> dict:
        summary = safe_text.read_json_object(layout.TrainRun(run).summary)
        if "eval" not in summary:
            raise MedScopeError(f"{run} has no validation metrics: train it with an `evaluation:` block")
        counts = summary["eval"].get("counts") or {}  # the rule is decided on these, exactly
        numbers = {"U": summary["eval"]["net_utility"], "H": summary["eval"]["healthy_claims"]}
        for key, metric in (("U", "net_utility"), ("H", "healthy_claims")):
            if counts.get(metric):
                numbers[f"{key}_counts"] = counts[metric]
        return numbers

    sel = select_stage({name: uh(run) for name, run in runs.items()}, previous=uh(previous) if previous else None)
    record = {"chosen": sel.chosen, "adapter": layout.TrainRun(runs.get(sel.chosen, previous or "")).adapter,
              "reasons": sel.reasons, "numbers": sel.numbers, "runs": runs}
    storage.write_bytes(out, json.dumps(record, indent=2).encode())
    return record


class TrainSelectConfig(StrictModel):
    """``medscope train-select``: the training stage picked by the pre-registered §3.6 rule."""

    run: list[str] = pydantic.Field(min_length=1, description="a stage's run folder, in stage order "
                                    "(e.g. stage1=s3://.../stage1)", json_schema_extra=cli(repeat=True, metavar="STAGE=URI"))
    previous: str | None = pydantic.Field(None, description="run folder of the previous release (amendment 1)")
    out: str = pydantic.Field(description="where to write selection.json")


def register(sub) -> None:
    """Add the ``train`` and ``train-select`` verbs to the ``medscope`` command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommand table of the ``medscope`` parser; ``train`` gets the :class:`TrainJob` flags
        (``--workers`` for ``num_workers``) and runs :func:`run`, ``train-select`` gets the
        :class:`TrainSelectConfig` flags and runs :func:`select_stages`, each printing the summary.
    """
    def pick(c: TrainSelectConfig):
        from pipelines.support.jobs import print_summary

        runs = dict(r.split("=", 1) for r in c.run)
        print_summary(select_stages(runs, c.out, c.previous))

    s = sub.add_parser("train-select", help="pick the training stage by the pre-registered §3.6 rule",
                       description=TrainSelectConfig.__doc__)
    add_config_flags(s, TrainSelectConfig)
    s.set_defaults(func=lambda a: pick(config_from_args(a, source="medscope train-select")))

    p = sub.add_parser("train", help="train one LoRA stage (recipe YAML) on Ray Train")
    add_config_flags(p, TrainJob, aliases={"num_workers": ["workers"]})

    def go(args):
        from pipelines.support.jobs import print_summary

        print_summary(run(config_from_args(args, source="medscope train")))

    p.set_defaults(func=go)


if __name__ == "__main__":
    import sys

    from pipelines.support.jobs import job_main

    sys.exit(job_main("train", TrainJob, run))
