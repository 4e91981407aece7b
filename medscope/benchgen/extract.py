"""Populate a schema's fields from report text (benchmark-MCQ paper, "RADS-style questions").

Two extractors give the same output, ``{field: (value, evidence sentence)}`` for the fields the
report settles (a field the report does not settle is absent, and yields no question):

- ``extract_rules``: deterministic patterns from the schema, read through the shared negation /
  uncertainty scope (see ``field_value``). The first sentence that settles a field settles it,
  so the order of the report decides, not chance.
- ``extraction_prompt`` / ``read_extraction``: an LLM endpoint asked for one JSON object; every
  value must be one of the field's choices, anything else is dropped with a reason.
"""

from __future__ import annotations

import json
import re

from medscope.benchgen.grounding import SECONDARY, _mention_status, measurements, normalize_sentence, sentences
from medscope.benchgen.schema import FieldSpec, Schema



def _any(patterns: list[str], text: str) -> bool:
    return any(re.search(p, text, flags=re.IGNORECASE) for p in patterns)


INCIDENTAL = re.compile(r"\bincidental(?:ly)?\b", re.IGNORECASE)
_SIZE_KEY = re.compile(r"\b(?:largest|measuring|measures|measured|size of|diameter of|up to)\b", re.IGNORECASE)


def _matches(patterns: list[str], text: str) -> list[re.Match]:
    return [m for p in patterns for m in re.finditer(p, text, flags=re.IGNORECASE)]


def field_value(field: FieldSpec, sentence: str) -> str | None:
    """The value one sentence gives ``field``, or None when it says nothing about it.

    Mentions are read through the shared NegEx/ConText scope (``medscope.answers.context`` via
    ``benchgen.grounding``): a binary field's positive mention that the sentence denies ("without
    midline shift", "enhancement is absent") is "no"; hedged, hypothetical or historical mentions
    settle nothing; the earliest deciding mention of the sentence wins ("enhancing mass with
    surrounding non-enhancing signal" enhances). A multi-value field takes the earliest asserted
    value (schema order on a tie), never one reached by "extending into" nor a denied one ("no
    right effusion"); incidental sentences ("incidental left thalamic infarct") settle no
    location or size. A binned field reads the measurement after a size word, its largest
    dimension ("3.2 x 5.5 cm" -> 55 mm).

    Parameters
    ----------
    field : FieldSpec
        The schema field read.
    sentence : str
        One report sentence.

    Returns
    -------
    str or None
        ``"yes"`` / ``"no"`` (binary), one of the field's values (multi) or the bin of the size in mm
        (binned); None when the sentence does not settle the field.
    """

    text = normalize_sentence(sentence)
    if field.context and not _any(field.context, text):
        return None
    if field.type == "binary":
        calls = [(m.start(), "no") for m in _matches(field.no_patterns, text)]
        for m in _matches(field.yes_patterns, text):
            st = _mention_status(text, m.start(), m.end())
            if st in ("affirmed", "negated"):
                calls.append((m.start(), "yes" if st == "affirmed" else "no"))
        return min(calls)[1] if calls else None
    if INCIDENTAL.search(text):
        return None
    if field.type == "multi":
        found = []
        for order, v in enumerate(field.values):
            for m in _matches(v.patterns, text):
                if SECONDARY.search(text[: m.start()]) or _mention_status(text, m.start(), m.end()) not in (
                        "affirmed", "favoured"):
                    continue
                found.append((m.start(), order, v.value))
        return min(found)[2] if found else None
    key = _SIZE_KEY.search(text)
    sizes = [dims for kind, dims, _ in measurements(text[key.end():])] if key else []
    if key and sizes and _mention_status(text, key.start(), key.end()) not in ("negated", "historical"):
        return bin_value(field, max(sizes[0]))
    m = re.search(field.measure, text, flags=re.IGNORECASE)
    if not m:
        return None
    mm = float(m.group(1)) * (10.0 if m.group(2).lower() == "cm" else 1.0)
    return bin_value(field, mm)


def bin_value(field: FieldSpec, mm: float) -> str:
    """The bin of a measurement in mm: the first bin whose upper bound exceeds it.

    Parameters
    ----------
    field : FieldSpec
        A binned field.
    mm : float
        The measurement, in mm.

    Returns
    -------
    str
        The bin's value; the last bin's when no upper bound exceeds ``mm``.
    """
    for b in field.bins:
        if b.below is None or mm < b.below:
            return b.value
    return field.bins[-1].value


def extract_rules(schema: Schema, findings: str, impression: str) -> dict[str, tuple[str, str]]:
    """``{field: (value, evidence sentence)}`` from the schema's deterministic patterns.

    Parameters
    ----------
    schema : Schema
        The cohort schema.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    dict of str to tuple of (str, str)
        ``{field name: (value, evidence sentence)}``: for each field, the first sentence (findings, then
        impression) that settles it; fields nothing settles are absent.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("RADS-style questions").
    """
    out: dict[str, tuple[str, str]] = {}
    sents = sentences(findings) + sentences(impression)
    for field in schema.fields:
        for s in sents:
            v = field_value(field, s)
            if v is not None:
                out[field.name] = (v, s)
                break
    return out


def extraction_prompt(schema: Schema, findings: str, impression: str) -> str:
    """The LLM extractor's prompt: the fields with their allowed values, then the report.

    Parameters
    ----------
    schema : Schema
        The cohort schema; each field's name, question and allowed values are listed.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    str
        The prompt text.
    """
    lines = ["Read the radiology report below and fill in each field of the schema.",
             "Use only what the report states; use null when the report does not settle a field.",
             "Reply with one JSON object mapping each field name to one allowed value or null, "
             "and an object \"evidence\" mapping each filled field to the report sentence that supports it.",
             "", "Fields:"]
    for f in schema.fields:
        lines.append(f"- {f.name}: {f.question} Allowed values: {', '.join(json.dumps(c) for c in f.choices())}")
    lines += ["", "FINDINGS:", findings.strip(), "", "IMPRESSION:", impression.strip()]
    return "\n".join(lines)


def first_json_object(text: str) -> dict | None:
    """The first JSON object in a reply (models wrap JSON in prose or code fences).

    Parameters
    ----------
    text : str
        The reply text.

    Returns
    -------
    dict or None
        The first ``{...}`` that decodes to a JSON object; None when there is none.
    """
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text or ""):
        try:
            obj, _ = dec.raw_decode(text[m.start():])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def read_extraction(schema: Schema, reply: str, findings: str, impression: str
                    ) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]]]:
    """(``{field: (value, evidence)}``, [(field, why dropped)]) from an LLM extractor's reply.

    Parameters
    ----------
    schema : Schema
        The cohort schema.
    reply : str
        The extractor's reply.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    fields : dict of str to tuple of (str, str)
        ``{field name: (value, evidence)}``; the value is spelled as the schema does, the evidence is
        empty when the reply gives none.
    dropped : list of tuple of (str, str)
        ``(field, reason)``: ``value_not_allowed:<value>`` or ``evidence_not_in_report``; a reply
        without a JSON object gives ``[("*", "reply_not_json")]``.
    """
    obj = first_json_object(reply)
    if obj is None:
        return {}, [("*", "reply_not_json")]
    evidence = obj.get("evidence") if isinstance(obj.get("evidence"), dict) else {}
    text = f"{findings}\n{impression}".lower()
    out, dropped = {}, []
    for f in schema.fields:
        v = obj.get(f.name)
        if v is None:
            continue
        v = str(v).strip()
        if v.lower() not in [c.lower() for c in f.choices()]:
            dropped.append((f.name, f"value_not_allowed:{v[:40]}"))
            continue
        ev = str(evidence.get(f.name) or "").strip()
        if ev and ev.lower() not in text:
            dropped.append((f.name, "evidence_not_in_report"))
            continue
        out[f.name] = (next(c for c in f.choices() if c.lower() == v.lower()), ev)
    return out, dropped
