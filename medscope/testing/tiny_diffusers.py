"""A tiny random-initialised Stable Diffusion pipeline built from config (no weights downloaded):
the real diffusers architecture (UNet2DConditionModel, AutoencoderKL, CLIPTextModel, a byte-level
CLIP tokenizer with no merges, DDIM), saved with ``save_pretrained`` so code under test loads it
from a local folder exactly as it would load a real pipeline. Its pictures are noise."""

from __future__ import annotations

import json
import os


def _bytes_to_unicode() -> dict[int, str]:
    """CLIP's byte -> printable character table (GPT-2 byte-level BPE)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def build_tiny_sd(out_dir: str, seed: int = 0) -> str:
    """Write a tiny Stable Diffusion pipeline folder under ``out_dir``; returns its path.

    Parameters
    ----------
    out_dir : str
        Local folder to write into (``tokenizer-src`` and ``pipeline`` are created in it).
    seed : int, optional
        ``torch.manual_seed`` for the random weights.

    Returns
    -------
    str
        Path of the saved pipeline folder, ``<out_dir>/pipeline``.
    """
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(seed)
    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    tok_dir = os.path.join(out_dir, "tokenizer-src")
    os.makedirs(tok_dir, exist_ok=True)
    with open(os.path.join(tok_dir, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(tok_dir, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
    tokenizer = CLIPTokenizer(os.path.join(tok_dir, "vocab.json"), os.path.join(tok_dir, "merges.txt"), model_max_length=77)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
        projection_dim=32, max_position_embeddings=77, bos_token_id=vocab["<|startoftext|>"],
        eos_token_id=vocab["<|endoftext|>"], pad_token_id=vocab["<|endoftext|>"]))
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=32)
    vae = AutoencoderKL(
        block_out_channels=(32, 64), in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=32,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), sample_size=32)
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False, steps_offset=1)
    pipe = StableDiffusionPipeline(unet=unet, vae=vae, text_encoder=text_encoder, tokenizer=tokenizer,
                                   scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    path = os.path.join(out_dir, "pipeline")
    pipe.save_pretrained(path)
    return path
