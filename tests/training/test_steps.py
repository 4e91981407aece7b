"""Steps, data and schedule of the shipped recipes (counterfactual paper §3.5, §3.7): stage 1's batch derived
from the paper's 3,706 steps, and each recipe trained (tiny model, small data, everything else as
shipped) with its summary and per-step log written as a run writes them and read back."""

from __future__ import annotations

import json
import math

import pytest

from medscope.io import layout, records
from medscope.training import data, runner
from medscope.training.synthetic_views import synthetic_views
from medscope.training.recipes import TrainRecipe, load_recipe

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_stage_1_batch_is_the_one_the_papers_3706_steps_allow():
    # §3.5: 16,000 views drawn once, one pass, 3,706 optimiser steps, lesions under 2% twice.
    # By hand: ceil((16,000 + s) / B) = 3,706 needs 3,705·B < 16,000 + s <= 3,706·B.
    every = data.effective_batches_for(16000, 3706, small_repeat=2)
    assert every == {5: (2526, 2530), 6: (6231, 6236), 7: (9936, 9942), 8: (13641, 13648)}
    # Figure 3: lesion-area quartiles 0-1.8%, 1.8-4.2%, 4.2-8.4%, 8.4-20% (main test). With areas
    # spread evenly inside the second quartile, the share of lesion cases under 2% is
    # 0.25 + 0.25 * (2.0 - 1.8) / (4.2 - 1.8); no more of the views than that can be small-lesion views.
    small_share = 0.25 + 0.25 * (2.0 - 1.8) / (4.2 - 1.8)
    assert small_share == pytest.approx(0.2708, abs=1e-4)
    assert data.effective_batches_for(16000, 3706, 2, small_share) == {5: (2526, 2530)}
    stage1 = load_recipe("configs/train/stage1_sft.yaml")
    assert stage1.batch_size * stage1.grad_accum == 5 and stage1.n_views == 16000 and stage1.epochs == 1
    assert (stage1.trajectory.small_frac, stage1.trajectory.small_repeat) == (0.02, 2)
    # the trainer's own count on a 16,000-view draw holding s small-lesion views (the recipe's
    # repeat rule, then its one-pass step count)
    t = stage1.trajectory
    for s, steps in ((2525, 3705), (2526, 3706), (2528, 3706), (2530, 3706), (2531, 3707)):
        views = [{"view_id": f"v{i}", "kind": "original", "expected": "present", "lesion_bbox": [0, 0, 1, 1],
                  "lesion_area_frac": 0.01 if i < s else 0.05} for i in range(16000)]
        examples = data.with_repeats(views, t.small_frac, t.small_repeat)
        assert len(examples) == 16000 + s and data.one_pass_steps(len(examples), stage1) == steps


def _vqa_uri(tmp_path, png):
    rows = [{"item_id": f"q{i}", "source": "vqa-rad", "split": "train", "image_file": f"f{i}.png", "image": png,
             "question": q, "answer": a, "answer_type": "closed", "private": False}
            for i, (q, a) in enumerate([("Is the lung healthy?", "Yes"), ("Is the lung healthy?", "No"),
                                        ("Is there a mass?", "No"), ("Is there a mass?", "yes"), ("What organ?", "Lung")] * 2)]
    uri = str(tmp_path / "vqa.parquet")
    records.write_table("vqa_items", rows, uri)
    return uri


def _scaled(path: str, vqa_uri: str) -> TrainRecipe:
    """The shipped recipe with the tiny model and a small data size; its method, kinds, batch,
    accumulation, epochs, learning rate and warm-up untouched."""
    raw = load_recipe(path).model_dump()
    raw.update(base="tiny", init_adapter=None, lora={"r": 2, "alpha": 4, "dropout": 0.0}, trajectory={**raw["trajectory"], "prompt": "short"},
               checkpoint_every=1000)
    if raw["method"] == "sft":
        raw["n_views"] = 6
        raw["max_steps"] = None
    if raw["method"] == "replay":
        raw["replay"] = {**raw["replay"], "n_items": 10, "eval_views": {},
                         "question_sets": {k: {"items": vqa_uri, "share": 1} for k in raw["replay"]["question_sets"]}}
    return TrainRecipe.model_validate(raw)


def _expected_examples(recipe: TrainRecipe, views: list[dict]) -> int:
    """Worked out from the view rows by the paper's rules, not by the data functions."""
    allowed = [v for v in views if v["kind"] in recipe.allowed_kinds and v["split"] == "train"]
    if recipe.method == "sft":  # the n drawn views once each, lesions under 2% twice
        drawn = data.fixed_draw(allowed, recipe.n_views, recipe.draw_seed)
        assert len(drawn) == recipe.n_views
        return len(drawn) + sum(1 for v in drawn if v["lesion_bbox"] and v["lesion_area_frac"] < 0.02)
    if recipe.method == "dpo":  # erased, unedited lesion (and insertion), lesion-free closed question
        return sum(1 for v in allowed if v["kind"] in ("target_removal", "natural_negative")
                   or (v["kind"] in ("original", "insertion") and v["expected"] == "present"))
    if recipe.method == "paired_view":  # cases with O, C and E
        return len({v["case_id"] for v in allowed if v["kind"] == "original"})
    return recipe.replay.n_items


@pytest.mark.parametrize("path", ["configs/train/stage1_sft.yaml", "configs/train/stage3_replay.yaml",
                                  "configs/train/dpo_c2.yaml", "configs/train/dpo_c3.yaml", "configs/train/paired_c4.yaml",
                                  "configs/train/paired_c4_control.yaml", "configs/train/smoke.yaml"])
def test_recipe_states_its_data_steps_and_schedule_and_the_run_logs_show_them(path, tmp_path):
    views = synthetic_views(4, seed=2)
    recipe = _scaled(path, _vqa_uri(tmp_path, views[0]["image"]))
    trainer, info = runner.make_trainer(recipe, records.to_table("views", views))
    trainer.fit()
    from pipelines.train import run_summary, write_run_records

    out = str(tmp_path / "run")
    write_run_records(out, run_summary(recipe, trainer, info), trainer.history)
    summary = json.loads(open(layout.TrainRun(out).summary).read())
    log = [json.loads(line) for line in open(layout.TrainRun(out).log)]
    n = _expected_examples(recipe, views)
    b = recipe.batch_size * recipe.grad_accum
    steps = math.ceil(n / b) * recipe.epochs
    # data: what the recipe draws; steps: one pass at its batch x accumulation
    assert summary["examples"] == n and {h["examples"] for h in log} == {n}
    assert summary["steps"] == summary["total_steps"] == steps == len(log) == log[-1]["step"]
    assert (summary["batch_size"], summary["grad_accum"], summary["lr"]) == (recipe.batch_size, recipe.grad_accum, recipe.lr)
    # schedule: linear warm-up over max(1, int(warmup_frac x steps)) steps, then linear decay to 0
    warm = max(1, int(recipe.warmup_frac * steps)) if recipe.warmup_frac else 0
    want = [recipe.lr * ((k + 1) / warm if k < warm else (steps - k) / max(1, steps - warm)) for k in range(steps)]
    assert [h["lr"] for h in log] == pytest.approx(want)
    assert summary["allowed_kinds"] == load_recipe(path).allowed_kinds
    if recipe.method == "replay":
        assert sum(summary["vqa_by_set"].values()) == round(recipe.replay.vqa_share * 10) and summary["absent_share"] >= 0.35


@pytest.mark.parametrize("bad", [0, -3])
def test_a_max_steps_below_one_is_refused_naming_it(bad):
    # issue 51 (seventh campaign): `--overrides {max_steps: -3}` was accepted (no bound), a run of no step
    from medscope.errors import MedScopeError
    from pipelines.train import TrainJob, resolve_recipe
    job = TrainJob(recipe="configs/train/smoke.yaml", views="unused", out="unused", overrides={"max_steps": bad})
    with pytest.raises(MedScopeError, match=r"smoke\.yaml.*max_steps.*greater than or equal to 1"):
        resolve_recipe(job)
    job = TrainJob(recipe="configs/train/smoke.yaml", views="unused", out="unused", overrides={"max_steps": 1})
    assert resolve_recipe(job).max_steps == 1
