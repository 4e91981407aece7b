"""Training on any HF VLM (the counterfactual paper §3.5, §4.2, §5.3): tiny random Qwen2-VL,
Qwen2.5-VL and Gemma-3 built offline; the training prompt of an episode is token for token the
prompt evaluation sends; LoRA lands on every language-model linear layer and nowhere else,
found from the model; one SFT step from a recipe whose ``base:`` is a tiny-vlm folder."""

from __future__ import annotations

import copy

import pytest
import torch

from medscope.io import records
from medscope.models.base import Completion, Decoding
from medscope.models.local_hf import LocalHFModel
from medscope.models.tiny_vlm import ARCHS, save_tiny
from medscope.training import runner, trainers
from medscope.training.synthetic_views import synthetic_views
from medscope.training import trajectories as tj
from medscope.training.recipes import LoraSettings, TrainRecipe
from medscope.training.vlm import (
    IGNORE,
    apply_lora,
    build_base,
    collate,
    encode,
    language_linear_modules,
    save_adapter,
    sequence_logps,
    to_messages,
    vision_parameter_names,
)

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def views():
    return synthetic_views(3, seed=7)


@pytest.fixture(scope="module", params=ARCHS)
def folder(request, tmp_path_factory):
    """A tiny-vlm folder as `medscope agent tiny-vlm --arch A --out DIR` writes it."""
    return str(save_tiny(tmp_path_factory.mktemp(request.param.replace(".", "_")), request.param, seed=0))


@pytest.fixture(scope="module")
def vlm(folder):
    return build_base(folder)


class ScriptedReplies:
    """A chat model that runs the real local HF adapter on every prompt evaluation builds (so
    its forward pass sees exactly the evaluation tokens) but answers with written replies, so
    the episode follows a known trajectory."""

    provider, endpoint, name = "local", "local", "scripted"

    def __init__(self, local: LocalHFModel, replies: list[str]):
        self.local, self.replies = local, list(replies)

    def complete(self, messages, decoding):
        self.local.complete(messages, decoding)
        return Completion(text=self.replies.pop(0))


def test_lora_covers_every_language_linear_layer_and_the_vision_side_stays_frozen(vlm):
    base_linear = set(language_linear_modules(vlm.model))
    vision = vision_parameter_names(vlm.model)
    assert base_linear and vision  # both halves exist in every family
    model = apply_lora(copy.deepcopy(vlm.model), LoraSettings(), seed=0)
    lora = {n.removeprefix("base_model.model.") for n, m in model.named_modules() if hasattr(m, "lora_A") and "default" in m.lora_A}
    assert lora == base_linear
    n_layers = vlm.model.config.get_text_config().num_hidden_layers
    for leaf in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        assert sum(n.endswith("." + leaf) for n in lora) == n_layers, leaf
    # the vision towers of these families have q_proj / gate_proj too: none of them is adapted
    vision_linear = {v.rsplit(".", 1)[0] for v in vision} & {n for n, m in vlm.model.named_modules() if isinstance(m, torch.nn.Linear)}
    assert vision_linear and not lora & vision_linear
    named = dict(model.named_parameters())
    assert all(not named["base_model.model." + v].requires_grad for v in vision)
    assert all("lora_" in n for n, p in named.items() if p.requires_grad)


def test_training_prompt_is_token_identical_to_the_evaluation_prompt(vlm, views, tmp_path):
    from medscope.protocols.counterfactual.protocol import CounterfactualProtocol

    view = next(v for v in views if v["kind"] == "original" and v["lesion_bbox"])
    view = dict(view, split="test")  # the protocol's items are the main test set's (counterfactual paper Table 3)
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", [view], uri)
    item = CounterfactualProtocol().load_items(uri)[0]  # the evaluation's item for this view

    # training: a label-derived trajectory with a zoom, through the episode loop
    traj = tj.build_trajectory(view, seed=0, p_zoom=1.0, p_window=0.0, p_paraphrase=0.0)
    replies = [m["text"] for m in traj.messages if m["role"] == "assistant"]
    assert len(replies) == 2 and traj.tools[0].name == "zoom"
    enc = encode(vlm, traj.messages)

    # evaluation: the protocol's episode on the local HF adapter, recording what the model gets:
    # the token ids at the language model's input and the pixels at the vision tower's input
    tower = vlm.model.get_submodule(".".join(vision_parameter_names(vlm.model)[0].split(".")[:2]))
    seen, pixels = [], []
    hooks = [
        vlm.model.register_forward_pre_hook(
            lambda mod, args, kw: seen.append(kw["input_ids"][0].clone()) if kw["input_ids"].shape[1] > 1 else None,
            with_kwargs=True),
        tower.register_forward_pre_hook(lambda mod, args, kw: pixels.append(_first_tensor(args, kw).clone()), with_kwargs=True),
    ]
    try:
        local = LocalHFModel("tiny", path="", model=vlm.model, processor=vlm.processor, device="cpu")
        result = CounterfactualProtocol().run_episode(item, ScriptedReplies(local, replies), "agent", Decoding(max_output_tokens=1))
        eval_pixels = pixels[0]  # turn 1: the case image only
        pixels.clear()
        with torch.no_grad():
            sequence_logps(vlm.model, collate(vlm, [enc]))
    finally:
        for h in hooks:
            h.remove()
    assert result.tool_calls == 1 and len(seen) == 3  # a prompt per assistant turn, then training's forward

    ids, labels = enc["input_ids"], enc["labels"]
    assert torch.equal(seen[2], ids)
    turn_starts = [i for i in range(1, len(labels)) if labels[i] != IGNORE and labels[i - 1] == IGNORE]
    assert len(turn_starts) == 2
    for p, start, reply in zip(seen[:2], turn_starts, replies):
        assert torch.equal(ids[: len(p)], p)  # token for token what evaluation sent
        assert start == len(p)  # and training's targets begin where evaluation starts generating
        n = len(vlm.tokenizer(reply, add_special_tokens=False)["input_ids"])
        assert vlm.tokenizer.decode(ids[start : start + n]).strip() == reply.strip()
    # the vision tower sees the same case image in training as in evaluation (then the zoom crop)
    assert len(pixels) == 1 and torch.equal(pixels[0][: len(eval_pixels)], eval_pixels)
    assert len(pixels[0]) > len(eval_pixels)


def _first_tensor(args, kw):
    return next(v for v in list(args) + list(kw.values()) if torch.is_tensor(v))


def test_one_sft_step_from_a_tiny_vlm_folder_and_its_adapter_loads_for_evaluation(folder, views, tmp_path):
    recipe = TrainRecipe.model_validate(dict(
        name="one-step", base=folder, n_views=4, batch_size=2, max_steps=1, lr=1e-2, warmup_frac=0.0,
        allowed_kinds=["original", "target_removal", "random_removal", "natural_negative"],
        trajectory={"prompt": "short"}, lora={"r": 4, "alpha": 8, "dropout": 0.0}))
    vlm, model = runner.build_model(recipe)
    examples, info = runner.build_examples(recipe, records.to_table("views", views), vlm, model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    tr = trainers.SFTTrainer(vlm, model, recipe, examples)
    hist = tr.fit()
    assert tr.step == 1 and len(hist) == 1 and torch.isfinite(torch.tensor(hist[0]["loss"]))
    after = dict(model.named_parameters())
    changed = {n for n in before if not torch.equal(before[n], after[n].detach())}
    assert changed and all("lora_" in n for n in changed)  # only the adapter moved
    assert any("lora_B" in n for n in changed)

    # the adapter loads where evaluation loads it (kind local_hf: base folder + adapter folder)
    adapter = tmp_path / "adapter"
    save_adapter(model, str(adapter))
    local = LocalHFModel("trained", folder, adapter=str(adapter), device="cpu")
    loaded = dict(local.model.named_parameters())
    for n in changed:
        assert torch.equal(loaded[n].detach(), after[n].detach()), n
    reply = local.complete(to_messages(traj_messages(views[0])[:2]), Decoding(max_output_tokens=4))
    assert reply.input_tokens > 0 and reply.output_tokens >= 1


def traj_messages(view):
    return tj.build_trajectory(view, seed=0, p_paraphrase=0.0, system=tj.SHORT_PROMPT).messages

