"""The model side of training: the base VLM, its LoRA adapter, and chats -> tensors.

The counterfactual paper §3.5: LoRA on all linear layers of the *language* model, vision encoder frozen; §4.2:
"model-specific chat templates were applied by each model's processor". Nothing here knows a
model family: a chat becomes tokens through :func:`medscope.models.local_hf.chat_inputs` (the
processor's own chat template and image expansion, exactly what evaluation feeds the model),
and the language model and vision side are found from the model (``get_decoder()``).

References: LoRA: E. J. Hu et al., "LoRA: low-rank adaptation of large language models",
ICLR 2022 (through ``peft``).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass

import torch

from medscope.io import storage
from medscope.errors import MedScopeError
from medscope.models.base import Message, Part

IGNORE = -100
TINY_PREFIX = "tiny"  # recipe base "tiny" / "tiny:<arch>": a random tiny model built in memory


@dataclass
class VLM:
    """A causal VLM and its processor (tokenizer, image processor and chat template)."""

    model: torch.nn.Module
    processor: object

    @property
    def tokenizer(self):
        return self.processor.tokenizer


def build_base(base: str, seed: int = 0) -> VLM:
    """``base``: "tiny" / "tiny:<arch>" (a random tiny model of :data:`tiny_vlm.ARCHS`) or a
    local HF checkpoint folder (any ``AutoModelForImageTextToText``; ``medscope agent tiny-vlm``
    writes such folders).

    Parameters
    ----------
    base : str
        'tiny', 'tiny:<arch>' or a local model directory.
    seed : int, optional
        Seed of a tiny model's random weights.

    Returns
    -------
    VLM
        The model (bfloat16 on a machine with CUDA, else float32, for a checkpoint) and its processor.

    Raises
    ------
    MedScopeError
        When ``base`` is neither a tiny name nor a directory, or its processor lacks a tokenizer or a
        chat template.
    """
    from medscope.models import tiny_vlm

    if base == TINY_PREFIX or base.startswith(TINY_PREFIX + ":"):
        arch = base.partition(":")[2] or "qwen2-vl"
        model, processor = tiny_vlm.build_tiny(arch, seed)
        return VLM(model=model, processor=processor)
    from transformers import AutoModelForImageTextToText

    if not os.path.isdir(base):
        raise MedScopeError(f"base model {base!r} is neither 'tiny[:arch]' nor a local model directory")
    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    model = AutoModelForImageTextToText.from_pretrained(base, dtype=dtype)
    processor = tiny_vlm.load_processor(base)  # AutoProcessor, or the image-only Qwen processor
    if getattr(processor, "tokenizer", None) is None or getattr(processor, "apply_chat_template", None) is None:
        raise MedScopeError(f"processor of {base!r} has no tokenizer or chat template")
    return VLM(model=model, processor=processor)


# ---------------------------------------------------------------- LoRA on the language model

def language_model_prefix(model: torch.nn.Module) -> str:
    """The module path of the language model inside a VLM, found as the module that
    ``model.get_decoder()`` returns (transformers' own answer; no family's names assumed).

    Parameters
    ----------
    model : torch.nn.Module
        A VLM.

    Returns
    -------
    str
        The dotted module name.

    Raises
    ------
    MedScopeError
        When the model has no ``get_decoder()`` or its decoder is not a named submodule.
    """
    dec = model.get_decoder() if hasattr(model, "get_decoder") else None
    for name, mod in model.named_modules():
        if mod is dec and name:
            return name
    raise MedScopeError(f"{type(model).__name__}: cannot find its language model (get_decoder())")


def language_linear_modules(model: torch.nn.Module) -> list[str]:
    """Full names of every linear layer of the language model (the output head excluded, as
    PEFT's "all-linear" does): the counterfactual paper §3.5's LoRA targets.

    Parameters
    ----------
    model : torch.nn.Module
        A VLM.

    Returns
    -------
    list of str
        Dotted module names, in module order.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    prefix = language_model_prefix(model)
    return [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n.startswith(prefix + ".")]


def vision_parameter_names(model: torch.nn.Module) -> list[str]:
    """Parameters outside the language model, its embeddings and the output head: the vision
    tower and projector, which stay frozen throughout (§3.5).

    Parameters
    ----------
    model : torch.nn.Module
        A VLM.

    Returns
    -------
    list of str
        Parameter names, in parameter order.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    prefix = language_model_prefix(model) + "."
    head = model.get_output_embeddings()
    head_ids = {id(p) for p in head.parameters()} if head is not None else set()
    return [n for n, p in model.named_parameters() if not n.startswith(prefix) and id(p) not in head_ids]


def lora_target_regex(model: torch.nn.Module) -> str:
    """A PEFT ``target_modules`` regex matching exactly :func:`language_linear_modules`: the
    language model's path followed by any of its linear layers' leaf names. (Leaf names alone
    are not enough: Qwen2.5-VL's and SigLIP's vision blocks also have q_proj, gate_proj ...)

    Parameters
    ----------
    model : torch.nn.Module
        A VLM.

    Returns
    -------
    str
        A regular expression over full module names.
    """
    prefix = language_model_prefix(model)
    leaves = sorted({n.rsplit(".", 1)[-1] for n in language_linear_modules(model)})
    return rf"{re.escape(prefix)}\..*\.({'|'.join(map(re.escape, leaves))})"


def apply_lora(model: torch.nn.Module, lora, seed: int):
    """Wrap ``model`` in a PEFT LoRA adapter; ``seed`` fixes the adapter's initialisation.
    ``target_modules: language-linear`` (the default) = every linear layer of the language
    model, found from the model; anything else is passed to PEFT as written.

    Parameters
    ----------
    model : torch.nn.Module
        The base VLM (wrapped, not copied).
    lora : LoraSettings
        Rank, alpha, dropout, target and excluded modules.
    seed : int
        Seed of the adapter's initialisation.

    Returns
    -------
    peft.PeftModel
        The wrapped model; only LoRA parameters require gradients.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    .. [2] E. J. Hu et al., "LoRA: low-rank adaptation of large language models", ICLR 2022.
    """
    from peft import LoraConfig, get_peft_model

    targets = lora_target_regex(model) if lora.target_modules == "language-linear" else lora.target_modules
    cfg = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=targets,
        exclude_modules=lora.exclude_modules,
        task_type="CAUSAL_LM",
    )
    torch.manual_seed(int(seed))
    peft_model = get_peft_model(model, cfg)
    for name, p in peft_model.named_parameters():  # the vision side never trains (§3.5)
        if "lora_" not in name:
            p.requires_grad_(False)
    return peft_model


# ---------------------------------------------------------------- encoding

def to_messages(messages: list[dict]) -> list[Message]:
    """Training chats ({role, text, image: png | None}) -> the provider-neutral messages the
    episode loop sends: the image part before the text, as ``medscope.protocols.counterfactual.agent_episode`` builds them.

    Parameters
    ----------
    messages : list of dict
        {role, text, image}: image PNG bytes or None.

    Returns
    -------
    list of Message
        One per message; parts (image, text), an empty part left out.
    """
    out = []
    for m in messages:
        parts = ((Part(png=m["image"]),) if m.get("image") is not None else ()) + ((Part(text=m["text"]),) if m.get("text") else ())
        out.append(Message(m["role"], parts))
    return out


def _inputs(vlm: VLM, conv: list[Message], add_generation_prompt: bool) -> dict:
    from medscope.models.local_hf import chat_inputs

    return dict(chat_inputs(vlm.processor, [conv], add_generation_prompt=add_generation_prompt))


def encode(vlm: VLM, messages: list[dict], train_roles: tuple[str, ...] = ("assistant",)) -> dict:
    """Chat ``messages`` -> one example's tensors, through the processor's chat template.

    Labels cover each ``train_roles`` turn from the end of the prompt evaluation would send
    before it (the chat up to that turn with the generation prompt) to the end of the turn's
    own tokens, trailing whitespace after the end-of-turn marker left out; the loss never
    rewards predicting the question or a tool's result. The prompt before every trained turn is
    checked to be a token prefix of the whole sequence, so what the model is trained to
    continue is token for token what it is shown at evaluation.

    Parameters
    ----------
    vlm : VLM
        The model and processor.
    messages : list of dict
        The chat, {role, text, image}.
    train_roles : tuple of str, optional
        Roles whose turns are labelled (the first message never is).

    Returns
    -------
    dict
        ``input_ids`` and ``labels`` (1-D; unlabelled positions -100), ``token_inputs`` (other
        per-token tensors, 1-D) and ``media_inputs`` (image tensors, as the processor gives them).

    Raises
    ------
    MedScopeError
        When the chat template renders a turn differently once later turns follow.
    """
    conv = to_messages(messages)
    full = _inputs(vlm, conv, add_generation_prompt=False)
    ids = full["input_ids"][0]
    labels = torch.full_like(ids, IGNORE)
    last = len(conv) - 1
    for i, m in enumerate(conv):
        if m.role not in train_roles or i == 0:
            continue
        prompt = _inputs(vlm, conv[:i], add_generation_prompt=True)["input_ids"][0]
        end_ids = ids if i == last else _inputs(vlm, conv[: i + 1], add_generation_prompt=False)["input_ids"][0]
        for part in (prompt, end_ids):
            if len(part) > len(ids) or not torch.equal(ids[: len(part)], part):
                raise MedScopeError(f"the chat template of {type(vlm.model).__name__} renders turn {i} differently "
                                    "once later turns follow; training one sequence per conversation needs a template "
                                    "whose earlier turns do not change")
        start, end = len(prompt), len(end_ids)
        while end > start and not vlm.tokenizer.decode(ids[end - 1 : end]).strip():
            end -= 1  # the newline after the end-of-turn token is the template's, not the reply's
        labels[start:end] = ids[start:end]
    out = {"input_ids": ids, "labels": labels, "token_inputs": {}, "media_inputs": {}}
    for k, v in full.items():
        if k in ("input_ids", "attention_mask"):
            continue
        if v.dim() == 2 and v.shape == full["input_ids"].shape:
            out["token_inputs"][k] = v[0]  # per-token inputs: mm_token_type_ids, token_type_ids ...
        else:
            out["media_inputs"][k] = v  # pixel_values, image_grid_thw ...
    return out


def collate(vlm: VLM, examples: list[dict]) -> dict:
    """Right-pad a list of encoded examples into one batch; per-token inputs pad with 0, image
    inputs concatenate in example order (what the processor does for a batch).

    Parameters
    ----------
    vlm : VLM
        Gives the tokenizer's pad id (0 when it has none).
    examples : list of dict
        Encoded examples (``encode``).

    Returns
    -------
    dict of str to torch.Tensor
        ``input_ids``, ``labels``, ``attention_mask`` and per-token inputs of shape (batch, longest);
        media inputs concatenated along the first axis.
    """
    pad = vlm.tokenizer.pad_token_id or 0
    n = max(len(e["input_ids"]) for e in examples)
    ids = torch.full((len(examples), n), pad, dtype=torch.long)
    labels = torch.full((len(examples), n), IGNORE, dtype=torch.long)
    attn = torch.zeros((len(examples), n), dtype=torch.long)
    batch = {"input_ids": ids, "labels": labels, "attention_mask": attn}
    token_keys = sorted({k for e in examples for k in e.get("token_inputs", {})})
    for k in token_keys:
        batch[k] = torch.zeros((len(examples), n), dtype=torch.long)
    for i, e in enumerate(examples):
        k = len(e["input_ids"])
        ids[i, :k], labels[i, :k], attn[i, :k] = e["input_ids"], e["labels"], 1
        for key in token_keys:
            batch[key][i, :k] = e["token_inputs"][key]
    media_keys = sorted({k for e in examples for k in e.get("media_inputs", {})})
    for key in media_keys:
        batch[key] = torch.cat([e["media_inputs"][key] for e in examples if key in e.get("media_inputs", {})])
    return batch


def to_device(batch: dict, device) -> dict:
    """Move every tensor of a batch to ``device``.

    Parameters
    ----------
    batch : dict of str to torch.Tensor
        A collated batch.
    device : torch.device or str
        Where to.

    Returns
    -------
    dict of str to torch.Tensor
        A new dict, same keys.
    """
    return {k: v.to(device) for k, v in batch.items()}


def sequence_logps(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence sum of log p(labelled tokens) and the number of labelled tokens.

    Parameters
    ----------
    model : torch.nn.Module
        The causal VLM.
    batch : dict of str to torch.Tensor
        A collated batch with ``labels``.

    Returns
    -------
    logp : torch.Tensor
        Shape (batch,), float32.
    n_tokens : torch.Tensor
        Shape (batch,), the labelled tokens per sequence.
    """
    fwd = {k: v for k, v in batch.items() if k != "labels"}
    logits = model(**fwd).logits[:, :-1].float()
    target = batch["labels"][:, 1:]
    mask = target != IGNORE
    logp = torch.log_softmax(logits, dim=-1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return (logp * mask).sum(-1), mask.sum(-1)


def token_nll(model, batch: dict) -> torch.Tensor:
    """Mean negative log-likelihood over every labelled token of the batch.

    Parameters
    ----------
    model : torch.nn.Module
        The causal VLM.
    batch : dict of str to torch.Tensor
        A collated batch with ``labels``.

    Returns
    -------
    torch.Tensor
        A scalar (0 with no labelled token).
    """
    logp, n = sequence_logps(model, batch)
    return -logp.sum() / n.sum().clamp(min=1)


# ---------------------------------------------------------------- adapters on storage

def save_adapter(model, uri: str) -> list[str]:
    """Write the PEFT adapter files under ``uri`` (any storage URI); returns their URIs.

    Parameters
    ----------
    model : peft.PeftModel
        The adapted model.
    uri : str
        The adapter folder (path or storage URI).

    Returns
    -------
    list of str
        URIs of the files written, by name.
    """
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
    """A PEFT model from adapter files at ``uri`` on top of ``base_model``.

    Parameters
    ----------
    base_model : torch.nn.Module
        The base VLM.
    uri : str
        The adapter folder (path or storage URI) with ``adapter_config.json`` and
        ``adapter_model.safetensors``.
    trainable : bool, optional
        Whether the adapter's parameters train.

    Returns
    -------
    peft.PeftModel

    Raises
    ------
    MedScopeError
        When either file is missing.
    """
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
    """One assistant turn sampled (temperature > 0) or greedy (0) after ``messages``, from the
    same prompt evaluation builds (chat template + generation prompt).

    Parameters
    ----------
    vlm : VLM
        The processor and tokenizer.
    model : torch.nn.Module
        The model that generates (on its own device).
    messages : list of dict
        The chat so far, {role, text, image}.
    max_new_tokens : int
        Most tokens generated.
    temperature : float
        0: greedy; above 0: sampled at that temperature, no top-k / top-p cut.
    seed : int
        Seed of the global torch generator before sampling.

    Returns
    -------
    str
        The new tokens decoded, special tokens skipped.
    """
    batch = to_device(_inputs(vlm, to_messages(messages), add_generation_prompt=True), next(model.parameters()).device)
    torch.manual_seed(int(seed) % (2**63))  # generate() samples from the global generator
    kwargs = {"do_sample": temperature > 0, "max_new_tokens": max_new_tokens}
    if temperature > 0:
        kwargs.update(temperature=float(temperature), top_k=0, top_p=1.0)
    with torch.no_grad():
        out = model.generate(**batch, pad_token_id=vlm.tokenizer.pad_token_id or 0, **kwargs)
    return vlm.tokenizer.decode(out[0, batch["input_ids"].shape[1] :], skip_special_tokens=True)
