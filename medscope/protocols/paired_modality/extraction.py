"""The extraction pass of extract-then-judge (seed 002 §4.2, Appendix A).

Only the PHOTO FINDINGS section of a reply reaches the judge: the radiograph description and
the SUGGESTIVE OF hypotheses are removed, so a diagnosis stated elsewhere is never counted as a
photographic finding. Replies are messy, so headers are found in any common spelling
(``PHOTO FINDINGS:``, ``## Photo findings``, ``**Photograph findings**``, ``1. Clinical
photo findings -``, ``PHOTO_FINDINGS``) and in any order. Fallbacks, each named in ``method``:

- ``section``: one or more photo-findings sections, joined;
- ``before_headers``: no photo header but other sections: the text before the first one;
- ``final_action``: a reply in the agent action format (``<final>{...}</final>``): its
  answer, or nothing for refer / clarify;
- ``whole_reply``: no recognisable section at all: the whole reply (reasoning removed), less
  its sentences that state a diagnosis ("suggestive of", "consistent with", "diagnosis");
- ``empty``: nothing was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from medscope.answers.parser import parse_reply, strip_reasoning

_SEP = r"[\s_\-]*"
_PHOTO = (rf"(?:clinical{_SEP})?(?:external{_SEP})?photo(?:graph(?:ic)?)?(?:{_SEP}\d)?{_SEP}(?:findings?|description)"
          rf"|findings{_SEP}(?:in|on|from){_SEP}(?:the{_SEP})?(?:clinical{_SEP})?photo(?:graph)?")
_RADIO = (rf"(?:chest{_SEP})?(?:radiograph(?:ic)?|x{_SEP}?ray|cxr){_SEP}(?:findings?|description)"
          rf"|findings{_SEP}(?:in|on|from){_SEP}(?:the{_SEP})?(?:chest{_SEP})?(?:radiograph|x{_SEP}?ray)")
_SUGGEST = (r"suggestive" + _SEP + r"of|impression|(?:differential" + _SEP + r")?diagnos[ie]s|differential|assessment"
            r"|synthesis|summary|conclusion")
# A header: at a line start, optional list number / markdown marks, the name, then a colon,
# dash or the end of the line (so "photo findings were subtle" in prose is not a header).
_HEADER = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\d+[.)][ \t]*)?[*_]{0,3}[ \t]*"
    rf"(?P<name>{_PHOTO}|{_RADIO}|{_SUGGEST})"
    r"(?:[ \t]*\([^)\n]{0,40}\))?[ \t]*[*_]{0,3}[ \t]*(?::|-|–|—|\n|$)[*_]{0,3}",
    re.IGNORECASE | re.MULTILINE,
)
_DIAGNOSTIC = re.compile(r"suggestive of|consistent with|diagnos[ie]s|differential|likely represents", re.IGNORECASE)


@dataclass(frozen=True)
class Extraction:
    text: str  # what the judge sees
    method: str  # section | before_headers | final_action | whole_reply | empty


def header_kind(name: str) -> str:
    """photo | radiograph | suggestive, for a matched header name."""
    n = name.lower()
    if re.fullmatch(_PHOTO, n, re.IGNORECASE):
        return "photo"
    if re.fullmatch(_RADIO, n, re.IGNORECASE):
        return "radiograph"
    return "suggestive"


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(text before the first header, [(kind, body), ...]) of a reply."""
    heads = list(_HEADER.finditer(text))
    if not heads:
        return text, []
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((header_kind(m.group("name")), text[m.end():end]))
    return text[: heads[0].start()], out


def _tidy(text: str) -> str:
    lines = [ln.rstrip() for ln in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(" \n*_")


def extract_photo_findings(reply: str | None) -> Extraction:
    """The PHOTO FINDINGS section of one reply (see the module docstring for the fallbacks)."""
    clean = strip_reasoning(reply or "").strip()
    if not clean:
        return Extraction("", "empty")
    if re.search(r"<\s*final\s*>", clean, re.IGNORECASE):
        parsed = parse_reply(clean)
        if parsed.kind == "final" and parsed.final is not None:
            return Extraction(parsed.final.answer or "" if parsed.final.action == "answer" else "", "final_action")
    before, sections = split_sections(clean)
    photo = [body for kind, body in sections if kind == "photo"]
    if photo:
        return Extraction(_tidy("\n\n".join(photo)), "section")
    if sections:
        return Extraction(_tidy(before), "before_headers")
    kept = [s for s in re.split(r"(?<=[.!?])\s+", clean) if not _DIAGNOSTIC.search(s)]
    return Extraction(_tidy(" ".join(kept)), "whole_reply")
