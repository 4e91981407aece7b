"""The report-grounded check a radiologist would sign (benchmark-MCQ paper Methods, "report-grounded check").

A generated question is kept only when its correct answer is *explicitly stated* by the source
report. "Stated" is read the way a radiologist reads a report, not as word overlap:

- **Assertion scope.** Every mention is read with the shared NegEx/ConText reader
  (:func:`medscope.answers.context.status`): "No hydrocephalus." denies hydrocephalus, "the
  common bile duct is not dilated" denies dilatation, "has resolved" / "no longer seen" deny a
  finding now. An answer only negated in the report is ``contradicted_by_report``.
- **Uncertainty.** "differential includes", "versus", "cannot exclude", "possibly", "suspicious
  for", "concerning for", "is also possible" are uncertainty: such an answer is
  ``uncertain_in_report`` (a differential is not a diagnosis). A diagnosis question ("most likely
  diagnosis") accepts the favouring hedges radiologists sign ("consistent with", "likely",
  "in keeping with"), because that is how an impression states the favoured diagnosis.
- **Quantities.** Numbers are read with their units (mm / cm converted; HU apart), and
  "4.2 x 3.1 cm" is one measurement whose size is its largest dimension; "the largest lesion"
  takes the largest measurement among the sentences about the question's subject. Another
  number, another unit, the short axis: ``quantity_not_stated``.
- **Laterality and location.** The side must be the side of the question's subject in the same
  clause ("incidental left thalamic infarct" says nothing of the right parietal mass; "rightward
  midline shift" is not a side); a location reached only by "extending into" is not where a
  lesion is centred (``secondary_location``).
- **Yes / No.** The sentences that best match the question's subject decide: affirmed -> Yes,
  negated (or "normal" / "unremarkable" about the subject) -> No, hedged -> neither.

Rules, not a language model, by default: the paper's second LLM call is the option
``verify: llm`` (``pipelines/benchgen.py``) layered on top of this check, never in place of it.
"""

from __future__ import annotations

import math
import re

from medscope.answers.context import FORWARD, forward_scope, status
from medscope.answers.matching import normalize

# addition (issue 49; medscope.benchgen.findings reads it too): words that place a lesion in an
# organ; a finding is about the schema's organ when its clause (or its sentence's "Organ:" header)
# names that organ, or names none. These are the organ's own nouns and adjectives ("renal",
# "hepatic", "thyroid"): a word that names one organ only.
ORGAN_WORDS = {
    "kidney": r"\b(?:kidneys?|renal|nephr\w*|perinephric)\b",
    "liver": r"\b(?:liver|hepatic|hepato\w*)\b",
    "lung": r"\b(?:lungs?|pulmonary|perifissural)\b",
    "brain": r"\b(?:brain|cerebr\w*|intracranial|intra-axial|cerebell\w*|thalam\w*|callos\w*|brainstem)\b",
    "adrenal": r"\badrenals?\b", "pancreas": r"\bpancrea\w*", "spleen": r"\b(?:spleen|splenic)\b",
    "bone": r"\b(?:osseous|bones?|vertebra\w*|ribs?|sacrum|iliac bone)\b",
    "lymph node": r"\blymph\b", "breast": r"\bbreasts?\b", "thyroid": r"\bthyroid\w*\b",
    "prostate": r"\bprostat\w*", "bladder": r"\b(?:urinary )?bladder\b", "uterus": r"\b(?:uter(?!osacral)\w*|endometri(?!os|om|otic)\w*)\b",
    "ovary": r"\b(?:ovar\w*|adnex\w*)\b", "testis": r"\b(?:testi[sc]\w*|testes|scrot\w*)\b",
    # the major salivary glands: one organ of three paired glands ("parotidectomy bed" is the parotid's)
    "salivary gland": r"\b(?:salivary|parotid\w*|submandibular|sublingual)\b",
    # the pelvic ligaments and a pregnancy's own tissues lie in or on the uterus and are no part of it: a
    # uterosacral endometriosis nodule or a subchorionic haematoma is never a uterine lesion
    "pelvic ligament": r"\b(?:uterosacral|sacrouterine|broad|round|cardinal) ligaments?\b",
    "pregnancy": r"\b(?:subchorionic|retroplacental|placent\w*|gestational sac)\b",
}
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    """Report text split into sentences (section headers such as ``LIVER:`` stay attached).

    Parameters
    ----------
    text : str
        Report text; None or empty gives no sentences.

    Returns
    -------
    list of str
        The stripped, non-empty sentences, split after ``.``, ``;``, ``!`` or ``?`` and at line breaks;
        a header alone on its line ("RIGHT LOBE:") is put before each sentence it heads, until the
        next header, so "No nodules." under "LEFT LOBE:" denies the left lobe's only.
    """
    out, header = [], ""
    for piece in _SENTENCE.split(text or ""):
        piece = piece.strip()
        if not piece:
            continue
        if _HEADER_ONLY.match(piece):
            header = piece  # "RIGHT LOBE:" on its own line heads each sentence until the next header
            continue
        if _HEADER_INLINE.match(piece):
            header = ""  # "SPLEEN: Normal." starts a section of its own
        out.append(f"{header} {piece}" if header else piece)
    return out


_HEADER_ONLY = re.compile(r"^[A-Za-z][A-Za-z ,/&()-]{0,40}:$")
_HEADER_INLINE = re.compile(r"^[A-Za-z][A-Za-z ,/&()-]{0,40}:\s")

# Words of a question that name what is asked, not what it is about.
GENERIC = frozenset(
    "what which where how is are was were does do did have has the a an of in on at to and or with there this that "
    "these those it its be been being any show shows showing demonstrate demonstrates contain contains "
    "present presence seen visible evidence sign signs finding findings most likely diagnosis cause still "
    "type size dimension dimensions diameter length largest maximal maximum greatest long short axis "
    "dominant index larger biggest bigger smaller smallest "
    "measure measurement many number side lobe segment located location severity amount degree grade "
    "category li rads rad lr attenuation margins margin complication for from by as much centered "
    "centred mainly primarily predominantly epicenter within into adjacent".split())
# Nouns that name the object of a question ("Does the mass enhance?"): used only when nothing else is.
TOPIC = frozenset("mass masses lesion lesions nodule nodules observation observations tumor tumour".split())
# Stems of the nouns that name a focal lesion: a Yes to "Is there a tumour in the left temporal lobe?"
# needs a sentence naming a lesion, not only the place.
LESION_STEMS = frozenset({"nodul", "mass", "lesion", "observ", "cyst", "tumor", "metastas", "angiomyolipoma",
                          "hemangioma", "adenoma", "neoplasm", "hypodensit", "hypodensiti", "hyperdensit", "hyperdensiti", "carcinoma", "focu",
                          "foci", "glioma", "meningioma", "lymphoma"})
STOP = frozenset("a an the of in on at to and or with is are was were be been there this that it its "
                 "by as for from into".split())
# Same-meaning spellings read as one word (both sides of the comparison).
SAME = {"hepatic": "liver", "hepatocellular": "hepatocellular", "oedema": "edema", "tumour": "tumor",
        "haemorrhage": "hemorrhage", "metastasi": "metastas", "metastas": "metastas",
        # an organ part's adjective and its noun: "isthmic nodule" is the nodule in the isthmus
        "calculi": "calculus", "foci": "focus", "intratumoral": "tumor", "intratumoural": "tumor",
        "isthmic": "isthmus", "hilar": "hilum", "biliary": "bile", "resectability": "resectable", "pancreatic": "pancreas", "haemorrhagic": "hemorrhagic", "oedematous": "edematous",
        # a gland's apex and base by their adjectives: "the apical lesion" is the lesion at the apex
        "apical": "apex", "basal": "base",
        # a verb in -de and its noun in -sion are one word: "invaded" / "invasion", "eroded" / "erosion"
        "invas": "invad", "eros": "erod", "occlus": "occlud", "protrus": "protrud",
        # a noun in -ence and its adjective in -ent: "recurrence" / "recurrent"
        "recurrence": "recurrent",
        # the condition and its clot are one word: "portal vein thrombosis" is a thrombus in the portal vein
        "thrombosis": "thrombus", "thrombosed": "thrombus", "thrombi": "thrombus"}
# a numbered place (a Couinaud segment, a nodal level), arabic or roman
_PLACE_NUMBER = r"(?:vi{1,3}|iv|v|i{1,3}|[1-8])[ab]?"


_ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4", "v": "5", "vi": "6", "vii": "7", "viii": "8"}


def _each_numbered_place(m: re.Match) -> str:
    """'segments 5 and 8' / 'segment 7/8' as 'segment 5 and segment 8': each number names its own place."""
    return " and ".join(f"{m.group(1)} {n}" for n in re.findall(_PLACE_NUMBER, m.group(2)))


REWRITES = (  # abbreviations and one-word findings spelled out, so either wording is found
    # a list of numbered places under one plural head ("spans segments 5 and 8", "segments 7/8", "the
    # segment 5/6 junction") names each place: a lesion there lies in both, never in the first alone
    (rf"\b(segment|level)s?\s+((?:{_PLACE_NUMBER}\s*(?:,|/|and|or|&)\s*)+{_PLACE_NUMBER})\b", _each_numbered_place),
    # (vocabulary) a Couinaud segment in roman numerals is the arabic one ("segment vii" is segment 7), and a
    # sub-segment lies in its segment ("segment 4b" is in segment 4)
    (r"\bsegment (vi{1,3}|iv|v|i{1,3})([ab]?)\b", lambda m: f"segment {_ROMAN[m.group(1)]}{m.group(2)}"),
    (r"\bsegment ([1-8])([ab])\b(?! segment)", r"segment \1\2 segment \1"),
    (r"\bhcc\b", "hepatocellular carcinoma hcc"), (r"\brcc\b", "renal cell carcinoma rcc"),
    # a one-word finding keeps its own word first (a schema's "no splenomegaly" pattern still reads it)
    (r"\bgbm\b", "glioblastoma gbm"), (r"\bsplenomegaly\b", "splenomegaly enlarged spleen"),
    (r"\bhepatomegaly\b", "hepatomegaly enlarged liver"), (r"\bcardiomegaly\b", "cardiomegaly enlarged heart"),
    (r"\b(lymphadenopathy|adenopathy)\b", r"\1 enlarged lymph nodes"),
    (r"\bsteatosis\b", "steatosis fatty infiltration"), (r"\bcholelithiasis\b", "cholelithiasis gallstones"),
    (r"\bnon(?=enhanc|calcif|obstruct|occlus|dilat)", "non-"),
    # a patient's age is no old finding: "In this 24-year-old woman" (ConText reads "old" as historical)
    (r"\b(\d+)[- ]?(?:years?|yrs?|months?|weeks?|days?)[- ]old\b", r"aged \1"),
    # "in both lobes" / "both kidneys" is bilateral (never "both poles": two parts of one side)
    (r"\bboth (lobes|kidneys|lungs|breasts|ovaries|adnexa|sides|hemispheres|adrenals|adrenal glands|testes|parotids|"
     r"parotid glands)\b(?! bilateral)", r"both \1 bilateral"),
    # "both" of two parts of one organ ("both the superficial and deep lobes of the right parotid", "both
    # the upper and lower poles") is no second side: the parts stay, the side is the organ's
    (r"\bboth\s+((?:the\s+)?(?!left\b|right\b)[a-z-]+\s+and\s+(?!left\b|right\b)[a-z-]+\s+(?:lobes|poles|segments|"
     r"zones|portions|parts|regions|thirds|aspects|surfaces|walls|compartments|components)\b)", r"\1"),
    # units spelled out, and a decimal comma ("1,2 cm" is 12 mm, not 2 cm)
    (r"\bmillimet(?:er|re)s?\b", "mm"), (r"\bcentimet(?:er|re)s?\b", "cm"),
    (r"(?<![\d.,])(\d+),(\d+)(?=\s*-?\s*(?:mm|cm)\b)", r"\1.\2"),
)
FAVOURING = ("consistent with", "most consistent with", "compatible with", "in keeping with", "likely",
             "most likely", "probably", "probable", "represents", "represent", "diagnostic of",
             "characteristic of", "typical of", "favored", "favoured")
UNCERTAIN_BEFORE = re.compile(r"\b(?:differential|ddx|considerations? (?:include|includes)|versus|vs\.?|"
                              r"or)\s+(?:\w+\s+){0,3}$")
UNCERTAIN_AFTER = re.compile(r"^\W*(?:\w+\W+){0,2}?(?:versus|vs\b|or\b|(?:is|are) (?:also )?"
                             r"(?:possible|considered|a consideration|not excluded|less likely)|"
                             r"can not be (?:excluded|ruled out))")
SECONDARY = re.compile(r"\b(?:extend\w*|extension|spread\w*|involv\w*(?: also)?)\s+(?:in)?to\s+(?:the\s+)?$"
                       r"|\b(?:extend\w*|extension)\s+(?:in(?:to)?|to)\s+(?:the\s+)?(?:\w+\s+){0,2}$")
NORMAL = re.compile(r"\b(?:normal|unremarkable|clear|patent|preserved)\b")
# a whole study called normal ("Normal pelvic ultrasound.", "Unremarkable CT of the abdomen")
_STUDY_NORMAL = re.compile(r"\b(?:normal|unremarkable)\s+(?:[\w-]+\s+){0,2}(?:ultrasound|sonogra\w*|ct|mri|mr|"
                           r"study|examination|exam|scan|radiograph)\b")
SIDES = {"left": "left", "right": "right", "bilateral": "bilateral", "both": "bilateral"}
_SIDE = re.compile(r"\b(left|right|bilateral|bilaterally|both)\b")
_CLAUSE = re.compile(r"[;:]|,\s*(?=(?:the|a|an|and|which|with|one|another|no)\b)|\band (?=one|another)")
UNITS = {"mm": ("length", 1.0), "cm": ("length", 10.0), "hu": ("hu", 1.0)}
# "3.0 x 2.1 x 1.9 cm", "2.0 cm x 1.5 cm" (a unit after each dimension), "12-mm"
_MEASURE = re.compile(r"((?:\d+(?:\.\d+)?\s*(?:(?:mm|cm)\s*)?(?:x|×|by)\s*)*\d+(?:\.\d+)?)\s*-?\s*(mm|cm|hu)\b")
NUMBER_WORDS = {"one": 1, "single": 1, "solitary": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_SUFFIXES = ("ational", "ations", "ation", "ating", "ement", "ments", "ment", "ions", "ion", "ated", "ates",
             "ary", "ate", "ing", "ial", "ed", "es", "ly", "ar", "um", "al", "s", "e", "y")


_RECOMMENDATION = re.compile(r"^\W*(?:(?:[a-z]+\s*){1,3}:\s*)?(?:\d+\.\s*)?(?:recommend\w*|suggest\w*|consider\w*|advise\w*|follow[- ]?up|"
                             r"further (?:evaluation|imaging|assessment)|correlat\w*|dedicated)\b")


# a management rule stated for a class of lesions ("a haemorrhagic cyst of 5 cm or less needs no
# follow-up", "nodules of 6 mm or less require no follow-up"): a threshold with what to do about it
_GUIDELINE_ACTION = re.compile(r"\b(?:follow[- ]?up|surveillance|further (?:imaging|evaluation|assessment)|no further|"
                               r"(?:is|are) recommended|(?:need|needs|needed|require|requires|required|warrant|warrants)\b)")


def is_recommendation(sentence: str) -> bool:
    """Whether a sentence is a recommendation ("Recommend renal mass protocol CT."): it names
    findings only as what to look for, so it asserts nothing about them. A guideline sentence (a
    threshold length, "5 cm or less", with what to do: "... no follow-up is needed") is one too:
    its lesion is a class, not the patient's.

    Parameters
    ----------
    sentence : str
        One normalised sentence.

    Returns
    -------
    bool
        True when the sentence opens with recommend / suggest / consider / advise / follow-up /
        further evaluation / correlate / dedicated, or states a threshold with an action.
    """
    if _RECOMMENDATION.match(sentence):
        return True
    return (any(k == "threshold" for k, _, _ in measurements(sentence))
            and _GUIDELINE_ACTION.search(sentence) is not None)


def normalize_sentence(text: str) -> str:
    """A sentence as the check reads it: the shared normalisation, then ``REWRITES``.

    Parameters
    ----------
    text : str
        A sentence or question.

    Returns
    -------
    str
        The text after :func:`medscope.answers.matching.normalize` with abbreviations and one-word
        findings spelled out.
    """
    text = normalize(text)
    for pat, rep in REWRITES:
        text = re.sub(pat, rep, text)
    return text


def stem(word: str) -> str:
    """A crude suffix stripper ("enhancing", "enhancement" -> "enhanc"); stems keep 4 letters.

    Parameters
    ----------
    word : str
        One lower-case word.

    Returns
    -------
    str
        The word with ``SAME`` spellings unified and at most one suffix removed.
    """
    word = SAME.get(word, word)
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            word = word[: -len(suf)]
            break
    return SAME.get(word, word)


# One-word findings that REWRITES spell out: a question is read by the spelled-out words alone
ONE_WORD_FINDINGS = frozenset(stem(w) for w in ("splenomegaly", "hepatomegaly", "cardiomegaly", "lymphadenopathy",
                                                 "adenopathy"))


def tokens(text: str) -> list[tuple[str, int, int]]:
    """(stem, start, end) of every word or number of normalised text, stopwords dropped.

    Parameters
    ----------
    text : str
        Normalised text (:func:`normalize_sentence`).

    Returns
    -------
    list of tuple of (str, int, int)
        ``(stem, start, end)`` of each word or number, character offsets into ``text``.
    """
    out = []
    for m in re.finditer(r"[a-z]+|\d+(?:\.\d+)?[a-z]?", text):
        w = m.group(0)
        if w not in STOP:
            out.append((stem(w), m.start(), m.end()))
    return out


def subject_stems(question: str) -> set[str]:
    """What a question is about: its content words minus ``GENERIC``; topic nouns only when alone.

    Parameters
    ----------
    question : str
        The question text.

    Returns
    -------
    set of str
        Stems of the question's content words; the ``TOPIC`` nouns only when nothing else remains.
    """
    words = {s for s, _, _ in tokens(normalize_sentence(question)) if s not in {stem(g) for g in GENERIC}}
    words -= ONE_WORD_FINDINGS  # asked by their spelled-out words, which every wording of the report has
    topic = {stem(t) for t in TOPIC}
    return (words - topic) or words


_HEDGED_DENIAL_BEFORE = re.compile(r"\b(?:unlikely|doubt\w*|probably not|not likely|less likely|improbable)\b")
_HEDGED_DENIAL_AFTER = re.compile(r"^\W*(?:[\w-]+\W+){0,3}?(?:(?:is|are|seems?|appears?)\s+)?"
                                  r"(?:unlikely|doubtful|less likely|improbable|probably not)\b")
# a denial graded by certainty ("without definite extraprostatic extension", "no convincing
# invasion", "no frank tumour"): the report leaves the thing possible, so it denies nothing
CERTAINTY_GRADED_DENIAL = re.compile(r"\b(?:no|without)\s+(?:(?:a|an|any)\s+)?(?:definite(?:ly)?|definitive|convincing|"
                                     r"unequivocal|frank|overt|obvious|clear(?:-cut)?)\s+(?:[\w-]+\s+){0,3}$")
# a hedge written after its finding at the end of the clause ("; extraprostatic extension possible.",
# "invasion suspected", "EPE equivocal"): "mass, likely a cyst" hedges the cyst, not the mass
HEDGE_AFTER_CLAUSE = re.compile(r"^(?:\s+(?!(?:is|are|was|remains?|also|still)\b)[\w-]+){0,5}?\s*(?:(?:is|are|was|remains?)\s+)?(?:(?:also|still)\s+)?(?:possible|possibly|probable|"
                                r"suspected|questionable|equivocal|indeterminate|likely|not excluded|uncertain)\s*(?:[.;,)]|$)")


# words that grade a denial without narrowing what it denies ("no significant extension")
_DENIAL_GRADES = {"signific", "definit", "definite", "obvious", "apprecia", "apprec", "discret", "evident", "gross",
                  "frank", "measur", "detect", "demonstr", "visibl", "residu", "focal"}


_DENIAL_WORDS = {"no", "not", "nor", "without", "or", "and", "any", "the", "a", "an", "of", "for", "with", "free",
                 "negat", "absent", "absenc"}


# an imaging artifact that says what a finding is ("echogenic foci with comet-tail artifact" are
# inspissated colloid, not punctate echogenic foci / microcalcifications; ring-down is gas)
ARTIFACT_AFTER = re.compile(r"^[^.;]{0,40}?\b(?:comet[- ]tail|ring[- ]down|reverberation)\b")


# a fixed technical phrase whose words mean something else than the schema term they contain: an
# acoustic phenomenon ("posterior acoustic enhancement", "increased through-transmission") is no
# enhancement after contrast, a sequence or study name ("fat-suppressed T2", "contrast-enhanced
# MRI") says nothing of the lesion's fat or enhancement, "chemical shift" no shift, and the study's
# technique ("MRI of the arm with and without contrast") denies no enhancement
TECHNICAL_PHRASE = re.compile(r"\b(?:(?:posterior\s+)?acoustic\s+(?:enhancement|shadow\w*)|(?:increased\s+)?through[- ]?"
                              r"transmission(?:\s+enhancement)?|edge\s+enhancement|(?:fat|water)[- ]?(?:suppress\w*|"
                              r"saturat\w*|sat)\b|chemical[- ]shift|contrast[- ]enhanced\s+(?:mri?|ct|cect|imaging|"
                              r"scans?|stud(?:y|ies)|exam\w*|sequences?|images?|t1\w*|series|ultrasound|us)|"
                              r"(?:with\s+and\s+)?without\s+(?:(?:iv|intravenous|gadolinium)\s+)?contrast|non-?contrast|"
                              r"pre-?\s*and\s+post-?\s*contrast)")


def in_technical_phrase(text: str, a: int, b: int) -> bool:
    """Whether ``text[a:b]`` (a schema pattern's match) lies inside a :data:`TECHNICAL_PHRASE`, so
    that it mentions no field ("posterior acoustic enhancement" is no contrast enhancement).

    Parameters
    ----------
    text : str
        A normalised sentence.
    a, b : int
        The match's span in ``text``.

    Returns
    -------
    bool
        True when the span overlaps a technical phrase.
    """
    return any(m.start() <= a and b <= m.end() or m.start() < b <= m.end() or m.start() <= a < m.end()
               for m in TECHNICAL_PHRASE.finditer(text))


# a descriptor that is one part of a mixture: "mixed cystic and solid", "predominantly solid", "partly cystic"
_MIXED_BEFORE = re.compile(r"\b(?:mixed\s+(?:[a-z-]+\s+(?:and|or|/)\s+)?|(?:partially|partly|predominantly|mostly|"
                           r"largely|part)\s+)$")


def _spread(sent: str, spans: list[tuple[int, int]]) -> str:
    """``"range"`` / ``"mixed"`` when an asked descriptor stands in a range of descriptors or as one
    part of a mixture (neither settles a Yes to it alone), else ``""``."""
    for a, b in spans:
        if _RANGE_BEFORE.search(sent[:a]) or _RANGE_AFTER.match(sent[b:]):
            return "range"
        if _MIXED_BEFORE.search(sent[:a]):
            return "mixed"
    return ""


def _other_kind_of_head(sent: str, head_phrase: list[str]) -> bool:
    """Whether a sentence names an asked word only as another kind of it: "No substernal
    extension" says nothing of extrathyroidal extension, "No pancreatic ductal dilatation" and "The
    main pancreatic duct is normal" nothing of biliary ductal dilatation (the word before an asked
    word is a modifier the question does not have, and the question's own modifiers of that word
    are not named)."""
    if len(head_phrase) < 2:
        return False
    toks = tokens(sent)
    said = {t for t, _, _ in toks}
    for i, (t, a, _) in enumerate(toks):
        if t not in head_phrase[1:] or i == 0:
            continue
        if said & set(head_phrase[:head_phrase.index(t)]):
            continue  # one of the asked modifiers is named ("no suspicious cervical lymph nodes")
        prev, pa, pb = toks[i - 1]
        if (sent[pb:a].strip() or prev in head_phrase or prev in LESION_STEMS or prev in _DENIAL_WORDS
                or prev in ONE_WORD_FINDINGS):  # "lymphadenopathy enlarged lymph nodes" is one finding spelled out
            continue
        if not any(prev.startswith(g) or g.startswith(prev) for g in _DENIAL_GRADES | _PLAIN_MODIFIERS):
            return True
    return False


# words before a structure's name that say which one of it without making it another structure
_PLAIN_MODIFIERS = {"main", "common", "whole", "entir", "entire", "overall", "visualiz", "visualis"}


# words between a named thing and "normal" that still leave the normal word about that thing
_NORMAL_FILLER = re.compile(r"^(?:\d+(?:\.\d+)?|mm|cm|x|appear\w*|measur\w*|remain\w*|[a-z]+ly|"
                            r"also|again|now|size|normal|gland|organ)$")


def _head_undenied(head_phrase: list[str], sent: str) -> bool:
    """Whether a sentence names the question's head (its stem, or a node for lymphadenopathy) with no denial."""
    if not head_phrase or re.search(r"\b(?:no|not|without|neither|nor)\b", sent):
        return False
    head = head_phrase[-1]
    words = {t[0] for t in tokens(sent)}
    return head in words or (head.startswith("lymphaden") and bool(re.search(r"\b(?:lymph|nodes?|nodal)\b", sent)))


# vocabulary: the nodal regions a staging question joins ("pelvic or para-aortic lymphadenopathy")
_NODAL_REGION = re.compile(r"pelvic|para-?aortic|retroperitoneal|abdominal|inguinal|iliac|mediastinal|hilar|axillary|"
                           r"cervical|supraclavicular|mesenteric|obturator")


def _one_alternative_denied(q: str, sent: str) -> bool:
    """Whether a denial names one of the two nodal regions a question joins by "or" before its noun
    ("pelvic or para-aortic lymphadenopathy") and not the other."""
    alt = re.search(r"\b([\w-]+) or ([\w-]+) [\w-]+", q)
    if not alt or not all(_NODAL_REGION.fullmatch(w) for w in alt.groups()):
        return False
    said = [bool(re.search(rf"\b{re.escape(w)}\b", sent)) for w in alt.groups()]
    return said.count(True) == 1


def one_region_denied(q: str, sent: str, sents: list[str]) -> bool:
    """Whether a denial answers only one of the two nodal regions a question joins by "or" while the
    report describes a node elsewhere.

    Parameters
    ----------
    q : str
        The normalised question ("is there pelvic or para-aortic lymphadenopathy?").
    sent : str
        The normalised denial ("no para-aortic lymphadenopathy.").
    sents : list of str
        The report's normalised sentences.

    Returns
    -------
    bool
        True when ``sent`` names one region of the question's "X or Y" (:data:`_NODAL_REGION`) and not
        the other, and another sentence names the question's head (a node, for lymphadenopathy) with no
        denial; "No para-aortic lymphadenopathy" beside an enlarged external iliac node is then no No.
    """
    core = subject_stems(q) - {stem(m.group(0)) for pat in ORGAN_WORDS.values() for m in re.finditer(pat, q)}
    head_phrase = _head_phrase(q, core)
    return _one_alternative_denied(q, sent) and any(s2 != sent and _head_undenied(head_phrase, s2) for s2 in sents)


def _normal_of_other(sent: str, hits: list[tuple[str, int, int]]) -> bool:
    """Whether the normal word of a sentence describes something named after the asked words:
    "Main pancreatic duct normal" (the duct, not the pancreas), "The residual pancreatic head and
    neck are unremarkable" (two parts, not the gland); "Spleen measures 11 cm, normal" stays the spleen's.
    "The pancreas is otherwise unremarkable" clears it except for what the report described, which
    may be the asked thing: it settles nothing."""
    m = NORMAL.search(sent)
    if m and re.search(r"\botherwise\s+(?:\w+\s+)?$", sent[:m.start()]):
        return True
    before = [b for _, _, b in hits if m and b <= m.start()]
    if not before:
        return False
    between = [t for t, _, _ in tokens(sent[max(before):m.start()])]
    generic = {stem(g) for g in GENERIC}
    return any(t not in generic and not _NORMAL_FILLER.match(t) for t in between)


def _denial_of_other_organ(sent: str, q: str, head_phrase: list[str], named: set[str]) -> bool:
    """Whether a denial that leaves one of the asked modifiers unnamed stands in a sentence about an
    organ the question does not name ("The pancreas is otherwise unremarkable, with no ductal
    dilatation" denies the pancreatic duct's dilatation, not the bile ducts')."""
    if len(head_phrase) < 2 or set(head_phrase[:-1]) <= named:
        return False
    asked = {organ for organ, pat in ORGAN_WORDS.items() if re.search(pat, q)}
    return any(re.search(pat, sent) for organ, pat in ORGAN_WORDS.items() if organ not in asked)


# addition: organs that come in pairs, one per side: a lesion's side is then its organ's side
# (medscope.benchgen.findings reads it from here)
PAIRED_ORGANS = frozenset({"kidney", "lung", "breast", "ovary", "testis", "adrenal", "salivary gland"})


# addition: one of a pair of organs named with its side ("the right testis", "the left kidney", "left
# and right ovaries" is both); the organ words are the project's own (grounding.ORGAN_WORDS)
_PAIRED_SUBJECT = re.compile(r"\b(left|right)(?:\s+and\s+(left|right))?\s+(?:[a-z-]+\s+)?(?:"
                             + "|".join(ORGAN_WORDS[o] for o in sorted(PAIRED_ORGANS)) + ")")
_BOTH_SIDES = re.compile(r"\b(?:both|either|neither|bilateral\w*|each)\b")


def paired_subject_side(before: str) -> set[str]:
    """The side of the one-of-a-pair organ a sentence is about before a denial: "The right testis is
    normal, with no focal lesion" denies a lesion of the right testis only, so a side-free field
    ("Is there a testicular lesion?") is left to the other one. The nearest named organ before the
    denial decides; "right and left testes" names both; "both" / "either" before it clears the pair.

    Parameters
    ----------
    before : str
        The normalised sentence up to the denying word.

    Returns
    -------
    set of str
        ``{"left"}``, ``{"right"}``, ``{"left", "right"}`` or empty (no side-named paired organ).
    """
    hits = list(_PAIRED_SUBJECT.finditer(before))
    if not hits or _BOTH_SIDES.search(before[hits[-1].start():]):
        return set()
    return {g for g in hits[-1].groups() if g}


# a structure named by one of its kind: "submandibular glands", "deep lobe", "transition zone"
_MEMBER = re.compile(r"\b([a-z][a-z-]+)\s+(gland|lobe|pole|duct|zone|segment)s?\b")
_NOT_A_QUALIFIER = frozenset("the a an both either each all any left right bilateral of and or its their other "
                             "remaining residual same whole entire this that these those".split())


def named_members(sents: list[str]) -> dict[str, set[str]]:
    """The members of each family of structures a report names: {head noun: qualifiers}, e.g.
    {"gland": {"parotid", "submandibular"}} for a report that names both glands.

    Parameters
    ----------
    sents : list of str
        The report's sentences, normalised.

    Returns
    -------
    dict of str to set of str
        For each head noun (gland, lobe, pole, duct, zone, segment) the words that name one of its
        kind just before it (never a side, an article or "both").
    """
    out: dict[str, set[str]] = {}
    for s in sents:
        for m in _MEMBER.finditer(s):
            if m.group(1) not in _NOT_A_QUALIFIER:
                out.setdefault(m.group(2), set()).add(m.group(1))
    return out


def member_subject(before: str, asked: set[str], members: dict[str, set[str]]) -> str:
    """The one member of a family of structures a sentence is about before a denial, where the report
    names others of that family and the question names none of them: "Both submandibular glands are
    normal with no calculus" (the parotid glands named elsewhere) denies a calculus of the
    submandibular glands only, so "Is there a salivary calculus?" is left to the others.

    Parameters
    ----------
    before : str
        The normalised sentence up to the denying word.
    asked : set of str
        The words of the question.
    members : dict of str to set of str
        The report's families (:func:`named_members`).

    Returns
    -------
    str
        The member ("submandibular gland"); empty when the subject names none, the report names no
        other of its family, the question names one of the family, or the question does not name the
        organ the member is of.
    """
    asked_text = " ".join(sorted(asked))
    for m in _MEMBER.finditer(before):
        family = members.get(m.group(2), set())
        if m.group(1) in _NOT_A_QUALIFIER or len(family) < 2 or family & asked:
            continue
        # the question asks of the organ the member is one of ("salivary" for the submandibular
        # gland); a question about something inside it ("the wedge-shaped area" of the peripheral
        # zone) is not narrowed by it
        organs = [o for o, pat in ORGAN_WORDS.items() if re.search(pat, m.group(0))]
        if organs and re.search(ORGAN_WORDS[organs[0]], asked_text):
            return f"{m.group(1)} {m.group(2)}"
    return ""


# a lesion named as an operation's indication ("nephrectomy for renal cell carcinoma") is gone
OPERATED_FOR = re.compile(r"\b(?:\w+ectomy|resection|ablation|whipple(?: procedure)?|excision)\b[^.;]{0,60}?\bfor\s+"
                          r"(?:[\w-]+\s+){0,4}$")


# addition: words that say which structure a shared noun is ("bile duct" / "pancreatic duct", "portal vein" /
# "splenic vein", "renal artery" / "hepatic artery")
_STRUCTURE_WORDS = ("pancreatic", "bile", "biliary", "cystic", "hepatic", "portal", "splenic", "renal", "mesenteric",
                    "iliac", "carotid", "vertebral", "femoral", "subclavian", "jugular", "gastric", "coeliac", "celiac",
                    "ureteric", "urethral", "thyroid", "adrenal", "ovarian", "testicular", "gonadal", "pulmonary")


# addition: words that narrow a denial to one kind of lesion ("no obstructing lesion", "no solid mass")
# (a part of the lesion too: "no internal enhancement" beside an enhancing wall leaves the wall's unsaid)
DENIED_KIND = re.compile(r"\b(?:obstructing|solid|cystic|enhancing|calcified|suspicious|dominant|large|enlarging|"
                         r"hypervascular|hypoattenuating|hyperenhancing|mural|internal|central|peripheral|septal|"
                         r"intralesional|nodular)\b")


# a part of a lesion a denial can be narrowed to ("no internal enhancement", "no central flow")
PART_DENIED = re.compile(r"\b(?:internal|central|peripheral|septal|intralesional|mural)\b")


def _denial_of_one_kind(sent: str, a: int, q: str) -> bool:
    """Whether a denied mention at ``a`` is narrowed to one kind the question does not ask
    ("without an obstructing calculus" leaves a non-obstructing one unsaid)."""
    neg = list(re.finditer(r"\b(?:no|without|not|absence of|free of)\b", sent[:a]))
    if not neg:
        return False
    # "No suspicious cervical lymph nodes" denies abnormal nodes, i.e. lymphadenopathy itself
    return bool(set(DENIED_KIND.findall(sent[neg[-1].end():a])) - set(re.findall(r"[a-z]+", q)) - {"suspicious"})


def _other_structure_named(q: str, sent: str, head_phrase: list[str]) -> bool:
    """Whether ``sent`` names an asked noun only as another structure's: the word before it says a
    different structure in the question and in the sentence ("main pancreatic duct" asked, "common
    bile duct" said; "splenic vein" asked, "portal vein" said)."""
    words = {t for w in _STRUCTURE_WORDS for t, _, _ in tokens(w)}
    q_toks, s_toks = [t for t, _, _ in tokens(q)], [t for t, _, _ in tokens(sent)]
    for noun in head_phrase:
        if noun not in q_toks or noun not in s_toks:
            continue
        qi, si = q_toks.index(noun), s_toks.index(noun)
        asked, said = (q_toks[qi - 1] if qi else None), (s_toks[si - 1] if si else None)
        if asked in words and said in words and asked != said and asked not in s_toks:
            return True
    return False


# addition: a condition named as a risk ("a risk factor for X", "at increased risk of X", "predisposes
# to X", "screening for X") is what might come, never a finding of this study
RISK_OF = re.compile(r"\b(?:risk(?:\s+factors?)?\s+(?:for|of)|at\s+(?:[\w-]+\s+)?risk\s+(?:for|of)|predispos\w*\s+"
                     r"(?:to|for)|screening\s+for)\s+(?:[\w-]+\s+){0,4}$")


# the favouring hedge written after its diagnosis: "Warthin tumours are favoured", "X is the favoured diagnosis"
_FAVOURED_AFTER = re.compile(r"^\W*(?:(?!(?:is|are|was|were|remains?|and|but|with)\b)[\w-]+\s+){0,3}?(?:(?:is|are|was|were|remains?)\s+)?(?:(?:also|still|the)\s+)?(?:favou?red|"
                             r"preferred)\b")


def _mention_status(sent: str, start: int, end: int) -> str:
    """ConText status, with the hedge split into ``favoured`` (signed as a diagnosis) and
    ``possible``, and differentials / "X versus Y" / "X is also possible" read as ``possible``."""
    before, after = sent[:start], sent[end:]
    if re.search(r"\bnon[- ]$", before):
        return "negated"  # "non-enhancing" denies only its own word, so it is read here, not as a trigger
    st = status(sent, start, end)
    if st == "negated" and CERTAINTY_GRADED_DENIAL.search(before):
        return "possible"
    if st == "affirmed" and HEDGE_AFTER_CLAUSE.match(after):
        return "possible"
    if st == "affirmed" and re.match(r"^[^.;]{0,80}?\b(?:has|have)\s+(?:since\s+|now\s+|completely\s+)?recanali[sz]ed\b", after):
        # "the previously described thrombus in the right portal vein has recanalised": the vessel is open
        # again, the clot gone, as "has resolved" says of a lesion
        return "negated"
    if st == "affirmed" and re.search(r"\bequivocal\s+(?:[\w-]+\s+)?$", before):
        # "equivocal washout": a feature the reader could not call (LI-RADS counts an equivocal feature as
        # absent), so the report neither states nor denies it
        return "possible"
    if st == "negated" and (_HEDGED_DENIAL_BEFORE.search(forward_scope(before)) or _HEDGED_DENIAL_AFTER.match(after)):
        # "Haemorrhagic transformation is unlikely": a reply's hedged denial, but no report states
        # the absence by it, so it settles nothing
        return "possible"
    attendant = re.search(r",\s*with\s+((?:[\w-]+\s+){0,4})$", before)
    if st == "negated" and attendant and not re.search(r"\b(?:no|not|without|neither|nor|none)\b", attendant.group(1)):
        return "affirmed"  # "without an obstructing lesion, with mild atrophy": ", with" opens an attendant finding
    if st == "negated":
        return st  # "no X or Y" is a denied list, not a differential
    if st == "affirmed" and RISK_OF.search(before):
        return "hypothetical"  # "a risk factor for germ cell neoplasia in situ": a risk, not a finding
    if st == "affirmed" and OPERATED_FOR.search(before):
        return "historical"  # "distal pancreatectomy for mucinous cystic neoplasm": the operation removed it
    if UNCERTAIN_BEFORE.search(forward_scope(before)) or UNCERTAIN_AFTER.search(after):
        return "possible"
    if st == "affirmed" and (re.search(r"\b(?:junction|interface|boundary) (?:of|between)\s+[^.;]{0,60}$", before)
                             or re.match(r"^\s*junction\b", after)
                             and re.search(r"(?:\band\b|/)\s*(?:the\s+)?(?:[\w-]+\s+){0,4}$", before)):
        return "possible"  # "at the junction of the transition zone and the AFMS": two places, neither alone
    if st == "affirmed" and re.search(r"\b(?:(?:distinct|different|separate|distinguished) from|unlike|in contrast to|"
                                      r"as opposed to)\s+(?:[\w-]+\s+){0,4}$", before):
        return "possible"  # "distinct from the normal central zone": a contrast, said of something else
    if st == "affirmed" and re.search(r"\b(?:upgraded|downgraded|changed|revised|increased|decreased|reduced|up|down)"
                                      r"\s+from\s+(?:the\s+)?(?:[\w-]+\s+){0,2}$", before):
        return "historical"  # "PI-RADS 4, upgraded from PI-RADS 3": the prior value, not the current one
    if st == "affirmed" and (re.search(r"\bfavou?r(?:s|ing|ed)?\s+(?:[\w-]+\s+){0,3}$", before)
                             or re.search(r"\b(?:typical|characteristic|diagnostic)\s+of\s+(?:(?:a|an|the)\s+)?"
                                          r"(?:[\w-]+\s+){0,2}$", before)
                             or _FAVOURED_AFTER.match(after)):
        # "the low PSA density favours BPH as the cause", "Warthin tumours are favoured": a favoured
        # diagnosis, signed only as a diagnosis
        return "favoured"
    if st != "possible":
        return st
    hedge = nearest_hedge(before)
    if hedge in FAVOURING and attendant and not re.search(rf"\b{re.escape(hedge)}\b", attendant.group(1)):
        # "nodule ... consistent with local recurrence, with perineural spread along the facial nerve":
        # ", with" opens an attendant finding the report states; the favouring hedge names the nodule's diagnosis
        return "affirmed"
    if hedge == "suggestive of" and re.search(r"\bmost\s+suggestive of\s+(?:[\w-]+\s+){0,5}$", before):
        return "favoured"  # "most suggestive of X" signs X as the diagnosis, as "most consistent with" does
    return "favoured" if hedge in FAVOURING else "possible"


def nearest_hedge(before: str) -> str | None:
    """The hedge trigger ("likely", "suspicious for", ...) nearest before a mention, in scope.

    Parameters
    ----------
    before : str
        The sentence up to the mention.

    Returns
    -------
    str or None
        The hedge trigger ending nearest the mention (the longer on a tie); None when no hedge is in
        scope.
    """
    scope = forward_scope(before)
    hedges = [(m.end(), p) for p in FORWARD["possible"] for m in re.finditer(rf"\b{re.escape(p)}\b", scope)]
    return max(hedges, key=lambda h: (h[0], len(h[1])))[1] if hedges else None


def _best_sentences(sents: list[str], subject: set[str]) -> tuple[list[tuple[str, list]], int]:
    """Sentences with the largest overlap with the subject, each with its matching tokens; on a
    tie, those that also name a topic noun ("No enhancement of the adjacent dura" is not about
    whether the mass enhances)."""
    topic = {stem(t) for t in TOPIC}
    organ_adjectives = {stem(m.group(0)) for pat in ORGAN_WORDS.values() for s in sents for m in re.finditer(pat, s)}
    scored = []
    for s in sents:
        toks = tokens(s)
        hits = [t for t in toks if t[0] in subject]
        n = len({t[0] for t in hits})
        # on a tie, the sentence naming the asked thing beats one naming only its organ: "On which side
        # is the renal calculus?" is answered by "left lower pole calculus", not by "renal cysts"
        own = len({t[0] for t in hits} - organ_adjectives)
        scored.append(((n, own, bool(n) and any(t[0] in topic for t in toks)), s, hits))
    best = max((k for k, _, _ in scored), default=(0, 0, False))
    return [(s, hits) for k, s, hits in scored if k == best and k[0] > 0], best[0]


def _verdict(statuses: list[str]) -> str:
    if "negated" in statuses:
        return "negated"
    if "possible" in statuses or "hypothetical" in statuses:
        return "possible"
    if statuses and set(statuses) == {"historical"}:
        return "historical"  # "Status post nephrectomy for renal cell carcinoma": no carcinoma now
    return "favoured" if "favoured" in statuses else "affirmed" if statuses else "absent"


_QUESTION_SIDE = re.compile(r"\b(left|right)\b")
# "Has / Did X resolve / change / grow?": the verb is the question's predicate ("Is there an enlarged
# spleen?" asks for presence, not change)
_RESOLUTION_Q = re.compile(r"^\W*(?:has|have|did)\b.*\b(resolv\w*|disappear\w*|clear(?:ed)?|gone|regress\w*)\b")
_CHANGE_Q = re.compile(r"^\W*(?:has|have|did)\b.*\b(chang\w*|grow\w*|grown|increas\w*|decreas\w*|"
                       r"enlarg\w*|progress\w*|shrunk|shrink\w*|smaller|larger|bigger)\b")
_RESOLVED = re.compile(r"\b(?:resolved|resolution|no longer|disappeared|cleared|interval clearance)\b")
_NOT_RESOLVED = re.compile(r"\b(?:not|never|yet to)\s+(?:\w+\s+)?(?:resolved|disappeared|cleared)\b|\bunresolved\b|"
                           r"\b(?:partial(?:ly)?|incomplete(?:ly)?|near(?:ly)?|almost)\s+(?:\w+\s+)?(?:resol\w*|clear\w*)|"
                           r"\bno (?:\w+ )?resolution\b|\bpersist\w*|\bstill\b")
_SINCE_PRIOR = re.compile(r"\b(?:since|from|compared (?:with|to)|relative to|on)\s+(?:the\s+)?(?:prior|previous|last|"
                          r"earlier|most recent|baseline)\s+(?:\w+\s+)?(?:study|exam\w*|scan|imaging|ultrasound|ct|mri)\b")
# (a difference the report calls "within measurement variability / error" is no change: radiologists write it
# of two sizes 1 mm apart, which measure the same lesion the same)
_STABLE = re.compile(r"\b(?:stable|unchanged|no (?:significant |interval )?change|not (?:significantly )?changed|"
                     r"similar in size|without (?:significant |interval )?change|"
                     r"within (?:the (?:limits|range) of )?(?:inter-?observer |measurement )(?:variability|variation|error))\b")
_GREW = re.compile(r"\b(?:increas\w*|enlarg\w*|grow\w*|grown|larger|progress\w*|interval growth)\b")
_SHRANK = re.compile(r"\b(?:decreas\w*|smaller|shrunk|regress\w*|reduc\w*)\b")
_PRIOR_LENGTH = re.compile(r"\b(?:previously|prior|formerly|was|from|compared (?:with|to))\W+(?:\w+\W+){0,2}$")
# a length dated to an earlier study: "It measured 4.1 cm in 2022", "1.2 cm on the prior CT"
_DATED_LENGTH = re.compile(r"^(?:[\d.\s]|x)*(?:mm|cm)\W*(?:in|on|at|dated)\s+(?:(?:the\s+)?(?:prior|previous|earlier|last|baseline)|"
                           r"(?:\d{1,2}(?:st|nd|rd|th)?\s+)?(?:[a-z]+\.?\s+)?(?:\d{1,2}(?:st|nd|rd|th)?,?\s+)?(?:19|20)\d\d|"
                           r"\d{1,2}[/.-]\d{1,2}[/.-](?:19|20)?\d\d)\b")
# a length the lesion had before a treatment the sentence dates in the past: "abscess (6.3 cm) drained 8
# weeks ago", "a 2.2 cm tumour, ablated in March": the size before treatment is a prior size
_BEFORE_TREATMENT = re.compile(r"^(?:[\d.\s]|x)*(?:mm|cm)\W*(?:[a-z]+\s+){0,2}?(?:drained|treated|ablated|resected|excised|"
                               r"embolised|embolized|irradiated|operated|removed)\s+(?:[\w-]+\s+){0,3}?(?:ago|in\s+"
                               r"(?:[a-z]+\s+)?(?:19|20)\d\d|previously|before)\b")
# "radiofrequency ablation of a 2.2 cm segment 6 HCC", "resection of a 4 cm mass": the size it was treated at
_TREATMENT_OF_BEFORE = re.compile(r"\b(?:ablation|resection|excision|emboli[sz]ation|chemoemboli[sz]ation|drainage|"
                                  r"radiotherapy|treatment)\s+of\s+(?:a|an|the|one|his|her)\s+$")
# addition: a clause set in an earlier study: a comparison line ("Comparison: 3 March 2026, when the
# lesion measured 7 mm"), "on the 2025 study the right lesion measured 12 mm", "when it measured 7 mm";
# its lengths are prior ones unless "now" / "currently" comes between
_EARLIER_STUDY = re.compile(r"^\W*(?:comparison|prior(?: study| imaging)?|previous(?: study| imaging)?)\s*:|"
                            r"\b(?:on|at|in)\s+the\s+(?:prior|previous|earlier|last|baseline|most recent|"
                            r"(?:[a-z]+\s+)?(?:19|20)\d\d)\s+(?:[\w-]+\s+)?(?:study|exam\w*|scan|imaging|ultrasound|"
                            r"us|mri?|ct)\b|\bwhen\s+(?:it|they|the\s[^.;]{0,60}?)\s+measured\b")
# "the 6.8 cm previously reported", "a 2 cm lesion described in 2023": a size the report attributes
# to an earlier report or study
_REPORTED_BEFORE = re.compile(r"^(?:[\d.\s]|x)*(?:mm|cm)\W*(?:(?:lesion|mass|nodule|cyst|lipoma|tumou?r)\s+)?(?:as\s+)?"
                              r"(?:previously|formerly|earlier|originally)\s+(?:reported|described|measured|seen|noted|"
                              r"documented)\b|^(?:[\d.\s]|x)*(?:mm|cm)\W*(?:reported|described|measured|seen|noted)\s+"
                              r"(?:previously|before|earlier|on\s+the\s+(?:prior|previous|earlier))\b")
_NOW = re.compile(r"\b(?:now|currently|today|at present|presently|this study|the current (?:study|exam\w*|scan))\b")


def prior_length(s: str, at: int) -> bool:
    """Whether the length starting at ``at`` in the normalised sentence ``s`` is an earlier study's:
    after "previously" / "prior" / "from", dated ("4.1 cm in 2022"), or in a clause set in an earlier
    study ("Comparison: 3 March 2026, when the lesion measured 7 mm"; "On the 2025 study the right
    lesion measured 12 mm") with no "now" / "currently" between.

    Parameters
    ----------
    s : str
        A normalised sentence.
    at : int
        Where the length starts in ``s``.

    Returns
    -------
    bool
        True for a prior length, never the current size.
    """
    if (_PRIOR_LENGTH.search(s[:at]) or _DATED_LENGTH.match(s[at:]) or _REPORTED_BEFORE.match(s[at:])
            or _BEFORE_TREATMENT.match(s[at:]) or _TREATMENT_OF_BEFORE.search(s[:at])):
        return True
    earlier = list(_EARLIER_STUDY.finditer(s[:at]))
    return bool(earlier) and not _NOW.search(s[earlier[-1].end():at])


# a question asking for an earlier size: "on the prior study", "previously", "in 2022"
ASKS_PRIOR = re.compile(r"\b(?:prior|previous|previously|earlier|baseline|formerly)\b|\bin\s+(?:[a-z]+\s+)?(?:19|20)\d\d\b"
                        # "before ablation": the size the lesion was treated at
                        r"|\bbefore\s+(?:the\s+)?(?:[\w-]+\s+)?(?:drainage|treatment|ablation|resection|surgery|"
                        r"emboli[sz]ation|chemoemboli[sz]ation|tace|therapy|chemotherapy|radiotherapy)\b")
_SIDE_TAIL = re.compile(r"\s*(?:(?:is|are)\s+(?:not\s+)?(?:seen\s+|present\s+)?)?(?:on\s+(?:the\s+)?(?:left|right)(?:\s+side)?\b|"
                        r"bilaterally\b|in\s+(?:either|both)\b)")
_PHRASE_SIDE = re.compile(r"\b(left|right|bilateral|bilaterally|both)\b")


def question_polarity(q: str) -> str:
    """What a yes/no question asks: ``presence`` ("Is there X?"), ``resolved`` ("Has X resolved?"),
    ``changed``, ``grew`` or ``shrank`` ("Has X changed / grown / decreased?").

    Parameters
    ----------
    q : str
        The normalised question.

    Returns
    -------
    str
        ``presence``, ``resolved``, ``changed``, ``grew`` or ``shrank``.
    """
    if _RESOLUTION_Q.search(q):
        return "resolved"
    m = _CHANGE_Q.search(q)
    if not m:
        return "presence"
    word = m.group(1)
    return "changed" if word.startswith("chang") else "shrank" if _SHRANK.match(word) else "grew"


# (vocabulary) an older form of a finding a time-narrowed denial leaves standing: blood products of an earlier bleed
_OLDER_FORM = re.compile(r"\b(?:ha?emosiderin|blood products|(?:chronic|old|prior|remote)\s+(?:ha?emorrhage|blood|bleed))\b")


def time_narrowed_denial(before: str, sents: list[str]) -> bool:
    """Whether a denied mention is narrowed to a time that leaves an older one standing.

    Parameters
    ----------
    before : str
        The normalised sentence up to the denied mention.
    sents : list of str
        The report's sentences (normalised).

    Returns
    -------
    bool
        True for "no evidence of recent X" (recent only, as "no new X" is new only), and for "no acute X"
        where the report describes an older form of it (:data:`_OLDER_FORM`: "a rim of haemosiderin").
    """
    if re.search(r"\bno\s+(?:(?:evidence|features?|signs?)\s+of\s+)?recent\s+(?:[\w-]+\s+)?$", before):
        return True
    return bool(re.search(r"\b(?:acute|active|fresh)\s+(?:[\w-]+\s+)?$", before)
                and any(_OLDER_FORM.search(normalize_sentence(x)) for x in sents))


def _phrase_scope(s: str, a: int, b: int, st: str) -> tuple[set[str], bool]:
    """(sides, denies only new ones) of a mention: the words from its negation (or the clause start)
    to the end of its phrase, and an ``Organ:`` header."""
    clauses = [0] + [m.end() for m in _CLAUSE.finditer(s[:a])]
    start = clauses[-1]
    if st == "negated":
        neg = list(re.finditer(r"\b(?:no|without|not|negative for|absence of|free of)\b", s[start:a]))
        start = start + neg[-1].start() if neg else start
    # a side after the mention narrows it only as "on the left" / "left-sided" / "bilaterally":
    # "non-enhancing lesion centered in the left insula" places the lesion, it does not narrow the denial
    tail = re.match(_SIDE_TAIL, s[b:])
    phrase = s[start:b] + (tail.group(0) if tail else "")
    header = re.match(r"^((?:[a-z]+\s*){1,3}):", s)
    words = _PHRASE_SIDE.findall(phrase) + (_PHRASE_SIDE.findall(header.group(1)) if header else [])
    sides = {"bilateral" if w in ("bilateral", "bilaterally", "both") else w for w in words}
    # "no evidence of recent haemorrhage" denies only recent blood, as "no new nodules" only new ones
    is_new = bool(re.search(r"\bno\s+(?:(?:evidence|features?|signs?)\s+of\s+)?(?:new|additional|further|other|enlarging|recent)\b",
                            s[start:b]))
    return sides, is_new


_OPENER = re.compile(r"^\W*(?:is|are|was|were|does|do|did|has|have|can|could)\s+(?:there\s+)?")
_PREPOSITION = re.compile(r"\b(?:in|of|on|at|within|involving|along|from|with|into|to|by|around|near|adjacent)\b")


def _head_phrase(q: str, core: set[str]) -> list[str]:
    """The stems of ``core`` in the asked noun phrase, in order, its head last: the words before the
    question's first preposition ("tumour thrombus" of "... thrombus in the renal vein", "enhance" of
    "Does the lesion enhance in the arterial phase?"); all of ``core`` when none stand there."""
    opened = _OPENER.sub("", q)
    cut = _PREPOSITION.search(opened)
    phrase = opened[:cut.start()] if cut else opened
    stems = [t for t, _, _ in tokens(phrase) if t in core]
    ordered = list(dict.fromkeys(stems))
    if ordered:
        return ordered
    return [t for t, _, _ in tokens(opened) if t in core][-1:] if core else []


def _yes_side(hits, s: str) -> bool:
    """Whether the first mention of the subject in ``s`` is asserted (not denied); a section header
    ("BILIARY: no biliary dilatation") names the topic, asserting nothing."""
    header = re.match(r"^(?:[a-z]+\s*){1,3}:", s)
    body = [h for h in hits if not header or h[1] >= header.end()] or hits
    return not body or _mention_status(s, body[0][1], body[0][2]) != "negated"


def _said_new(s: str, a: int, b: int) -> bool:
    """Whether an asserted mention is called new: "new mild hydronephrosis", "hydronephrosis, new since
    the prior study", "the nodule is new" (never "no new X", which is no mention asserted)."""
    clause_start = max([0] + [m.end() for m in _CLAUSE.finditer(s[:a])])
    return bool(re.search(r"\b(?:new|newly)\b", s[clause_start:a])
                or re.match(r"\W*(?:[\w-]+\W+){0,2}?(?:(?:is|are)\s+)?(?:new|newly)\b", s[b:]))


_REFERRAL_SENTENCE = re.compile(r"^\W*(?:clinical(?:\s+(?:history|information|details|indication))?|history|indications?|"
                                r"reason for (?:exam\w*|study|referral|scan)|referral)\s*:")


def _check_change(polarity: str, yes: bool, sents: list[str], subject: set[str]) -> tuple[bool, str, str]:
    """Yes / No to "Has X resolved / changed / grown / decreased?" from what the report says of X."""
    best, _ = _best_sentences(sents, subject)
    if not best:
        return False, "", "subject_not_in_report"
    said = None
    for s, hits in best:
        a, b = hits[0][1], hits[-1][2]
        st = _mention_status(s, a, b)
        if polarity == "resolved":
            if _NOT_RESOLVED.search(s):
                said = said or (False, s)  # "has not resolved", "partially resolved", "persists"
            elif _RESOLVED.search(s) and st in ("negated", "affirmed", "historical"):
                said = said or (True, s)  # "the nodule ... has resolved", "Resolution of the cyst"
            elif st == "affirmed" and not _REFERRAL_SENTENCE.match(s):
                # (the clinical line, "Clinical: liver abscess drained 8 weeks ago", names why the study was
                # done, not what it shows now, so it says nothing of whether the abscess has since resolved)
                said = said or (False, s)
            continue
        if _STABLE.search(s):
            said = said or (False, s)
            continue
        sizes = [(max(d), prior_length(s, at)) for k, d, at in measurements(s) if k == "length"]
        now = [v for v, prior in sizes if not prior]
        before = [v for v, prior in sizes if prior]
        if now and before and not _GREW.search(s) and not _SHRANK.search(s):
            # "3.1 cm, previously 2.2 cm": the sizes say which way it changed
            said = said or ((polarity in ("changed", "grew")) if now[0] > before[0] else
                            (polarity in ("changed", "shrank")) if now[0] < before[0] else False, s)
        elif _GREW.search(s):
            said = said or (polarity in ("changed", "grew"), s)
        elif _SHRANK.search(s):
            said = said or (polarity in ("changed", "shrank"), s)
    if said is None:
        return False, "", "change_not_stated"
    if said[0] != yes:
        return False, "", "contradicted_by_report"
    return True, said[1], ""


# addition: a question about a structure's normal state, and the abnormal state it is the denial of
_NORMAL_ASKED = ((r"\b(?:of\s+)?normal\s+(?:calibre|caliber|diameter|width)\b", "dilated"),
                 (r"\b(?:non-?\s*|not\s+|un)dilated\b", "dilated"),
                 (r"\b(?:of\s+)?normal\s+(?:size|volume)\b", "enlarged"), (r"\bpatent\b", "occluded"),
                 # "Are the seminal vesicles free of tumour?" Yes is "Are they invaded?" No
                 (r"\b(?:free|clear)\s+of\s+(?:tumou?r|cancer|malignancy|invasion|involvement)\b", "invaded"))


_NAMED_THEN_CALLED = re.compile(r"^\W*(?:is|are)\s+(?:the|this|that|these|those)\s+(?:[\w-]+\s+){0,5}?"
                                r"(?:focus|foci|lesions?|nodules?|mass(?:es)?|findings?|abnormality|area|observation|"
                                r"collection|opacity|change|changes)\s+(?:(?:a|an)\s+)?([a-z][\w\s-]*?)\s*\?$")


# "Is the mass at left 2 o'clock malignant?": the finding is named with its place, then called something
_NAMED_PLACED_THEN_CALLED = re.compile(r"^\W*(?:is|are)\s+(?:the|this|that|these|those)\s+(?:[\w-]+\s+){0,5}?"
                                       r"(?:focus|foci|lesions?|nodules?|mass(?:es)?|findings?|abnormality|area|"
                                       r"observation|collection|opacity)\s+(?:at|in|on|within|near)\s+[^?]*?\s"
                                       r"([a-z][a-z-]+)\s*\?$")
_PLACE_WORD = re.compile(r"^(?:clock|lobes?|poles?|segments?|zones?|quadrants?|regions?|breasts?|kidneys?|lungs?|"
                         r"glands?|apex|base|midline|side|aspect|margin|level)$")


def _predicate_stems(q: str) -> set[str]:
    """Stems of what a question calls a finding it has named ("Is the left focus prostatitis?" ->
    {prostatitis}; "Is the mass at left 2 o'clock malignant?" -> {malignant}); empty when it calls it
    nothing. A Yes needs a sentence that says so ("suspicious mass at left 2 o'clock" does not)."""
    m = _NAMED_THEN_CALLED.match(q)
    if m:
        return {t for t, _, _ in tokens(m.group(1))}
    m = _NAMED_PLACED_THEN_CALLED.match(q)
    if m and not _PLACE_WORD.match(m.group(1)) and not any(re.fullmatch(p, m.group(1)) for p in ORGAN_WORDS.values()):
        return {t for t, _, _ in tokens(m.group(1))}
    return set()


# "Is the effusion caused by heart failure?": a cause, kept only where a sentence states the link
_ASKS_CAUSE = re.compile(r"\b(?:caused by|due to|secondary to|because of|(?:the\s+)?result of|attributable to|"
                         r"induced by|related to)\b")
_CAUSE_SAID = re.compile(r"\b(?:caused by|due to|secondary to|because of|result(?:s|ing)? (?:of|from)|attribut\w+ to|"
                         r"induced|related to|from)\b|-(?:induced|related)\b")


def check_yes_no(question: str, yes: bool, sents: list[str]) -> tuple[bool, str, str]:
    """A Yes / No key against the sentences that best match the question's subject.

    Parameters
    ----------
    question : str
        The question text.
    yes : bool
        Whether the key is Yes.
    sents : list of str
        The report's sentences, normalised (:func:`normalize_sentence`).

    Returns
    -------
    kept : bool
        Whether the report states the key.
    sentence : str
        The first best-matching sentence when kept; empty otherwise.
    reason : str
        Empty when kept; else ``subject_not_in_report``, ``only_historical``, ``uncertain_in_report``,
        ``conflicting_statements``, ``contradicted_by_report`` or ``cause_not_stated`` (a cause asked,
        no sentence stating the link).
    """
    q = normalize_sentence(question)
    removal = _check_removal(q, yes, sents)
    if removal is not None:
        return removal
    for asked_normal, abnormal in _NORMAL_ASKED:
        if re.search(asked_normal, q):
            # "Is the duct of normal calibre? No" is "Is the duct dilated? Yes": "dilated to 6 mm" answers both
            return check_yes_no(re.sub(asked_normal, abnormal, q), not yes, sents)
    polarity = question_polarity(q)
    q_side = _QUESTION_SIDE.search(q)
    new_only = bool(re.search(r"\bnew\b", q))
    asked = re.sub(r"\b(?:resolv\w*|disappear\w*|cleared|gone|regress\w*|chang\w*|grow\w*|grown|increas\w*|"
                   r"decreas\w*|enlarg\w*|progress\w*|shrunk|shrink\w*|smaller|larger|bigger|in size|since|has|have|had|"
                   r"did)\b",
                   " ", q) if polarity != "presence" else q
    # sides and "new" are read from each mention's phrase, not matched as words; with them gone, "Has
    # the left lobe nodule grown?" is about the nodule
    if polarity != "presence":
        # "since the prior study" names the comparison, not the thing; the organ of a named lesion
        # ("the right thyroid nodule") is no part of which lesion changed
        asked = _SINCE_PRIOR.sub(" ", asked)
        if {t for t, _, _ in tokens(asked)} & LESION_STEMS:
            for pat in ORGAN_WORDS.values():
                asked = re.sub(pat, " ", asked)
    subject = subject_stems(re.sub(r"\b(?:left|right|new)\b", " ", asked))
    q_lesion = {t for t, _, _ in tokens(q)} & LESION_STEMS
    if polarity != "presence":
        return _check_change(polarity, yes, sents, subject)
    best, n = _best_sentences(sents, subject)
    if not best:
        return False, "", "subject_not_in_report"
    # what the question asks about, less the organ it is in: a sentence must name all of it to say Yes
    # or No by its own words ("No renal mass" says nothing of tumour thrombus in the renal vein)
    core = subject - {stem(m.group(0)) for pat in ORGAN_WORDS.values() for m in re.finditer(pat, q)}
    # "Is there a tumour in ...?" asks about the tumour; in "Is the lesion a cyst?" the lesion is the topic
    head_phrase = _head_phrase(q, core | (q_lesion if re.match(r"^\W*(?:is|are)\s+there\b", q) else set()))
    asks_history = bool(re.search(r"\b(?:history|previous(?:ly)?|prior|had|undergone|underwent|status post)\b", q))
    predicate = _predicate_stems(q)
    verdicts, narrowed = [], []
    asks_technical = bool(TECHNICAL_PHRASE.search(q))
    members, q_words = named_members(sents), set(re.findall(r"[a-z]+", q))
    for s, hits in best:
        if not asks_technical and any(in_technical_phrase(s, a, b) for _, a, b in hits):
            # "posterior acoustic enhancement" answers no contrast-enhancement question
            hits = [h for h in hits if not in_technical_phrase(s, h[1], h[2])]
            if not {t for t, _, _ in hits} & subject:
                narrowed.append("partial")
                continue
        said = {t[0] for t in tokens(s)}
        # a lesion noun is named by its adjective too: "cystic lesion in the pancreatic head" is the head cyst
        named = {c for c in head_phrase if c in said or (len(c) >= 5 and any(c in w for w in said))
                 or (c in LESION_STEMS and any(w.startswith(c) for w in said))}
        # a Yes names the whole asked thing ("enhancing capsule"); a No may deny it more broadly
        # ("No capsule"), but must name its head ("No renal mass" denies no tumour thrombus)
        partial_match = bool(head_phrase) and (named != set(head_phrase) if _yes_side(hits, s) else
                                               head_phrase[-1] not in named
                                               or _other_kind_of_head(s, head_phrase))
        if yes and _ASKS_CAUSE.search(q) and not _CAUSE_SAID.search(s):
            # "man on spironolactone ... consistent with gynecomastia" names the drug and the finding,
            # never that one caused the other
            narrowed.append("cause")
            continue
        if yes and predicate and not predicate <= said:
            # "Is the left focus prostatitis?": the sentence placing the focus says nothing of what it is
            narrowed.append("partial")
            continue
        spread = _spread(s, [(a, b) for st_, a, b in hits if st_ in core])
        if spread and yes:
            narrowed.append(spread)  # "mildly hypoechoic to isoechoic", "mixed cystic and solid": not a Yes
            continue
        if yes and hits and ARTIFACT_AFTER.match(s[max(b for _, _, b in hits):]):
            narrowed.append("artifact")  # "echogenic foci with comet-tail artifact" are colloid, not the asked foci
            continue
        if _other_structure_named(q, s, head_phrase):
            narrowed.append("partial")  # "The common bile duct is normal" says nothing of the pancreatic duct
            continue
        first = {}
        for st_, a, b in hits:
            first.setdefault(st_, (a, b))
        statuses, one_sided = [], False
        for a, b in first.values():
            st = _mention_status(s, a, b)
            if st == "historical" and asks_history:
                st = "affirmed"  # "Is there a history of renal cell carcinoma?" asks about the past itself
            sides, is_new = _phrase_scope(s, a, b, st)
            if st == "negated" and not is_new and time_narrowed_denial(s[:a], sents):
                # "No features of acute haemorrhage" beside a haemosiderin rim: only the acute kind is denied
                # where the report describes an older one
                is_new = True
            one_sided = one_sided or bool(sides & {"left", "right"}) and "bilateral" not in sides
            if q_side and sides and q_side.group(1) not in sides and "bilateral" not in sides:
                continue  # a mention about the other side says nothing of this one
            if st == "negated" and _denial_of_one_kind(s, a, q):
                narrowed.append("partial")  # "without an obstructing calculus": other calculi unsaid
                continue
            if st == "negated" and is_new and not new_only:
                narrowed.append("no_new")  # "no new nodules" does not deny a known one
                continue
            if st == "negated" and not q_side and sides & {"left", "right"}:
                narrowed.append("side")  # "No right effusion" does not answer the side-free question
                continue
            if st == "negated" and not sides:
                # "The left submandibular gland is ... normal, with no calculus", "Both submandibular
                # glands are normal with no calculus" (the parotids named elsewhere): the sentence's
                # subject limits the denial to one organ of a pair or one member of a family
                denier = list(re.finditer(r"\b(?:no|without|not|negative for|absence of|free of)\b", s[:b]))
                subject = s[:denier[-1].start()] if denier else s[:a]
                subject_sides = paired_subject_side(subject)
                pair = list(_PAIRED_SUBJECT.finditer(subject))
                if (subject_sides and not (q_side and q_side.group(1) in subject_sides)
                        and any(re.search(pat, pair[-1].group(0)) and re.search(pat, q) for pat in ORGAN_WORDS.values())):
                    # "The left submandibular gland ... with no calculus" for "Is there a salivary calculus?"
                    # (never "the right renal vein without IVC involvement" for a question about the IVC)
                    narrowed.append("side")
                    continue
                if member_subject(subject, q_words, members):
                    narrowed.append("partial")
                    continue
            if st in ("affirmed", "favoured") and q_side and not sides:
                continue  # a side-free mention does not place the finding on the asked side
            if st in ("affirmed", "favoured") and new_only and not _said_new(s, a, b):
                continue
            if st in ("affirmed", "favoured") and q_lesion and not any(
                    t in LESION_STEMS and _mention_status(s, ta, tb) in (
                        ("affirmed", "favoured", "historical") if asks_history else ("affirmed", "favoured"))
                    for t, ta, tb in tokens(s)):
                # "Postoperative changes in the left temporal lobe" places no tumour there, nor does
                # "... temporal lobe, possibly a glioma" (the lesion itself must be asserted)
                continue
            statuses.append(st)
        if not statuses:
            continue
        v = _verdict(statuses)
        if v in ("affirmed", "favoured") and n < len(subject) and NORMAL.search(s):
            if one_sided and not q_side:
                narrowed.append("side")  # "Left renal vein is patent" says nothing of the right one
                continue
            if _STUDY_NORMAL.search(s) and head_phrase and head_phrase[-1] not in named:
                # "Normal pelvic ultrasound." calls the study normal for what it examined; it names no
                # lymph node, so it denies no lymphadenopathy (an ultrasound of the pelvis may not look)
                narrowed.append("partial")
                continue
            if _normal_of_other(s, hits) or _other_kind_of_head(s, head_phrase):
                # "Main pancreatic duct normal." calls the duct normal, not the parenchyma or the bile ducts
                narrowed.append("partial")
                continue
            v = "negated"  # "Spleen measures 11 cm, normal." answers "Is the spleen enlarged?"
        elif v == "negated" and one_region_denied(q, s, sents):
            # "No para-aortic lymphadenopathy." asked "pelvic or para-aortic lymphadenopathy", where an
            # enlarged external iliac node is reported: the denial answers only the half it names
            narrowed.append("partial")
            continue
        elif v == "negated" and _denial_of_other_organ(s, q, head_phrase, named):
            # "The pancreas is otherwise unremarkable, with no ductal dilatation": the pancreatic duct
            narrowed.append("partial")
            continue
        elif partial_match:
            narrowed.append("partial")
            continue
        verdicts.append((v, s))
    kinds = {v for v, _ in verdicts if v != "historical"}
    if not verdicts and narrowed:
        return False, "", ("only_no_new" if "no_new" in narrowed else "only_side_specific_denial" if "side" in narrowed
                           else "range_in_report" if "range" in narrowed
                           else "mixed_composition_in_report" if "mixed" in narrowed
                           else "artifact_in_report" if "artifact" in narrowed
                           else "cause_not_stated" if "cause" in narrowed
                           else "subject_only_partly_in_report")
    if not kinds:
        return False, "", "only_historical" if verdicts else "subject_not_in_report"
    if "possible" in kinds or kinds == {"favoured"}:
        return False, "", "uncertain_in_report"
    if "negated" in kinds and kinds & {"affirmed", "favoured"}:
        return False, "", "conflicting_statements"
    said_yes = "negated" not in kinds
    if said_yes != yes:
        return False, "", "contradicted_by_report"
    return True, verdicts[0][1], ""


# a length from a landmark is a distance, not a size, on any organ: "3 cm from the nipple", "2 cm
# deep to the skin", "6 cm above the anal verge", "within 5 mm of the pleura", "8 cm FN", or a bare
# direction ("a smaller nodule 3 cm distally", "2 cm more proximally"); "from"
# followed by a number or an earlier study is a change ("2.1 cm from 1.7 cm"), not a landmark
_DISTANCE_AFTER = re.compile(r"\s*(?:away\s+)?(?:from\s+(?!(?:the\s+|a\s+)?(?:\d|prior|previous|preceding|earlier|last|"
                             r"baseline|initial|recent|most recent|comparison|study|exam\w*|scan|mri|ct|ultrasound|"
                             r"mammogram)\b)(?:the\s+|its\s+)?[a-z]|fn\b|(?:deep|proximal|distal|superior|inferior|lateral|"
                             r"medial|anterior|posterior|caudal|cranial|cephalad)\s+to\b|(?:below|above|beneath|"
                             r"under)\s+the\b|(?:distally|proximally|cranially|caudally|cephalad|caudad|superiorly|"
                             r"inferiorly|medially|laterally|anteriorly|posteriorly|deeper|more\s+(?:distally|proximally|"
                             r"superiorly|inferiorly|medially|laterally|anteriorly|posteriorly))\b)")
_DISTANCE_BEFORE = re.compile(r"\b(?:distance of|within)\s+(?:approximately\s+|about\s+|~\s*)?$")
# a length bounding a class is a threshold, never a lesion's size: "a cyst of 5 cm or less",
# "nodules 6 mm or larger", "a threshold of 1 cm" ("at least 4 cm" still bounds the lesion's own size)
# the far side of a comparison ("larger than the 6.8 cm previously reported") and a bare bound ("thin
# septa under 2 mm") measure nothing
_THRESHOLD_AFTER = re.compile(r"\s*(?:or|and)\s+(?:less|more|smaller|larger|greater|bigger|below|above|under|over)\b")
_THRESHOLD_BEFORE = re.compile(r"\b(?:threshold|cut-?off) of\s+$|\bthan\s+(?:the\s+|its\s+|a\s+)?(?:[a-z]+\s+)?$|"
                               r"\b(?:under|below|over|beyond|exceeding)\s+$")


def measurements(sent: str) -> list[tuple[str, list[float], int]]:
    """(unit kind, dimensions in mm or HU, position) of every measurement: "4.2 x 3.1 cm" is one.

    Parameters
    ----------
    sent : str
        Normalised text (:func:`normalize_sentence`).

    Returns
    -------
    list of tuple of (str, list of float, int)
        ``(kind, dimensions, start)`` per measurement: kind ``"length"`` (dimensions in mm, cm
        converted), ``"distance"`` (a length from a landmark or in a direction: "3 cm from the
        nipple", "a second nodule 3 cm distally", never a size), ``"threshold"`` (a bound: "5 cm
        or less", "a threshold of 1 cm", the far side of a comparison: "larger than the 6.8 cm
        previously reported") or ``"hu"``; ``start`` is its character offset.
    """
    out = []
    for m in _MEASURE.finditer(sent):
        kind, scale = UNITS[m.group(2)]
        if kind == "length" and (_DISTANCE_AFTER.match(sent[m.end():]) or _DISTANCE_BEFORE.search(sent[:m.start()])):
            kind = "distance"  # "3 cm from the nipple" places a lesion; it is never its size
        elif kind == "length" and (_THRESHOLD_AFTER.match(sent[m.end():]) or _THRESHOLD_BEFORE.search(sent[:m.start()])):
            kind = "threshold"  # "a cyst of 5 cm or less needs no follow-up" sizes no lesion
        # a dimension with its own unit is read in it; the others in the measurement's last unit
        dims = [float(x) * (UNITS[u][1] if u else scale)
                for x, u in re.findall(r"(\d+(?:\.\d+)?)\s*(mm|cm)?", m.group(1))]
        out.append((kind, dims, m.start()))
    return out


# a size step written as a range, as a binned schema field words its options: "less than 10 mm", "10 to 19
# mm", "2-3.9 cm", "40 mm or larger", "at least 5 cm"
_NUM_UNIT = r"(\d+(?:\.\d+)?)\s*(mm|cm)?"
_RANGE_BELOW = re.compile(rf"^(?:less than|smaller than|under|below|<)\s*{_NUM_UNIT}$")
_RANGE_BETWEEN = re.compile(rf"^(?:from\s+)?{_NUM_UNIT}\s*(?:to|-|–)\s*{_NUM_UNIT}$")
_RANGE_ABOVE = re.compile(rf"^(?:(?:at least|>=|≥)\s*{_NUM_UNIT}|{_NUM_UNIT}\s*(?:or|and)\s+(?:larger|greater|more|above|over|bigger))$")
_RANGE_OVER = re.compile(rf"^(?:more than|larger than|greater than|bigger than|over|above|>)\s*{_NUM_UNIT}$")


def size_range(answer: str) -> tuple[float, float, bool] | None:
    """The lengths a size-step option covers, in mm, or None when the option is no range.

    Parameters
    ----------
    answer : str
        An option's text ("less than 10 mm", "10 to 19 mm", "40 mm or larger", "4 to 6.9 cm").

    Returns
    -------
    tuple of (float, float, bool) or None
        ``(low, high, high_included)``: a length ``v`` is in the step when ``low <= v`` and ``v < high``
        (``v <= high`` when ``high_included``: "10 to 19 mm" holds 19 mm); "more than X" is read as
        starting just above X. A unit left out of the first bound of "10 to 19 mm" is the second's.
    """
    a = normalize_sentence(answer).strip(" .")

    def mm(x: str, unit: str | None, default: str | None) -> float | None:
        unit = unit or default
        return float(x) * UNITS[unit][1] if unit else None

    m = _RANGE_BETWEEN.match(a)
    if m:
        lo, hi = mm(m.group(1), m.group(2), m.group(4)), mm(m.group(3), m.group(4), m.group(2))
        return (lo, hi, True) if lo is not None and hi is not None and lo < hi else None
    m = _RANGE_BELOW.match(a)
    if m and m.group(2):
        return 0.0, mm(m.group(1), m.group(2), None), False
    m = _RANGE_ABOVE.match(a)
    if m:
        x, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return (mm(x, unit, None), math.inf, False) if unit else None
    m = _RANGE_OVER.match(a)
    if m and m.group(2):
        return mm(m.group(1), m.group(2), None) + 1e-9, math.inf, False
    return None


def in_size_range(value: float, step: tuple[float, float, bool]) -> bool:
    """Whether a length in mm lies in a size step of :func:`size_range` ("40 mm or larger").

    Parameters
    ----------
    value : float
        A length in mm (a report's, converted from cm where given so).
    step : tuple of (float, float, bool)
        The step's lower bound (included), upper bound and whether the upper bound is included, in mm.

    Returns
    -------
    bool
        Whether ``value`` is in the step; bounds are compared within 1e-6 mm, so "0.57 cm" is in
        "5.7 mm or larger" although 0.57 * 10 is 5.699999999999999 in floating point.
    """
    low, high, high_included = step
    return low - 1e-6 <= value and (value <= high + 1e-6 if high_included else value < high - 1e-6)


def check_quantity(question: str, answer: str, sents: list[str]) -> tuple[bool, str, str]:
    """A measured key: the size of a measurement is its largest dimension (the short axis when
    asked); "largest" / "smallest" pick among the subject's measurements; several other values
    without such a word make the question ambiguous.

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The key (the correct option's text).
    sents : list of str
        The report's sentences, normalised (:func:`normalize_sentence`).

    Returns
    -------
    kept : bool
        Whether the report states the key's measurement.
    sentence : str
        The sentence giving it when kept; empty otherwise.
    reason : str
        Empty when kept; else ``answer_not_a_quantity``, ``quantity_not_stated``,
        ``group_bound_spans_other_places``, ``prior_size_only`` (only an earlier size is given),
        ``current_size_only`` (an earlier size asked, only the current one given) or
        ``ambiguous_measurement``.
    """
    step = size_range(answer)
    (kind, dims, _), = measurements(normalize_sentence(answer))[:1] or [(None, [], 0)]
    if step is not None:
        # "What is the size of the lesion? 40 mm or larger" is answered by a length in that step
        kind, dims = "length", [step[0]]
    if kind is None or len(dims) != 1:
        return False, "", "answer_not_a_quantity"
    q = normalize_sentence(question)
    if kind == "length" and _ASKS_DISTANCE.search(q) and any(k == "distance" for s in sents for k, _, _ in measurements(s)):
        # "How far from the nipple is the cyst?" is answered by a distance, never by the cyst's size
        # ("protruding 2.1 cm into the bladder", with no landmark, is still read as a length)
        kind = "distance"
    # "in centimetres" asks for a unit, not for a sentence that writes one: "9 x 7 mm" answers 0.9 cm
    subject = subject_stems(re.sub(r"\s*\b(?:in|as)\s+(?:mm|cm|millimet\w*|centimet\w*|millimeters?|centimeters?)\b",
                                   "", question, flags=re.IGNORECASE))
    best, n = _best_sentences(sents, subject)
    measured, n_measured = _best_sentences([s for s in sents if any(k == kind for k, _, _ in measurements(s))],
                                           subject)
    if measured and n_measured == n:
        best = measured  # a quantity is read from the best-matching sentences that give one
    short = bool(re.search(r"\bshort[- ]axis\b|\bsmallest dimension\b", q))
    if short:
        # a short axis is read from every sentence naming the whole subject with a length, not only those
        # a topic noun favours ("The palpable nodule is a normal-appearing 9 mm intraparotid lymph node"
        # gives no short axis; "... intraparotid lymph node ..., oval, 9 x 5 mm" does)
        wide = [(s, [t for t in tokens(s) if t[0] in subject]) for s in sents
                if any(k == kind for k, _, _ in measurements(s))]
        best = [(s, hits) for s, hits in wide if len({t[0] for t in hits}) == n] or best
    organ_stems = {stem(m.group(0)) for pat in ORGAN_WORDS.values() for m in re.finditer(pat, q)}
    which = subject - LESION_STEMS - organ_stems
    naming = [(s, hits) for s, hits in best if which & {t[0] for t in hits}]
    if naming and len(naming) < len(best):
        # "the pancreatic neck cyst": "In the pancreatic neck, 11 mm" says which one, "three pancreatic
        # cysts, the largest 1.9 cm in the tail" names another
        best = naming
    asks_prior = bool(ASKS_PRIOR.search(q))
    values, spans_more, other_time = [], False, False
    q_side = re.search(r"\b(left|right)\b", q)
    for s, hits in best:
        found = measurements(s)
        # a size belongs to the noun it measures: "a 7 mm calculus ..., with upstream ductal dilatation to
        # 4 mm" sizes the calculus by 7 mm only; "a 5 mm calculus in the left ... and a 3 mm calculus in
        # the right ..." sizes the left one by 5 mm only
        owned = {at for k, _, at in found if k == kind and _measures_asked(s, at, subject)}
        for k, ds, at in found:
            if k == kind:
                if owned and at not in owned:
                    continue
                if q_side and _other_side_piece(s, at, q_side.group(1)):
                    continue
                if re.search(r"\bup to\s+$", s[:at]) and _joined_to_unasked(s, hits, subject):
                    spans_more = True  # "The others measure up to 9 mm and lie in the head and uncinate process"
                    continue
                if asks_prior != prior_length(s, at):
                    # "now 2.4 cm (previously 1.7 cm)": the prior size answers only the prior question
                    other_time = True
                    continue
                if short and len(ds) == 1 and not _SAID_SHORT_AXIS.match(s[at:]):
                    continue  # "a 9 mm intraparotid lymph node" is its size, not its short axis
                values.append((min(ds) if short else max(ds), s))
    if not values:
        why = "group_bound_spans_other_places" if spans_more else "quantity_not_stated"
        return False, "", (("current_size_only" if asks_prior else "prior_size_only") if other_time else why)
    if re.search(r"\b(?:largest|biggest|dominant)\b", q):
        values = [max(values)]
    elif re.search(r"\bsmallest\b", q):
        values = [min(values)]
    if step is not None:
        hit = [s for v, s in values if in_size_range(v, step)]
        # lengths of several steps make the step ambiguous; several lengths in the asked one do not
        distinct = {in_size_range(v, step) for v, _ in values}
    else:
        distinct = {round(v, 3) for v, _ in values}
        hit = [s for v, s in values if math.isclose(v, dims[0], rel_tol=1e-6, abs_tol=1e-6)]
    if not hit:
        return False, "", "quantity_not_stated"
    if len(distinct) > 1:
        return False, "", "ambiguous_measurement"
    return True, hit[0], ""


_ASKS_DISTANCE = re.compile(r"\bhow far\b|\bdistance\b")
# one length said to be the short axis: "18 mm in short axis", "1.6 cm short-axis"
_SAID_SHORT_AXIS = re.compile(r"^[\d.\s]*(?:mm|cm)\W*(?:in\s+)?(?:the\s+)?short[- ]axis\b")
_UNIT_END = re.compile(r"^[\d.\s]*(?:(?:x|by)[\d.\s]*(?:mm|cm)?\s*)*(?:mm|cm)\b")


def _measures_asked(s: str, at: int, subject: set[str]) -> bool:
    """Whether the length at ``at`` is written as the asked thing's own ("a 7 mm calculus", "a 2.4 x 1.8
    cm hypoechoic solid lesion"): a word of the question among the three words after its unit, before
    any preposition or comma."""
    unit = _UNIT_END.match(s[at:])
    after = s[at + unit.end():] if unit else ""
    phrase = re.split(r"[,;]|\b(?:in|of|at|on|with|from|to|and|within|along|near)\b", after, maxsplit=1)[0]
    return any(t in subject for t, _, _ in tokens(" ".join(phrase.split()[:3])))


def _other_side_piece(s: str, at: int, side: str) -> bool:
    """Whether the length at ``at`` stands in a piece of the sentence ("a 3 mm calculus in the mid right
    Wharton duct", split at "and a" / ";") that names only the other side than ``side``."""
    bounds = [0] + [m.end() for m in re.finditer(r"\s+and\s+(?=(?:a|an|another|the|\d)\b)|;", s)] + [len(s)]
    lo = max(b for b in bounds if b <= at)
    hi = min(b for b in bounds if b > at)
    sides = set(re.findall(r"\b(left|right)\b", s[lo:hi]))
    return bool(sides) and side not in sides


def _joined_to_unasked(sent: str, hits: list[tuple[str, int, int]], subject: set[str]) -> bool:
    """Whether an asked word of ``sent`` is joined by "and" / "or" to a word the question does not
    ask ("in the head and uncinate process" when the head is asked): a bound ("up to 9 mm") said of
    such a group covers both, so it is no size of the asked one."""
    for _, a, b in hits:
        after = re.match(r"^\s+(?:and|or)\s+(?:the\s+)?([a-z]+)", sent[b:])
        before = re.search(r"\b([a-z]+)\s+(?:and|or)\s+(?:the\s+)?$", sent[:a])
        if any(m and m.group(1) not in STOP and stem(m.group(1)) not in subject for m in (after, before)):
            return True
    return False


def _count(answer: str) -> int | None:
    a = normalize_sentence(answer).strip(" .")
    return int(a) if a.isdigit() else NUMBER_WORDS.get(a)


def check_count(question: str, answer: str, sents: list[str]) -> tuple[bool, str, str]:
    """"How many X": the counts the report gives for X (a number within three words before it).

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The key (the correct option's text).
    sents : list of str
        The report's sentences, normalised (:func:`normalize_sentence`).

    Returns
    -------
    kept : bool
        Whether the report states the key's count.
    sentence : str
        The first sentence giving that count when kept; empty otherwise.
    reason : str
        Empty when kept; else ``count_not_stated``, ``contradicted_by_report`` or ``ambiguous_count``.
    """
    n = _count(answer)
    subject = subject_stems(question)
    counts = {}
    counted = re.search(r"\bhow many\s+([a-z-]+)", normalize_sentence(question))
    if counted:
        # "How many lesions are in the right parotid gland?": the topic noun is what is counted, and the
        # sentence must name the places asked ("RIGHT PAROTID: Three well-defined hypoechoic lesions")
        noun = stem(counted.group(1))
        places = subject - {noun} - {stem(w) for w in ("gland", "glands")}
        for s in sents:
            if not places <= {t[0] for t in tokens(s)}:
                continue
            for m in re.finditer(r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\b((?:\s+[a-z-]+){1,3})", s):
                if noun in {t[0] for t in tokens(m.group(2))}:
                    counts.setdefault(_count(m.group(1)), s)
    if not counts:
        for s in sents:
            for m in re.finditer(r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\b((?:\s+[a-z-]+){1,3})", s):
                if {t[0] for t in tokens(m.group(2))} & subject:
                    counts.setdefault(_count(m.group(1)), s)
    if not counts:
        return False, "", "count_not_stated"
    if n not in counts:
        return False, "", "contradicted_by_report"
    if len(counts) > 1:
        return False, "", "ambiguous_count"
    return True, counts[n], ""


def _clauses(sent: str) -> list[str]:
    return [c for c in _CLAUSE.split(sent) if c.strip()]


def check_side(question: str, answer: str, sents: list[str]) -> tuple[bool, str, str]:
    """Laterality: the side words in the clauses that name the question's subject (negated
    mentions skipped: "No right pleural effusion" is not a right-sided effusion).

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The key: ``left``, ``right``, ``bilateral`` or ``both``.
    sents : list of str
        The report's sentences, normalised (:func:`normalize_sentence`).

    Returns
    -------
    kept : bool
        Whether the report states the key's side, and no other, for the subject.
    sentence : str
        The first sentence giving that side when kept; empty otherwise.
    reason : str
        Empty when kept; else ``side_not_stated``, ``contradicted_by_report`` or ``ambiguous_side``.
    """
    want = SIDES[normalize_sentence(answer).strip(" .")]
    subject = subject_stems(question)
    best, _ = _best_sentences(sents, subject)
    sides, where = set(), ""
    for s, _ in best:
        for clause in _clauses(s):
            hits = [t for t in tokens(clause) if t[0] in subject]
            if not hits or _mention_status(clause, hits[0][1], hits[0][2]) in ("negated", "possible"):
                continue
            # the side word names the subject: up to five words before it, or "... in the left X" after
            near = " ".join(clause[: hits[0][1]].split()[-5:])
            after = re.match(r"\W*(?:[\w-]+\W+){0,3}?(?:(?:on|in|of) the (left|right)\b|(?:in|on|of) (both)\b|"
                             r"(bilaterally)\b)", clause[hits[-1][2]:])
            found = {SIDES.get(m.group(1), "bilateral") for m in _SIDE.finditer(near)}
            found |= {SIDES.get(next(g for g in after.groups() if g), "bilateral")} if after else set()
            sides |= found
            where = where or (s if want in found else "")
    if not sides:
        return False, "", "side_not_stated"
    if want not in sides:
        return False, "", "contradicted_by_report"
    if len(sides) > 1:
        return False, "", "ambiguous_side"
    return True, where, ""


def _tightest(toks: list[tuple[str, int, int]], need: set[str]) -> tuple[tuple, tuple]:
    """(first, last) token of the shortest run of ``toks`` holding every stem of ``need``: "centred in
    the right upper lobe extending into the right middle lobe" holds "right middle" at the end,
    where "extending into" reaches it, not at its first "right"."""
    hits = [t for t in toks if t[0] in need]
    best = (hits[0], max(hits, key=lambda t: t[2]))
    for j, last in enumerate(hits):
        seen, i = set(), j
        while i >= 0 and seen != need:
            seen.add(hits[i][0])
            i -= 1
        if seen == need:
            first = hits[i + 1]
            if last[2] - first[1] < best[1][2] - best[0][1]:
                best = (first, last)
    return best


# A descriptor given as a range or an alternative of another descriptor ("isoechoic to mildly
# hypoechoic", "solid or cystic"): the report commits to neither end. Descriptors are read by their
# adjective endings, so "extends to the right lobe" is no range.
_DESCRIPTOR = r"[a-z-]+(?:ic|al|ous|ed|ar|ive|ent|ant|id)"
_RANGE_ADVERB = r"(?:(?:mildly|slightly|minimally|moderately|markedly|very|predominantly|partly|focally)\s+)?"
_RANGE_BEFORE = re.compile(rf"\b{_DESCRIPTOR}\s+(?:to|or|and/or|/)\s+{_RANGE_ADVERB}$")
_RANGE_AFTER = re.compile(rf"^\s*(?:to|or|and/or|/)\s+{_RANGE_ADVERB}{_DESCRIPTOR}\b")


# "the mid and lower pole", "the superficial and deep lobes": two places sharing one head noun
SHARED_HEAD = re.compile(r"\b([a-z]+)\s+(?:and|or|and/or|/|to|through|-)\s+(?:the\s+)?([a-z]+)\s+(poles?|lobes?|segments?|"
                         r"regions?|thirds?|portions?|zones?)\b")


def _one_of_two_places(s: str, answer_words: set[str]) -> bool:
    """Whether ``s`` names the answer's place only together with another of the same head noun
    ("occupies the superficial and deep lobes" for the key "superficial lobe"): the lesion spans both."""
    for m in SHARED_HEAD.finditer(s):
        if RELATIVE_TO_BEFORE.search(s[:m.start(2)]):
            continue  # "anterior to the lower pole" is a relation, not two places
        head = re.sub(r"s$", "", m.group(3))
        if head in answer_words and (m.group(1) in answer_words) != (m.group(2) in answer_words):
            return True
    return False


_NUMBERED_PLACES = re.compile(rf"\b(segment|level) ({_PLACE_NUMBER})(?: and \1 {_PLACE_NUMBER})+\b")


def _place_number(word: str) -> str:
    word = word.rstrip("ab") if len(word) > 1 and word[-1] in "ab" else word  # "4b" is segment 4
    return _ROMAN.get(word, word)


def _one_of_numbered_places(s: str, answer: str) -> bool:
    """Whether ``s`` names the answer's numbered place only in a list of several ("spans segment 5 and
    segment 8", the rewrite of "segments 5 and 8", for the key "segment 5"): the lesion lies in each."""
    said = re.search(rf"\b(segment|level) ({_PLACE_NUMBER})\b", normalize_sentence(answer))
    if not said:
        return False
    for m in _NUMBERED_PLACES.finditer(s):
        if m.group(1) != said.group(1):
            continue
        numbers = {_place_number(n) for n in re.findall(rf"\b{m.group(1)} ({_PLACE_NUMBER})\b", m.group(0))}
        if _place_number(said.group(2)) in numbers and len(numbers) > 1:
            return True
    return False


# addition: words that name only the kind of a question's answer ("Which anatomic variant is present?")
_ANSWER_KINDS = ("anatomic", "anatomical", "variant", "variation", "anomaly", "congenital", "status", "category",
                 "classification", "stage")


# a place said by its relation to a structure ("superficial to the residual deep lobe", "anterior to
# the kidney", "deep to the fascia"): the structure named after it is where the lesion is not
RELATIVE_TO_BEFORE = re.compile(r"\b(?:superficial|deep|anterior|posterior|medial|lateral|superior|inferior|proximal|"
                                r"distal|cranial|caudal|above|below)\s+to\s+(?:(?:the|its|a|an)\s+)?(?:[\w-]+\s+){0,2}$")


# a key that places by a relation to a reference structure ("deep to the fascia", "proximal to the
# joint"): the relation must be said of that structure, since "deep to the skin" is not deep to the fascia
_RELATION_ANSWER = re.compile(r"^(deep|superficial|proximal|distal|anterior|posterior|medial|lateral|superior|"
                              r"inferior|cranial|caudal)\s+to\s+(?:the\s+)?(?:[\w-]+\s+){0,3}?([\w-]+)$")


def check_term(question: str, answer: str, sents: list[str]) -> tuple[bool, str, str]:
    """Any other key (a diagnosis, a location, a grade, a category): every content word of the
    answer in one sentence about the question's subject, asserted there and nowhere denied.

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The key (the correct option's text).
    sents : list of str
        The report's sentences, normalised (:func:`normalize_sentence`).

    Returns
    -------
    kept : bool
        Whether the report asserts the key.
    sentence : str
        The first sentence asserting it when kept; empty otherwise.
    reason : str
        Empty when kept; else ``empty_answer``, ``answer_not_in_report``, ``contradicted_by_report``,
        ``secondary_location``, ``relative_location`` (the answer's structure is named only as what
        the subject lies superficial / deep / anterior ... to), ``several_places_in_report`` (the answer's
        place named only with another of its kind: "the superficial and deep lobes"), ``uncertain_in_report``
        or ``only_historical``.
    """
    need = {s for s, _, _ in tokens(normalize_sentence(answer))}
    if len(need) > 1:
        # "parietal lesion" states the parietal lobe, "interpolar kidney" the interpolar region
        need -= {stem(w) for w in ("lobe", "region", "area", "portion", "part", "aspect")}
    if not need:
        return False, "", "empty_answer"
    q = normalize_sentence(question)
    subject = subject_stems(question)
    diagnosis = bool(re.search(r"\b(?:diagnos\w*|most likely|represent\w*|favou?red)\b", q))
    # "What was the indication for the pancreatectomy?", "What operation has the patient had?": the past is asked
    # "Which anatomic variant is present?": the question names only the kind of its answer, which
    # then stands for the subject ("Pancreas divisum.")
    category = bool(subject) and subject <= {stem(w) for w in _ANSWER_KINDS}
    asks_indication = bool(re.search(r"\b(?:indication|reason)\s+for\b", q) or (
        re.search(r"\b(?:operation|procedure|surgery)\b", q) and not _ASKS_ADVICE.search(q)
        and re.search(r"\b(?:had|has|have|undergone|underwent|performed|previous|prior)\b", q)))
    statuses, where = [], ""
    relation = _RELATION_ANSWER.match(normalize_sentence(answer).strip(" ."))
    answer_words = set(re.findall(r"[a-z]+", normalize_sentence(answer)))
    for s in sents:
        toks = tokens(s)
        have = {t[0] for t in toks}
        if relation and not re.search(rf"\b{relation.group(1)}\s+to\s+(?:the\s+|its\s+|a\s+)?(?:[\w-]+\s+){{0,3}}?"
                                      rf"{re.escape(relation.group(2))}\b", s):
            continue  # "deep to the skin ... and superficial to the fascia" is no "deep to the fascia"
        if _OPERATION.search(s):
            have |= {stem(w) for w in ("operation", "procedure", "surgery")}  # "What operation has the patient had?"
        if not need <= have or (subject and not subject & have and not diagnosis and not category):
            continue
        first, last = _tightest(toks, need)
        # the answer's whole span is the mention: "surgically absent" states absence itself
        st = _mention_status(s, first[1], last[2] if last[2] - first[1] < 60 else first[2])
        hedge = nearest_hedge(s[: first[1]]) if st == "possible" else None
        if hedge and re.search(rf"\b{re.escape(hedge)}\b", q):
            st = "affirmed"  # "What are the lesions suspicious for?" asks about the suspicion itself
        if SECONDARY.search(s[: first[1]]):
            st = "secondary"
        if not relation and RELATIVE_TO_BEFORE.search(s[: first[1]]):
            st = "relative"  # "superficial to the residual deep lobe" is not in the deep lobe
        if _one_of_two_places(s, answer_words) or _one_of_numbered_places(s, answer):
            st = "several"  # "the superficial and deep lobes": the lesion is in neither alone
        if _spread(s, [(first[1], last[2])]):
            st = _spread(s, [(first[1], last[2])])  # "isoechoic to mildly hypoechoic" settles neither end, "mixed cystic and solid" neither part
        if st == "historical" and asks_indication:
            st = "affirmed"  # "What was the indication for the pancreatectomy?" asks what was operated on
        statuses.append(st)
        if st in ("affirmed", "favoured") and not where:
            where = s
    if not statuses:
        return False, "", "answer_not_in_report"
    if "negated" in statuses:
        return False, "", "contradicted_by_report"
    if "several" in statuses:
        return False, "", "several_places_in_report"
    if "range" in statuses:
        return False, "", "range_in_report"
    if "mixed" in statuses:
        return False, "", "mixed_composition_in_report"
    if "secondary" in statuses and not where:
        return False, "", "secondary_location"
    if "relative" in statuses and not where:
        return False, "", "relative_location"
    if "possible" in statuses or "hypothetical" in statuses:
        return False, "", "uncertain_in_report"
    if not where:
        return False, "", "only_historical" if "historical" in statuses else "uncertain_in_report"
    if "favoured" in statuses and not diagnosis:
        return False, "", "uncertain_in_report"
    return True, where, ""


def answer_kind(question: str, answer: str) -> str:
    """yes_no | quantity | count | side | term: which rule reads this key.

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The key (the correct option's text).

    Returns
    -------
    str
        ``yes_no``, ``quantity``, ``count``, ``side`` or ``term``.
    """
    a = normalize_sentence(answer).strip(" .")
    if a in ("yes", "no"):
        return "yes_no"
    if measurements(a):
        return "quantity"
    if re.search(r"\bhow many\b", normalize_sentence(question)) and _count(a) is not None:
        return "count"
    return "side" if a in SIDES else "term"


# Rewrites the report-grounded check makes on top of ``REWRITES`` (never in the schema extractor, whose
# institutional patterns are written against the report's own wording): vessel and duct abbreviations
# spelled out, and a structure called "free" / "spared" read as not involved ("The SMA is free").
CHECK_REWRITES = (
    (r"\bsma\b", "superior mesenteric artery sma"), (r"\bsmv\b", "superior mesenteric vein smv"),
    (r"\bivc\b", "inferior vena cava ivc"), (r"\bcbd\b", "common bile duct cbd"),
    (r"\b(is|are)\s+(free|spared|uninvolved)\b(?!\s+(?:of|from|fluid|air|gas)\b)", r"\1 \2, not involved,"),
    # an operation named by its eponym is the operation ("Whipple procedure" is a pancreaticoduodenectomy)
    (r"\bwhipple(?:\s+procedure)?\b(?!\s+(?:procedure\s+)?pancreaticoduodenectomy)", "whipple procedure pancreaticoduodenectomy"),
)
# addition: an organ's removal named by its operation ("splenectomy": the spleen has been removed)
REMOVED_ORGAN = {"splenectomy": "spleen", "nephrectomy": "kidney", "cholecystectomy": "gallbladder",
                 "thyroidectomy": "thyroid", "hysterectomy": "uterus", "pancreatectomy": "pancreas",
                 "adrenalectomy": "adrenal gland", "oophorectomy": "ovary", "appendectomy": "appendix",
                 "appendicectomy": "appendix", "colectomy": "colon", "gastrectomy": "stomach",
                 "prostatectomy": "prostate", "mastectomy": "breast", "cystectomy": "bladder",
                 "orchiectomy": "testis", "orchidectomy": "testis"}
# an operation in any wording: what a question about "the operation" / "the procedure" is answered by
_OPERATION = re.compile(r"\b(?:\w+(?:ectomy|ectomies|otomy|ostomy|plasty)|resection|whipple|procedure|surgery|operation)\b")


def _check_wording(text: str) -> str:
    for pat, rep in CHECK_REWRITES:
        text = re.sub(pat, rep, text, flags=re.IGNORECASE)
    return text


_REMOVAL_Q = re.compile(r"^\W*(?:has|have|was|were)\s+(?:the\s+)?(?:patient'?s?\s+)?(.+?)\s+(?:been\s+)?(?:surgically\s+)?"
                        r"(?:removed|resected|excised)\b")


def _check_removal(q: str, yes: bool, sents: list[str]) -> tuple[bool, str, str] | None:
    """"Has the spleen been removed?" answered by the operation that removes it ("Status post distal
    pancreatectomy and splenectomy"); None when the question asks no removal of an organ the
    operations of :data:`REMOVED_ORGAN` name, or no sentence names such an operation."""
    m = _REMOVAL_Q.match(q)
    if not m:
        return None
    asked = {stem(w) for w in m.group(1).split()}
    ops = [op for op, organ in REMOVED_ORGAN.items() if {stem(w) for w in organ.split()} <= asked]
    for s in sents:
        for op in ops:
            for hit in re.finditer(rf"\b{op}\b", s):
                if _mention_status(s, hit.start(), hit.end()) in ("negated", "possible", "hypothetical"):
                    continue
                return (True, s, "") if yes else (False, "", "contradicted_by_report")
    return None


# "Which study is recommended next?", "Is endoscopic ultrasound advised?": asks what the report recommends
_ASKS_ADVICE = re.compile(r"\b(?:recommend\w*|advised|advisable)\b")


def check_key(question: str, answer: str, findings: str, impression: str) -> tuple[bool, str, str]:
    """(kept, supporting sentence, reject reason) of one key against its report, by the sentence rules.

    The full check reads a lesion question from the report's findings first
    (:func:`medscope.benchgen.lesion_grounding.check_key`) and falls back to this.

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

    Returns
    -------
    kept : bool
        Whether the report states the key (the rule :func:`answer_kind` picks decides).
    sentence : str
        The supporting sentence as the report writes it; empty when not kept.
    reason : str
        Empty when kept; else the rule's reject reason.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods ("report-grounded check").
    """
    # a recommendation asserts no finding, but it is what a question about the recommendation asks
    asks_advice = bool(_ASKS_ADVICE.search(normalize_sentence(question)))
    original = [s for s in sentences(findings) + sentences(impression)
                if asks_advice or not is_recommendation(normalize_sentence(s))]
    sents = [_check_wording(normalize_sentence(s)) for s in original]
    question = _check_wording(question)
    kind = answer_kind(question, answer)
    if kind == "yes_no":
        kept, where, why = check_yes_no(question, normalize_sentence(answer).startswith("yes"), sents)
    else:
        kept, where, why = {"quantity": check_quantity, "count": check_count, "side": check_side,
                            "term": check_term}[kind](question, answer, sents)
    return kept, (original[sents.index(where)] if where in sents else where), why
