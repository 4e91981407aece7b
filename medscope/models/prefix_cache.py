"""Shared-prefix KV caching for batched local generation.

Every agent conversation begins with the same instructions (~1,077 of its ~1,133 tokens at the
first turn, the counterfactual paper §3.1's agent prompt), and on CPU the prefill of those tokens dominates a
turn: batching amortises the decode steps, not that compute-bound prefill. So the key/value cache
of the longest token prefix common to the rows of a batch is computed once (a batch of one) and
repeated over the rows, and only each row's own suffix (image, question, later turns) is
prefilled. The last prefix cache is kept, keyed by its exact token ids, so consecutive batches
that send the same instructions (lock-step turns, the next batch of episodes) reuse it.

The cached prefix must sit at the same positions in every row, so a row is laid out
``[prefix | pads | suffix]`` with attention mask 0 on the pads (left padding would shift the
prefix). Positions then come from the attention mask (``cumsum - 1``; Qwen2-VL's mRoPE index skips
masked tokens too), so each row sees the positions it has alone. What is not exact, and so keeps
the plain left-padded path (:func:`prefix_plan` returns None):

- a prefix that would hold an image token (images differ per row), or shorter than
  ``MIN_PREFIX`` tokens, or a batch of one row (nothing to share within it);
- sliding-window attention (Gemma-3's local layers) with pads in the middle: its window counts
  sequence indices, not positions, so pads would push prefix tokens out of a suffix token's
  window. Exact there only when no row is padded or the whole padded sequence plus the new
  tokens fits in the window.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

# addition: below this many shared tokens a separate prefix forward saves less than it costs
MIN_PREFIX = 16

# config attributes naming token ids that stand for image or video content
_VISION_TOKEN_ATTRS = ("image_token_id", "video_token_id", "image_token_index", "boi_token_index",
                       "vision_start_token_id")


def vision_token_ids(config) -> set[int]:
    """Token ids of the model's image/video placeholders (and the marks that open them).

    Parameters
    ----------
    config : transformers.PretrainedConfig
        The model's config; the ``image_token_id``-like attributes it has are read.

    Returns
    -------
    set of int
        The ids found; empty when the config names none.
    """
    ids = set()
    for attr in _VISION_TOKEN_ATTRS:
        v = getattr(config, attr, None)
        if isinstance(v, int):
            ids.add(v)
    return ids


def sliding_window_of(config) -> int | None:
    """The sliding window of the text model if any of its layers uses one, else None.

    Parameters
    ----------
    config : transformers.PretrainedConfig
        The model's config (its text config when it has one).

    Returns
    -------
    int or None
        The window in tokens, or None.
    """
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    types = getattr(text, "layer_types", None) or []
    window = getattr(text, "sliding_window", None)
    if window and any(t == "sliding_attention" for t in types):
        return int(window)
    return None


def common_prefix_length(rows: list[torch.Tensor]) -> int:
    """Length of the longest token prefix shared by every row (1-D id tensors).

    Parameters
    ----------
    rows : list of torch.Tensor
        1-D token id tensors, at least one, on one device.

    Returns
    -------
    int
        The shared prefix's length, at most the shortest row's.
    """
    n = min(len(r) for r in rows)
    first = rows[0][:n]
    same = torch.ones(n, dtype=torch.bool, device=first.device)
    for r in rows[1:]:
        same &= r[:n] == first
    diff = (~same).nonzero()
    return int(diff[0]) if len(diff) else n


@dataclass
class PrefixPlan:
    """Middle-padded inputs for ``generate`` and the prefix whose cache they start from."""

    prefix: torch.Tensor  # (P,) token ids
    inputs: dict  # input_ids / attention_mask / per-token tensors, laid out [prefix | pads | suffix]


def prefix_plan(inputs: dict, config, pad_id: int, max_new_tokens: int, stored: torch.Tensor | None = None
                ) -> PrefixPlan | None:
    """Re-lay the processor's left-padded ``inputs`` as ``[prefix | pads | suffix]`` rows around
    the longest shared text prefix, or None when that would not be exact or not worth it (see the
    module docstring). ``stored``: the ids of the cached prefix; it is used as the prefix when it
    is a prefix of every row and covers at least half of the shared text (so a batch whose rows
    share more than the instructions, e.g. the same blind question, still reuses it).

    Parameters
    ----------
    inputs : dict
        The processor's batch: ``input_ids`` and ``attention_mask`` of shape (B, T), left-padded, and any
        other tensors (per-token ones of the same shape are re-laid, the rest kept as they are).
    config : transformers.PretrainedConfig
        The model's config (vision token ids, sliding window).
    pad_id : int
        Token id for the middle pads.
    max_new_tokens : int
        The generation cap, for the sliding-window check.
    stored : torch.Tensor or None, optional
        Ids of the cached prefix, 1-D.

    Returns
    -------
    PrefixPlan or None
        The prefix ids and the re-laid inputs of shape (B, prefix + longest suffix), or None for the plain
        path.
    """
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    if ids.shape[0] < 2:
        return None
    rows = [ids[i][mask[i].bool()] for i in range(ids.shape[0])]
    shared = common_prefix_length(rows)
    shared = min(shared, min(len(r) for r in rows) - 1)  # every row keeps a token to prefill
    vision = vision_token_ids(config)
    if vision:
        hits = torch.isin(rows[0][:shared], torch.tensor(sorted(vision), device=rows[0].device))
        if hits.any():
            shared = int(hits.nonzero()[0])
    n = shared
    if stored is not None and 0 < len(stored) <= shared and 2 * len(stored) >= shared \
            and torch.equal(rows[0][:len(stored)], stored.to(rows[0].device)):
        n = len(stored)
    if n < MIN_PREFIX:
        return None
    suffix_lens = [len(r) - n for r in rows]
    total = n + max(suffix_lens)
    window = sliding_window_of(config)
    if window is not None and len(set(suffix_lens)) > 1 and total + max_new_tokens > window:
        return None
    per_token = {k: v for k, v in inputs.items()
                 if torch.is_tensor(v) and v.dim() == 2 and v.shape == ids.shape}
    out = {k: v for k, v in inputs.items() if k not in per_token}
    for key, value in per_token.items():
        fill = pad_id if key == "input_ids" else 0
        laid = value.new_full((ids.shape[0], total), fill)
        for i in range(ids.shape[0]):
            own = value[i][mask[i].bool()]
            laid[i, :n] = own[:n]
            laid[i, total - suffix_lens[i]:] = own[n:]
        out[key] = laid  # the mask laid this way is 1 on prefix and suffix, 0 on the middle pads
    return PrefixPlan(prefix=rows[0][:n].clone(), inputs=out)


def compute_prefix_cache(model, prefix: torch.Tensor):
    """The KV cache of ``prefix`` (a batch of one; text only, positions 0..P-1).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The generating model.
    prefix : torch.Tensor
        1-D prefix token ids.

    Returns
    -------
    transformers.Cache
        The model's KV cache after the prefix, batch size 1.
    """
    ids = prefix.unsqueeze(0).to(model.device)
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
    return out.cache if hasattr(out, "cache") else out.past_key_values


def expanded_copy(cache, batch: int):
    """A copy of ``cache`` repeated ``batch`` times along the batch (``generate`` extends the cache
    it is given in place, so the stored one is never handed out).

    Parameters
    ----------
    cache : transformers.Cache
        A cache of batch size 1 (it is not changed).
    batch : int
        Rows of the batch to generate.

    Returns
    -------
    transformers.Cache
        A deep copy with batch size ``batch``.
    """
    new = copy.deepcopy(cache)
    new.batch_repeat_interleave(batch)
    return new


def reset_rope_deltas(model) -> None:
    """Forget mRoPE deltas from an earlier call (Qwen2-VL family): with a cache passed in and no
    image among the new tokens, ``generate`` would add the stale deltas to the positions.

    Parameters
    ----------
    model : torch.nn.Module
        The model; every submodule's ``rope_deltas`` is set to None.
    """
    for module in model.modules():
        if getattr(module, "rope_deltas", None) is not None:
            module.rope_deltas = None
