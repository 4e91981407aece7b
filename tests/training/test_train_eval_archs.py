"""Issue 12's done-when, end to end on three architectures: `medscope agent tiny-vlm --arch A
--out DIR` writes a tiny random Qwen2-VL / Qwen2.5-VL / Gemma-3; one recipe trains a LoRA adapter
on it (Qwen2-VL through Ray Train, pipelines/train.py; the other two with the same worker trainer
in this process, below); `medscope eval` (pipelines/eval.py run_sweep, the
protocol's Ray actors) evaluates a `local_hf` entry `model: DIR, options: {adapter: RUN/adapter}`;
the episodes come from the trained adapter, and the prompt the evaluation sent is, token for
token, the prompt training put before the same view's first reply (counterfactual paper §3.5, §4.2)."""

from __future__ import annotations

import os

import pytest
import torch
import yaml
from safetensors.torch import load_file

from medscope.io import records
from medscope.models.base import Completion, Decoding
from medscope.models.config import ModelEntry
from medscope.models.local_hf import from_entry
from medscope.training.synthetic_views import synthetic_views
from medscope.training import trajectories as tj
from medscope.training.vlm import IGNORE, build_base, encode, vision_parameter_names

pytestmark = [pytest.mark.usefixtures("torch_one_thread"), pytest.mark.slow]  # three fits (one on Ray Train) + an eval sweep

KINDS = ["original", "target_removal", "random_removal", "natural_negative"]


@pytest.fixture(scope="module")
def views_uri(tmp_path_factory):
    # training views (train split) and one main-test case (the protocol's items: the test split)
    rows = synthetic_views(3, seed=7) + synthetic_views(1, seed=8, split="test")
    uri = str(tmp_path_factory.mktemp("views") / "views.parquet")
    records.write_table("views", rows, uri)
    return uri


class Scripted:
    """Runs the real evaluation model on every prompt (so its forward pass sees the evaluation's
    tokens) and answers with the training trajectory's reply."""

    provider = endpoint = "local"
    name = "scripted"

    def __init__(self, local, reply: str):
        self.local, self.reply = local, reply

    def complete(self, messages, decoding):
        self.local.complete(messages, decoding)
        return Completion(text=self.reply)


ARCHS = ["qwen2-vl", "qwen2.5-vl", "gemma3"]
# The Ray Train path (pipelines/train.py train_loop_per_worker) is the same code for every
# architecture: what depends on the architecture (the model built from its folder, LoRA targets,
# the chat template, encode, the adapter saved and loaded) is all in the worker trainer. So one
# architecture fits through Ray Train and the others call that worker trainer directly, as the GPU
# check does: a Ray Train fit on two cores is ~20-50 s of process start-up for ~3 s of training
# (docs/testing.md), and Ray Train is fitted again by the Tune sweep, the three-node run and the
# runbook's training smoke.
ON_RAY_TRAIN = {"qwen2-vl"}


def fit_in_process(recipe_path: str, views_uri: str, out: str) -> dict:
    """The summary fields this file reads, from the worker trainer Ray Train runs, without Ray."""
    from medscope.io import layout
    from medscope.training.runner import make_worker_trainer
    from medscope.training.vlm import save_adapter
    from pipelines.train import TrainJob, resolve_recipe

    recipe = resolve_recipe(TrainJob(recipe=recipe_path, views=views_uri, out=out))
    trainer, _ = make_worker_trainer(recipe, records.read_table("views", views_uri))
    trainer.fit(lambda tr, metrics: None)
    adapter = layout.TrainRun(out).adapter
    save_adapter(trainer.peft, adapter)
    return {"steps": trainer.step, "method": recipe.method, "adapter": adapter}


@pytest.fixture(scope="module")
def runs(ray_cluster, views_uri, tmp_path_factory):
    """Per architecture: the tiny-vlm folder (through the CLI) and a recipe trained on it (through
    Ray Train for ``ON_RAY_TRAIN``); then one `medscope eval` sweep of every trained adapter (one
    pool actor: the tiny models load in one process instead of one actor start per model)."""
    from pipelines import cli
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.train import TrainJob
    from pipelines.train import run as train

    root = tmp_path_factory.mktemp("e2e")
    out, entries = {}, []
    for arch in ARCHS:
        base = str(root / arch / "base")
        assert cli.main(["agent", "tiny-vlm", "--arch", arch, "--out", base]) == 0
        recipe = root / arch / "recipe.yaml"
        recipe.write_text(yaml.safe_dump(dict(
            name=f"e2e-{arch}", method="sft", base=base, seed=0, n_views=6, batch_size=2, max_steps=3,
            checkpoint_every=3, lr=5e-2, warmup_frac=0.0, allowed_kinds=KINDS, lora={"r": 4, "alpha": 8, "dropout": 0.0},
            trajectory={"prompt": "agent", "p_paraphrase": 0.0})))
        run_dir = str(root / arch / "run")
        if arch in ON_RAY_TRAIN:
            summary = train(TrainJob(recipe=str(recipe), views=views_uri, out=run_dir))
        else:
            summary = fit_in_process(str(recipe), views_uri, run_dir)
        entry = {"name": f"trained-{arch}", "kind": "local_hf", "model": base, "temperature": 0.0, "max_output_tokens": 6,
                 "placement": "pool", "options": {"adapter": summary["adapter"], "device": "cpu"}}
        entries.append(entry)
        out[arch] = {"base": base, "summary": summary, "entry": entry}
    models = root / "models.yaml"
    models.write_text(yaml.safe_dump({"models": entries}))
    # one model reply per episode: an episode's input tokens are its first prompt's
    sweep = run_sweep(EvalConfig(items=views_uri, models=str(models), out=str(root / "eval"),
                                 protocol_options={"max_turns": 1}, workers=1, concurrency=2))
    assert sweep["failed"] == 0 and sweep["done"] == sweep["units"] > 0
    eps = records.read_table("episodes", sweep["episodes"]).to_pylist()
    for arch in ARCHS:
        out[arch]["episodes"] = {e["item_id"]: e for e in eps if e["model"] == f"trained-{arch}"}
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_recipe_trains_a_lora_adapter_and_it_evaluates_through_medscope_eval(arch, runs, views_uri):
    from pipelines.eval import load_protocol

    run = runs[arch]
    base, summary, episodes = run["base"], run["summary"], run["episodes"]
    assert summary["steps"] == 3 and summary["method"] == "sft"
    protocol = load_protocol("counterfactual", {"max_turns": 1})
    items = {i.item_id: i for i in protocol.load_items(views_uri)}
    assert set(episodes) == set(items)  # an episode of the trained adapter on every main-test item

    # the episodes are the adapter's: the entry loads the trained LoRA weights (B is zero in a
    # fresh LoRA), and the base model's greedy replies to the same items differ from them
    trained = from_entry(ModelEntry.model_validate(run["entry"]))
    saved = load_file(os.path.join(summary["adapter"], "adapter_model.safetensors"))
    loaded = {n: p for n, p in trained.model.named_parameters() if "lora_B" in n}
    saved_b = {k: v for k, v in saved.items() if "lora_B" in k}
    assert len(loaded) == len(saved_b) > 0
    for key, value in saved_b.items():
        match = [p for n, p in loaded.items() if n.replace(".default", "") == key]
        assert len(match) == 1 and torch.equal(match[0].detach(), value) and value.abs().sum() > 0, key
    plain = from_entry(ModelEntry.model_validate({**run["entry"], "name": "base", "options": {"device": "cpu"}}))
    decoding = ModelEntry.model_validate(run["entry"]).decoding()
    base_text = {v: protocol.run_episode(items[v], plain, "agent", decoding).raw_text for v in items}
    assert any(episodes[v]["raw_text"] != base_text[v] for v in items)

    # token identity: the training prompt of a main-test view (its label-derived trajectory, no
    # paraphrase, the agent prompt) against what the trained entry is sent for that view's item
    view = next(v for v in records.read_table("views", views_uri).to_pylist()
                if v["split"] == "test" and v["kind"] == "original")
    traj = tj.build_trajectory(view, seed=0, p_zoom=0.0, p_window=0.0, p_paraphrase=0.0)
    enc = encode(build_base(base), traj.messages)
    labels = enc["labels"]
    first = next(i for i in range(1, len(labels)) if labels[i] != IGNORE and labels[i - 1] == IGNORE)
    # the Ray actor's model was sent the training prompt's number of tokens ...
    assert episodes[view["view_id"]]["input_tokens"] == first
    # ... and the same entry, in this process, is sent exactly the training prompt's tokens
    seen = []
    # generate runs the wrapped model's forward (PEFT injects LoRA into it): hook that module
    hook = trained.model.get_base_model().register_forward_pre_hook(
        lambda mod, args, kw: seen.append(kw["input_ids"][0].clone()) if kw["input_ids"].shape[1] > 1 else None,
        with_kwargs=True)
    try:
        reply = next(m["text"] for m in traj.messages if m["role"] == "assistant")
        protocol.run_episode(items[view["view_id"]], Scripted(trained, reply), "agent", Decoding(max_output_tokens=1))
    finally:
        hook.remove()
    assert len(seen) == 1 and torch.equal(seen[0], enc["input_ids"][:first])
    assert vision_parameter_names(trained.model)  # the vision tower came with the base folder
