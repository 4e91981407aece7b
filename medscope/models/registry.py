"""Model kinds -> factories building a ChatModel from a ``ModelEntry`` (configs/models/*.yaml).

The evaluation branch registers the API kinds; the agent branch adds local HF VLMs, trivial
policies and the classical reader to the same dict. A factory takes the entry and returns a
ChatModel; imports stay inside factories so that an unused SDK is never imported.
"""

from __future__ import annotations

from collections.abc import Callable

from medscope.errors import MedScopeError
from medscope.models.base import ChatModel
from medscope.models.config import ModelEntry
from medscope.models.local_kinds import AGENT_MODEL_KINDS


def _openai(entry: ModelEntry) -> ChatModel:
    from medscope.models.openai_compat import OpenAIChatModel

    return OpenAIChatModel(entry)


def _azure_openai(entry: ModelEntry) -> ChatModel:
    from medscope.models.openai_compat import AzureOpenAIChatModel

    return AzureOpenAIChatModel(entry)


def _anthropic(entry: ModelEntry) -> ChatModel:
    from medscope.models.anthropic_api import AnthropicChatModel

    return AnthropicChatModel(entry)


def _gemini(entry: ModelEntry) -> ChatModel:
    from medscope.models.gemini_api import GeminiChatModel

    return GeminiChatModel(entry)


MODEL_KINDS: dict[str, Callable[[ModelEntry], ChatModel]] = {
    "openai": _openai,
    "azure_openai": _azure_openai,
    "anthropic": _anthropic,
    "gemini": _gemini,
    # policy, classical (alias classical_reader), local_hf: no provider SDK, see local_kinds.py
    **AGENT_MODEL_KINDS,
}

# Kinds that hold weights on an accelerator: the sweep gives them one GPU actor each.
LOCAL_KINDS: set[str] = {"local_hf"}


def build_model(entry: ModelEntry) -> ChatModel:
    """The ChatModel for one config entry.

    ``kind`` is a registered kind, or ``package.module:Class`` for an adapter that lives
    outside MedScope (it is called with the entry), so a new model family touches no shared code.

    Parameters
    ----------
    entry : ModelEntry
        A models-config entry (``name``, ``kind``, ``model``, ``options``, ...).

    Returns
    -------
    ChatModel
        The model the kind's factory builds.

    Raises
    ------
    MedScopeError
        If the kind is unknown or its ``package.module:Class`` cannot be imported (the factory may raise
        its own MedScopeError too).
    """
    if ":" in entry.kind:
        import importlib

        module, _, attr = entry.kind.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise MedScopeError(f"model {entry.name}: cannot import kind {entry.kind!r} ({err})") from None
        return factory(entry)
    try:
        factory = MODEL_KINDS[entry.kind]
    except KeyError:
        raise MedScopeError(
            f"model {entry.name}: unknown kind {entry.kind!r}; known: {', '.join(sorted(MODEL_KINDS))}"
        ) from None
    return factory(entry)
