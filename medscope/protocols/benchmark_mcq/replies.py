"""Prompt and reply reader of the multiple-choice protocol (seed 001: image(s), question, options only)."""

from __future__ import annotations

import json
import re
import string

LETTERS = string.ascii_uppercase[:5]
PROMPT_VERSION = "mcq-v1"


def mcq_prompt(question: str, options: list[str], sequences: list[str]) -> str:
    """The text every condition shares: what the images are, the question, lettered options."""
    n = len(sequences)
    shown = ", ".join(sequences)
    lines = [f"{'One composite image' if n == 1 else f'{n} composite images'} ({shown}): each is a 12 x 12 "
             "montage of axial slices sampled uniformly through the volume, read left to right, top to bottom.",
             "", question.strip(), ""]
    lines += [f"{LETTERS[i]}. {o}" for i, o in enumerate(options)]
    lines += ["", "Answer with the letter of one option."]
    return "\n".join(lines)


_FINAL = re.compile(r"<final>(.*?)</final>", re.S)
_PATTERNS = (
    re.compile(r"^\W*\(?([A-E])\)?\W*$"),  # the whole reply is one letter
    re.compile(r"\b(?i:answer|option|choice)\s*(?i:is|:)?\s*\(?\**([A-E])\b"),
    re.compile(r"^\W*\(?([A-E])[.):]\s"),  # "B. ..." / "(B) ..."
)


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9.]+", " ", s.lower()).strip(" .")


def read_choice(text: str | None, options: list[str]) -> str | None:
    """The letter a reply chooses among ``options``, or None (an invalid response).

    Accepts a bare letter, "answer: B", "B. text", the exact text of one option, and the agent
    format's ``<final>{"answer": ...}</final>`` (trivial policies and other agent-format models).
    When the options are exactly Yes / No, a free-text answer is read by the shared finding
    matcher (``medscope.answers.matching.claims_finding``): a claim is Yes, a denial No.
    """
    if not text:
        return None
    m = _FINAL.search(text)
    if m:
        try:
            obj = json.loads(m.group(1))
            text = str(obj.get("answer") or "") if isinstance(obj, dict) else ""
        except json.JSONDecodeError:
            return None
    text = text.strip()
    k = len(options)
    for pat in _PATTERNS:
        hit = pat.search(text)
        if hit and LETTERS.index(hit.group(1)) < k:
            return hit.group(1)
    by_text = {_norm(o): LETTERS[i] for i, o in enumerate(options)}
    if _norm(text) in by_text:
        return by_text[_norm(text)]
    if sorted(by_text) == ["no", "yes"]:
        from medscope.answers.matching import claims_finding

        claim = claims_finding(text, "Is there a finding?", "", "presence")
        return None if claim is None else by_text["yes" if claim else "no"]
    return None
