"""A tiny random-initialised Qwen2-VL built offline, used only until the agent issue's
``medscope.models.tiny_vlm`` is on this branch (same signature: seed -> (model, processor)).

The "processor" is a plain namespace with ``tokenizer`` and ``image_processor``: transformers'
Qwen2VLProcessor insists on a video processor that needs torchvision, which is not installed.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def build_tokenizer():
    """A byte-level tokenizer (one token per byte, no merges) with Qwen's chat specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=SPECIALS[1:]
    )


def build_tiny_qwen2vl(seed: int = 0):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = build_tokenizer()
    # 4 merged image tokens per image whatever its size, so CPU steps stay fast
    ip = Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 4)
    tid = tok.convert_tokens_to_ids
    cfg = Qwen2VLConfig(
        text_config=dict(
            vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
            bos_token_id=tid("<|im_start|>"), eos_token_id=tid("<|im_end|>"), pad_token_id=tid("<|endoftext|>"),
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
        ),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2),
        image_token_id=tid("<|image_pad|>"), video_token_id=tid("<|video_pad|>"),
        vision_start_token_id=tid("<|vision_start|>"), vision_end_token_id=tid("<|vision_end|>"),
    )
    torch.manual_seed(int(seed))
    model = Qwen2VLForConditionalGeneration(cfg)
    return model, SimpleNamespace(tokenizer=tok, image_processor=ip)
