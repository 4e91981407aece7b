"""The local HF adapter end to end with the tiny random Qwen2-VL, through the episode loop."""

import os
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from medscope.errors import MedScopeError
from medscope.images import encode_png
from medscope.models.base import Decoding, Message, Part
from medscope.models.local_hf import LocalHFModel, to_hf_chat
from medscope.models.local_kinds import AGENT_MODEL_KINDS
from medscope.models.tiny_vlm import save_tiny_qwen2vl
from medscope.protocols.base import Item
from medscope.protocols.counterfactual.agent_episode import run_episode, run_episodes

DEC = Decoding(max_output_tokens=12)


pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny_qwen2vl(tmp_path_factory.mktemp("tiny") / "qwen2vl", seed=0)


@pytest.fixture(scope="module")
def local(tiny_dir):
    return LocalHFModel("tiny-qwen2vl", str(tiny_dir), batch_size=4)


def _item(seed=0, h=120, w=90, item_id="v"):
    rng = np.random.default_rng(seed)
    return Item(item_id=item_id, case_id="c", question="Is there a nodule?", truth="absent",
                images=(encode_png(rng.integers(0, 256, (h, w), dtype=np.uint8)),),
                meta={"finding": "nodule", "question_kind": "presence"})


def test_to_hf_chat_keeps_image_order():
    png = encode_png(np.zeros((4, 6), np.uint8))
    msgs = [Message.text("system", "S"), Message("user", (Part(png=png), Part(text="Q")))]
    chat, images = to_hf_chat(msgs)
    assert chat[1]["content"] == [{"type": "image"}, {"type": "text", "text": "Q"}]
    assert len(images) == 1 and images[0].size == (6, 4) and images[0].mode == "RGB"


def test_episode_end_to_end_with_tiny_vlm(local):
    res = run_episode(_item(), local, "agent", DEC)
    # A random model writes no action tag: its reply is read as free text like any model's.
    assert res.action in ("answer", "refer", "clarify", "unparseable")
    assert res.model_turns == 1 and res.input_tokens > 50
    assert 1 <= res.output_tokens <= 12
    again = run_episode(_item(), local, "agent", DEC)
    assert again.raw_text == res.raw_text  # greedy: deterministic
    blind = run_episode(_item(), local, "blind", DEC)
    assert blind.input_tokens < res.input_tokens  # no image tokens


def test_batched_generation_matches_one_by_one(local):
    items = [(_item(seed=i, item_id=f"v{i}", h=120 - 20 * i), "agent") for i in range(3)]
    batched = run_episodes(items, local, DEC)
    single = [run_episode(it, local, cond, DEC) for it, cond in items]
    assert [r.raw_text for r in batched] == [r.raw_text for r in single]
    assert [r.input_tokens for r in batched] == [r.input_tokens for r in single]


def test_peft_adapter_is_loaded(tiny_dir, tmp_path, local):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    base = AutoModelForImageTextToText.from_pretrained(tiny_dir)
    torch.manual_seed(1)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                 init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "adapter")
    adapted = LocalHFModel("tiny+lora", str(tiny_dir), adapter=str(tmp_path / "adapter"))
    msgs = [Message("user", (Part(png=_item().images[0]), Part(text="Is there a nodule?")))]
    proc = local.processor
    chat, images = to_hf_chat(msgs)
    text = proc.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    inputs = proc(text=[text], images=images, return_tensors="pt")
    with torch.no_grad():
        a = local.model(**inputs).logits
        b = adapted.model(**inputs).logits
    assert not torch.allclose(a, b)  # the LoRA weights change the output


def test_local_hf_factory_and_missing_checkpoint(tiny_dir, tmp_path):
    m = AGENT_MODEL_KINDS["local_hf"](SimpleNamespace(name="t", model=str(tiny_dir), options={"batch_size": 2}))
    assert m.batch_size == 2 and m.provider == "local" and m.endpoint == "local"
    with pytest.raises(MedScopeError, match="no checkpoint"):
        LocalHFModel("x", str(tmp_path / "nope"))


@pytest.mark.timeout(120)
def test_checkpoint_problems_are_found_from_the_folder(tmp_path):
    import ast

    from medscope.models import checkpoints

    # the written-out architectures are tiny_vlm.ARCHS (read from its source: no torch import)
    src = open(os.path.join(os.path.dirname(checkpoints.__file__), "tiny_vlm.py")).read()
    archs = next(ast.literal_eval(n.value) for n in ast.parse(src).body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "ARCHS")
    assert checkpoints.TINY_ARCHS == archs

    good = tmp_path / "model"
    good.mkdir()
    (good / "config.json").write_text("{}")
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "weights.bin").write_bytes(b"\0")
    assert checkpoints.base_problem("tiny") is None and checkpoints.base_problem("tiny:gemma3") is None
    assert checkpoints.base_problem(str(good)) is None
    assert "does not exist" in checkpoints.base_problem(str(tmp_path / "gone"))
    assert "no config.json" in checkpoints.base_problem(str(empty))
    assert "not a model folder" in checkpoints.base_problem(str(tmp_path / "weights.bin"))
    assert "unknown tiny architecture 'llama'" in checkpoints.base_problem("tiny:llama")
    assert "is a URL" in checkpoints.base_problem("s3://bucket/model")
