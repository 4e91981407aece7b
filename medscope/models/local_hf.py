"""Local Hugging Face VLMs through transformers (counterfactual paper §3.10: greedy, bf16 on GPU).

``AutoModelForImageTextToText`` + the checkpoint's processor (Qwen2-VL family through
:class:`~medscope.models.tiny_vlm.ImageOnlyQwen2VLProcessor`, which needs no torchvision),
optionally with a PEFT adapter. Messages are rendered with the model's own chat template.
``complete_batch`` generates for several conversations at once (left padding), which
:func:`medscope.protocols.counterfactual.agent_episode.run_episodes` uses to advance episodes in lock step.
Greedy batches whose rows share their first tokens (the agent's instructions) prefill that prefix
once and reuse its KV cache across rows and consecutive batches
(:mod:`medscope.models.prefix_cache`).
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
    """Provider-neutral messages -> (HF chat messages, PIL images in prompt order).

    Parameters
    ----------
    messages : list of Message
        The conversation.

    Returns
    -------
    chat : list of dict
        ``{"role", "content"}`` per message, content a list of ``{"type": "image"}`` and
        ``{"type": "text", "text"}`` entries.
    images : list of PIL.Image.Image
        The images, decoded to RGB.
    """
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
    """The prompt text of one conversation through the checkpoint's own chat template.

    Parameters
    ----------
    processor : transformers.ProcessorMixin
        The checkpoint's processor (with ``apply_chat_template``).
    messages : list of Message
        The conversation.
    add_generation_prompt : bool, optional
        Whether to end with the assistant turn's opening.

    Returns
    -------
    str
        The prompt text, untokenized.
    """
    chat, _ = to_hf_chat(messages)
    return processor.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, tokenize=False)


def chat_inputs(processor, conversations: list[list[Message]], add_generation_prompt: bool = True):
    """Model inputs for ``conversations``: each rendered by the processor's chat template, then
    tokenized with its images by the processor (which expands each image placeholder to the
    model's image tokens). The one path from messages to tokens, shared by evaluation (here)
    and training (``medscope.training.vlm.encode``), so both see the same tokens (counterfactual paper
    §4.2: "model-specific chat templates were applied by each model's processor").

    ``add_special_tokens=False``: a chat template writes its own BOS and turn markers, and a
    tokenizer that also adds BOS (Gemma's) would otherwise begin every prompt with two.

    Parameters
    ----------
    processor : transformers.ProcessorMixin
        The checkpoint's processor.
    conversations : list of list of Message
        The conversations of one batch.
    add_generation_prompt : bool, optional
        Whether each prompt ends with the assistant turn's opening.

    Returns
    -------
    transformers.BatchFeature
        PyTorch tensors, padded on the processor's padding side: ``input_ids``, ``attention_mask`` and,
        with images, the processor's pixel inputs.

    References
    ----------
    .. [1] Counterfactual paper, §4.2.
    """
    texts, images = [], []
    for conv in conversations:
        texts.append(render_chat(processor, conv, add_generation_prompt))
        images.append(to_hf_chat(conv)[1])
    # one list of images per conversation: Gemma-3's processor counts them per prompt (a flat
    # list fails for a batch of more than one); Qwen2-VL's gives the same pixels either way
    images = images if any(images) else None
    return processor(text=texts, images=images, return_tensors="pt", padding=True, add_special_tokens=False)


class LocalHFModel:
    """A local VLM. ``path``: a checkpoint folder; ``adapter``: an optional PEFT adapter folder."""

    provider = "local"
    endpoint = "local"

    def __init__(self, name: str, path: str, adapter: str | None = None, device: str | None = None,
                 dtype: str | None = None, batch_size: int = 8, model=None, processor=None,
                 prefix_cache: bool = True):
        """``prefix_cache``: reuse the shared prefix's KV cache (greedy batches only); the cache
        is keyed by token ids, not weights, so a caller that changes the weights between calls
        (training) turns it off or calls :meth:`clear_prefix_cache`."""
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
        self.prefix_cache = prefix_cache
        self.prefix_forwards = 0  # prefix caches computed (tests and the bench read them)
        self.prefix_batches = 0  # batches generated from a prefix cache
        self.clear_prefix_cache()

    def clear_prefix_cache(self) -> None:
        self._prefix_ids, self._prefix_kv = None, None

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
            plan = self._prefix_plan(inputs, decoding)
            if plan is not None:
                from medscope.models.prefix_cache import expanded_copy, reset_rope_deltas

                inputs = plan.inputs
                reset_rope_deltas(self.model)
                gen["cache"] = expanded_copy(self._prefix_kv, inputs["input_ids"].shape[0])
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

    def _prefix_plan(self, inputs: dict, decoding: Decoding):
        """The middle-padded inputs around the shared prefix, with ``_prefix_kv`` holding that
        prefix's cache (reused when its ids are the stored ones), or None for the plain path.
        Greedy only: sampling keeps the plain path."""
        if not self.prefix_cache or decoding.temperature > 0:
            return None
        import torch

        from medscope.models.prefix_cache import compute_prefix_cache, prefix_plan

        pad = self.processor.tokenizer.pad_token_id
        plan = prefix_plan(inputs, self.model.config, pad if pad is not None else 0,
                           decoding.max_output_tokens, stored=self._prefix_ids)
        if plan is None:
            return None
        if self._prefix_ids is None or not torch.equal(self._prefix_ids, plan.prefix):
            self._prefix_kv = compute_prefix_cache(self.model, plan.prefix)
            self._prefix_ids = plan.prefix
            self.prefix_forwards += 1
        self.prefix_batches += 1
        return plan


def from_entry(entry) -> LocalHFModel:
    """Build from a model config entry (kind local_hf): ``model`` is the checkpoint path;
    ``options``: adapter, device, dtype, batch_size.

    Parameters
    ----------
    entry : ModelEntry
        A models-config entry (``name``, ``model``, ``options``); the path may also come from
        ``options.path``.

    Returns
    -------
    LocalHFModel
        The loaded model.

    Raises
    ------
    MedScopeError
        If the entry names no checkpoint, or the checkpoint or adapter folder is missing.
    """
    opts = dict(getattr(entry, "options", None) or {})
    path = getattr(entry, "model", None) or opts.pop("path", None)
    if not path:
        raise MedScopeError(f"model {entry.name}: kind local_hf needs model: <checkpoint folder>")
    return LocalHFModel(entry.name, path, adapter=opts.get("adapter"), device=opts.get("device"),
                        dtype=opts.get("dtype"), batch_size=int(opts.get("batch_size", 8)))
