"""Prompt and reply reader of the multiple-choice protocol (benchmark-MCQ paper: image(s), question, options only)."""

from __future__ import annotations

import json
import re
import string

LETTERS = string.ascii_uppercase[:5]
PROMPT_VERSION = "mcq-v1"


def mcq_prompt(question: str, options: list[str], sequences: list[str]) -> str:
    """The text every condition shares: what the images are, the question, lettered options.

    Parameters
    ----------
    question : str
        The question text (stripped of surrounding white space).
    options : list of str
        The options, lettered A, B, ... in order.
    sequences : list of str
        The sequences whose montages are shown, in order.

    Returns
    -------
    str
        The prompt: the montages' description, the question, the lettered options and the instruction
        to answer with one letter.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    n = len(sequences)
    shown = ", ".join(sequences)
    lines = [f"{'One composite image' if n == 1 else f'{n} composite images'} ({shown}): each is a 12 x 12 "
             "montage of axial slices sampled uniformly through the volume, read left to right, top to bottom.",
             "", question.strip(), ""]
    lines += [f"{LETTERS[i]}. {o}" for i, o in enumerate(options)]
    lines += ["", "Answer with the letter of one option."]
    return "\n".join(lines)


_FINAL = re.compile(r"<final>(.*?)</final>", re.S)
# A letter as an answer: upper case anywhere a word ends; lower case only where nothing follows
# but punctuation (so "the answer is a mass" is not read as A).
_LETTER = r"[(\[*\"']*(?:([A-E])(?![\w'-])|([a-e])(?=\s*(?:$|[).:,;!*\"'\]\n])))"
_WHOLE = re.compile(r"^\W*(?:(?:option|choice|letter|answer)\s*:?\s*)?\(?([A-Ea-e])\)?\W*$", re.I)
# Verdicts: "the answer is B", "Final answer: (b)", "correct option: B", "I choose B", "Therefore B".
_VERDICTS = (
    re.compile(r"(?i:\b(?:final\s+|correct\s+|best\s+|right\s+)?(?:answer|option|choice)\s*(?:is|:|=|would be|"
               r"should be)\s*(?:option\s+|choice\s+|letter\s+)?)" + _LETTER),
    re.compile(r"(?i:\bi\s+(?:would\s+)?(?:choose|select|pick|go with)\s+(?:option\s+|choice\s+)?)" + _LETTER),
    re.compile(r"(?i:\b(?:therefore|thus|hence|so)\s*,?\s+(?:the\s+answer\s+is\s+)?(?:option\s+)?)" + _LETTER),
    re.compile(r"(?im:^\W*(?:final\s+)?(?:answer|verdict|choice)\s*[:\-]\s*)" + _LETTER),
)
_LEADING = re.compile(r"^\W*\(?([A-Ea-e])[.):]\s")  # "B. ..." / "(b) ..."


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9.]+", " ", s.lower()).strip(" .")


def _letter(m: re.Match) -> str:
    return (m.group(m.lastindex) or "").upper()


def read_choice(text: str | None, options: list[str]) -> str | None:
    """The letter a reply chooses among ``options``, or None (an invalid response).

    Read in this order, the first rule that decides wins: the agent format's
    ``<final>{"answer": ...}</final>``; a reply that is one letter ("B", "(b)", "Option B");
    the *last* verdict ("the answer is B", "Final answer: b", "I choose B", "Therefore, B") --
    a verdict outranks earlier mentions, so "Option A is unlikely; the answer is B." is B; a
    reply opening "B. text"; the exact text of one option. Letters in either case (a lower-case
    letter only where nothing but punctuation follows it). When the options are exactly Yes /
    No, a free-text answer is read by the shared finding matcher
    (``medscope.answers.matching.claims_finding``): a claim is Yes, a denial No.

    Parameters
    ----------
    text : str or None
        The model's reply (reasoning blocks are stripped first).
    options : list of str
        The question's options; a letter beyond their count is invalid.

    Returns
    -------
    str or None
        The chosen letter ('A' to 'E'), or None for an empty, unreadable or out-of-range reply.
    """
    if not text:
        return None
    from medscope.answers.parser import strip_reasoning

    text = strip_reasoning(text)
    m = _FINAL.search(text)
    if m:
        try:
            obj = json.loads(m.group(1))
            text = str(obj.get("answer") or "") if isinstance(obj, dict) else ""
        except json.JSONDecodeError:
            return None
    text = text.strip()
    k = len(options)
    valid = lambda letter: letter if letter and LETTERS.index(letter) < k else None  # noqa: E731
    whole = _WHOLE.match(text)
    if whole:
        return valid(whole.group(1).upper())
    verdicts = [(v.end(), _letter(v)) for pat in _VERDICTS for v in pat.finditer(text)]
    if verdicts:
        return valid(max(verdicts)[1])
    lead = _LEADING.match(text)
    if lead:
        return valid(lead.group(1).upper())
    by_text = {_norm(o): LETTERS[i] for i, o in enumerate(options)}
    if _norm(text) in by_text:
        return by_text[_norm(text)]
    if sorted(by_text) == ["no", "yes"]:
        from medscope.answers.matching import claims_finding

        claim = claims_finding(text, "Is there a finding?", "", "presence")
        return None if claim is None else by_text["yes" if claim else "no"]
    return None
