"""Report-grounded check on the finding, not on words (benchmark-MCQ paper Methods,
"report-grounded check": keep a key only when it is "explicitly supported by the source text").

A question about a lesion ("Is there a pulmonary nodule?", "What is the size of the left upper
lobe nodule?", "On which side is the larger renal mass?") is answered from the report's findings
(:mod:`medscope.benchgen.findings`), each with its assertion status, side, location and current
size:

- the findings the question is about are those of its lesion noun, in its organ, on its side and
  at its location (lobe, pole, segment words); "largest" / "larger" / "dominant" / "index" take
  the dominant finding by the schema's rule;
- a Yes needs a finding *present* (a "possible", "historical" or "no new" one supports nothing);
  a No needs the lesion denied with nothing present ("no new nodules" beside a stable nodule is not
  a No, "Left kidney: no focal lesion" is not a No to the side-free question);
- a size is the current size's largest dimension (the short axis when asked; "previously" /
  "prior" sizes only when the question asks for the prior one), mm and cm compared as lengths;
- a side is the finding's side; "bilateral" answers a question about either side only as Yes / No.

Questions that name no lesion noun, and lesion questions the findings cannot settle, fall back to
the sentence rules of :mod:`medscope.benchgen.grounding` (returned as ``None`` here).
"""

from __future__ import annotations

import math
import re

from medscope.benchgen import findings as findmod
from medscope.benchgen import grounding
from medscope.benchgen.grounding import SIDES, answer_kind, measurements, normalize_sentence

_PRESENCE = re.compile(r"^(?:is|are)\s+there\s+(?:a|an|any)?\s*(?:new\s+)?(?:[\w-]+\s+){0,4}?"
                       r"(?:nodules?|mass(?:es)?|lesions?|observations?|cysts?|tumou?rs?|metastas[ie]s|"
                       r"angiomyolipomas?|ha?emangiomas?|adenomas?)\s*(?:(?:in|of|on)\s+(?:the\s+)?[\w\s-]+)?\??$")
_SUPERLATIVE = re.compile(r"\b(?:largest|larger|biggest|bigger|dominant|index)\b")
_QSIDE = re.compile(r"\b(left|right)\b")
_PLACE_PHRASE = re.compile(r"\b(?:(?:upper|middle|lower)\s+(?:lobe|pole)|interpolar|lingula\w*|caudate|"
                           r"segment\s+\w+|(?:frontal|parietal|temporal|occipital)\s+lobe|"
                           r"rul|rml|rll|lul|lll)\b")
_PRIOR_Q = grounding.ASKS_PRIOR


def _question_nouns(q: str) -> set[str]:
    found = {k for k, pat in findmod._NOUN_OF if pat.search(q)}
    return found | findmod.umbrella_nouns(q) if found & findmod.UMBRELLA else found


def _about(q: str, found: list[findmod.Finding], nouns: set[str], placed: bool = False) -> list[findmod.Finding]:
    """The findings a question is about: its noun, organ, side, location and describing words
    ("the ground-glass nodule"); a plural noun asks about groups, a singular one about lesions.
    ``placed``: a question naming an organ is about findings the report puts in that organ (by an
    organ word, or a place word only that organ has among those it could be)."""
    organ = findmod._organ(q)
    plural = _plural_question(q)
    side = _QSIDE.search(q)
    places = [p.group(0) for p in _PLACE_PHRASE.finditer(q)]
    out = []
    for f in found:
        noun = next((k for k, pat in findmod._NOUN_OF if pat.fullmatch(f.entity)), None)
        if noun not in nouns:
            continue
        if organ and organ != "lymph node" and f.organ not in (None, organ):
            continue
        if organ and organ != "lymph node" and f.organ is None and f.places_in and organ not in f.places_in:
            continue  # "segment 7" is no place in a kidney
        if placed and organ and organ != "lymph node" and f.organ is None and organ not in f.places_in:
            continue
        if side and f.side not in (side.group(1), "bilateral") and f.side is not None:
            continue
        if side and f.side is None:
            continue
        if places and not all(p in f.text for p in places):
            continue
        # "the occipital lesion", "the isthmic nodule": each place word of the question in the finding's words
        if not _place_stems(q) <= _place_stems(f.text):
            continue
        if (f.largest_of_group if plural else f.summarised):
            continue
        out.append(f)
    qualifiers = _qualifiers(q)
    if qualifiers and out:
        # asking whether such a lesion exists, a describing word counts only where the finding asserts
        # it: "no solid component" is no solid nodule (a feature question keeps the lesion to deny it)
        presence = bool(_PRESENCE.match(q.strip()))
        described = [f for f in out if qualifiers <= {t for t, a, b in grounding.tokens(f.text)
                                                      if not presence or grounding._mention_status(f.text, a, b) != "negated"}]
        return described
    return out


def _plural_question(q: str) -> bool:
    """Whether the question's lesion noun is plural ("the nodules", not "the nodule" or "metastasis")."""
    return any(m.group(0).endswith("s") and not m.group(0).endswith("ss")
               for _, pat in findmod._NOUN_OF for m in pat.finditer(q)) and "metastasis" not in q


def _place_stems(text: str) -> set[str]:
    """Stems of the place words of ``text`` ("occipital", "isthmic" -> "isthmus", "lower pole")."""
    return {grounding.stem(w) for pat, _ in findmod.PLACE_ORGANS for m in re.finditer(pat, text)
            for w in m.group(0).split()}


def _qualifiers(q: str) -> set[str]:
    """Stems of the words that describe the asked lesion ("ground-glass", "solid", "enhancing"),
    i.e. the question's subject minus lesion nouns, sides, places, organs and change words."""
    # "the TI-RADS category of the right lobe nodule": what is asked of the lesion is no word describing it
    asked_of = re.search(r"^.*?\bof\s+(?:the|this|that|each|its)\s+(?=(?:[\w-]+\s+){0,4}?(?:%s)\b)"
                         % "|".join(findmod.LESION_NOUNS.values()), q)
    subject = grounding.subject_stems(q[asked_of.end():] if asked_of else q)
    # "At what level is the left lesion?": the attribute asked for is no word describing the lesion
    asked = re.match(r"^\W*(?:(?:at|in|on|to)\s+)?(?:what|which)\s+([\w-]+)\s+(?:is|are|was|were|does|do)\b", q)
    if asked:
        subject -= {grounding.stem(asked.group(1))}
    drop = {grounding.stem(w) for w in (*findmod.LESION_NOUNS, "nodules", "masses", "lesions", "cysts", "left",
                                        "right", "upper", "middle", "lower", "pole", "lobe", "segment", "current",
                                        "currently", "now", "prior", "previous", "new", "renal", "kidney",
                                        "pulmonary", "lung", "hepatic", "liver", "adrenal", "brain", "interpolar",
                                        "region", "axis", "short", "long", "largest", "larger", "dominant",
                                        "examination", "exam", "study", "scan", "ct", "mri", "image", "images",
                                        "comparison", "measure", "measured", "today", "currently", "focal",
                                        # laterality is read from the finding's side, never from its words
                                        "unilateral", "bilateral", "both", "either", "ipsilateral",
                                        "contralateral", "sided", "side",
                                        # an organ's own structure word: "salivary gland" is the organ
                                        "gland", "glands")}
    organ_words = set()
    for pat in [*findmod.ORGAN_WORDS.values(), *(p for p, _ in findmod.PLACE_ORGANS)]:
        organ_words |= {grounding.stem(w) for m in re.finditer(pat, q) for w in m.group(0).split()}
    return {w for w in subject - drop - organ_words if not w[0].isdigit()}


# "Is there haemorrhage within the lesion?": something asked inside the lesion, not the lesion's presence
_INSIDE_LESION = re.compile(r"^(?:is|are)\s+there\s+(?:a|an|any)?\s*(.+?)\s+(?:within|in|inside)\s+(?:the|this)\s+"
                            r"(?:[\w-]+\s+)?(?:nodule|mass|lesion|tumou?r|cyst)\s*\??$")


def _offered_as_possible(asked: str, findings: str, impression: str) -> bool:
    """Whether a mention of the asked words' last stem is hedged as a possibility (not a favoured
    diagnosis) in some sentence of the report."""
    words = [t for t, _, _ in grounding.tokens(normalize_sentence(asked))]
    if not words:
        return False
    for s in grounding.sentences(findings) + grounding.sentences(impression):
        s = normalize_sentence(s)
        for t, a, b in grounding.tokens(s):
            if t == words[-1] and grounding._mention_status(s, a, b) == "possible":
                return True
    return False


# a question that asks of the operated site itself ("the nodule in the prostatectomy bed"), not of the organ
_ASKS_OPERATED_SITE = re.compile(r"\b(?:bed|\w+ectomy|flap|reconstruct\w*|stump|remnant)\b")


def check_lesion_key(question: str, answer: str, kind: str, findings: str, impression: str, placed: bool = False
                     ) -> tuple[bool, str, str] | None:
    """(kept, supporting sentence, reason) of a key about a lesion, from the report's findings;
    None when the question is not about a lesion or its findings cannot settle it.

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The key (the correct option's text).
    kind : str
        ``yes_no``, ``quantity`` or ``side`` (:func:`medscope.benchgen.grounding.answer_kind`); other
        kinds return None.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    tuple of (bool, str, str) or None
        ``(kept, sentence, reason)`` as :func:`medscope.benchgen.grounding.check_key` gives it; reasons
        here: ``no_dominant_lesion:<why>``, ``uncertain_in_report``, ``only_no_new``,
        ``only_side_specific_denial``, ``contradicted_by_report``, ``quantity_not_stated``,
        ``ambiguous_measurement``, ``side_not_stated``, ``ambiguous_side``. None: the sentence rules decide.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("report-grounded check").
    """
    q = normalize_sentence(question)
    nouns = _question_nouns(q)
    if not nouns or kind not in ("yes_no", "quantity", "side", "term"):
        return None
    if kind == "quantity" and grounding._ASKS_DISTANCE.search(q):
        return None  # "the distance from the deep margin of the mass to the foramen" is no size of the mass
    found = findmod.report_findings(findings, impression)
    superlative = bool(_SUPERLATIVE.search(q))
    inside = _INSIDE_LESION.match(q.strip())
    if kind == "yes_no" and inside and not _question_nouns(inside.group(1)) and _offered_as_possible(
            inside.group(1), findings, impression):
        # "Is there haemorrhage within the lesion?" beside "foci within the mass may represent hemorrhage or
        # calcification": the lesion is there, but what it holds is offered only as a possibility
        return False, "", "uncertain_in_report"
    if kind == "yes_no" and _PRESENCE.match(q.strip()):
        yes = normalize_sentence(answer).startswith("yes")
        said = _presence(q, yes, found, nouns, placed)
        if said is None:
            said = _normal_on_side(q, yes, findings, impression)
        return said
    if kind in ("yes_no", "term") and (grounding.question_polarity(q) != "presence"
                                       or re.search(r"\b(?:diagnos\w*|most likely|represent\w*|favou?red)\b", q)):
        return None  # change and diagnosis questions read the whole report
    if superlative:
        organ = findmod._organ(q)
        pool = [f for f in found if next((k for k, p in findmod._NOUN_OF if p.fullmatch(f.entity)), None) in nouns]
        others = re.search(r"\b(remaining|other|additional)\s+(?:[\w-]+\s+){0,2}?(?:%s)\b"
                           % "|".join(findmod.LESION_NOUNS.values()), q)
        if others:  # "the largest of the remaining nodules" is the largest of the group the report calls so
            pool = [f for f in pool if re.search(rf"\b{others.group(1)}\b", f.text)]
        side = _QSIDE.search(q)
        if side:  # "the largest right lobe nodule" is the largest of those on that side
            pool = [f for f in pool if f.side in (side.group(1), None) or f.status != "present"]
            pool = [f for f in pool if f.side == side.group(1) or f.status != "present"] or pool
        if (kind == "quantity" and organ and not _ASKS_OPERATED_SITE.search(q)
                and findmod.organ_removed(normalize_sentence(findings + " " + impression), organ)):
            # "the dominant breast lesion" after bilateral mastectomies: a mass in the reconstruction flap is
            # no lesion of the organ, as the schema's own fields read it (``organ_removed``)
            return False, "", "organ_removed"
        dom, why = findmod.dominant(pool, organ, by_category=not re.search(r"\b(?:larg|bigg)", q))
        if dom is not None and re.search(r"\bdominant\b", q) and findmod.dominant_of_another_kind(found, nouns, organ):
            # "the dominant fibroid" where the organ's dominant lesion is an adenomyoma: the schema's dominant
            # lesion is no fibroid, so a smaller fibroid's position is not the one asked of
            return False, "", "dominant_lesion_of_another_kind"
        if dom is None and why == "no_lesion_reported":
            said = normalize_sentence(answer).strip(" .")
            if said and any(said in s and findmod.NOT_A_LESION.search(s)
                            for s in map(normalize_sentence, grounding.sentences(findings + " " + impression))):
                # "the asymmetry disperses ..., consistent with summation artifact": the place the
                # report gives is a finding's it explains away, so the dominant lesion has none
                return False, "", "finding_explained_away"
        if dom is None and why == "no_lesion_reported" and not any(f.status == "present" for f in found) and any(
                f.status in ("negated", "prior_comparison") and f.side in (None, "bilateral")
                and re.search(rf"\b{re.escape(f.entity.rstrip('s'))}", q) for f in pool):
            # "Neither testis contains a focal lesion" and no lesion described: the report denies the
            # asked noun itself outright, so a feature it gives elsewhere (an inflamed epididymis's
            # flow) is no dominant lesion's ("No mass" denies no calcification group); "no other focal
            # lesion" after a discitis, where no lesion is described, leaves the discitis's level no lesion's
            return False, "", why
        if dom is None and why == "no_lesion_reported" and kind == "quantity" and grounding.size_range(answer):
            # a size step of "the dominant breast lesion" where the report places no lesion in the organ: the
            # only lengths are another organ's (an axillary node, a uterine fibroid), never the asked lesion's
            return False, "", why
        if dom is None:
            return (False, "", why) if why != "no_lesion_reported" else None
        if dom.bound_only and kind == "term":
            # "Innumerable lesions ... up to 7 mm": the largest is known by the group's bound only, so it has
            # no place of its own ("two of the lesions, in the right occipital lobe" are two of many)
            return False, "", "no_dominant_lesion:group"
        about = [dom]
    else:
        about = [f for f in _about(q, found, nouns) if f.status == "present"]
        if not _plural_question(q) and any(not f.plural for f in about):
            # "In which zone is the lesion?" beside "Background BPH nodules elsewhere": a group is no
            # "the lesion" where a single one is described
            about = [f for f in about if not f.plural]
        if re.search(r"\b(?:smaller|smallest)\b", q) and len(about) > 1:
            # "the smaller lesion": the one of least current size, when every one is sized and it is alone
            sized = sorted((f.size_mm, i) for i, f in enumerate(about) if f.size_mm is not None and not f.summarised)
            if len(sized) != len([f for f in about if not f.summarised]) or len(sized) < 2 or sized[0][0] == sized[1][0]:
                return False, "", "no_smallest_lesion"
            about = [about[sized[0][1]]]
    if not about:
        return None
    if kind == "quantity":
        return _quantity(q, answer, about)
    if kind in ("yes_no", "term"):
        return _described(q, answer, kind, about, found, superlative)
    return _side_key(answer, about, superlative)


def _described(q: str, answer: str, kind: str, about, found, superlative: bool) -> tuple[bool, str, str] | None:
    """A feature or place of the asked lesion ("Does the largest lesion show washout?", "Which
    lobe contains the largest nodule?") read from that finding's own words, so another lesion's
    washout or lobe never answers; None (the sentence rules decide) when several findings are
    asked about and the question names no one of them."""
    if findmod.sole_lesion(found) and (not superlative or kind == "yes_no"):
        # one lesion: its sentences are the report's ("The underlying bones are normal" is about the
        # bone under the dominant mass when the report describes no other)
        return None
    results = []
    for f in about:
        pieces = [p for p in re.split(r"(?<=[.;])\s+", f.text) if p.strip()]
        if kind == "yes_no":
            asked = _SUPERLATIVE.sub(" ", q)
            results.append(grounding.check_yes_no(asked, normalize_sentence(answer).startswith("yes"), pieces))
        else:
            results.append(grounding.check_term("which?", answer, pieces))
    kept = [r for r in results if r[0]]
    if kept and len(kept) == len(results):
        sentence = about[results.index(kept[0])].sentence
        return True, sentence, ""
    if kept:
        return False, "", "ambiguous_lesion"
    if superlative or len(about) == 1:
        quadrant, why = findmod.clock_quadrant(about[0].text, about[0].side)
        said = normalize_sentence(answer)
        if kind == "term" and re.search(r"\b(?:upper|lower)\s+(?:outer|inner)\b", said):
            # the asked lesion placed only by a clock position: the quadrant that position falls in
            if quadrant and quadrant in said:
                return True, about[0].sentence, ""
            if quadrant or why:
                return False, "", why or "contradicted_by_report"
        # the asked lesion's own words do not state it; another lesion's may, which is no answer
        reason = results[0][2]
        return False, "", ("not_stated_for_asked_lesion" if reason in ("answer_not_in_report", "subject_not_in_report",
                                                                         "subject_only_partly_in_report") else reason)
    return None


def _presence(q: str, yes: bool, found, nouns, placed: bool = False) -> tuple[bool, str, str] | None:
    new_only = bool(re.search(r"\bnew\b", q))
    about = _about(q, found, nouns, placed)
    side = _QSIDE.search(q)
    if not about:
        # a side-specific question with a side-free denial: "No renal mass." answers "Is there a left renal mass?"
        if side:
            free = [f for f in _about(_QSIDE.sub(" ", q), found, nouns) if f.side is None and f.status == "negated"]
            if free:
                return (not yes, free[0].sentence if not yes else "", "" if not yes else "contradicted_by_report")
        return None
    present = [f for f in about if f.status == "present" and (not new_only or re.search(r"\bnew\b", f.text))]
    denied = [f for f in about if f.status == "negated" or (new_only and f.status == "prior_comparison")]
    # "without an obstructing lesion", "no solid mass": a denial of one kind leaves the others unsaid
    kinds = [f for f in denied if _denied_kind(f) - set(re.findall(r"[a-z]+", q))]
    denied = [f for f in denied if f not in kinds]
    if kinds and not denied and not present:
        return False, "", "only_partial_denial" if not yes else "subject_not_in_report"
    asked_places = _place_stems(q)
    if side is None:
        # "No nodules in the left lobe or isthmus" denies the isthmus whatever its side word says
        sided = [f for f in denied if f.side in ("left", "right")
                 and not (asked_places and asked_places <= _place_stems(f.text))]
        if sided and {f.side for f in sided} != {"left", "right"}:
            denied = [f for f in denied if f not in sided]  # "Left kidney: no focal lesion" is not a No
            if not denied and not present:
                return False, "", "only_side_specific_denial" if not yes else "subject_not_in_report"
    # "PERIPHERAL ZONE: No focal lesion.": a denial under a part's heading clears that part only
    parted = [f for f in denied if findmod.under_part_heading(normalize_sentence(f.sentence))
              and not (asked_places and asked_places <= _place_stems(f.text))
              and normalize_sentence(f.sentence).split(":")[0].strip() not in q]  # unless the question names that part
    if parted:
        denied = [f for f in denied if f not in parted]
        if not denied and not present:
            return False, "", "only_partial_denial" if not yes else "subject_not_in_report"
    if present:
        return (True, present[0].sentence, "") if yes else (False, "", "contradicted_by_report")
    if denied:
        return (True, denied[0].sentence, "") if not yes else (False, "", "contradicted_by_report")
    statuses = {f.status for f in about}
    if "prior_comparison" in statuses:
        return False, "", "only_no_new"
    if statuses & {"possible"}:
        return False, "", "uncertain_in_report"
    return False, "", "only_historical" if "historical" in statuses else "subject_not_in_report"


_DENIED_KIND = grounding.DENIED_KIND


def _denied_kind(f: findmod.Finding) -> set[str]:
    """The narrowing words between a denied finding's negation and its noun ("no discrete cystic
    lesion" -> {"cystic"})."""
    at = f.text.find(f.entity)
    neg = list(re.finditer(r"\b(?:no|without|not|absence of|free of)\b", f.text[:max(at, 0)]))
    if at < 0 or not neg:
        return set()
    return set(_DENIED_KIND.findall(f.text[neg[-1].end():at]))


def _normal_on_side(q: str, yes: bool, findings: str, impression: str) -> tuple[bool, str, str] | None:
    """"Left adrenal gland normal." answers No to "Is there a left adrenal nodule?": the asked
    organ on the asked side called normal, in a sentence that names no lesion; None otherwise."""
    side, organ = _QSIDE.search(q), findmod._organ(q)
    if not side or organ in (None, "lymph node"):
        return None
    for original in grounding.sentences(findings) + grounding.sentences(impression):
        s = normalize_sentence(original)
        if (re.search(findmod.ORGAN_WORDS[organ], s) and re.search(rf"\b{side.group(1)}\b", s)
                and not re.search(r"\b(?:left|right)\b", s.replace(side.group(1), " "))
                and grounding.NORMAL.search(s) and not findmod._mentions(s, set(findmod.LESION_NOUNS))
                and not re.search(r"\b(?:not|no|but|except|apart from|aside from)\b", s)):
            return (False, "", "contradicted_by_report") if yes else (True, original, "")
    return None


def _quantity(q: str, answer: str, about) -> tuple[bool, str, str] | None:
    step = grounding.size_range(answer)
    got = measurements(normalize_sentence(answer))
    if step is None and (len(got) != 1 or got[0][0] != "length" or len(got[0][1]) != 1):
        return None
    want = step[0] if step is not None else got[0][1][0]
    short = bool(re.search(r"\bshort[- ]axis\b|\bsmallest dimension\b", q))
    prior = bool(_PRIOR_Q.search(q))
    values = []
    for f in about:
        if prior:
            v = f.prior_size_mm
        else:
            v = (min(f.dims_mm) if short else f.size_mm) if f.dims_mm else None
        if v is not None:
            values.append((v, f))
    if not values:
        return None
    if len({round(v, 3) for v, _ in values}) > 1:
        return False, "", "ambiguous_measurement"
    v, f = values[0]
    if grounding.in_size_range(v, step) if step is not None else math.isclose(v, want, rel_tol=1e-6, abs_tol=1e-6):
        return True, f.sentence, ""
    return False, "", "quantity_not_stated"


def _side_key(answer: str, about, superlative: bool) -> tuple[bool, str, str] | None:
    want = SIDES.get(normalize_sentence(answer).strip(" ."))
    if want is None:
        return None
    sides = {f.side for f in about if f.side}
    if not sides:
        return None
    if want == "bilateral" and not superlative and ("bilateral" in sides or {"left", "right"} <= sides):
        # "Are the nodules unilateral or bilateral?": lesions on both sides make the set bilateral
        return True, next(f.sentence for f in about if f.side in ("bilateral", "left", "right")), ""
    if len(sides) > 1:
        return False, "", "ambiguous_side"
    side = sides.pop()
    if side == want:
        return True, next(f.sentence for f in about if f.side == side), ""
    return False, "", "contradicted_by_report"


def check_key(question: str, answer: str, findings: str, impression: str, placed: bool = False
              ) -> tuple[bool, str, str]:
    """(kept, supporting sentence, reject reason) of one key against its report: a lesion question
    from the report's findings (:func:`check_lesion_key`), anything else -- and a lesion question the
    findings cannot settle -- by the sentence rules (:func:`medscope.benchgen.grounding.check_key`).

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The key (the correct option's text).
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.
    placed : bool, optional
        A presence question naming an organ counts only findings the report places in that organ
        (a schema field read this way, where an unplaced lesion of another organ must not answer).

    Returns
    -------
    kept : bool
        Whether the report states the key.
    sentence : str
        The supporting sentence as the report writes it; empty when not kept.
    reason : str
        Empty when kept; else the deciding rule's reject reason.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("report-grounded check").
    """
    named = _PARENTHESIS.search(question)
    if named:
        # "Is there a salivary calculus (sialolithiasis)?": the parenthesis names the asked thing again,
        # so the question is asked in either wording; one that contradicts the key rejects it
        plain = _PARENTHESIS.sub("", question)
        kept = _check_one(plain, answer, findings, impression, placed)
        if kept[0] or kept[2] == "contradicted_by_report":
            return kept
        opener = re.match(r"^\W*(?:is|are)\s+there\s+", plain, flags=re.IGNORECASE)
        if opener and not re.search(r"\b(?:or|and|of|in)\b", named.group(1)):
            other = _check_one(f"{opener.group(0)}{named.group(1)}?", answer, findings, impression, placed)
            if other[0]:
                return other
        return kept
    return _check_one(question, answer, findings, impression, placed)


# a parenthesis naming the asked thing again: "(sialolithiasis)", "(hydronephrosis)"
_PARENTHESIS = re.compile(r"\s*\(([^()]{3,40})\)(?=\s*\?\s*$)")


def _check_one(question: str, answer: str, findings: str, impression: str, placed: bool) -> tuple[bool, str, str]:
    on_finding = check_lesion_key(question, answer, answer_kind(question, answer), findings, impression, placed)
    if on_finding is not None:
        return on_finding
    return grounding.check_key(question, answer, findings, impression)
