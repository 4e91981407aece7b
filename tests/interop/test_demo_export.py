"""The demo's export step (pipelines/demo.py ``step_export``): the views that passed QC as a Hugging Face
dataset read back with ``datasets``, and an lmms-eval task whose hooks send MedScope's plain condition; on
object storage the dataset is uploaded and no task is written (lmms-eval loads a task from a local folder)."""

from __future__ import annotations

import os

import pytest

from medscope.io import records, storage
from medscope.protocols.counterfactual import prompts
from pipelines.demo import EXPORT_LICENCE, STEP_NAMES, DemoContext, chosen_steps, step_export
from tests.interop.test_lmms_import import _views

datasets = pytest.importorskip("datasets")


def _views_with_a_failed_view(path):
    views = _views(path)
    rows = [{**r, "passed": r["view_id"] != "L0002/random_removal"} for r in views.values()]
    records.write_table("views", rows, str(path))
    return rows


def test_the_step_exports_the_passed_views_both_ways_and_reads_them_back(tmp_path):
    rows = _views_with_a_failed_view(tmp_path / "views.parquet")
    ctx = DemoContext(out=str(tmp_path / "demo"))
    ctx.paths["views"] = str(tmp_path / "views.parquet")
    step_export(ctx)

    # 12 views, one failed QC: 11 exported, split as the table says
    expected = sorted(r["view_id"] for r in rows if r["passed"])
    assert len(expected) == 11
    loaded = datasets.load_from_disk(str(tmp_path / "demo" / "export" / "hf_views"))
    assert sorted(v for split in loaded.values() for v in split["view_id"]) == expected
    by_split = {s: sum(1 for r in rows if r["passed"] and r["split"] == s) for s in {r["split"] for r in rows}}
    assert ctx.summary["export"]["hf"]["splits"] == {s: n for s, n in by_split.items() if n}
    card = (tmp_path / "demo" / "export" / "hf_views" / "README.md").read_text()
    assert f"license: {EXPORT_LICENCE}" in card

    task = tmp_path / "demo" / "export" / "lmms_task"
    assert (task / "medscope_counterfactual.yaml").exists() and (task / "utils.py").exists()
    test_views = [r for r in rows if r["passed"] and r["split"] == "test"]
    assert ctx.summary["export"]["lmms_eval"]["views"] == len(test_views)
    docs = datasets.load_from_disk(str(task / "dataset"))["test"]
    assert sorted(docs["view_id"]) == sorted(r["view_id"] for r in test_views)
    title, text = ctx.report_sections[-1]
    assert title == "Benchmarks that travel"
    assert f"{len(expected)} views that passed QC" in text and "medscope eval import --from lmms-eval" in text
    assert prompts.system_prompt("plain")  # the step itself compared the task's first system prompt with it


def test_on_object_storage_the_dataset_is_uploaded_and_no_task_written(tmp_path, s3_bucket):
    rows = _views_with_a_failed_view(tmp_path / "views.parquet")
    ctx = DemoContext(out=f"{s3_bucket}/demo")
    ctx.paths["views"] = str(tmp_path / "views.parquet")
    step_export(ctx)

    fs, root = storage.filesystem(f"{s3_bucket}/demo/export/hf_views")
    uploaded = [f"s3://{path}" for path in fs.find(root)]
    assert any(u.endswith("README.md") for u in uploaded) and any(u.endswith("dataset_dict.json") for u in uploaded)
    local = tmp_path / "copy"
    for uri in uploaded:
        rel = uri.split("/export/hf_views/", 1)[1]
        os.makedirs(local / os.path.dirname(rel), exist_ok=True)
        (local / rel).write_bytes(storage.read_bytes(uri))
    loaded = datasets.load_from_disk(str(local))
    assert sorted(v for split in loaded.values() for v in split["view_id"]) == sorted(
        r["view_id"] for r in rows if r["passed"])
    assert "lmms_eval" not in ctx.summary["export"] and "export_lmms" not in ctx.paths
    assert "not written here" in ctx.report_sections[-1][1]


def test_the_export_step_needs_only_the_views():
    assert "export" in STEP_NAMES
    assert [title for title, _ in chosen_steps(["export"])] == [
        "phantom cohort", "counterfactual views", "export the views: a Hugging Face dataset and an lmms-eval task"]
