"""The tiny random Qwen2-VL: builds offline, generates on image+text, round-trips through disk."""

import numpy as np
import pickle
import pytest
import torch
from PIL import Image

from medscope.models.tiny_vlm import (
    SPECIAL_TOKENS,
    ImageOnlyQwen2VLProcessor,
    build_tiny_qwen2vl,
    load_processor,
    save_tiny_qwen2vl,
)


pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_qwen2vl(seed=0)


def _chat(processor, image, question):
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    text = processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    return text, processor(text=[text], images=[image], return_tensors="pt")


def _image(seed=0, h=100, w=80):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def test_special_tokens_are_single_tokens(tiny):
    _, proc = tiny
    for tok in SPECIAL_TOKENS:
        ids = proc.tokenizer.encode(tok, add_special_tokens=False)
        assert len(ids) == 1, tok
    text = 'Look. <final>{"action": "answer", "answer": "No"}</final>'
    ids = proc.tokenizer.encode(text, add_special_tokens=False)
    assert proc.tokenizer.decode(ids) == text  # byte-level BPE round-trips any text


def test_image_tokens_match_grid(tiny):
    model, proc = tiny
    text, inputs = _chat(proc, _image(), "Is there a nodule?")
    assert text.endswith("<|im_start|>assistant\n")
    t, h, w = inputs["image_grid_thw"][0].tolist()
    # 100x80 is resized to multiples of patch*merge = 8 within max_pixels 64*64
    assert h * 4 % 8 == 0 and w * 4 % 8 == 0 and (h * 4) * (w * 4) <= 64 * 64
    n_pad = int((inputs["input_ids"][0] == model.config.image_token_id).sum())
    assert n_pad == t * h * w // 4


def test_generate_runs_and_is_greedy_deterministic(tiny):
    model, proc = tiny
    _, inputs = _chat(proc, _image(), "Is there a nodule?")
    with torch.no_grad():
        a = model.generate(**inputs, max_new_tokens=12, do_sample=False)
        b = model.generate(**inputs, max_new_tokens=12, do_sample=False)
    assert a.shape[1] > inputs["input_ids"].shape[1]
    assert torch.equal(a, b)


def test_seed_controls_weights():
    m0, _ = build_tiny_qwen2vl(seed=0)
    m0b, _ = build_tiny_qwen2vl(seed=0)
    m1, _ = build_tiny_qwen2vl(seed=1)
    p0 = dict(m0.named_parameters())
    p1 = dict(m1.named_parameters())
    name = "model.language_model.layers.0.self_attn.q_proj.weight"
    assert name in p0
    assert torch.equal(p0[name], dict(m0b.named_parameters())[name])
    assert not torch.equal(p0[name], p1[name])


def test_save_and_reload_gives_same_generation(tiny, tmp_path):
    from transformers import AutoModelForImageTextToText

    model, proc = tiny
    save_tiny_qwen2vl(tmp_path / "tiny", seed=0)
    model2 = AutoModelForImageTextToText.from_pretrained(tmp_path / "tiny").eval()
    proc2 = load_processor(tmp_path / "tiny")
    assert isinstance(proc2, ImageOnlyQwen2VLProcessor)
    assert proc2.image_processor.patch_size == 4
    _, inputs = _chat(proc, _image(3), "Is the image normal?")
    _, inputs2 = _chat(proc2, _image(3), "Is the image normal?")
    assert torch.equal(inputs["input_ids"], inputs2["input_ids"])
    with torch.no_grad():
        a = model.generate(**inputs, max_new_tokens=8, do_sample=False)
        b = model2.generate(**inputs2, max_new_tokens=8, do_sample=False)
    assert torch.equal(a, b)


def test_processor_pickles(tiny):
    _, proc = tiny
    again = pickle.loads(pickle.dumps(proc))
    assert again.tokenizer.get_vocab() == proc.tokenizer.get_vocab()
