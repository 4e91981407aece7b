"""``medscope score``, ``medscope compare`` and ``medscope rules``.

``score`` reads which protocol an eval run's episodes belong to and lets that protocol score
them; a scored run is a folder (``medscope.io.layout.ScoredRun``): scores, metrics with bootstrap
intervals, comparisons (paired differences, after ``compare``), ``run.json`` (what was scored,
by which protocol, and how, with the protocol options it was scored under) and, when a plan is
named, ``plan.lock.json``.

The protocol is built from its typed options: those set at eval come from the eval run's
sweep.json (they cannot be given again here), those set at score from the flags generated from
its ``Options`` (``--cost-matrix``, ``--judge``, ``--n-boot``...; pipelines/support/protocol_flags.py)
or ``protocol_options:``.
"""

from __future__ import annotations

import json
import sys
from typing import Literal

import pandas as pd
from pydantic import Field as F

import pydantic

from medscope import protocols
from medscope.io import layout, records, safe_text, storage
from medscope.config import StrictModel
from medscope.protocols.base import parse_options
from medscope.protocols import denominators as den
from pipelines.support import runcheck
from medscope.errors import MedScopeError
from medscope.analysis import paired_differences as cmp
from medscope.analysis.runs import read_view_scores
from medscope.analysis import decision_rules as rules
from medscope.stats import bootstrap as bs
from medscope.stats import labelnoise
from pipelines.support import protocol_flags
from pipelines.support.flags import add_action, add_config_flags, cli, config_from_args


class ScoreConfig(StrictModel):
    """Score an eval run with its protocol. Below the harness's own settings, the protocol's score
    options, generated from its Options model (those of the protocol the --episodes name)."""

    episodes: str = pydantic.Field(description="an eval run folder (or its episodes table)")
    items: str | None = pydantic.Field(None, validation_alias=pydantic.AliasChoices("items", "views"),
                                       description="the item table evaluated (default: the one the eval run records)")
    out: str = pydantic.Field(description="scored-run folder URI (scores, metrics, run.json)")
    protocol: str | None = pydantic.Field(None, description="override the protocol the eval run names (name or module:Class)")
    protocol_options: dict = pydantic.Field({}, description=(
        "the protocol's options set at score (YAML mapping; the same keys as its flags, e.g. {cost_matrix: table2})"))
    # addition: the paper sets no tolerance; as eval run's --max-failed, any missing episode exits 3 by default
    max_failed: float | None = pydantic.Field(None, ge=0, description=(
        "missing episodes (test-set views a model x condition has no episode for) accepted before the exit code "
        "says so: a count (3) or a fraction of the views x model-conditions (0.05)"))


def run_folder(uri: str) -> str:
    """The scored-run folder of a metrics / scores URI; a run folder itself is returned as is.

    Parameters
    ----------
    uri : str
        A scored-run folder, or its metrics (or scores) table.

    Returns
    -------
    str
        The scored-run folder.
    """
    return layout.folder_of("metrics", uri)


def metrics_uri_of(uri: str) -> str:
    """``uri`` itself, or the metrics table inside it when ``uri`` is a scored-run folder.

    Parameters
    ----------
    uri : str
        A metrics table, or a scored-run folder holding one.

    Returns
    -------
    str
        The metrics table's URI.
    """
    return layout.table_uri("metrics", uri)


def compare_run(metrics_uri: str, reference: str, scores_uri: str | None = None, out: str | None = None,
                n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED, metric_names=cmp.PRIMARY,
                cluster: str = "case_id", breakdowns=(), exclude_disputed: bool = False,
                pools: list[str] | None = None, pool_seeds: bool = False) -> pd.DataFrame:
    """Paired bootstrap differences of every model of a scored run against ``reference``, written as a
    comparisons table (``medscope compare``).

    Parameters
    ----------
    metrics_uri : str
        A scored run's metrics table, or the scored-run folder.
    reference : str
        ``"MODEL"`` or ``"MODEL:CONDITION"``; with ``pool_seeds``, a seed run's arm.
    scores_uri : str, optional
        The scores table (default: the scored run's, beside the metrics).
    out : str, optional
        Where the comparisons are written (default: the scored run's comparisons table).
    n_boot : int, optional
        Bootstrap resamples.
    seed : int, optional
        Seed of the resamples.
    metric_names : iterable of str, optional
        Metrics compared (default: ``paired_differences.PRIMARY``).
    cluster : {'case_id', 'group_id', 'patient_id'}, optional
        The bootstrap unit.
    breakdowns : iterable of str, optional
        Breakdown dimensions besides ``"all"`` (not read with ``pool_seeds``).
    exclude_disputed : bool, optional
        Leave out the cases the consensus panel disputed (recorded in the run's run.json by
        ``score --panel``).
    pools : list of str, optional
        ``"NAME=MODEL_S0,MODEL_S1,..."`` each: seeds also compared pooled as one model (not read
        with ``pool_seeds``).
    pool_seeds : bool, optional
        Models are seed runs ``<arm>@seed<k>``: compare each seed pair and the arms pooled over
        their seeds (``paired_differences.arm_comparisons``).

    Returns
    -------
    pandas.DataFrame
        The comparisons written: ``value`` (model - reference), ``ci_low``, ``ci_high``,
        ``p_value``, ``reference``, per test set and breakdown.

    Raises
    ------
    MedScopeError
        When the scores table is missing, ``exclude_disputed`` is asked of a run that records
        no disputed cases, or nothing is left to compare with the reference (nothing is written).

    References
    ----------
    .. [1] counterfactual paper, §3.7 (C4), §3.9.
    """
    folder = run_folder(metrics_uri)
    scores_uri = scores_uri or layout.ScoredRun(folder).scores
    if not storage.exists(scores_uri):
        raise MedScopeError(f"compare needs the scores beside the metrics ({scores_uri}); pass --scores URI")
    scores = read_view_scores(scores_uri, "medscope compare")
    if exclude_disputed:
        manifest_uri = layout.ScoredRun(folder).manifest
        disputed = safe_text.read_json_object(manifest_uri).get("disputed_cases") if storage.exists(manifest_uri) else None
        if disputed is None:
            raise MedScopeError(f"{folder} records no disputed cases; score it with --panel first")
        scores = labelnoise.without_cases(scores, disputed)
    if pool_seeds:
        # seed runs <arm>@seed<k>: each seed pair, and the arms pooled over their seeds (§3.7, §3.9)
        table = cmp.arm_comparisons(scores, reference, n_boot=n_boot, seed=seed, metric_names=metric_names, cluster=cluster)
    else:
        table = cmp.compare(scores, reference, n_boot=n_boot, seed=seed, metric_names=metric_names,
                            cluster=cluster, breakdowns=breakdowns, pools=cmp.parse_pools(pools))
    if table.num_rows == 0:
        # written and printed, an empty table was one empty line and exit 0, which reads as "no
        # differences", and it replaced the comparisons an earlier compare had written
        raise MedScopeError(
            f"nothing to compare with the reference {reference!r}: the run holds no other model (or, with "
            "MODEL:CONDITION, no other condition of it); score a run of two or more models, or give "
            "--reference MODEL:CONDITION to compare a model's other conditions with that one")
    out = out or layout.ScoredRun(folder).comparisons
    records.write_table("metrics", table, out)
    return table.to_pandas(use_threads=False)


def format_comparisons(df: pd.DataFrame, adjust: str | None = None, alpha: float = 0.05,
                       direction: str = "model") -> str:
    """One line per comparison; with ``adjust`` all printed comparisons form one named family
    (Bonferroni threshold alpha/m, or Benjamini-Hochberg q). ``direction="paper"``: reference −
    model, Table 6's orientation (``compare.orient``).

    Parameters
    ----------
    df : pandas.DataFrame
        Comparisons as ``compare_run`` returns them (model - reference); only the ``"all"``
        breakdown is printed.
    adjust : {'bonferroni', 'bh'}, optional
        Treat the printed comparisons as one family, adjusted this way (None: unadjusted).
    alpha : float, optional
        The family's significance level.
    direction : {'model', 'paper'}, optional
        ``model``: model - reference; ``paper``: reference - model.

    Returns
    -------
    str
        One line per (test set, model, condition, reference), both sides named ``MODEL:CONDITION``,
        with each metric's difference, interval and p, then (with ``adjust``) a line naming the family.

    References
    ----------
    .. [1] counterfactual paper, Table 6.
    """
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
    for (ts, model, cond, ref), part in df.groupby(["test_set", "model", "condition", "reference"], sort=False):
        cells = [f"{r.metric} {r.value + 0.0:+.3f} [{r.ci_low + 0.0:+.3f}, {r.ci_high + 0.0:+.3f}] "
                 f"p {bs.format_p(r.p_value, r.n_boot)}"
                 + extra[r.Index] for r in part.itertuples()]
        # both sides as MODEL:CONDITION, the form --reference and the stats verbs take: an agent row
        # and a blind row never look alike
        side = f"{model}:{cond}"
        pair = f"{ref} - {side}" if direction == "paper" else f"{side} - {ref}"
        lines.append(f"{ts}: {pair}: " + "; ".join(cells))
    if adjust:
        lines.append(f"family of {len(df)} comparisons, {adjust} at alpha {alpha}; * = significant after adjustment")
    return "\n".join(lines)


def read_metrics(uris: list[str]) -> pd.DataFrame:
    """Several metrics tables read as one DataFrame.

    Parameters
    ----------
    uris : list of str
        Metrics (or comparisons) tables, or scored-run folders holding them.

    Returns
    -------
    pandas.DataFrame
        Their rows, concatenated in order.
    """
    return pd.concat([records.read_table("metrics", metrics_uri_of(u)).to_pandas(use_threads=False) for u in uris], ignore_index=True)


def apply_rules(plan_uri: str, metrics_uris: list[str], lock_uri: str | None = None, unlocked: bool = False) -> str:
    """A pre-registered plan's rules applied verbatim to metrics tables, after checking the plan
    against the runs' locks (``medscope rules apply``).

    Parameters
    ----------
    plan_uri : str
        The plan YAML.
    metrics_uris : list of str
        Metrics / comparisons tables (or scored-run folders).
    lock_uri : str, optional
        The plan.lock.json (default: the one in each metrics table's scored-run folder).
    unlocked : bool, optional
        Apply the plan although no lock is found (an ``UNLOCKED`` note says so).

    Returns
    -------
    str
        The verdicts as text (``decision_rules.format_verdicts``), with the lock checks' notes.

    Raises
    ------
    MedScopeError
        When no lock is found and ``unlocked`` is not given.
    """
    plan, h = rules.load_plan(plan_uri)
    locks = [lock_uri] if lock_uri else [layout.ScoredRun(run_folder(u)).plan_lock for u in metrics_uris]
    found = [u for u in dict.fromkeys(locks) if storage.exists(u)]
    notes: list[str] = []
    if not found and not unlocked:
        raise MedScopeError(f"no {rules.LOCK_NAME} beside {', '.join(metrics_uris)}: these runs were not locked to "
                            f"plan {plan.name}; pass --lock URI, or --unlocked to apply it anyway (noted in the output)")
    if not found:
        notes.append("UNLOCKED: no plan.lock.json; the plan's hash was not recorded when these runs began")
    for u in found:
        lock = safe_text.read_json_object(u)
        notes += rules.check_lock(plan, h, lock)
    table = read_metrics(metrics_uris)
    return rules.format_verdicts(plan, rules.apply_plan(plan, table), notes)


# --- CLI ----------------------------------------------------------------------------------------


def episodes_protocol(episodes_uri: str) -> str:
    """The one protocol whose episodes these are (the ``protocol`` column).

    Parameters
    ----------
    episodes_uri : str
        An episodes table.

    Returns
    -------
    str
        The protocol's name.

    Raises
    ------
    MedScopeError
        When the table holds no episodes, or episodes of several protocols.
    """
    names = sorted(set(records.read_table("episodes", episodes_uri, columns=["protocol"]).column("protocol").to_pylist()))
    if not names:
        raise MedScopeError(f"no episodes in {episodes_uri}")
    if len(names) > 1:
        raise MedScopeError(f"{episodes_uri} holds episodes of several protocols ({', '.join(names)}); "
                            "score each eval run on its own")
    return names[0]


def eval_run_record(episodes_uri: str) -> dict:
    """The eval run's sweep.json ({} when the episodes table stands alone).

    Parameters
    ----------
    episodes_uri : str
        The eval run's episodes table.

    Returns
    -------
    dict
        The contents of sweep.json in the eval run's folder.
    """
    summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    if not storage.exists(summary):
        return {}
    return safe_text.expect_mapping(safe_text.read_json(summary), summary)


def protocol_of(episodes_uri: str) -> str:
    """The protocol these episodes belong to, as ``--protocol`` names it: the spec the eval run's
    sweep.json records (a ``module:Class`` protocol outside the package too), else the name the
    episodes carry.

    Parameters
    ----------
    episodes_uri : str
        The eval run's episodes table.

    Returns
    -------
    str
        The protocol spec (name or ``module:Class``).

    Raises
    ------
    MedScopeError
        As ``episodes_protocol``.
    """
    name = episodes_protocol(episodes_uri)
    summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    if storage.exists(summary):
        ran = safe_text.expect_mapping(safe_text.read_json(summary), summary)
        if ran.get("protocol") == name and isinstance(ran.get("protocol_spec"), str):
            return ran["protocol_spec"]
    return name


def items_of(episodes_uri: str) -> str:
    """The item table an eval run was swept over (its sweep.json), for ``score`` without ``--items``.

    Parameters
    ----------
    episodes_uri : str
        The eval run's episodes table.

    Returns
    -------
    str
        The items URI sweep.json records.

    Raises
    ------
    MedScopeError
        When the eval run records no items.
    """
    items = eval_run_record(episodes_uri).get("items")
    if items:
        return items
    raise MedScopeError(f"{episodes_uri}: the eval run does not record its items; pass --items")


def score(episodes_uri: str, out: str, items_uri: str | None = None, protocol: str | None = None,
          **options) -> dict:
    """Score an eval run with the protocol its episodes name; writes the scored-run folder ``out``.

    ``options``: the protocol's options set at score (None: its default). Those set at eval are
    the eval run's (sweep.json): giving one here is refused, as it would contradict what ran.

    Parameters
    ----------
    episodes_uri : str
        An eval run folder, or its episodes table.
    out : str
        The scored-run folder written.
    items_uri : str, optional
        The item table evaluated (default: the one the eval run's sweep.json records).
    protocol : str, optional
        The protocol spec (default: the one the episodes belong to, ``protocol_of``).
    **options
        The protocol's options set at score, by field name.

    Returns
    -------
    dict
        What the protocol's ``score`` returned; with ``units_not_scored`` added when the eval
        run had failed or refused units.

    Raises
    ------
    MedScopeError
        When the episodes are missing or fewer than the run wrote (``runcheck``), an option
        is not one set at score, or no items table is given or recorded.
    """
    episodes_uri = layout.require("episodes", episodes_uri)
    runcheck.require_complete(episodes_uri)  # never scores what is left of a partial copy
    spec = protocol or protocol_of(episodes_uri)
    cls = protocols.protocol_class(spec)
    name, model = getattr(cls, "name", spec), protocols.options_class(cls)
    given = {k: v for k, v in options.items() if v is not None}
    parse_options(model, given, name, verbs=("score",), given_at="score")  # an eval / report option: said here
    record = eval_run_record(episodes_uri)
    fixed = record.get("protocol_options") or {} if record.get("protocol") == name else {}
    parse_options(model, fixed, name, verbs=("eval",), given_at="eval")
    typed = parse_options(model, {**fixed, **given}, name)
    proto = cls(typed)
    items_uri = items_uri or items_of(episodes_uri)
    try:
        result = proto.score(episodes_uri, items_uri, out)
    except den.EmptyTestSet as err:  # said with the table read: another table as --items is the usual cause
        raise MedScopeError(f"{items_uri}: no {err.unit.rstrip('s')} of the {name} test set in this item table "
                            f"(0 {err.unit} to score: {err}); give --items the table the eval run evaluated "
                            "(default: the one its sweep.json names)") from None
    coverage = result.get("coverage") if isinstance(result, dict) else None
    unit = (coverage or {}).get("unit", "views")
    if coverage and not coverage.get(unit):
        # every metric would be over no item and the run exited 0 (issue 51)
        raise MedScopeError(f"{items_uri}: no {unit.rstrip('s')} of the {name} test set in this item table (0 {unit} to score, "
                            f"{out} holds metrics over nothing); give --items the table the eval run evaluated "
                            f"(default: the one its sweep.json names)")
    record_options(out, name, protocols.spec_of(proto), typed)
    missing = units_not_scored(episodes_uri)
    if missing and isinstance(result, dict):  # what the numbers are NOT over, and why
        result["units_not_scored"] = missing
        print(f"score: {missing['failed']} unit(s) of the eval run failed and {missing['refused']} were refused; "
              f"no number here is over them ({missing['failed_by_reason'] or ''})", file=sys.stderr)
    return result


def conclude_coverage(result: dict, max_failed: float | None = None, items: str | None = None) -> None:
    """Decide ``score``'s exit code from the coverage the protocol returned, as ``eval run``
    decides its own from its accounting (``accounting.exit_code``): a missing episode is a failed
    unit against the test set's fixed denominator, a scored or unclear one a done unit.

    Parameters
    ----------
    result : dict
        ``score``'s result; without ``coverage`` (a protocol that does not recompute its test
        set) nothing is decided.
    max_failed : float or None, optional
        ``--max-failed``: missing episodes accepted, a count (>= 1) or a fraction of the units.
    items : str or None, optional
        The item table scored against, named when no view of it has an episode (another table
        given as ``--items`` is the usual cause).

    Raises
    ------
    UnitsIncomplete
        Exit 3 when more episodes are missing than allowed; 4 when no view of the test set has an
        episode at all.

    References
    ----------
    .. [1] counterfactual paper, §3.9 ("the same 507 cases"), Table 5.
    """
    from pipelines.support import accounting

    cov = result.get("coverage") if isinstance(result, dict) else None
    if not cov:
        return
    acc = {"done": cov["scored"] + cov["unclear"], "failed": cov["missing"], "refused": 0, "skipped": 0, "stopped": 0}
    code = accounting.exit_code(acc, max_failed)
    if code == accounting.EXIT_OK:
        return
    units = acc["done"] + acc["failed"]
    unit = cov.get("unit", "views")
    who = "; ".join(f"{r['model']}:{r['condition']} {r['missing']} of {r['expected']}"
                    for r in cov["by_model_condition"] if r["missing"])
    if code == accounting.EXIT_NO_WORK:
        table = f" of {items}" if items else ""
        raise accounting.UnitsIncomplete(f"score: no {unit.rstrip('s')} of the test set{table} has an episode ({who}); "
                                         "is this the eval run of that test set?", code)
    raise accounting.UnitsIncomplete(
        f"score: {cov['missing']} of {units} episodes are missing ({who}; allowed: "
        f"{accounting.allowed_failures(max_failed, units)}); the metrics are over the episodes scored, not over the "
        f"test set's {cov[unit]} {unit}; rerun the eval run to fill them, or pass --max-failed N (or a fraction) "
        "to accept them", code)


def record_options(out: str, name: str, spec: str, options) -> None:
    """Add the protocol's spec and the options it scored under (eval's and score's) to the scored
    run's run.json, so ``report`` builds the protocol as it scored.

    Parameters
    ----------
    out : str
        The scored-run folder.
    name : str
        The protocol's name (kept if run.json already names one).
    spec : str
        The protocol's spec (``protocols.spec_of``).
    options : ProtocolOptions
        The typed options it scored under; their values set at eval and at score are recorded.
    """
    uri = layout.ScoredRun(out).manifest
    data = safe_text.read_json_object(uri) if storage.exists(uri) else {}
    data.setdefault("protocol", name)
    data.update(protocol_spec=spec, protocol_options=options.values_at("eval", "score"))
    storage.write_text(uri, json.dumps(data, indent=2, default=str) + "\n")


def units_not_scored(episodes_uri: str) -> dict | None:
    """The eval run's failed and refused units (its sweep.json accounting), when there are any.

    Parameters
    ----------
    episodes_uri : str
        The eval run's episodes table.

    Returns
    -------
    dict or None
        ``failed``, ``refused``, ``failed_by_reason`` and ``refused_endpoints`` of the sweep's
        accounting; None without sweep.json or when no unit failed or was refused.
    """
    summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    if not storage.exists(summary):
        return None
    acc = safe_text.expect_mapping(safe_text.read_json(summary), summary).get("accounting") or {}
    if not (acc.get("failed") or acc.get("refused")):
        return None
    return {k: acc[k] for k in ("failed", "refused", "failed_by_reason", "refused_endpoints")}


def register(sub) -> None:
    """Add the ``score``, ``compare`` and ``rules`` verbs (``rules apply``, ``lock``, ``hash``) to the
    command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The top parser's sub-parsers.
    """
    p = sub.add_parser("score", help="score an eval run with its protocol: per-item scores, metrics, bootstrap intervals",
                       description=ScoreConfig.__doc__)
    add_config_flags(p, ScoreConfig, aliases={"items": ["views"]})
    protocol_flags.install(p, "score", _scored_protocol_named)  # the protocol's score options as flags
    p.set_defaults(func=_score_cli)

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
    add_action(rsub, "lock", RulesLockConfig, lambda x: _lock(x.plan, x.run),
               "record the plan's hash in <run>/plan.lock.json")
    add_action(rsub, "hash", RulesHashConfig, lambda x: print(rules.load_plan(x.plan)[1]),
               "print the plan's hash (for an amendment's `hash:`)")


def conclude_judging(result: dict) -> None:
    """Decide ``score``'s exit code from the replies a judge left unlabelled, as the demo does: a
    reply the judge could not label is a failed unit of the judging, in no rate. The protocol's
    ``allow_unjudged`` option accepts them (they stay counted in run.json and the report).

    Parameters
    ----------
    result : dict
        ``score``'s result; without ``unjudged`` (a protocol with no judge) nothing is decided.

    Raises
    ------
    UnitsIncomplete
        Exit 3 when any reply is unjudged and ``unjudged_allowed`` is not set.
    """
    from pipelines.support import accounting

    unjudged = result.get("unjudged") if isinstance(result, dict) else None
    if not unjudged or result.get("unjudged_allowed"):
        return
    where = "; ".join(f"{cell} {n}" for cell, n in sorted((result.get("unjudged_by_cell") or {}).items()))
    raise accounting.UnitsIncomplete(
        f"score: the judge left {unjudged} replies unjudged ({where}); they are in no rate. Scoring again asks the "
        "failed requests again (an unreadable reply stays in the judge cache), or pass --allow-unjudged to accept them",
        accounting.EXIT_UNITS_FAILED)


def _scored_protocol_named(argv: list[str]) -> list[str] | None:
    """The protocol a ``score`` command line is about: ``--protocol``, else the eval run's."""
    known = protocol_flags.peek(argv, "--protocol", "--episodes")
    if known is None:
        return None
    if known.protocol:
        return [known.protocol]
    return [protocol_of(layout.require("episodes", known.episodes))] if known.episodes else None


def _score_cli(args) -> None:
    protocol_flags.refuse_misplaced(args)
    cfg = config_from_args(args, ScoreConfig, source="medscope score")
    spec = cfg.protocol or protocol_of(layout.require("episodes", cfg.episodes))
    model = protocols.options_class(protocols.protocol_class(spec))
    options = {**cfg.protocol_options, **protocol_flags.given(args, model, "score")}
    result = score(cfg.episodes, cfg.out, cfg.items, cfg.protocol, **options)
    _print(result)
    conclude_coverage(result, cfg.max_failed, cfg.items or items_of(cfg.episodes))  # after the summary and the run
    conclude_judging(result)


def _print(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


def _lock(plan_uri: str, run_uri: str) -> None:
    """``rules lock``: print the run's lock, and say so on stderr when the run was already locked to
    another hash (first lock wins, so the user who edited the plan learns that their edit is not what
    is locked, and that applying it needs an amendment)."""
    lock = rules.lock_plan(plan_uri, run_uri)
    _, current = rules.load_plan(plan_uri)
    if lock["hash"] != current:
        print(f"medscope: note: {run_uri} was already locked at {lock.get('locked_at', '?')} to "
              f"{lock.get('plan_uri', '?')} (hash {lock['hash']}); {plan_uri} hashes {current}. The first "
              f"lock stands: `rules apply` refuses this plan unless an amendment in it leads from "
              f"{lock['hash']} to {current} (docs/scoring-and-report.md).", file=sys.stderr)
    _print(lock)


class CompareConfig(StrictModel):
    """``medscope compare``: paired bootstrap differences of every model against a reference."""

    metrics: str = F(description="metrics URI of a scored run (its scores.parquet is used)")
    reference: str = F(description="MODEL or MODEL:CONDITION")
    scores: str | None = F(None, description="scores URI (default: scores.parquet beside the metrics)")
    out: str | None = F(None, description="where to write the comparisons (default: comparisons.parquet beside the metrics)")
    n_boot: int = F(bs.DEFAULT_B, ge=0, description="bootstrap resamples")
    seed: int = F(bs.DEFAULT_SEED, ge=0, description="bootstrap seed (0 or more)")
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
