"""Training on the real local Ray cluster: a Ray Tune sweep of 2 seeds x 2 arms. Resuming from a
checkpoint on S3 after the run's worker is lost is tested on three nodes in tests/cluster/test_multinode.py."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest
import yaml

from medscope.io import records
from medscope.training.synthetic_views import synthetic_views


@pytest.fixture(scope="module")
def views_uri(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("views") / "views.parquet")
    rows = synthetic_views(6, seed=0) + synthetic_views(3, seed=1, split="validation")
    records.write_table("views", rows, uri)
    return uri


def _recipe(tmp_path, **kw) -> str:
    base = yaml.safe_load(open("configs/train/smoke.yaml"))
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({**base, **kw}))
    return str(path)


@pytest.mark.slow
def test_tune_sweep_of_two_seeds_by_two_arms_trains_evaluates_and_tabulates(ray_cluster, views_uri, tmp_path):
    from pipelines.sweep import SweepJob, run

    arms = yaml.safe_load(open("configs/arms/smoke.yaml"))
    arms["recipe"] = _recipe(tmp_path, max_steps=2, checkpoint_every=2, n_views=8)
    # a named test set scored beside validation (the C1-C4 rules are worded on test sets)
    main_uri = str(tmp_path / "main-views.parquet")
    records.write_table("views", synthetic_views(1, seed=2, split="test"), main_uri)
    arms["eval_test_sets"] = {"main": main_uri}
    arms_path = tmp_path / "arms.yaml"
    arms_path.write_text(yaml.safe_dump(arms))
    out = str(tmp_path / "sweep")
    summary = run(SweepJob(arms=str(arms_path), views=views_uri, out=out, max_concurrent=2))
    assert summary["trials"] == 4 and len(summary["adapters"]) == 4
    pairs = records.read_table("metrics", summary["seed_pairs"]).to_pylist()
    assert {r["model"] for r in pairs} == {"without_cf@seed0", "without_cf@seed1"}
    pooled = records.read_table("metrics", summary["pooled"]).to_pylist()
    assert {(r["model"], r["reference"]) for r in pooled} == {("without_cf", "with_cf:agent")}
    from medscope.analysis.testsets import EVAL_KINDS

    # validation scoring reads the five evaluation kinds only (never unmatched controls / insertions)
    eval_views = [v for v in records.read_table("views", views_uri).to_pylist()
                  if v["split"] == "validation" and v["kind"] in EVAL_KINDS]
    first_case = sorted({v["case_id"] for v in eval_views})[0]
    n_eval = sum(v["case_id"] == first_case for v in eval_views)
    main_views = [v for v in records.read_table("views", main_uri).to_pylist() if v["kind"] in EVAL_KINDS and v["passed"]]
    all_scores = records.read_table("scores", os.path.join(out, "scores.parquet")).to_pylist()
    assert sorted(r["test_set"] for r in all_scores) == sorted(["validation"] * (4 * n_eval) + ["main"] * (4 * len(main_views)))
    # each seed pair is compared on the validation split and on the main test set
    assert {(r["model"], r["test_set"]) for r in pairs} == {(f"without_cf@seed{k}", t) for k in (0, 1) for t in ("validation", "main")}
    for arm in ("with_cf", "without_cf"):
        for seed in (0, 1):
            run_dir = os.path.join(out, arm, f"seed{seed}")
            scores = records.read_table("scores", os.path.join(run_dir, "scores.parquet"))
            assert scores.num_rows == n_eval + len(main_views)
            s = json.load(open(os.path.join(run_dir, "train_summary.json")))
            assert (s["seed"], s["steps"]) == (seed, 2)
            assert os.path.exists(os.path.join(run_dir, "adapter", "adapter_model.safetensors"))
    # the without-CF arm drew only from its allowed kinds; seeds share the draw
    table = pq.read_table(os.path.join(out, "arms_table.parquet")).to_pylist()
    rows = {(r["arm"], r["row"]) for r in table}
    assert {("with_cf", "seed 0"), ("with_cf", "mean"), ("with_cf", "sd"), ("without_cf", "seed 1 - with_cf")} <= rows
    per_seed = {(r["arm"], r["row"]): r["net_utility"] for r in table}
    assert per_seed[("without_cf", "seed 0 - with_cf")] == pytest.approx(per_seed[("without_cf", "seed 0")] - per_seed[("with_cf", "seed 0")])
    mean = (per_seed[("with_cf", "seed 0")] + per_seed[("with_cf", "seed 1")]) / 2
    assert per_seed[("with_cf", "mean")] == pytest.approx(mean)
