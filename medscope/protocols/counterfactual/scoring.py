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
from medscope.analysis import view_metrics as metrics, decision_rules as rules
from medscope.stats import bootstrap as bs
from medscope.stats import labelnoise

PROTOCOL = "counterfactual"


def score_run(episodes_uri: str, views_uri: str, out: str, cost_matrix: str = costs.DEFAULT,
              test_set: str = "main", n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED,
              cluster: str = "case_id", plan: str | None = None, panel: list[str] | None = None,
              min_votes: int | None = None, box_units: str = "pixels") -> dict:
    """Score episodes against views, write scores + metrics (+ manifest) under ``out``.

    ``test_set``: the name the scores carry, the one the eval run evaluated (its protocol
    options, ``medscope score`` passes them on).

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

    Returns
    -------
    dict
        ``scores`` and ``metrics`` (URIs written), ``episodes`` (rows scored), ``rejects``, ``models``,
        ``disputed_cases`` and ``unclear`` (replies read as unclear, left out of every n) (counts).

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
    scores, rejects = rewards.score_episodes(episodes, views, matrix, test_set=test_set, box_units=box_units)
    unclear = rewards.unclear_counts(episodes)
    print(f"  scored {scores.num_rows} episodes ({len(rejects)} rejected) in {time.monotonic() - t0:.1f}s",
          file=sys.stderr, flush=True)
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
    if rejects:
        records.write_table("rejects", rejects, run.rejects)
    manifest = {"protocol": PROTOCOL, "episodes": episodes_uri, "views": views_uri, "cost_matrix": matrix.name, "test_set": test_set,
                "box_units": box_units, "unclear": unclear,
                "n_boot": n_boot, "seed": seed, "cluster": cluster, "disputed_cases": disputed,
                "scored_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    storage.write_text(run.manifest, json.dumps(manifest, indent=2) + "\n")
    print(f"  metrics with {n_boot} case-clustered resamples in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    return {"scores": run.scores, "metrics": run.metrics,
            "episodes": scores.num_rows, "rejects": len(rejects), "models": len(set(scores.column("model").to_pylist())),
            "disputed_cases": len(disputed), "unclear": sum(unclear.values())}
