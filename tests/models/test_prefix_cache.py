"""Shared-prefix KV caching in the local HF adapter (medscope/models/prefix_cache.py), per tiny
architecture: batched replies, token counts and first-step logits equal to one-by-one generation
without the cache, the cache computed once for consecutive batches and never reused for a
different prefix, and the plain path where the cache would not be exact."""

import numpy as np
import pytest
import torch

from medscope.images import encode_png
from medscope.models.base import Decoding, Message, Part
from medscope.models.local_hf import LocalHFModel, render_chat
from medscope.models.prefix_cache import MIN_PREFIX, common_prefix_length
from medscope.models.tiny_vlm import ARCHS, build_tiny

pytestmark = pytest.mark.usefixtures("torch_one_thread")

DEC = Decoding(max_output_tokens=6)
SYSTEM = ("You are a careful radiologist. Look at the image and answer the question. The question may "
          "name a finding that is absent. Use the tools zoom and window at most three times.")
OTHER_SYSTEM = ("Answer briefly. Chest x-ray CT MRI ultrasound fundus dermoscopy histology lung liver "
                "kidney brain heart opacity consolidation cardiomegaly atelectasis edema hemorrhage.")


def _png(seed, h, w=48):
    return encode_png(np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8))


def _first_turn(seed, h=64, question="Is there a nodule?", system=SYSTEM):
    return [Message.text("system", system),
            Message("user", (Part(png=_png(seed, h)), Part(text=question)))]


def _multi_turn(seed, h, reply, follow_up):
    return _first_turn(seed, h) + [Message.text("assistant", reply),
                                   Message("user", (Part(png=_png(seed + 7, h // 2)), Part(text=follow_up)))]


@pytest.fixture(scope="module", params=ARCHS)
def pair(request):
    """(cached, plain): one tiny model behind the adapter with and without the prefix cache."""
    model, processor = build_tiny(request.param, seed=0)
    cached = LocalHFModel("t", "in-memory", model=model, processor=processor, batch_size=8)
    plain = LocalHFModel("t", "in-memory", model=model, processor=processor, batch_size=8, prefix_cache=False)
    return request.param, cached, plain


def _record_scores(local):
    """Have the adapter's ``generate`` also return each step's logits; returns the list they go to."""
    seen, generate = [], local.model.generate

    def wrapped(**kw):
        out = generate(**kw, output_scores=True, return_dict_in_generate=True)
        seen.append(out.scores[0].clone())  # logits of the first new token, (batch, vocab)
        return out.sequences

    local.model.generate = wrapped
    return seen


def _one_by_one(plain, convs):
    scores = _record_scores(plain)
    try:
        replies = [plain.complete(c, DEC) for c in convs]
    finally:
        del plain.model.generate
    return replies, torch.cat(scores)


def _batched(cached, convs):
    scores = _record_scores(cached)
    try:
        replies = cached.complete_batch(convs, DEC)
    finally:
        del cached.model.generate
    return replies, torch.cat(scores)


def _assert_same(batched, single):
    (b, b_scores), (s, s_scores) = batched, single
    assert [c.text for c in b] == [c.text for c in s]
    assert [(c.input_tokens, c.output_tokens, c.finish_reason) for c in b] == \
           [(c.input_tokens, c.output_tokens, c.finish_reason) for c in s]
    # the logits, not only their argmax: a wrong position or mask moves them far more than this
    assert torch.allclose(b_scores, s_scores, atol=1e-4, rtol=1e-4)


def test_common_prefix_length():
    rows = [torch.tensor([5, 6, 7, 8]), torch.tensor([5, 6, 9]), torch.tensor([5, 6, 7])]
    assert common_prefix_length(rows) == 2
    assert common_prefix_length([torch.tensor([1, 2]), torch.tensor([1, 2])]) == 2
    assert common_prefix_length([torch.tensor([1]), torch.tensor([2])]) == 0


def test_first_turn_batch_equals_one_by_one_and_reuses_the_prefix(pair):
    arch, cached, plain = pair
    cached.clear_prefix_cache()
    # Qwen: different image sizes -> different suffix lengths (pads in the middle). Gemma-3 resizes
    # every image to 32 px, so its rows here have equal lengths and need no pads.
    convs = [_first_turn(i, h=64 + 24 * i) for i in range(3)]
    lengths = [plain.complete(c, DEC).input_tokens for c in convs]
    assert (len(set(lengths)) > 1) == (arch != "gemma3")
    before = cached.prefix_forwards
    _assert_same(_batched(cached, convs), _one_by_one(plain, convs))
    assert cached.prefix_forwards == before + 1
    # the next batch with the same instructions (other images) reuses the stored cache
    more = [_first_turn(10 + i, h=64 + 8 * i) for i in range(2)]
    _assert_same(_batched(cached, more), _one_by_one(plain, more))
    assert cached.prefix_forwards == before + 1


def test_multi_turn_rows_of_different_lengths(pair):
    arch, cached, plain = pair
    convs = [_multi_turn(1, 64, "Zooming in.", "Here is the crop."),
             _multi_turn(2, 96, 'I will zoom in to look closer. <tool>{"name": "zoom"}</tool>', "Crop."),
             _first_turn(3, 80)]
    before, batches = cached.prefix_forwards, cached.prefix_batches
    stored = cached._prefix_ids
    _assert_same(_batched(cached, convs), _one_by_one(plain, convs))
    if arch == "gemma3":
        # pads in the middle would move prefix tokens out of Gemma-3's sliding window (64
        # tokens here): the plain left-padded path, and the stored cache untouched
        assert cached.prefix_batches == batches and cached._prefix_ids is stored
    else:
        assert cached.prefix_batches == batches + 1 and cached.prefix_forwards <= before + 1


def test_text_only_rows_after_image_rows(pair):
    """No image among the new tokens: Qwen2-VL's generate would add the previous call's mRoPE
    deltas to the positions unless they are cleared."""
    arch, cached, plain = pair
    images = [_first_turn(i, h=64 + 32 * i) for i in range(2)]
    blind = [[Message.text("system", SYSTEM), Message.text("user", q)]
             for q in ("Is there a nodule?", "Is there a pneumothorax in the left lung?")]
    _assert_same(_batched(cached, images), _one_by_one(plain, images))
    batches = cached.prefix_batches
    _assert_same(_batched(cached, blind), _one_by_one(plain, blind))
    # (Gemma-3: questions of different lengths -> pads -> its sliding window -> the plain path)
    assert cached.prefix_batches == batches + (arch != "gemma3")


def test_rows_sharing_no_prefix_take_the_plain_path(pair):
    _, cached, plain = pair
    convs = [_first_turn(1, system=SYSTEM), _first_turn(2, system=OTHER_SYSTEM)]
    tok = plain.processor.tokenizer
    ids = [torch.tensor(tok(render_chat(plain.processor, c), add_special_tokens=False)["input_ids"]) for c in convs]
    assert common_prefix_length(ids) < MIN_PREFIX  # only the template's opening tokens
    before = cached.prefix_forwards
    _assert_same(_batched(cached, convs), _one_by_one(plain, convs))
    assert cached.prefix_forwards == before


def test_a_different_prefix_is_never_served_from_the_stored_cache(pair):
    _, cached, plain = pair
    cached.clear_prefix_cache()
    a = [_first_turn(i, system=SYSTEM) for i in range(2)]
    b = [_first_turn(i, system=OTHER_SYSTEM) for i in range(2)]
    before = cached.prefix_forwards
    _assert_same(_batched(cached, a), _one_by_one(plain, a))
    assert cached.prefix_forwards == before + 1
    assert SYSTEM in plain.processor.tokenizer.decode(cached._prefix_ids)
    _assert_same(_batched(cached, b), _one_by_one(plain, b))  # would differ with a's cache
    assert cached.prefix_forwards == before + 2
    assert OTHER_SYSTEM in plain.processor.tokenizer.decode(cached._prefix_ids)
    _assert_same(_batched(cached, a), _one_by_one(plain, a))
    assert cached.prefix_forwards == before + 3  # only the last prefix is kept


def test_single_conversations_and_sampling_keep_the_plain_path(pair):
    _, cached, plain = pair
    before = cached.prefix_forwards
    cached.complete(_first_turn(0), DEC)
    sampled = Decoding(max_output_tokens=4, temperature=0.7, seed=3)
    cached.complete_batch([_first_turn(0), _first_turn(1)], sampled)
    assert cached.prefix_forwards == before
