"""The model side of training: the base VLM, its LoRA adapter, and trajectories -> tensors.

Seed 000 §3.5: LoRA on all linear layers of the *language* model, vision encoder frozen.
Chat messages are turned into tensors here from the processor's tokenizer and image processor
rather than through the processor's chat template, because training needs to know which
tokens belong to assistant turns (the only ones with labels) and where each image sits.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import torch

from medscope import images, storage
from medscope.errors import MedScopeError

IGNORE = -100


@dataclass
class VLM:
    """A causal VLM with what is needed to feed it: tokenizer and image processor."""

    model: torch.nn.Module
    tokenizer: object
    image_processor: object
    image_token: str = "<|image_pad|>"
    merge_size: int = 2
    processor: object = None  # the full processor (what the agent loop's local HF adapter uses)

    @property
    def image_token_id(self) -> int:
        return int(self.tokenizer.convert_tokens_to_ids(self.image_token))


def build_base(base: str, seed: int = 0) -> VLM:
    """``base`` = "tiny" (random-initialised tiny Qwen2-VL) or a local HF model directory."""
    if base == "tiny":
        model, processor = _tiny(seed)
    else:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        if not os.path.isdir(base):
            raise MedScopeError(f"base model {base!r} is neither 'tiny' nor a local model directory")
        model = AutoModelForImageTextToText.from_pretrained(base, torch_dtype=torch.bfloat16)
        try:
            processor = AutoProcessor.from_pretrained(base)
        except Exception:  # Qwen2-VL checkpoints without torchvision: the image-only processor
            from medscope.models.tiny_vlm import load_processor

            processor = load_processor(base)
    tok = getattr(processor, "tokenizer", None)
    ip = getattr(processor, "image_processor", None)
    if tok is None or ip is None:
        raise MedScopeError(f"processor of {base!r} lacks a tokenizer or image processor")
    return VLM(model=model, tokenizer=tok, image_processor=ip, merge_size=int(getattr(ip, "merge_size", 2)), processor=processor)


def _tiny(seed: int):
    from medscope.models.tiny_vlm import build_tiny_qwen2vl

    return build_tiny_qwen2vl(seed)


def apply_lora(model: torch.nn.Module, lora, seed: int):
    """Wrap ``model`` in a PEFT LoRA adapter; ``seed`` fixes the adapter's initialisation."""
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        exclude_modules=lora.exclude_modules,
        task_type="CAUSAL_LM",
    )
    torch.manual_seed(int(seed))
    return get_peft_model(model, cfg)


# ---------------------------------------------------------------- encoding

def encode(vlm: VLM, messages: list[dict], train_roles: tuple[str, ...] = ("assistant",)) -> dict:
    """Chat ``messages`` ({role, text, image: png bytes | None}) -> one example's tensors.

    Qwen chat format; labels cover only the text of ``train_roles`` turns (plus their end
    tag), so the loss never rewards predicting the question or a tool's result.
    """
    ids: list[int] = []
    labels: list[int] = []
    pixels, grids = [], []
    tok = vlm.tokenizer
    for m in messages:
        head = f"<|im_start|>{m['role']}\n"
        body_ids: list[int] = []
        if m.get("image") is not None:
            px = vlm.image_processor(images=[images.decode_png(m["image"])], return_tensors="pt")
            pixels.append(px["pixel_values"])
            grids.append(px["image_grid_thw"])
            n = int(px["image_grid_thw"].prod()) // (vlm.merge_size**2)
            body_ids += _ids(tok, "<|vision_start|>") + [vlm.image_token_id] * n + _ids(tok, "<|vision_end|>")
        text_ids = _ids(tok, m.get("text") or "")
        tail = _ids(tok, "<|im_end|>\n")
        head_ids = _ids(tok, head)
        ids += head_ids + body_ids + text_ids + tail
        if m["role"] in train_roles:
            labels += [IGNORE] * (len(head_ids) + len(body_ids)) + text_ids + tail[:1] + [IGNORE] * (len(tail) - 1)
        else:
            labels += [IGNORE] * (len(head_ids) + len(body_ids) + len(text_ids) + len(tail))
    out = {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}
    if pixels:
        out["pixel_values"] = torch.cat(pixels)
        out["image_grid_thw"] = torch.cat(grids)
    return out


def _ids(tok, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"]) if text else []


def collate(vlm: VLM, examples: list[dict]) -> dict:
    """Right-pad a list of encoded examples into one batch."""
    pad = vlm.tokenizer.pad_token_id or 0
    n = max(len(e["input_ids"]) for e in examples)
    ids = torch.full((len(examples), n), pad, dtype=torch.long)
    labels = torch.full((len(examples), n), IGNORE, dtype=torch.long)
    attn = torch.zeros((len(examples), n), dtype=torch.long)
    for i, e in enumerate(examples):
        k = len(e["input_ids"])
        ids[i, :k], labels[i, :k], attn[i, :k] = e["input_ids"], e["labels"], 1
    batch = {"input_ids": ids, "labels": labels, "attention_mask": attn}
    with_px = [e for e in examples if "pixel_values" in e]
    if with_px:
        batch["pixel_values"] = torch.cat([e["pixel_values"] for e in with_px])
        batch["image_grid_thw"] = torch.cat([e["image_grid_thw"] for e in with_px])
        batch["mm_token_type_ids"] = (ids == vlm.image_token_id).long()
    return batch


def to_device(batch: dict, device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def sequence_logps(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence sum of log p(labelled tokens) and the number of labelled tokens."""
    fwd = {k: v for k, v in batch.items() if k != "labels"}
    logits = model(**fwd).logits[:, :-1].float()
    target = batch["labels"][:, 1:]
    mask = target != IGNORE
    logp = torch.log_softmax(logits, dim=-1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return (logp * mask).sum(-1), mask.sum(-1)


def token_nll(model, batch: dict) -> torch.Tensor:
    """Mean negative log-likelihood over every labelled token of the batch."""
    logp, n = sequence_logps(model, batch)
    return -logp.sum() / n.sum().clamp(min=1)


# ---------------------------------------------------------------- adapters on storage

def save_adapter(model, uri: str) -> list[str]:
    """Write the PEFT adapter files under ``uri`` (any storage URI); returns their URIs."""
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        for name in sorted(os.listdir(tmp)):
            path = os.path.join(tmp, name)
            if os.path.isfile(path):
                with open(path, "rb") as fh:
                    storage.write_bytes(storage.join(uri, name), fh.read())
                written.append(storage.join(uri, name))
    return written


def load_adapter(base_model, uri: str, trainable: bool = True):
    """A PEFT model from adapter files at ``uri`` on top of ``base_model``."""
    from peft import PeftModel

    with tempfile.TemporaryDirectory() as tmp:
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            src = storage.join(uri, name)
            if not storage.exists(src):
                raise MedScopeError(f"no LoRA adapter at {uri} (missing {name})")
            with open(os.path.join(tmp, name), "wb") as fh:
                fh.write(storage.read_bytes(src))
        return PeftModel.from_pretrained(base_model, tmp, is_trainable=trainable)


def generate_text(vlm: VLM, model, messages: list[dict], max_new_tokens: int, temperature: float, seed: int) -> str:
    """One assistant turn sampled (temperature > 0) or greedy (0) after ``messages``."""
    enc = encode(vlm, messages + [{"role": "assistant", "text": None, "image": None}])
    # drop the empty assistant turn's end tag so generation continues the open turn
    k = len(_ids(vlm.tokenizer, "<|im_end|>\n"))
    batch = collate(vlm, [{**enc, "input_ids": enc["input_ids"][:-k], "labels": enc["labels"][:-k]}])
    batch.pop("labels")
    device = next(model.parameters()).device
    batch = to_device(batch, device)
    torch.manual_seed(int(seed) % (2**63))  # generate() samples from the global generator
    kwargs = {"do_sample": temperature > 0, "max_new_tokens": max_new_tokens}
    if temperature > 0:
        kwargs.update(temperature=float(temperature), top_k=0, top_p=1.0)
    eos = vlm.tokenizer.convert_tokens_to_ids("<|im_end|>")
    with torch.no_grad():
        out = model.generate(**batch, eos_token_id=eos, pad_token_id=vlm.tokenizer.pad_token_id or 0, **kwargs)
    return vlm.tokenizer.decode(out[0, batch["input_ids"].shape[1] :], skip_special_tokens=True)

