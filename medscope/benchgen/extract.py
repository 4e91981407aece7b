"""Populate a schema's fields from report text (benchmark-MCQ paper, "RADS-style questions").

Two extractors give the same output, ``{field: (value, evidence sentence)}`` for the fields the
report settles (a field the report does not settle is absent, and yields no question):

- ``extract_with_rejects`` / ``extract_rules``: deterministic patterns from the schema, read
  through the shared negation / uncertainty scope (see ``field_value``), at two levels:

  * a field about *the lesion* (its question names "the dominant / largest" lesion or "the
    nodule / mass / lesion / observation") is read from one finding only, the dominant lesion of
    :mod:`medscope.benchgen.findings` (the one the report calls dominant, else the largest):
    its size, side, location and attributes all come from that finding's own clause, and where
    no lesion is dominant the field is rejected with that reason;
  * any other field (effusion, hydronephrosis, nodes, presence) reads every sentence: an
    asserted mention answers Yes; No needs a denial that covers the question -- "No right
    pleural effusion" says nothing of the left, "no new nodules" nothing of a known one -- and a
    Yes beside such a denial is ``conflicting_statements``.
- ``extraction_prompt`` / ``read_extraction``: an LLM endpoint asked for one JSON object; every
  value must be one of the field's choices, anything else is dropped with a reason.
"""

from __future__ import annotations

import json
import re

from medscope.benchgen import findings as findmod
from medscope.benchgen.grounding import (ORGAN_WORDS, one_region_denied, _MIXED_BEFORE, ARTIFACT_AFTER, _SIDE_TAIL, SECONDARY, _spread,
                                        RELATIVE_TO_BEFORE, SHARED_HEAD, named_members, member_subject, time_narrowed_denial,
                                        paired_subject_side, _BOTH_SIDES,
                                        _mention_status, is_recommendation, measurements, normalize_sentence, sentences,
                                        PART_DENIED, TOPIC, in_technical_phrase, stem, tokens)
from medscope.benchgen.schema import FieldSpec, Schema



def _any(patterns: list[str], text: str) -> bool:
    return any(re.search(p, text, flags=re.IGNORECASE) for p in patterns)


_MEASURED_AND = re.compile(r"(?<=\S)\s+(?:measures|measuring)\s+\d+(?:\.\d+)?\s*(?:mm|cm)\s+and(?=\s+(?:is|are)\b)")
INCIDENTAL = re.compile(r"\bincidental(?:ly)?\b", re.IGNORECASE)
_SIZE_KEY = re.compile(r"\b(?:largest|measuring|measures|measured|size of|diameter of|up to)\b", re.IGNORECASE)


def _matches(patterns: list[str], text: str) -> list[re.Match]:
    return [m for p in patterns for m in re.finditer(p, text, flags=re.IGNORECASE)]


def graded_denial(text: str, a: int, b: int) -> bool:
    """Whether a schema denial pattern's match ``text[a:b]`` is graded by certainty ("without
    definite extraprostatic extension", "no convincing invasion"): the thing is left possible, so
    the match denies nothing (and the finding inside it asserts nothing).

    Parameters
    ----------
    text : str
        A normalised sentence.
    a, b : int
        The denial match's span in ``text``.

    Returns
    -------
    bool
        True when "no" / "without" of the match's own clause is followed by a certainty grade
        ("definite", "convincing", "unequivocal", "frank", "overt", "obvious", "clear").
    """
    start = max([max(0, a - 60)] + [m.end() for m in re.finditer(r"[;,]", text[:a])])  # its own clause only
    return re.search(r"\b(?:no|without)\s+(?:(?:a|an|any)\s+)?(?:definite(?:ly)?|definitive|convincing|unequivocal|"
                     r"frank|overt|obvious|clear(?:-cut)?)\b", text[start:b]) is not None


def _part_denied(denial: str, field: FieldSpec) -> bool:
    """Whether a denial is narrowed to a part of the lesion the field's question does not ask
    ("no internal enhancement" denies the lesion's enhancement only inside it)."""
    return bool(set(PART_DENIED.findall(denial.lower())) - set(re.findall(r"[a-z]+", field.question.lower())))


def field_value(field: FieldSpec, sentence: str, lesion_text: bool = False) -> str | None:
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
        One report sentence (or one finding's words).
    lesion_text : bool, optional
        True when ``sentence`` is one finding's own words (``findings.Finding.text``): the
        field's ``context`` gate is then already met.

    Returns
    -------
    str or None
        ``"yes"`` / ``"no"`` (binary), one of the field's values (multi) or the bin of the size in mm
        (binned); None when the sentence does not settle the field.
    """

    text = normalize_sentence(sentence)
    if field.context and not lesion_text and not _any(field.context, text):
        return None
    if field.type == "binary":
        # "The main pancreatic duct measures 2 mm and is normal": a measurement between a structure and
        # its state leaves the state the structure's (the schema's pattern reads "duct is normal")
        text = _MEASURED_AND.sub("", text)
        graded = [(m.start(), m.end()) for m in _matches(field.no_patterns, text) if graded_denial(text, m.start(), m.end())]
        calls = [(m.start(), "no") for m in _matches(field.no_patterns, text)
                 if not findmod.another_thing_after(text, m.end()) and (m.start(), m.end()) not in graded
                 and not in_technical_phrase(text, m.start(), m.end())
                 # "no internal enhancement" denies one part's, not the lesion's ("an enhancing wall")
                 and not _part_denied(m.group(0), field)]
        for m in _matches(field.yes_patterns, text):
            if (findmod.another_thing_after(text, m.end()) or ARTIFACT_AFTER.match(text[m.end():])
                    or in_technical_phrase(text, m.start(), m.end())
                    or any(a <= m.start() < b for a, b in graded)):
                continue
            st = _mention_status(text, m.start(), m.end())
            neg = list(_DENIER.finditer(text[:m.start()]))
            if st == "negated" and neg and _part_denied(text[neg[-1].start():m.end()], field):
                continue  # "no internal enhancement" beside "a thick enhancing wall"
            if st in ("affirmed", "negated"):
                calls.append((m.start(), "yes" if st == "affirmed" else "no"))
        return min(calls)[1] if calls else None
    if INCIDENTAL.search(text) and not (lesion_text and re.match(r"^\W*incidental(?:ly)?\b", text)):
        # an incidental other finding settles nothing; the lesion's own words opening with it
        # ("Incidental 6 mm hypodensity in the pancreatic body") still place that lesion
        return None
    if field.type == "multi":
        found, spans = _multi_found(field, text)
        # a value given as one end of a range or one part of a mixture ("predominantly solid" where
        # the schema has no mixed value) settles nothing, unless a longer value names the whole
        for a, b in spans:
            kind = _spread(text, [(a, b)])
            if not kind or any(a2 <= a and b <= b2 and (a2, b2) != (a, b) for a2, b2 in spans):
                continue
            # "mixed cystic and solid" where a value's pattern is "mixed" alone: that value names the mixture
            lead = _MIXED_BEFORE.search(text[:a]) if kind == "mixed" else None
            if lead and any(lead.start() <= a2 < a for a2, _ in spans):
                continue
            return None
        return min(found)[2] if found else None
    key = _SIZE_KEY.search(text)
    sizes = [dims for kind, dims, _ in measurements(text[key.end():]) if kind == "length"] if key else []
    if key and sizes and _mention_status(text, key.start(), key.end()) not in ("negated", "historical"):
        return bin_value(field, max(sizes[0]))
    m = re.search(field.measure, text, flags=re.IGNORECASE)
    if not m:
        return None
    mm = float(m.group(1)) * (10.0 if m.group(2).lower() == "cm" else 1.0)
    return bin_value(field, mm)


# a structure the lesion lies beside, not in: "adjacent to the right ovary but separate from it",
# "moving separately from the left ovary", "between the ovary and the uterus", "abutting the
# pancreatic head" (a relation to a structure is no origin or place in it)
RELATION_BEFORE = re.compile(r"\b(?:adjacent to|separate(?:ly)? from|separated from|distinct from|independent(?:ly)? of|"
                             r"abutt?(?:ing|s)?|(?:closely )?applied to|close to|next to|between|in contact with|"
                             r"contacting|indent(?:s|ing)|displac(?:es|ing)|compress(?:es|ing)|effac(?:es|ing)|"
                             # a structure the mass pushes on is not where it lies ("displaces both frontal lobes")
                             r"distort(?:s|ing)|deform(?:s|ing)|splay(?:s|ing)|(?:mass effect|pressure) (?:on|upon))\s+"
                             r"(?:(?:both|the|its|a|an)\s+)?"
                             r"(?:[\w-]+\s+){0,2}$")


# a share of a lesion's own volume ("more than half of its volume projects into the cavity", a fibroid's
# FIGO grading) says where the lesion lies, never how deep a tumour invades a wall
_SHARE_OF_VOLUME = re.compile(r"\s*(?:%\s*)?of\s+(?:its|the\s+(?:lesion|fibroid|mass|tumou?r)(?:'s)?)\s+volume\b")


# an MR sequence's name is no place: "hyperintense on T1 and T2", "T2 hyperintense", "T1-weighted" (a value
# pattern for a vertebral level, T1 or T2, matching only the sequence's name names no level)
_SEQUENCE_NAME = re.compile(r"\bt[12](?:\s*-?\s*(?:and|or|/)\s*t[12])+\b|(?<=\bon )t[12]\b|"
                            r"\bt[12](?=\s*-?\s*(?:weighted|hyper|hypo|iso|signal|stir|flair))")


def _sequence_name(text: str, a: int, b: int) -> bool:
    return any(m.start() <= a and b <= m.end() for m in _SEQUENCE_NAME.finditer(text))


def _multi_found(field: FieldSpec, text: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]]]:
    """((start, schema order, value), (start, end)) of every asserted value mention of a multi field
    in normalised ``text``: never one reached by "extending into", one the sentence denies or
    hedges, or a structure the lesion is only beside (:data:`RELATION_BEFORE`)."""
    found, spans = [], []
    for order, v in enumerate(field.values):
        for m in _matches(v.patterns, text):
            if (SECONDARY.search(text[: m.start()]) or RELATION_BEFORE.search(text[: m.start()])
                    or RELATIVE_TO_BEFORE.search(text[: m.start()])
                    or in_technical_phrase(text, m.start(), m.end()) or _sequence_name(text, m.start(), m.end())
                    or _SHARE_OF_VOLUME.match(text[m.end():])
                    or _mention_status(text, m.start(), m.end()) not in ("affirmed", "favoured")):
                continue
            found.append((m.start(), order, v.value))
            spans.append((m.start(), m.end()))
    return found, spans


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


# A question about one lesion ("the dominant nodule", "Does the lesion enhance?"), not the study.
_LESION_QUESTION = re.compile(r"\b(?:dominant|largest|index)\b|\b(?:the|this) (?:[\w-]+ )?(?:nodule|mass|lesion|"
                              r"observation|tumou?r|cyst)s?\b")
_SIDE_WORD = re.compile(r"\b(left|right|bilateral|both)\b")
# A denial narrowed to part of what the question asks: a side, or only new / other lesions.
# "No solid renal mass" denies solid masses only, not a simple cyst.
_NARROW = re.compile(r"\b(?:left|right|new|additional|further|other|enlarging|solid|cystic|suspicious|enhancing|"
                     r"calcified|obstructing|dominant|large|discrete|previously|prior)\b")


def lesion_scoped(field: FieldSpec) -> bool:
    """Whether a field asks about one lesion (read from the dominant finding) rather than the study.

    Parameters
    ----------
    field : FieldSpec
        A schema field.

    Returns
    -------
    bool
        True when the field's question names "the dominant / largest / index" lesion or "the" nodule,
        mass, lesion, observation, tumour or cyst.
    """
    return bool(_LESION_QUESTION.search(normalize_sentence(field.question)))


def _side_values(field: FieldSpec) -> dict[str, str] | None:
    """{side: value} when every value of a multi field names exactly one side ("left kidney"), else None."""
    if field.type != "multi":
        return None
    out = {}
    for v in field.values:
        sides = {("bilateral" if w == "both" else w) for w in _SIDE_WORD.findall(v.value.lower())}
        if len(sides) != 1 or next(iter(sides)) in out:
            return None
        out[next(iter(sides))] = v.value
    return out


# "Is there a focal renal lesion?", "Is there a pulmonary nodule or mass?": a lesion of the organ,
# nothing narrower (no category, kind or suspicion the question asks for)
_ANY_LESION_Q = re.compile(r"^\W*(?:is|are)\s+there\s+(?:a|an|any)?\s*(?:focal\s+)?(?:[\w-]+\s+){0,2}?"
                           r"(?:lesions?|mass(?:es)?|nodules?|tumou?rs?)(?:\s+or\s+(?:lesions?|mass(?:es)?|nodules?|"
                           r"tumou?rs?))?(?:\s+(?:in|of)\s+the\s+[\w\s-]+?)?\s*\?$")


def asks_any_lesion(field: FieldSpec) -> bool:
    """Whether a binary field asks whether the organ has any focal lesion at all ("Is there a focal
    salivary gland lesion?"), not one of a kind, category or suspicion ("a suspicious focal lesion",
    "a lesion of O-RADS category 3 or higher", "a solid or complex lesion").

    Parameters
    ----------
    field : FieldSpec
        A schema field.

    Returns
    -------
    bool
        True for a binary field whose question asks for a lesion, mass, nodule or tumour, optionally
        focal, with no word before the noun but the organ's own (:data:`ORGAN_WORDS`, "gland").
    """
    if field.type != "binary":
        return False
    q = normalize_sentence(field.question)
    m = _ANY_LESION_Q.match(q)
    if not m:
        return False
    head = re.sub(r"^\W*(?:is|are)\s+there\s+(?:(?:a|an|any)\s+)?(?:focal\s+)?", "", q)
    # the words before the noun and any place after it ("in the prostate") name the organ only
    rest = re.sub(r"\b(?:lesions?|mass(?:es)?|nodules?|tumou?rs?)\b|\b(?:or|in|of|the)\b|\?", " ", head)
    for pat in ORGAN_WORDS.values():
        rest = re.sub(pat, " ", rest)
    return not re.sub(r"\b(?:gland|glands|soft-tissue|soft|tissue)\b", " ", rest).strip()


# "The conus terminates at L1 and is normal in signal": the subject's last coordinated "and is" predicate
_LATER_PREDICATE = re.compile(r"^(\W*(?:the\s+)?[a-z-]+)\s+(?!(?:is|are)\b)[^.;]*(?:,|\band)\s+(is|are)\s+"
                              r"(?!otherwise\b)([^.;]*)")


def _subject_restated(field: FieldSpec, text: str) -> str:
    """``text`` with the subject set before its last coordinated predicate ("the conus terminates at L1 and
    is normal in signal" -> "the conus is normal in signal"), where only that form meets one of the
    field's patterns (they read a subject with its copula); else ``text`` as it is. An "otherwise normal"
    predicate is left alone: it clears the rest of the subject, not the asked finding."""
    m = _LATER_PREDICATE.match(text)
    if not m or _any(field.no_patterns + field.yes_patterns, text):
        return text
    restated = f"{m.group(1)} {m.group(2)} {m.group(3)}."
    return restated if _any(field.no_patterns + field.yes_patterns, restated) else text


def study_binary(field: FieldSpec, sents: list[str], lesion_side: str | None = None) -> tuple[str | None, str, str]:
    """A study-level binary field over every sentence: (value, evidence, reason when unset).

    An asserted mention says yes; a denial says no only when it covers the whole question (not one
    side, not only new lesions, unless both sides are denied); both together are conflicting;
    hedged, hypothetical and historical mentions say nothing.

    Parameters
    ----------
    field : FieldSpec
        A binary field.
    sents : list of str
        The report's sentences as written.
    lesion_side : str or None, optional
        The side of the dominant lesion when the question is about something of that lesion
        ("Is there tumour thrombus in the renal vein?"): a denial on that side alone ("Left renal
        vein is patent" beside a left renal tumour) then answers No, since the lesion's own side is
        the only one the question can be about (used for paired organs only). None: a one-sided
        denial never answers.

    Returns
    -------
    value : str or None
        ``"yes"``, ``"no"`` or None.
    evidence : str
        The deciding sentence (first affirming one for yes, first covering denial for no).
    reason : str
        Empty when set; else ``not_in_report``, ``only_partial_denial`` (side-specific or "no new")
        or ``conflicting_statements``.
    """
    yes, no, partial_sides, partial, hedged = [], [], set(), [], []
    other_narrowing = []  # partial denials narrowed by more than a side ("no new", "no solid")
    asked_organ = findmod._organ(normalize_sentence(field.question))  # "Is there a focal renal lesion?": kidney
    # the question's own qualifiers, never one of a choice ("solid or complex": "no solid lesion" leaves
    # the complex ones unsaid)
    q_text = normalize_sentence(field.question)
    asked_words = frozenset(re.findall(r"[a-z]+", re.sub(r"\b[a-z-]+\s+(?:or|and/or)\s+[a-z-]+\b", " ", q_text)))
    # what the question asks for, less the organ it is in ("No thyroid cyst" names the organ, not the nodule)
    q_stems = {t for t, _, _ in tokens(q_text)} - {stem(w) for pat in ORGAN_WORDS.values()
                                                   for m in re.finditer(pat, q_text) for w in m.group(0).split()}
    members = named_members([normalize_sentence(s) for s in sents])
    # "Clinical: right preauricular fullness, query parotid mass.": the reason for the study, not a finding of it
    referral = [m.group(0) for m in findmod._CLINICAL_LINE.finditer(" ".join(sents))]
    for i, s in enumerate(sents):
        text = _MEASURED_AND.sub("", normalize_sentence(s))  # "duct measures 2 mm and is normal": the duct is normal
        if is_recommendation(text):
            continue
        text = _subject_restated(field, text)
        before = normalize_sentence(sents[i - 1]) if i else ""
        if field.context and not _any(field.context, text):
            continue
        other_section = _under_other_organ(asked_organ, text)
        denied = []
        for m in _matches(field.no_patterns, text):
            if graded_denial(text, m.start(), m.end()):
                denied.append((m.start(), m.end()))  # "without definite EPE": neither a denial nor a mention
                continue
            if other_section:
                denied.append((m.start(), m.end()))
                continue
            if findmod.another_thing_after(text, m.end()) or in_technical_phrase(text, m.start(), m.end()):
                continue  # "No mass effect" denies no mass, "no acoustic enhancement" no contrast enhancement
            denied.append((m.start(), m.end()))
            if _favoured_both_ways(text, m.start(), m.end()):
                hedged.append(s)  # "favour an osteoporotic fracture, but a deposit cannot be excluded": open
                continue
            _denial(text, m.start(), m.end(), s, no, partial, partial_sides, other_narrowing, asked_words, members)
        for m in _matches(field.yes_patterns, text):
            if any(s.strip() in r for r in referral):
                break
            if (any(a <= m.start() < b for a, b in denied) or findmod.another_thing_after(text, m.end())
                    or ARTIFACT_AFTER.match(text[m.end():]) or in_technical_phrase(text, m.start(), m.end())):
                continue
            if findmod.category_of_a_node(m.group(0), "") or (
                    findmod._CATEGORY.search(m.group(0)) and findmod.category_of_a_node(text, before)):
                continue  # "Abnormal axillary lymph node. BI-RADS 4C.": the node's category, no lesion's
            st = _mention_status(text, m.start(), m.end())
            if findmod._RESOLVED_AFTER.search(text[m.end():]) and not findmod._mentions_between(text, m.end()):
                continue  # "the previously described nodule ... has resolved" asserts no nodule now
            if (findmod._NO_NEW.search(text[:m.start()]) or re.search(r"\bno\s+(?:new|further|additional)\s+(?:\w+\s+){0,2}$", text[:m.start()])
                    or st == "negated" and time_narrowed_denial(text[:m.start()], sents)):
                partial.append(s)
                other_narrowing.append(s)
            elif st == "affirmed":
                yes.append(s)
            elif st == "possible" and _not_excluded(text[:m.start()], text[m.end():]):
                hedged.append(s)
            elif st == "negated" and not _names_the_asked(m.group(0), q_stems):
                # "No Baker's cyst.": one named kind of the asked thing denied leaves the others unsaid
                partial.append(s)
                other_narrowing.append(s)
            elif st == "negated":
                _denial(text, m.start(), m.end(), s, no, partial, partial_sides, other_narrowing, asked_words, members)
    if {"left", "right"} <= partial_sides and not no:
        no.append(partial[0])
    if (lesion_side in ("left", "right") and partial_sides == {lesion_side} and not no and not yes
            and not other_narrowing):
        no.append(partial[0])
    if yes and no:
        return None, "", "conflicting_statements"
    if yes:
        return "yes", yes[0], ""
    if hedged and not partial:
        # "early cirrhosis cannot be excluded": the radiologist leaves the asked thing open, so no
        # other sentence ("The liver is of normal size ...") answers No for the report ("X is less
        # likely" leans to No and is not read here; a denial on some images only keeps its own reason)
        return None, "", "uncertain_in_report"
    if no:
        return "no", no[0], ""
    return None, "", "only_partial_denial" if partial else "not_in_report"


# the radiologist says he cannot exclude the mention: "X cannot be excluded / is not excluded / cannot be
# ruled out", "cannot exclude X"
_NOT_EXCLUDED_AFTER = re.compile(r"^\W*(?:[\w-]+\W+){0,2}?(?:(?:can ?not|could not|not) be (?:excluded|ruled out)|"
                                 r"(?:is|are) not (?:excluded|ruled out))\b")
_NOT_EXCLUDED_BEFORE = re.compile(r"\b(?:can ?not|could not|not) (?:exclude|rule out)\s+(?:[\w-]+\s+){0,3}$")


_OTHER_WAY_OPEN = re.compile(r"\b(?:(?:can ?not|could not|not) be (?:\w+ )?(?:excluded|ruled out)|"
                             r"(?:can ?not|could not) (?:\w+ )?(?:exclude|rule out))\b")


def _favoured_both_ways(text: str, a: int, b: int) -> bool:
    """Whether a reading that answers No ("an osteoporotic fracture") is only favoured, and the same
    sentence leaves the other reading open ("... cannot be entirely excluded"): the radiologist leans
    one way and settles nothing.

    Parameters
    ----------
    text : str
        A normalised sentence.
    a, b : int
        The span of a field's denial pattern in ``text``.

    Returns
    -------
    bool
        True when the match's status is ``favoured`` (``favour``, ``likely``, ``probably``) and the sentence
        says something "cannot be excluded / ruled out".
    """
    return _mention_status(text, a, b) == "favoured" and _OTHER_WAY_OPEN.search(text) is not None


def _not_excluded(before: str, after: str) -> bool:
    return bool(_NOT_EXCLUDED_AFTER.match(after) or _NOT_EXCLUDED_BEFORE.search(before))


_PART_TAIL = re.compile(r"^\s+(?:in|within|of|at|involving)\s+(?:the\s+)?[^.;,]{0,40}?\b(?:lobes?|poles?|isthmus|"
                        r"segments?|regions?|zones?|hemispheres?|portions?|thirds?)\b")
# a resected organ's bed: a denial there is about recurrence, not about the organ's own lesions
_RESECTED_BED = re.compile(r"\b(?:\w+ectomy|surgical|resection|operative|postoperative)\s+bed\b")
# a denial limited to some sequences or phases ("on T2-weighted or DCE images", "on the arterial phase")
_ON_SOME_IMAGES = re.compile(r"^\s+(?:on|in)\s+(?:the\s+)?(?:[\w-]+\s+){0,4}?(?:images?|sequences?|phases?|series)\b")
_SOME_IMAGES_DENIAL = re.compile(r"\b(?:no|without)\b[^.;]*?\s(?:on|in)\s+(?:the\s+)?(?:[\w-]+\s+){0,4}?"
                                 r"(?:images?|sequences?|phases?|series)\b")
_DENIER = re.compile(r"\b(?:no|without|not|negative for|absence of|free of)\b")
# a denial placed on one side after its noun: "no focal lesion in the right parotid", "within the left kidney"
_IN_SIDE_TAIL = re.compile(r"^\s+(?:in|within|of|involving|at)\s+(?:the\s+)?(left|right)\b(?!\s+and\b)")




_TOPIC_STEMS = frozenset(stem(t) for t in TOPIC)


def _names_the_asked(mention: str, q_stems: set[str]) -> bool:
    """Whether a denied mention of a field's yes-pattern names what the question asks: a word of the
    question other than its organ, or a generic lesion noun ("no focal lesion" for "Is there a mass?"). A named entity of
    the pattern's list ("No Baker's cyst", "no angiomyolipoma") is one kind of the asked thing, and
    its denial leaves the others unsaid."""
    said = {t for t, _, _ in tokens(normalize_sentence(mention))}
    return not said or bool(said & (q_stems | _TOPIC_STEMS))


def _denial(text, a, b, s, no, partial, partial_sides, other_narrowing, asked_words=frozenset(), members=None) -> None:
    """File one denial as covering (``no``) or narrowed to a side / to new lesions (``partial``):
    the words from its negation to the end of its phrase, and an ``Organ:`` header, decide."""
    triggers = [m for m in _DENIER.finditer(text[:a]) if a - m.end() < 60]
    # no denying word before it ("Previously seen left upper lobe nodule has resolved"): the denial
    # is its predicate, and the whole noun phrase says which lesion is denied
    clause_start = max([0] + [m.end() for m in re.finditer(r"[;,]", text[:a])])
    start = triggers[-1].start() if triggers else clause_start
    tail = _SIDE_TAIL.match(text[b:])  # "no effusion on the left", never "... in the left insula"
    clause = text[start:b] + (tail.group(0) if tail else "")
    # "No nodules in the left lobe or isthmus": a denial placed in part of the organ leaves the rest unsaid
    part = _PART_TAIL.match(text[b:])
    if part and not re.search(r"\b(?:either|both|any|all|bilateral\w*|whole|entire)\b", part.group(0)):
        partial.append(s)
        partial_sides |= set(_SIDE_WORD.findall(part.group(0))) & {"left", "right"}
        if not set(_SIDE_WORD.findall(part.group(0))):
            other_narrowing.append(s)
        return
    placed = _IN_SIDE_TAIL.match(text[b:])
    if placed:
        # "No focal lesion in the right parotid": a denial placed on one side leaves the other unsaid
        partial.append(s)
        partial_sides.add(placed.group(1))
        return
    if _ON_SOME_IMAGES.match(text[b:]):
        partial.append(s)  # "no suspicious lesion on T2-weighted or DCE images": the other sequences are unsaid
        other_narrowing.append(s)
        return
    if _RESECTED_BED.search(text):
        partial.append(s)  # "the thyroidectomy bed is clear": the organ is gone, its lesions are not denied
        other_narrowing.append(s)
        return
    header = re.match(r"^((?:[a-z]+\s*){1,3}):", text)
    narrow = set(_NARROW.findall(clause)) | (set(_SIDE_WORD.findall(header.group(1))) if header else set())
    narrow -= {"bilateral", "both"}
    # a qualifier the question itself asks with ("Is there a focal solid ... lesion?": "no solid lesion")
    # narrows the denial to nothing less than what is asked
    narrow -= set(asked_words) - {"left", "right"}
    # the sentence's words before the denying word (a schema pattern may hold it: "no calculus")
    subject = text[:start] if triggers else text[:a]
    if not narrow and not _BOTH_SIDES.search(clause) and (triggers or _DENIER.match(text[a:b])):
        # a denying word, not a category said of one lesion ("left ovarian dermoid, O-RADS 2")
        narrow |= paired_subject_side(subject)
    if not narrow and members and member_subject(subject, set(asked_words), members):
        # "Both submandibular glands are normal with no calculus", the parotids named elsewhere: the
        # denial is the submandibular glands', not the salivary glands'
        narrow.add("part")
    if findmod.under_part_heading(text) and header.end() <= a:
        # "PERIPHERAL ZONE: No focal lesion." / "RIGHT LOBE: No nodule.": a denial under a part's
        # heading clears that part, not the organ
        narrow.add("part")
    if narrow:
        partial.append(s)
        partial_sides |= narrow & {"left", "right"}
        if narrow - {"left", "right"}:
            other_narrowing.append(s)
    else:
        no.append(s)


# a contrast phase, as a technique line and a question name it
_PHASE_ASKED = re.compile(r"\b(?:(?:late |early )?arterial|portal(?: venous)?|delayed|equilibrium|transitional|hepatobiliary)"
                          r"(?= phase)")
_TECHNIQUE = re.compile(r"\b(?:ct|mri?|mr|magnetic resonance|computed tomography)\b[^.]*\bphases?\b")


def _phase_name(words: str) -> str:
    return "portal" if words.startswith("portal") else words.split()[-1]


def phases_acquired(findings: str) -> set[str]:
    """The contrast phases the report's technique line names ("CT abdomen, late arterial and portal venous
    phases": {"arterial", "portal"}), or an empty set where the first sentence names no phase.

    Parameters
    ----------
    findings : str
        The report's findings section, its technique line first.

    Returns
    -------
    set of str
        Each phase by one word ("arterial", "portal", "delayed", "equilibrium", "transitional",
        "hepatobiliary"); empty where the report does not say which phases were acquired.
    """
    first = normalize_sentence(sentences(findings)[0]) if sentences(findings) else ""
    if not _TECHNIQUE.search(first):
        return set()
    words = re.sub(r"\bphases\b", "phase", first)
    # "arterial and portal venous phases": each named phase, the plural shared
    named = re.findall(r"\b((?:late |early )?arterial|portal(?: venous)?|delayed|equilibrium|transitional|hepatobiliary)\b", words)
    return {_phase_name(w) for w in named}


# no lesion is dominant, but the rule knows the few that could be: a value every one of them gives is the
# dominant lesion's whichever it is (two lesions of one vertebral body, the larger benign, the smaller suspicious)
_CONTENDED = ("no_dominant_lesion:equal_sizes", "no_dominant_lesion:suspicious_not_largest",
              "no_dominant_lesion:complication_not_largest")


def extract_with_rejects(schema: Schema, findings: str, impression: str
                         ) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """``({field: (value, evidence sentence)}, {field: why it is unset})`` from the schema's patterns.

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
    fields : dict of str to tuple of (str, str)
        ``{field name: (value, evidence sentence)}`` for the fields the report settles.
    unset : dict of str to str
        ``{field name: reason}`` for the others: ``not_in_report``, ``no_lesion_reported``,
        ``no_dominant_lesion:<why>``, ``size_not_stated``, ``side_not_stated``,
        ``several_values_for_dominant_lesion``, ``only_partial_denial``, ``conflicting_statements`` or
        ``organ_removed`` (the organ's whole removal: :func:`medscope.benchgen.findings.organ_removed`).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("RADS-style questions").
    """
    out: dict[str, tuple[str, str]] = {}
    unset: dict[str, str] = {}
    sents = sentences(findings) + sentences(impression)
    lesion_fields = [f for f in schema.fields if lesion_scoped(f)]
    dom, why_none = None, ""
    if lesion_fields:
        nouns = findmod.nouns_of([f.question for f in lesion_fields]
                                 + [p for f in schema.fields if not lesion_scoped(f) for p in f.yes_patterns])
        found = findmod.report_findings(findings, impression, nouns)
        dom, why_none = findmod.dominant(found, schema.organ)
        # the report's one lesion: a sentence naming none ("The underlying bones are normal.") can be
        # about no other, so a Yes / No feature of it is read from the whole report
        sole = dom is not None and findmod.sole_lesion(found) is dom
    removed = findmod.organ_removed(normalize_sentence(findings + " " + impression), schema.organ)
    if removed:
        dom, why_none = None, "organ_removed"
    presence = [f for f in schema.fields if f not in lesion_fields and asks_any_lesion(f)]
    if dom is not None and presence:
        # the schema's own question "Is there a focal lesion?" answered No: whatever else the report
        # describes ("innumerable small cysts up to 4 mm" of a diffuse disease, "a 2 mm hyperdensity
        # that may represent a tiny calculus") is not the lesion the schema asks about, so the
        # dominant lesion's fields would key a lesion the report denies
        value, _, _ = _binary_field(presence[0], sents, findings, impression, None)
        if value == "no":
            dom, why_none = None, "lesion_denied"
    ties = findmod.tied_for_dominant(found, schema.organ) if lesion_fields and dom is None and not removed and (
        why_none in _CONTENDED) else []
    acquired = phases_acquired(findings)
    for field in schema.fields:
        asked_phase = _PHASE_ASKED.search(normalize_sentence(field.question))
        if asked_phase and acquired and _phase_name(asked_phase.group(0)) not in acquired:
            # "CT ..., portal venous phase." asked "What is the arterial phase enhancement?": the study has
            # no arterial phase, so the enhancement it describes is not the asked phase's
            unset[field.name] = "phase_not_acquired"
            continue
        if field in lesion_fields:
            if dom is None and ties and not any(findmod.dominant_of_another_kind([f], findmod.nouns_of([field.question]),
                                                                               schema.organ) for f in ties):
                # (a contender of another kind, "the dominant fibroid" beside a mass concerning for sarcoma,
                # may be the dominant lesion: then no fibroid is, and no fibroid's value answers)
                value = tied_value(field, ties, equal=why_none == "no_dominant_lesion:equal_sizes")
                if value is not None:
                    out[field.name] = (value, ties[0].sentence)
                    continue
            if dom is None:
                unset[field.name] = why_none
                continue
            if findmod.dominant_of_another_kind([dom], findmod.nouns_of([field.question]), schema.organ):
                # "the dominant fibroid" of a report whose dominant lesion is a tumour, an adenomyoma or a
                # "lesion" left as polyp versus fibroid: no fibroid is the dominant lesion
                unset[field.name] = "dominant_lesion_of_another_kind"
                continue
            value, why = lesion_value(field, dom)
            evidence = dom.sentence
            if value is None and sole and field.type == "binary" and why == "not_stated_for_dominant_lesion":
                value, evidence, why = _binary_field(field, sents, findings, impression, None)
                why = why if why != "not_in_report" else "not_stated_for_dominant_lesion"
            if value is None:
                unset[field.name] = why
            else:
                out[field.name] = (value, evidence)
            continue
        if removed and findmod.schema_organ(schema.organ) in findmod.place_organs(normalize_sentence(field.question)) | {
                findmod._organ(normalize_sentence(field.question))}:
            unset[field.name] = "organ_removed"  # "Is there a lesion in the prostate?" after its removal
            continue
        if field.type == "binary":
            # in a paired organ the lesion's side is its organ's side, so "Left renal vein is patent"
            # covers the one vein a left renal tumour can reach; in a single organ (liver, brain,
            # thyroid) "left portal vein" leaves the main and right ones unsaid
            names_lesion = (dom is not None and findmod.schema_organ(schema.organ) in findmod.PAIRED_ORGANS
                            and bool(findmod.nouns_of([field.question])))
            value, evidence, why = _binary_field(field, sents, findings, impression,
                                                 dom.side if names_lesion else None)
            if value is None:
                unset[field.name] = why
            else:
                out[field.name] = (value, evidence)
            continue
        if (dom is not None and findmod.category(dom) is not None and field.values
                and all(findmod.category_word(v.value) for v in field.values)):
            # a RADS category field: the study's category is its dominant lesion's ("PI-RADS 3"
            # of a second, smaller lesion written first is not the overall category)
            v = field_value(field, dom.text)
            if v is not None:
                out[field.name] = (v, dom.sentence)
                continue
        for s in sents:
            v = field_value(field, s)
            if v is not None:
                out[field.name] = (v, s)
                break
        else:
            unset[field.name] = "not_in_report"
    return out, unset


def _binary_field(field: FieldSpec, sents: list[str], findings: str, impression: str,
                  lesion_side: str | None) -> tuple[str | None, str, str]:
    """(value, evidence, reason when unset) of a binary field read over the whole report
    (:func:`study_binary`, then the field's question through the report-grounded check)."""
    value, evidence, why = study_binary(field, sents, lesion_side)
    if value == "no" and one_region_denied(normalize_sentence(field.question), normalize_sentence(evidence),
                                           [normalize_sentence(x) for x in sents]):
        return None, "", "only_partial_denial"  # "No para-aortic lymphadenopathy." beside an enlarged iliac node
    if value == "no" and not _DENIER.search(normalize_sentence(evidence)) and _grounded_yes(field, findings, impression):
        # "The main portal vein is patent." beside "a bland thrombus lies in the anterior branch of the
        # right portal vein": a No read from a structure called patent or normal, not from a denial of the
        # asked thing, yields where the field's own question, checked against the report, is stated Yes
        return None, "", "conflicting_statements"
    if value is None and why in ("not_in_report", "only_partial_denial"):
        # the schema's patterns missed the wording ("renal angiomyolipomas", "lymph node,
        # enlarged"): the field's own question goes through the report-grounded check
        value, evidence = _grounded_binary(field, findings, impression)
        if value == "no" and _RESECTED_BED.search(normalize_sentence(evidence)):
            value, why = None, "only_partial_denial"  # a clear resection bed denies recurrence only
        if value == "no" and _SOME_IMAGES_DENIAL.search(normalize_sentence(evidence)):
            value, why = None, "only_partial_denial"  # denied on some sequences only
        if value == "no" and _under_other_organ(findmod._organ(normalize_sentence(field.question)),
                                                normalize_sentence(evidence)):
            value, why = None, "not_in_report"
        if value == "no" and findmod.under_part_heading(normalize_sentence(evidence)):
            value, why = None, "only_partial_denial"  # "PERIPHERAL ZONE: No focal lesion."
        if value == "no" and _one_of_a_pair(field.question, evidence):
            value, why = None, "only_partial_denial"
        if value == "no" and _member_denied(field.question, evidence, sents):
            value, why = None, "only_partial_denial"
    return value, evidence, why


def _under_other_organ(asked_organ: str | None, text: str) -> bool:
    """Whether a normalised sentence stands under another organ's heading than the one asked of:
    "BONES: No focal lesion." denies nothing of a question about the kidney or the prostate."""
    header = re.match(r"^((?:[a-z]+\s*){1,3}):", text)
    header_organ = findmod._organ(header.group(1)) if header else None
    return asked_organ is not None and header_organ is not None and header_organ != asked_organ


def _one_of_a_pair(question: str, evidence: str) -> bool:
    """Whether a denial names one side only ("in the left seminal vesicle, without invasion") where
    the field asks of both ("Is there seminal vesicle invasion?"): the other one is left unsaid."""
    q_sides = set(_SIDE_WORD.findall(normalize_sentence(question)))
    e_sides = set(_SIDE_WORD.findall(normalize_sentence(evidence)))
    return not q_sides and len(e_sides & {"left", "right"}) == 1 and not e_sides & {"both", "bilateral"}


def _member_denied(question: str, evidence: str, sents: list[str]) -> bool:
    """Whether a denial's sentence is about one side-named organ of a pair or one member of a family
    of structures the report names ("The left submandibular gland is ... otherwise normal, with no
    calculus"), which the field's question does not narrow to."""
    text = normalize_sentence(evidence)
    neg = list(_DENIER.finditer(text))
    before = text[:neg[-1].start()] if neg else text
    asked = set(re.findall(r"[a-z]+", normalize_sentence(question)))
    sides = paired_subject_side(before)
    if sides and not (sides & asked):
        return True
    return bool(member_subject(before, asked, named_members([normalize_sentence(s) for s in sents])))


def _grounded_yes(field: FieldSpec, findings: str, impression: str) -> bool:
    """Whether the report-grounded check keeps Yes, and not No, for the field's own question."""
    from medscope.benchgen.lesion_grounding import check_key

    return (check_key(field.question, "Yes", findings, impression, placed=True)[0]
            and not check_key(field.question, "No", findings, impression, placed=True)[0])


def _grounded_binary(field: FieldSpec, findings: str, impression: str) -> tuple[str | None, str]:
    """("yes" / "no", evidence) when the report-grounded check keeps exactly one of Yes and No for the
    field's own question, lesions placed by their own organ words only; else (None, "")."""
    from medscope.benchgen.lesion_grounding import check_key  # it reads findings, as this module does

    kept = {}
    for answer in ("Yes", "No"):
        ok, evidence, _ = check_key(field.question, answer, findings, impression, placed=True)
        if ok:
            kept[answer.lower()] = evidence
    if len(kept) != 1:
        return None, ""
    return next(iter(kept.items()))


def tied_value(field: FieldSpec, ties: list["findmod.Finding"], equal: bool = True) -> str | None:
    """The value of a dominant-lesion field where lesions tie for dominant: the one value every tied
    lesion gives (three well-defined lesions of 14 mm: "well-defined", "less than 20 mm" whichever is
    the dominant one), and for a side field whose values include "bilateral", "bilateral" where the
    tied lesions lie on both sides. None where they differ or one gives none.

    Parameters
    ----------
    field : FieldSpec
        A field about the dominant lesion.
    ties : list of Finding
        The lesions tied for dominant (:func:`medscope.benchgen.findings.tied_for_dominant`).
    equal : bool, optional
        True when they tie by size (each is as much the dominant lesion: "bilateral" answers a side
        field); False when one of them is dominant and the rule cannot tell which, so only a value
        every one of them gives holds.

    Returns
    -------
    str or None
        The value that holds whichever of them is the dominant one; None otherwise.
    """
    sides = _side_values(field)
    if sides is not None or _side_field(field):
        covered = set()
        for f in ties:
            covered |= {"left", "right"} if f.side == "bilateral" else {f.side}
        bilateral = [v.value for v in field.values if re.search(r"\bbilateral\b", v.value.lower())]
        if equal and covered == {"left", "right"} and len(bilateral) == 1:
            return bilateral[0]
        if len(covered) == 1 and None not in covered and sides is not None:
            return sides.get(next(iter(covered)))
        if len(covered) != 1 or None in covered:
            return None
    values = {lesion_value(field, f)[0] for f in ties}
    return values.pop() if len(values) == 1 and None not in values else None


def _side_field(field: FieldSpec) -> bool:
    """Whether a multi field's values are sides ("left", "right", "bilateral")."""
    return field.type == "multi" and all(_SIDE_WORD.search(v.value.lower()) for v in field.values)


def lesion_value(field: FieldSpec, finding: "findmod.Finding") -> tuple[str | None, str]:
    """The value of a lesion-level field read from one finding, or None with the reason.

    Parameters
    ----------
    field : FieldSpec
        A field about the dominant lesion.
    finding : Finding
        The dominant finding (:func:`medscope.benchgen.findings.dominant`).

    Returns
    -------
    value : str or None
        The bin of its current size (binned), the value naming its side (a field whose every value
        names one side), else the value its own words give (:func:`field_value` on its clause).
    reason : str
        Empty when set; else ``size_not_stated``, ``side_not_stated``, ``several_values_for_dominant_lesion``
        (a lesion spanning two places: :func:`several_values`), ``conflicting_values_for_dominant_lesion``
        (two values said of it, "unilocular cyst with a papillary projection") or ``not_stated_for_dominant_lesion``.
    """
    if field.type == "binned":
        if finding.size_mm is None:
            return None, "size_not_stated"
        return bin_value(field, finding.size_mm), ""
    sides = _side_values(field)
    if sides is not None:
        value = sides.get(finding.side or "")
        return (value, "") if value else (None, "side_not_stated")
    if field.type == "multi" and several_values(field, finding.text):
        return None, "several_values_for_dominant_lesion"
    if field.type == "multi" and not any(_SIDE_WORD.search(v.value.lower()) for v in field.values):
        # "unilocular cyst ... with papillary projections": two of the field's values said of one lesion.
        # The schema's value order is no documented precedence, and the first mentioned is no reason
        # to choose, so the field gets no question. (A side-naming field reads the finding's side:
        # its other side words are other structures', "normal central zone on the right".)
        said = set()
        for piece in re.split(r"(?<=[.;])\s+", finding.text):
            text = normalize_sentence(piece)
            found, spans = _multi_found(field, text)
            # a value named inside a longer one ("very hypoechoic"), a part's ("a hypoechoic halo")
            # and another finding's place ("atrophy of the body and tail") are not the lesion's values
            said |= {v for (_, _, v), (a, b) in zip(found, spans)
                     if not any(a2 <= a and b <= b2 and (a2, b2) != (a, b) for a2, b2 in spans)
                     and not _PART_AFTER.match(text[b:]) and not _OTHER_FINDING_OF.search(text[:a])}
        # a value whose name holds the others' words ("mixed cystic and solid") names them together
        said = {v for v in said if not any(w != v and set(v.lower().split()) < set(w.lower().split()) for w in said)}
        if len(said) > 1:
            return None, "conflicting_values_for_dominant_lesion"
    for piece in re.split(r"(?<=[.;])\s+", finding.text):  # each sentence's scope stays its own
        value = field_value(field, piece, lesion_text=True)
        if value is not None:
            return value, ""
    if field.type == "multi" and finding.side in ("left", "right"):
        # "a nodule in the right mid pole" is in the right lobe: the one value naming the lesion's
        # side (and no other side) answers a part-of-organ field whose own words the report did not use
        named = [v.value for v in field.values if set(_SIDE_WORD.findall(v.value.lower())) == {finding.side}]
        if len(named) == 1:
            return named[0], ""
    if field.type == "multi":
        # "left breast 10 o'clock" is the upper inner quadrant: a clock position read as the schema's
        # quadrant value, where the schema has one naming it and the report names none
        quadrant, why = findmod.clock_quadrant(finding.text, finding.side)
        named = [v.value for v in field.values if quadrant and quadrant in v.value.lower()]
        if len(named) == 1:
            return named[0], ""
        if why and any(re.search(r"\b(?:upper|lower)\s+(?:outer|inner)\b", v.value.lower()) for v in field.values):
            return None, why
    return None, "not_stated_for_dominant_lesion"


# "isoechoic to mildly hypoechoic" is a range: it settles neither end, whatever adverb the second carries
_JOINED = re.compile(r"^[\s,]*(?:(?:lobes?|poles?|segments?|regions?)\s*)?(?:and|or|and/or|/|-|to|through|&)\s*(?:the\s+)?"
                     r"(?:(?:mildly|slightly|minimally|moderately|markedly|very|predominantly|partly|focally)\s+)?$")
# (a number with a unit is a measurement: "in the pancreatic body, 6 mm ..." lists no second place)
_NUMERAL_LIST = re.compile(r"^\s*(?:,|and|or|/|-|to|through|&)\s*(?:\d+|[ivx]+)[ab]?\b(?!\s*(?:\.\d+\s*)?-?\s*(?:mm|cm|x)\b)")
# places that belong to another finding of the organ, not the lesion: "mild atrophy of the body and tail"
_OTHER_FINDING_OF = re.compile(r"\b(?:atroph\w*|dilat\w*|cut-?off|stranding|o?edema|inflammation|steatosis|"
                               r"fatty (?:infiltration|replacement))\s+(?:of|in|within|throughout)\s+(?:the\s+)?"
                               r"(?:[\w-]+\s+){0,2}$")


# a value word naming a part of the lesion, not the lesion: "a thin hypoechoic halo", "an echogenic rim"
_PART_AFTER = re.compile(r"\s+(?:halo|rim|wall|capsule|margins?|borders?|septum|septa|septations?|band|line|lines|"
                         r"ring|foci|focus|spaces?|shadowing|artefact|artifact)\b")


def several_values(field: FieldSpec, text: str) -> bool:
    """Whether a finding's words give a multi-value field two values at once: "involving the
    frontal and parietal lobes", "upper/interpolar", "segments 7 and 8" (a lesion that spans two
    places has no one value, and choosing the first would be a wrong key).

    Parameters
    ----------
    field : FieldSpec
        A multi-value field.
    text : str
        The finding's words (normalised).

    Returns
    -------
    bool
        True when two different values are asserted side by side, joined by "and" / "or" / "/" /
        "-" / "to" / "through", or a value is followed by a list of numerals.
    """
    text = normalize_sentence(text)
    # a value named whole ("mixed cystic and solid") holds the other values' words inside it
    named = [(m.start(), m.end()) for v in field.values
             for m in re.finditer(rf"\b{re.escape(normalize_sentence(v.value))}\b", text) if " " in v.value]
    hits = sorted((m.start(), m.end(), v.value) for v in field.values for m in _matches(v.patterns, text)
                  if not SECONDARY.search(text[: m.start()]) and not _OTHER_FINDING_OF.search(text[: m.start()])
                  and not _sequence_name(text, m.start(), m.end())
                  and not any(a <= m.start() and m.end() <= b and text[m.start():m.end()] != text[a:b]
                              for a, b in named))
    for (a1, e1, v1), (a2, _, v2) in zip(hits, hits[1:]):
        if v1 != v2 and a2 >= e1 and _JOINED.match(text[e1:a2]):
            return True
    for m in SHARED_HEAD.finditer(text):
        if _OTHER_FINDING_OF.search(text[:m.start()]):
            continue  # "with oedema of the frontal and parietal lobes": the oedema's places
        head = m.group(3).rstrip("s") if m.group(3) != "lobes" else "lobe"
        first = {v.value for v in field.values if _matches(v.patterns, f"{m.group(1)} {head}")}
        second = {v.value for v in field.values if _matches(v.patterns, f"{m.group(2)} {head}")}
        if first and second and first != second:
            return True
    return any(_NUMERAL_LIST.match(text[e:]) for _, e, _ in hits)


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
        ``{field name: (value, evidence sentence)}`` for the fields the report settles
        (:func:`extract_with_rejects`, whose reasons say why the others are unset).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("RADS-style questions").
    """
    return extract_with_rejects(schema, findings, impression)[0]


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
