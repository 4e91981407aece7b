"""The Ray Data views build: identical across worker counts, resumable after a kill,
bad cases become reasons, splits disjoint by patient and near-copy group."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from medscope.io import records, storage
from medscope.errors import MedScopeError
from medscope.views.recipe import Recipe
from medscope.views.synthetic_cases import blob, case_row, synthetic_cases, tissue
from medscope.views.worker import case_key, parts
from pipelines.views import build_views

RECIPE = Recipe(seed=4)


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    root = tmp_path_factory.mktemp("views-build")
    rows = synthetic_cases(14, seed=2, size=80)
    rng = np.random.default_rng(9)
    bad_small = case_row("bad-small", tissue(rng, 96), blob(96, (48, 48), 2.0))
    bad_corrupt = case_row("bad-corrupt", tissue(rng, 96), blob(96, (48, 48), 6.0))
    bad_corrupt["image"] = b"\x89PNG broken"
    # a near-copy of syn-0000 from another cohort, without a patient id
    copy = dict(rows[0], case_id="other-0000", source="other", patient_id=None)
    uri = str(root / "cases.parquet")
    records.write_table("cases", rows + [bad_small, bad_corrupt, copy], uri)
    return root, uri


def _bytes(out):
    return storage.read_bytes(os.path.join(out, "views.parquet")), storage.read_bytes(os.path.join(out, "rejects.parquet"))


# not slow: the two tests after it resume and guard the output it writes (w2)
def test_build_is_identical_on_one_and_two_workers_and_in_a_plain_loop(ray_cluster, cohort, monkeypatch):
    import pipelines.views

    root, cases = cohort
    s1 = build_views(cases, str(root / "w1"), RECIPE, workers=1, block_rows=2, quiet=True)
    # two workers with Ray blocks of several row groups: 17 cases in 6 row groups of 3, in 2 blocks
    monkeypatch.setattr(pipelines.views, "BLOCKS_PER_WORKER", 1)
    s2 = build_views(cases, str(root / "w2"), RECIPE, workers=2, block_rows=3, quiet=True)
    assert s1["map_timing"]["row_groups_per_block"] == 1 and s2["map_timing"]["row_groups_per_block"] == 3
    build_views(cases, str(root / "loop"), RECIPE, engine="local", quiet=True)
    assert _bytes(root / "w1") == _bytes(root / "w2") == _bytes(root / "loop")
    assert s1["views"] == s2["views"] > 0 and s1["built_now"] == 17

    views = records.read_table("views", str(root / "w1" / "views.parquet")).to_pylist()
    rejects = records.read_table("rejects", str(root / "w1" / "rejects.parquet")).to_pylist()
    reasons = {(r["item_id"], r["reason"]) for r in rejects}
    assert ("bad-small", "lesion_too_small") in reasons
    assert ("bad-corrupt", "unreadable_image") in reasons
    assert not any(v["case_id"].startswith("bad-") for v in views)
    # failed views stay, with a reason
    failed = [v for v in views if not v["passed"]]
    assert failed and all(v["reject_reason"] for v in failed)
    assert all(v["reject_reason"] is None for v in views if v["passed"])
    # one split per near-copy group and per patient; the cross-cohort copy joins syn-0000
    split_of_group, split_of_patient = {}, {}
    for v in views:
        split_of_group.setdefault(v["group_id"], set()).add(v["split"])
        if v["patient_id"]:
            split_of_patient.setdefault((v["source"], v["patient_id"]), set()).add(v["split"])
    assert all(len(s) == 1 for s in split_of_group.values())
    assert all(len(s) == 1 for s in split_of_patient.values())
    group = {v["case_id"]: v["group_id"] for v in views}
    assert group["other-0000"] == group["syn-0000"] == group["syn-0001"]  # syn-0001 shares patient p000
    assert s1["cross_cohort_pairs"] == 1
    kinds = {v["kind"] for v in views}
    assert {"original", "target_removal", "random_removal", "unmatched_control", "degraded", "natural_negative"} <= kinds
    assert all(v["kind"] != "insertion" or v["split"] == "train" for v in views)
    # C1's unmatched edit is a training-arm view (counterfactual paper §3.7), never a test view
    assert all(v["kind"] != "unmatched_control" or v["split"] == "train" for v in views)


def test_a_killed_build_reruns_only_missing_cases(ray_cluster, cohort):
    root, cases = cohort
    out = str(root / "resume")
    shutil.copytree(root / "w2", out)  # a finished build, then parts lost as in a kill
    folders = parts(out)
    victims = ["syn-0003", "syn-0008", "syn-0012"]
    # a kill after the features/rejects parts but before the views part of one case, and
    # before anything of two others
    os.remove(records.part_uri(folders["views"], case_key(victims[0])))
    for cid in victims[1:]:
        for folder in folders.values():
            os.remove(os.path.join(folder, f"part-{case_key(cid)}.parquet"))
    os.remove(os.path.join(out, "views.parquet"))
    stamp = {p: os.stat(os.path.join(folders["views"], p)).st_mtime_ns for p in os.listdir(folders["views"])}
    summary = build_views(cases, out, RECIPE, workers=2, block_rows=2, quiet=True)
    assert summary["built_now"] == 3
    for p, t in stamp.items():
        assert os.stat(os.path.join(folders["views"], p)).st_mtime_ns == t  # untouched
    assert _bytes(out) == _bytes(root / "w1")


def test_another_recipe_cannot_reuse_an_output(ray_cluster, cohort):
    root, cases = cohort
    with pytest.raises(MedScopeError, match="another --out"):
        build_views(cases, str(root / "w1"), Recipe(seed=5), workers=1, quiet=True)


def test_show_export_and_the_job_entry_point(ray_cluster, cohort, tmp_path, capsys):
    import argparse

    from medscope.images import decode_png
    from pipelines import views as views_cli
    from pipelines.support.jobs import job_main
    from pipelines.views import BuildViewsConfig, run

    def main_argv(argv):
        return job_main("views", BuildViewsConfig, run, argv)

    root, cases = cohort
    parser = argparse.ArgumentParser()
    views_cli.register(parser.add_subparsers())
    args = parser.parse_args(["views", "show", str(root / "w1")])
    args.func(args)
    shown = capsys.readouterr().out
    total = records.read_table("views", str(root / "w1" / "views.parquet")).num_rows
    assert f"{total} views" in shown and "lesion_too_small" in shown and "held-out" in shown
    args = parser.parse_args(["views", "export", str(root / "w1"), "--dir", str(tmp_path / "png"), "--n", "2"])
    args.func(args)
    pngs = sorted((tmp_path / "png").iterdir())
    assert len(pngs) == 2
    panel = decode_png(pngs[0].read_bytes())
    assert panel.shape[1] == 3 * 80 + 2 * 4  # three 80 px views side by side
    # python -m pipelines.views --config F, in a plain loop (engine: local)
    cfg = tmp_path / "job.yaml"
    cfg.write_text(f"cases: {cases}\nout: {tmp_path / 'job'}\nengine: local\n")
    assert main_argv(["--config", str(cfg)]) == 0
    assert records.read_table("views", str(tmp_path / "job" / "views.parquet")).num_rows > 0
    cfg.write_text(f"cases: {cases}\nout: {tmp_path / 'job2'}\nrecipe_typo: 1\n")
    assert main_argv(["--config", str(cfg)]) == 2
    assert "recipe_typo" in capsys.readouterr().err


def test_demo_step_builds_views_of_the_cohort(ray_cluster, cohort, tmp_path):
    from pipelines.demo import STEPS, DemoContext, step_views

    root, cases = cohort
    names = [name for name, _ in STEPS]
    assert names.index("counterfactual views") == names.index("phantom cohort") + 1
    ctx = DemoContext(out=str(tmp_path / "demo"))
    ctx.paths["cases"] = cases
    step_views(ctx)
    table = records.read_table("views", ctx.paths["views"])
    assert table.num_rows == ctx.summary["views"]["views"] > 0
    assert set(table.column("tool").to_pylist()) <= {"none", "transplant", "graft"}  # configs/views/demo.yaml


@pytest.mark.slow
def test_build_into_s3(ray_cluster, cohort, s3_bucket):
    root, cases = cohort
    out = f"{s3_bucket}/views"
    summary = build_views(cases, out, RECIPE, workers=2, block_rows=4, quiet=True)
    assert storage.read_bytes(f"{out}/views.parquet") == _bytes(root / "w1")[0]
    assert len(records.part_keys(f"{out}/parts/views")) == summary["cases"]  # rejected cases leave an empty part: done, not redone


@pytest.mark.slow
def test_lama_recipe_on_ray_actors_and_a_clear_error_without_weights(ray_cluster, cohort, tmp_path, monkeypatch):
    import torch

    from medscope.images import decode_mask, decode_png

    root, cases = cohort
    monkeypatch.delenv("LAMA_MODEL", raising=False)
    with pytest.raises(MedScopeError, match="LAMA_MODEL"):
        build_views(cases, str(tmp_path / "nolama"), Recipe(tools=["lama", "transplant"]), workers=1, quiet=True)

    class ConstantFill(torch.nn.Module):
        def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            m = mask.to(image.dtype)
            return image * (1 - m) + 0.5 * m

    weights = tmp_path / "big-lama.pt"
    torch.jit.save(torch.jit.script(ConstantFill()), str(weights))
    recipe = Recipe(tools=["lama", "transplant"], lama_model=str(weights), edit_detector=False)
    build_views(cases, str(tmp_path / "lama"), recipe, workers=2, block_rows=4, quiet=True)
    views = records.read_table("views", str(tmp_path / "lama" / "views.parquet")).to_pylist()
    lama = [v for v in views if v["tool"] == "lama" and v["kind"] == "target_removal"]
    assert lama and {v["tool"] for v in views if v["kind"] == "unmatched_control"} <= {"lama", "transplant"}
    for v in lama:
        assert (decode_png(v["image"], gray=True)[decode_mask(v["edit_mask"])] == 127).all()


@pytest.mark.parametrize("n, workers, per_block", [(2, 2, 1), (60, 2, 3), (240, 2, 4), (240, 1, 4), (15, 1, 1), (0, 2, 1)])
def test_row_groups_per_block_by_hand(n, workers, per_block):
    from pipelines.views import row_groups_per_block

    # n // (8 blocks an actor x actors), between 1 and 4 row groups
    assert row_groups_per_block(n, workers) == per_block


def test_a_cases_table_of_no_rows_is_refused_naming_it(cohort, tmp_path):
    # Fresh campaign (issue 51): a 0-row cases table built 0 views and exited 0, as if read.
    _root, cases = cohort
    empty = str(tmp_path / "nocases.parquet")
    records.write_table("cases", records.read_table("cases", cases).slice(0, 0).to_pylist(), empty)
    with pytest.raises(MedScopeError, match=r"nocases.parquet holds no cases \(0 rows\): no views to build"):
        build_views(empty, str(tmp_path / "v"), RECIPE, engine="local", quiet=True)
    assert not os.path.exists(tmp_path / "v" / "views.parquet")
