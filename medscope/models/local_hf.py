"""Local Hugging Face VLMs through transformers (seed 000 §3.10: greedy, bf16 on GPU).

``AutoModelForImageTextToText`` + the checkpoint's processor (Qwen2-VL family through
:class:`~medscope.models.tiny_vlm.ImageOnlyQwen2VLProcessor`, which needs no torchvision),
optionally with a PEFT adapter. Messages are rendered with the model's own chat template.
``complete_batch`` generates for several conversations at once (left padding), which
:func:`medscope.protocols.counterfactual.agent_episode.run_episodes` uses to advance episodes in lock step.
"""

from __future__ import annotations

import io
from pathlib import Path

from medscope.errors import MedScopeError
from medscope.models.base import Completion, Decoding, Message


def _pil(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


def to_hf_chat(messages: list[Message]) -> tuple[list[dict], list]:
    """Provider-neutral messages -> (HF chat messages, PIL images in prompt order)."""
    chat, images = [], []
    for m in messages:
        content = []
        for p in m.parts:
            if p.is_image:
                content.append({"type": "image"})
                images.append(_pil(p.png))
            elif p.text is not None:
                content.append({"type": "text", "text": p.text})
        chat.append({"role": m.role, "content": content})
    return chat, images


def render_chat(processor, messages: list[Message], add_generation_prompt: bool = True) -> str:
    """The prompt text of one conversation through the checkpoint's own chat template."""
    chat, _ = to_hf_chat(messages)
    return processor.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, tokenize=False)


def chat_inputs(processor, conversations: list[list[Message]], add_generation_prompt: bool = True):
    """Model inputs for ``conversations``: each rendered by the processor's chat template, then
    tokenized with its images by the processor (which expands each image placeholder to the
    model's image tokens). The one path from messages to tokens, shared by evaluation (here)
    and training (``medscope.training.vlm.encode``), so both see the same tokens (seed 000
    §4.2: "model-specific chat templates were applied by each model's processor").

    ``add_special_tokens=False``: a chat template writes its own BOS and turn markers, and a
    tokenizer that also adds BOS (Gemma's) would otherwise begin every prompt with two."""
    texts, images = [], []
    for conv in conversations:
        texts.append(render_chat(processor, conv, add_generation_prompt))
        images.extend(to_hf_chat(conv)[1])
    return processor(text=texts, images=images or None, return_tensors="pt", padding=True, add_special_tokens=False)


class LocalHFModel:
    """A local VLM. ``path``: a checkpoint folder; ``adapter``: an optional PEFT adapter folder."""

    provider = "local"
    endpoint = "local"

    def __init__(self, name: str, path: str, adapter: str | None = None, device: str | None = None,
                 dtype: str | None = None, batch_size: int = 8, model=None, processor=None):
        import torch

        self.name = name
        self.path = str(path)
        self.adapter = adapter
        self.batch_size = max(1, int(batch_size))
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype is None:
            dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        self.dtype = getattr(torch, dtype)
        if model is None:
            model, processor = self._load()
        self.model, self.processor = model, processor
        self.model.to(self.device).eval()
        self.processor.tokenizer.padding_side = "left"

    def _load(self):
        from transformers import AutoModelForImageTextToText

        from medscope.models.tiny_vlm import load_processor

        if not Path(self.path).exists():
            raise MedScopeError(f"local model {self.name}: no checkpoint at {self.path}")
        model = AutoModelForImageTextToText.from_pretrained(self.path, dtype=self.dtype)
        processor = load_processor(self.path)
        if self.adapter:
            from peft import PeftModel

            if not Path(self.adapter).exists():
                raise MedScopeError(f"local model {self.name}: no adapter at {self.adapter}")
            model = PeftModel.from_pretrained(model, self.adapter)
        return model, processor

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        return self.complete_batch([messages], decoding)[0]

    def complete_batch(self, conversations: list[list[Message]], decoding: Decoding) -> list[Completion]:
        out: list[Completion] = []
        for start in range(0, len(conversations), self.batch_size):
            out.extend(self._generate(conversations[start:start + self.batch_size], decoding))
        return out

    def _generate(self, conversations: list[list[Message]], decoding: Decoding) -> list[Completion]:
        import torch

        inputs = chat_inputs(self.processor, conversations, add_generation_prompt=True)
        inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
        gen = {"max_new_tokens": decoding.max_output_tokens, "do_sample": decoding.temperature > 0}
        if decoding.temperature > 0:
            gen["temperature"] = decoding.temperature
            if decoding.seed is not None:
                torch.manual_seed(decoding.seed)
        with torch.inference_mode():
            seqs = self.model.generate(**inputs, **gen)
        prompt_len = inputs["input_ids"].shape[1]
        tok = self.processor.tokenizer
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        results = []
        for i in range(len(conversations)):
            new = seqs[i, prompt_len:].tolist()
            n_out = len(new)
            for j, t in enumerate(new):
                if t in eos_ids:
                    n_out = j + 1
                    break
            finish = "stop" if n_out < len(new) or (new and new[n_out - 1] in eos_ids) else "length"
            n_in = int(inputs["attention_mask"][i].sum())
            text = tok.decode(new[:n_out], skip_special_tokens=True)
            results.append(Completion(text=text, input_tokens=n_in, output_tokens=n_out, finish_reason=finish))
        return results


def from_entry(entry) -> LocalHFModel:
    """Build from a model config entry (kind local_hf): ``model`` is the checkpoint path;
    ``options``: adapter, device, dtype, batch_size."""
    opts = dict(getattr(entry, "options", None) or {})
    path = getattr(entry, "model", None) or opts.pop("path", None)
    if not path:
        raise MedScopeError(f"model {entry.name}: kind local_hf needs model: <checkpoint folder>")
    return LocalHFModel(entry.name, path, adapter=opts.get("adapter"), device=opts.get("device"),
                        dtype=opts.get("dtype"), batch_size=int(opts.get("batch_size", 8)))
