"""Trivial policies as ChatModels (counterfactual paper §3.2: constant policies score ESG 0).

Each ignores the image and writes one final action in the agent format. "Always claims"
and "always absent" phrase their answer for the question's kind, so that the shared matcher
reads the intended decision: "Yes"/"No" to a presence question, "No"/"Yes" to a health
question, a named abnormality / "No abnormality" to an open one.
"""

from __future__ import annotations

from dataclasses import dataclass

from medscope.answers.actions import FinalAction, format_final
from medscope.answers.matching import infer_question_kind
from medscope.errors import MedScopeError
from medscope.models.base import Completion, Decoding, Message

POLICIES = ("always-claims", "always-absent", "always-refers", "always-clarifies")
# Other spellings seen in configs (e.g. configs/models/demo.yaml: always_present, always_refer).
ALIASES = {
    "always-present": "always-claims", "always-claim": "always-claims", "always-yes": "always-claims",
    "always-no": "always-absent", "always-refer": "always-refers", "always-clarify": "always-clarifies",
}


def canonical_policy(name: str) -> str:
    """The canonical policy name for ``name`` (underscores, aliases), or a MedScopeError.

    Parameters
    ----------
    name : str
        A policy name, any case, "_" or "-", or an alias in ``ALIASES``.

    Returns
    -------
    str
        One of ``POLICIES``.

    Raises
    ------
    MedScopeError
        If the name is not a known policy.
    """
    key = str(name).strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in POLICIES:
        raise MedScopeError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}")
    return key


def last_question(messages: list[Message]) -> str:
    """The text of the last user turn that is not a tool result: the case's question.

    Parameters
    ----------
    messages : list of Message
        The conversation.

    Returns
    -------
    str
        The stripped text; "" when there is none.
    """
    for m in reversed(messages):
        if m.role == "user":
            text = m.joined_text.strip()
            if not text.startswith("Tool "):
                return text
    return ""


def _answer(policy: str, kind: str) -> FinalAction:
    if policy == "always-refers":
        return FinalAction("refer", reason="I cannot decide from this image.")
    if policy == "always-clarifies":
        return FinalAction("clarify", question="Could you provide a clearer image of the region?")
    claims = policy == "always-claims"
    if kind == "health":
        return FinalAction("answer", answer="No" if claims else "Yes", confidence=0.5)
    if kind == "open":
        return FinalAction("answer", answer="Abnormality present" if claims else "No abnormality", confidence=0.5)
    return FinalAction("answer", answer="Yes" if claims else "No", confidence=0.5)


@dataclass
class TrivialPolicy:
    """A constant policy; ``policy`` is one of :data:`POLICIES`."""

    policy: str
    name: str = ""
    provider: str = "policy"
    endpoint: str = "local"

    def __post_init__(self):
        self.policy = canonical_policy(self.policy)
        self.name = self.name or f"policy/{self.policy}"

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        kind = infer_question_kind(last_question(messages))
        text = format_final(_answer(self.policy, kind), reasoning="Constant policy.")
        return Completion(text=text, input_tokens=0, output_tokens=0, finish_reason="stop")
