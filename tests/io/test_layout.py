"""medscope.io.layout: every verb takes the folder a previous verb wrote or the table inside it."""

from __future__ import annotations

import os

import pytest

from medscope.io import layout, records
from medscope.errors import MedScopeError
from medscope.testing.views import write_views


def test_a_folder_or_its_table_reads_the_same(tmp_path):
    build = layout.ViewsBuild(str(tmp_path / "views"))
    write_views(build.views, 3)
    assert build.views == os.path.join(str(tmp_path / "views"), "views.parquet")
    by_folder = records.read_table("views", build.root)
    by_table = records.read_table("views", build.views)
    assert by_folder.equals(by_table) and by_folder.num_rows == 3
    assert layout.folder_of("views", build.views) == build.root == layout.folder_of("views", build.root)


def test_part_file_tables_resolve_inside_their_run(tmp_path):
    run = layout.EvalRun(str(tmp_path / "eval"))
    rows = records.read_table("views", write_views(str(tmp_path / "v.parquet"), 2)).to_pylist()
    records.write_part("rejects", [records.reject_row("views", "s", rows[0]["view_id"], "eval", "why")], run.rejects, "k1")
    # the run folder, the part-file folder and its parent all name the same table
    assert records.read_table("rejects", run.root).num_rows == 1
    assert records.read_table("rejects", run.rejects).num_rows == 1
    assert layout.table_uri("rejects", run.root) == run.rejects
    assert layout.folder_of("rejects", run.rejects) == run.root


def test_cohort_and_scored_run_names(tmp_path):
    c = layout.Cohort(str(tmp_path))
    assert [os.path.basename(p) for p in (c.cases, c.volumes, c.rejects, c.manifest)] == [
        "cases.parquet", "volumes.parquet", "rejects.parquet", "import.json"]
    s = layout.ScoredRun(str(tmp_path))
    assert os.path.basename(s.table("probe_scores")) == "probe_scores.parquet"
    assert layout.ArmsSweep(str(tmp_path)).run("c1", 2).adapter == os.path.join(str(tmp_path), "c1", "seed2", "adapter")


def test_missing_table_is_a_clear_error(tmp_path):
    cohort = layout.Cohort(str(tmp_path / "btcv"))  # a volumes cohort asked for its cases
    records.write_table("rejects", [], cohort.rejects)
    records.write_table("volumes", [], cohort.volumes)
    with pytest.raises(MedScopeError, match=r"no cases table at .* \(a cases table, or a folder holding cases.parquet\)"):
        records.read_table("cases", cohort.root)
    with pytest.raises(MedScopeError, match="no cases table"):
        layout.require("cases", str(tmp_path / "empty"))
    with pytest.raises(MedScopeError, match="no views table"):
        records.read_table("views", str(tmp_path / "nowhere.parquet"))
