"""``medscope sweep`` / ``python -m pipelines.sweep --config F``: seeds × ablation arms on Ray Tune.

Each Tune trial builds and fits one TorchTrainer (``pipelines.train``) for an (arm, seed), then
evaluates the adapter on the evaluation views and scores it. Seeds change LoRA initialisation,
data order and trajectory sampling only: the draw of views (``draw_seed``) is shared by every
seed of an arm, and each arm draws only from its allowed view kinds (counterfactual paper §4.2). The result
is a table of arms × seeds: per-seed metrics, mean ± sd per arm, and per-seed paired
differences against the reference arm (the first in the file).

Each (arm, seed) run is its own model, ``<arm>@seed<k>`` (``medscope.analysis.training_seeds``), in the
scores, which carry ``arm`` and ``seed`` columns. ``seed_pairs.parquet`` holds each seed pair's
case-bootstrap difference against the reference arm at the same seed (§3.9), ``pooled.parquet``
every arm pooled over its seeds against the reference pooled (§3.7 C4's "pooled interval"); with
``plan:`` in the arms file the plan's rules (C1-C4, ``configs/plans/checks_c1_c4.yaml``) are
applied to both and written to ``checks.json`` / ``checks.txt``.
"""

from __future__ import annotations

import json
import numpy as np
import pyarrow as pa

import pydantic

from medscope import config as cfgmod
from medscope.io import layout, records, safe_text, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.io.records import VIEW_KINDS
from pipelines.support.flags import add_config_flags, config_from_args

METRICS = ("net_utility", "esg", "ccr", "erased_claims", "healthy_claims")


class Arm(StrictModel):
    name: str
    allowed_kinds: list[str]
    match_absent_share_of: str | None = None  # name of the arm whose "absent" share to match
    overrides: dict = {}  # further recipe fields for this arm

    def model_post_init(self, _ctx) -> None:
        bad = sorted(set(self.allowed_kinds) - set(VIEW_KINDS))
        if bad:
            raise ValueError(f"arm {self.name}: unknown view kind(s) {bad}")


class ArmsFile(StrictModel):
    recipe: str  # the stage recipe every arm shares (same steps, same schedule)
    seeds: list[int] = [0, 1, 2]
    arms: list[Arm]
    eval_split: str = "validation"
    # test set -> views table (counterfactual paper Tables 3-4): every trial is also scored on these, so the
    # plan's C1-C4, worded on held-out tools / fresh external / the main test, apply in checks.txt
    eval_test_sets: dict[str, str] = {}
    eval_cases: int | None = None  # evaluate on the views of the first n evaluation cases (by case id)
    eval_max_turns: int = 4
    n_boot: int = 2000  # case-bootstrap resamples for each seed pair's paired difference (§3.9)
    eval_max_new_tokens: int = 128
    plan: str | None = None  # pre-registered rules applied to the sweep's comparisons (configs/plans/*.yaml)

    def model_post_init(self, _ctx) -> None:
        from medscope.analysis.testsets import splits_of

        for name in self.eval_test_sets:
            try:
                splits_of(name)  # a named test set reads its own splits; training pools are refused
            except MedScopeError as err:
                raise ValueError(f"eval_test_sets: {err}") from None


class SweepJob(StrictModel):
    arms: str = pydantic.Field(description="ablation arms YAML (configs/arms/<file>.yaml)")
    views: str = pydantic.Field(description="training views (and evaluation views unless eval_views is given)")
    out: str = pydantic.Field(description="output folder URI (one run per arm and seed, arms table)")
    eval_views: str | None = pydantic.Field(None, description="evaluation views (default: views, validation split)")
    max_concurrent: int = pydantic.Field(2, ge=1, description="trials at once")

    @pydantic.field_validator("arms", "views", "out", "eval_views")
    @classmethod
    def _absolute(cls, uri: str | None) -> str | None:
        # the Ray Train / Tune workers run in their own trial folder
        return storage.absolute(cfgmod.resolve(uri)) if uri else uri  # configs/... may be the shipped copy


def load_arms(uri: str) -> ArmsFile:
    """Load and check an ablation arms file; its plan, when it names one, must load too.

    Parameters
    ----------
    uri : str
        The arms YAML (``configs/arms/<file>.yaml``, path or URI).

    Returns
    -------
    ArmsFile
        The validated arms file.

    Raises
    ------
    MedScopeError
        When two arms share a name, an arm matches the absent share of an arm that is not in the
        file, or the file does not validate.
    """
    arms = cfgmod.load(ArmsFile, uri)
    names = [a.name for a in arms.arms]
    if len(set(names)) != len(names):
        raise MedScopeError(f"{uri}: arm names must be unique")
    for a in arms.arms:
        if a.match_absent_share_of and a.match_absent_share_of not in names:
            raise MedScopeError(f"{uri}: arm {a.name} matches the absent share of unknown arm {a.match_absent_share_of}")
    if arms.plan:  # a plan that does not load fails here, before any trial trains
        from medscope.analysis.decision_rules import load_plan

        load_plan(cfgmod.resolve(arms.plan))
    return arms


def arm_overrides(arm: Arm, arms: ArmsFile, views: pa.Table, recipe) -> dict:
    """Recipe fields for this arm (counterfactual paper §4.2: "all at stage 1 with the same number of
    optimiser steps and the same learning-rate schedule"; "each arm draws from its own allowed
    view kinds"). Every arm draws ``n_views`` from its own kinds and trains for the reference
    arm's (the first arm's) one-pass step count, so steps, schedule and draw size match; an
    "absent"-share matched arm gets the share of its reference arm's draw (computed from the
    same views table, so the match is exact) at that same draw size.

    Parameters
    ----------
    arm : Arm
        The arm.
    arms : ArmsFile
        The arms file; its first arm is the reference arm.
    views : pyarrow.Table
        The training views table the draws are made from.
    recipe : TrainRecipe
        The stage recipe every arm shares (reads ``n_views``, ``draw_seed``, ``method``).

    Returns
    -------
    dict
        The arm's recipe fields: ``allowed_kinds`` and the arm's ``overrides``, plus
        ``match_absent_share`` (the absent fraction of the matched arm's draw) for an absent-share
        matched arm, and ``steps`` (the reference arm's one-pass step count) for an SFT recipe whose
        arm does not set ``steps``.

    References
    ----------
    .. [1] counterfactual paper, §4.2.
    """
    from medscope.training import data

    over = {"allowed_kinds": arm.allowed_kinds, **arm.overrides}
    if arm.match_absent_share_of:
        ref = next(a for a in arms.arms if a.name == arm.match_absent_share_of)
        drawn = data.fixed_draw(data.training_views(views, ref.allowed_kinds), recipe.n_views, recipe.draw_seed)
        over["match_absent_share"] = data.absent_fraction(drawn)
    if recipe.method == "sft" and "steps" not in arm.overrides:
        first = arms.arms[0]
        ref_recipe = recipe.model_copy(update={"allowed_kinds": first.allowed_kinds, **first.overrides})
        n_ref = len(data.sft_draw(data.training_views(views, first.allowed_kinds), ref_recipe))
        over["steps"] = data.one_pass_steps(n_ref, ref_recipe)
    return over


def _trial(config: dict) -> None:
    """One Tune trial: train (arm, seed) on Ray Train, evaluate, score, report."""
    from ray import tune

    from medscope.analysis.training_seeds import seed_model_id
    from medscope.training.evaluation import EvalSettings
    from medscope.training.recipes import TrainRecipe
    from pipelines.train import TrainJob, build_trainer, use_driver_storage

    use_driver_storage(config)
    arm, seed = config["arm"], config["seed"]
    out = layout.ArmsSweep(config["out"]).run(arm, seed).root
    over = json.loads(config["overrides"])[arm]
    # each seed run is its own model in the scores (<arm>@seed<k>): seeds are never merged by name
    recipe = TrainRecipe.model_validate({**json.loads(config["recipe"]), **over, "seed": seed, "name": seed_model_id(arm, seed)})
    ev = EvalSettings(views=config["eval_uri"], split=config["eval_split"], cases=config["eval_cases"],
                      max_new_tokens=config["eval_max_new_tokens"], max_turns=config["eval_max_turns"],
                      test_sets=json.loads(config.get("eval_test_sets") or "{}"))
    # the Train worker evaluates its own adapter: no second model load in the trial process
    job = TrainJob(recipe=config["recipe_uri"], views=config["views"], out=out, name=recipe.name, evaluation=ev)
    result = build_trainer(job, recipe).fit()
    if result.error:
        raise RuntimeError(f"{arm} seed {seed}: training failed: {result.error}")
    summary = safe_text.read_json_object(layout.TrainRun(out).summary)
    tune.report({**summary["eval"], "arm": arm, "seed": seed, "steps": summary["steps"], "adapter": layout.TrainRun(out).adapter})


def arms_table(results: list[dict], arm_names: list[str], seeds: list[int]) -> tuple[list[dict], str]:
    """Rows (arm, row: "seed <k>", "mean", "sd" or "seed <k> - <ref>", metric values) and a Markdown rendering.

    Parameters
    ----------
    results : list of dict
        The finished trials' metrics, each with ``arm``, ``seed`` and every metric of ``METRICS``.
    arm_names : list of str
        The arms in file order; the first is the reference arm.
    seeds : list of int
        The sweep's seeds.

    Returns
    -------
    rows : list of dict
        Per arm: ``arm``, ``row`` and the metrics, for each seed run (``"seed <k>"``), the ``"mean"``
        and ``"sd"`` over seeds (None when no seed, or for ``sd`` fewer than two), and for every arm
        but the reference its per-seed difference against the reference (``"seed <k> - <ref>"``).
    markdown : str
        The rows as a Markdown table (missing values as ``—``).
    """
    by = {(r["arm"], r["seed"]): r for r in results}
    ref = arm_names[0]
    rows = []
    for arm in arm_names:
        per_seed = [by[(arm, s)] for s in seeds if (arm, s) in by]
        for r in per_seed:
            rows.append({"arm": arm, "row": f"seed {r['seed']}", **{m: r[m] for m in METRICS}})
        vals = {m: [r[m] for r in per_seed] for m in METRICS}
        rows.append({"arm": arm, "row": "mean", **{m: float(np.mean(v)) if v else None for m, v in vals.items()}})
        rows.append({"arm": arm, "row": "sd", **{m: float(np.std(v, ddof=1)) if len(v) > 1 else None for m, v in vals.items()}})
        if arm != ref:
            for s in seeds:
                if (arm, s) in by and (ref, s) in by:
                    rows.append({"arm": arm, "row": f"seed {s} - {ref}", **{m: by[(arm, s)][m] - by[(ref, s)][m] for m in METRICS}})
    fmt = lambda v: "—" if v is None or v != v else f"{v:+.3f}" if v < 0 else f"{v:.3f}"  # noqa: E731
    md = ["| arm | row | " + " | ".join(METRICS) + " |", "|---|---|" + "---|" * len(METRICS)]
    md += [f"| {r['arm']} | {r['row']} | " + " | ".join(fmt(r[m]) for m in METRICS) + " |" for r in rows]
    return rows, "\n".join(md) + "\n"


def run(job: SweepJob) -> dict:
    """Train, evaluate and score every (arm, seed) as a Ray Tune trial, then tabulate and compare them.

    Parameters
    ----------
    job : SweepJob
        Reads ``arms`` (the arms YAML), ``views``, ``eval_views``, ``out`` and ``max_concurrent``.

    Returns
    -------
    dict
        ``trials`` (finished trials), ``table`` and ``markdown`` (the arms table's URIs),
        ``seed_pairs`` and ``pooled`` (the comparisons' URIs, None when there are none), ``checks``
        ({rule id: verdict} of the plan, None without a plan) and ``adapters`` (the trained adapters).

    Raises
    ------
    MedScopeError
        When the arms file is invalid, the recipe's base model is missing, or any trial fails (raised
        after the arms table is written).
    """
    from ray import tune

    from medscope.training.recipes import load_recipe
    from pipelines.support.raycluster import ensure_ray
    from pipelines.train import ray_storage

    arms = load_arms(job.arms)
    recipe = load_recipe(arms.recipe)
    from medscope.models.checkpoints import require_base

    require_base(recipe.base, f"recipe {arms.recipe}")  # before Ray and any trial
    ensure_ray()
    views = records.read_table("views", job.views)
    overrides = {a.name: arm_overrides(a, arms, views, recipe) for a in arms.arms}
    path, fs = ray_storage(layout.ArmsSweep(job.out).tune)
    space = {
        "arm": tune.grid_search([a.name for a in arms.arms]),
        "seed": tune.grid_search(list(arms.seeds)),
        # JSON strings: Tune prints every config leaf of every trial otherwise
        "recipe": recipe.model_dump_json(), "recipe_uri": storage.absolute(cfgmod.resolve(arms.recipe)), "overrides": json.dumps(overrides),
        "views": job.views, "eval_uri": job.eval_views or job.views, "eval_split": arms.eval_split,
        "eval_test_sets": json.dumps({k: storage.absolute(v) for k, v in arms.eval_test_sets.items()}),
        "eval_cases": arms.eval_cases, "eval_max_new_tokens": arms.eval_max_new_tokens,
        "eval_max_turns": arms.eval_max_turns, "out": job.out,
        "s3_endpoint": storage.s3_endpoint(),  # configured or from the environment, as the driver reaches it
    }
    # the trial function only drives its TorchTrainer; the Train worker holds the CPU / GPU
    tuner = tune.Tuner(
        tune.with_resources(_trial, {"cpu": 0.01}),
        param_space=space,
        tune_config=tune.TuneConfig(max_concurrent_trials=job.max_concurrent),
        run_config=tune.RunConfig(name="sweep", storage_path=path, storage_filesystem=fs, verbose=1),
    )
    grid = tuner.fit()
    errors = [str(r.error) for r in grid if r.error]
    results = [r.metrics for r in grid if not r.error and r.metrics]
    names = [a.name for a in arms.arms]
    rows, md = arms_table(results, names, list(arms.seeds))
    table = pa.Table.from_pylist(rows)
    records_uri = layout.ArmsSweep(job.out).arms_table
    storage.write_bytes(records_uri, records.to_parquet_bytes(table))
    storage.write_bytes(layout.ArmsSweep(job.out).arms_markdown, md.encode())
    if errors:
        raise MedScopeError(f"{len(errors)} of {len(grid)} trials failed; first: {errors[0]}")
    pairs_uri = seed_pair_tests(job.out, names, list(arms.seeds), arms.n_boot)
    checks = apply_checks(job.out, arms.plan) if arms.plan and pairs_uri else None
    return {"trials": len(results), "table": records_uri, "markdown": layout.ArmsSweep(job.out).arms_markdown,
            "seed_pairs": pairs_uri, "pooled": layout.ArmsSweep(job.out).pooled if pairs_uri else None,
            "checks": checks, "adapters": sorted(r["adapter"] for r in results)}


def seed_pair_tests(out: str, arm_names: list[str], seeds: list[int], n_boot: int) -> str | None:
    """Every trial's scores in one table; each arm's per-seed paired bootstrap against the
    reference arm at the same seed (counterfactual paper §3.9) in ``seed_pairs.parquet``, and every arm
    pooled over its seeds against the reference pooled (§3.7 C4) in ``pooled.parquet``, through
    ``medscope.analysis.paired_differences.arm_comparisons`` (case-clustered, paired over shared cases).

    Parameters
    ----------
    out : str
        The sweep's output folder.
    arm_names : list of str
        The arms in file order; the first is the reference arm.
    seeds : list of int
        The sweep's seeds.
    n_boot : int
        Case-bootstrap resamples of each paired difference.

    Returns
    -------
    str or None
        URI of ``seed_pairs.parquet``; None when no trial wrote scores (nothing is written) or there
        is a single arm (only the combined scores table is written).

    References
    ----------
    .. [1] counterfactual paper, §3.9, §3.7 (C4).
    """
    from medscope.analysis.paired_differences import arm_comparisons
    from medscope.analysis.training_seeds import arm_and_seed

    parts = []
    for arm in arm_names:
        for seed in seeds:
            uri = layout.ArmsSweep(out).run(arm, seed).scores
            if storage.exists(uri):
                parts.append(records.read_table("scores", uri))
    if not parts:
        return None
    scores = pa.concat_tables(parts)
    records.write_table("scores", scores, layout.ArmsSweep(out).scores)
    if len(arm_names) < 2:
        return None
    table = arm_comparisons(scores, arm_names[0], n_boot=n_boot).to_pandas(use_threads=False)
    per_seed = table["model"].map(lambda m: arm_and_seed(m)[1] is not None)
    uri = layout.ArmsSweep(out).seed_pairs
    records.write_table("metrics", records.to_table("metrics", table[per_seed].to_dict("records")), uri)
    records.write_table("metrics", records.to_table("metrics", table[~per_seed].to_dict("records")), layout.ArmsSweep(out).pooled)
    return uri


def apply_checks(out: str, plan_uri: str) -> dict:
    """The plan's rules (counterfactual paper §3.7: C1-C3 as conditions on paired differences, C4 with
    ``every_seed_pair``: ``scoring.seeds.lower_in_every_seed_pair``) on the sweep's seed pairs and
    pooled comparisons. A rule whose rows the sweep did not produce (a test set it did not
    evaluate, an arm it did not train) is recorded as not applied, with the reason.

    Parameters
    ----------
    out : str
        The sweep's output folder (reads ``seed_pairs.parquet`` and ``pooled.parquet``; writes
        ``checks.json`` and ``checks.txt``).
    plan_uri : str
        The pre-registered plan YAML (``configs/plans/*.yaml``).

    Returns
    -------
    dict of str to str
        ``{rule id: verdict}``, ``"not applied"`` for a rule whose rows the sweep did not produce.

    References
    ----------
    .. [1] counterfactual paper, §3.7.
    """
    import pandas as pd

    from medscope.analysis import decision_rules as rules

    plan, _ = rules.load_plan(cfgmod.resolve(plan_uri))
    sweep = layout.ArmsSweep(out)
    table = pd.concat([records.read_table("metrics", sweep.seed_pairs).to_pandas(use_threads=False),
                       records.read_table("metrics", sweep.pooled).to_pandas(use_threads=False)], ignore_index=True)
    verdicts = []
    for rule in plan.rules:
        try:
            verdicts.append(rules.apply_rule(rule, table))
        except MedScopeError as err:
            verdicts.append({"id": rule.id, "kind": rule.kind, "verdict": "not applied", "lines": [str(err)]})
    storage.write_text(sweep.checks, json.dumps({"plan": plan.name, "verdicts": verdicts}, indent=2) + "\n")
    storage.write_text(sweep.checks_text, rules.format_verdicts(plan, verdicts) + "\n")
    return {v["id"]: v["verdict"] for v in verdicts}


def register(sub) -> None:
    """Add the ``sweep`` verb.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``sweep`` is added to them.
    """
    p = sub.add_parser("sweep", help="seeds x ablation arms on Ray Tune; evaluates and tabulates each adapter")
    add_config_flags(p, SweepJob)

    def go(args):
        from pipelines.support.jobs import print_summary

        print_summary(run(config_from_args(args, source="medscope sweep")))

    p.set_defaults(func=go)


if __name__ == "__main__":
    import sys

    from pipelines.support.jobs import job_main

    sys.exit(job_main("sweep", SweepJob, run))
