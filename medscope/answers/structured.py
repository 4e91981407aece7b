"""Reading a JSON reply: the verdict field, whatever its name (issue 29; seed 003 "Responses parse
into present, absent and not-addressed").

Structured replies name their verdict many ways: ``{"present": false}``, ``{"visible": "no"}``,
``{"answer": {"present": false}}``, a presence map ``{"presence": {"liver": true, "spleen":
false}}``, a list ``{"findings": [{"organ": "spleen", "present": false}]}``, or the finding's own
name as the key ``{"pneumothorax": "absent"}``, ``{"left_kidney_present": false}``. The rules:

1. In a dict, a key that names the finding (its words, synonyms, with an optional ``is_`` /
   ``has_`` prefix or ``_present`` / ``_visible`` ... suffix) wins; then a verdict key
   (``present``, ``verdict``, ``answer``, ``visible``, ``detected``, ``presence``, ``result``,
   ``status``, ``conclusion``, ``exists`` ... also prefixed ``is_`` / ``organ_``); then nested
   dicts and lists are searched. A dict naming another finding in its ``organ`` / ``name`` field
   is about that finding and skipped; a key naming the other side ("right_kidney" for the left
   kidney) is not the finding.
2. A value resolves: ``true``/``false``, ``1``/``0``, or a string read as a label value ("no, not
   seen", "not visualised", "surgically absent", "yes, partially", "False.") — the finding's
   polarity. General verdict keys (``answer``, ``verdict``, ``conclusion``, ...) are read as a
   whole reply to the question, so a health question's ``{"answer": "yes"}`` means healthy.
   A finding-named key whose value is a description (a dict or text with no verdict) claims
   the finding; an empty list denies it.
3. A verdict field that does not resolve — ``null``, ``"unclear"``, ``"uncertain"``, ``"N/A"``,
   ``"maybe"``, ``""``, ``"cannot determine"`` — is **unresolved**, whatever the key's name: the
   reply does not address the finding (never "present" because the key is called "present").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from medscope.answers import matching as M
from medscope.answers import parser
from medscope.answers.context import status

# Words that make a key a verdict key on their own (after the prefixes below are removed).
PRESENCE_KEY_WORDS = ("present", "presence", "visible", "visibility", "detected", "seen", "exists", "exist",
                      "identified", "found", "in slice", "in image", "in view")
GENERAL_KEY_WORDS = ("verdict", "answer", "final answer", "result", "status", "conclusion", "decision", "outcome")
KEY_PREFIXES = ("is", "has", "organ", "finding", "any", "final", "the")
NAME_FIELDS = ("organ", "name", "finding", "structure", "label", "target")
UNRESOLVED_VALUES = ("null", "none?", "n/a", "na", "unknown", "unclear", "uncertain", "undetermined", "undecided",
                     "indeterminate", "equivocal", "maybe", "perhaps", "unsure", "not sure", "not applicable",
                     "tbd", "pending", "not assessable", "not evaluable", "cannot say")


@dataclass(frozen=True)
class JsonVerdict:
    found: bool  # a field carrying the verdict exists
    claim: bool | None  # its reading; None = unresolved (not addressed)
    key: str = ""


def _key_words(key: str) -> str:
    k = M.normalize(str(key)).replace("_", " ").replace("-", " ")
    words = k.split()
    while words and words[0] in KEY_PREFIXES:
        words = words[1:]
    return " ".join(words)


def _strip_suffix(words: str) -> str:
    for w in sorted(PRESENCE_KEY_WORDS, key=len, reverse=True):
        if words.endswith(" " + w):
            return words[: -len(w) - 1].strip()
    return words


def key_kind(key: str, terms: tuple[str, ...], finding: str) -> str | None:
    """'finding' (the key names the finding), 'presence' / 'general' (a verdict key), or None."""
    words = _key_words(key)
    if words in PRESENCE_KEY_WORDS or words == "":
        return "presence" if words else None
    if words in GENERAL_KEY_WORDS:
        return "general"
    return "finding" if names_finding(_strip_suffix(words), terms, finding) else None


def names_finding(words: str, terms: tuple[str, ...], finding: str) -> bool:
    """Whether ``words`` (a key or a name field) is the finding: one of its terms, and not a term
    of the other side ("right kidney" for "left kidney"; a side-less head noun is not enough)."""
    words = " ".join(M.normalize(words).replace("_", " ").replace("-", " ").split())
    side = next((w for w in M.normalize(finding).split() if w in M._SIDES), None)
    for t in terms:
        if words == t:
            return side is None or side in t.split()
    return False


def _value_claim(value, kind: str, question: str, finding: str, terms) -> tuple[bool, bool | None]:
    """(resolved?, claim) of one verdict value. ``kind``: presence | general | finding."""
    if value is None or isinstance(value, bool):
        return (value is not None, value)
    if isinstance(value, (int, float)):
        return (value in (0, 1), bool(value) if value in (0, 1) else None)
    if isinstance(value, dict):
        got = json_verdict(value, question, finding, terms)
        if got.found:
            return got.claim is not None, got.claim
        if kind == "finding":  # {"lesion": {"type": "cyst", ...}}: described, so claimed
            return bool(value), True if value else None
        return False, None
    if isinstance(value, list):
        if kind == "finding" and not value:
            return True, False  # {"polyps": []}
        for v in value:
            if isinstance(v, dict):
                got = json_verdict(v, question, finding, terms)
                if got.found:
                    return got.claim is not None, got.claim
        if kind == "finding":
            return True, True
        return False, None
    s = M.normalize(str(value)).strip(" .!")
    if not re.search(r"\w", s) or s in UNRESOLVED_VALUES:
        return False, None
    if kind == "general":
        r = M.read_text(s, question, finding)
        return (r.action == "answer", r.claim if r.action == "answer" else None)
    lead = M._leading(s, "presence", flip=False)
    if lead is not None:
        return True, lead
    if M._undecided(s):
        return False, None
    st = status("x " + s, 0, 1)  # the value as a label's predicate: "not visualised", "surgically absent"
    if st in ("affirmed", "possible"):
        return True, True
    if st == "negated":
        return True, False
    return False, None


def json_verdict(obj: dict, question: str, finding: str, terms: tuple[str, ...] = ()) -> JsonVerdict:
    """The verdict a JSON object gives about ``finding`` (rules in the module docstring)."""
    terms = terms or M.finding_terms(finding)
    name = next((obj[k] for k in obj if M.normalize(str(k)) in NAME_FIELDS and isinstance(obj[k], str)), None)
    if name is not None and terms and not names_finding(name, terms, finding):
        return JsonVerdict(False, None)  # this object is about another organ / finding
    kinds = [(k, key_kind(k, terms, finding)) for k in obj]
    for want in ("finding", "presence", "general"):
        for k, kind in kinds:
            if kind == want:
                ok, claim = _value_claim(obj[k], kind, question, finding, terms)
                return JsonVerdict(True, claim if ok else None, str(k))
    for k, v in obj.items():
        if isinstance(v, dict):
            got = json_verdict(v, question, finding, terms)
        elif isinstance(v, list):
            got = next((g for g in (json_verdict(e, question, finding, terms) for e in v if isinstance(e, dict))
                        if g.found), JsonVerdict(False, None))
        else:
            continue
        if got.found:
            return got
    return JsonVerdict(False, None)


_PAIR = re.compile(r'"([^"\\]{1,60})"\s*:\s*("(?:[^"\\]|\\.)*"|true|false|null|-?\d+(?:\.\d+)?)\s*[,}]')


def complete_pairs(text: str) -> dict:
    """The complete ``"key": value`` pairs of a JSON object that does not parse (a truncated reply):
    a verdict that was cut off is not read from its first letters."""
    out = {}
    for m in _PAIR.finditer(text):
        try:
            out[m.group(1)] = json.loads(m.group(2))
        except ValueError:
            continue
    return out


def string_values(obj) -> list[str]:
    """Every string value of a JSON value, in order (keys left out: a key is not the reply's words)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in string_values(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in string_values(v)]
    return []


_FINAL_TAG = re.compile(r"<\s*final\s*>(?P<inner>.*?)(?:<\s*/\s*final\s*>|$)", re.IGNORECASE | re.DOTALL)


def read_structured(text, question, finding, kind, synonyms) -> M.Reading | str | None:
    """``<final>`` and JSON replies (issue 29): a Reading when the structure decides, the reply's
    string values (its words without the JSON keys) when it is JSON without a verdict field, or
    None when the reply is not structured."""
    m = _FINAL_TAG.search(text or "")
    if m:
        inner = m.group("inner")
        obj = parser._first_object(inner)
        if isinstance(obj, dict) and ("action" in obj or "answer" in obj):
            final, _ = parser.read_final(obj)
            if final is None:
                return M.Reading("unparseable", None, "final-tag")
            if final.action != "answer":
                return M.Reading(final.action, None, "final-tag")
            inner = final.answer or ""
        r = M.read_text(inner, question, finding, kind, synonyms)
        return M.Reading(r.action, r.claim, "final-tag")
    t = (text or "").strip()
    brace = t.find("{")
    if brace < 0 or (brace > 80 and not t.lstrip("`json \n").startswith("{")):
        return None
    terms = M.finding_terms(finding, tuple(synonyms))
    after = M._lines(t[t.rfind("}") + 1:])
    late = M._verdict_lines(after, terms, finding, kind) if after else None
    if late is not None:  # "Final answer: No" after the object outranks it, as in every format
        return M.Reading(late[0], late[1], "verdict-line")
    obj = parser._first_object(t)
    complete = isinstance(obj, dict)
    if not complete:
        obj = complete_pairs(t[brace:])
    v = json_verdict(obj, question, finding, terms)
    if v.found:
        if v.claim is None:
            return M.Reading("refer", None, "json-field")
        return M.Reading("answer", v.claim, "json-field" if complete else "json-partial")
    if not complete:
        return M.Reading("unparseable", None, "none")  # a cut-off object: its verdict never came
    return "\n".join(string_values(obj))
