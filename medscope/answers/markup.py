"""Replies wrapped in markup or forms, brought to the plain shapes the rules read (issue 48, set E).

Models answer in many wrappers around one verdict: ``<think>`` reasoning before the answer,
``<answer>`` / XML attributes, LaTeX ``\\boxed{}``, YAML key lines, checkbox forms, lettered
options, compact ``liver=Y; pancreas=N`` flags, JSON with comments, trailing commas, unquoted keys,
double encoding, inverted keys (``"absent": true``) and emoji or percentage values. None of these
is a new way of *saying* present or absent; each hides the usual verdict in a shape the rules do
not see. :func:`unwrap` rewrites the shape only (never the verdict), and says where the wrapper
itself leaves the verdict open (a reasoning block cut off before its answer, two JSON objects,
an echoed template, even odds) so the reader says ``unclear`` with that reason.

Hand-written, not ConText: these are output formats, which a clinical assertion library does not
parse (issue 48: keep rules "for what it does not do (verdict words, output formats)").
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field

from medscope.answers.lexicon import PROBABILITY_CLAIM_AT, PROBABILITY_DENY_AT

# why a wrapper leaves the verdict open; the reader's ``unclear`` evidence
UNCLEAR_WHY = {
    "cut-off-reasoning": "the reply stops inside its reasoning block, before any answer",
    "reasoning-disagrees": "the answer and the reasoning block before it commit to opposite verdicts",
    "two-objects": "two JSON objects with different verdicts",
    "open-form": "the checkbox form has no option ticked, or several",
    "letter-without-options": "the reply answers with an option letter, and the question lists no options",
    "even-odds": "the reply gives even odds (50/50, a coin flip)",
    "truncated": "the reply is cut off mid-sentence before it commits",
    "other-side": "the reply speaks of the other side than the one asked",
    "property-denied": "the reply denies a property of the organ (\"no aortic aneurysm\"), not the organ",
}


@dataclass
class Unwrapped:
    """A reply with its wrappers removed: ``text`` to read, ``reasoning`` (a ``<think>`` or
    ``<reasoning>`` block, read beside the answer for a conflict), ``objects`` (several top-level
    JSON objects, each read on its own), ``unclear`` (why the wrapper leaves the verdict open) or
    ``unparseable`` (an echoed template or schema: no answer at all)."""

    text: str
    reasoning: str = ""
    objects: list = field(default_factory=list)
    unclear: str = ""
    unparseable: bool = False


_THINK = re.compile(r"<(think|thinking|reasoning|thought)>(?P<body>.*?)(?:</\1>|$)", re.S | re.I)
_ANSWER_TAG = re.compile(r"<(answer|final_answer|output)>(?P<body>.*?)</\1>", re.S | re.I)
_SELF_CLOSING = re.compile(r"<(?P<tag>\w+)(?P<attrs>(?:\s+[\w-]+\s*=\s*\"[^\"]*\")+)\s*/?>")
_ATTR = re.compile(r"([\w-]+)\s*=\s*\"([^\"]*)\"")
_TAG_TEXT = re.compile(r"<(?P<tag>\w+)>(?P<body>[^<]*)</(?P=tag)>")
_BOXED = re.compile(r"\$*\\boxed\{\s*(?:\\text(?:bf)?\{)?(?P<v>[^{}]*)\}?\s*\}\$*")
_FENCE = re.compile(r"```[\w-]*\s*\n?(?P<body>.*?)```", re.S)
# "(A) yes (B) no", "A) yes B) no", and (issue 48, set R) "A. Yes B. No" / "A: None B: Pneumothorax": a letter
# then ")", "." or ":" and a space; a letter with a dot needs the space, so "vitamin A.5" is not an option
_OPTION = re.compile(r"(?:\(|(?<![\w.]))(?P<letter>[A-E])(?:\)|[.:](?=\s))\s*(?P<text>[^()]+?)"
                     r"(?=\s*(?:\(|(?<![\w.]))[A-E](?:\)|[.:]\s)|\s*$)")
_LETTER_REPLY = re.compile(r"^(?:(?:final\s+)?answer\s*[:\-]?\s*)?\(?(?P<letter>[A-E])\)?(?=$|[\s.:,\u2014-])(?P<rest>.*)$",
                           re.S | re.I)
_FINAL_LETTER = re.compile(r"^(?:\*\*)?(?:final\s+)?answer(?:\*\*)?\s*[:\-]\s*(?:\*\*)?\(?(?P<letter>[A-E])\)?(?:\*\*)?\s*\.?$",
                           re.I)
_BOX_OPTION = re.compile(r"\[(?P<mark>[ xX\u2713\u2714])\]\s*(?P<option>[^\[\]]+?)\s*(?=\[|$)")
_YAML_LINE = re.compile(r"^\s*(?P<key>[A-Za-z_][\w \-]{0,30}?)\s*:\s*(?P<value>\S.*?)\s*$")
_KV_PART = re.compile(r"^\s*(?P<key>[A-Za-z][\w \-]{0,30}?)\s*=\s*(?P<value>[^=;]+?)\s*$")
_FLAG_LINE = re.compile(r"^(?P<key>[A-Za-z][\w \-]{0,30}?)\s*:\s*(?P<value>[01])\s*$")
_EVEN_ODDS = re.compile(r"\b(?:50\s*/\s*50|fifty[- ]fifty|coin[- ]?flip|toss[- ]?up)\b|"
                        r"^\W*(?:roughly|about|around|~)?\s*50\s*%", re.I)
_LEAD_PERCENT = re.compile(r"^\W*(?P<q>roughly|about|around|approximately|~)?\s*(?P<p>\d{1,3})\s*%", re.I)
_TEMPLATE = re.compile(r"\[(?:yes\s*/\s*no|no\s*/\s*yes|your [^\]]*|insert [^\]]*)\]", re.I)
# (issue 48, set V) a JSON value that offers both answers ({"present": "true or false"}, "yes/no") is the format's
# template echoed, no answer: read by its first word it was a "true"
_TEMPLATE_VALUE = re.compile(r":\s*\"\s*<?\s*(?:(?:true|yes|present|visible)\s*(?:or|/|\|)\s*(?:false|no|absent|not visible)|"
                             r"(?:false|no|absent|not visible)\s*(?:or|/|\|)\s*(?:true|yes|present|visible))\s*>?\s*\"", re.I)
_DANGLING = re.compile(r"\b(?:is|are|was|there is|shows?|the|a|an|of|with|and|or|to|which|that|but)\s*$", re.I)
# (issue 48, set S) a reply of any length cut between its subject and its predicate ("... the uterus appears to be"):
# the verdict was never written; read to its mention, the organ read present
_CUT_PREDICATE = re.compile(r"\b(?:appears?|seems?|looks?)(?:\s+to\s+be)?\s*$|\b(?:is|are|was|were)\s+(?:seen\s+)?(?:to\s+be\s+)?$", re.I)
# shorthand of radiology reports, whole words only
SHORTHAND = {"ptx": "pneumothorax", "fx": "fracture", "fxs": "fractures", "eff": "effusion", "nl": "normal",
             "clr": "clear", "wnl": "within normal limits", "nad": "nothing abnormal detected",
             # (issue 48, set T) "GB: +": the gallbladder's field, unread when the abbreviation was no name of it
             "gb": "gallbladder"}
_SHORTHAND = re.compile(r"(?<![\w-])(" + "|".join(SHORTHAND) + r")(?![\w-])", re.I)
# keys that name absence: their boolean is the opposite of presence
ABSENCE_KEYS = ("absent", "absence", "missing", "excluded", "excluded from fov", "excluded from field of view",
                "not visible", "not present", "not seen", "outside fov", "out of fov", "not in fov")
_TICK_VALUES = {"\u2705": True, "\u2714": True, "\u2713": True, "\u2611": True, "\u274c": False, "\u2717": False,
                "\u2718": False, "\u274e": False}
# verdict values meaning "not in the image" in words the value reader does not know
ABSENT_VALUES = ("not imaged", "outside fov", "outside the fov", "out of fov", "outside field of view",
                 "outside the field of view", "not in fov", "not in field of view", "excluded", "not included",
                 "ausente", "absente", "ausência", "отсутствует", "yok", "없음")
PRESENT_VALUES = ("presente", "присутствует", "var", "있음")
_ELSEWHERE = re.compile(r"^\s*(?:see|refer to)\b|\b(?:below|above)\s*$", re.I)
_NAME_KEY = re.compile(r"^(organ|finding|structure)[ _-]?(?:assessed|evaluated|name|examined|checked)$", re.I)


def _norm_key(key: str) -> str:
    return " ".join(str(key).lower().replace("_", " ").replace("-", " ").split())


def _json5(blob: str):
    """A JSON value from JSON5-ish text (comments, trailing commas, unquoted keys, single quotes), or None."""
    blob = re.sub(r"/\*.*?\*/", " ", blob, flags=re.S)
    blob = re.sub(r"(?m)(^|[\s,{\[])//[^\n]*$", r"\1", blob)
    blob = re.sub(r",\s*([}\]])", r"\1", blob)
    for candidate in (blob, re.sub(r"([{,]\s*)([A-Za-z_][\w]*)\s*:", r'\1"\2":', blob)):
        for text in (candidate, re.sub(r"'([^'\\]*)'", lambda m: json.dumps(m.group(1)), candidate)):
            try:
                return json.loads(text)
            except ValueError:
                continue
    return None


def _top_values(text: str) -> list | None:
    """Every top-level JSON value of ``text`` when the text is JSON values only, else None."""
    t = text.strip()
    out, i = [], 0
    while i < len(t):
        if t[i] != "{":
            return None
        depth, j, quote = 0, i, ""
        while j < len(t):
            ch = t[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        value = _json5(t[i:j + 1])
        if not isinstance(value, dict):
            return None
        out.append(value)
        i = j + 1
        while i < len(t) and t[i] in " \t\r\n,":
            i += 1
    return out or None


# Verdict forms of the round tuned on set G (issue 48): an enum value ("NOT_VISIBLE", "NOT-PRESENT"),
# a function call whose arguments are a JSON string ({"name": "submit_verdict", "arguments":
# "{\"visible\": false}"}), and a FHIR Observation ({"code": {"text": "Liver visible"},
# "valueBoolean": true}; interpretation POS / NEG; HL7 v3 ObservationInterpretation).
_ENUM_VALUE = re.compile(r"^[A-Z]+(?:[_-][A-Z]+)+$")
_CALL_KEYS = ("arguments", "args", "parameters", "input")
_FHIR_INTERPRETATION = {"pos": True, "neg": False, "det": True, "nd": False, "a": True, "n": False}


def _call_arguments(obj: dict) -> dict:
    """A function call's arguments (JSON in a string, or an object) as the object, else ``obj``."""
    inner = obj.get("function") if isinstance(obj.get("function"), dict) else obj
    if "name" not in inner:
        return obj
    for key in _CALL_KEYS:
        args = inner.get(key)
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                continue
        if isinstance(args, dict) and args:
            return args
    return obj


def _fhir_observation(obj: dict) -> dict:
    """A FHIR Observation as ``{code text: value}`` (valueBoolean, valueString, valueCodeableConcept,
    or the interpretation code), else ``obj``."""
    if str(obj.get("resourceType", "")).lower() != "observation" or not isinstance(obj.get("code"), dict):
        return obj
    code = obj["code"]
    name = code.get("text") or next((c.get("display") for c in code.get("coding") or () if isinstance(c, dict)), None)
    if not isinstance(name, str):
        return obj
    value = obj.get("valueBoolean")
    if not isinstance(value, bool):
        concept = obj.get("valueCodeableConcept")
        value = concept.get("text") if isinstance(concept, dict) else obj.get("valueString")
    flags = [str(c.get("code", "")).lower() for i in obj.get("interpretation") or () if isinstance(i, dict)
             for c in i.get("coding") or () if isinstance(c, dict)]
    flag = {_FHIR_INTERPRETATION[f] for f in flags if f in _FHIR_INTERPRETATION}
    # "Liver visible on image": the code names the finding and asks its presence; the value answers
    name = re.sub(r"\s+(?:is\s+)?(?:visible|present|seen|identified|detected|visuali[sz]ed)\b.*$", "", name, flags=re.I)
    if len(flag) == 1 and not isinstance(value, bool):
        return {"finding": name, "present": flag.pop()}
    if isinstance(value, bool):
        return {"finding": name, "present": value}
    return {"finding": name, "result": value} if isinstance(value, str) else obj


def canonical_object(obj: dict) -> dict:
    """``obj`` with its keys and values in the shapes :mod:`medscope.answers.structured` reads:
    absence keys as ``present`` with the opposite boolean, ``final`` as ``final answer``, tick and
    cross emoji as booleans, a stated probability of presence as a verdict (the reader's
    probability thresholds, an addition), words for "not in the image" as ``absent``, and a value
    that points elsewhere ("see reasoning below") as unresolved.

    Parameters
    ----------
    obj : dict
        One JSON (or XML / YAML) object of a reply.

    Returns
    -------
    dict
        A new object; ``obj`` is left as it was.
    """

    obj = _call_arguments(_fhir_observation(obj))
    out = {}
    for key, value in obj.items():
        words = _norm_key(key)
        if isinstance(value, str) and _ENUM_VALUE.match(value.strip()):
            value = value.strip().lower().replace("_", " ")  # "NOT_VISIBLE" -> "not visible"
        if isinstance(value, str) and value.strip() in _TICK_VALUES:
            value = _TICK_VALUES[value.strip()]
        if isinstance(value, str):
            low = value.strip().lower()
            if low in ABSENT_VALUES:
                value = "absent"
            elif low in PRESENT_VALUES:
                value = "present"
            elif _ELSEWHERE.search(low):
                value = "unclear"
        if words in ABSENCE_KEYS and isinstance(value, bool):
            key, value = "present", not value
        elif words == "final":
            key = "final answer"
        elif _NAME_KEY.match(words.replace(" ", "_")):
            key = words.split()[0]
        elif re.search(r"\b(?:probability|likelihood|chance)\b", words):
            m = re.fullmatch(r"\s*(\d{1,3}(?:\.\d+)?)\s*(%?)\s*", str(value))
            if m and not isinstance(value, bool):
                p = float(m.group(1)) / (100 if m.group(2) or float(m.group(1)) > 1 else 1)
                key = "present"
                value = True if p >= PROBABILITY_CLAIM_AT else False if p <= PROBABILITY_DENY_AT else "unclear"
        out[key] = canonical_object(value) if isinstance(value, dict) else value
    return out


def _likert(obj: dict) -> dict:
    """A rating with its legend ("likert": 4, "scale": "1=definitely absent, 5=definitely present")
    as a verdict. Addition (issue 48; no paper reads ratings): the legend must name absence at one
    end and presence at the other; the top two points claim, the bottom two deny, the middle is
    unclear."""
    rating = next((v for k, v in obj.items() if re.search(r"likert|rating|score", _norm_key(k))
                   and isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    legend = next((v for k, v in obj.items() if re.search(r"scale|legend", _norm_key(k)) and isinstance(v, str)), None)
    if rating is None or legend is None:
        return obj
    ends = dict((int(a), b.lower()) for a, b in re.findall(r"(\d+)\s*=\s*([^,;]+)", legend))
    if len(ends) < 2:
        return obj
    low, high = min(ends), max(ends)
    absent_low = "absent" in ends[low] and "present" in ends[high] and "absent" not in ends[high]
    present_low = "present" in ends[low] and "absent" in ends[high] and "absent" not in ends[low]
    if not (absent_low or present_low) or not low <= rating <= high or high - low < 2:
        return obj
    toward_present = rating >= high - 1 if absent_low else rating <= low + 1
    toward_absent = rating <= low + 1 if absent_low else rating >= high - 1
    verdict = True if toward_present and not toward_absent else False if toward_absent and not toward_present else "unclear"
    return {"present": verdict}


# (issue 48, set S) a reply made only of elements, one wrapper at most ("<organ>uterus</organ><visible>no</visible>")
_ELEMENTS_ONLY = re.compile(r"^\s*(?:<(?P<wrap>\w+)>\s*)?(?:<(?P<tag>\w+)>[^<]*</(?P=tag)>\s*)+(?:</(?P=wrap)>\s*)?$")


def _xml_object(text: str, is_verdict_key=None) -> dict | None:
    """``<finding name="skin lesion" present="false"/>`` (and sibling ``<tag>text</tag>``) as a dict;
    a reply of text elements only is one when one of its tags is a verdict key (``is_verdict_key``), so
    ``<visible>no</visible>`` is read as the JSON ``"visible": "no"`` is, not as prose holding "no"."""
    m = _SELF_CLOSING.search(text)
    if not m:
        if is_verdict_key is None or not _ELEMENTS_ONLY.match(text):
            return None
        obj = {}
        for t in _TAG_TEXT.finditer(text):
            obj.setdefault(t.group("tag"), t.group("body").strip())
        return obj if len(obj) >= 2 and any(is_verdict_key(k) for k in obj) else None
    obj = {k: v for k, v in _ATTR.findall(m.group("attrs"))}
    for k, v in list(obj.items()):
        if v.lower() in ("true", "false"):
            obj[k] = v.lower() == "true"
    for t in _TAG_TEXT.finditer(text):
        obj.setdefault(t.group("tag"), t.group("body").strip())
    return obj


def _yaml_object(text: str, is_verdict_key) -> dict | None:
    """Key lines only (``organ: IVC`` / ``visible: no``), at least two, one a verdict key, as a dict."""
    lines = [line for line in text.strip().split("\n") if line.strip()]
    if len(lines) < 2:
        return None
    pairs = [_YAML_LINE.match(line) for line in lines]
    if not all(pairs):
        return None
    obj = {p.group("key").strip(): p.group("value").strip().strip('"\'') for p in pairs}
    if not any(is_verdict_key(k) for k in obj):
        return None
    for k, v in list(obj.items()):
        if v.lower() in ("true", "false"):
            obj[k] = v.lower() == "true"
    return obj


def has_options(question: str) -> bool:
    """Whether a question lists lettered options ("A. Yes B. No", "(A) ... (B) ...").

    Parameters
    ----------
    question : str
        The question as asked.

    Returns
    -------
    bool
        True when at least two options are lettered in it.
    """
    return len({m.group("letter").upper() for m in _OPTION.finditer(question or "")}) >= 2


def _rewrite_lines(text: str, question: str) -> tuple[str, str]:
    """Checkbox forms, compact flags, 0/1 flags, arrows, lettered options (a whole reply or its
    "Final answer: (C)" line) and shorthand, line by line; and why the form leaves its answer open
    ("open-form": no box or several ticked; "letter-without-options": a final letter with no
    options in the question to give it meaning), else ""."""
    options = {m.group("letter").upper(): m.group("text").strip() for m in _OPTION.finditer(question or "")}
    m = _LETTER_REPLY.match(text.strip())
    if len(options) >= 2 and m and m.group("letter").upper() in options:
        chosen, rest = options[m.group("letter").upper()], m.group("rest").strip()
        if not rest.lower().startswith(chosen.lower()):
            rest = f"{chosen} {rest}".strip()
        text = rest
    out = []
    for line in text.split("\n"):
        final = _FINAL_LETTER.match(line.strip())
        if final and final.group("letter").upper() in options:  # "Final answer: (C)" after reasoning
            line = f"Final answer: {options[final.group('letter').upper()]}"
        elif final and not options:
            return text, "letter-without-options"
        boxes = list(_BOX_OPTION.finditer(line))
        if len(boxes) >= 2 and line[:boxes[0].start()].strip():
            label = line[:boxes[0].start()].strip().rstrip(":")
            ticked = [b.group("option") for b in boxes if b.group("mark") != " "]
            if len(ticked) != 1:  # none or several ticked: the form does not answer
                return text, "open-form"
            line = f"{label}: {ticked[0]}"
        parts = [p for p in line.split(";") if p.strip()]
        if len(parts) >= 2 and all(_KV_PART.match(p) for p in parts):
            flags = {"y": "yes", "n": "no", "y/y": "yes", "n/n": "no"}
            line = "\n".join(f"{_KV_PART.match(p).group('key')}: "
                             f"{flags.get(_KV_PART.match(p).group('value').lower(), _KV_PART.match(p).group('value'))}"
                             for p in parts)
        flag = _FLAG_LINE.match(line)
        if flag:
            line = f"{flag.group('key')}: {'yes' if flag.group('value') == '1' else 'no'}"
        line = re.sub(r"^\s*\u2192\s*", "", line)
        line = re.sub(r"\s*\u2192\s*", ": ", line)
        if re.search(r"\b(?:negative|positive|present|absent|none)\b", line, re.I):
            line = re.sub(r"\s*[\u2705\u274c\u2714\u2713\u2717\u2718]\ufe0f?", "", line)  # decoration beside the word
        out.append(line)
    text = "\n".join(out)
    text = re.sub(r"\b[Cc]onfidence that\b", "Probability that", text)
    lead = _LEAD_PERCENT.match(text)
    if lead and not re.search(r"\b(?:likely|likelihood|probability|chance|odds|confiden)", text[:lead.end() + 40], re.I):
        text = f"Probability: {lead.group('p')}%{text[lead.end():]}"
    return _SHORTHAND.sub(lambda m: SHORTHAND[m.group(1).lower()], text), ""


_LINK = re.compile(r"\[([^\]\n]+)\]\((?:https?://|www\.)[^)\s]*\)")
_BARE_URL = re.compile(r"\bhttps?://[^\s)\]]+")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z]+\d*);", re.I)


def _decoded(text: str) -> str:
    """A reply as the model meant it, where a post-processor escaped it: HTML entities ("isn&#39;t",
    "&nbsp;", "&lt;answer&gt;") decoded, no-break spaces as spaces, markdown links as their words,
    web addresses dropped, and literal ``\\n`` in a reply
    with no line break read as line breaks (a JSON-escaped string printed raw)."""
    if _ENTITY.search(text):
        text = html.unescape(text)
    text = text.replace("\u00a0", " ")
    # a link is its words: "[this guide](https://...)" -> "this guide" (the address's colon and
    # slashes are no verdict line)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _BARE_URL.sub(" ", text)
    if "\\n" in text and "\n" not in text:  # but not LaTeX's \neq, \nu, \not...
        text = re.sub(r"\\n(?!(?:eq|u|ot|abla|eg|leq|geq|e|i)\b)", "\n", text)
    return text


# Struck-through text ("~~Visible~~ Not visible") is withdrawn by its writer: read what is left.
_STRUCK = re.compile(r"~~[^~\n]+~~")
# DICOM SR content items: a coded concept is (code value, scheme, "meaning"); a property's
# "HAS PROPERTIES: (...) = (...)" row is read against the concept coded above it.
_SR_CODE = re.compile(r"\(\s*[\w.:-]+\s*,\s*[\w.-]+\s*,\s*\"([^\"]+)\"\s*\)")
_SR_CONCEPT = re.compile(r"^\s*(?:CODE|HAS CONCEPT MOD|CONTAINS|INFERRED FROM)\s*:\s*(?P<concept>[^=]+?)\s*$", re.I)
_SR_PROPERTY = re.compile(r"^\s*(?:HAS PROPERTIES|HAS OBS CONTEXT)\s*:\s*(?P<name>[^=]+?)\s*=\s*(?P<value>.+?)\s*$", re.I)


# An HL7 v2 OBX segment: its fifth field is the observation's value (a coded value
# "code^text^system" reads as its text); the identifiers, units and flags around it are not prose.
_HL7_OBX = re.compile(r"^\s*OBX\|[^|\n]*\|(?P<type>[^|\n]*)\|(?P<id>[^|\n]*)\|[^|\n]*\|(?P<value>[^|\n]*)(?:\|.*)?$",
                      re.M)


def _coded_text(field: str) -> str:
    parts = field.split("^")
    return (parts[1] if len(parts) > 1 and parts[1].strip() else parts[0]).strip()


def _obx_value(m: re.Match) -> str:
    """"OBX|1|ST|LIVER^Liver in slice^L||No" -> "Liver in slice: No" (the identifier asks, the value answers)."""
    value = m.group("value")
    if m.group("type").strip().upper() in ("CE", "CWE", "CNE"):
        value = _coded_text(value)
    return f"{_coded_text(m.group('id'))}: {value.replace('^', ' ').strip()}"


def _dicom_sr(text: str) -> str:
    """A DICOM SR content tree as lines the reader reads ("Abdominal aorta presence: No"), else ``text``."""
    if not _SR_CODE.search(text):
        return text
    concept, out = None, []
    for line in _SR_CODE.sub(lambda m: m.group(1), text).split("\n"):
        c, p = _SR_CONCEPT.match(line), _SR_PROPERTY.match(line)
        if c:
            concept = c.group("concept")
        elif p and concept:
            line = f"{concept} {p.group('name')}: {p.group('value')}"
        out.append(line)
    return "\n".join(out)


def unwrap(text: str, question: str = "", is_verdict_key=lambda key: False) -> Unwrapped:
    """The reply with its wrappers removed (module docstring).

    Parameters
    ----------
    text : str
        The reply as the model wrote it.
    question : str, optional
        The question; its lettered options ("(A) Yes (B) No") read a lettered reply.
    is_verdict_key : callable, optional
        ``is_verdict_key(key) -> bool``: whether a YAML line's key carries the verdict (the
        structured reader's key kinds), so only key lines with a verdict are read as an object.

    Returns
    -------
    Unwrapped
    """
    text = _HL7_OBX.sub(_obx_value, _dicom_sr(_STRUCK.sub(" ", _decoded(text or ""))))
    reasoning = ""
    think = _THINK.search(text)
    if think:
        closed = re.search(rf"</{think.group(1)}>", text, re.I) is not None
        rest = (text[:think.start()] + text[think.end():]).strip()
        if not closed or not rest:
            return Unwrapped("", unclear="cut-off-reasoning")
        reasoning, text = think.group("body").strip(), rest
    answer = _ANSWER_TAG.search(text)
    if answer:
        text = answer.group("body").strip()
    if _TEMPLATE.search(text) or _TEMPLATE_VALUE.search(text) or re.search(r"\"properties\"\s*:\s*\{", text):
        return Unwrapped(text, reasoning, unparseable=True)
    text = _BOXED.sub(lambda m: f"\nFinal answer: {m.group('v').strip()}", text)
    fenced = _FENCE.search(text)
    if fenced and not text[:fenced.start()].strip() and not text[fenced.end():].strip():
        text = fenced.group("body").strip()
        if re.match(r"```diff\b", fenced.group(0)):
            # a diff is an explicit correction: its removed lines are withdrawn, its added lines stand
            text = "\n".join(line[1:].strip() if line.startswith("+") else line for line in text.splitlines()
                              if not (line.startswith("-") and not line.startswith("---")))
    stripped = text.strip()
    if stripped.startswith('"') and stripped.endswith('"'):
        try:
            inner = json.loads(stripped)
        except ValueError:
            inner = None
        if isinstance(inner, str) and inner.strip().startswith("{"):
            text = stripped = inner.strip()
    objects = _top_values(stripped) if stripped.startswith("{") else None
    if objects is None:
        xml = _xml_object(stripped, is_verdict_key) if stripped.startswith("<") else None
        yml = None if xml is not None else _yaml_object(stripped, is_verdict_key)
        objects = [xml or yml] if (xml or yml) else None
    if objects:
        objects = [_likert(canonical_object(o)) for o in objects]
        if len(objects) > 1:
            return Unwrapped(stripped, reasoning, objects=[json.dumps(o, ensure_ascii=False) for o in objects])
        return Unwrapped(json.dumps(objects[0], ensure_ascii=False), reasoning)
    if _EVEN_ODDS.search(text):
        return Unwrapped(text, reasoning, unclear="even-odds")
    text, open_form = _rewrite_lines(text, question)
    if open_form:
        return Unwrapped(text, reasoning, unclear=open_form)
    last = text.strip().split("\n")[-1].strip() if text.strip() else ""
    if last and not re.search(r"[.!?)\]}\u3002]$", last) and (
            (len(text) > 120 and _DANGLING.search(last)) or _CUT_PREDICATE.search(last)):
        return Unwrapped(text, reasoning, unclear="truncated")
    return Unwrapped(text, reasoning)
