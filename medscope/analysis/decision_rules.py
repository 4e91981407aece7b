"""Pre-registered decision rules (counterfactual paper §3.6, §3.7) applied verbatim to metrics tables.

A plan file (``configs/plans/*.yaml``) names its test sets, endpoints, margins and rules. Rules:

Every comparison is decided in exact arithmetic (``medscope.analysis.exact``): a value is read
from its row's ``counts`` (14/100, not 0.14000000000000001), a threshold or margin from its
decimal text (0.02 = 1/50), and a tie is decided as the paper's inequality reads (``<=``
passes a tie, "under" does not). The lines printed give the counts beside the rounded values.

- ``stage_selection`` (§3.6): with U the utility and H the harm endpoint on one test set,
  stage k is chosen if U_k >= U_{k-1} - utility_tolerance and H_k <= H_{k-1} + harm_tolerance,
  else stage k-1 under the same rule against k-2, ..., else the first stage; an optional
  ``fallback`` (amendment 1) keeps another model when the chosen one falls more than a margin
  below it in U.
- ``check`` (C1-C4): ordered outcomes, each a list of conditions that must all hold; the first
  outcome whose conditions hold is the verdict, else ``otherwise``. A condition reads either a
  paired difference (a metrics row with ``reference``, from ``medscope compare``) or a value.
- ``floor``: a metric (e.g. sensitivity) must reach a floor in every group of a breakdown
  (e.g. every asked finding); models that miss it are not eligible for selection.

The plan's ``test_sets``, ``endpoints`` and ``margins`` are binding: every condition must use a
declared test set and endpoint, and a threshold (``min_effect``, ``within``, ``max_worsening``,
``at_least``, ``at_most``) may name a margin instead of a number (``min_effect: c1_effect``).
A condition or rule that the paper does not state carries ``addition: <why>``; the verdict
prints it as ``[addition: ...]`` so nobody mistakes it for the registered rule.

The plan's hash (content without its ``amendments``) is locked into ``<run>/plan.lock.json``
when a run starts. Applying a plan whose hash differs from the lock is refused unless the
plan's amendments chain from the locked hash to the current one (each amendment records the
hash it ``supersedes`` and the ``hash`` it leads to, with a date and a reason).
"""

from __future__ import annotations

import datetime as dt
import json
from fractions import Fraction
from typing import Literal

import pandas as pd
import pydantic

from medscope import config as cfgmod
from medscope.analysis import exact
from medscope.io import layout, safe_text, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError

LOCK_NAME = "plan.lock.json"  # the file name, for messages; its path is layout.ScoredRun.plan_lock


Threshold = float | str  # a number, or the name of one of the plan's margins


class Condition(StrictModel):
    test_set: str
    metric: str
    model: str
    reference: str | None = None  # None: a condition on the model's own value
    breakdown: str = "all"
    condition: str | None = None  # evaluation condition (agent, plain ...); None: the only one
    direction: Literal["higher", "lower"] | None = None  # superiority of model over reference
    min_effect: Threshold = 0.0
    ci_excludes_zero: bool = True
    within: Threshold | None = None  # |difference| < within
    worse_if: Literal["higher", "lower"] | None = None  # guard: the difference may worsen by at most
    max_worsening: Threshold | None = None
    at_least: Threshold | None = None
    at_most: Threshold | None = None
    addition: str | None = None  # not in the paper's wording: why it was added
    # §3.7 C4 "lower in every seed pair": model and reference name arms; the condition reads the
    # per-seed rows <model>@seed<k> - <reference>@seed<k> (scoring.seeds.lower_in_every_seed_pair)
    every_seed_pair: bool = False
    seeds: list[int] | None = None  # the seeds that must each be lower (default: every seed found)

    @pydantic.model_validator(mode="after")
    def _one_test(self):
        tests = [self.direction is not None, self.within is not None,
                 self.worse_if is not None or self.max_worsening is not None,
                 self.at_least is not None or self.at_most is not None]
        if sum(tests) != 1:
            raise ValueError("a condition needs exactly one of: direction, within, worse_if+max_worsening, at_least/at_most")
        if (self.worse_if is None) != (self.max_worsening is None):
            raise ValueError("a guard needs both worse_if and max_worsening")
        needs_ref = self.direction is not None or self.within is not None or self.worse_if is not None
        if needs_ref and not self.reference:
            raise ValueError("difference conditions need a reference model")
        if self.every_seed_pair and (self.direction != "lower" or not self.reference):
            raise ValueError("every_seed_pair is the counterfactual paper §3.7 C4's 'lower in every seed pair': it needs "
                             "direction: lower and a reference arm")
        return self


class Outcome(StrictModel):
    label: str
    all_of: list[Condition] = pydantic.Field(min_length=1)


class Fallback(StrictModel):
    model: str
    margin: float


class Rule(StrictModel):
    id: str
    kind: Literal["stage_selection", "check", "floor"]
    description: str = ""
    addition: str | None = None  # a rule the paper does not register: why it was added
    test_set: str | None = None
    # stage_selection
    candidates: list[str] = []
    utility: str = "net_utility"
    harm: str = "healthy_claims"
    utility_tolerance: float = 0.02
    harm_tolerance: float = 0.02
    fallback: Fallback | None = None
    # check
    outcomes: list[Outcome] = []
    otherwise: str = "fail"
    # floor
    metric: str | None = None
    breakdown_prefix: str = "finding="
    floor: float | None = None
    models: list[str] = []

    @pydantic.model_validator(mode="after")
    def _complete(self):
        if self.kind == "stage_selection" and (len(self.candidates) < 1 or not self.test_set):
            raise ValueError("stage_selection needs test_set and candidates (first stage first)")
        if self.kind == "check" and not self.outcomes:
            raise ValueError("check needs at least one outcome")
        if self.kind == "floor" and (self.metric is None or self.floor is None or not self.test_set):
            raise ValueError("floor needs test_set, metric and floor")
        return self


class Amendment(StrictModel):
    date: str
    reason: str
    supersedes: str  # the plan hash before this amendment
    hash: str  # the plan hash after it (``medscope rules hash``)


class Family(StrictModel):
    """A multiplicity family (counterfactual paper §3.9): every ``model`` against ``reference`` on every
    ``metric`` of ``test_set``, adjusted together by ``method``."""

    name: str
    test_set: str
    reference: str
    models: list[str] = pydantic.Field(min_length=1)
    metrics: list[str] = pydantic.Field(min_length=1)
    method: Literal["bonferroni", "bh"] = "bonferroni"
    alpha: float = pydantic.Field(0.05, gt=0, lt=1)
    condition: str | None = None
    addition: str | None = None  # a family the paper does not name
    note: str | None = None  # the paper's own wording about the family (e.g. added after review)


class Plan(StrictModel):
    name: str
    registered: str
    description: str = ""
    test_sets: list[str] = []
    endpoints: list[str] = []
    margins: dict[str, float] = {}
    rules: list[Rule] = []
    families: list[Family] = []
    amendments: list[Amendment] = []

    @pydantic.model_validator(mode="after")
    def _binding(self):
        if not self.rules and not self.families:
            raise ValueError("a plan needs rules or families")
        problems = []
        for rule in self.rules:
            for outcome in rule.outcomes:
                for c in outcome.all_of:
                    problems += self._check_condition(rule.id, c)
            for ts in filter(None, [rule.test_set]):
                if self.test_sets and ts not in self.test_sets:
                    problems.append(f"{rule.id}: test set {ts!r} is not among the plan's test_sets")
            used = [rule.utility, rule.harm] if rule.kind == "stage_selection" else [rule.metric] if rule.metric else []
            bad = [m for m in used if self.endpoints and m not in self.endpoints]
            if bad:
                problems.append(f"{rule.id}: endpoint(s) {bad} are not among the plan's endpoints")
        for fam in self.families:
            if self.test_sets and fam.test_set not in self.test_sets:
                problems.append(f"family {fam.name}: test set {fam.test_set!r} is not among the plan's test_sets")
            bad = [m for m in fam.metrics if self.endpoints and m not in self.endpoints]
            if bad:
                problems.append(f"family {fam.name}: endpoint(s) {bad} are not among the plan's endpoints")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _check_condition(self, rule_id: str, c: Condition) -> list[str]:
        out = []
        if self.test_sets and c.test_set not in self.test_sets:
            out.append(f"{rule_id}: test set {c.test_set!r} is not among the plan's test_sets {self.test_sets}")
        if self.endpoints and c.metric not in self.endpoints:
            out.append(f"{rule_id}: endpoint {c.metric!r} is not among the plan's endpoints {self.endpoints}")
        for field in ("min_effect", "within", "max_worsening", "at_least", "at_most"):
            v = getattr(c, field)
            if isinstance(v, str) and v not in self.margins:
                out.append(f"{rule_id}: {field} names margin {v!r}, which the plan's margins do not define")
        return out

    def resolved(self) -> "Plan":
        """The plan with every margin name replaced by its value."""
        data = self.model_dump()
        for rule in data["rules"]:
            for outcome in rule["outcomes"]:
                for c in outcome["all_of"]:
                    for field in ("min_effect", "within", "max_worsening", "at_least", "at_most"):
                        if isinstance(c[field], str):
                            c[field] = self.margins[c[field]]
        return Plan.model_validate(data)


def load_plan(uri: str) -> tuple[Plan, str]:
    """(plan, hash of its content without amendments).

    Parameters
    ----------
    uri : str
        A plan YAML file (``configs/plans/*.yaml``), local path or URI.

    Returns
    -------
    plan : Plan
        The validated plan, margin names replaced by their values (``Plan.resolved``).
    hash : str
        ``plan_hash`` of the file's content.

    Raises
    ------
    MedScopeError
        When the file is not a valid plan.
    """
    data = cfgmod.load_yaml(uri)
    plan = cfgmod.parse(Plan, data, source=uri)
    return plan.resolved(), plan_hash(data)


def plan_hash(data: dict) -> str:
    """The hash a run locks: the plan's content without its ``amendments``.

    Parameters
    ----------
    data : dict
        The plan file's parsed YAML.

    Returns
    -------
    str
        16 hex characters (``config.content_hash``).
    """
    return cfgmod.content_hash({k: v for k, v in data.items() if k != "amendments"})


def lock_plan(plan_uri: str, run_uri: str) -> dict:
    """Record the plan's hash in ``<run>/plan.lock.json`` (kept if already there: first lock wins).

    Parameters
    ----------
    plan_uri : str
        The plan file.
    run_uri : str
        The scored run folder.

    Returns
    -------
    dict
        The lock: ``plan`` (name), ``plan_uri``, ``hash`` and ``locked_at`` (UTC, ISO 8601); the
        existing one when the run was already locked.
    """
    plan, h = load_plan(plan_uri)
    lock_uri = layout.ScoredRun(run_uri).plan_lock
    if storage.exists(lock_uri):
        return safe_text.read_json_object(lock_uri)
    lock = {"plan": plan.name, "plan_uri": plan_uri, "hash": h,
            "locked_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    storage.write_text(lock_uri, json.dumps(lock, indent=2) + "\n")
    return lock


def check_lock(plan: Plan, current: str, lock: dict) -> list[str]:
    """Raise unless the plan is the locked one or amendments lead from it; returns notes.

    Parameters
    ----------
    plan : Plan
        The plan being applied (its ``amendments`` are read).
    current : str
        The plan's hash now (``load_plan``).
    lock : dict
        The run's lock (``lock_plan``).

    Returns
    -------
    list of str
        Notes for the verdict: the match, or the amendments that lead from the locked hash to ``current``.

    Raises
    ------
    MedScopeError
        When the hashes differ and no chain of amendments leads from the locked hash to ``current``.
    """
    locked = lock["hash"]
    if locked == current:
        return [f"plan hash {current} matches the lock of {lock.get('locked_at', '?')}"]
    h, used = locked, []
    for a in plan.amendments:
        if a.supersedes == h:
            h = a.hash
            used.append(f"amendment of {a.date} ({a.reason}): {a.supersedes} -> {a.hash}")
    if h == current:
        return [f"plan changed after its runs began (locked {locked}); recorded amendments:"] + used
    raise MedScopeError(
        f"plan {plan.name!r} changed after its runs began (locked hash {locked}, now {current}) and no recorded "
        f"amendment leads there; add an amendment with supersedes: {h} and hash: {current} (date, reason)")


# --- applying --------------------------------------------------------------------------------


def _rows(table: pd.DataFrame, test_set, metric, model, breakdown="all", reference=None, condition=None):
    sel = (table["test_set"] == test_set) & (table["metric"] == metric) & (table["breakdown"] == breakdown)
    sel &= table["model"] == model
    if reference is None:
        sel &= table["reference"].isna()
    else:
        sel &= table["reference"].fillna("").str.split(":").str[0] == reference
    if condition is not None:
        sel &= table["condition"] == condition
    return table[sel]


def _one(table, **kw) -> pd.Series:
    rows = _rows(table, **kw)
    if rows.empty:
        what = f"{kw['model']}" + (f" - {kw['reference']}" if kw.get("reference") else "")
        hint = f" (run `medscope compare --reference {kw['reference']}`)" if kw.get("reference") else ""
        raise MedScopeError(f"no {kw['metric']} row for {what} on {kw['test_set']} ({kw.get('breakdown', 'all')}){hint}")
    if len(rows) > 1:
        raise MedScopeError(f"several {kw['metric']} rows for {kw['model']} on {kw['test_set']}; name the condition")
    return rows.iloc[0]


def _exact(r, signed: bool = False) -> tuple[Fraction, str]:
    """A row's point value as an exact rational (its ``counts``; ``exact.of_row``) and its text."""
    counts = r.get("counts") if hasattr(r, "get") else None
    return exact.of_row(r["value"], counts if isinstance(counts, str) and counts else None, signed)


def _fmt_ci(r) -> str:
    if pd.isna(r["ci_low"]):
        return ""
    return f" [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"


def evaluate_condition(c: Condition, table: pd.DataFrame) -> tuple[bool, str]:
    """Whether one condition of a ``check`` rule holds, with the numbers behind it.

    Parameters
    ----------
    c : Condition
        The condition, its thresholds resolved to numbers (``Plan.resolved``).
    table : pandas.DataFrame
        Metrics rows: values (``reference`` None) and paired differences (``reference`` set, from
        ``medscope compare``).

    Returns
    -------
    ok : bool
        Whether it holds.
    text : str
        The value or difference, its interval and what it needed.

    Raises
    ------
    MedScopeError
        When the row it reads is missing, or several rows match (name the condition); for
        ``every_seed_pair``, when no seed-pair rows are found and no ``seeds`` are named.

    References
    ----------
    .. [1] counterfactual paper, §3.7.
    """
    if c.every_seed_pair:
        from medscope.analysis.training_seeds import lower_in_every_seed_pair, seed_pair_differences

        diffs = seed_pair_differences(table, c.model, c.reference, c.metric, c.test_set, c.breakdown)
        if not diffs and not c.seeds:
            raise MedScopeError(f"no {c.metric} rows for {c.model}@seed<k> - {c.reference}@seed<k> on {c.test_set} "
                                f"(the sweep's seed_pairs, or `medscope compare` of each seed pair)")
        ok, text = lower_in_every_seed_pair(diffs, c.seeds)
        return ok, f"{c.metric}({c.model} - {c.reference}, {c.test_set}) per seed pair: {text}; needs every seed < 0"
    kw = dict(test_set=c.test_set, metric=c.metric, model=c.model, breakdown=c.breakdown, condition=c.condition)
    # decided in exact arithmetic on the counts (medscope.analysis.exact): a tie at a threshold
    # is decided as the paper's inequality reads, never by floating point
    if c.reference is None:
        r = _one(table, **kw)
        v, vtext = _exact(r)
        ok = (c.at_least is None or v >= exact.threshold(c.at_least)) and \
             (c.at_most is None or v <= exact.threshold(c.at_most))
        bound = " and ".join(x for x in [f">= {c.at_least}" if c.at_least is not None else "",
                                         f"<= {c.at_most}" if c.at_most is not None else ""] if x)
        return ok, f"{c.metric}({c.model}, {c.test_set}) = {vtext}{_fmt_ci(r)}; needs {bound}"
    r = _one(table, reference=c.reference, **kw)
    d, dtext = _exact(r, signed=True)
    lo, hi = r["ci_low"], r["ci_high"]
    head = f"{c.metric}({c.model} - {c.reference}, {c.test_set}) = {dtext}{_fmt_ci(r)}"
    if c.direction is not None:
        sign = 1 if c.direction == "higher" else -1
        excl = (lo > 0) if sign > 0 else (hi < 0)
        # "lower" / "higher" is strict even with min_effect 0 (C4: "lower in every seed pair");
        # "lower by at least 5 points": a difference of exactly -5 points passes
        ok = sign * d > 0 and sign * d >= exact.threshold(c.min_effect) and (excl or not c.ci_excludes_zero)
        need = f"{'>=' if sign > 0 else '<='} {float(sign * exact.threshold(c.min_effect)):+.3f}" + (
            ", interval excluding 0" if c.ci_excludes_zero else "")
        return bool(ok), f"{head}; needs {need}"
    if c.within is not None:  # "under 5 points": strict, so exactly 5 points is not within
        return bool(abs(d) < exact.threshold(c.within)), f"{head}; needs |diff| < {c.within}"
    worse = d if c.worse_if == "higher" else -d
    return bool(worse <= exact.threshold(c.max_worsening)), \
        f"{head}; may worsen ({c.worse_if}) by at most {c.max_worsening}"


def apply_rule(rule: Rule, table: pd.DataFrame) -> dict:
    """One rule's verdict: the stage chosen, the first outcome that holds, or the models that reach a floor.

    Parameters
    ----------
    rule : Rule
        A ``stage_selection``, ``check`` or ``floor`` rule.
    table : pandas.DataFrame
        Metrics rows with a ``reference`` column (None for values).

    Returns
    -------
    dict
        ``id``, ``kind``, ``verdict`` (e.g. ``"select <model>"``, an outcome label, ``"eligible: ..."``)
        and ``lines`` (the numbers behind it); a floor rule adds ``eligible`` (list of str).

    Raises
    ------
    MedScopeError
        When a row the rule reads is missing (or, for a condition, not unique).

    References
    ----------
    .. [1] counterfactual paper, §3.6, §3.7.
    """
    lines: list[str] = []
    if rule.kind == "stage_selection":
        # U and H as exact rationals from their counts; the tolerances as the decimals the plan
        # writes (0.02 = 1/50): "U3 >= U2 - 0.02 and H3 <= H2 + 0.02" holds at a tie (§3.6)
        val = {m: {e: _exact(_one(table, test_set=rule.test_set, metric=e, model=m)) for e in (rule.utility, rule.harm)}
               for m in rule.candidates + ([rule.fallback.model] if rule.fallback else [])}
        u_tol, h_tol = exact.threshold(rule.utility_tolerance), exact.threshold(rule.harm_tolerance)
        for m in rule.candidates:
            lines.append(f"{m}: {rule.utility} = {val[m][rule.utility][1]}, {rule.harm} = {val[m][rule.harm][1]}")
        chosen = rule.candidates[0]
        for k in range(len(rule.candidates) - 1, 0, -1):
            hi, lo = rule.candidates[k], rule.candidates[k - 1]
            (u_hi, _), (u_lo, _) = val[hi][rule.utility], val[lo][rule.utility]
            (h_hi, _), (h_lo, _) = val[hi][rule.harm], val[lo][rule.harm]
            u_ok, h_ok = u_hi >= u_lo - u_tol, h_hi <= h_lo + h_tol
            lines.append(f"{hi} vs {lo}: U {float(u_hi):.3f} >= {float(u_lo):.3f} - {rule.utility_tolerance} "
                         f"(exactly {u_hi} >= {u_lo - u_tol}) is {u_ok}; H {float(h_hi):.3f} <= {float(h_lo):.3f} + "
                         f"{rule.harm_tolerance} (exactly {h_hi} <= {h_lo + h_tol}) is {h_ok}")
            if u_ok and h_ok:
                chosen = hi
                break
        if rule.fallback:
            fb = rule.fallback
            (u_ch, _), (u_fb, _) = val[chosen][rule.utility], val[fb.model][rule.utility]
            margin = exact.threshold(fb.margin)
            falls = u_ch < u_fb - margin
            lines.append(f"fallback {fb.model}: U {float(u_ch):.3f} < {float(u_fb):.3f} - {fb.margin} "
                         f"(exactly {u_ch} < {u_fb - margin}) is {falls}")
            if falls:
                chosen = fb.model
        return {"id": rule.id, "kind": rule.kind, "verdict": f"select {chosen}", "lines": lines}
    if rule.kind == "check":
        for outcome in rule.outcomes:
            results = [evaluate_condition(c, table) for c in outcome.all_of]
            lines.append(f"outcome {outcome.label!r}:")
            lines += [f"  [{'x' if ok else ' '}] {text}" + (f" [addition: {c.addition}]" if c.addition else "")
                      for (ok, text), c in zip(results, outcome.all_of)]
            if all(ok for ok, _ in results):
                return {"id": rule.id, "kind": rule.kind, "verdict": outcome.label, "lines": lines}
        return {"id": rule.id, "kind": rule.kind, "verdict": rule.otherwise, "lines": lines}
    # floor
    sel = (table["test_set"] == rule.test_set) & (table["metric"] == rule.metric) & table["reference"].isna()
    sel &= table["breakdown"].str.startswith(rule.breakdown_prefix)
    part = table[sel]
    models = rule.models or sorted(part["model"].unique())
    eligible = []
    for m in models:
        rows = part[part["model"] == m]
        if rows.empty:
            raise MedScopeError(f"floor {rule.id}: no {rule.metric} rows for {m} by {rule.breakdown_prefix}*")
        floor = exact.threshold(rule.floor)
        below = rows[[_exact(r)[0] < floor for _, r in rows.iterrows()]]
        worst = rows.loc[rows["value"].idxmin()]
        lines.append(f"{m}: lowest {rule.metric} {worst['value']:.3f} ({worst['breakdown']}); "
                     f"{len(below)} of {len(rows)} groups below {rule.floor}")
        if below.empty:
            eligible.append(m)
    return {"id": rule.id, "kind": rule.kind, "verdict": "eligible: " + (", ".join(eligible) or "none"),
            "eligible": eligible, "lines": lines}


def apply_plan(plan: Plan, table: pd.DataFrame) -> list[dict]:
    """Every rule's verdict with the numbers behind it, in plan order.

    Parameters
    ----------
    plan : Plan
        A loaded plan (``load_plan``).
    table : pandas.DataFrame
        Metrics rows of the runs (a missing ``reference`` column is read as all None).

    Returns
    -------
    list of dict
        ``apply_rule``'s result for each of ``plan.rules``.

    Raises
    ------
    MedScopeError
        When a row a rule reads is missing.
    """
    table = table.copy()
    if "reference" not in table.columns:
        table["reference"] = None
    return [apply_rule(rule, table) for rule in plan.rules]


def format_verdicts(plan: Plan, verdicts: list[dict], notes: list[str] = ()) -> str:
    """The verdicts as text: the plan, the notes, then each rule's verdict and its lines.

    Parameters
    ----------
    plan : Plan
        The plan (its name, registration date and rules' ``addition`` notes).
    verdicts : list of dict
        ``apply_plan``'s result.
    notes : sequence of str
        Lines under the plan's heading (e.g. ``check_lock``'s).

    Returns
    -------
    str
        One line per verdict, each followed by its indented lines; a rule the paper does not register
        is marked ``[addition: ...]``.
    """
    out = [f"plan {plan.name} (registered {plan.registered})"] + [f"  {n}" for n in notes]
    additions = {r.id: r.addition for r in plan.rules if r.addition}
    for v in verdicts:
        out.append(f"{v['id']} [{v['kind']}]: {v['verdict']}"
                   + (f"  [addition: {additions[v['id']]}]" if v["id"] in additions else ""))
        out += [f"    {line}" for line in v["lines"]]
    return "\n".join(out)
