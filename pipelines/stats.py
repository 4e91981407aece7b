"""``medscope stats``: the paper's tests on scored runs (counterfactual paper §3.9; the benchmark-MCQ paper's TOST and
chance test; the paired-modality paper's exact McNemar). The logic is ``medscope.analysis.significance``.

    medscope stats mcnemar --scores RUN --a M1 --b M2 --metric ccr
    medscope stats fisher  --scores RUN --a M1 --b M2 --metric erased_claims --subset source=siim
    medscope stats tost    --scores RUN --a M1 --b M2 --metric ccr --margin 0.05
    medscope stats chance  --scores RUN --model M --metric ccr
    medscope stats seeds   --metrics RUN --arm recipe=r_s0,r_s1,r_s2 --arm without=w_s0,w_s1,w_s2
    medscope stats family  --plan configs/plans/primary_27.yaml --comparisons RUN/comparisons.parquet
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field as F

from medscope.io import records, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.analysis import paired_differences as cmp
from medscope.analysis import significance as pt
from medscope.analysis import decision_rules as rules
from medscope.stats import bootstrap as bs
from medscope.analysis.runs import read_view_scores
from pipelines.support.flags import add_action, cli


def _table(name: str, uri: str, file: str):
    folder = uri.rstrip("/")
    if storage.is_dir(folder) and storage.exists(storage.join(folder, file)):
        uri = storage.join(folder, file)
    if name == "scores":
        return read_view_scores(uri, "medscope stats")
    return records.read_table(name, uri)


def _arms(specs: list[str]) -> dict[str, list[str]]:
    out = {}
    for spec in specs:
        name, _, models = spec.partition("=")
        if not name or not models:
            raise MedScopeError(f"--arm {spec!r}: use NAME=MODEL_SEED0,MODEL_SEED1,...")
        out[name] = [m.strip() for m in models.split(",") if m.strip()]
    return out


def _family(args) -> None:
    plan, _ = rules.load_plan(args.plan)
    fams = [f for f in plan.families if not args.family or f.name == args.family]
    if not fams:
        raise MedScopeError(f"plan {plan.name} names no family {args.family or ''}".strip())
    comparisons = _table("metrics", args.comparisons, "comparisons.parquet")
    for fam in fams:
        print(pt.format_family(fam, pt.family(comparisons, fam), args.direction))


class _OnScores(StrictModel):
    scores: str = F(description="scored run folder or its scores.parquet")
    test_set: str = F("main", description="the test set the scores carry")
    condition: str | None = F(None, description="the prompting condition of a side that names none "
                                                 "(MODEL:CONDITION wins), when a run holds several")
    metric: str = F("ccr", description=f"one of {', '.join(pt.PROPORTIONS)}")


class _TwoModels(_OnScores):
    a: str = F(description="MODEL or MODEL:CONDITION (as compare's --reference)")
    b: str = F(description="the one it is compared with: MODEL or MODEL:CONDITION (m:agent against m:blind)")


class McNemarConfig(_TwoModels):
    """``medscope stats mcnemar``: exact McNemar on the views of a proportion metric, paired by view."""

    subset: str | None = F(None, description="COLUMN=VALUE of the scores, e.g. source=siim")


class FisherConfig(_TwoModels):
    """``medscope stats fisher``: Fisher's exact test of a proportion, two models or two subsets."""

    subset: str | None = F(None, description="COLUMN=VALUE for both (or for a when subset_b is given)")
    subset_b: str | None = F(None, description="COLUMN=VALUE for b")


class TostConfig(_TwoModels):
    """``medscope stats tost``: equivalence of a - b within +-margin (90% paired bootstrap interval)."""

    margin: float = F(0.05, gt=0, description="equivalence margin")
    n_boot: int = F(bs.DEFAULT_B, ge=0, description="bootstrap resamples")
    seed: int = F(bs.DEFAULT_SEED, ge=0, description="bootstrap seed (0 or more)")


class ChanceConfig(_OnScores):
    """``medscope stats chance``: accuracy on a metric's views against chance 1/k."""

    model: str = F(description="MODEL or MODEL:CONDITION")
    k: int = F(2, ge=2, description="answer options (2: yes/no)")
    n_boot: int = F(bs.DEFAULT_B, ge=0, description="bootstrap resamples")
    seed: int = F(bs.DEFAULT_SEED, ge=0, description="bootstrap seed (0 or more)")


class SeedsConfig(StrictModel):
    """``medscope stats seeds``: mean +- sd over seeds of each arm's metrics."""

    metrics: list[str] = F(min_length=1, description="metrics URIs or scored run folders",
                           json_schema_extra=cli(nargs="+", metavar="URI"))
    arm: list[str] = F(min_length=1, description="NAME=MODEL_SEED0,MODEL_SEED1,...",
                       json_schema_extra=cli(repeat=True, metavar="NAME=MODELS"))
    metric: list[str] = F([], description=f"metric to summarise (default: {', '.join(cmp.PRIMARY)})",
                          json_schema_extra=cli(repeat=True, metavar="METRIC"))
    test_set: str = F("main", description="the test set the metrics carry")
    condition: str | None = F(None, description="the prompting condition, when a run holds several (e.g. agent)")


class FamilyConfig(StrictModel):
    """``medscope stats family``: Bonferroni / BH over a family a plan file names."""

    plan: str = F(description="plan YAML, e.g. configs/plans/primary_27.yaml")
    comparisons: str = F(description="comparisons URI (medscope compare) or its run folder")
    family: str | None = F(None, description="only this family of the plan")
    direction: Literal["model", "paper"] = F("model", description="model - reference (default) or paper: "
                                                                  "reference - model, as Table 6 prints it")


def _seeds(a: SeedsConfig) -> None:
    import pandas as pd

    table = pd.concat([_table("metrics", u, "metrics.parquet").to_pandas(use_threads=False) for u in a.metrics], ignore_index=True)
    df = pt.seeds(table, _arms(a.arm), tuple(a.metric or cmp.PRIMARY), a.test_set, a.condition)
    for r in df.itertuples():
        print(f"{a.test_set}{' ' + a.condition if a.condition else ''}: {r.arm} {r.metric} {r.mean:.3f} ± {r.sd:.3f} (seeds: "
              + ", ".join(f"{v:.3f}" for v in r.per_seed) + ")")


def register(sub) -> None:
    """Add the ``stats`` verb and its tests (mcnemar, fisher, tost, chance, seeds, family).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``stats`` is added to them.
    """
    p = sub.add_parser("stats", help="the paper's tests on scored runs: McNemar, Fisher, TOST, chance, seeds, families")
    ssub = p.add_subparsers(dest="stats_verb", metavar="TEST")
    ssub.required = True

    def scores(a):
        return _table("scores", a.scores, "scores.parquet")

    add_action(ssub, "mcnemar", McNemarConfig, lambda a: print(pt.format_result(pt.mcnemar(
        scores(a), a.a, a.b, a.metric, a.test_set, a.condition, a.subset))),
        "exact McNemar on the views of a proportion metric, paired by view")
    add_action(ssub, "fisher", FisherConfig, lambda a: print(pt.format_result(pt.fisher(
        scores(a), a.a, a.b, a.metric, a.test_set, a.condition, a.subset, a.subset_b))),
        "Fisher's exact test of a proportion, two models or two subsets")
    add_action(ssub, "tost", TostConfig, lambda a: print(pt.format_result(pt.tost(
        scores(a), a.a, a.b, a.metric, a.margin, a.test_set, a.condition or "agent", a.n_boot, a.seed))),
        "equivalence of a - b within +-margin (90%% paired bootstrap interval)")
    add_action(ssub, "chance", ChanceConfig, lambda a: print(pt.format_result(pt.chance(
        scores(a), a.model, a.metric, a.k, a.test_set, a.condition, a.n_boot, a.seed))),
        "accuracy on a metric's views against chance 1/k")
    add_action(ssub, "seeds", SeedsConfig, _seeds, "mean +- sd over seeds of each arm's metrics")
    add_action(ssub, "family", FamilyConfig, _family, "Bonferroni / BH over a family a plan file names (e.g. the 27 primary)")
