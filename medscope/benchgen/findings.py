"""Lesion-level reading of a report: each lesion the report describes becomes one finding
(benchmark-MCQ paper Methods, "RADS-style questions": fields populated "deterministically from
report text"; the schema asks about *the dominant* lesion).

A report becomes a list of :class:`Finding`, one per lesion: its entity noun ("nodule", "mass",
"cyst"), the organ it is in, its side, its current size (the largest dimension of "a x b x c",
mm and cm read as mm; a size after "previously" / "prior" / "from", dated, or in a clause set in
an earlier study ("Comparison: ..., when it measured 7 mm") is the prior size, kept apart), the text that describes it (its clause: the words between the previous lesion's clause
and the next one's, so "4.8 cm mass in the right lower pole and 1.9 cm mass in the left upper
pole" are two findings with their own side and pole) and its assertion status, read by the reply
reader's clinical-text layer (:func:`medscope.answers.context.status` through
:func:`medscope.benchgen.grounding._mention_status`, with its negation, hedge and double-negation
rules):

``present``
    asserted now ("Stable 1.8 cm mass", "again seen");
``negated``
    denied or gone ("No renal mass", "has resolved");
``possible``
    hedged or in a differential ("possibly a small nodule versus atelectasis", "cannot be
    excluded", "likely cysts");
``historical``
    a past finding ("history of", "status post"), or one a clinical or comparison line names;
``prior_comparison``
    "no new X": it denies only *new* lesions, never that a known one is there.

A later mention with a definite article or a copula ("The nodule ...", "Dominant lesion is a
2.1 cm mass") or the impression's restatement of a finding (same size, or same side when that
leaves one candidate) joins the finding it names instead of adding one. "the largest (in the
right upper pole) measuring 4.1 cm" after a plural mention is its own finding, marked as the
one the report makes dominant.

:func:`dominant` applies the schema's rule: the finding the report calls dominant / largest /
index, else the largest present finding by current size; with two lesions of the same size, or
a lesion whose size is not given beside a sized one (unless it is called small / tiny /
subcentimetre), no lesion is dominant and every question about "the dominant lesion" is rejected
with that reason.
"""

from __future__ import annotations

import dataclasses
import re

from medscope.benchgen.grounding import PAIRED_ORGANS, _MEASURE, prior_length, OPERATED_FOR, ORGAN_WORDS, _mention_status, is_recommendation, measurements, normalize_sentence, sentences

# addition: the lesion nouns of a schema. The paper does not list them; these are the nouns
# radiology reports use for a focal lesion. "lesion" / "observation" are umbrella terms: a
# schema that asks about "the lesion" counts every kind below.
LESION_NOUNS = {
    "nodule": r"nodules?", "mass": r"mass(?:es)?", "lesion": r"lesions?", "observation": r"observations?",
    "cyst": r"cysts?", "tumor": r"tumou?rs?", "metastasis": r"metastas[ie]s", "angiomyolipoma": r"angiomyolipomas?",
    "hemangioma": r"ha?emangiomas?", "adenoma": r"adenomas?", "neoplasm": r"neoplasms?",
    "hypodensity": r"hypodensit(?:y|ies)", "hyperdensity": r"hyperdensit(?:y|ies)",
    # named tumours and focal collections other organ systems report as "the lesion"
    "glioma": r"(?:glioblastoma|glioma)s?", "meningioma": r"meningiomas?", "schwannoma": r"schwannomas?",
    "lymphoma": r"lymphomas?", "abscess": r"abscess(?:es)?", "haematoma": r"ha?ematomas?",
    # named soft-tissue tumours (lipoma, liposarcoma, elastofibroma, neurofibroma, myxoma)
    "lipoma": r"lipomas?", "sarcoma": r"[a-z]*sarcomas?", "fibroma": r"[a-z]*fibromas?", "myxoma": r"myxomas?",
    # the uterus's focal lesions (a fibroid of any FIGO position, an adenomyoma, a polyp)
    "fibroid": r"(?:fibroids?|(?:leio)?myomas?)", "adenomyoma": r"adenomyomas?", "polyp": r"polyps?",
}
UMBRELLA = {"lesion", "observation"}
# nouns of one organ's own lesions: an umbrella ("the dominant lesion") takes them in only where the texts
# name that organ, so a fibroid beside an adnexal mass stays the uterus's and never the adnexal lesion
ORGAN_NOUNS = {"fibroid": "uterus", "adenomyoma": "uterus", "polyp": "uterus"}


def umbrella_nouns(texts: str) -> set[str]:
    """Every lesion noun an umbrella term ("lesion") stands for in ``texts``: all of :data:`LESION_NOUNS`
    but the nouns of an organ (:data:`ORGAN_NOUNS`) that ``texts`` do not name.

    Parameters
    ----------
    texts : str
        Normalised question text(s) or a schema's organ and questions.

    Returns
    -------
    set of str
        Keys of :data:`LESION_NOUNS`.
    """
    named = {organ for organ in set(ORGAN_NOUNS.values()) if re.search(ORGAN_WORDS[organ], texts)}
    return {k for k in LESION_NOUNS if k not in ORGAN_NOUNS or ORGAN_NOUNS[k] in named}
_NOUN_OF = [(k, re.compile(rf"\b{v}\b")) for k, v in LESION_NOUNS.items()]
# addition: place words (lobes, poles, segments) and the organs each can be in. "lower pole" is a
# kidney's, a thyroid lobe's, the spleen's or a testis's; "right lobe" a liver's or a thyroid's:
# a place word never puts a lesion in one organ when several have that place, so a thyroid
# nodule "in the lower pole" stays a candidate of a thyroid schema.
PLACE_ORGANS = (
    (r"\binterpolar\b", {"kidney"}),
    (r"\b(?:upper|lower|mid)[- ]?poles?\b", {"kidney", "thyroid", "spleen", "testis"}),
    (r"\b(?:upper|middle|lower) lobes?\b|\blingula\w*|\b(?:rul|rml|rll|lul|lll)\b", {"lung"}),
    (r"\b(?:right|left) lobes?\b", {"liver", "thyroid"}),
    (r"\bisthm\w*", {"thyroid"}),
    (r"\b(?:caudate|segments? (?:[1-8]|i{1,3}|iv|v|vi{1,3})[ab]?)\b", {"liver"}),
    (r"\b(?:frontal|parietal|temporal|occipital|insula\w*|ventric\w*|periventric\w*|basal ganglia|centrum "
     r"semiovale|corona radiata|pons|pontine|medulla\w*|midbrain)\b", {"brain"}),
    (r"\b(?:peripheral|transition(?:al)?|central) zones?\b", {"prostate"}),
)
SCHEMA_ORGAN = {"lung": "lung", "liver": "liver", "kidney": "kidney", "brain": "brain"}
_SIDE = re.compile(r"\b(left|right|bilateral|bilaterally|both)\b")
_DOMINANT = re.compile(r"\b(?:dominant|largest|biggest|larger|bigger|index|target)\b")
# "several fibroids, the largest a 3.0 cm ... fibroid": the largest of the group just named, not of every lesion
_LARGEST_OF_NAMED_GROUP = re.compile(r"\w+s\s*,\s*(?:the\s+)?(?:largest|biggest)\b[^.;]*$")
# the one prior-size cue grounding.prior_length does not read: "versus 1.8 cm", "vs 12 mm"
_VERSUS_BEFORE = re.compile(r"\b(?:versus|vs)\W+(?:\w+\W+){0,2}$")
# a RADS category the report assigns a lesion ("PI-RADS 4", "TI-RADS 5", "LR-5", "BI-RADS category 4a");
# one given as a prior value ("upgraded from PI-RADS 3") is not the lesion's category now
_CATEGORY = re.compile(r"(?<!from )(?<!previously )(?<!prior )(?<!was )\b(?:[a-z]{1,4}-?rads|lr)(?:\s+v?\d\.\d)?"
                       r"(?:\s+(?:category|score|assessment))?\s*[:-]?\s*(\d)([abc])?\b")
_SMALL = re.compile(r"\b(?:small|tiny|punctate|subcentimet\w*|sub-centimet\w*|too small to characteri[sz]e|micro\w*)\b")
_DEFINITE = re.compile(r"\b(?:the|this|that|these|those|said)\s+(?:[\w-]+\s+){0,3}$")
# "the dominant nodule, in the right mid pole, is a 2.2 cm ... nodule": a place set off by commas
# between the subject and its copula keeps the two nouns one lesion
_COPULA = re.compile(r"^\W*(?:,[^,;.]{0,60},\s*)?(?:is|are|was|represents?|consists? of|appears as)\s+(?:a|an|the)?\b")
# the organ's (or its part's) own measurement: "The left lobe measures 4.6 x 1.5 x 1.6 cm and contains a
# 1.2 cm nodule" -- 4.6 cm is the lobe's size, never the nodule's
# (the part is the clause's subject: "a nodule in the lower pole measuring 24 mm" is the nodule's size)
_PART_MEASURES = re.compile(r"(?:^|[.;:]\s*|\band\s+)(?:the\s+)?(?:(?:right|left)\s+)?(?:thyroid\s+)?(?:lobes?|gland|isthmus|"
                            r"organ|kidneys?|liver|spleen|thyroid|pancreas|uterus|prostate|ovary|testis|bladder|lungs?)\s+"
                            r"(?:measures?|measuring|measured)\s+(?:approximately\s+|about\s+)?$")
# a lesion labelled by its number: "Nodule 1, right lower pole: 2.8 cm ... nodule" is one lesion
_LABEL = re.compile(r"^\s*(?:#\s*|no\.?\s*)?\d{1,2}[a-z]?\s*(?:[,:(]|-\s)")
# a lesion said to be gone: "the previously described nodule ... has resolved", "is no longer seen"
_RESOLVED_AFTER = re.compile(r"\b(?:has|have)\s+(?:since\s+|now\s+|completely\s+)?(?:resolved|disappeared|been resected|been removed)\b"
                             r"|\b(?:is|are)\s+no longer\s+(?:seen|visible|identified|present|evident|demonstrated)\b")
# a finding the report explains away is no lesion: "the asymmetry disperses ..., consistent with
# summation artifact", "represents a pseudolesion", "corresponds to normal fibroglandular tissue"
NOT_A_LESION = re.compile(r"\b(?:summation|pseudo-?lesion|pseudo-?mass|disperses|dissipates|"
                          r"(?:represents?|consistent with|corresponds? to|due to)\s+(?:a\s+)?(?:normal|overlapping)\s+"
                          r"(?:[a-z]+\s+)?(?:tissue|parenchyma|structures?|vessels?|bowel)|"
                          r"(?:imaging|positioning|motion|technical)\s+artifact)\b")
_GAP_BREAK = re.compile(r";|,\s|\s(?:and|while|whereas|but|as well as)\s")
_GAP_START = re.compile(r"\b(?:a|an|another|additional|second|third|one|two|three|several|multiple|\d)")
_HEADER = re.compile(r"^((?:[a-z]+\s*){1,3}):\s*")
_PLACE = re.compile(r"\b(?:lobes?|poles?|segments?|region|hilum|hilar|apex|base|lingula|isthm\w*|hemispheres?|zones?)\b")
_NO_NEW = re.compile(r"\bno\s+(?:new|additional|further|other|enlarging|new or enlarging)\b[^.;]*$")


@dataclasses.dataclass
class Finding:
    """One lesion the report describes (see the module docstring for how each part is read)."""

    entity: str  # the lesion noun as the report first names it ("mass", "cysts")
    status: str  # present | negated | possible | historical | prior_comparison
    organ: str | None
    side: str | None  # left | right | bilateral
    size_mm: float | None  # current size: the largest dimension, in mm
    dims_mm: tuple[float, ...]
    prior_size_mm: float | None
    text: str  # the normalised words that describe it (its clause or clauses)
    sentence: str  # the report sentence (as written) it is first described in
    span: tuple[int, int]  # its clause's character span in the normalised first sentence
    plural: bool
    called_dominant: bool = False  # "dominant" / "index": the report's own pick
    largest_of_group: bool = False  # "the largest (of these) ..." after a plural mention
    summarised: bool = False  # a group whose largest member is its own finding
    small: bool = False
    section: str = "findings"
    places_in: frozenset = frozenset()  # organs its place words ("lower pole") can be in
    # a hedged diagnosis offered for it ("typical of a Warthin tumour"): it calls the lesion benign or
    # suspicious, but is kept out of ``text``, whose words give feature values
    diagnosis: str = ""
    # the largest of a group known only by the group's bound ("innumerable lesions ... up to 7 mm"): its size
    # and the group's side are known, never a place of its own
    bound_only: bool = False

    def as_row(self) -> dict:
        """The finding as one row of the extraction table (docs/benchgen.md)."""
        return {"entity": self.entity, "status": self.status, "organ": self.organ or "", "side": self.side or "",
                "size_mm": self.size_mm, "dims_mm": list(self.dims_mm), "prior_size_mm": self.prior_size_mm,
                "dominant_named": self.called_dominant, "largest_of_group": self.largest_of_group, "sentence": self.sentence, "span": list(self.span)}


def nouns_of(texts: list[str]) -> set[str]:
    """The lesion nouns ``texts`` name (schema questions and patterns); every noun under an umbrella term.

    Parameters
    ----------
    texts : list of str
        Question texts and patterns of a schema's fields.

    Returns
    -------
    set of str
        Keys of :data:`LESION_NOUNS`; all of them when an umbrella noun ("lesion", "observation") is named.
    """
    joined = normalize_sentence(" ".join(texts))
    found = {k for k, pat in _NOUN_OF if pat.search(joined) or re.search(rf"\b{k}", joined)}
    return found | umbrella_nouns(joined) if found & UMBRELLA else found


def _organ(text: str) -> str | None:
    """The organ the first organ word of ``text`` names (never a shared place word)."""
    hits = [(m.start(), organ) for organ, pat in ORGAN_WORDS.items() for m in re.finditer(pat, text)]
    return min(hits)[1] if hits else None


def place_organs(text: str) -> frozenset[str]:
    """The organs every place word of ``text`` can be in.

    Parameters
    ----------
    text : str
        Normalised text (a finding's clause, a header).

    Returns
    -------
    frozenset of str
        The intersection of the organ sets (:data:`PLACE_ORGANS`) of its place words; empty when
        it has none.
    """
    sets = [organs for pat, organs in PLACE_ORGANS if re.search(pat, text)]
    return frozenset(set.intersection(*map(set, sets))) if sets else frozenset()


def schema_organ(organ: str | None) -> str | None:
    """A schema's organ as a key of :data:`ORGAN_WORDS` ("kidney", "renal", "thyroid gland" -> one key).

    Parameters
    ----------
    organ : str or None
        ``Schema.organ`` as the institution wrote it.

    Returns
    -------
    str or None
        The :data:`ORGAN_WORDS` key it names; the text itself when it names none of them; None
        when there is none.
    """
    if not organ:
        return None
    return SCHEMA_ORGAN.get(organ) or _organ(normalize_sentence(organ)) or organ


# addition: the operation that removes each organ whole. A paired organ's is never the whole of
# it (the other one is left), nor is a "partial" / "hemi-" / "distal" one: those leave tissue
# whose lesions the report still describes.
REMOVAL_OF = {"prostate": r"prostatectom\w*", "thyroid": r"thyroidectom\w*", "pancreas": r"pancreatectom\w*",
              "spleen": r"splenectom\w*", "bladder": r"cystectom\w*", "uterus": r"hysterectom\w*",
              # paired organs: removed whole only when both are ("bilateral mastectomies")
              "breast": r"mastectom\w*", "kidney": r"nephrectom\w*", "ovary": r"oophorectom\w*",
              "testis": r"orchi(?:d)?ectom\w*", "adrenal": r"adrenalectom\w*"}
_BOTH_BEFORE = re.compile(r"\b(?:bilateral|both|double)\s+(?:[a-z-]+\s+){0,2}$")
_PART_OF_ORGAN = re.compile(r"\b(?:partial|hemi-?|distal|proximal|subtotal|near-total|segmental|central|left|right|"
                            r"completion of)\s*$")


def organ_removed(text: str, organ: str | None) -> bool:
    """Whether the report says the schema's organ has been removed whole.

    After a radical prostatectomy or a total thyroidectomy the organ's own fields (is there a
    lesion in it, the lesion's zone, size, category) are unsettled: a nodule in the operative bed
    is a recurrence, not a lesion of the organ, and a denial elsewhere is no denial about it.

    Parameters
    ----------
    text : str
        The report (findings and impression), normalised.
    organ : str or None
        The schema's organ.

    Returns
    -------
    bool
        True when the report names the organ's whole removal (:data:`REMOVAL_OF`, with no
        partial qualifier just before it; for a paired organ, "bilateral" / "both" / "double"
        before it) or says the organ is absent or removed.
    """
    want = schema_organ(organ)
    if want is None:
        return False
    paired = want in PAIRED_ORGANS
    surgery = REMOVAL_OF.get(want)
    if surgery:
        for m in re.finditer(rf"\b{surgery}\b", text):
            if _PART_OF_ORGAN.search(text[:m.start()]):
                continue
            # one breast / kidney removed leaves the other, whose lesions the report still describes
            if not paired or _BOTH_BEFORE.search(text[:m.start()]):
                return True
    if paired:
        return False
    word = ORGAN_WORDS.get(want)
    return bool(word and re.search(rf"{word}(?:\s+and\s+[\w ]{{1,30}}?)?\s+(?:is|are|has been|have been)\s+"
                                   r"(?:surgically\s+)?(?:absent|removed|resected)\b", text))


# a lesion said to cross the midline occupies both sides, whatever side it is centred on
_ACROSS_MIDLINE = re.compile(r"\b(?:cross(?:es|ing)?|across|spann?(?:s|ing)?|traversing|traverses)\s+(?:the\s+)?midline\b")


def _side(text: str, anchor: int) -> str | None:
    if _ACROSS_MIDLINE.search(text) or re.search(r"\b(?:on|of|in)\s+(?:each|both)\s+sides?\b", text):
        return "bilateral"  # "up to 14 mm on each side"
    sides = [(abs(m.start() - anchor), m.group(1)) for m in _SIDE.finditer(text)]
    if not sides:
        return None
    word = min(sides)[1]
    return "bilateral" if word in ("bilateral", "bilaterally", "both") else word


# a treatment's product measured in the lesion's clause: "the treated lesion contains dense lipiodol over an
# area of 3.0 x 2.6 cm", "the ablation zone measures 3.5 cm" -- the deposit or the zone (tumour plus its
# margin) is measured, not the viable tumour, so the length is no size of the lesion
_TREATMENT_PRODUCT_BEFORE = re.compile(r"\b(?:lipiodol|ethiodi[sz]ed oil|embolic material|(?:ablation|treatment) "
                                       r"(?:zone|cavity|defect|bed))\b[^.;]{0,40}$")


def _sizes(text: str) -> tuple[tuple[float, ...], float | None]:
    """(current dimensions, prior size) of the lengths in a clause: a length right after
    "previously" / "prior" / "from", or dated to an earlier study ("4.8 cm on 2 September 2025",
    "1.2 cm in 2023"), is the prior one."""
    current, prior = (), None
    for kind, dims, start in measurements(text):
        if kind != "length" or _PART_MEASURES.search(text[:start]) or _TREATMENT_PRODUCT_BEFORE.search(text[:start]):
            continue
        if prior_length(text, start) or _VERSUS_BEFORE.search(text[:start]):  # "4.8 cm on 2 September 2025"
            prior = prior if prior is not None else max(dims)
        elif not current:
            current = tuple(dims)
    return current, prior


def _status(sent: str, start: int, end: int) -> str:
    if _NO_NEW.search(sent[:start]):
        return "prior_comparison"
    if OPERATED_FOR.search(sent[:start]):
        return "historical"  # "distal pancreatectomy for mucinous cystic neoplasm": the operation removed it
    if _RESOLVED_AFTER.search(sent[end:]) and not _mentions_between(sent, end):
        return "historical"  # the sentence's subject is said to be gone
    st = _mention_status(sent, start, end)
    return {"affirmed": "present", "favoured": "possible", "hypothetical": "possible",
            "conflicting": "possible"}.get(st, st)


def _mentions_between(sent: str, end: int) -> bool:
    """Whether another lesion is named as the subject of its own clause between ``end`` and the
    sentence's "has resolved" (a clause of its own, so the resolution is that lesion's)."""
    gone = _RESOLVED_AFTER.search(sent[end:])
    gap = sent[end:end + gone.start()]
    # "nodule ..., thought to represent a haemorrhagic cyst, has resolved": an apposition between
    # commas is still the same subject; a new clause ("; the cyst has resolved") is not
    return bool(re.search(r"[;]|\band\s+(?:the|a|an)\s", gap))


def _mentions(sent: str, nouns: set[str]) -> list[tuple[int, int, str]]:
    found = []
    for key, pat in _NOUN_OF:
        if key in nouns:
            found += [(m.start(), m.end(), m.group(0)) for m in pat.finditer(sent)]
    found.sort()
    out = []
    for m in found:  # "lymph node" is not a nodule; overlapping patterns count once
        if out and m[0] < out[-1][1]:
            continue
        if re.search(r"\blymph\s+$", sent[:m[0]]) or another_thing_after(sent, m[1]):
            continue  # a lymph node is not a nodule, mass effect not a mass, tumour thrombus not a tumour
        out.append(m)
    if not out and nouns & UMBRELLA:
        # "a 6 mm ill-defined area of T2 hypointensity ..., PI-RADS 3": a finding the report scores
        # with a RADS category is a lesion whatever it is called ("area", "focus", "abnormality")
        cat = _CATEGORY.search(sent)
        word = re.search(r"\b(?:area|focus|region|abnormality)\b", sent[:cat.start()]) if cat else None
        if word:
            out.append((word.start(), word.end(), "lesion"))
    return out


_COMPOUND_AFTER = re.compile(r"[- ]effect\b|\s+(?:thromb\w*|in (?:the )?(?:\w+ )?veins?)\b")


def another_thing_after(sent: str, end: int) -> bool:
    """Whether the lesion noun ending at ``end`` is part of another thing's name.

    Parameters
    ----------
    sent : str
        A normalised sentence.
    end : int
        Where the lesion noun ends in ``sent``.

    Returns
    -------
    bool
        True for "mass effect", "tumour thrombus", "tumour in the portal vein".
    """
    return bool(_COMPOUND_AFTER.match(sent[end:]))


def _segments(sent: str, mentions: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """Each mention's clause: the sentence cut between consecutive mentions at the last break
    (";", ", ", "and") of the gap, else where the next noun phrase starts."""
    cuts = [0]
    for (_, e1, _), (s2, _, _) in zip(mentions, mentions[1:]):
        gap = sent[e1:s2]
        breaks = list(_GAP_BREAK.finditer(gap))
        if _COPULA.match(gap) or _LABEL.match(gap):
            cuts.append(s2)  # "nodule, in the mid pole, is a mixed cystic and solid nodule": one lesion's words
        elif breaks:
            cuts.append(e1 + breaks[-1].end())
        else:
            starts = list(_GAP_START.finditer(gap))
            cuts.append(e1 + (starts[0].start() if starts else len(gap)))
    cuts.append(len(sent))
    return [(cuts[i], cuts[i + 1]) for i in range(len(mentions))]


def _listed_members(sent: str, end: int, b: int) -> list[tuple[int, int]]:
    """Spans of the members a plural mention lists after ":" or ",", one per length
    ("...: 3.8 cm in the right upper pole and 2.0 cm in the right lower pole"); empty unless
    there are at least two."""
    rest = sent[end:b]
    lead = re.match(r"\s*[:,]\s*", rest)
    if not lead:
        return []
    found = [m for m in re.finditer(r"(?<![\w.])" + _MEASURE.pattern, rest[lead.end():]) if m.group(2) != "hu"]
    starts = [end + lead.end() + m.start() for m in found]
    if len(starts) < 2:
        return []
    if re.search(r"[a-z]", rest[lead.end():found[0].start()]):
        # "...: left base 14 mm and right apex 12 mm": each member's place comes before its length,
        # so a member runs from the previous one's end to its own length
        spans, a_ = [], end + lead.end()
        for m in found:
            b_ = end + lead.end() + m.end()
            spans.append((a_, b_))
            after = re.match(r"(?:\s*[,;]\s*|\s+)(?:and\s+)?", sent[b_:])
            a_ = b_ + (after.end() if after else 0)
        return spans
    bounds = starts[1:] + [b]
    spans = []
    for a_, b_ in zip(starts, bounds):
        piece = sent[a_:b_]
        cut = re.search(r"(?:,\s*|\s+)(?:and\s+)?$", piece)  # the joining ", and" belongs to neither
        spans.append((a_, a_ + (cut.start() if cut else len(piece))))
    return spans


def _fits(f: Finding, organ: str | None) -> bool:
    """Whether ``f`` can be in ``organ``: its own organ word, else its place words, allow it."""
    if organ is None:
        return True
    if f.organ is not None:
        return f.organ == organ
    return not f.places_in or organ in f.places_in


def _compatible(a: Finding, b: Finding) -> bool:
    sides = {a.side, b.side}
    return _fits(a, b.organ) and _fits(b, a.organ) and (None in sides or len(sides) == 1 or "bilateral" in sides)


def report_findings(findings: str, impression: str, nouns: set[str] | None = None) -> list[Finding]:
    """Every lesion of a report as a :class:`Finding`, in report order.

    Parameters
    ----------
    findings : str
        The report's findings section.
    impression : str
        The report's impression section (its restatements join the findings they name).
    nouns : set of str or None, optional
        The lesion nouns to read (:func:`nouns_of`); None reads all of :data:`LESION_NOUNS`.

    Returns
    -------
    list of Finding
        One per lesion, with its status, organ, side, sizes, text and sentence span.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("RADS-style questions").
    """
    nouns = set(LESION_NOUNS) if nouns is None else nouns
    out: list[Finding] = []
    section_organ, chained, previous_header = None, None, ""
    for section, text in (("findings", findings), ("impression", impression)):
        referral = [m.group(0) for m in _CLINICAL_LINE.finditer(text)] + [m.group(0) for m in _COMPARISON_LINE.finditer(text)]
        for original in sentences(text):
            sent = normalize_sentence(original)
            if any(original.strip() in r for r in referral):
                # "Clinical: right adnexal cyst on CT.": the reason for the study, seen elsewhere (its size
                # dated there), is what this report examines, not one more lesion it describes;
                # "Comparison: 3 March 2026, when the lesion measured 7 mm.": the earlier study's view of it
                for f in _referral_findings(original, sent, nouns, section):
                    out.append(f)
                chained = None
                continue
            if is_recommendation(sent):
                chained = None
                continue
            header = _HEADER.match(sent)
            header_text = header.group(1) if header else ""
            if header and not sent[header.end():].strip():
                section_organ = _organ(header_text)  # "LIVER:" on its own line heads what follows
                continue
            # a header the sentence shares with the one before it ("RIGHT LOBE:" on its own line
            # heads both) starts no new place: the sentence's own words decide
            same_section = bool(header) and header_text == previous_header
            previous_header = header_text
            body = sent[header.end():] if same_section else sent
            mentions = _mentions(sent, nouns)
            if header and re.fullmatch(r"(?:\w+\s+)?\w+s", header_text.strip()):
                # "OBSERVATIONS: (A) Segment 4b: 8 mm observation ...": a plural heading lists the lesions
                # that follow, it is no lesion itself
                mentions = [m for m in mentions if m[0] >= header.end() - 1 or m[2] not in header_text]
            if not mentions:
                # "It measures 12 mm." / "Central necrosis." / "No washout.": a sentence naming no
                # lesion, no side or place and no organ, right after a lesion's sentence, describes it
                last = out[-1] if out else None
                largest = re.match(r"^\W*(?:the\s+)?(largest|dominant|biggest)\b", body)
                if largest and last is not None and chained is last and last.status == "present" and last.plural:
                    # "Multiple cystic lesions ... The largest is in the pancreatic body and measures 1.6 cm.":
                    # the group's largest member, described by this sentence alone
                    dims, prior = _sizes(body)
                    chained = dataclasses.replace(
                        last, plural=False, called_dominant=largest.group(1) == "dominant",
                        largest_of_group=largest.group(1) != "dominant", dims_mm=dims,
                        # the group's words describe its largest too ("cystic"), less a side both share
                        text=(_SIDE.sub(" ", last.text) if last.side == "bilateral" else last.text) + " " + body,
                        size_mm=max(dims) if dims else None, prior_size_mm=prior, sentence=original,
                        span=(len(sent) - len(body), len(sent)), side=_side(body, 0) or
                        (None if last.side == "bilateral" else last.side), summarised=False)
                    last.summarised = True
                    out.append(chained)
                    continue
                if re.match(r"^\W*(?:the\s+)?(?:others?|remaining|rest)\b", body):
                    chained = None  # "The others measure up to 9 mm": the rest of a group, not its last-named member
                    continue
                if (chained is not None and chained.status == "present"
                        and (re.match(r"^(?:it|this)\b", body)
                             or not (_SIDE.search(body) or _PLACE.search(body) or _organ(body) or place_organs(body)
                                     or (header and not same_section)))):
                    last = chained
                    dims, prior = _sizes(body)
                    last.text += " " + body
                    if dims and last.size_mm is None:
                        last.dims_mm, last.size_mm = dims, max(dims)
                    last.prior_size_mm = last.prior_size_mm if prior is None else prior
                else:
                    chained = None
                continue
            segs = _segments(sent, mentions)
            joined_to_previous, joined_prev_end = None, 0
            touched = None  # the finding the sentence's last mention names: the next unnamed sentence describes it
            for (start, end, word), (a, b) in zip(mentions, segs):
                f = _new_finding(original, sent, start, end, word, a, b, header_text, section_organ, section)
                if f.largest_of_group and joined_to_previous is not None and joined_to_previous.plural:
                    joined_to_previous.summarised = True  # the group stands for its largest, now described
                # "Dominant lesion is a 2.1 cm mass": a copula joins the two nouns into one lesion
                if joined_to_previous is not None and (_COPULA.match(sent[joined_prev_end:start])
                                                       or _LABEL.match(sent[joined_prev_end:start])):
                    _merge(joined_to_previous, f, keep_status=True)
                    joined_prev_end = end
                    continue
                if (joined_to_previous is not None and f.called_dominant and f.size_mm is None and not f.plural
                        and f.entity.rstrip("s") in UMBRELLA and not joined_to_previous.plural
                        and re.search(r"[:,;]\s*(?:the\s+)?(?:dominant|index|target)\s+$", sent[:start])):
                    # "... fibroid (FIGO 0), 3.3 cm, arising from the fundus: the target lesion for resection":
                    # an unsized "target / dominant lesion" set beside one lesion names that lesion ("2.5 cm from
                    # the index lesion" is a distance, no apposition)
                    _merge(joined_to_previous, f, keep_status=True)
                    joined_prev_end = end
                    continue
                # "the largest in the right upper pole measuring 4.1 cm" after a plural mention
                # ("measuring up to 9 mm": the largest is 9 mm)
                sub = re.search(r"(?:,\s*|\b)(?:the\s+)?(?:largest|dominant|biggest|larger|bigger)\b|\bup to\b",
                                sent[end:b])
                if sub and re.search(r"\b(?:no|none|not|without|neither)\s+(?:\w+\s+)?$",
                                     sent[end:end + sub.start() + len(sub.group(0)) - len(sub.group(0).lstrip(", "))]):
                    sub = None  # "innumerable nodules, none dominant" names no dominant one
                if sub and f.plural:
                    # the group is its own words: "renal masses, the dominant 4.8 cm on the right" is
                    # a bilateral group of unknown size whose dominant member is 4.8 cm on the right,
                    # so the group joins the earlier group, never the earlier 4.8 cm lesion
                    group_words = sent[a:end + sub.start()]
                    f.dims_mm, f.prior_size_mm = _sizes(group_words)
                    f.size_mm, f.side = (max(f.dims_mm) if f.dims_mm else None), _side(group_words, start - a)
                if (joined_to_previous is not None and f.status == "possible" and f.size_mm is None
                        and joined_to_previous.status == "present" and _DIAGNOSIS_BEFORE.search(sent[joined_prev_end:start])):
                    # "the known lesion ... measures 29 x 20 mm, unchanged since 2022, typical of a Warthin
                    # tumour": the hedged diagnosis names the lesion just described, not one more lesion
                    joined_to_previous.diagnosis += " " + sent[joined_prev_end:b].strip()
                    joined_prev_end = end
                    continue
                target = _referent(out, f, sent[:start], section)
                if target is not None:
                    _merge(target, f)
                    joined_to_previous, joined_prev_end = target, end
                    touched = target
                elif (section == "impression" and f.status == "present" and f.size_mm is None and not sub
                      and any(g.section == "findings" and g.status == "present" and _compatible(g, f) for g in out)):
                    # an unsized restatement ("Bilateral renal cysts.") summarises lesions already
                    # described; it is not one more lesion of unknown size
                    joined_to_previous, joined_prev_end = None, end
                    continue
                else:
                    out.append(f)
                    joined_to_previous, joined_prev_end = f, end
                    touched = None
                members = _listed_members(sent, end, b) if f.plural and not sub else []
                if members:
                    # "Two masses: 3.8 cm in the right upper pole and 2.0 cm in the right lower pole":
                    # each listed size is its own lesion, with the group's words
                    head = sent[a:end]
                    if joined_to_previous is f:
                        f.text, f.dims_mm, f.size_mm, f.prior_size_mm = head, (), None, None
                        f.side = _side(head, start - a)
                    joined_to_previous.summarised = True
                    for m_a, m_b in members:
                        part = sent[m_a:m_b]
                        dims, prior = _sizes(part)
                        part_side = _side(part, 0)
                        out.append(dataclasses.replace(
                            f, plural=False, text=(_SIDE.sub(" ", head) if part_side else head) + " " + part,
                            dims_mm=dims, size_mm=max(dims) if dims else None, prior_size_mm=prior,
                            side=part_side or (None if f.side == "bilateral" else f.side), span=(m_a, m_b),
                            summarised=False))
                if sub and f.plural:
                    child_text = sent[end + sub.start():b]
                    bound = sub.group(0).strip() == "up to"
                    if bound:
                        # "Innumerable lesions ... up to 7 mm. Two of the lesions, in the right occipital lobe
                        # ...": a bound names no member, so its largest lies where the group lies, not in a
                        # later sentence's place
                        child_text = re.split(r"(?<=[.;])\s", child_text, maxsplit=1)[0]
                    dims, prior = _sizes(child_text)
                    child_side = None if bound else _side(child_text, 0)
                    head = sent[a:end + sub.start()]  # the group's own words
                    named = re.search(r"dominant", sub.group(0)) is not None
                    child = dataclasses.replace(
                        f, plural=False, called_dominant=named, largest_of_group=not named, bound_only=bound,
                        # a group on both sides / in both lobes leaves the side to the child's own words
                        text=(_SIDE.sub(" ", head) if f.side == "bilateral" and not bound else head) + " " + child_text,
                        dims_mm=dims, size_mm=max(dims) if dims else None, prior_size_mm=prior,
                        side=child_side if child_side else (None if f.side == "bilateral" and not bound else f.side))
                    if joined_to_previous is f:  # the group keeps its own words and sizes
                        f.text, (f.dims_mm, f.prior_size_mm) = head, _sizes(head)
                        f.size_mm, f.side = (max(f.dims_mm) if f.dims_mm else None), _side(head, start - a)
                    group = joined_to_previous
                    group.summarised = True
                    target = _referent(out, child, "", section)
                    if target is not None and target is not group:
                        _merge(target, child)
                    else:
                        out.append(child)
            # a restatement that joined an earlier lesion ("1. Right breast 9 mm mass." after both
            # breasts were described) is what "BI-RADS 4A: ..." next describes, not the last lesion listed
            chained = touched if touched is not None else (out[-1] if out else None)
    return out


# the clinical / indication line: "Clinical: 63-year-old; right adnexal cyst on CT." up to its full stop
_CLINICAL_LINE = re.compile(r"\b(?:clinical(?:\s+(?:history|information|details|indication|question))?|history|indications?|"
                            r"reason for (?:exam\w*|study|referral|scan)|referral)\s*:.*?(?:\.(?=\s+[A-Z])|\n|$)",
                            re.IGNORECASE | re.DOTALL)


# a comparison line: what an earlier study showed ("Comparison: ultrasound 8/5/2025, when the mass
# measured 3.1 cm"); its lesions are the earlier study's view, the current one described after it
_COMPARISON_LINE = re.compile(r"\b(?:comparison|compared|prior(?: study| studies| imaging)?|previous(?: study| studies| imaging)?)"
                              r"\s*:.*?(?:\.(?=\s+[A-Z])|\n|$)", re.IGNORECASE | re.DOTALL)


def _referral_findings(original: str, sent: str, nouns: set[str], section: str) -> list[Finding]:
    """The lesions a clinical / indication line names, each ``historical``: no candidate of the
    dominant lesion and no referent of a later mention."""
    mentions = _mentions(sent, nouns)
    out = []
    for (start, end, word), (a, b) in zip(mentions, _segments(sent, mentions)):
        f = _new_finding(original, sent, start, end, word, a, b, "", None, section)
        f.status = "historical" if f.status == "present" else f.status
        out.append(f)
    return out


# a diagnosis offered for the lesion just named: "..., typical of a", "consistent with", "most likely a"
_DIAGNOSIS_BEFORE = re.compile(r"\b(?:consistent with|in keeping with|compatible with|typical of|characteristic of|"
                               r"diagnostic of|(?:most\s+)?likely|probably|representing|suggestive of|favou?ring|"
                               r"suspicious for|concerning for)\s+(?:(?:a|an|the)\s+)?(?:[\w-]+\s+){0,3}$")


# a lesion noun a lymph node carries: "nodal metastasis", "lymph node mass", "nodal conglomerate mass"
_NODAL_BEFORE = re.compile(r"\b(?:nodal|(?:lymph\s+)?nodes?)\s+(?:[\w-]+\s+)?$")


# a name in quotation marks is another study's or the referrer's ("the ultrasound 'adnexal mass' is a ... fibroid
# arising from the uterine fundus"): it places the lesion in no organ
_QUOTED = re.compile(r"(?<!\w)'[^'.;]{2,40}'(?!\w)|\"[^\".;]{2,40}\"")


def _new_finding(original, sent, start, end, word, a, b, header_text, section_organ, section) -> Finding:
    clause = sent[a:b]
    dims, prior = _sizes(clause)
    organ = _organ(_QUOTED.sub(lambda m: " " * len(m.group(0)), clause)) or _organ(header_text) or section_organ
    if _NODAL_BEFORE.search(sent[max(0, start - 40):start]):
        organ = "lymph node"  # "a necrotic level IIA nodal metastasis, 18 mm in short axis" is a node, not the organ's lesion
    side = _side(clause, start - a) or _side(header_text, 0)
    return Finding(places_in=place_organs(clause + " " + header_text), entity=word, status=_status(sent, start, end), organ=organ, side=side,
                   size_mm=max(dims) if dims else None, dims_mm=dims, prior_size_mm=prior, text=clause,
                   sentence=original, span=(a, b), plural=word.endswith("s") and not word.endswith("ss")
                   and word not in ("metastasis",),
                   called_dominant=bool(_DOMINANT.search(sent[a:start])) and not _largest_of_named_group(sent, a, start),
                   largest_of_group=_largest_of_named_group(sent, a, start),
                   # "innumerable small cysts": the words just before the noun qualify it even where its clause starts at it
                   small=bool(_SMALL.search(clause) or _SMALL.search(re.search(r"(?:\S+\s+){0,2}$", sent[:start]).group(0))),
                   section=section)


# vocabulary: positions a lesion has one of (a fibroid's FIGO position)
_POSITIONS = ("submucosal", "intramural", "subserosal")


def _other_position(before: str, earlier: str) -> bool:
    """Whether a definite mention's own words give it a position ("the subserosal fibroid") that the
    earlier lesion's words give otherwise ("the dominant intramural fibroid"): another lesion."""
    own = re.search(r"\b(?:the|this)\s+((?:[\w-]+\s+){0,3})$", before)
    said = {p for p in _POSITIONS if own and p in own.group(1)}
    return bool(said) and not said & {p for p in _POSITIONS if p in earlier}


def _largest_of_named_group(sent: str, a: int, start: int) -> bool:
    """Whether the superlative before a noun ranks it in the plural group its sentence names just before
    ("Bulky uterus with several fibroids, the largest a 3.0 cm ... fibroid"): the group's largest, which
    another kind of lesion (a tumour) may still outsize."""
    words = sent[a:start]
    sup = re.search(r"\b(?:largest|biggest)\b", words)
    return bool(sup and not re.search(r"\b(?:dominant|index|target)\b", words)
                and _LARGEST_OF_NAMED_GROUP.search(sent[max(0, a - 60):a + sup.end()]))


# nouns any kind of lesion goes by ("the dominant mass" may be a lipoma): they ask of no one kind
_GENERIC_NOUNS = {"mass", "nodule", "tumor", "neoplasm"}


def dominant_of_another_kind(found: list[Finding], asked: set[str], organ: str | None = None) -> bool:
    """Whether the dominant lesion of every kind the organ holds is of another kind than the one asked.

    Parameters
    ----------
    found : list of Finding
        The report's findings (:func:`report_findings`, read with every noun of the organ).
    asked : set of str
        The lesion nouns a question names (keys of :data:`LESION_NOUNS`), e.g. {"fibroid"}.
    organ : str or None, optional
        The schema's organ.

    Returns
    -------
    bool
        True when ``asked`` names one kind (no umbrella or generic noun: mass, nodule, tumour) and the dominant finding of ``found``
        (:func:`dominant`) is a lesion of no asked kind: "the dominant fibroid" of a uterus whose
        dominant lesion is a 3.8 cm adenomyoma, beside a 1.2 cm fibroid, or a "lesion" the report
        leaves as polyp versus fibroid. False where no lesion is dominant.
    """
    if not asked or asked & (UMBRELLA | _GENERIC_NOUNS):
        return False
    dom, _ = dominant(found, organ)
    if dom is None:
        return False
    kind = next((k for k, p in _NOUN_OF if p.fullmatch(dom.entity)), None)
    return kind not in asked


# nouns any solid lesion goes by: a report names one lesion "a mass", then "the tumour"
_SOLID_GENERIC = frozenset({"mass", "tumor", "neoplasm"})


def _noun_key(entity: str) -> str | None:
    """The :data:`LESION_NOUNS` key of a noun as the report writes it ("tumours" -> "tumor")."""
    return next((k for k, pat in _NOUN_OF if pat.fullmatch(entity)), None)


def _referent(out: list[Finding], f: Finding, before: str, section: str) -> Finding | None:
    """The earlier finding a mention names again, or None for a new lesion."""
    if not out or f.status not in ("present",):
        return None
    candidates = [g for g in out if g.status == "present" and _compatible(g, f)]
    if re.search(r"\b(?:remaining|other|additional|further|another|second|smaller)\s+(?:[\w-]+\s+){0,2}$", before):
        return None  # "the remaining nodules", "the smaller fibroids" are not the nodule just described
    if _DEFINITE.search(before) and not f.called_dominant:
        same = [g for g in candidates if not g.plural and not _other_position(before, g.text)
                and (g.entity.rstrip("s") == f.entity.rstrip("s")
                     or f.entity.rstrip("s") in UMBRELLA
                     # "an expansile intramedullary mass ... the tumour": a noun any solid lesion goes by
                     or {_noun_key(f.entity), _noun_key(g.entity)} <= _SOLID_GENERIC)]
        return same[-1] if same else None
    if section != "impression" and not f.called_dominant:
        return None
    if f.size_mm is not None:
        same = [g for g in candidates if g.size_mm is not None and abs(g.size_mm - f.size_mm) < 0.5]
        return same[0] if len(same) == 1 else None
    if section == "impression":
        pool = [g for g in candidates if not g.plural] if not f.plural else [g for g in candidates if g.plural]
        if f.side is not None:
            # "Left parotid superficial lobe lesion, unchanged" restates "The lesion is again seen", whose
            # side the findings never wrote: a lesion of unknown side is compatible, when it is the only one
            same_side = [g for g in pool if g.side == f.side]
            pool = same_side or [g for g in pool if g.side is None]
        return pool[0] if len(pool) == 1 else None
    return None


def _merge(target: Finding, f: Finding, keep_status: bool = False) -> None:
    target.text += " " + f.text
    target.diagnosis = (target.diagnosis + " " + f.diagnosis).strip()
    if target.size_mm is None and f.size_mm is not None:
        target.size_mm, target.dims_mm = f.size_mm, f.dims_mm
    target.prior_size_mm = target.prior_size_mm if target.prior_size_mm is not None else f.prior_size_mm
    target.side = target.side or f.side
    target.organ = target.organ or f.organ
    target.places_in = target.places_in or f.places_in
    target.called_dominant = target.called_dominant or f.called_dominant
    target.small = target.small or f.small
    if not keep_status and target.status != "present":
        target.status = f.status


def under_part_heading(text: str) -> bool:
    """Whether a normalised sentence stands under a heading that names a part of an organ ("peripheral
    zone:", "upper lobes:", "right lobe:"): a denial there clears that part, not the organ.

    Parameters
    ----------
    text : str
        A normalised sentence.

    Returns
    -------
    bool
        True when the sentence opens with a heading of up to three words holding a place word
        (:data:`_PLACE`: lobe, pole, segment, zone, apex, base ...).
    """
    header = re.match(r"^((?:[a-z]+\s*){1,3}):", text)
    return bool(header and _PLACE.search(header.group(1)))


# a schema organ that is a region made of another organ's tissue: the spine's own lesions are its
# vertebrae's ("osseous metastases", "a lesion in the L3 vertebral body"), so a bone lesion is a
# candidate of a spine schema, while a lung, liver or brain lesion at the edge of its field is not
REGION_TISSUES = {"spine": frozenset({"bone"})}


def in_organ(f: Finding, organ: str | None) -> bool:
    """Whether a finding may be the schema organ's lesion: its organ is that one, or unnamed.

    Parameters
    ----------
    f : Finding
        The finding.
    organ : str or None
        The schema's organ (``Schema.organ``); None accepts every finding.

    Returns
    -------
    bool
        True when ``organ`` is None, the finding names ``organ`` or a tissue it is made of
        (:data:`REGION_TISSUES`: a vertebral lesion of the spine), or names no organ and either has no
        place word or one that ``organ`` (or an organ outside :data:`ORGAN_WORDS`) can have; a lymph
        node's finding ("nodal metastasis") only where ``organ`` is a region outside :data:`ORGAN_WORDS`
        ("soft tissue"), never an organ's lesion.
    """
    want = schema_organ(organ)
    if want is None:
        return True
    if f.organ == "lymph node" and want not in ORGAN_WORDS:
        return True  # a region's schema ("soft tissue") holds its nodal masses; an organ's never does
    if f.organ is not None:
        return f.organ == want or f.organ in REGION_TISSUES.get(want, ())
    # placed only by a place word: a candidate unless every organ that place fits is a known other one
    return not f.places_in or want in f.places_in or want not in ORGAN_WORDS


def category(f: Finding) -> float | None:
    """The highest RADS category the report assigns the finding in its own words, or None.

    Parameters
    ----------
    f : Finding
        A finding of :func:`report_findings`.

    Returns
    -------
    int, float or None
        The highest category number written in the finding's text ("PI-RADS 4", "LR-5", "TI-RADS
        category 3"; a lettered subdivision as tenths, "BI-RADS 4B" 4.2), a prior one ("upgraded
        from PI-RADS 3") not counted; None when none is.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("RADS-style questions": the dominant lesion).
    """
    # a lettered subdivision ranks inside its number: BI-RADS 4A < 4B < 4C < 5
    cats = [int(m.group(1)) + ("abc".index(m.group(2)) + 1) / 10 if m.group(2) else int(m.group(1))
            for m in _CATEGORY.finditer(f.text)]
    return max(cats) if cats else None


_NODE = re.compile(r"\b(?:lymph\s+nodes?|nodes?|(?:lymph)?adenopathy)\b")


def category_of_a_node(text: str, before: str = "") -> bool:
    """Whether the RADS category in ``text`` is a lymph node's, not a lesion's of the organ.

    Parameters
    ----------
    text : str
        A normalised sentence with a RADS category ("BI-RADS 4C.").
    before : str, optional
        The sentence before it: a category standing alone is said of what that sentence described.

    Returns
    -------
    bool
        True when the category's sentence (or, where it names nothing, the one before) names a lymph
        node and no lesion noun: "Abnormal 2.8 cm axillary lymph node. BI-RADS 4C." scores the node.
    """
    if not _CATEGORY.search(text):
        return False
    own = text if (_mentions(text, set(LESION_NOUNS)) or _NODE.search(text)) else before
    return bool(_NODE.search(own)) and not _mentions(own, set(LESION_NOUNS))


# addition: a clock-face position as the radiologist faces the patient (ACR BI-RADS atlas). On the
# right breast 9 to 12 o'clock is upper outer, 12 to 3 upper inner, 3 to 6 lower inner, 6 to 9 lower
# outer; the left breast is mirrored. A position on 12, 3, 6 or 9 lies between two quadrants.
_CLOCK = re.compile(r"\b(1[0-2]|[1-9])(?::([0-5]\d))?\s*o'?\s*clock\b|\b(1[0-2]|[1-9]):([0-5]\d)\b(?!\s*(?:am|pm|h)\b)")
_QUADRANT_OF = {"right": ("upper inner", "lower inner", "lower outer", "upper outer"),
                "left": ("upper outer", "lower outer", "lower inner", "upper inner")}


def clock_quadrant(text: str, side: str | None) -> tuple[str | None, str]:
    """The quadrant a clock-face position falls in, a normalisation like cm to mm.

    Parameters
    ----------
    text : str
        A finding's normalised text ("... left breast 10 o'clock ...").
    side : str or None
        The finding's side: the same hour is an outer quadrant on one side, an inner one on the other.

    Returns
    -------
    quadrant : str or None
        "upper outer", "upper inner", "lower outer" or "lower inner"; None when unsettled.
    reason : str
        Empty when set or when no clock position is written; else ``clock_between_quadrants`` (12,
        3, 6 or 9 o'clock), ``several_clock_positions`` or ``side_not_stated``.
    """
    hours = set()
    for m in _CLOCK.finditer(text):
        h, mins = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        hours.add((int(h) % 12) + int(mins or 0) / 60)
    if not hours:
        return None, ""
    if len(hours) > 1:
        return None, "several_clock_positions"
    if side not in _QUADRANT_OF:
        return None, "side_not_stated"
    (h,) = hours
    if h % 3 == 0:
        return None, "clock_between_quadrants"
    return _QUADRANT_OF[side][int(h // 3)], ""


def category_word(value: str) -> bool:
    """Whether a schema value names a RADS category ("PI-RADS 4", "LR-5").

    Parameters
    ----------
    value : str
        A value of a multi-value schema field.

    Returns
    -------
    bool
        True when it is written as a RADS category.
    """
    return _CATEGORY.search(value.lower()) is not None


def sole_lesion(found: list[Finding]) -> Finding | None:
    """The report's one described lesion, or None when it describes none or several.

    A possible finding with no size of its own ("most likely a high-grade sarcoma", "favouring
    schwannoma") is the described lesion's diagnosis, not a second lesion; a sized one is another. A
    lymph node's finding ("nodal metastasis") beside a lesion of the organ is no second lesion.

    Parameters
    ----------
    found : list of Finding
        The report's findings (:func:`report_findings`).

    Returns
    -------
    Finding or None
        The one present finding when no other present or sized possible finding is reported.
    """
    present = [f for f in found if f.status == "present"]
    others = [f for f in found if f.status == "possible" and f.size_mm is not None]
    if any(f.organ != "lymph node" for f in present):
        # "Necrotic right level II nodal metastasis" beside a parotid mass: a node is no second lesion of the organ
        present = [f for f in present if f.organ != "lymph node"]
    return present[0] if len(present) == 1 and not others and not present[0].plural else None


def tied_for_dominant(found: list[Finding], organ: str | None = None) -> list[Finding]:
    """The lesions that tie for dominant by the schema's rule (the same largest size, none called
    dominant, no category between them), or an empty list when one is dominant or none ties.

    Parameters
    ----------
    found : list of Finding
        The report's findings (:func:`report_findings`).
    organ : str or None, optional
        The schema's organ (:func:`dominant`).

    Returns
    -------
    list of Finding
        The tied findings, in report order; empty unless :func:`dominant` gives
        ``no_dominant_lesion:equal_sizes``; for ``suspicious_not_largest`` and
        ``complication_not_largest``, the largest and the lesions that contend with it.
    """
    ties: list[Finding] = []
    dominant(found, organ, ties=ties)
    return ties


def dominant(found: list[Finding], organ: str | None = None, by_category: bool = True,
             ties: list[Finding] | None = None) -> tuple[Finding | None, str]:
    """The dominant lesion by the schema's rule, or None with the reason none is.

    Parameters
    ----------
    found : list of Finding
        The report's findings (:func:`report_findings`).
    organ : str or None, optional
        The schema's organ; findings placed in another organ are not candidates.
    by_category : bool, optional
        Whether a RADS category outranks size (the dominant / index lesion); False for "the
        largest / larger" lesion, which is the largest whatever its category.
    ties : list of Finding or None, optional
        Filled with the tied lesions when none is dominant for ``equal_sizes``
        (:func:`tied_for_dominant`).

    Returns
    -------
    finding : Finding or None
        The finding the report calls dominant / index; else the one present finding; else, when every
        present finding has a RADS category (:func:`category`), the one of the highest category (a
        category the report assigns outranks size; the larger breaks a tie); else the
        largest present finding by current size ("the largest" of a group is that group's
        largest, a candidate by its size: a group whose largest is its own finding stands for it).
    reason : str
        Empty when a finding is returned; else ``no_lesion_reported``, ``no_dominant_lesion:group``
        (a plural mention with no largest named), ``no_dominant_lesion:equal_sizes`` or
        ``no_dominant_lesion:size_not_given``.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("RADS-style questions": the dominant lesion).
    """
    present = [f for f in found if f.status == "present" and in_organ(f, organ) and not f.summarised]
    # "Bilateral thyroid nodules. Right lobe: ... Left lobe: ...": an unsized group on both sides
    # whose members are then described on each side is an overview of them, not one more lesion
    sides_described = {f.side for f in present if f.side in ("left", "right")}
    present = [f for f in present if not (f.plural and f.side == "bilateral" and f.size_mm is None
                                          and sides_described == {"left", "right"})]
    if not present:
        return None, "no_lesion_reported"
    named = [f for f in present if f.called_dominant and not f.plural]
    if named:
        sized = [f for f in named if f.size_mm is not None]
        if len(named) == 1 or (sized and len({f.size_mm for f in sized}) == 1 and len(sized) == len(named)):
            if not _DOMINANT_BY_CALL.search(named[0].text) and _complication_elsewhere(named[0], present):
                # "the largest lies in L3 ... epidural tumour at T6 compresses the cord": the report ranks
                # by size only, and many institutions put the lesion causing the complication first
                _contenders(ties, named[0], [f for f in present if _complicated(f)])
                return None, "no_dominant_lesion:complication_not_largest"
            return named[0], ""
        return None, "no_dominant_lesion:two_called_dominant"
    if len(present) == 1:
        return (None, "no_dominant_lesion:group") if present[0].plural else (present[0], "")
    cats = {id(f): category(f) for f in present}
    if by_category and any(c is not None for c in cats.values()):
        # "PI-RADS 4 lesion ..., 13 mm. Background BPH nodules elsewhere.": a finding the report
        # neither sizes nor scores, beside one it scores, is not the index lesion (the index lesion
        # is the highest category the report assigns; an unscored one was not assessed as one)
        present = [f for f in present if cats[id(f)] is not None or f.size_mm is not None]
        if len(present) == 1:
            return (None, "no_dominant_lesion:group") if present[0].plural else (present[0], "")
    if by_category and None not in cats.values() and not any(f.plural for f in present):
        # "LESION 1: 15 mm ... PI-RADS 3. LESION 2: 11 mm ... PI-RADS 4.": the index lesion is the
        # higher category whatever its size; only lesions sharing that category go on to size
        top_cat = max(cats.values())
        present = [f for f in present if cats[id(f)] == top_cat]
        if len(present) == 1:
            return present[0], ""
    sized = [f for f in present if f.size_mm is not None]
    unsized = [f for f in present if f.size_mm is None]
    if not sized or any(not f.small for f in unsized):
        return None, "no_dominant_lesion:size_not_given"
    top = max(f.size_mm for f in sized)
    tops = [f for f in sized if f.size_mm == top]
    if len(tops) > 1:
        if ties is not None:
            ties.extend(tops)
        return None, "no_dominant_lesion:equal_sizes"
    if _complication_elsewhere(tops[0], present):
        _contenders(ties, tops[0], [f for f in present if _complicated(f)])
        return None, "no_dominant_lesion:complication_not_largest"
    if by_category and _called_benign(tops[0]) and any(_called_suspicious(f) for f in present if f is not tops[0]):
        # "a 14 mm simple cyst ... a 9 mm solid nodule": the largest is the rule's pick, the suspicious
        # one many institutions' (an RADS category would settle it; none is given): unclear, no pick
        _contenders(ties, tops[0], [f for f in present if f is not tops[0] and _called_suspicious(f)])
        return None, "no_dominant_lesion:suspicious_not_largest"
    return tops[0], ""


# the report's own pick by rank, as against "the largest", a pick by size alone
_DOMINANT_BY_CALL = re.compile(r"\b(?:dominant|index|target)\b")
# a lesion's complication the report states: it compresses or obstructs a structure ("compresses the
# cord", "causing cord compression", "obstructing the left ureter")
_COMPLICATION = re.compile(r"\b(?:compress(?:es|ing)|obstruct(?:s|ing)|caus(?:es|ing)\s+(?:[\w-]+\s+){0,2}"
                           r"(?:compression|obstruction))\b")


def _contenders(ties: list[Finding] | None, pick: Finding, others: list[Finding]) -> None:
    """Fill ``ties`` (when asked for) with the lesions between which the rule cannot choose."""
    if ties is not None:
        ties.extend([pick] + [f for f in others if f is not pick])


def _complicated(f: Finding) -> bool:
    """Whether the finding's own words state a complication it causes, not denied ("without cord compression")."""
    return any(_mention_status(f.text, m.start(), m.end()) == "affirmed"
               and not re.search(r"\b(?:no|without|not)\W+(?:\w+\W+){0,3}$", f.text[:m.start()])
               for m in _COMPLICATION.finditer(f.text))


def _complication_elsewhere(pick: Finding, present: list[Finding]) -> bool:
    """Whether a lesion other than the one picked by size causes a complication the pick does not: size
    and clinical rank disagree, and the schema states no order between them (no pick)."""
    return not _complicated(pick) and any(_complicated(f) for f in present if f is not pick)


# addition: what a report calls a lesion, for the one case where size and suspicion disagree
_BENIGN_CALL = re.compile(r"\b(?:simple|benign|typical|classic)\b")
_SUSPICIOUS_CALL = re.compile(r"\b(?:suspicious|concerning|worrisome|malignan\w*|neoplas\w*|solid|enhancing|"
                              r"(?:can ?not|not) be excluded)\b")
# a suspicion the radiologist states, as against a feature word ("solid", "enhancing") that a benign
# tumour has too: a meningioma "homogeneously enhancing ..., typical of a benign meningioma" is called benign
_SUSPICION_STATED = re.compile(r"\b(?:suspicious|concerning|worrisome|malignan\w*|(?:can ?not|not) be excluded)\b")
# the benign diagnosis the report offers for it: "typical of a benign meningioma", "in keeping with a simple cyst"
_BENIGN_DIAGNOSIS = re.compile(r"\bbenign\b|\b(?:typical|classic|characteristic|diagnostic) of\b")


def _called_benign(f: Finding) -> bool:
    if _BENIGN_DIAGNOSIS.search(f.diagnosis) and not _called_suspicious(f, _SUSPICION_STATED):
        return True
    return bool(_BENIGN_CALL.search(f.text + " " + f.diagnosis)) and not _called_suspicious(f)


def _called_suspicious(f: Finding, words_of: re.Pattern = _SUSPICIOUS_CALL) -> bool:
    """A suspicion word said of the finding, not denied ("no solid component" says it has none)."""
    words = f.text + " " + f.diagnosis
    return any(not re.search(r"\b(?:no|without|not|non)\W+(?:\w+\W+){0,2}$", words[:m.start()])
               for m in words_of.finditer(words))
