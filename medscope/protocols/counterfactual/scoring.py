"""Scoring of the counterfactual protocol (counterfactual paper §3.4, §3.8-§3.9): per-view rewards under a
cost matrix, the §3.8 metrics with case-clustered bootstrap intervals, an optional consensus
panel's undisputed re-run, and the scored run's manifest."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time

import pandas as pd
import pyarrow as pa

from medscope.io import layout, records, storage
from medscope.errors import MedScopeError
from medscope.protocols.counterfactual import costs, rewards
from medscope.protocols import denominators as den
from medscope.analysis import view_metrics as metrics, decision_rules as rules, testsets
from medscope.stats import bootstrap as bs
from medscope.stats import labelnoise

PROTOCOL = "counterfactual"


def test_set_views(views: pa.Table, test_set: str, splits: tuple[str, ...],
                   tools: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The views of a test set, recomputed from a views table by the rule ``eval run`` selects
    its items with (``testsets.outside_reason``): the fixed denominator every model is scored against.

    Parameters
    ----------
    views : pyarrow.Table
        A views table.
    test_set : str
        The test set's name.
    splits : tuple of str
        The splits it reads.
    tools : tuple of str, optional
        The tools whose edits it reads; None: every tool.

    Returns
    -------
    pandas.DataFrame
        ``view_id``, ``case_id``, ``kind`` and ``critical`` of each of its views, once each.

    References
    ----------
    .. [1] counterfactual paper, §3.3, §4.1, Tables 3-5.
    """
    vw = views.select(["view_id", "case_id", "kind", "passed", "split", "tool", "reject_reason", "critical"]).to_pandas(use_threads=False)
    vw = vw.drop_duplicates("view_id")
    keep = [testsets.outside_reason(r, test_set, splits, tools) is None for r in vw.to_dict("records")]
    return vw.loc[keep, ["view_id", "case_id", "kind", "critical"]].reset_index(drop=True)


def coverage(expected: pd.DataFrame, episodes: pa.Table, scores: pa.Table, rejects: list[dict],
             pairs: list[tuple[str, str]] = (), test_set: str = "main") -> dict:
    """Every model x condition against the test set's fixed denominator: views scored, read as
    unclear, and missing (no episode: a failed unit), with the episodes excluded by rule.

    Parameters
    ----------
    expected : pandas.DataFrame
        The test set's views (``test_set_views``).
    episodes : pyarrow.Table
        The episodes table.
    scores : pyarrow.Table
        The scores ``rewards.score_episodes`` gave.
    rejects : list of dict
        Its rejects rows (the excluded episodes, by reason).
    pairs : list of tuple of (str, str), optional
        Further (model, condition) pairs that should have episodes (the eval run's accounting):
        a pair with none at all is missing every view.
    test_set : str, optional
        The test set's name.

    Returns
    -------
    dict
        ``denominators.coverage``'s result (unit ``views``; each row with ``excluded``) and ``cases``, ``by_kind`` (the denominator), ``critical_cases`` (lesion cases whose
        missed finding costs Table 2's critical penalty), ``by_model_condition`` (``expected``,
        ``scored``, ``unclear``, ``missing``, ``missing_views``: every missing view id), ``scored``,
        ``unclear``, ``missing`` (totals) and ``excluded`` / ``excluded_by_rule`` (episodes not
        scored, by rejects reason).

    References
    ----------
    .. [1] counterfactual paper, §3.9 ("the same 507 cases"), Table 5.
    """
    sc = scores.select(["model", "condition", "view_id"]).to_pandas(use_threads=False)
    ep = episodes.select(["model", "condition", "item_id", "action"]).to_pandas(use_threads=False)
    keys = sorted({(m, c) for m, c in ep[["model", "condition"]].drop_duplicates().itertuples(index=False)})
    unc = ep[ep["action"] == "unclear"]
    cov = den.coverage(list(expected["view_id"]), keys, zip(sc["model"], sc["condition"], sc["view_id"]),
                       [(*_pair_of(r["item_id"], keys), r["reason"]) for r in rejects],
                       zip(unc["model"], unc["condition"], unc["item_id"]), pairs, unit="views", test_set=test_set)
    answerable = expected[expected["kind"].isin(("original", "random_removal"))]
    critical_cases = int(answerable.loc[answerable["critical"].fillna(False).astype(bool), "case_id"].nunique())
    return {**cov, "cases": int(expected["case_id"].nunique()), "critical_cases": critical_cases,
            "by_kind": {k: int(n) for k, n in expected["kind"].value_counts().reindex(testsets.EVAL_KINDS).dropna().items()}}


def _pair_of(item_id: str, keys: list[tuple[str, str]]) -> tuple[str, str]:
    """The (model, condition) of a rejects row's ``model/condition/view`` id (model names may hold '/')."""
    found = [k for k in keys if item_id.startswith(f"{k[0]}/{k[1]}/")]
    return max(found, key=lambda k: len(k[0]) + len(k[1])) if found else ("?", "?")


def format_coverage(cov: dict, test_set: str) -> str:
    """The coverage as the lines ``score`` prints: the denominator, the excluded episodes by
    rule, then one line per model x condition.

    Parameters
    ----------
    cov : dict
        ``coverage``'s result.
    test_set : str
        The test set's name.

    Returns
    -------
    str
        The lines, joined.
    """
    kinds = ", ".join(f"{k} {n}" for k, n in cov["by_kind"].items())
    header = [f"  test set {test_set}: {cov['views']} views of {cov['cases']} cases ({kinds}): every model x "
              "condition is scored against these",
              # which findings are critical is the cohort config's declaration (an addition: the paper lists none)
              f"  {cov['critical_cases']} critical lesion case(s): a missed finding there costs Table 2's critical "
              "penalty; the paper does not list critical findings, the cohort's config declares them "
              "(critical_findings)"]
    return "\n".join(header + den.format_coverage(cov).splitlines()[1:])


def score_run(episodes_uri: str, views_uri: str, out: str, cost_matrix: str = costs.DEFAULT,
              test_set: str = "main", n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED,
              cluster: str = "case_id", plan: str | None = None, panel: list[str] | None = None,
              min_votes: int | None = None, box_units: str = "pixels", splits: tuple[str, ...] | None = None,
              tools: tuple[str, ...] | None = None) -> dict:
    """Score episodes against the test set recomputed from the views table; write scores +
    metrics (+ rejects, manifest) under ``out``.

    ``test_set``: the test set the eval run evaluated (its protocol options, ``medscope score``
    passes them on). Its views are recomputed from ``views_uri`` (``test_set_views``): an episode
    outside it is excluded under its rule, a view without an episode is a missing unit
    (``coverage``, recorded in run.json and returned; ``medscope score`` decides its exit code
    from it).

    Parameters
    ----------
    episodes_uri : str
        The episodes table.
    views_uri : str
        The views table.
    out : str
        The scored-run folder written.
    cost_matrix : str, optional
        A cost matrix's name or YAML path (:func:`costs.load`).
    test_set : str, optional
        The name the scores carry.
    n_boot : int, optional
        Bootstrap resamples of the intervals.
    seed : int, optional
        Seed of the resampling.
    cluster : str, optional
        The scores column whose clusters are resampled: ``case_id``, ``group_id`` or ``patient_id``.
    plan : str, optional
        A plan file whose hash is recorded under ``out`` (``plan.lock.json``) before scoring.
    panel : list of str, optional
        Models of a consensus panel; metrics are computed again without the cases they dispute, under
        test set ``<test_set>-undisputed``.
    min_votes : int, optional
        Panel votes that make a case disputed (``labelnoise.disputed_cases``).
    box_units : {'pixels', 'per_mille'}, optional
        The units of the episodes' boxes.
    splits : tuple of str, optional
        The splits the test set reads (default: its own, ``testsets.splits_of``).
    tools : tuple of str, optional
        The tools whose edits it reads (default: its own, ``testsets.tools_of``).

    Returns
    -------
    dict
        ``scores`` and ``metrics`` (URIs written), ``episodes`` (rows scored), ``rejects``, ``models``,
        ``disputed_cases`` and ``unclear`` (replies read as unclear, left out of every n) (counts);
        ``coverage`` (``coverage``'s totals and per model x condition rows, without the missing
        view ids, which run.json and the rejects hold).

    Raises
    ------
    MedScopeError
        When there are no episodes, the cost matrix is unknown or ``box_units`` is invalid.

    References
    ----------
    .. [1] counterfactual paper, §3.4, §3.8-§3.9.
    """
    t0 = time.monotonic()
    if plan:
        rules.lock_plan(plan, out)
    matrix = costs.load(cost_matrix)
    episodes = records.read_table("episodes", episodes_uri)
    views = records.read_table("views", views_uri)
    if episodes.num_rows == 0:
        raise MedScopeError(f"no episodes in {episodes_uri}")
    splits = testsets.splits_of(test_set) if splits is None else tuple(splits)
    tools = testsets.tools_of(test_set) if tools is None else tools
    scores, rejects = rewards.score_episodes(episodes, views, matrix, test_set=test_set, box_units=box_units,
                                             splits=splits, tools=tools)
    expected = test_set_views(views, test_set, splits, tools)
    cov = coverage(expected, episodes, scores, rejects, den.eval_run_pairs(episodes_uri), test_set)
    unclear = rewards.unclear_counts(episodes, set(expected["view_id"]))
    print(f"  scored {scores.num_rows} episodes ({len(rejects)} excluded) in {time.monotonic() - t0:.1f}s",
          file=sys.stderr, flush=True)
    print(format_coverage(cov, test_set), file=sys.stderr, flush=True)
    missing_rows = den.missing_rejects(cov, "scores")
    if unclear:
        print(f"  {sum(unclear.values())} replies read as unclear, left out of every n: "
              + ", ".join(f"{k} {v}" for k, v in unclear.items()), file=sys.stderr, flush=True)
    disputed: list[str] = []
    if panel:
        disputed = labelnoise.disputed_cases(scores, panel, min_votes)
    table = metrics.compute(scores, n_boot=n_boot, seed=seed, cluster=cluster)
    if disputed:
        clean = metrics.compute(labelnoise.without_cases(scores, disputed), n_boot=n_boot, seed=seed, cluster=cluster)
        clean = clean.to_pandas(use_threads=False).assign(test_set=lambda d: d["test_set"] + "-undisputed")
        both = pd.concat([table.to_pandas(use_threads=False), clean], ignore_index=True)
        table = records.to_table("metrics", pa.Table.from_pandas(both, preserve_index=False))
    run = layout.ScoredRun(out)
    records.write_table("scores", scores, run.scores)
    records.write_table("metrics", table, run.metrics)
    if rejects or missing_rows:
        records.write_table("rejects", rejects + missing_rows, run.rejects)
    manifest = {"protocol": PROTOCOL, "episodes": episodes_uri, "views": views_uri, "cost_matrix": matrix.name, "test_set": test_set,
                "splits": list(splits), "tools": list(tools) if tools else None, "coverage": cov,
                "box_units": box_units, "unclear": unclear,
                "n_boot": n_boot, "seed": seed, "cluster": cluster, "disputed_cases": disputed,
                "scored_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    storage.write_text(run.manifest, json.dumps(manifest, indent=2) + "\n")
    print(f"  metrics with {n_boot} case-clustered resamples in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    return {"scores": run.scores, "metrics": run.metrics,
            "episodes": scores.num_rows, "rejects": len(rejects), "models": len(set(scores.column("model").to_pylist())),
            "disputed_cases": len(disputed), "unclear": sum(unclear.values()),
            "coverage": den.summary(cov)}
