"""Reading probe replies: present / absent / not-addressed, and the hedge lexicon (seed 003).

Not-addressed is its own outcome, never read as absent. Hedging is detected by a deliberately
inclusive lexical rule over the whole reply; the cue that fired is reported so a table can say
how much one unambiguous cue carries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from medscope.answers.matching import read_text

VERDICTS = ("present", "absent", "not_addressed")

FORMAT_INSTRUCTIONS = {
    "free_text": "Answer in free text.",
    "verdict_json": (
        'Reply with JSON only, the verdict first: {"present": true or false, "reason": "<one sentence>"}'
    ),
    "reasoning_json": (
        'Reply with JSON only, reasoning first: {"observation": "<what you see>", '
        '"reasoning": "<why>", "present": true or false}'
    ),
}

_KEYS = ("present", "verdict", "answer", "organ_present", "is_present", "visible")


@dataclass(frozen=True)
class Reading:
    verdict: str  # present | absent | not_addressed
    clean: bool  # a JSON format whose reply parsed as JSON with a verdict (clean resolution)
    hedge_cues: tuple[str, ...]  # every lexicon cue that fired, in lexicon order

    @property
    def hedged(self) -> bool:
        return bool(self.hedge_cues)

    @property
    def hedge_cue(self) -> str | None:
        return self.hedge_cues[0] if self.hedge_cues else None


def text_verdict(text: str, organ: str = "", question: str = "") -> str:
    """Free-text reply -> verdict, with the shared reader of every protocol
    (:func:`medscope.answers.matching.read_text`: verdict lines, then a leading yes/no, then the
    organ's mentions with their negation scope, then a presence / absence predicate). Refer,
    clarify and unreadable replies are not-addressed."""
    r = read_text(text or "", question or f"Is the {organ or 'organ'} visible?", organ, "presence")
    if r.action != "answer":
        return "not_addressed"
    return "present" if r.claim else "absent"


def _json_object(text: str) -> dict | None:
    t = text.strip()
    if t.startswith("```"):
        t = re.sub(r"^```\w*\s*|\s*```$", "", t)
    start, end = t.find("{"), t.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = json.loads(t[start : end + 1])
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _json_verdict(obj: dict) -> str:
    for key in _KEYS:
        if key not in obj:
            continue
        v = obj[key]
        if isinstance(v, bool):
            return "present" if v else "absent"
        if isinstance(v, str):
            s = v.strip().lower()
            if s in ("yes", "true", "present", "visible"):
                return "present"
            if s in ("no", "false", "absent", "not present", "not visible"):
                return "absent"
    return "not_addressed"


def hedge_cues(text: str, lexicon: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Every cue of ``lexicon`` found in ``text`` (case-insensitive, on word boundaries)."""
    t = " ".join(text.lower().replace("’", "'").split())
    return tuple(c for c in lexicon if re.search(rf"(?<!\w){re.escape(c.lower())}(?!\w)", t))


def read_reply(text: str | None, fmt: str, lexicon: list[str] | tuple[str, ...], organ: str = "",
               question: str = "") -> Reading:
    """Parse one reply under output format ``fmt`` (free_text | verdict_json | reasoning_json).

    A JSON format whose reply is not JSON with a verdict falls back to the free-text reading
    (clean=False), so malformed structure is visible as a clean-resolution rate. ``organ`` (and
    the ``question``) let the free-text reading find the organ's own mentions.
    """
    text = text or ""
    cues = hedge_cues(text, lexicon)
    if fmt == "free_text":
        return Reading(text_verdict(text, organ, question), True, cues)
    obj = _json_object(text)
    if obj is not None:
        verdict = _json_verdict(obj)
        if verdict != "not_addressed":
            return Reading(verdict, True, cues)
    return Reading(text_verdict(text, organ, question), False, cues)


def probe_prompt(question: str, fmt: str) -> str:
    """The single-turn prompt: the question and the output format's instruction."""
    try:
        return f"{question} {FORMAT_INSTRUCTIONS[fmt]}"
    except KeyError:
        raise ValueError(f"unknown probe format {fmt!r}; known: {', '.join(FORMAT_INSTRUCTIONS)}") from None
