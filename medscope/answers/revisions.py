"""Where a reply revises or completes its answer (issue 29): a self-correction read by what
follows it, a search reported with its outcome, a short verdict after the last colon. Rules of
the shared reader (:mod:`medscope.answers.matching`, whose docstring gives the order)."""

from __future__ import annotations

import re

from medscope.answers.matching import Reading, _content, _sentences, _term_pattern, read_text

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


def search_outcome(text: str, terms: tuple[str, ...]) -> bool | None:
    """A reply that reports a search for the finding and its outcome ("I looked for a pneumothorax
    and found none" -> False; "... and found one at the apex" -> True); None when it reports no
    search of the finding or no outcome. The mention itself is hypothetical ("looked for X"), so
    the outcome after it decides (issue 29)."""
    pat = _term_pattern(terms)
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


def self_correction(lines, question, finding, kind, synonyms) -> Reading | None:
    """A reply that takes its answer back ("Yes - actually, on closer inspection, no") is read by
    what follows its last correction (issue 29)."""
    flat = "\n".join(lines)
    last = None
    for last in _CORRECTION.finditer(flat):
        pass
    if last is None:
        return None
    tail = flat[last.end():].lstrip(" ,:;.-\u2014\u2013")
    if last.group(0) == "revised answer":
        tail = "answer: " + tail
    r = read_text(tail, question, finding, kind, synonyms, _corrections=False) if tail else None
    return Reading(r.action, r.claim, "self-correction") if r is not None and r.action == "answer" else None


def final_colon(lines, terms, finding, kind):
    """A short verdict after the reply's last colon ("... so my verdict is: yes", "Result:
    negative."), read with the question's polarity (issue 29)."""
    last = _sentences(lines[-1])[-1] if _sentences(lines[-1]) else ""
    if ":" not in last:
        return None
    rest = last.rsplit(":", 1)[1].strip()
    if not rest or len(rest.split()) > 5:
        return None
    got = _content([rest], terms, finding, kind, flip=True)
    return (got[0], got[1], "final-colon") if got is not None else None


