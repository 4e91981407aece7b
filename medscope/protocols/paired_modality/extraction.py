"""The extraction pass of extract-then-judge (paired-modality paper §4.2, Appendix A).

Only the PHOTO FINDINGS section of a reply reaches the judge: the radiograph description and
the SUGGESTIVE OF hypotheses are removed, so a diagnosis stated elsewhere is never counted as a
photographic finding. Replies are messy, so headers are found in any common spelling
(``PHOTO FINDINGS:``, ``## Photo findings``, ``**Clinical photograph:**``, ``Photograph:``,
``1. Clinical photo findings -``, ``Skin:``, ``PHOTO_FINDINGS``), in any order, and wherever they
stand on a line: a one-line reply ``PHOTO FINDINGS: ... RADIOGRAPH FINDINGS: ... SUGGESTIVE OF: ...``
splits like a multi-line one. Inside a line a header must be written as one (the prompt's section
names in any case, capitals, or markdown bold) and the reply must name at least two kinds of
section. Fallbacks, each named in ``method``:

- ``section``: one or more photo-findings sections, joined;
- ``final_action``: a reply in the agent action format (``<final>{...}</final>``): its
  answer, or nothing for refer / clarify;
- ``whole_reply``: a photo-only reply with no recognisable section at all: the whole reply
  (reasoning removed), less its sentences that state a diagnosis ("suggestive of", "diagnosis");
- ``empty``: nothing was written (the judge sees no findings: a refusal misses what is there);
- ``extraction_failed``: the photo section cannot be isolated (other sections but no photo one,
  or a paired reply without sections). Nothing goes to the judge; the episode is counted and
  shown as ``extraction_failed`` and never scored as "no finding".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from medscope.answers.parser import parse_reply, strip_reasoning

_SEP = r"[\s_\-]*"
_WHAT = r"(?:findings?|description|analysis|assessment|interpretation|exam(?:ination)?)"
_PHOTO_NOUN = r"photo(?:graph(?:ic)?)?"
# Photo section names: "Photo findings", "Photograph", "Clinical photo", "External photograph
# analysis", "Skin", "Skin examination", "Findings on the photograph", "Description of the photo".
_PHOTO = (rf"(?:(?:clinical|external){_SEP})*{_PHOTO_NOUN}(?:{_SEP}\d)?(?:{_SEP}{_WHAT})?"
          rf"|skin(?:{_SEP}{_WHAT})?"
          rf"|(?:findings|{_WHAT}){_SEP}(?:in|on|from|of){_SEP}(?:the{_SEP})?(?:clinical{_SEP})?{_PHOTO_NOUN}")
_RADIO = (rf"(?:chest{_SEP})?(?:radiograph(?:ic)?|x{_SEP}?ray|cxr|film)(?:{_SEP}{_WHAT})?"
          rf"|(?:findings|{_WHAT}){_SEP}(?:in|on|from|of){_SEP}(?:the{_SEP})?(?:chest{_SEP})?(?:radiograph|x{_SEP}?ray)")
_SUGGEST = (r"suggestive" + _SEP + r"of|impression|(?:differential" + _SEP + r")?diagnos[ie]s|differential|assessment"
            r"|synthesis|summary|conclusion")
# A header: at a line start, optional list number / markdown marks, the name, then a colon, a
# spaced dash or the end of the line (so "photo findings were subtle" or "Photo-realistic" in
# prose is not a header).
_HEADER = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\d+[.)][ \t]*)?[*_]{0,3}[ \t]*"
    rf"(?P<name>{_PHOTO}|{_RADIO}|{_SUGGEST})"
    r"(?:[ \t]*\([^)\n]{0,40}\))?[ \t]*[*_]{0,3}[ \t]*(?::|[-–—](?=[ \t])|\n|$)[*_]{0,3}",
    re.IGNORECASE | re.MULTILINE,
)
# A header inside a line ("PHOTO FINDINGS: acne. RADIOGRAPH FINDINGS: nodules. SUGGESTIVE OF: ..."
# on one line): after a space or punctuation, the name, then a colon or a spaced dash. Prose uses
# these words too ("the overlying skin: dry"), so one counts only when it is written as a header:
# a name of the prompt's own sections (any case), in capitals, or in markdown bold.
_INLINE_HEADER = re.compile(
    r"(?<![^\s.;,|)])(?P<open>\*\*|__)?[ \t]*"
    rf"(?P<name>{_PHOTO}|{_RADIO}|{_SUGGEST})"
    r"(?:[ \t]*\([^)\n]{0,40}\))?[ \t]*(?P<close>\*\*|__)?[ \t]*(?::|[-–—](?=[ \t]))(?P<after>\*\*|__)?",
    re.IGNORECASE,
)
_PROMPT_SECTION = re.compile(rf"photo{_SEP}findings|radiograph{_SEP}findings|suggestive{_SEP}of", re.IGNORECASE)
_DIAGNOSTIC = re.compile(r"suggestive of|consistent with|diagnos[ie]s|differential|likely represents", re.IGNORECASE)


FAILED = "extraction_failed"


@dataclass(frozen=True)
class Extraction:
    text: str  # what the judge sees
    method: str  # section | final_action | whole_reply | empty | extraction_failed


def header_kind(name: str) -> str:
    """photo | radiograph | suggestive, for a matched header name.

    Parameters
    ----------
    name : str
        The ``name`` group of a header match.

    Returns
    -------
    str
        'photo', 'radiograph' or 'suggestive'.
    """
    n = name.lower()
    if re.fullmatch(_PHOTO, n, re.IGNORECASE):
        return "photo"
    if re.fullmatch(_RADIO, n, re.IGNORECASE):
        return "radiograph"
    return "suggestive"


def _written_as_header(m: re.Match) -> bool:
    name = m.group("name")
    bold = bool(m.group("open")) and bool(m.group("close") or m.group("after"))
    return bool(_PROMPT_SECTION.fullmatch(name)) or name.isupper() or bold


def _headers(text: str) -> list[re.Match]:
    """Every header of a reply, in order: those opening a line, and those inside a line that are
    written as headers (:data:`_INLINE_HEADER`) when the reply names at least two kinds of section
    (a lone "suggestive of:" inside a sentence starts no section)."""
    line_start = list(_HEADER.finditer(text))
    taken = [(m.start(), m.end()) for m in line_start]
    inline = [m for m in _INLINE_HEADER.finditer(text)
              if _written_as_header(m) and not any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken)]
    heads = sorted(line_start + inline, key=lambda m: m.start())
    if len({header_kind(m.group("name")) for m in heads}) < 2:
        return line_start
    return heads


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(text before the first header, [(kind, body), ...]) of a reply.

    Parameters
    ----------
    text : str
        The reply (reasoning already removed).

    Returns
    -------
    before : str
        The text before the first header (the whole text when there is none).
    sections : list of tuple of (str, str)
        Each header's kind (:func:`header_kind`) and the text up to the next header, in order; empty
        when there is no header.
    """
    heads = _headers(text)
    if not heads:
        return text, []
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((header_kind(m.group("name")), text[m.end():end]))
    return text[: heads[0].start()], out


def _tidy(text: str) -> str:
    lines = [ln.rstrip() for ln in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(" \t\n*_|")


def extract_photo_findings(reply: str | None, setting: str | None = None) -> Extraction:
    """The PHOTO FINDINGS section of one reply (see the module docstring for the fallbacks).
    ``setting``: ``paired`` when the reply may also describe a radiograph, so a reply without
    headers cannot be split and extraction fails.

    Parameters
    ----------
    reply : str or None
        The model's reply.
    setting : str or None, optional
        The episode's setting; 'paired' makes a reply without headers fail extraction.

    Returns
    -------
    Extraction
        The text the judge sees and the ``method`` ('section', 'final_action', 'whole_reply', 'empty' or
        'extraction_failed', with empty text).

    References
    ----------
    .. [1] paired-modality paper, §4.2, Appendix A.
    """
    clean = strip_reasoning(reply or "").strip()
    if not clean:
        return Extraction("", "empty")
    if re.search(r"<\s*final\s*>", clean, re.IGNORECASE):
        parsed = parse_reply(clean)
        if parsed.kind == "final" and parsed.final is not None:
            return Extraction(parsed.final.answer or "" if parsed.final.action == "answer" else "", "final_action")
    _before, sections = split_sections(clean)
    photo = [body for kind, body in sections if kind == "photo"]
    if photo:
        return Extraction(_tidy("\n\n".join(photo)), "section")
    if sections or setting == "paired":
        # other sections but no photo one, or an unsectioned reply that may mix both images:
        # guessing would hand the judge radiograph text or nothing at all (paired-modality paper §4.2)
        return Extraction("", FAILED)
    kept = [s for s in re.split(r"(?<=[.!?])\s+", clean) if not _DIAGNOSTIC.search(s)]
    return Extraction(_tidy(" ".join(kept)), "whole_reply")
