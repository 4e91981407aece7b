"""The one interface every model adapter implements (docs/design.md, "Same protocol for every model").

Adapters only translate: the prompt, tools, turn limit, image size and parsing are shared and
live in the protocols (``medscope.protocols.counterfactual.agent_episode``). An adapter receives provider-neutral messages and returns one
completion with its token counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Part:
    """One piece of a message: text, or an image as PNG bytes."""

    text: str | None = None
    png: bytes | None = None

    @property
    def is_image(self) -> bool:
        return self.png is not None


@dataclass(frozen=True)
class Message:
    role: str  # system | user | assistant
    parts: tuple[Part, ...]

    @staticmethod
    def text(role: str, text: str) -> "Message":
        return Message(role, (Part(text=text),))

    @property
    def joined_text(self) -> str:
        return "\n".join(p.text for p in self.parts if p.text is not None)


@dataclass(frozen=True)
class Decoding:
    """Decoding settings; part of every request key, so a change is a new unit of work."""

    temperature: float = 0.0
    max_output_tokens: int = 512
    seed: int | None = None
    extra: tuple[tuple[str, str], ...] = ()  # provider settings as config, e.g. image detail

    def key(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in sorted(self.extra))
        return f"t={self.temperature};max={self.max_output_tokens};seed={self.seed};{extra}"


@dataclass
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    refusal: bool = False
    raw: dict = field(default_factory=dict)  # provider metadata safe to keep (never headers/keys)


@runtime_checkable
class ChatModel(Protocol):
    """What the episode loop calls. ``name`` identifies the model in every table."""

    name: str
    provider: str  # openai | anthropic | gemini | local | policy | ...
    endpoint: str  # base URL or "local"; checked against a private cohort's allow-list

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion: ...


class TransientModelError(Exception):
    """A failure worth retrying (429, 5xx, timeout, dropped connection)."""

    def __init__(self, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PermanentModelError(Exception):
    """A failure not worth retrying (other 4xx, malformed request, refused by policy)."""
