"""Every protocol's ``score`` against a fixed denominator (issue 50): the items of the test set,
recomputed from the items table every time, whatever the episodes hold.

A protocol says which items its test set has (``expected``), which episodes it scored, which it
read as unclear (a done unit in no number), and which it excluded with the rule; this module
counts, per model x condition, what was scored and what is missing (a test-set item without a
scored or unclear episode: a failed unit against the fixed denominator), prints it, turns the
missing items into rejects rows, and returns the ``coverage`` that ``medscope score`` decides
its exit code from (``pipelines.score.conclude_coverage``, the rule of ``eval run --max-failed``).

The numbers themselves stay over the episodes scored, each with its n; a missing episode never
raises a number silently, because ``score`` exits 3 unless ``--max-failed`` accepts it.

References
----------
.. [1] counterfactual paper, §3.9 ("the same 507 cases"), Table 5; the other papers' tables are
   each over a fixed item set (benchmark-MCQ Methods, paired-modality Table 1, the probe's Table 2).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence

from medscope.errors import MedScopeError
from medscope.io import layout, records, safe_text, storage

# Rules an episode is excluded under, shared by the protocols (a protocol may add its own).
NOT_IN_ITEMS = "not_in_items"  # its item is not in the items table (or not in the test set)
UNKNOWN_CONDITION = "unknown_condition"  # a condition the protocol does not evaluate
FAILED_CALL = "failed_call"  # an error and no reply: no answer to score (its item stays missing)
MISSING = "missing_episode"
# a second scorable episode of one model x condition x item: the first (in table order) is scored,
# as the counterfactual protocol keeps it; counted twice it would weigh the item double in a rate
# while the fixed denominator counts it once
DUPLICATE = "duplicate_episode"
DUPLICATE_MEANING = ("a second episode of the same model x condition x item; the first is scored "
                     "(runs of different seeds must be distinct models: <arm>@seed<k>)")


def split_duplicates(episodes: Iterable[dict], scorable: Callable[[dict], bool] = lambda e: True,
                     item_key: str = "item_id") -> tuple[list[dict], list[dict]]:
    """The episodes without the duplicates, and the duplicates: of the scorable episodes of one
    (model, condition, item), the first in table order is kept, every later one is a duplicate.

    An episode ``scorable`` refuses (excluded under another rule, a failed call) is kept and never
    makes a later one a duplicate: a reply after a failed call is the item's first answer.

    Parameters
    ----------
    episodes : iterable of dict
        Episode rows in table order (``model``, ``condition`` and ``item_key``).
    scorable : callable, optional
        Whether an episode would be scored (or read as unclear): excluded by no other rule.
    item_key : str, optional
        The item's column (``item_id``).

    Returns
    -------
    kept : list of dict
        Every episode but the duplicates, in table order.
    duplicates : list of dict
        The duplicates (rule :data:`DUPLICATE`), in table order.

    References
    ----------
    .. [1] counterfactual paper, §3.9: each model decides each of "the same 507 cases" once.
    """
    kept, duplicates, seen = [], [], set()
    for ep in episodes:
        if scorable(ep):
            key = (ep["model"], ep["condition"], ep[item_key])
            if key in seen:
                duplicates.append(ep)
                continue
            seen.add(key)
        kept.append(ep)
    return kept, duplicates


def duplicate_rejects(duplicates: Iterable[dict], table: str, item_key: str = "item_id") -> list[dict]:
    """One rejects row per duplicate episode (``model/condition/item``, reason ``duplicate_episode``).

    Parameters
    ----------
    duplicates : iterable of dict
        :func:`split_duplicates`' duplicates.
    table : str
        The scores table the episode would have gone into.
    item_key : str, optional
        The item's column (``item_id``).

    Returns
    -------
    list of dict
        ``records.reject_row`` rows, naming the duplicate's run.
    """
    return [records.reject_row(table, "episodes", f"{e['model']}/{e['condition']}/{e[item_key]}", "score", DUPLICATE,
                               f"a second episode of this item in run {e.get('run_id')}; the first is scored "
                               "(runs of different seeds must be distinct models: <arm>@seed<k>)")
            for e in duplicates]


class EmptyTestSet(MedScopeError):
    """The item table holds no item of the test set: every number would be over nothing."""

    def __init__(self, message: str, unit: str = "items"):
        super().__init__(message)
        self.unit = unit

def eval_run_pairs(episodes_uri: str) -> list[tuple[str, str]]:
    """The (model, condition) pairs the eval run's sweep.json accounted for (none without one).

    Parameters
    ----------
    episodes_uri : str
        The eval run's episodes table (or its folder).

    Returns
    -------
    list of tuple of (str, str)
        Each ``by_model_condition`` row's model and condition.
    """
    try:
        summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    except MedScopeError:
        return []
    if not storage.exists(summary):
        return []
    acc = (safe_text.read_json(summary) or {}).get("accounting") or {}
    return [(r["model"], r["condition"]) for r in acc.get("by_model_condition") or []]


def missing_key(cov: dict) -> str:
    """The key of a coverage row's missing item ids: ``missing_<unit>``.

    Parameters
    ----------
    cov : dict
        :func:`coverage`'s result.

    Returns
    -------
    str
        ``missing_`` and the coverage's unit.
    """
    return f"missing_{cov['unit']}"


def coverage(expected: Sequence[str], episodes: Iterable[tuple[str, str]], scored: Iterable[tuple[str, str, str]],
             excluded: Iterable[tuple[str, str, str]], unclear: Iterable[tuple[str, str, str]] = (),
             pairs: Iterable[tuple[str, str]] = (), unit: str = "items", test_set: str = "") -> dict:
    """Every model x condition against the test set's fixed denominator.

    Parameters
    ----------
    expected : sequence of str
        The test set's item ids (its fixed denominator), in the order missing ones are listed.
    episodes : iterable of (str, str)
        The (model, condition) of every episode read whose condition the protocol evaluates (each
        pair is owed every expected item).
    scored : iterable of (str, str, str)
        (model, condition, item id) of each episode scored (counted once per item).
    excluded : iterable of (str, str, str)
        (model, condition, rule) of each episode not scored.
    unclear : iterable of (str, str, str), optional
        (model, condition, item id) of episodes read but in no number (a done unit, never missing).
    pairs : iterable of (str, str), optional
        Further (model, condition) pairs the eval run accounted for (``eval_run_pairs``): a pair
        with no episode at all is missing every item.
    unit : str, optional
        What an item is, plural (``items``, ``photographs``, ``views``): the key of the denominator.
    test_set : str, optional
        The test set's name, for the messages.

    Returns
    -------
    dict
        ``unit``, ``test_set``, ``<unit>`` (the denominator), ``by_model_condition`` (``expected``,
        ``scored``, ``unclear``, ``missing``, ``excluded`` and ``missing_<unit>``, every missing id),
        ``scored``, ``unclear``, ``missing`` (totals), ``excluded`` and ``excluded_by_rule``.

    Raises
    ------
    MedScopeError
        When the test set has no item (nothing to score against).
    """
    order = list(dict.fromkeys(expected))
    if not order:
        raise EmptyTestSet(f"test set {test_set or '(unnamed)'} has no {unit}: nothing to score against", unit)
    ids = set(order)
    keys: set[tuple[str, str]] = {tuple(k) for k in episodes} | {tuple(k) for k in pairs}
    done: dict[tuple[str, str], set] = {}
    for m, c, i in scored:
        if i in ids:
            done.setdefault((m, c), set()).add(i)
    unc: dict[tuple[str, str], set] = {}
    for m, c, i in unclear:
        if i in ids:
            unc.setdefault((m, c), set()).add(i)
    out_by: dict[tuple[str, str], int] = {}
    by_rule: dict[str, int] = {}
    for m, c, rule in excluded:
        out_by[(m, c)] = out_by.get((m, c), 0) + 1
        by_rule[rule] = by_rule.get(rule, 0) + 1
    keys |= set(done) | set(unc)
    rows = []
    for m, c in sorted(keys):
        got = done.get((m, c), set())
        read = unc.get((m, c), set()) - got
        missing = [i for i in order if i not in got and i not in read]
        rows.append({"model": m, "condition": c, "expected": len(order), "scored": len(got), "unclear": len(read),
                     "missing": len(missing), "excluded": out_by.get((m, c), 0), f"missing_{unit}": missing})
    return {"unit": unit, "test_set": test_set, unit: len(order), "by_model_condition": rows,
            "scored": sum(r["scored"] for r in rows), "unclear": sum(r["unclear"] for r in rows),
            "missing": sum(r["missing"] for r in rows), "excluded": sum(by_rule.values()),
            "excluded_by_rule": dict(sorted(by_rule.items()))}


def format_coverage(cov: dict, rules: dict[str, str] | None = None) -> str:
    """The coverage as the lines ``score`` prints: the denominator, the excluded episodes by rule,
    one line per model x condition, and what the missing ones mean.

    Parameters
    ----------
    cov : dict
        :func:`coverage`'s result.
    rules : dict of str to str, optional
        What each exclusion rule means, printed beside its count.

    Returns
    -------
    str
        The lines, joined.
    """
    unit, rules = cov["unit"], rules or {}
    lines = [f"  test set {cov['test_set']}: {cov[unit]} {unit}: every model x condition is scored against these"]
    if cov["excluded"]:
        lines.append(f"  excluded {cov['excluded']} episode(s), not scored: " + ", ".join(
            f"{k} {n}" + (f" ({rules[k]})" if k in rules else "") for k, n in cov["excluded_by_rule"].items()))
    width = max([len(f"{r['model']}:{r['condition']}") for r in cov["by_model_condition"]] + [15])
    lines.append(f"  {'model:condition'.ljust(width)}  scored  unclear  missing  excluded  of")
    for r in cov["by_model_condition"]:
        lines.append(f"  {(r['model'] + ':' + r['condition']).ljust(width)}  {r['scored']:>6}  {r['unclear']:>7}  "
                     f"{r['missing']:>7}  {r['excluded']:>8}  {r['expected']}")
    if cov["missing"]:
        lines.append(f"  {cov['missing']} missing episode(s): failed units against the fixed denominator; no number "
                     f"is over them (rejects: {MISSING})")
    return "\n".join(lines)


def missing_rejects(cov: dict, table: str) -> list[dict]:
    """One rejects row per missing episode (``model/condition/item``, reason ``missing_episode``).

    Parameters
    ----------
    cov : dict
        :func:`coverage`'s result.
    table : str
        The scores table the episode would have gone into.

    Returns
    -------
    list of dict
        ``records.reject_row`` rows.
    """
    key = missing_key(cov)
    return [records.reject_row(table, "episodes", f"{r['model']}/{r['condition']}/{i}", "score", MISSING,
                               f"no episode of this {cov['test_set']} item: a failed unit")
            for r in cov["by_model_condition"] for i in r[key]]


def summary(cov: dict) -> dict:
    """The coverage ``score`` returns: without the missing ids (run.json and the rejects hold them).

    Parameters
    ----------
    cov : dict
        :func:`coverage`'s result.

    Returns
    -------
    dict
        The same, each ``by_model_condition`` row without its ``missing_<unit>`` list.
    """
    key = missing_key(cov)
    return {**{k: v for k, v in cov.items() if k != "by_model_condition"},
            "by_model_condition": [{k: v for k, v in r.items() if k != key} for r in cov["by_model_condition"]]}


def report(cov: dict, rules: dict[str, str] | None = None, file=None) -> None:
    """Print :func:`format_coverage`, as every protocol's ``score`` does.

    Parameters
    ----------
    cov : dict
        :func:`coverage`'s result.
    rules : dict of str to str, optional
        What each exclusion rule means.
    file : file-like, optional
        Where to print (default: stderr).
    """
    print(format_coverage(cov, rules), file=file or sys.stderr, flush=True)
