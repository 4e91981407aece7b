"""Reading a JSON reply: the verdict field, whatever its name (the organ-presence paper "Responses parse
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
from collections.abc import Callable
from dataclasses import dataclass

# Words that make a key a verdict key on their own (after the prefixes below are removed).
PRESENCE_KEY_WORDS = ("present", "presence", "visible", "visibility", "detected", "seen", "exists", "exist",
                      "identified", "found", "in slice", "in image", "in view", "visualised", "visualized",
                      "depicted", "in field of view", "in fov")
GENERAL_KEY_WORDS = ("verdict", "answer", "final answer", "result", "status", "conclusion", "decision", "outcome",
                     # the same in the languages models answer in (es, pt, fr, de, it, zh, ja)
                     "veredicto", "respuesta", "resposta", "conclusión", "conclusão", "réponse", "résultat",
                     "urteil", "antwort", "ergebnis", "schlussfolgerung", "risposta", "conclusione", "结论", "答案",
                     "結論", "回答")
KEY_PREFIXES = ("is", "has", "organ", "finding", "any", "final", "the")
NAME_FIELDS = ("organ", "name", "finding", "structure", "label", "target")
UNRESOLVED_VALUES = ("null", "none?", "n/a", "na", "unknown", "unclear", "uncertain", "undetermined", "undecided",
                     "indeterminate", "equivocal", "maybe", "perhaps", "unsure", "not sure", "not applicable",
                     "tbd", "pending", "not assessable", "not evaluable", "cannot say")

# a value that says the verdict cannot be reached ("not determinable", "cannot be assessed", "not
# possible to tell"): unresolved, never a "not" read as absence (issue 48, set L)
_UNDETERMINABLE = re.compile(
    r"^(?:(?:not|non|un|in)[ -]?(?:determinable|determined|assessable|assessed|evaluable|evaluated|decidable|"
    r"interpretable|clear|certain|known)|(?:can ?not|can't|could not|unable to|not possible to|impossible to)\s+"
    r"(?:be\s+)?(?:determined?|assessed?|evaluated?|decided?|tell|say|judged?))\b(?!.*\b(?:but|however)\b)")


@dataclass(frozen=True)
class JsonVerdict:
    found: bool  # a field carrying the verdict exists
    claim: bool | None  # its reading; None = unresolved (not addressed)
    key: str = ""


SIDES = ("left", "right")
# read_value(kind, text) -> (resolved?, claim): how the caller reads a verdict string ("presence" /
# "finding" keys as a label's value in the finding's polarity, "general" keys as a whole reply).
ValueReader = Callable[[str, str], "tuple[bool, bool | None]"]


def _norm(text: str) -> str:
    return " ".join(str(text).lower().replace("_", " ").replace("-", " ").split())


def _key_words(key: str) -> str:
    words = _norm(key).split()
    while words and words[0] in KEY_PREFIXES:
        words = words[1:]
    return " ".join(words)


def _strip_suffix(words: str) -> str:
    for w in sorted(PRESENCE_KEY_WORDS, key=len, reverse=True):
        if words.endswith(" " + w):
            return words[: -len(w) - 1].strip()
    return words


def key_kind(key: str, terms: tuple[str, ...], finding: str) -> str | None:
    """'finding' (the key names the finding), 'presence' / 'general' (a verdict key), or None.

    Parameters
    ----------
    key : str
        A JSON key.
    terms : tuple of str
        Normalised words naming the finding (:func:`medscope.answers.matching.finding_terms`).
    finding : str
        The asked finding.

    Returns
    -------
    str or None
        ``"presence"``, ``"general"``, ``"finding"``, or None for any other key.
    """
    words = _key_words(key)
    if words in PRESENCE_KEY_WORDS or words == "":
        return "presence" if words else None
    if words in GENERAL_KEY_WORDS:
        return "general"
    return "finding" if names_finding(_strip_suffix(words), terms, finding) else None


def names_finding(words: str, terms: tuple[str, ...], finding: str) -> bool:
    """Whether ``words`` (a key or a name field) is the finding: one of its terms, and not a term
    of the other side ("right kidney" for "left kidney"; a side-less head noun is not enough).

    Parameters
    ----------
    words : str
        A key (prefix and suffix words removed) or a name field's value.
    terms : tuple of str
        Normalised words naming the finding.
    finding : str
        The asked finding; a side word (``left`` / ``right``) in it must be in the matching term.

    Returns
    -------
    bool
        True when the normalised ``words`` equal one of ``terms`` (with the finding's side, if any).
    """
    words = _norm(words)
    side = next((w for w in _norm(finding).split() if w in SIDES), None)
    for t in terms:
        if words == t:
            return side is None or side in t.split()
    return False


def _value_claim(value, kind: str, finding: str, terms, read_value: ValueReader) -> tuple[bool, bool | None]:
    """(resolved?, claim) of one verdict value. ``kind``: presence | general | finding."""
    if value is None or isinstance(value, bool):
        return (value is not None, value)
    if isinstance(value, (int, float)):
        return (value in (0, 1), bool(value) if value in (0, 1) else None)
    if isinstance(value, dict):
        by_side = _side_map_claim(value, kind, finding, terms, read_value)
        if by_side is not None:
            return by_side
        got = json_verdict(value, finding, terms, read_value)
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
                got = json_verdict(v, finding, terms, read_value)
                if got.found:
                    return got.claim is not None, got.claim
        if kind == "finding":
            return True, True
        return False, None
    s = _norm(value).strip(" .!")
    if not re.search(r"\w", s) or s in UNRESOLVED_VALUES or _UNDETERMINABLE.match(s):
        return False, None
    return read_value(kind, str(value))


def _side_map_claim(value: dict, kind: str, finding: str, terms, read_value: ValueReader) -> tuple[bool, bool | None] | None:
    """(resolved?, claim) of a verdict given per side (``"present": {"left": false, "right": true}``),
    None where ``value`` is not keyed by side. The asked side's value decides (issue 48, set R: the
    left kidney read present from the right's ``true``); asked about no side, the sides must agree."""
    sides = {k.strip().lower(): v for k, v in value.items()}
    if not sides or not set(sides) <= set(SIDES):
        return None
    asked = [w for w in _norm(finding).split() if w in SIDES]
    if asked:
        if asked[0] not in sides:
            return False, None
        return _value_claim(sides[asked[0]], kind, finding, terms, read_value)
    claims = {_value_claim(v, kind, finding, terms, read_value) for v in sides.values()}
    return claims.pop() if len(claims) == 1 else (False, None)


def _sided_by_its_values(obj: dict, name: str, finding: str) -> bool:
    """Whether an object names the asked organ without its side ("organ": "kidney" for the left kidney)
    and gives its verdict per side: the side is in the values, so the object is about the asked organ."""
    words = [w for w in _norm(finding).split() if w not in SIDES]
    if len(words) == len(_norm(finding).split()) or _norm(name).rstrip("s") != " ".join(words).rstrip("s"):
        return False
    return any(isinstance(v, dict) and v and {str(k).strip().lower() for k in v} <= set(SIDES) for v in obj.values())


def json_verdict(obj: dict, finding: str, terms: tuple[str, ...], read_value: ValueReader) -> JsonVerdict:
    """The verdict a JSON object gives about ``finding`` (rules in the module docstring); ``terms``
    name the finding, ``read_value`` reads a verdict string.

    Parameters
    ----------
    obj : dict
        The parsed JSON object.
    finding : str
        The asked finding.
    terms : tuple of str
        Normalised words naming the finding.
    read_value : callable
        ``read_value(kind, text) -> (resolved, claim)``, reading a verdict string for a ``"presence"``,
        ``"finding"`` or ``"general"`` key.

    Returns
    -------
    JsonVerdict
        ``found`` when a verdict field exists (searched in nested dicts and lists too), ``claim`` its
        reading (None when unresolved) and ``key`` its name.

    References
    ----------
    .. [1] Organ-presence paper, "Responses parse into present, absent and not-addressed".
    """
    listed = _listed(obj, finding, terms)
    if listed is not None:
        return listed
    name = next((obj[k] for k in obj if _norm(k) in NAME_FIELDS and isinstance(obj[k], str)), None)
    if name is not None and terms and not names_finding(name, terms, finding) and not _sided_by_its_values(obj, name, finding):
        return JsonVerdict(False, None)  # this object is about another organ / finding
    kinds = [(k, key_kind(k, terms, finding)) for k in obj]
    for want in ("finding", "presence", "general"):
        for k, kind in kinds:
            if kind == want:
                ok, claim = _value_claim(obj[k], kind, finding, terms, read_value)
                return JsonVerdict(True, claim if ok else None, str(k))
    for k, v in obj.items():
        if isinstance(v, dict):
            got = json_verdict(v, finding, terms, read_value)
        elif isinstance(v, list):
            got = next((g for g in (json_verdict(e, finding, terms, read_value) for e in v if isinstance(e, dict))
                        if g.found), JsonVerdict(False, None))
        else:
            continue
        if got.found:
            return got
    return JsonVerdict(False, None)


_ABSENT_LIST_KEY = re.compile(r"\b(?:absent|missing|not (?:visible|present|seen|identified|detected)|invisible)\b")
_PRESENT_LIST_KEY = re.compile(r"\b(?:present|visible|seen|identified|detected)\b")


def _listed(obj: dict, finding: str, terms: tuple[str, ...]) -> JsonVerdict | None:
    """The verdict of organ lists keyed by their status (``{"present_organs": [...], "absent_organs":
    [...]}``): the finding named in an absent list is absent, in a present list present; named in
    both, or in neither, no verdict here."""
    said = set()
    for k, v in obj.items():
        if not isinstance(v, list) or not all(isinstance(e, str) for e in v):
            continue
        words = _norm(k)
        if not any(names_finding(e, terms, finding) for e in v):
            continue
        if _ABSENT_LIST_KEY.search(words):
            said.add((False, str(k)))
        elif _PRESENT_LIST_KEY.search(words):
            said.add((True, str(k)))
    if len({c for c, _ in said}) == 1:
        claim, key = sorted(said)[0]
        return JsonVerdict(True, claim, key)
    return None


_PAIR = re.compile(r'"([^"\\]{1,60})"\s*:\s*("(?:[^"\\]|\\.)*"|true|false|null|-?\d+(?:\.\d+)?)\s*[,}]')


def complete_pairs(text: str) -> dict:
    """The complete ``"key": value`` pairs of a JSON object that does not parse (a truncated reply):
    a verdict that was cut off is not read from its first letters.

    Parameters
    ----------
    text : str
        The reply from its first ``{``.

    Returns
    -------
    dict
        Each key (up to 60 characters) whose value is a complete JSON string, number, ``true``,
        ``false`` or ``null`` followed by ``,`` or ``}``; a later duplicate key wins.
    """
    out = {}
    for m in _PAIR.finditer(text):
        try:
            out[m.group(1)] = json.loads(m.group(2))
        except ValueError:
            continue
    return out


def string_values(obj) -> list[str]:
    """Every string value of a JSON value, in order (keys left out: a key is not the reply's words).

    Parameters
    ----------
    obj : object
        A parsed JSON value.

    Returns
    -------
    list of str
        The strings in depth-first order; empty for numbers, booleans and null.
    """
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in string_values(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in string_values(v)]
    return []


def list_reply(text: str) -> dict | None:
    """A reply that is a bare JSON list, as the object it stands for: ``["stomach", false]`` ->
    ``{"stomach": false}``, ``[["liver", true], ["spleen", false]]`` -> both pairs,
    ``[{"organ": ...}, ...]`` -> ``{"findings": [...]}``; None for anything else (not a list, or a
    list of another shape, which is then read as text).

    Parameters
    ----------
    text : str
        The stripped reply.

    Returns
    -------
    dict or None
    """
    body = text.strip().strip("`").strip()
    if body.startswith("json"):
        body = body[4:].strip()
    if not body.startswith("["):
        return None
    try:
        obj = json.loads(body)
    except ValueError:
        return None
    if not isinstance(obj, list) or not obj:
        return None

    def pair(x):
        return isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and not isinstance(x[1], (list, dict))

    if pair(obj):
        return {obj[0]: obj[1]}
    if all(pair(x) for x in obj):
        return {x[0]: x[1] for x in obj}
    if all(isinstance(x, dict) for x in obj):
        return {"findings": obj}
    return None


# A table row's cell that says the organ is not in the image, or that gives no value at all.
ABSENT_CELLS = ("not in field of view", "not in the field of view", "outside field of view", "outside the field of view",
                "not in fov", "outside fov", "out of fov", "not imaged", "not included", "not seen", "not visible",
                "not visualised", "not visualized", "not identified", "not depicted", "absent", "excluded")
EMPTY_CELLS = ("", "n/a", "na", "-", "\u2013", "\u2014", "not applicable", "not assessed", "not assessable", "?")
_PIPE_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?$")


def delimited_table(text: str) -> list[dict[str, str]] | None:
    """A reply that is a table and nothing else, as one dict per data row keyed by the header: a
    markdown pipe table (header, ``|---|`` rule, rows) or comma-separated values (a header line
    and rows with as many commas, short cells). None for anything else.

    Parameters
    ----------
    text : str
        The reply.

    Returns
    -------
    list of dict or None
        Each row's cells by header, in order (the first header names the row's organ or finding).
    """
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    if all(line.startswith("|") for line in lines):
        if len(lines) < 3 or not _PIPE_RULE.match(lines[1]):
            return None
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in [lines[0]] + lines[2:]]
    elif "|" not in text and all(line.count(",") == lines[0].count(",") >= 1 for line in lines):
        cells = [[c.strip() for c in line.split(",")] for line in lines]
        if any(len(c.split()) > 4 for row in cells for c in row):  # prose with commas, not a table
            return None
    else:
        return None
    header = cells[0]
    if any(len(row) != len(header) for row in cells) or len(set(header)) != len(header):
        return None
    return [dict(zip(header, row)) for row in cells[1:]]


def table_row_verdict(rows: list[dict[str, str]], terms: tuple[str, ...], finding: str) -> str | None:
    """What the one row naming the finding says when none of its columns is a verdict column:
    ``"absent"`` (a cell says it is not in view, and no cell gives a measurement), ``"empty"``
    (every other cell is blank or n/a: the table does not address it), ``"verdict-column"`` (a
    column is a verdict key: read the row as a JSON object), or None (no single row names it, or
    its cells say something else: the table is read as text).

    Parameters
    ----------
    rows : list of dict
        :func:`delimited_table`'s rows.
    terms : tuple of str
        Normalised words naming the finding.
    finding : str
        The asked finding.

    Returns
    -------
    str or None
    """
    asked = [row for row in rows if names_finding(next(iter(row.values()), ""), terms, finding)]
    if len(asked) != 1:
        return None
    keys = list(asked[0])[1:]
    if any(key_kind(k, terms, finding) in ("presence", "general") for k in keys):
        return "verdict-column"
    values = [_norm(asked[0][k]).strip(".") for k in keys]
    if all(v in EMPTY_CELLS for v in values):
        return "empty"
    if any(v in ABSENT_CELLS for v in values) and not any(re.search(r"\d", v) for v in values):
        return "absent"
    return None


def typed_cells(row: dict[str, str]) -> dict:
    """A table row's cells as JSON would have typed them: ``0`` / ``1`` / ``0.88`` as numbers,
    ``TRUE`` / ``FALSE`` as booleans, anything else as written.

    Parameters
    ----------
    row : dict
        One row of :func:`delimited_table`.

    Returns
    -------
    dict
    """
    out = {}
    for key, value in row.items():
        low = value.strip().lower()
        if low in ("true", "false"):
            out[key] = low == "true"
        elif re.fullmatch(r"\d+(?:\.\d+)?", low):
            out[key] = float(low) if "." in low else int(low)
        else:
            out[key] = value
    return out
