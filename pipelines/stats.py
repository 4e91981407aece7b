"""``medscope stats``: the paper's tests on scored runs (seed 000 §3.9; seed 001's TOST and
chance test; seed 002's exact McNemar). The logic is ``medscope.protocols.counterfactual.significance``.

    medscope stats mcnemar --scores RUN --a M1 --b M2 --metric ccr
    medscope stats fisher  --scores RUN --a M1 --b M2 --metric erased_claims --subset source=siim
    medscope stats tost    --scores RUN --a M1 --b M2 --metric ccr --margin 0.05
    medscope stats chance  --scores RUN --model M --metric ccr
    medscope stats seeds   --metrics RUN --arm recipe=r_s0,r_s1,r_s2 --arm without=w_s0,w_s1,w_s2
    medscope stats family  --plan configs/plans/primary_27.yaml --comparisons RUN/comparisons.parquet
"""

from __future__ import annotations

from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.protocols.counterfactual import comparisons as cmp
from medscope.protocols.counterfactual import significance as pt
from medscope.protocols.counterfactual import decision_rules as rules
from medscope.stats import bootstrap as bs


def _table(name: str, uri: str, file: str):
    folder = uri.rstrip("/")
    if storage.is_dir(folder) and storage.exists(storage.join(folder, file)):
        uri = storage.join(folder, file)
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


def register(sub) -> None:
    p = sub.add_parser("stats", help="the paper's tests on scored runs: McNemar, Fisher, TOST, chance, seeds, families")
    ssub = p.add_subparsers(dest="stats_verb", metavar="TEST")
    ssub.required = True

    def common(q, two=True):
        q.add_argument("--scores", required=True, help="scored run folder or its scores.parquet")
        q.add_argument("--test-set", default="main")
        q.add_argument("--condition")
        if two:
            q.add_argument("--a", required=True, help="model")
            q.add_argument("--b", required=True, help="the model it is compared with")
        q.add_argument("--metric", default="ccr", help=f"one of {', '.join(pt.PROPORTIONS)}")

    def scores(a):
        return _table("scores", a.scores, "scores.parquet")

    q = ssub.add_parser("mcnemar", help="exact McNemar on the views of a proportion metric, paired by view")
    common(q)
    q.add_argument("--subset", help="COLUMN=VALUE of the scores, e.g. source=siim")
    q.set_defaults(func=lambda a: print(pt.format_result(pt.mcnemar(scores(a), a.a, a.b, a.metric, a.test_set,
                                                                     a.condition, a.subset))))
    q = ssub.add_parser("fisher", help="Fisher's exact test of a proportion, two models or two subsets")
    common(q)
    q.add_argument("--subset", help="COLUMN=VALUE for both (or for --a when --subset-b is given)")
    q.add_argument("--subset-b", help="COLUMN=VALUE for --b")
    q.set_defaults(func=lambda a: print(pt.format_result(pt.fisher(scores(a), a.a, a.b, a.metric, a.test_set,
                                                                   a.condition, a.subset, a.subset_b))))
    q = ssub.add_parser("tost", help="equivalence of a - b within +-margin (90%% paired bootstrap interval)")
    common(q)
    q.add_argument("--margin", type=float, default=0.05)
    q.add_argument("--n-boot", type=int, default=bs.DEFAULT_B)
    q.add_argument("--seed", type=int, default=bs.DEFAULT_SEED)
    q.set_defaults(func=lambda a: print(pt.format_result(pt.tost(scores(a), a.a, a.b, a.metric, a.margin, a.test_set,
                                                                 a.condition or "agent", a.n_boot, a.seed))))
    q = ssub.add_parser("chance", help="accuracy on a metric's views against chance 1/k")
    common(q, two=False)
    q.add_argument("--model", required=True)
    q.add_argument("--k", type=int, default=2, help="answer options (2: yes/no)")
    q.add_argument("--n-boot", type=int, default=bs.DEFAULT_B)
    q.add_argument("--seed", type=int, default=bs.DEFAULT_SEED)
    q.set_defaults(func=lambda a: print(pt.format_result(pt.chance(scores(a), a.model, a.metric, a.k, a.test_set,
                                                                   a.condition, a.n_boot, a.seed))))
    q = ssub.add_parser("seeds", help="mean +- sd over seeds of each arm's metrics")
    q.add_argument("--metrics", required=True, nargs="+", help="metrics URIs or scored run folders")
    q.add_argument("--arm", required=True, action="append", help="NAME=MODEL_SEED0,MODEL_SEED1,...")
    q.add_argument("--metric", action="append", help=f"default: {', '.join(cmp.PRIMARY)}")
    q.add_argument("--test-set", default="main")
    q.add_argument("--condition", help="the prompting condition, when a run holds several (e.g. agent)")

    def _seeds(a):
        import pandas as pd

        table = pd.concat([_table("metrics", u, "metrics.parquet").to_pandas() for u in a.metrics], ignore_index=True)
        df = pt.seeds(table, _arms(a.arm), tuple(a.metric or cmp.PRIMARY), a.test_set, a.condition)
        for r in df.itertuples():
            print(f"{a.test_set}{' ' + a.condition if a.condition else ''}: {r.arm} {r.metric} {r.mean:.3f} ± {r.sd:.3f} (seeds: "
                  + ", ".join(f"{v:.3f}" for v in r.per_seed) + ")")

    q.set_defaults(func=_seeds)
    q = ssub.add_parser("family", help="Bonferroni / BH over a family a plan file names (e.g. the 27 primary)")
    q.add_argument("--plan", required=True)
    q.add_argument("--comparisons", required=True, help="comparisons URI (medscope compare) or its run folder")
    q.add_argument("--family", help="only this family of the plan")
    q.add_argument("--direction", choices=["model", "paper"], default="model",
                   help="model - reference (default) or paper: reference - model, as Table 6 prints it")
    q.set_defaults(func=_family)
