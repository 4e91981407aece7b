"""Factories for the model kinds of this package that need no provider SDK.

``AGENT_MODEL_KINDS`` maps a config entry's ``kind`` to a factory taking the entry (any object
with ``name``, ``model`` and ``options``, i.e. ``medscope.models.config.ModelEntry``) and
returning a ChatModel. ``medscope.models.registry.MODEL_KINDS`` is extended with it:

- ``policy``: ``model`` (or ``options.policy``) is always-claims | always-absent |
  always-refers | always-clarifies;
- ``classical`` (alias ``classical_reader``): the pixel reader (``model``: dog_blob, alias
  intensity_outlier); ``options`` may set blob_z, max_noise and ``weights`` (URI of a
  reader fitted by medscope.models.classical_fit on a train split: the fitted lesion score
  then replaces the unfitted blob rule);
- ``organ_reader``: the organ-presence probe's pixel reader (medscope.models.organ_reader);
  ``options.weights``: its fitted artifact;
- ``local_hf``: ``model`` is a checkpoint folder; ``options``: adapter, device, dtype, batch_size.
"""

from __future__ import annotations

from collections.abc import Callable

from medscope.errors import MedScopeError
from medscope.models.base import ChatModel


def _options(entry) -> dict:
    return dict(getattr(entry, "options", None) or {})


def build_policy(entry) -> ChatModel:
    """``policy``: a constant policy named by ``model`` (or ``options.policy``).

    Parameters
    ----------
    entry : ModelEntry
        The config entry (``name``, ``model``, ``options``).

    Returns
    -------
    ChatModel
        A ``TrivialPolicy``.

    Raises
    ------
    MedScopeError
        If the entry names no policy.
    """
    from medscope.models.policies import TrivialPolicy

    policy = getattr(entry, "model", None) or _options(entry).get("policy")
    if not policy:
        raise MedScopeError(f"model {entry.name}: kind policy needs model: always-claims | always-absent | ...")
    return TrivialPolicy(policy=str(policy), name=entry.name)


CLASSICAL_METHODS = (None, "", "dog_blob", "intensity_outlier", "pixel_reader")


def build_classical(entry) -> ChatModel:
    """``classical``: the pixel reader, unfitted or with fitted ``options.weights``.

    Parameters
    ----------
    entry : ModelEntry
        The config entry; ``model`` one of ``CLASSICAL_METHODS``, ``options`` among blob_z, max_noise,
        weights.

    Returns
    -------
    ChatModel
        A ``ClassicalReader``.

    Raises
    ------
    MedScopeError
        If the method or an option is unknown, or the weights cannot be loaded.
    """
    from medscope.models.classical import ClassicalReader

    method = getattr(entry, "model", None)
    if method not in CLASSICAL_METHODS:
        raise MedScopeError(f"model {entry.name}: unknown classical method {method!r}; the reader is dog_blob")
    opts = _options(entry)
    unknown = set(opts) - {"blob_z", "max_noise", "weights"}
    if unknown:
        raise MedScopeError(f"model {entry.name}: unknown classical options {sorted(unknown)}")
    weights = opts.pop("weights", None)
    return ClassicalReader(name=entry.name, weights=str(weights) if weights else None,
                           **{k: float(v) for k, v in opts.items()})


def build_organ_reader(entry) -> ChatModel:
    """``organ_reader``: the probe's pixel organ reader; ``options.weights``: its fitted artifact.

    Parameters
    ----------
    entry : ModelEntry
        The config entry; ``options.weights`` is the fitted artifact's URI.

    Returns
    -------
    ChatModel
        An ``OrganReader``.

    Raises
    ------
    MedScopeError
        If ``options.weights`` is missing.
    """
    from medscope.models.organ_reader import OrganReader

    weights = _options(entry).get("weights")
    if not weights:
        raise MedScopeError(f"model {entry.name}: kind organ_reader needs options.weights (medscope.models.organ_reader)")
    return OrganReader(weights=str(weights), name=entry.name)


def build_local_hf(entry) -> ChatModel:
    """``local_hf``: a local checkpoint through transformers (``local_hf.from_entry``).

    Parameters
    ----------
    entry : ModelEntry
        The config entry; ``model`` is the checkpoint folder.

    Returns
    -------
    ChatModel
        A ``LocalHFModel``.
    """
    from medscope.models.local_hf import from_entry

    return from_entry(entry)


AGENT_MODEL_KINDS: dict[str, Callable[[object], ChatModel]] = {
    "policy": build_policy,
    "classical": build_classical,
    "classical_reader": build_classical,
    "local_hf": build_local_hf,
    "organ_reader": build_organ_reader,
}
