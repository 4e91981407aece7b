"""Where a reply revises or completes its answer: a self-correction read by what
follows it, a search reported with its outcome, a short verdict after the last colon. Pattern
helpers of the shared reader (:mod:`medscope.answers.matching`, whose docstring gives the order
and which reads what these find)."""

from __future__ import annotations

import re

_SEARCH = re.compile(
    r"\b(?:look(?:ed|ing|s)?|search(?:ed|ing|es)?|check(?:ed|ing|s)?|scan(?:ned|ning|s)?|evaluat(?:ed|ing|es?)|"
    r"assess(?:ed|ing|es)?|examin(?:ed|ing|es?)|inspect(?:ed|ing|s)?|trac(?:ed|ing)|hunt(?:ed|ing)?|screen(?:ed|ing)?)"
    r"\b(?:\s+[\w'-]+){0,5}?\s+for\b|\b(?:tried|try|trying|attempted) to (?:find|locate|identify|see)\b")
_FOUND_NONE = re.compile(
    r"\b(?:found|find|see|saw|identified|detected)\s+(?:none|nothing|no)\b|\bnothing\b|\bnone\b|"
    r"\b(?:could|can|did|do) not (?:find|see|identify|locate|detect)\b|\bcame up empty\b|\bwithout success\b|"
    r"\bno (?:sign|signs|evidence|trace)\b|\bfound (?:it |them )?empty\b|\b(?:is|are|was|were) not there\b|"
    r"\bnot (?:found|seen|present|detected|identified)\b|\bunsuccessful(?:ly)?\b")
_FOUND_ONE = re.compile(r"\b(?:found|find|identified|detected|see|saw|there (?:is|are|was|were))\s+"
                        r"(?:one|it|them|a|an|\d|several|two|multiple)\b(?! empty)|[:;]\s*(?:one|a|an|\d)\b")


def search_outcome(text: str, pat: re.Pattern | None) -> bool | None:
    """A reply that reports a search for the finding and its outcome ("I looked for a pneumothorax
    and found none" -> False; "... and found one at the apex" -> True); None when it reports no
    search of the finding or no outcome. The mention itself is hypothetical ("looked for X"), so
    the outcome after it decides. ``pat`` matches the finding's words.

    Parameters
    ----------
    text : str
        Normalised reply text (:func:`medscope.answers.matching.normalize`).
    pat : re.Pattern or None
        Pattern matching the finding's words; None gives None.

    Returns
    -------
    bool or None
        True when the search found it, False when it found nothing, None when no search of the finding
        (within four words of the search verb) with an outcome is reported.
    """
    if pat is None:
        return None
    for s in _SEARCH.finditer(text):
        m = pat.search(text, s.end(), s.end() + 80)
        if m is None or len(text[s.end():m.start()].split()) > 4:
            continue
        rest = text[m.end():]
        hits = [(h.start(), v) for p, v in ((_FOUND_NONE, False), (_FOUND_ONE, True)) for h in [p.search(rest)] if h]
        if hits:
            return min(hits)[1]
    return None


_CORRECTION = re.compile(
    r"\b(?:actually|wait|correction|on (?:a )?(?:closer|further|second) (?:inspection|look|review|examination)|"
    r"on second thoughts?|looking (?:again|more closely)|on reflection|re-?(?:checking|reading|examination|"
    r"examining|viewing)|on review|i misspoke|i retract(?: that)?|let me correct(?: that| myself)?|"
    r"correct myself|revised answer|update after review|i was wrong|i stand corrected|scratch that)\b")


# "I would recommend reviewing the image in lung windows" (issue 48, set O): a re-read advised to the
# user is advice, not the reply correcting itself
_ADVISED = re.compile(r"\b(?:recommend|recommends|suggest|suggests|advise|advises|consider|worth|benefit from|requires?|"
                      r"needs?)\s+$")


def correction_tail(text: str) -> str | None:
    """What follows a reply's last self-correction ("Yes - actually, on closer inspection, no" ->
    "no"), or None when the reply corrects nothing.

    Parameters
    ----------
    text : str
        Normalised reply text.

    Returns
    -------
    str or None
        The text after the last correction phrase, leading punctuation and spaces removed (prefixed
        ``"answer: "`` after "revised answer"); None when there is no correction or nothing follows it
        (never after "revised answer").
    """
    last = None
    for m in _CORRECTION.finditer(text):
        if not _ADVISED.search(text[:m.start()]):
            last = m
    if last is None:
        return None
    tail = text[last.end():].lstrip(" ,:;.-\u2014\u2013")
    if last.group(0) == "revised answer":
        tail = "answer: " + tail
    return tail or None


def final_colon_rest(sentence: str) -> str | None:
    """A short verdict (five words at most) after a sentence's last colon ("... so my verdict is:
    yes", "Result: negative."), or None.

    Parameters
    ----------
    sentence : str
        One normalised sentence.

    Returns
    -------
    str or None
        The stripped text after the last colon when it is one to five words; else None.
    """
    if ":" not in sentence:
        return None
    rest = sentence.rsplit(":", 1)[1].strip()
    return rest if rest and len(rest.split()) <= 5 else None
