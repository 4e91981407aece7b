"""LaMa and Stable Diffusion erasers through their real code paths with tiny stand-in models."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from medscope.errors import MedScopeError
from medscope.views.tools import Lama, StableDiffusion, make_eraser


class ConstantFill(torch.nn.Module):
    """LaMa's TorchScript signature (image, mask) -> image; fills the hole with grey 0.5."""

    def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.to(image.dtype)
        return image * (1 - m) + 0.5 * m


def _image_and_region():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (37, 45, 3), dtype=np.uint8)  # not a multiple of 8: LaMa pads
    region = np.zeros((37, 45), bool)
    region[10:20, 12:30] = True
    return image, region


def test_lama_without_weights_names_the_variable(monkeypatch):
    monkeypatch.delenv("LAMA_MODEL", raising=False)
    with pytest.raises(MedScopeError, match="LAMA_MODEL"):
        make_eraser("lama")


def test_lama_runs_simple_lama_code_path_with_scripted_weights(tmp_path, monkeypatch):
    path = tmp_path / "big-lama.pt"
    torch.jit.save(torch.jit.script(ConstantFill()), str(path))
    monkeypatch.setenv("LAMA_MODEL", str(path))
    eraser = make_eraser("lama")
    assert isinstance(eraser, Lama)
    image, region = _image_and_region()
    out = eraser.fill(image, region, np.random.default_rng(0))
    assert out.shape == image.shape
    assert np.all(out[region] == 127)  # simple-lama: clip(0.5 * 255).astype(uint8)
    assert np.array_equal(out[~region], image[~region])


def _tiny_sd(model_dir):
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionInpaintPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=16, in_channels=9, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16, norm_num_groups=4, attention_head_dim=2,
    )
    vae = AutoencoderKL(
        block_out_channels=(8, 16), in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=4,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"), up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
    )
    text = CLIPTextModel(CLIPTextConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=1,
                                        vocab_size=64, max_position_embeddings=77, eos_token_id=1, bos_token_id=0, pad_token_id=1))
    tok_dir = model_dir / "tok-src"
    tok_dir.mkdir(parents=True)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz"):
        vocab[ch] = 2 + i
        vocab[ch + "</w>"] = 28 + i
    (tok_dir / "vocab.json").write_text(json.dumps(vocab))
    (tok_dir / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(tok_dir / "vocab.json"), str(tok_dir / "merges.txt"), model_max_length=77)
    pipe = StableDiffusionInpaintPipeline(
        unet=unet, vae=vae, text_encoder=text, tokenizer=tokenizer, scheduler=DDIMScheduler(steps_offset=1),
        safety_checker=None, feature_extractor=None, requires_safety_checker=False,
    )
    pipe.save_pretrained(str(model_dir / "sd"))
    return str(model_dir / "sd")


@pytest.mark.slow
def test_stable_diffusion_inpainting_from_a_local_directory(tmp_path):
    model_dir = _tiny_sd(tmp_path)
    eraser = make_eraser("sd", sd_model_dir=model_dir, sd_steps=2, sd_size=32)
    assert isinstance(eraser, StableDiffusion)
    image, region = _image_and_region()
    out = eraser.fill(image, region, np.random.default_rng(0))
    again = eraser.fill(image, region, np.random.default_rng(0))
    assert out.shape == image.shape
    assert np.array_equal(out[~region], image[~region])
    assert not np.array_equal(out[region], image[region])
    assert np.array_equal(out, again)  # the generator is seeded from the view's rng


def test_sd_without_a_model_directory_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("SD_INPAINT_MODEL", raising=False)
    with pytest.raises(MedScopeError, match="sd"):
        make_eraser("sd")
    with pytest.raises(MedScopeError, match="does not exist"):
        make_eraser("sd", sd_model_dir=str(tmp_path / "nope"))
