"""Multiple-choice questions: schema-driven and report-derived (benchmark-MCQ paper Methods).

- ``schema_questions``: one question per populated field; binary fields -> Yes / No, multi-value
  and binned fields -> 3-5 options, the distractors drawn from the values the field takes
  across the whole dataset (then from the schema's other values), shuffled per (case, field).
- ``report_prompt`` / ``read_generated``: a language model writes 2-5-option questions (mostly
  four) from findings and impression, spanning perception, characterization and diagnosis;
  ``validate_structure`` checks each; ``grounded`` keeps only items whose correct answer is
  explicitly supported by a sentence of the source report; ``subcategory_tag`` tags each by its
  clinical content.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from medscope.benchgen.extract import first_json_object, sentences
from medscope.benchgen.grounding import answer_kind, normalize_sentence, tokens
from medscope.benchgen.lesion_grounding import check_key
from medscope.benchgen.schema import FieldSpec, Schema
from medscope.benchgen.verification import verification_key
from medscope.seeding import rng_for, stable_hash

LETTERS = string.ascii_uppercase[:5]
LEVELS = ("perception", "characterization", "diagnosis")

REPORT_PROMPT = """You write multiple-choice questions for a radiology benchmark from one report.
Write between 3 and 6 questions about what the images of this study show, answerable from the
images alone (never ask about the report, the patient's history or the radiologist).
Span three levels: perception (is a finding present, where is it), characterization (its size,
number, attenuation or signal, margins, enhancement, grade) and diagnosis (what the findings
most likely represent). Give each question 2 to 5 options, usually 4, exactly one correct.
The correct answer must be stated explicitly in the report; quote the supporting sentence.
Reply with JSON only: {"questions": [{"question": "...", "options": ["...", "..."],
"answer": <index of the correct option, from 0>, "level": "perception|characterization|diagnosis",
"subcategory": "<short clinical tag>", "evidence": "<sentence copied from the report>"}]}"""

# Clinical subcategory tags from question content (first match wins): graded and quantitative
# judgments before recognition, so "size of the lesion" is a size question, not detection.
SUBCATEGORY_RULES: tuple[tuple[str, str], ...] = (
    (r"\b(?:size|measur\w*|diameter|length|how large|\d+(?:\.\d+)? ?(?:mm|cm))\b", "lesion size"),
    (r"\b(?:how many|number of|count)\b", "lesion count"),
    (r"\b(?:lung-?rads|li-?rads|category|grade|grading|severity)\b", "category / grade"),
    (r"\bmass effect|midline shift\b", "mass effect"),
    (r"\b(?:where|which (?:lobe|segment|side)|located|location|laterality)\b", "anatomic distribution"),
    (r"\benhanc\w*|washout|attenuation|signal|density|margins?\b", "characterization"),
    (r"\b(?:diagnos\w*|most likely|consistent with|suspicious|represent\w*|impression)\b", "clinical interpretation"),
    (r"\b(?:effusion|pleura\w*)\b", "pleural findings"),
    (r"\b(?:edema|oedema|flair)\b", "oedema"),
    (r"\b(?:gallbladder|spleen|kidney\w*|pancrea\w*|adrenal\w*|aorta|vein\w*)\b", "other organs"),
    (r"\b(?:is there|are there|present|seen|visible)\b", "lesion detection"),
)


def _shuffle(options: list[str], correct: str, seed: int, *keys) -> tuple[list[str], str]:
    order = rng_for(seed, *keys).permutation(len(options))
    shuffled = [options[i] for i in order]
    return shuffled, LETTERS[shuffled.index(correct)]


def value_pools(extracted: dict[str, dict[str, tuple[str, str]]]) -> dict[str, Counter]:
    """Dataset-wide distractor pools: how often each field takes each value over all cases.

    Parameters
    ----------
    extracted : dict of str to dict of str to tuple of (str, str)
        ``{case_id: {field: (value, evidence)}}`` over the whole dataset.

    Returns
    -------
    dict of str to collections.Counter
        ``{field: Counter(value -> number of cases)}``.
    """
    pools: dict[str, Counter] = {}
    for fields in extracted.values():
        for name, (value, _) in fields.items():
            pools.setdefault(name, Counter())[value] += 1
    return pools


def field_options(field: FieldSpec, correct: str, pool: Counter, min_k: int, max_k: int, seed: int, case_id: str
                  ) -> list[str]:
    """The correct value plus distractors: other values seen in the dataset (drawn at random,
    seeded per case and field), then the schema's remaining values, up to ``max_k``.

    Parameters
    ----------
    field : FieldSpec
        A multi-value or binned field.
    correct : str
        The case's value of the field.
    pool : collections.Counter
        The field's dataset-wide values (:func:`value_pools`).
    min_k : int
        Fewest options of a question (capped at the field's number of values).
    max_k : int
        Most options of a question.
    seed : int
        The build's seed.
    case_id : str
        The case, which seeds the draw with the field's name.

    Returns
    -------
    list of str
        The correct value first, then the distractors; empty when fewer than ``min_k`` (or the field's
        number of values) can be offered.
    """
    rng = rng_for(seed, case_id, field.name, "distractors")
    seen = [v for v in sorted(pool) if v != correct]
    seen = [seen[i] for i in rng.permutation(len(seen))] if seen else []
    rest = [v for v in field.choices() if v != correct and v not in seen]
    options = [correct, *seen, *rest][:max_k]
    return options if len(options) >= min(min_k, len(field.choices())) else []


def schema_questions(schema: Schema, case_id: str, fields: dict[str, tuple[str, str]],
                     pools: dict[str, Counter], seed: int = 42) -> list[dict]:
    """RADS-style questions of one case (dicts: field, question, options, answer, k, evidence...).

    Parameters
    ----------
    schema : Schema
        The cohort schema (fields and templates).
    case_id : str
        The case.
    fields : dict of str to tuple of (str, str)
        The case's extracted ``{field: (value, evidence sentence)}``.
    pools : dict of str to collections.Counter
        Dataset-wide distractor pools (:func:`value_pools`).
    seed : int, optional
        The build's seed (distractors and option order).

    Returns
    -------
    list of dict
        One per populated field that can be offered: ``qtype`` ``"rads"``, ``field``, ``subcategory``,
        ``level`` (empty), ``question``, ``options`` (shuffled), ``answer`` (a letter), ``k``,
        ``evidence`` and ``sequences``.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("RADS-style questions").
    """
    t = schema.templates
    out = []
    for field in schema.fields:
        if field.name not in fields:
            continue
        value, evidence = fields[field.name]
        if field.type == "binary":
            options = list(t.binary_options)
            correct = options[0] if value == "yes" else options[1]
        else:
            correct = value
            options = field_options(field, value, pools.get(field.name, Counter()), t.min_options,
                                    t.max_options, seed, case_id)
            if not options:
                continue
        options, letter = _shuffle(options, correct, seed, case_id, field.name)
        out.append({"qtype": "rads", "field": field.name, "subcategory": field.subcategory, "level": "",
                    "question": field.question, "options": options, "answer": letter,
                    "k": len(options), "evidence": evidence, "sequences": field.sequences})
    return out


def report_prompt(findings: str, impression: str, prompt: str = REPORT_PROMPT) -> str:
    """The generator's prompt: ``prompt``, then the report's findings and impression.

    Parameters
    ----------
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.
    prompt : str, optional
        The instructions.

    Returns
    -------
    str
        The prompt text.
    """
    return f"{prompt}\n\nFINDINGS:\n{findings.strip()}\n\nIMPRESSION:\n{impression.strip()}"


def read_generated(reply: str) -> tuple[list[dict], list[str]]:
    """(candidate questions, problems) from a generator's reply; structure is checked later.

    Parameters
    ----------
    reply : str
        The generator's reply.

    Returns
    -------
    candidates : list of dict
        The reply's question objects, unchecked.
    problems : list of str
        ``["reply_not_json"]`` when the reply has no JSON object with a ``questions`` list; else empty.
    """
    obj = first_json_object(reply)
    if obj is None or not isinstance(obj.get("questions"), list):
        return [], ["reply_not_json"]
    return [q for q in obj["questions"] if isinstance(q, dict)], []


def validate_structure(q: dict) -> str | None:
    """Why a generated question is malformed, or None: a question, 2-5 distinct non-empty
    options, an answer index among them, a known level.

    Parameters
    ----------
    q : dict
        A generated question; on success its ``answer`` is set to the option index (a letter answer is
        converted).

    Returns
    -------
    str or None
        None when well formed; else ``no_question_text``, ``option_count_outside_2_5``,
        ``empty_option``, ``duplicate_options``, ``answer_not_an_option`` or ``unknown_level``.
    """
    if not isinstance(q.get("question"), str) or len(q["question"].strip()) < 8:
        return "no_question_text"
    opts = q.get("options")
    if not isinstance(opts, list) or not 2 <= len(opts) <= 5:
        return "option_count_outside_2_5"
    if any(not isinstance(o, str) or not o.strip() for o in opts):
        return "empty_option"
    if len({o.strip().lower() for o in opts}) != len(opts):
        return "duplicate_options"
    ans = q.get("answer")
    if isinstance(ans, str) and len(ans.strip()) == 1 and ans.strip().upper() in LETTERS:
        ans = LETTERS.index(ans.strip().upper())
    if not isinstance(ans, int) or isinstance(ans, bool) or not 0 <= ans < len(opts):
        return "answer_not_an_option"
    if q.get("level") not in LEVELS:
        return "unknown_level"
    q["answer"] = ans
    return None


def grounded(q: dict, findings: str, impression: str) -> tuple[bool, str, str]:
    """Report-grounded check: (kept, evidence sentence, reason). A quoted evidence sentence must
    be in the report; the key must then be stated by the report as a radiologist reads it
    (:func:`medscope.benchgen.lesion_grounding.check_key`: negation and uncertainty scope, quantities
    with units, laterality, differentials), the whole report read so a later denial counts.

    Parameters
    ----------
    q : dict
        A structurally valid question (:func:`validate_structure`): ``question``, ``options``,
        ``answer`` (an option index) and optionally ``evidence``.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    kept : bool
        Whether the report states the key.
    evidence : str
        The supporting report sentence when kept; empty otherwise.
    reason : str
        Empty when kept; else ``evidence_not_in_report``, ``another_option_stated`` (the report
        states another option that holds all of the key's words and more: "borderline resectable"
        for the key "Resectable") or the reason of :func:`medscope.benchgen.lesion_grounding.check_key`.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("report-grounded check").
    """
    answer = q["options"][q["answer"]]
    norm = lambda s: re.sub(r"\s+", " ", s.strip().lower())  # noqa: E731
    quote = norm(str(q.get("evidence") or ""))
    if quote and not any(quote in norm(s) or norm(s) in quote
                         for s in sentences(findings) + sentences(impression)):
        return False, "", "evidence_not_in_report"
    kept, evidence, reason = check_key(q["question"], answer, findings, impression)
    if kept and answer_kind(q["question"], answer) == "term":
        # "borderline resectable" states the option "Borderline resectable", not "Resectable" inside it
        words = {t for t, _, _ in tokens(normalize_sentence(answer))}
        for other in q["options"]:
            more = {t for t, _, _ in tokens(normalize_sentence(str(other)))}
            if other != answer and words < more and check_key(q["question"], str(other), findings, impression)[0]:
                return False, "", "another_option_stated"
    return kept, evidence, reason


def subcategory_tag(question: str) -> str:
    """Clinical subcategory of a question from its content (``SUBCATEGORY_RULES``).

    Parameters
    ----------
    question : str
        The question text.

    Returns
    -------
    str
        The tag of the first matching rule; ``"other"`` when none matches.
    """
    for pattern, tag in SUBCATEGORY_RULES:
        if re.search(pattern, question, flags=re.IGNORECASE):
            return tag
    return "other"


def report_questions(case_id: str, reply: str, findings: str, impression: str, seed: int = 42,
                     verdicts: dict | None = None) -> tuple[list[dict], list[tuple]]:
    """Kept report-derived questions of one case and [(candidate id, reject reason[, detail])].

    ``verdicts`` (``verify: llm``): {verification key: (supported, reason)} of the verifier
    model (``benchgen.verification``); a question the rules keep is then kept only when its
    verdict says supported, and rejected as ``verification:not_supported`` /
    ``verification:unreadable`` / ``verification:no_verdict`` (the call failed or was refused).

    Parameters
    ----------
    case_id : str
        The case.
    reply : str
        The generator's reply for the case.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.
    seed : int, optional
        The build's seed (option order).
    verdicts : dict or None, optional
        ``{verification key: (supported, reason)}``; None: the rules alone decide.

    Returns
    -------
    kept : list of dict
        ``qtype`` ``"report"``, ``field`` (empty), ``subcategory``, ``level``, ``question``, ``options``
        (shuffled), ``answer`` (a letter), ``k``, ``evidence`` and ``sequences`` (None).
    rejects : list of tuple
        ``(candidate id, reason)`` or ``(candidate id, reason, detail)``; reasons are the reply's
        problems or prefixed ``structure:``, ``grounding:`` (detail: ``question -> key``) or
        ``verification:`` (detail: the verifier's sentence).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    candidates, problems = read_generated(reply)
    rejects = [(f"{case_id}/report", p) for p in problems]
    out = []
    for n, q in enumerate(candidates):
        qid = f"{case_id}/report/{n}"
        why = validate_structure(q)
        if why:
            rejects.append((qid, f"structure:{why}"))
            continue
        ok, evidence, why = grounded(q, findings, impression)
        if not ok:  # the question and its key travel with the reason, for the review CSV
            rejects.append((qid, f"grounding:{why}", f"{q['question'].strip()} -> {q['options'][q['answer']]}"))
            continue
        options = [o.strip() for o in q["options"]]
        if verdicts is not None:
            key = verification_key(case_id, q["question"], options[q["answer"]], findings, impression)
            supported, reason = verdicts.get(key, (None, None))
            if supported is not True:
                why = ("verification:no_verdict" if reason is None else
                       "verification:unreadable" if supported is None else "verification:not_supported")
                rejects.append((qid, why, reason or ""))
                continue
        options, letter = _shuffle(options, options[q["answer"]], seed, case_id, "report", stable_hash(q["question"]))
        out.append({"qtype": "report", "field": "", "subcategory": subcategory_tag(q["question"]),
                    "level": q["level"], "question": q["question"].strip(), "options": options, "answer": letter,
                    "k": len(options), "evidence": evidence, "sequences": None})
    return out, rejects
