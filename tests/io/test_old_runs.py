"""Runs written by the previous release still read, score, resume and compact: the episodes'
``view_id`` column is ``item_id`` now, converted at the reader (``records.RENAMED_COLUMNS``).

The run under ``tests/data/runs/eval-0.1`` was written by 0.1 itself (its README says how)."""

import json
import os
import shutil

import pyarrow.parquet as pq
import pytest

from medscope.io import parts, records, tablescan
from pipelines.cli import main

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "runs", "eval-0.1")
VIEWS = [f"v{i:03d}" for i in range(6)]  # present on the even ones, absent on the odd ones


@pytest.fixture
def old_run(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "run")
    return tmp_path / "run"


def test_the_fixture_is_really_an_old_run():
    part = sorted(os.listdir(os.path.join(FIXTURE, "eval", "episodes")))[0]
    names = pq.read_schema(os.path.join(FIXTURE, "eval", "episodes", part)).names
    assert "view_id" in names and "item_id" not in names


def test_old_episodes_read_with_item_id_whole_by_column_and_by_key(old_run):
    folder = str(old_run / "eval" / "episodes")
    table = records.read_table("episodes", folder)
    assert "view_id" not in table.column_names
    assert sorted(table.column("item_id").to_pylist()) == sorted(VIEWS * 2)
    some = records.read_table("episodes", folder, columns=["model", "item_id"])
    assert some.column_names == ["model", "item_id"] and some.num_rows == 12
    found = list(tablescan.iter_rows("episodes", folder, ["item_id", "model"], where=("item_id", {"v003"})))
    assert sorted(r["model"] for r in found) == ["always-no", "always-yes"]


def test_an_old_run_scores_as_it_did(old_run):
    out = str(old_run / "scored")
    assert main(["score", "--episodes", str(old_run / "eval"), "--views", str(old_run / "views.parquet"),
                 "--out", out, "--n-boot", "20"]) == 0
    scores = records.read_table("scores", out).to_pylist()
    assert sorted(r["view_id"] for r in scores) == sorted(VIEWS * 2)
    metrics = {(r["model"], r["metric"]): r for r in records.read_table("metrics", out).to_pylist()
               if r["breakdown"] == "all"}
    # by hand: the six views are originals of three cases, and an original shows the finding
    # (counterfactual paper §3.8): always claiming it is right on each, never claiming it on none
    assert metrics[("always-yes", "ccr")]["value"] == 1.0
    assert metrics[("always-no", "ccr")]["value"] == 0.0
    assert metrics[("always-yes", "ccr")]["n_cases"] == 3


@pytest.mark.slow
def test_an_old_run_resumes_and_its_mixed_parts_compact(old_run, ray_cluster):
    eval_dir = str(old_run / "eval")
    models = old_run / "models.yaml"
    views = str(old_run / "views.parquet")
    # --append: the old sweep.json names the folder the run was written in, not this copy
    args = ["eval", "run", "--views", views, "--models", str(models), "--workers", "1", "--out", eval_dir, "--append"]
    assert main(args) == 0
    sweep = json.loads((old_run / "eval" / "sweep.json").read_text())
    assert sweep["to_run"] == 0 and sweep["skipped_finished"] == 12  # nothing sent again
    # a third model joins: its parts are written under the new column name, beside the old ones
    models.write_text(models.read_text() + "  - {name: always-refer, kind: policy, model: always_refer, placement: pool}\n")
    assert main(args) == 0
    table = records.read_table("episodes", f"{eval_dir}/episodes")
    assert sorted(table.column("item_id").to_pylist()) == sorted(VIEWS * 3)
    parts.compact(eval_dir)  # one file of old and new parts: each row has one of the two columns
    compacted = records.read_table("episodes", f"{eval_dir}/episodes")
    assert len(parts.visible_files(f"{eval_dir}/episodes")) == 1
    assert sorted(zip(compacted.column("model").to_pylist(), compacted.column("item_id").to_pylist())) == \
        sorted((m, v) for m in ("always-no", "always-refer", "always-yes") for v in VIEWS)
