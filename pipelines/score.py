"""``medscope score``, ``medscope compare``, ``medscope rules``, and ``medscope bench stats``.

A scored run is a folder: ``scores.parquet``, ``metrics.parquet`` (bootstrap intervals),
``comparisons.parquet`` (paired differences, after ``compare``), ``run.json`` (what was scored
and how) and, when a plan is named, ``plan.lock.json``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time

import pandas as pd
import pyarrow as pa

from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.scoring import compare as cmp
from medscope.scoring import costs, metrics, rewards, rules
from medscope.stats import bootstrap as bs
from medscope.stats import labelnoise

RUN_MANIFEST = "run.json"


def sweep_test_set(episodes_uri: str) -> str | None:
    """The test set the sweep that wrote ``episodes_uri`` recorded in its sweep.json, if any."""
    folder = episodes_uri.rstrip("/")
    for cand in (folder, folder.rsplit("/", 1)[0] if "/" in folder else "."):
        uri = storage.join(cand, "sweep.json")
        if storage.exists(uri):
            return json.loads(storage.read_text(uri)).get("test_set")
    return None


def score_run(episodes_uri: str, views_uri: str, out: str, cost_matrix: str = costs.DEFAULT,
              test_set: str | None = None, n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED,
              cluster: str = "case_id", plan: str | None = None, panel: list[str] | None = None,
              min_votes: int | None = None, box_units: str = "pixels") -> dict:
    """Score episodes against views, write scores + metrics (+ manifest) under ``out``."""
    t0 = time.monotonic()
    swept = sweep_test_set(episodes_uri)
    if test_set and swept and test_set != swept:
        raise MedScopeError(f"--test-set {test_set} but the sweep of {episodes_uri} ran test set {swept}")
    test_set = test_set or swept or "main"
    if plan:
        rules.lock_plan(plan, out)
    matrix = costs.load(cost_matrix)
    episodes = records.read_table("episodes", episodes_uri)
    views = records.read_table("views", views_uri)
    if episodes.num_rows == 0:
        raise MedScopeError(f"no episodes in {episodes_uri}")
    scores, rejects = rewards.score_episodes(episodes, views, matrix, test_set=test_set, box_units=box_units)
    print(f"  scored {scores.num_rows} episodes ({len(rejects)} rejected) in {time.monotonic() - t0:.1f}s",
          file=sys.stderr, flush=True)
    disputed: list[str] = []
    if panel:
        disputed = labelnoise.disputed_cases(scores, panel, min_votes)
    table = metrics.compute(scores, n_boot=n_boot, seed=seed, cluster=cluster)
    if disputed:
        clean = metrics.compute(labelnoise.without_cases(scores, disputed), n_boot=n_boot, seed=seed, cluster=cluster)
        clean = clean.to_pandas().assign(test_set=lambda d: d["test_set"] + "-undisputed")
        both = pd.concat([table.to_pandas(), clean], ignore_index=True)
        table = records.to_table("metrics", pa.Table.from_pandas(both, preserve_index=False))
    records.write_table("scores", scores, storage.join(out, "scores.parquet"))
    records.write_table("metrics", table, storage.join(out, "metrics.parquet"))
    if rejects:
        records.write_table("rejects", rejects, storage.join(out, "rejects.parquet"))
    manifest = {"episodes": episodes_uri, "views": views_uri, "cost_matrix": matrix.name, "test_set": test_set,
                "box_units": box_units,
                "n_boot": n_boot, "seed": seed, "cluster": cluster, "disputed_cases": disputed,
                "scored_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    storage.write_text(storage.join(out, RUN_MANIFEST), json.dumps(manifest, indent=2) + "\n")
    print(f"  metrics with {n_boot} case-clustered resamples in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    return {"scores": storage.join(out, "scores.parquet"), "metrics": storage.join(out, "metrics.parquet"),
            "episodes": scores.num_rows, "rejects": len(rejects), "models": len(set(scores.column("model").to_pylist())),
            "disputed_cases": len(disputed)}


def run_folder(uri: str) -> str:
    """The run folder of a metrics / scores URI; a run folder itself is returned as is."""
    uri = uri.rstrip("/")
    if storage.is_dir(uri) and storage.exists(storage.join(uri, "metrics.parquet")):
        return uri
    return uri.rsplit("/", 1)[0] if "/" in uri else "."


def metrics_uri_of(uri: str) -> str:
    """``uri`` itself, or ``<uri>/metrics.parquet`` when ``uri`` is a run folder."""
    folder = uri.rstrip("/")
    if storage.is_dir(folder) and storage.exists(storage.join(folder, "metrics.parquet")):
        return storage.join(folder, "metrics.parquet")
    return uri


def compare_run(metrics_uri: str, reference: str, scores_uri: str | None = None, out: str | None = None,
                n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED, metric_names=cmp.PRIMARY,
                cluster: str = "case_id", breakdowns=(), exclude_disputed: bool = False,
                pools: list[str] | None = None) -> pd.DataFrame:
    folder = run_folder(metrics_uri)
    scores_uri = scores_uri or storage.join(folder, "scores.parquet")
    if not storage.exists(scores_uri):
        raise MedScopeError(f"compare needs the scores beside the metrics ({scores_uri}); pass --scores URI")
    scores = records.read_table("scores", scores_uri)
    if exclude_disputed:
        manifest_uri = storage.join(folder, RUN_MANIFEST)
        disputed = json.loads(storage.read_text(manifest_uri)).get("disputed_cases") if storage.exists(manifest_uri) else None
        if disputed is None:
            raise MedScopeError(f"{folder} records no disputed cases; score it with --panel first")
        scores = labelnoise.without_cases(scores, disputed)
    table = cmp.compare(scores, reference, n_boot=n_boot, seed=seed, metric_names=metric_names,
                        cluster=cluster, breakdowns=breakdowns, pools=cmp.parse_pools(pools))
    out = out or storage.join(folder, "comparisons.parquet")
    records.write_table("metrics", table, out)
    return table.to_pandas()


def format_comparisons(df: pd.DataFrame, adjust: str | None = None, alpha: float = 0.05) -> str:
    """One line per comparison; with ``adjust`` all printed comparisons form one named family
    (Bonferroni threshold alpha/m, or Benjamini-Hochberg q)."""
    from medscope.stats import inference

    df = df[df["breakdown"] == "all"].reset_index(drop=True)
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
        lines.append(f"{ts}: {model} - {ref}: " + "; ".join(cells))
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


def register(sub) -> None:
    p = sub.add_parser("score", help="score episodes against views: rewards, metrics, bootstrap intervals")
    p.add_argument("--episodes", required=True, help="episodes table URI (file or folder of parts)")
    p.add_argument("--views", required=True, help="views table URI")
    p.add_argument("--out", required=True, help="run folder URI (scores.parquet, metrics.parquet, run.json)")
    p.add_argument("--cost-matrix", default=costs.DEFAULT, help=f"one of {', '.join(costs.available())} or a YAML path")
    p.add_argument("--test-set", help="the test set the episodes ran on (default: the sweep's sweep.json, else main)")
    p.add_argument("--n-boot", type=int, default=bs.DEFAULT_B)
    p.add_argument("--seed", type=int, default=bs.DEFAULT_SEED)
    p.add_argument("--cluster", default="case_id", choices=["case_id", "group_id", "patient_id"],
                   help="bootstrap unit: cases (default), near-copy groups or patients")
    p.add_argument("--plan", help="lock this plan's hash into the run (plan.lock.json)")
    p.add_argument("--panel", help="comma-separated consensus panel: also report metrics without disputed negatives")
    p.add_argument("--min-votes", type=int, help="panel votes that make a lesion-free label disputed (default 7/9)")
    p.add_argument("--box-units", default="pixels", choices=list(rewards.BOX_UNITS),
                   help="units of episode boxes: pixels (the table contract) or per_mille (raw 0-1000 replies)")
    p.set_defaults(func=lambda a: _print(score_run(
        a.episodes, a.views, a.out, a.cost_matrix, a.test_set, a.n_boot, a.seed, a.cluster, a.plan,
        a.panel.split(",") if a.panel else None, a.min_votes, a.box_units)))

    p = sub.add_parser("compare", help="paired bootstrap differences of every model against a reference")
    p.add_argument("--metrics", required=True, help="metrics URI of a scored run (its scores.parquet is used)")
    p.add_argument("--reference", required=True, help="MODEL or MODEL:CONDITION")
    p.add_argument("--scores", help="scores URI (default: scores.parquet beside the metrics)")
    p.add_argument("--out", help="where to write the comparisons (default: comparisons.parquet beside the metrics)")
    p.add_argument("--n-boot", type=int, default=bs.DEFAULT_B)
    p.add_argument("--seed", type=int, default=bs.DEFAULT_SEED)
    p.add_argument("--cluster", default="case_id", choices=["case_id", "group_id", "patient_id"])
    p.add_argument("--metric", action="append", help=f"metric(s) to compare (default: {', '.join(cmp.PRIMARY)})")
    p.add_argument("--adjust", choices=["bonferroni", "bh"],
                   help="treat the printed comparisons as one ad-hoc family (the paper's named families: "
                        "`medscope stats family --plan`)")
    p.add_argument("--exclude-disputed", action="store_true",
                   help="rerun without the lesion-free cases the consensus panel disputed (score --panel)")
    p.add_argument("--pool", action="append",
                   help="NAME=MODEL_S0,MODEL_S1,...: also compare the seeds pooled as one model (C4, Table 8)")
    p.set_defaults(func=lambda a: print(format_comparisons(compare_run(
        a.metrics, a.reference, a.scores, a.out, a.n_boot, a.seed, tuple(a.metric or cmp.PRIMARY), a.cluster,
        exclude_disputed=a.exclude_disputed, pools=a.pool), a.adjust)))

    p = sub.add_parser("rules", help="pre-registered decision rules: apply a plan, lock it, print its hash")
    rsub = p.add_subparsers(dest="rules_verb", metavar="ACTION")
    rsub.required = True
    a = rsub.add_parser("apply", help="apply a plan's rules verbatim to metrics (and comparisons) tables")
    a.add_argument("--plan", required=True)
    a.add_argument("--metrics", required=True, nargs="+", help="metrics / comparisons URIs")
    a.add_argument("--lock", help="plan.lock.json URI (default: beside each metrics file)")
    a.add_argument("--unlocked", action="store_true", help="apply although no lock exists (said in the output)")
    a.set_defaults(func=lambda x: print(apply_rules(x.plan, x.metrics, x.lock, x.unlocked)))
    lk = rsub.add_parser("lock", help="record the plan's hash in <run>/plan.lock.json")
    lk.add_argument("--plan", required=True)
    lk.add_argument("--run", required=True)
    lk.set_defaults(func=lambda x: _print(rules.lock_plan(x.plan, x.run)))
    hs = rsub.add_parser("hash", help="print the plan's hash (for an amendment's `hash:`)")
    hs.add_argument("--plan", required=True)
    hs.set_defaults(func=lambda x: print(rules.load_plan(x.plan)[1]))


def _print(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


# --- bench --------------------------------------------------------------------------------------


def bench_stats(args) -> None:
    """2,000 case-clustered resamples of every metric for 16 models on the 1,115-view layout.

    Runs in a child process pinned to one BLAS thread, so the figure is a one-core figure.
    """
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = f"from pipelines.score import _bench_body; _bench_body({bool(getattr(args, 'quick', False))})"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def _bench_body(quick: bool) -> None:
    import numpy as np

    from medscope.scoring import synthetic

    n_boot = 200 if quick else 2000
    views = synthetic.views(219, 288, 170, seed=0)
    episodes = synthetic.episodes(views, synthetic.model_zoo(16), seed=0)
    scores, _ = rewards.score_episodes(episodes, views, costs.load())
    df = scores.to_pandas()
    stats = metrics.sufficient_stats(df)
    n_cases, n_cols = stats.num.shape
    print(f"bench stats: {views.num_rows} views, {n_cases} cases, 16 models, {len(stats.keys)} model x group keys, "
          f"{len(metrics.METRICS)} metrics ({n_cols} ratio terms), B={n_boot}, 1 BLAS thread")

    t0, c0 = time.perf_counter(), time.process_time()
    idx = bs.resample_indices(n_cases, n_boot, 42)
    counts = bs.counts_from_indices(idx, n_cases)
    fast = np.moveaxis(metrics.ratios_to_metrics(bs.ratio_samples(stats.num, stats.den, counts).T, axis=0), -1, 0)
    lo, hi = bs.percentile_ci(fast)
    t_fast, c_fast = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    slow = np.empty_like(fast)
    for b in range(n_boot):  # the obvious loop: gather the resampled cases, sum, divide
        rows = idx[b]
        slow[b] = metrics.metric_values(stats.num[rows].sum(0), stats.den[rows].sum(0))
    lo2, hi2 = bs.percentile_ci(slow)
    t_slow, c_slow = time.perf_counter() - t0, time.process_time() - c0
    same = np.allclose(np.nan_to_num(fast, nan=-9), np.nan_to_num(slow, nan=-9), atol=1e-9)
    print(f"  vectorised (count matrix @ per-case sums): {t_fast:.2f} s wall, {c_fast:.2f} s CPU")
    print(f"  naive per-resample loop:                   {t_slow:.2f} s wall, {c_slow:.2f} s CPU")
    print(f"  ratio: {t_slow / t_fast:.1f}x wall, {c_slow / c_fast:.1f}x CPU; identical resampled metrics: {same}")
