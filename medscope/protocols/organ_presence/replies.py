"""Reading probe replies: present / absent / not-addressed, and the hedge lexicon (organ-presence paper).

Not-addressed is its own outcome, never read as absent. Hedging is detected by a deliberately
inclusive lexical rule over the whole reply; the cue that fired is reported so a table can say
how much one unambiguous cue carries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from medscope.answers.matching import read_decision

VERDICTS = ("present", "absent", "not_addressed")

# The paper's three output formats (organ-presence paper): forced-choice free text ("where abstention is
# unavailable"), verdict-first JSON, and reasoning-first JSON, where the model "writes an
# observation and a rationale before committing to a presence map". addition: the paper does not
# print its prompt text; these sentences are ours, worded from those descriptions
# (docs/probe.md "Prompts").
FORMAT_INSTRUCTIONS = {
    "free_text": "Answer yes or no.",
    "verdict_json": (
        'Reply with JSON only, the verdict first: {"present": true or false, "reason": "<one sentence>"}'
    ),
    "reasoning_json": (
        'Reply with JSON only, reasoning first: {"observation": "<what you see on this slice>", '
        '"reasoning": "<why>", "presence": {"<organ>": true or false}}'
    ),
}


@dataclass(frozen=True)
class Reading:
    verdict: str  # present | absent | not_addressed | unclear (the reader did not commit; left out of every n)
    clean: bool  # parsed: the format's own verdict resolved (JSON: a verdict field; free text: any verdict)
    hedge_cues: tuple[str, ...]  # every lexicon cue that fired, in lexicon order

    @property
    def hedged(self) -> bool:
        return bool(self.hedge_cues)

    @property
    def hedge_cue(self) -> str | None:
        return self.hedge_cues[0] if self.hedge_cues else None


def _question(organ: str, question: str) -> str:
    return question or f"Is the {organ or 'organ'} visible?"


def text_verdict(text: str, organ: str = "", question: str = "") -> str:
    """Reply -> verdict, with the shared reader of every protocol
    (:func:`medscope.answers.matching.read_decision`: ``<final>`` tags and JSON verdict fields first,
    then self-corrections, verdict lines, label lines, a leading yes/no, the organ's mentions with
    their negation scope, a presence / absence predicate). Refer, clarify, unresolved verdict
    fields and unreadable replies are not-addressed.

    Parameters
    ----------
    text : str
        The model's reply; None reads as empty.
    organ : str, optional
        The organ asked about, so the reader finds its mentions.
    question : str, optional
        The question asked (default: "Is the <organ> visible?").

    Returns
    -------
    {'present', 'absent', 'not_addressed', 'unclear'}
        The verdict; ``unclear`` where the reader's evidence does not agree (no verdict: left out of every n).
    """
    r = read_decision(text or "", _question(organ, question), organ, "organ")
    if r.action == "unclear":
        return "unclear"
    if r.action != "answer":
        return "not_addressed"
    return "present" if r.claim else "absent"


def hedge_cues(text: str, lexicon: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Every cue of ``lexicon`` found in ``text`` (case-insensitive, on word boundaries).

    Parameters
    ----------
    text : str
        The reply; curly apostrophes read as straight ones and whitespace is collapsed.
    lexicon : list or tuple of str
        The hedge cues.

    Returns
    -------
    tuple of str
        The cues found, in lexicon order.
    """
    t = " ".join(text.lower().replace("’", "'").split())
    return tuple(c for c in lexicon if re.search(rf"(?<!\w){re.escape(c.lower())}(?!\w)", t))


def read_reply(text: str | None, fmt: str, lexicon: list[str] | tuple[str, ...], organ: str = "",
               question: str = "") -> Reading:
    """Parse one reply under output format ``fmt`` (free_text | verdict_json | reasoning_json).

    Every format goes through the same reader (``<final>`` / verdict lines outrank everything; a
    JSON verdict field is read whatever its name; one that does not resolve is not-addressed).
    ``clean`` is the parse rate of the organ-presence paper's "clean resolution": for a JSON format, the reply was
    a JSON object whose verdict field resolved; for free text, the reply resolved to a verdict.
    ``organ`` (and the ``question``) let the reader find the organ's own mentions and keys.

    Parameters
    ----------
    text : str or None
        The model's reply; None reads as empty.
    fmt : {'free_text', 'verdict_json', 'reasoning_json'}
        The output format asked for.
    lexicon : list or tuple of str
        The hedge cues (:func:`hedge_cues`).
    organ : str, optional
        The organ asked about.
    question : str, optional
        The question asked (default: "Is the <organ> visible?").

    Returns
    -------
    Reading
        The verdict, whether it resolved cleanly, and every hedge cue that fired.

    Raises
    ------
    ValueError
        When ``fmt`` is not a known format.

    References
    ----------
    .. [1] organ-presence paper.
    """
    if fmt not in FORMAT_INSTRUCTIONS:
        raise ValueError(f"unknown probe format {fmt!r}; known: {', '.join(FORMAT_INSTRUCTIONS)}")
    text = text or ""
    cues = hedge_cues(text, lexicon)
    r = read_decision(text, _question(organ, question), organ, "organ")
    verdict = ("unclear" if r.action == "unclear" else "not_addressed") if r.action != "answer" else (
        "present" if r.claim else "absent")
    resolved = verdict not in ("not_addressed", "unclear")
    clean = resolved and (fmt == "free_text" or r.rule == "json-field")
    return Reading(verdict, clean, cues)


def probe_prompt(question: str, fmt: str, organ: str = "") -> str:
    """The single-turn prompt: the question and the output format's instruction (the reasoning-
    first presence map keyed by the asked ``organ``).

    Parameters
    ----------
    question : str
        The presence question.
    fmt : {'free_text', 'verdict_json', 'reasoning_json'}
        The output format.
    organ : str, optional
        The organ asked about; underscores read as spaces (default in the presence map: "organ").

    Returns
    -------
    str
        The question, a space and the format's instruction.

    Raises
    ------
    ValueError
        When ``fmt`` is not a known format.
    """
    try:
        instruction = FORMAT_INSTRUCTIONS[fmt]
    except KeyError:
        raise ValueError(f"unknown probe format {fmt!r}; known: {', '.join(FORMAT_INSTRUCTIONS)}") from None
    return f"{question} {instruction.replace('<organ>', organ.replace('_', ' ') or 'organ')}"
