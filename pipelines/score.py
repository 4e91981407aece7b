"""``medscope score``, ``medscope compare`` and ``medscope rules``.

``score`` reads which protocol an eval run's episodes belong to and lets that protocol score
them; a scored run is a folder (``medscope.layout.ScoredRun``): scores, metrics with bootstrap
intervals, comparisons (paired differences, after ``compare``), ``run.json`` (what was scored,
by which protocol, and how) and, when a plan is named, ``plan.lock.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Literal

import pandas as pd
from pydantic import Field as F

from medscope import layout, protocols, records, safe_text, storage
from medscope.protocols.base import ScoreOptions
from medscope.config import StrictModel
from pipelines.support import runcheck
from medscope.errors import MedScopeError
from medscope.protocols.counterfactual import comparisons as cmp
from medscope.protocols.counterfactual import costs, rewards, decision_rules as rules
from medscope.stats import bootstrap as bs
from medscope.stats import labelnoise
from pipelines.support.flags import add_action, add_config_flags, cli, config_from_args



def _key_value(text: str) -> tuple[str, object]:
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("expected KEY=VALUE")
    return key.strip().replace("-", "_"), yaml.safe_load(value)


def _yaml_mapping(text: str) -> dict:
    import yaml

    value = yaml.safe_load(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a YAML mapping, e.g. '{key: value}'")
    return value


def run_folder(uri: str) -> str:
    """The scored-run folder of a metrics / scores URI; a run folder itself is returned as is."""
    return layout.folder_of("metrics", uri)


def metrics_uri_of(uri: str) -> str:
    """``uri`` itself, or the metrics table inside it when ``uri`` is a scored-run folder."""
    return layout.table_uri("metrics", uri)


def compare_run(metrics_uri: str, reference: str, scores_uri: str | None = None, out: str | None = None,
                n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED, metric_names=cmp.PRIMARY,
                cluster: str = "case_id", breakdowns=(), exclude_disputed: bool = False,
                pools: list[str] | None = None, pool_seeds: bool = False) -> pd.DataFrame:
    folder = run_folder(metrics_uri)
    scores_uri = scores_uri or layout.ScoredRun(folder).scores
    if not storage.exists(scores_uri):
        raise MedScopeError(f"compare needs the scores beside the metrics ({scores_uri}); pass --scores URI")
    scores = records.read_table("scores", scores_uri)
    if exclude_disputed:
        manifest_uri = layout.ScoredRun(folder).manifest
        disputed = json.loads(storage.read_text(manifest_uri)).get("disputed_cases") if storage.exists(manifest_uri) else None
        if disputed is None:
            raise MedScopeError(f"{folder} records no disputed cases; score it with --panel first")
        scores = labelnoise.without_cases(scores, disputed)
    if pool_seeds:
        # seed runs <arm>@seed<k>: each seed pair, and the arms pooled over their seeds (§3.7, §3.9)
        table = cmp.arm_comparisons(scores, reference, n_boot=n_boot, seed=seed, metric_names=metric_names, cluster=cluster)
    else:
        table = cmp.compare(scores, reference, n_boot=n_boot, seed=seed, metric_names=metric_names,
                            cluster=cluster, breakdowns=breakdowns, pools=cmp.parse_pools(pools))
    out = out or layout.ScoredRun(folder).comparisons
    records.write_table("metrics", table, out)
    return table.to_pandas()


def format_comparisons(df: pd.DataFrame, adjust: str | None = None, alpha: float = 0.05,
                       direction: str = "model") -> str:
    """One line per comparison; with ``adjust`` all printed comparisons form one named family
    (Bonferroni threshold alpha/m, or Benjamini-Hochberg q). ``direction="paper"``: reference −
    model, Table 6's orientation (``compare.orient``)."""
    from medscope.stats import inference

    df = cmp.orient(df[df["breakdown"] == "all"].reset_index(drop=True), direction)
    extra = [""] * len(df)
    if adjust and len(df):
        fam = inference.adjust_families([{"family": "all", "p": p} for p in df["p_value"].fillna(1.0)], alpha,
                                        "bh" if adjust == "bh" else "bonferroni")
        for i, f in enumerate(fam):
            extra[i] = (f" q={f['q']:.3g}" if adjust == "bh" else f" (alpha/m={f['threshold']:.2g})") + \
                       (" *" if f["significant"] else "")
    lines = []
    for (ts, model, ref), part in df.groupby(["test_set", "model", "reference"], sort=False):
        cells = [f"{r.metric} {r.value + 0.0:+.3f} [{r.ci_low + 0.0:+.3f}, {r.ci_high + 0.0:+.3f}] "
                 f"p {bs.format_p(r.p_value, r.n_boot)}"
                 + extra[r.Index] for r in part.itertuples()]
        pair = f"{ref} - {model}" if direction == "paper" else f"{model} - {ref}"
        lines.append(f"{ts}: {pair}: " + "; ".join(cells))
    if adjust:
        lines.append(f"family of {len(df)} comparisons, {adjust} at alpha {alpha}; * = significant after adjustment")
    return "\n".join(lines)


def read_metrics(uris: list[str]) -> pd.DataFrame:
    return pd.concat([records.read_table("metrics", metrics_uri_of(u)).to_pandas() for u in uris], ignore_index=True)


def apply_rules(plan_uri: str, metrics_uris: list[str], lock_uri: str | None = None, unlocked: bool = False) -> str:
    plan, h = rules.load_plan(plan_uri)
    locks = [lock_uri] if lock_uri else [storage.join(run_folder(u), rules.LOCK_NAME) for u in metrics_uris]
    found = [u for u in dict.fromkeys(locks) if storage.exists(u)]
    notes: list[str] = []
    if not found and not unlocked:
        raise MedScopeError(f"no {rules.LOCK_NAME} beside {', '.join(metrics_uris)}: these runs were not locked to "
                            f"plan {plan.name}; pass --lock URI, or --unlocked to apply it anyway (noted in the output)")
    if not found:
        notes.append("UNLOCKED: no plan.lock.json; the plan's hash was not recorded when these runs began")
    for u in found:
        lock = json.loads(storage.read_text(u))
        notes += rules.check_lock(plan, h, lock)
    table = read_metrics(metrics_uris)
    return rules.format_verdicts(plan, rules.apply_plan(plan, table), notes)


# --- CLI ----------------------------------------------------------------------------------------


def episodes_protocol(episodes_uri: str) -> str:
    """The one protocol whose episodes these are (the ``protocol`` column)."""
    names = sorted(set(records.read_table("episodes", episodes_uri, columns=["protocol"]).column("protocol").to_pylist()))
    if not names:
        raise MedScopeError(f"no episodes in {episodes_uri}")
    if len(names) > 1:
        raise MedScopeError(f"{episodes_uri} holds episodes of several protocols ({', '.join(names)}); "
                            "score each eval run on its own")
    return names[0]


def protocol_of(episodes_uri: str) -> str:
    """The protocol these episodes belong to, as ``--protocol`` names it: the spec the eval run's
    sweep.json records (a ``module:Class`` protocol outside the package too), else the name the
    episodes carry."""
    name = episodes_protocol(episodes_uri)
    summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    if storage.exists(summary):
        ran = safe_text.expect_mapping(safe_text.read_json(summary), summary)
        if ran.get("protocol") == name and isinstance(ran.get("protocol_spec"), str):
            return ran["protocol_spec"]
    return name


def items_of(episodes_uri: str) -> str:
    """The item table an eval run was swept over (its sweep.json), for ``score`` without ``--items``."""
    summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    if storage.exists(summary):
        items = safe_text.expect_mapping(safe_text.read_json(summary), summary).get("items")
        if items:
            return items
    raise MedScopeError(f"{episodes_uri}: the eval run does not record its items; pass --items")


def score(episodes_uri: str, out: str, items_uri: str | None = None, protocol: str | None = None,
          protocol_options: dict | None = None, n_boot: int | None = None, seed: int | None = None,
          **extra) -> dict:
    """Score an eval run with the protocol its episodes name; writes the scored-run folder ``out``."""
    episodes_uri = layout.require("episodes", episodes_uri)
    runcheck.require_complete(episodes_uri)  # never scores what is left of a partial copy (issue 32)
    proto = protocols.load(protocol or protocol_of(episodes_uri), protocol_options)
    items_uri = items_uri or items_of(episodes_uri)
    options = ScoreOptions(n_boot=n_boot, seed=seed, extra={k: v for k, v in extra.items() if v is not None})
    result = proto.score(episodes_uri, items_uri, out, options)
    record_spec(out, protocols.spec_of(proto))
    missing = units_not_scored(episodes_uri)
    if missing and isinstance(result, dict):  # what the numbers are NOT over, and why (issue 25)
        result["units_not_scored"] = missing
        print(f"score: {missing['failed']} unit(s) of the eval run failed and {missing['refused']} were refused; "
              f"no number here is over them ({missing['failed_by_reason'] or ''})", file=sys.stderr)
    return result


def record_spec(out: str, spec: str) -> None:
    """Name the protocol in the scored run's ``run.json`` as ``--protocol`` takes it, so
    ``medscope report`` loads it again (a protocol outside the package included)."""
    manifest = layout.ScoredRun(out).manifest
    if storage.exists(manifest):
        run = safe_text.expect_mapping(safe_text.read_json(manifest), manifest)
        storage.write_text(manifest, json.dumps({**run, "protocol_spec": spec}, indent=2))


def units_not_scored(episodes_uri: str) -> dict | None:
    """The eval run's failed and refused units (its sweep.json accounting), when there are any."""
    summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    if not storage.exists(summary):
        return None
    acc = safe_text.expect_mapping(safe_text.read_json(summary), summary).get("accounting") or {}
    if not (acc.get("failed") or acc.get("refused")):
        return None
    return {k: acc[k] for k in ("failed", "refused", "failed_by_reason", "refused_endpoints")}


def register(sub) -> None:
    p = sub.add_parser("score", help="score an eval run with its protocol: per-item scores, metrics, bootstrap intervals")
    p.add_argument("--episodes", required=True, help="an eval run folder (or its episodes table)")
    p.add_argument("--items", "--views", dest="items", help="the item table evaluated (default: the one the eval run records)")
    p.add_argument("--out", required=True, help="scored-run folder URI (scores, metrics, run.json)")
    p.add_argument("--protocol", help="override the protocol the episodes name")
    p.add_argument("--protocol-options", type=_yaml_mapping, default=None, metavar="YAML",
                   help="the protocol's options, e.g. '{config: configs/probe/default.yaml}'")
    p.add_argument("--score-option", action="append", type=_key_value, default=[], metavar="KEY=VALUE",
                   help="a scoring option of the protocol (YAML value), e.g. judge=rule, n_boot_tests=10000")
    p.add_argument("--n-boot", type=int, default=None, help="bootstrap resamples (default: the protocol's, 2000)")
    p.add_argument("--seed", type=int, default=None, help="bootstrap seed (default: the protocol's, 42)")
    cf = p.add_argument_group("counterfactual protocol")
    cf.add_argument("--cost-matrix", default=None, help=f"one of {', '.join(costs.available())} or a YAML path (default table2)")
    cf.add_argument("--test-set", default=None, help="name the scores carry (default main)")
    cf.add_argument("--cluster", default=None, choices=["case_id", "group_id", "patient_id"],
                    help="bootstrap unit: cases (default), near-copy groups or patients")
    cf.add_argument("--plan", help="lock this plan's hash into the run (plan.lock.json)")
    cf.add_argument("--panel", type=lambda v: v.split(","), help="comma-separated consensus panel: also report metrics without disputed negatives")
    cf.add_argument("--min-votes", type=int, help="panel votes that make a lesion-free label disputed (default 7/9)")
    cf.add_argument("--box-units", default=None, choices=list(rewards.BOX_UNITS),
                    help="units of episode boxes: pixels (the table contract) or per_mille (raw 0-1000 replies)")
    p.set_defaults(func=lambda a: _print(score(
        a.episodes, a.out, a.items, a.protocol, a.protocol_options, a.n_boot, a.seed, **dict(a.score_option),
        cost_matrix=a.cost_matrix, test_set=a.test_set, cluster=a.cluster, plan=a.plan, panel=a.panel,
        min_votes=a.min_votes, box_units=a.box_units)))

    # compare and rules: flags from their models (below; pipelines.support.flags)
    p = sub.add_parser("compare", help="paired bootstrap differences of every model against a reference",
                       description=CompareConfig.__doc__)
    add_config_flags(p, CompareConfig)
    p.set_defaults(func=lambda a: _compare(config_from_args(a, source="medscope compare")))
    p = sub.add_parser("rules", help="pre-registered decision rules: apply a plan, lock it, print its hash")
    rsub = p.add_subparsers(dest="rules_verb", metavar="ACTION")
    rsub.required = True
    add_action(rsub, "apply", RulesApplyConfig, lambda x: print(apply_rules(x.plan, x.metrics, x.lock, x.unlocked)),
               "apply a plan's rules verbatim to metrics (and comparisons) tables")
    add_action(rsub, "lock", RulesLockConfig, lambda x: _print(rules.lock_plan(x.plan, x.run)),
               "record the plan's hash in <run>/plan.lock.json")
    add_action(rsub, "hash", RulesHashConfig, lambda x: print(rules.load_plan(x.plan)[1]),
               "print the plan's hash (for an amendment's `hash:`)")


def _print(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


class CompareConfig(StrictModel):
    """``medscope compare``: paired bootstrap differences of every model against a reference."""

    metrics: str = F(description="metrics URI of a scored run (its scores.parquet is used)")
    reference: str = F(description="MODEL or MODEL:CONDITION")
    scores: str | None = F(None, description="scores URI (default: scores.parquet beside the metrics)")
    out: str | None = F(None, description="where to write the comparisons (default: comparisons.parquet beside the metrics)")
    n_boot: int = F(bs.DEFAULT_B, description="bootstrap resamples")
    seed: int = F(bs.DEFAULT_SEED, description="bootstrap seed")
    cluster: Literal["case_id", "group_id", "patient_id"] = F("case_id", description="bootstrap unit: cases, "
                                                                                     "near-copy groups or patients")
    metric: list[str] = F([], description=f"metric to compare (default: {', '.join(cmp.PRIMARY)})",
                          json_schema_extra=cli(repeat=True, metavar="METRIC"))
    adjust: Literal["bonferroni", "bh"] | None = F(None, description="treat the printed comparisons as one ad-hoc "
                                                   "family (the paper's named families: `medscope stats family --plan`)")
    exclude_disputed: bool = F(False, description="rerun without the lesion-free cases the consensus panel disputed "
                                                  "(score --panel)")
    pool: list[str] = F([], description="NAME=MODEL_S0,MODEL_S1,...: also compare the seeds pooled as one model "
                                        "(C4, Table 8)", json_schema_extra=cli(repeat=True, metavar="NAME=MODELS"))
    direction: Literal[cmp.DIRECTIONS] = F("model", description="print model - reference (as stored) or paper: "  # type: ignore[valid-type]
                                           "reference - model, Table 6's 'MedScope minus each model'")
    pool_seeds: bool = F(False, description="models <arm>@seed<k>: reference names an arm; compare each seed pair "
                                            "(arm@seed<k> - reference@seed<k>) and the arms pooled over their seeds "
                                            "(§3.7 C4, §3.9)")


def _compare(a: CompareConfig) -> None:
    print(format_comparisons(compare_run(
        a.metrics, a.reference, a.scores, a.out, a.n_boot, a.seed, tuple(a.metric or cmp.PRIMARY), a.cluster,
        exclude_disputed=a.exclude_disputed, pools=a.pool or None, pool_seeds=a.pool_seeds), a.adjust,
        direction=a.direction))


class RulesApplyConfig(StrictModel):
    """``medscope rules apply``: a plan's rules applied verbatim to metrics (and comparisons) tables."""

    plan: str = F(description="plan YAML (configs/plans/...)")
    metrics: list[str] = F(min_length=1, description="metrics / comparisons URIs",
                           json_schema_extra=cli(nargs="+", metavar="URI"))
    lock: str | None = F(None, description="plan.lock.json URI (default: beside each metrics file)")
    unlocked: bool = F(False, description="apply although no lock exists (said in the output)")


class RulesLockConfig(StrictModel):
    """``medscope rules lock``: the plan's hash recorded in <run>/plan.lock.json."""

    plan: str = F(description="plan YAML (configs/plans/...)")
    run: str = F(description="scored run folder")


class RulesHashConfig(StrictModel):
    """``medscope rules hash``: the plan's hash."""

    plan: str = F(description="plan YAML (configs/plans/...)")
