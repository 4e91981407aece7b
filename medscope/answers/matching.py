"""Answer matching: what does a reply decide about the asked finding? (counterfactual paper §3.1, §3.10)

One reader for every protocol (the counterfactual episodes, the organ-presence probe of seed
003, the plain condition's free text and the prose inside ``<final>`` answers). It reads a reply
as a careful clinician would, in this order; the first rule that decides wins, and the rule's
name is returned with the decision (:class:`Reading`, ``rule``):

0. Structure and revisions: ``final-tag`` — a ``<final>`` tag outranks everything
   (its answer text is read by these rules; refer / clarify stay what they are); ``json-field``
   — a JSON reply's verdict field, whatever its name (:mod:`medscope.answers.structured`; one
   that does not resolve is ``refer``, never a claim; a JSON reply without one is read from its
   string values, never its keys); ``self-correction`` — a reply that takes its answer back
   ("Yes - actually, on closer inspection, no") is read by what follows its last correction.
1. ``verdict-line`` — an explicit verdict ("Final answer: No", "Conclusion: no pneumothorax",
   "The answer is yes", "Therefore, ...", "Impression: ..."); the *last* one that decides wins,
   so a reply that reasons aloud and then concludes is read by its conclusion.
2. ``label-line`` — the finding as a label ("Pneumothorax: No", "PTX: no", "Polyp? No.",
   "| Lesion | No |", "- Pneumothorax: absent"). Finding polarity: never flipped.
   Then ``final-colon``: a short verdict after the reply's last colon ("... my assessment: no",
   "Result: negative."), with the question's polarity.
3. ``leading-yes-no`` — the reply opens with a yes/no particle (also "sí", "oui", "nein",
   "нет", "是", "いいえ"...) or a polarity word ("None.", "Absent", "Present (left apex)").
   Only yes/no particles carry the *question's* polarity: to a health question ("Is this image
   healthy?") "Yes" means no finding; "None." / "No lesion." keep the finding's polarity.
   To a health question an explicit statement about the finding outranks the particle ("No, I
   don't see a pneumothorax" denies it). Then ``search-outcome``: a reported search and its
   result ("I looked for a polyp and found none" denies; "... and found one" claims).
4. ``mention`` — every mention of the finding (its words, plural, head noun, synonyms from
   ``data/synonyms.yaml`` or the view's own list), each with its ConText status
   (:mod:`medscope.answers.context`): any affirmed mention is a claim; possible and negated
   mentions together ("no definite X, but a small one cannot be excluded") commit to neither
   and are ``refer``; otherwise possible is a claim, negated a denial. Hypothetical ("whether
   there is X", "assess for X") and historical mentions are not assertions.
5. ``health-words`` — normal / abnormal words with their status ("Nothing abnormal",
   "I don't think it's normal", "A lesion is visible"), the same aggregation.
6. ``undecided`` — nothing asserted and the reply says why: an unusable image or the wrong
   anatomy is ``clarify``; declining to decide on a usable image ("cannot determine",
   "unclear", "a radiologist should review") is ``refer``.
7. ``predicate`` — the finding is never named but the reply states presence or absence of its
   subject ("It is not visible on this slice").
8. ``open`` — to an open question, any other substantive reply names an abnormality (claim).

Hedges (the rule, from the counterfactual paper's cost matrix where any claim of the finding is a claim): a
hedged affirmation ("possible", "cannot be excluded", "consistent with") is a claim; a hedged
denial ("unlikely", "no definite", "I doubt") is a denial; a reply that commits to neither is
``refer``. The organ-presence paper's lexical hedge flag is separate (``protocols/organ_presence/replies``):
the verdict follows the surface reading, the hedge is reported beside it.

References: mention status is ConText (H. Harkema et al., J. Biomed. Inform. 42(5), 2009),
extending NegEx (W. W. Chapman et al., J. Biomed. Inform. 34(5), 2001); see ``context``.
"""

from __future__ import annotations

import json
import re
from itertools import groupby
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import yaml

from contextvars import ContextVar

from medscope.answers import languages, markup, parser, revisions, structured
from medscope.answers.context import status
from medscope.answers.lexicon import (  # the word lists, importable from here as before
    ABNORMAL_WORDS, CLARIFY_PHRASES, HEDGED_LEADS, NO_PARTICLES, NORMAL_SIGNS, NORMAL_WORDS, ORGAN_WORDS, POLARITY_WORDS,
    PROBABILITY_CLAIM_AT, PROBABILITY_DENY_AT,
    PUNCTUATED_PARTICLES, REFER_PHRASES, RESECTIONS, YES_PARTICLES,
)

RULES = ("final-tag", "json-field", "json-partial", "self-correction", "verdict-line", "label-line", "final-colon",
         "both", "leading-yes-no", "search-outcome", "mention", "health-words", "declined", "probability",
         "rating", "graded-sign", "other-language", "table-row", "bare-mention", "other-subject", "modified-echo", "qualified-normal", "differential", "conflicting-evidence", "unaccounted-negation", "hedged-workup", "one-side-seen", "region-excluded", "no-secondary-signs", *markup.UNCLEAR_WHY,
         "undecided", "normal-sign", "other-entity", "predicate", "open", "none")

_WRONG_ANATOMY = re.compile(r"\b(?:this|it|(?:the|this) (?:\w+ )?(?:image|scan|study|film|picture|frame))"
                            r" (?:is|appears to be|looks like|seems to be|shows) an? [^.;]{0,60}?"
                            r"(?:(?:rather than|instead of) (?:an? )?\w|not (?:an?|the)\b)|"
                            r"\b(?:this|it|(?:the|this) (?:image|scan|picture|frame)) (?:is|does) not (?:appear to be |look like |"
                            r"show )?an? (?:[\w-]+ ){0,3}(?:image|scan|x-ray|radiograph|ultrasound|ct|mri|frame|film|"
                            r"photo|study|slice|mammogram|endoscopy|colonoscopy|sonogram)\b")
_CONTRACTIONS = ((r"\bcan't\b", "can not"), (r"\bcannot\b", "can not"), (r"\bwon't\b", "will not"),
                 (r"\bshan't\b", "shall not"), (r"\bain't\b", "is not"), (r"n't\b", " not"),
                 (r"\b(there|it|that|what|here)'s\b", r"\1 is"), (r"\bi'm\b", "i am"),
                 (r"\b(i|we|you|they)'d\b", r"\1 would"), (r"\b(i|we|you|they)'ve\b", r"\1 have"),
                 (r"\b(they|we|you)'re\b", r"\1 are"),
                 # the apostrophe left out, as typed in a hurry
                 (r"\btheres\b", "there is"), (r"\bisnt\b", "is not"), (r"\barent\b", "are not"),
                 (r"\bdoesnt\b", "does not"), (r"\bdont\b", "do not"), (r"\bcant\b", "can not"),
                 (r"\bwasnt\b", "was not"), (r"\bits not\b", "it is not"))
_CONTRACTION_RES = tuple((re.compile(p), r) for p, r in _CONTRACTIONS)
# Positive idioms built from negation words ("you can't miss the liver", "no doubt it's there",
# "not only the spleen but also ..."): read word by word they deny, so they are said plainly
# before any reading (issue 48, set H). A rewrite only drops the negation word of the idiom; any
# other negation in the sentence still counts, so a reply that also denies reads two ways (unclear).
_POSITIVE_IDIOMS = tuple((re.compile(p), r) for p, r in (
    (r"\b(?:you|one|we|i)\s+(?:can|could|would|will)\s+not\s+(?:possibly\s+)?miss\b", "you clearly see"),
    (r"\b(?:can|could)\s+not\s+(?:possibly\s+)?be\s+missed\b", "is clearly seen"),
    (r"\b(?:impossible|hard|difficult)\s+to\s+miss\b", "clearly seen"),
    (r"\b(?:there\s+is\s+|there\s+can\s+be\s+|i\s+have\s+|with\s+)?(?:no|little)\s+(?:doubt|mistaking|denying)"
     r"(?:\s+about\s+it)?(?:\s+(?:that|whatsoever|at\s+all))?\b", "certainly"),
    # "no question" is the idiom only as a statement ("no question about it", "there's no question it's there")
    (r"\b(?:(?:there\s+is|there\s+can\s+be|i\s+have|with)\s+no\s+question(?:\s+about\s+it)?(?:\s+that)?|"
     r"no\s+question\s+about\s+it|no\s+question(?:\s+that)?(?=\s+(?:it|this|there|the|they)\s))\b", "certainly"),
    (r"\bwithout\s+(?:a|any)\s+doubt\b", "certainly"),
    (r"\bnot\s+only\b([^.;!?]{1,80}?)\bbut\s+also\b", r"both\1and also"),
))
_MARKDOWN = re.compile(r"[*_\"`#>]")
_SPACES = re.compile(r"[ \t]+")
_PARTICLE_END = r"(?=$|[\s,.!?;:()\u2013\u2014\uff0c\u3001\u3002]|\s-)"
_VERDICT = re.compile(
    r"(?:^|(?<=[\s(]))(?:(?:my|the|final|so the|so my) answer(?: would be| is)?|final verdict|verdict|"
    r"answer(?: first)?|in conclusion|conclusion|impression|bottom line|bluf|in summary|summary|overall|decision|"
    r"(?:i am |i would be |so )?leaning(?: towards?)?)"
    r"\s*(?:is\s*)?[:\-\u2013\u2014,]?\s+(?P<rest>\S.*)$"
)
_THEREFORE = re.compile(r"^(?:therefore|thus|hence|so)\b,?\s*(?P<rest>\S.*)$")
_LABEL_PREFIX = r"(?:(?:evidence of|evaluate for|evaluation for|assess for|signs? of|checking for|check for|any)\s+)?"
_LABEL_SUFFIX = (r"(?:\s+(?:present|detected|seen|visible|identified|found|status|result|"
                 r"in (?:the )?(?:field of view|fov|slice|image)))?")
_SIDES = {"left": "right", "right": "left"}
_ABSENT_PREDICATE = re.compile(
    r"\bnot\s+(?:\w+\s+){0,2}?(?:visible|present|seen|identified|depicted|shown|visuali[sz]ed|evident|"
    r"appreciated|included|captured|detected|imaged|covered|in (?:this|the) (?:image|slice))\b|\bno evidence of\b|"
    r"\babsent\b|\bdoes not (?:appear|show|contain|include)\b|"
    r"\b(?:it|there|they|one)\s+(?:is|are|was)\s+(?:not|none)\s*[.!]?$|\bthere\s+is\s+none\b|"
    # (issue 48, set L) "I don't see it.": the pronoun is the asked finding
    r"\b(?:i|we)\s+(?:do|did|can|could)\s+not\s+(?:(?:clearly|really|definitely)\s+)?(?:see|identify|find|"
    r"visuali[sz]e|appreciate|make out)\s+(?:it|them|one|any)\b")
_PRESENT_PREDICATE = re.compile(
    r"\b(?:visible|present|seen|identified|depicted|shown|visuali[sz]ed|evident|appreciated|included|"
    r"captured|detected|appears?|contains?|can see|i see)\b")


@dataclass(frozen=True)
class Reading:
    action: str  # answer | refer | clarify | unparseable | unclear (the reader's evidence does not agree)
    claim: bool | None  # for an answer: does it claim the finding
    rule: str  # which rule decided (RULES)
    evidence: str = ""  # the text that decided, or why the reading is unclear


# (issue 48, set U) a dictation error: "Know fracture seen." for "No fracture seen."; "know" opening a sentence
# before a noun, or after "there is", is the heard "no" (not "know that", "know if", "know the ...")
_DICTATED_NO = re.compile(r"(^|[.!?;:\n\u2022-]\s*|\bthere\s+(?:is|are)\s+)know\s+(?!(?:that|if|whether|what|how|why|the|"
                          r"this|these|those|it|its|your|you|i|we|they|he|she|him|her|them|of|about|more|less|when|where|"
                          r"which|who|a|an|anything|nothing|something|everything|for|to|and|or|my|our|their)\b)(?=[a-z])")


def normalize(text: str) -> str:
    """Lower case, unified quotes and spaces, markdown removed, contractions expanded
    ("doesn't" -> "does not", "can't" -> "can not").

    Parameters
    ----------
    text : str or None
        Any text; None reads as empty.

    Returns
    -------
    str
        The normalised text, runs of spaces and tabs collapsed, stripped.
    """
    text = (text or "").lower().replace("\u2019", "'").replace("\u2018", "'")
    text = _MARKDOWN.sub(" ", text)
    if "'" in text or "cannot" in text or re.search(r"\b(?:theres|isnt|arent|doesnt|dont|cant|wasnt|its)\b", text):
        for pat, rep in _CONTRACTION_RES:
            text = pat.sub(rep, text)
    if re.search(r"\b(?:miss|missed|doubt|question|mistaking|denying|only)\b", text):
        for pat, rep in _POSITIVE_IDIOMS:
            text = pat.sub(rep, text)
    if "know" in text:
        text = _DICTATED_NO.sub(r"\1no ", text)
    return _SPACES.sub(" ", text).strip()


def infer_question_kind(question: str) -> str:
    """presence | health | open, from the wording of a question.

    Parameters
    ----------
    question : str
        The question as asked.

    Returns
    -------
    str
        ``"health"`` for a yes/no question about being healthy / normal / unremarkable, ``"presence"``
        for another yes/no question (opening with is, are, does, has, any, ...), else ``"open"``.
    """
    q = normalize(question)
    if re.search(r"\b(healthy|normal|unremarkable)\b", q) and re.match(
        r"^(is|are|does|do|would|can|could|was|were|will)\b", q
    ):
        return "health"
    if re.match(r"^(is|are|does|do|can|could|was|were|has|have|would|will|any)\b", q):
        return "presence"
    return "open"


@lru_cache(maxsize=1)
def synonym_table() -> dict[str, tuple[str, ...]]:
    """Finding -> synonyms, from ``data/synonyms.yaml`` shipped with the package.

    Returns
    -------
    dict of str to tuple of str
        Normalised finding (or head noun) -> its normalised synonyms (cached).
    """
    raw = yaml.safe_load(resources.files("medscope.answers").joinpath("data", "synonyms.yaml").read_text("utf-8"))
    return {normalize(k): tuple(normalize(s) for s in v) for k, v in raw.items()}


def _plural(word: str) -> tuple[str, ...]:
    if word.endswith(("s", "x", "sh", "ch")):
        return (word, word + "es")
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return (word, word[:-1] + "ies")
    return (word, word + "s")


def _singular(phrase: str) -> str:
    """The phrase with its last word in the singular ("adrenal glands" -> "adrenal gland", "lungs" ->
    "lung"); unchanged where the word is not a regular plural ("pancreas", "uterus", "mass")."""
    words = phrase.split()
    if not words:
        return phrase
    w = words[-1]
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("s") and len(w) > 3 and not w.endswith(("ss", "us", "is", "as", "os", "ys" if len(w) < 5 else "-")):
        w = w[:-1]
    return " ".join(words[:-1] + [w])


@lru_cache(maxsize=256)
def finding_terms(finding: str, synonyms: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Words that name the finding: itself, plural, head noun, synonyms (longest first).

    Parameters
    ----------
    finding : str
        The asked finding.
    synonyms : tuple of str, optional
        Extra synonyms (the view's own list). Default ``()``.

    Returns
    -------
    tuple of str
        Normalised terms with their plurals, longest first; empty when ``finding`` is empty.
    """
    f = normalize(finding)
    if not f:
        return ()
    # a finding asked in the plural ("Is the lungs visible?") is named in the singular too ("the left
    # lung is seen", "neither adrenal gland is identified")
    f = _singular(f)
    table = synonym_table()
    words = f.split()
    head = words[-1]
    terms: set[str] = set(_plural(f)) | {normalize(finding)}
    if len(words) > 1 and head not in ("lesion", "lesions", "abnormality", "finding"):
        terms.update(_plural(head))
    sideless = " ".join(w for w in words if w not in _SIDES)
    if sideless != f and sideless:
        terms.update(_plural(sideless))  # "only the left adrenal gland" names the side-less organ
    for key in (f, sideless, head):
        for syn in table.get(key, ()):
            terms.update(_plural(syn))
    # a finding asked by one of its synonyms ("IVC", "oesophagus") is named by the others and the key
    for key, syns in table.items():
        if f in syns or (sideless and sideless != f and sideless in syns):
            terms.update(_plural(key))
            for syn in syns:
                terms.update(_plural(syn))
    for syn in synonyms:
        terms.update(_plural(normalize(syn)))
    if len(words) > 1 and head in ("lesion", "lesions"):
        terms.update(_plural(head))  # "breast lesion": "lesion" itself names it
    for adjective in _ADJECTIVES_OF_ORGAN.get(sideless, ()):
        # "the cardiac silhouette", "the renal outline": the organ's own outline or tissue named by its adjective
        terms.update(f"{adjective} {noun}" for noun in _OUTLINE_NOUNS)
    return tuple(sorted(terms, key=len, reverse=True))


# An organ named by its adjective and a noun for its outline or tissue (issue 48, set Q: "The cardiac
# silhouette is ... normal in size" describes the heart). Every organ with an adjective of its own, not
# one reply's phrase; a property after the adjective ("no focal hepatic lesion") is not the organ (_read).
_ADJECTIVES_OF_ORGAN = {"heart": ("cardiac", "cardiomediastinal", "cardiopericardial"), "liver": ("hepatic",), "kidney": ("renal",), "spleen": ("splenic",),
                        "pancreas": ("pancreatic",), "stomach": ("gastric",), "lung": ("pulmonary",),
                        "bladder": ("vesical",), "urinary bladder": ("vesical",), "colon": ("colonic",),
                        "uterus": ("uterine",), "prostate": ("prostatic",), "aorta": ("aortic",),
                        "duodenum": ("duodenal",), "thyroid": ("thyroid",), "thyroid gland": ("thyroid",)}
# (issue 48, set S) and what an image shows of the organ's own substance: its uptake on PET ("diffuse mild hepatic
# uptake"), its echotexture on ultrasound
_OUTLINE_NOUNS = ("silhouette", "shadow", "contour", "outline", "parenchyma", "tissue", "uptake", "echotexture", "echogenicity")


@lru_cache(maxsize=256)
def name_terms(finding: str) -> tuple[str, ...]:
    """The words that name the finding itself, not its signs: the finding, its head noun and its
    side-less form with their plurals, without the synonym table ("lesion" for "breast lesion",
    never "hypoechoic area"; "consolidation", never "opacity").

    Parameters
    ----------
    finding : str
        The asked finding.

    Returns
    -------
    tuple of str
        A subset of :func:`finding_terms` (without the view's or the table's synonyms).
    """
    f = normalize(finding)
    if not f:
        return ()
    f = _singular(f)
    words = f.split()
    terms = set(_plural(f)) | {normalize(finding)} | set(_plural(words[-1]) if len(words) > 1 else ())
    sideless = " ".join(w for w in words if w not in _SIDES)
    if sideless:
        terms.update(_plural(sideless))
    return tuple(sorted(terms, key=len, reverse=True))


# A qualifier that makes the finding's head noun another entity ("descending colon" asked about the
# sigmoid colon, "thyroid nodule" asked about a lung nodule); an adjective names its organ.
# (issue 48, set S) one table: it was defined twice, the second (the one in use, since both readers look the name
# up when they run) lacking "biliary", "mammary", "thyroid" and "rectal"
_ORGAN_ADJECTIVES = {"pulmonary": "lung", "renal": "kidney", "hepatic": "liver", "splenic": "spleen",
                     "cardiac": "heart", "gastric": "stomach", "pancreatic": "pancreas", "colonic": "colon",
                     "vesical": "bladder", "mammary": "breast", "adrenal": "adrenal", "thyroid": "thyroid",
                     "uterine": "uterus", "prostatic": "prostate", "rectal": "rectum", "biliary": "gallbladder",
                     "aortic": "aorta", "duodenal": "duodenum"}
_SEGMENT_QUALIFIERS = ("ascending", "descending", "transverse", "sigmoid", "rectosigmoid", "cecal", "caecal",
                       "duodenal", "jejunal", "ileal", "esophageal", "oesophageal", "breast", "liver", "kidney", "lung",
                       "spleen", "bone", "skin", "bowel")


# organs named by an adjective or noun before a bare head noun that the finding's own names do not use ("a renal
# stone" asked about gallstones, whose names qualify "stone" by gallbladder / biliary / gall only)
_SITE_QUALIFIERS = frozenset({"renal", "kidney", "ureteric", "ureteral", "ureter", "urinary", "bladder", "vesical",
                              "salivary", "pancreatic", "prostatic", "biliary", "gallbladder", "gall", "hepatic", "liver",
                              "splenic", "pulmonary", "lung", "breast", "thyroid", "adrenal", "ovarian", "uterine"})


def _head_of_other_site(s: str, m: re.Match, finding: str) -> bool:
    """Whether a one-word name that is only the head noun of the finding's longer names ("stone" of "gallbladder
    stone") is qualified by another site than those names give it ("No gallstones; a 4 mm renal stone is noted":
    the stone is the kidney's, not the gallbladder's; issue 48)."""
    head = m.group(0)
    if " " in head or head in normalize(finding).split():
        return False
    own = {t.split()[-2] for t in finding_terms(finding) if " " in t and t.split()[-1] == head}
    before = s[:m.start()].split()
    if not own or not before:
        return False
    q = before[-1].strip(",;:()")
    return q in _SITE_QUALIFIERS and q not in own


def _other_qualified_head(s: str, m: re.Match, finding: str) -> bool:
    """Whether the mention is the finding's bare head noun qualified as another entity."""
    words = normalize(finding).split()
    if len(words) < 2 and _head_of_other_site(s, m, finding):
        return True
    if len(words) < 2 or m.group(0) not in _plural(words[-1]):
        return False
    before = s[:m.start()].split()
    if not before:
        return False
    q = before[-1].strip(",;:()")
    named = _ORGAN_ADJECTIVES.get(q, q if q in _SEGMENT_QUALIFIERS else None)
    return named is not None and q not in words and not any(named == w or named in _plural(w) for w in words)


@lru_cache(maxsize=256)
def _term_pattern(terms: tuple[str, ...]) -> re.Pattern | None:
    if not terms:
        return None
    alt = "|".join(re.escape(t) for t in terms)
    return re.compile(rf"(?<![\w-])(?:{alt})(?![\w-])(?! effect)")


def _lines(text: str) -> list[str]:
    """Normalised non-empty lines; list bullets dropped, table rows read as "label: value"."""
    out = []
    for raw in (text or "").splitlines():
        line = normalize(raw)
        if line.count("|") >= 2:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            line = f"{cells[0]}: {' '.join(cells[1:])}" if len(cells) > 1 else cells[0]
        line = re.sub(r"^(?:[-+\u2022]\s+|\d{1,2}[.)]\s+|[a-z][.)]\s+(?=\w))", "", line).strip()
        if line and re.search(r"\w", line):
            if out and _BARE_LABEL.match(out[-1]) and _NEXT_VALUE.match(line):
                # "Pneumothorax:" over "absent": the label's value on the next line is read as on the same
                # line; read apart, the label alone named the finding and read as a claim (issue 48, set P)
                out[-1] = f"{out[-1]} {line}"
                continue
            out.append(line)
    return out


# a line that is only a short label ("Pneumothorax:", "Present:") and a short value line under it
_BARE_LABEL = re.compile(r"^[^\W\d_][^:\n]{0,40}:$")
_NEXT_VALUE = re.compile(r"^(?!.*:)\W*(?:[\w'-]+\W*){1,6}$")


def _osa_distance(a: str, b: str, cap: int) -> int:
    """Edit distance with adjacent transpositions (optimal string alignment), stopped past ``cap``."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > cap:
            return cap + 1
        prev2, prev = prev, cur
    return prev[-1]


def _slip(word: str, name: str) -> bool:
    """Whether ``word`` is ``name`` with one of the two commonest slips of the keyboard: two adjacent
    letters swapped ("kideny"), or a doubled letter typed once or a letter doubled ("efusion",
    "splen", "bladdder")."""
    if len(word) == len(name):
        diff = [i for i in range(len(word)) if word[i] != name[i]]
        return len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == name[diff[1]] and word[diff[1]] == name[diff[0]]
    if abs(len(word) - len(name)) != 1:
        return False
    long, short = (word, name) if len(word) > len(name) else (name, word)
    return any(long[i] == long[i + 1] and long[:i] + long[i + 1:] == short for i in range(len(long) - 1))


def _mend_typos(line: str, terms: tuple[str, ...]) -> str:
    """The finding's one-word names spelt as typed in a hurry ("pneumothroax", "effusoin") put right:
    a word of eight letters or more one edit (a transposition counts one) from a name, eleven or
    more two edits; a word of five to seven letters only for the slips of :func:`_slip` of a name of
    six letters or more ("kideny", "efusion"). Other short words are left alone: "rectus" is a
    muscle, not a misspelt "rectum"."""
    names = [t for t in terms if " " not in t and len(t) >= 6]
    if not names:
        return line

    def mend(m: re.Match) -> str:
        word = m.group(0)
        if word in terms:
            return word
        for name in names:
            if len(word) < 8 or len(name) < 8:
                if _slip(word, name):
                    return name
                continue
            cap = 2 if len(name) >= 11 and len(word) >= 11 else 1
            if _osa_distance(word, name, cap) <= cap:
                return name
        return word

    return re.sub(r"[a-z]{5,}", mend, line)


_QUESTION_LEAD = re.compile(r"^q(?:uestion)?\s*[:.)-]\s*")
_INTERROGATIVE = re.compile(r"^(?:is|are|does|do|can|could|was|were|has|have|will|would)\s+(?!not\b)")
_ASKED = re.compile(r"^(?:you|the question)\s+(?:asked|asks|is|was)\s+(?:me\s+)?(?:whether|if)\b[^\u2013\u2014:;,]*"
                    r"(?:[\u2013\u2014:;,]|\s-\s)\s*")


def _drop_echo(lines: list[str], terms: tuple[str, ...], question: str = "") -> list[str]:
    """The reply without the question echoed before its answer: leading questions about the finding
    ("Is the kidney visible? No.", "The left kidney? Not on this one.", "Question: ... Answer: no")
    and a "You asked whether X is visible -" lead. An echo that is all there is leaves nothing."""
    asked = normalize(question).rstrip("?").strip()
    asked_words = set(re.findall(r"[\w-]+", asked))
    pat = _term_pattern(terms + ((asked,) if asked else ()))
    if pat is None:
        return lines
    out = []
    for line in lines:
        if out:
            out.append(line)
            continue
        line = _ASKED.sub("", line)
        kept, dropped = [], False
        for sent in _sentences(line):
            # a question, or the cut-off tail of a repeated one
            # a statement, then a question of the reply's own after a semicolon ("The image is too
            # blurry to assess for polyps; could you send a clearer frame?") echoes nothing
            echo = ((sent.rstrip().endswith("?") and ";" not in sent) or _QUESTION_LEAD.match(sent)
                    or (dropped and _INTERROGATIVE.match(sent)))
            words = set(re.findall(r"[\w-]+", sent))
            if not kept and echo and (pat.search(sent) or (words and words <= asked_words | _ECHO_FREE)):
                dropped = True  # "Normal?" to "Is this chest X-ray normal?" echoes it too
                continue
            if not kept and dropped and sent.rstrip().endswith("?"):
                continue  # a rhetorical retort after the echo: "Is the Pope Catholic? Yes."
            kept.append(sent)
        rest = " ".join(kept).strip()
        if rest and re.search(r"\w", rest):
            out.append(rest)
    return out


# words an echo of the question may add or drop without asking something else
_ECHO_FREE = frozenset(
    "is are was were does do did can could would will you we i there any a an the this that these it on in at of for "
    "to from with image images slice slices scan ct mri mr x-ray xray radiograph film picture frame view study axial "
    "coronal sagittal section level visible seen present shown show shows see identified depicted included include "
    "includes visualised visualized appear appears evidence here really actually q question so well ok okay".split())


def _modified_echo(lines: list[str], terms: tuple[str, ...], question: str) -> str | None:
    """The reply's leading question about the finding when it asks something other than the
    question put ("Is the spleen *enlarged*?" for "Is the spleen visible?", the left kidney for the
    right): a yes / no after it answers that question, not the one asked. None when there is none."""
    pat = _term_pattern(terms)
    asked = set(re.findall(r"[\w-]+", normalize(question)))
    if pat is None or not lines or not asked:
        return None
    for sent in _sentences(_ASKED.sub("", lines[0])):
        bare = _QUESTION_LEAD.sub("", re.sub(r"^[\W_]+", "", sent))
        if not (sent.rstrip().endswith("?") and _INTERROGATIVE.match(bare) and pat.search(sent)):
            return None
        if bare.split()[0] != normalize(question).split()[0]:
            return None  # "Could that density be a nodule?": the reply's own question, not the one put again
        extra = set(re.findall(r"[\w-]+", bare)) - asked - _ECHO_FREE
        if 0 < len(extra) <= 2:
            return sent
    return None


def _sentences(line: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", line) if re.search(r"\w", s)]


# "Is the stomach absent?", "Is there no pneumothorax?", "Is the pleural space free of fluid?": a
# yes / no particle answers the absence, so it carries the opposite claim (set per reading).
_REVERSED_QUESTION: ContextVar[bool] = ContextVar("reversed_question", default=False)
# whether the whole reply declines or asks for another image: an opening "Not seen" is then no verdict
_DECLINING: ContextVar[bool] = ContextVar("declining", default=False)
_ABSENCE_QUESTION = re.compile(
    r"^(?:is|are|was|were)\b.*\b(?:absent|missing|free of|excluded|lacking)\b|"
    r"^(?:is|are|was|were) (?:there )?no\b|^(?:is|are|was|were) (?:the |this |there )?[\w\s]{0,40}?\bnot "
    r"(?:visible|present|seen|shown|included|in)\b|^(?:does|do) (?:the |this )?[\w\s]{0,40}?\b(?:lack|not (?:show|contain|include))\b")


def question_is_reversed(question: str) -> bool:
    """Whether ``question`` asks about absence, so that "yes" means the finding is absent.

    Parameters
    ----------
    question : str
        The question asked ("Is the stomach absent?", "Is there no pneumothorax?").

    Returns
    -------
    bool
        True when a yes / no particle answering it carries the opposite claim.
    """
    return bool(_ABSENCE_QUESTION.search(normalize(question or "")))


def _leading(sentence: str, kind: str, flip: bool) -> bool | None:
    """The claim carried by a leading yes/no particle or polarity word, or None (a particle's
    claim is reversed for a question about absence)."""
    claim = _particle(sentence, kind, flip)
    bare = re.sub(r"^[\W_]+", "", sentence)
    # a statement ("Not seen on this slice", "confident it is not") keeps its polarity whatever the question's
    stated = _POLARITY.match(bare) or _NOT_LEAD.match(bare) or _NOT_HERE.match(bare) or _SURE_LEAD.match(bare)
    if claim is not None and flip and _REVERSED_QUESTION.get() and not stated:
        return not claim
    return claim


# "Possibly.", "Probably — ...": a hedged yes, which the hedge rule reads as yes
_NOT_ENTIRELY = re.compile(r"not\s+(?:entirely|completely|quite|fully|totally|altogether|wholly)\s*(?:[:,;.\u2013\u2014]|-\s)")
_HEDGED_YES = re.compile(r"(?:quite |very |most )?(?:possibly|probably)(?=\s*(?:$|[.!,;:\u2013\u2014]|-\s))")


# (issue 48) where the answer holds, said before the particle ("On this slice, yes", "In this image, no"): the
# particle still answers the question asked about this image
_WHERE_LEAD = re.compile(r"(?:on|in|at|from|for|based on|looking at)\s+(?:this|the|that|these|this particular)\s+(?:[\w-]+\s+){0,2}?"
                         r"(?:slice|image|view|film|level|scan|section|study|radiograph|x-ray|picture|one|cut|frame)\s*,\s*")


# a yes particle that is also an adverb, written straight before a polarity word, grades that word ("definitely
# absent", "absolutely none"): read as "yes", a denial was a claim
_INTENSIFIED_POLARITY = re.compile(r"(?:definitely|absolutely|certainly|indeed)\s+(present|positive|absent|negative|none|nothing)"
                                   r"(?=$|\s*[,.!;:()\u2013\u2014]|\s-)")


def _particle(sentence: str, kind: str, flip: bool) -> bool | None:
    s = re.sub(r"^[\W_]+", "", sentence)
    if re.fullmatch(r"(?:not|no)\b[^.!;:]*\?\s*", s):
        return None  # "Not visible? Quite the opposite: ...": a question put back, not its answer (issue 48, set R)
    where = _WHERE_LEAD.match(s)
    if where and (_YES.match(s[where.end():]) or _NO.match(s[where.end():])):
        s = s[where.end():]
    if _BOTH.match(s) or _REFER.match(s) or languages.opens_with_decline(s):  # "لا أستطيع التحديد" is "I cannot tell", not "no"
        return None
    if kind == "health" and _NOT_ENTIRELY.match(s):
        # "Is this mammogram normal?" "Not entirely: there is a cluster of ..." (issue 48, set O): a no to
        # the question asked; read only for health questions, where "partly normal" is abnormal
        return True if flip else False
    if _NOT_HERE.match(s):  # "Not on this one.", "Not here."
        return True if (flip and kind == "health") else False
    if kind != "health" and not _DECLINING.get():  # "Not visible due to overlying artifact" asks for another image
        sure = _SURE_LEAD.match(s)
        rest = s[sure.end():] if sure else s
        if _NOT_LEAD.match(rest) or (sure and _PRONOUN_NOT.match(rest)):
            return False  # "Not present.", "Reasonably confident it is not on this slice."
        if sure and _PRONOUN_IS.match(rest):
            return True
    hedged = _HEDGED_LEAD.match(s)
    if hedged:  # "I would say no", "Probably yes": the hedged verdict is that verdict
        s = s[hedged.end():]
        if re.match(r"not\b", s):
            return True if (flip and kind == "health") else False
    if any(re.match(rf"{w}\s+\w", s) for w in PUNCTUATED_PARTICLES):
        return None  # "Không thấy ...", "Tidak ada ...": the language's "not" / "there is", read by its clauses
    m = _NO.match(s)
    if m and not (m.group(0) == "no" and not _BARE_NO.match(s)):  # "no pneumothorax": a determiner
        return True if (flip and kind == "health") else False
    intensified = _INTENSIFIED_POLARITY.match(s)
    if intensified:  # "Definitely absent." (issue 48, set V): the adverb grades the polarity word, it is no "yes"
        return POLARITY_WORDS[intensified.group(1)]
    if _YES.match(s) or _HEDGED_YES.match(s):
        return False if (flip and kind == "health") else True
    m = _POLARITY.match(s)
    return POLARITY_WORDS[m.group(1)] if m else None


def _aggregate(statuses: list[str]) -> tuple[str, bool | None] | None:
    """Statuses of every mention -> (action, claim), or None when nothing is asserted. Mentions
    that assert both ways ("The liver is visible. The liver is not visible.") or a hedged double
    negation ("I can't say X is absent") are ``unclear``: the reader does not pick one."""
    if "conflicting" in statuses or ("affirmed" in statuses and "negated" in statuses):
        return "unclear", None
    if "affirmed" in statuses:
        return "answer", True
    if "possible" in statuses and "negated" in statuses:
        return "refer", None  # hedged both ways: commits to neither
    if "possible" in statuses:
        return "answer", True
    if "negated" in statuses:
        return "answer", False
    return None


def _side_conflict(sentence: str, start: int, finding: str) -> str | None:
    """'negated' / 'skip' when a mention names the other side than the finding's ("right kidney"
    for "left kidney"); None when it does not."""
    side = next((w for w in normalize(finding).split() if w in _SIDES), None)
    if side is None:
        return None
    before = sentence[:start].split()[-3:]
    if _SIDES[side] in before:
        return "negated" if "only" in before else "skip"
    return None


def mention_statuses(text: str, term: str) -> list[str]:
    """The assertion status (affirmed | negated | possible | hypothetical | historical) of every
    mention of ``term`` in free ``text``, by the same scope rules as every reply: for readers of
    descriptions rather than answers (paired-modality paper's judge asks whether a photo finding is reported).

    Parameters
    ----------
    text : str
        Free text (a description, a reply).
    term : str
        The word or phrase to find, matched whole after normalising.

    Returns
    -------
    list of str
        One status per mention, in order of sentence and position.

    References
    ----------
    .. [1] Paired-modality paper, the judge of reported photo findings.
    """
    pat = _term_pattern((normalize(term),))
    if pat is None:
        return []
    sentences = [s for line in _lines(text) for s in _sentences(line)]
    return [status(s, m.start(), m.end()) for s in sentences for m in pat.finditer(s)]


# A mention as a landmark says where the slice or a finding is, not that the organ is in view
# ("at the level below the liver", "a clip in the gallbladder fossa").
_LANDMARK_BEFORE = re.compile(
    r"(?:\b(?:level|region|area|site|location|vicinity|bed|fossa)\s+(?:of|below|above|beneath)|"
    r"\b(?:below|above|beneath|underneath|inferior to|superior to|caudal to|cranial to|under))\s+"
    r"(?:where\s+|the\s+level\s+(?:where|at\s+which)\s+)?(?:the\s+)?"
    r"(?:level\s+of\s+(?:the\s+)?)?"
    # (issue 48, set O) "below the inferior tip of the spleen": the organ's edge as the landmark
    r"(?:(?:(?:inferior|superior|lower|upper|caudal|cranial)(?:most)?\s+)?(?:tip|pole|edge|margin|border|dome|apex|extent)\s+of\s+"
    r"(?:the\s+)?)?$")
# (issue 48, set O) "lung windows", "liver window", "bone kernel": a display setting named after the organ
_LANDMARK_AFTER = re.compile(r"^\s+(?:fossa|bed|region|area|level|hilum|hilar region|resection bed|windows?|window settings?|"
                             r"kernels?|algorithm)\b")
# "no focal lesion in the liver": the denial is of a property; the organ itself is presupposed.
_PROPERTY_DENIED = re.compile(
    r"^\s*(?:[\w-]+\s+){0,3}?(?:lesions?|mass(?:es)?|abnormalit(?:y|ies)|stones?|calcul(?:us|i)|fluid|collections?|"
    r"dilat(?:ation|ion)|enlargement|thickening|enhancement|nodules?|cysts?|injur(?:y|ies)|lacerations?|"
    r"hematomas?|haematomas?|thrombus|aneurysms?|air|gas|calcifications?|tumou?rs?|metastas[ie]s|hypodensit(?:y|ies)|"
    r"hyperdensit(?:y|ies)|pathology|disease|inflammation|obstruction|hydronephrosis|ascites)\s+(?:is\s+|are\s+)?"
    r"(?:seen\s+|noted\s+|identified\s+|present\s+|visible\s+|evident\s+|detected\s+)?"
    r"(?:in|within|of|involving|inside|along|on|from|arising from|around)\s+(?:the\s+)?$")
_WHICH_NOT = re.compile(r"^(?:\s+(?:gland|glands|vessel|organ|bone|bones))?\s*,?\s*(?:which|that)\s+(?:is|are|was)\s+(?:\w+\s+){0,2}?not\s+(?:\w+\s+){0,1}?"
                        r"(?:visible|seen|present|depicted|shown|included|captured|identified|in)\b")
_PROPERTY_AFTER = re.compile(
    r"^\s+(?:wall|walls|parenchyma|parenchymal|lesions?|mass(?:es)?|stones?|calcul(?:us|i)|thickening|dilat(?:ation|ion)|"
    r"enlargement|injur(?:y|ies)|lacerations?|contour|margins?|abnormalit(?:y|ies)|pathology|calcifications?|"
    r"cysts?|nodules?|hypodensit(?:y|ies))\b")
# The organ's own tissue or parts as the subject ("lung parenchyma is not included", "the lung
# bases are included") name the organ, unless a property of that tissue follows ("no liver
# parenchyma lesion").
_ORGAN_ITSELF = re.compile(r"^\s+(?:parenchyma|tissue|bases?|apex|apices|lobes?|poles?|dome|edge|tip)\b"
                           r"(?!\s+(?:[\w-]+\s+)?(?:lesions?|mass(?:es)?|abnormalit(?:y|ies)|nodules?|cysts?|"
                           r"thickening|enhancement|calcifications?|injur(?:y|ies)|lacerations?|hypodensit(?:y|ies)|"
                           r"changes?|disease|pathology)\b)")
_NEGATION_CUE = re.compile(r"(?<![\w'])(?:no|not|without|none|nothing)(?![\w'])")
# a later pronoun that refers back to the finding ("... cannot be excluded, though it is not
# clearly seen"; "... no effusion. Possibly a small one.")
_BACK_NEGATED = re.compile(r"\b(?:argues?|speaks?)\s+against\s+(?:it|this|that)\b|"
                           # an expectation about the slice, or the reply's own call on the organ
                           r"\b(?:it|they|one)\s+(?:should|would)\s+not\s+be\s+(?:on|in|at|within)\s+(?:this|the)\s+"
                           r"(?:slice|level|image|section|scan)\b|"
                           r"\b(?:call|calling|read|reading|mark|marking)\s+it\s+(?:as\s+)?"
                           r"(?:not seen|not visible|not present|absent)\b|"
                           r"\b(?:it|one|this)\s+(?:is|was)\s+no\s+longer\s+(?:in view|visible|seen|in (?:the|this) (?:frame|image|view))\b|"
                           r"\b(?:(?:it|one|this)\s+(?:is|was)\s+not|they\s+(?:are|were)\s+not|none\s+(?:is|was)|"
                           # (issue 48, set L) the subject left out after "and": "lies lower ... and is not captured"
                           r"and\s+(?:is|are|was|were)\s+not)\s+(?:clearly\s+|definitely\s+|therefore\s+|thus\s+)?"
                           r"(?:seen|visible|identified|visuali[sz]ed|imaged|included|present|captured|depicted|shown|covered|"
                           r"(?:in|on) (?:the|this) (?:image|slice|view|film|section|cut))\b|"
                           # a conclusion from the slice's level: "..., so the heart would not be included"
                           r"\b(?:so|therefore|thus|hence|which means)\s+(?:it|they|one)\s+(?:would|will)\s+not\s+be\s+"
                           r"(?:seen|visible|included|captured|imaged|depicted|in view|(?:in|on) (?:the|this) (?:image|slice|view|section))\b")
# a conclusion after a reason, with the finding named: "... a CT of the pelvis, so the heart would not be included"
_CONCLUDED_NOT = re.compile(r"^(?:s|es)?\s+(?:would|will)\s+not\s+be\s+(?:\w+\s+)?(?:seen|visible|included|captured|imaged|"
                            r"depicted|in view|(?:in|on) (?:the|this) (?:image|slice|view|section|field))\b")
_CONCLUSION_BEFORE = re.compile(r"\b(?:so|therefore|thus|hence|which means)\s+(?:that\s+)?(?:the\s+)?$")
_BACK_POSSIBLE = re.compile(r"\b(?:(?:one|it|this)\s+(?:can|could)\s+not\s+be\s+(?:excluded|ruled out)|"
                            r"(?:possibly|probably|perhaps|maybe)\s+(?:a\s+|an\s+)?(?:small\s+|tiny\s+|little\s+)?one)\b")


@lru_cache(maxsize=256)
def _resection_pattern(finding: str) -> re.Pattern | None:
    words = [w for w in normalize(finding).split() if w not in _SIDES]
    names = set()
    for key in (" ".join(words), words[-1] if words else ""):
        names.update(RESECTIONS.get(key, ()))
    if not names:
        return None
    # (issue 48, set R) "post-hysterectomy appearance" is status post hysterectomy: the hyphen joins the prefix
    alt = "|".join(re.escape(t) for t in sorted(names))
    return re.compile(rf"(?:(?<=post-)|(?<![\w-]))(?:{alt})(?![\w-])")


# A textbook statement with the finding as its subject ("The bladder is a hollow organ that stores
# urine", "Kidney stones are common", "A pneumothorax occurs when air leaks ...") tells what the
# finding is, not whether this image shows it; an observation word ("here", "this slice", "seen")
# anywhere in the sentence makes it a statement about the image again.
# (issue 48, set N) the subject may be a list that the name ends or continues ("The liver, spleen and ...")
_GENERIC_SUBJECT = re.compile(r"^\W*(?:(?:the|a|an)\s+)?(?:(?!yes\b|no\b)[\w-]+\s*,\s*)*(?:(?:left|right|bilateral|both)\s+)?$")
_GENERIC_PREDICATE = re.compile(
    r"^(?:s|es)?\s+(?:(?:is|are)\s+(?:(?:an?|the)\s+(?:[\w-]+\s+){0,3}?(?:organ|gland|structure|tube|condition|"
    r"disease|complication|collection|accumulation|cause)s?\b|(?:usually|often|typically|generally|normally|"
    r"commonly|frequently|more)\b|(?:common|rare|caused|defined|managed|treated|formed|found in|best (?:seen|"
    r"assessed|evaluated))\b|(?:small|thin|tiny)\s+and\s+(?:often|usually)\b)|"
    r"(?:occurs?|develops?|happens?|runs?|stores?|produces?|secretes?|refers?\s+to|means?)\s+(?:when|if|in|through|"
    r"along|from|behind|as|to|urine|bile|the|a|an)\b|"

    r"(?:evaluation|assessment|imaging|detection|diagnosis|grading|interpretation|screening|identification)\s+"
    r"(?:requires?|needs?|is best|is beyond|should be (?:done|performed|made|left))\b|"
    r"(?:is|are)\s+(?:usually\s+|typically\s+)?(?:diagnosed|detected|confirmed|graded|classified|staged|categori[sz]ed)\s+"
    # "is graded as mild, moderate or severe" is how it is graded in general, "is graded as SFU grade 2 on the left"
    # the reply's own grade (issue 48): "as" only before a choice of grades
    r"(?:clinically|by|with|using|through|based on|on the basis of|into|according to|"
    r"as(?=\s+(?:either\s+)?(?:[\w-]+\s+){1,3}?or\s|\s+(?:[\w-]+\s*,\s*)+))\b|"
    # (issue 48, set Q) how the finding may be graded in general: "Hydronephrosis can be graded from I to IV according
    # to the SFU system" (not "can be graded as mild": that is the reply's own grade)
    r"(?:can|may|could)\s+be\s+(?:graded|classified|staged|categori[sz]ed|divided|subdivided|scored)\s+"
    r"(?:from|into|according to|using|by|on the basis of|based on|in(?=\s+(?:\w+\s+)?(?:grades|stages|categories|types))|"
    r"as(?=\s+(?:either\s+)?[\w-]+\s+or\s))\b|"
    # (issue 48, sets M and N) what the finding or organ is in general: "Appendicitis is inflammation of
    # the appendix", "Kidney stones ... are hard deposits of minerals", "the IVC is an abdominal vessel",
    # "Ovaries are hard to evaluate on MRI in postmenopausal women", "... are organs commonly assessed on MRI"
    r"(?:is|are)\s+(?:(?:an?|the)\s+)?(?:[\w-]+\s+){0,2}?(?:inflammation|infection|deposits?|vessels?|arter(?:y|ies)|"
    # (issue 48, set R) "are paired retroperitoneal organs located superomedial to the kidneys"
    r"veins?|organs?\s+(?:commonly|usually|often|typically|routinely)|paired\s+(?:[\w-]+\s+)?organs?|(?:out)?growths?|swellings?)\s+(?:of|in|on|"
    r"from|that|which|commonly|located|situated|lying|"
    r"assessed|formed|made|carrying|draining|and|,|\.|$)|"
    r"(?:is|are)\s+(?:an?\s+)?(?:[\w-]+\s+){0,3}?diagnos[ie]s\s*(?:$|[.,;]|of\s+exclusion|made|based)|"
    r"(?:is|are)\s+(?:often\s+|usually\s+|notoriously\s+)?(?:hard|difficult|easy|tricky|challenging)\s+to\s+"
    r"(?:evaluate|assess|see|identify|visuali[sz]e|detect|image|characteri[sz]e)\s+(?:on|with|in|at|by)\s+(?!this\b|these\b)"
    r"(?:[\w-]+\s+){0,1}?(?:mri|ct|ultrasound|x-rays?|radiographs?|imaging|scans?|women|men|patients|children|adults|"
    r"the elderly|older)\b)")
# Where an organ lies in the body ("the bladder lies in the pelvis") is anatomy, not this slice; a
# finding's location ("the polyp is located in the sigmoid") is where the reply sees it.
_ORGAN_LOCATION = re.compile(
    # "The heart is in the chest", "the trachea is in the neck and upper chest" (issue 48, set N)
    r"^(?:s|es)?\s+(?:is|are)\s+(?:normally\s+|usually\s+)?in\s+the\s+(?:upper\s+|lower\s+)?(?:neck|chest|thorax|abdomen|"
    r"pelvis|head|skull|mediastinum|retroperitoneum|posterior fossa|brain)\b|"
    r"^(?:s|es)?\s+(?:(?:normally|usually|typically|generally)\s+)?(?:lies?|sits?|(?:is|are)\s+(?:normally\s+)?(?:located|"
    r"situated))\s+(?:deep\s+)?(?:in|within|on|"
    r"behind|below|beneath|under|above|in front of|posterior to|anterior to|along)\s+(?:the|a)\b|"
    # (issue 48, set L) "the pancreas lies lower, at around L1-L2", "sits higher, under the diaphragm":
    # the organ's level in the body, not an observation of this slice
    r"^(?:s|es)?\s+(?:(?:normally|usually|typically)\s+)?(?:lies?|sits?|(?:is|are)\s+(?:normally\s+)?(?:located|situated))\s+"
    r"(?:(?:much|well|further|farther|a bit|slightly)\s+)?(?:lower|higher|more\s+(?:inferiorly|superiorly|caudally|"
    r"cranially|medially|laterally|anteriorly|posteriorly)|further\s+(?:down|up)|(?:at|around)\s+(?:around\s+)?"
    r"(?:the\s+level\s+of\s+)?(?:[ltcs]\d|the\s+level\s+of\s+(?:the\s+)?[ltcs]\d))")
_GERUND_TOPIC = re.compile(r"^\W*whether\s+(?:the\s+|a\s+|an\s+)?$|"
                           # "Evaluation of pneumothorax requires ..." (issue 48, set O): the task, not the finding
                           r"^\W*(?:(?:the|an?)\s+)?(?:evaluation|assessment|detection|diagnosis|identification|exclusion|"
                           r"interpretation)\s+(?:of|for)\s+(?:the\s+|a\s+|an\s+|any\s+)?$|^\W*(?:identifying|assessing|evaluating|detecting|seeing|visuali[sz]ing|finding|spotting|"
                           # "Grading diabetic retinopathy needs ...", "Diagnosing appendicitis needs ..." (issue 48, set P)
                           r"grading|diagnosing|interpreting|staging|"
                           r"locating|distinguishing|recogni[sz]ing|judging)\s+(?:the\s+|a\s+|an\s+)?$")
_TOPIC_PREDICATE = re.compile(r"^(?:s|es)?\s+(?:[\w-]+\s+){0,4}?(?:depends|relies|requires|needs|varies|"
                              r"(?:is|can be)\s+(?:often\s+)?(?:difficult|hard|easier|easy|tricky|challenging|best|done))\b")
# a norm, not an observation: "is usually seen at this level", "is normally visible on such slices"
_NORM_PREDICATE = re.compile(r"^(?:s|es)?\s+(?:is|are)\s+(?:usually|normally|typically|generally|commonly|often)\s+"
                             r"(?:seen|visible|found|present|identified|located|situated|demonstrated|visuali[sz]ed|included)\b"
                             r"(?![^.;]*\b(?:here|and (?:it )?is (?:also |clearly )?(?:seen|visible)|i (?:can )?see)\b)")
_EITHER = re.compile(r"(?:^|[,;:]\s*|\b(?:because|since|as)\s+)\W*either\b(?!\s+(?:way|side|case|of|one)\b)")
# "the round structure I took for the aorta", "what I thought was the spleen": the reply's earlier
# belief, named as such (issue 48, set L)
_TOOK_FOR = re.compile(r"\b(?:i|we)\s+(?:had\s+)?(?:initially\s+|first\s+|originally\s+|previously\s+)?(?:(?:took|mistook)\s+"
                       r"(?:it\s+|this\s+)?for|thought\s+was)\s+(?:the\s+|a\s+|an\s+)?$|\bwhat\s+(?:i|we)\s+"
                       r"(?:initially\s+|first\s+)?(?:thought|took)\s+(?:was\s+|to be\s+|for\s+)(?:the\s+|a\s+|an\s+)?$")
# "lateral to where the IVC runs", "where the bladder normally sits": where the organ is in the body
_WHERE_BEFORE = re.compile(r"\bwhere\s+(?:the\s+|a\s+)?$")
_WHERE_AFTER = re.compile(r"^(?:s|es)?\s+(?:(?:normally|usually|typically|would|should)\s+)?(?:runs?|lies?|sits?|courses?|"
                          r"travels?|passes?|be|(?:is|are)\s+(?:normally|usually|typically|located|situated))\b")
# a clause boundary before a textbook subject ("This is a CT of the abdomen, and the thyroid is located in the neck")
_SUBJECT_CLAUSE_CUT = re.compile(r",\s*(?:and|but|while|whereas)\s+|;|\s-\s|[\u2013\u2014]|,\s*(?=the\s)")
# A definition: "A fracture is a break in ..." (an indefinite subject: any fracture, not the one in
# this image); "A fracture is a possibility" is a hedged claim, not a definition.
_INDEFINITE_SUBJECT = re.compile(r"^\W*an?\s+$")
_DEFINITION = re.compile(r"^\s+is\s+(?:an?|the)\s+(?!(?:possibility|possible|concern|consideration|differential|likely|probable|"
                         r"distinct|real|strong|definite|clear|given|must|worry|risk|question|finding|feature|sign)\b)")
_BARE_SIZED = re.compile(r"^\s+is\s+(?:an?|the)\s+(?:(?:very|fairly|quite|rather)\s+)?(?:small|large|big|tiny|moderate|mild|"
                         r"massive|subtle|huge|minimal|left|right|bilateral|apical|basal|new|old|known|single|\w+-sided)\b")
_OBSERVED = re.compile(r"\b(?:this|these|here|current|currently|noted|shown|demonstrated|identified|depicted|appears?|"
                       r"looks?|i|we|image|slice|scan|film|study|view|(?:is|are)\s+(?:seen|visible|visuali[sz]ed))\b")


# The finding as the object of a refusal to comment ("I can't reliably comment on the urinary
# bladder"): the negation belongs to the comment, not the finding.
_DECLINED_OBJECT = re.compile(r"\b(?:can not|could not|am unable to|am not able to|unable to)\s+(?:\w+\s+){0,2}?"
                              r"(?:comment on|comment about|speak to|say anything about|say much about|assess|evaluate|make a diagnosis of|"
                              r"judge|look for|call (?:it|this)|label (?:it|this)|declare (?:it|this)|diagnose|grade|interpret)\s+(?:(?:the|a|an|any)\s+)?(?:[\w-]+\s+){0,2}?$|"
                              # an ability qualified by how well ("I'm not able to reliably detect polyps")
                              # is a statement about the reader, not the image
                              r"\b(?:can not|could not|am unable to|am not able to|unable to|not able to)\s+"
                              r"(?:reliably|confidently|safely|accurately|dependably)\s+(?:detect|identify|see|spot|find|call|confirm|"
                              r"diagnose|rule out|exclude|recogni[sz]e|pick up|distinguish)\s+(?:(?:the|a|an|any)\s+)?"
                              r"(?:[\w-]+\s+){0,2}?$")


# One of two candidates for what a structure is ("could be the pancreatic tail or jejunum", "either a
# flat polyp or just a fold", "polyp versus fold"): the reply has not decided which, so the mention
# asserts nothing; the rest of the reply (a referral, another mention) decides.
# The finding as what a test is good or poor at finding (issue 48, set O): "although CT is insensitive for
# non-calcified gallstones", "ultrasound is the test of choice for ...": a limitation of the method, said
# after the reply's verdict, that asserts nothing about this image
_MODALITY_FOR = re.compile(
    r"\b(?:(?:in)?sensitive|specific|(?:un)?reliable|accurate|limited|poor|better|best|worse|(?:the\s+)?(?:test|modality|"
    r"investigation|study|examination|imaging)\s+of\s+choice|preferred|superior|inferior)\s+(?:\w+\s+)?(?:for|at|in)\s+"
    r"(?:(?:detecting|identifying|excluding|ruling out|picking up|showing|assessing|evaluating|diagnosing)\s+)?"
    r"(?:(?:the|a|an|small|tiny|subtle|early|non-?calcified|radiolucent|[\w-]+)\s+){0,2}?|"
    # "although a plain film misses radiolucent stones"
    r"\b(?:misses|overlooks|can miss|may miss|often misses)\s+(?:[\w-]+\s+){0,2}?$")
# The finding as the subject of a declined read (issue 48, set O): "the rectum (and sigmoid colon) could
# not be evaluated / assessed", "... is not assessable / not evaluable": the verb is the reader's, not the organ's
_DECLINED_PREDICATE = re.compile(
    r"^(?:s|es)?(?:\s+and\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?)?\s+(?:(?:could|can|may)\s+not\s+be|(?:is|are|was|were)\s+not)\s+"
    r"(?:reliably\s+|adequately\s+|fully\s+|properly\s+|confidently\s+|well\s+)?(?:evaluated|assessed|judged|appraised|"
    r"characteri[sz]ed|assessable|evaluable|interpretable)\b|"
    r"^(?:s|es)?\s+(?:(?:could|can)\s+not\s+be\s+)?(?:non-?diagnostic|unassessable|not assessable|not evaluable)\b")
_CANDIDATE_LEAD = r"(?:(?:could|might|may|can)\s+(?:also\s+)?(?:be|represent|show)|either)\s+(?:either\s+)?"
_ARTICLE_WORDS = r"(?:(?:the|a|an|just|simply|only|possibly|perhaps|normal)\s+)*(?:[\w-]+\s+){0,2}?"
_FIRST_CANDIDATE_BEFORE = re.compile(_CANDIDATE_LEAD + _ARTICLE_WORDS + r"$")
# the second candidate may come with its own modal ("might be the gallbladder, might be a diverticulum")
_MODAL_CANDIDATE = r",\s*(?:or\s+)?(?:it\s+|that\s+)?(?:could|might|may)\s+(?:also\s+)?(?:be|represent)\b"
_NEXT_CANDIDATE = r"(?:(?:or|versus|vs\.?)\s+(?!not\b|no\b)|" + _MODAL_CANDIDATE + ")"
_FIRST_CANDIDATE_AFTER = re.compile(r"^(?:s|es)?\s*,?\s+(?:or|versus|vs\.?)\s+(?!not\b|no\b)|^(?:s|es)?\s*" + _MODAL_CANDIDATE)
_SECOND_CANDIDATE_BEFORE = re.compile(_CANDIDATE_LEAD + _ARTICLE_WORDS + r"[\w-]+\s*,?\s*" + _NEXT_CANDIDATE + r"\s*"
                                      + _ARTICLE_WORDS + r"$|\b[\w-]+\s+(?:versus|vs\.?)\s+" + _ARTICLE_WORDS + r"$")


def _one_of_two_candidates(s: str, m: re.Match) -> bool:
    """Whether the mention ``m`` is offered as one of two candidates in ``s`` (see :data:`_CANDIDATE_LEAD`)."""
    before, after = s[:m.start()], s[m.end():]
    return bool((_FIRST_CANDIDATE_BEFORE.search(before) and _FIRST_CANDIDATE_AFTER.match(after))
                or _SECOND_CANDIDATE_BEFORE.search(before)
                or (_FIRST_CANDIDATE_AFTER.match(after) and re.search(r"\b(?:versus|vs\.?)\s", after[:12])))


# (issue 48, set P) the organ may name what the subject's findings are of ("Thyroid nodules are common ..."):
# a statement about such findings in general is as much a textbook one
_SUBJECT_TAIL = re.compile(r"^(?:s|es)?\s+(?:nodules?|cysts?|stones?|polyps?|tumou?rs?|masses|lesions?|cancers?|"
                           r"fractures?|diseases?|problems?|conditions?)(?=\s+(?:is|are)\b)|"
                           r"^(?:s|es)?\s*,\s*(?:(?:or|also called|also known as|aka|i\.e\.)\s+[^,.;]{1,40}?\s*,\s*|"
                           r"(?:[\w-]+\s*,\s*)*[\w-]+\s+and\s+(?:the\s+)?[\w-]+\s+|)(?=(?:is|are)\b)|"
                           r"^(?:s|es)?\s+and\s+(?:the\s+)?[\w-]+\s+(?=are\b)")


def _generic_statement(s: str, m: re.Match, organ: bool = False) -> bool:
    """Whether the mention ``m`` is the subject of a textbook statement in ``s`` (see :data:`_GENERIC_PREDICATE`;
    for an organ also :data:`_ORGAN_LOCATION`)."""
    # a conclusion after "so" / "but" is a clause of its own ("... lies in the pelvis, so it is not on this slice")
    # the subject may go on past the name: an appositive ("Kidney stones, or renal calculi, are ...") or a
    # list of organs ("The spleen, liver and kidneys are organs ..."; issue 48, set N)
    after = _SUBJECT_TAIL.sub(" ", s[m.end():], count=1)
    clause = re.split(r"[;:\u2013\u2014]|\s-\s|,?\s+(?:so|therefore|thus|hence|but|however)\b|"
                      r",\s*(?=(?:well|far|way|completely|entirely)?\s*(?:outside|above|below|beyond)\b)|"
                      r",?\s+and\s+(?=(?:is|are|was|were|can|could|will|would|does|do)\b)|"
                      r"\s+(?:that|which)\s+(?=(?:can|could|would|will)\s+not\b)", after)[0]
    predicate = (_GENERIC_PREDICATE.match(after) or (organ and _ORGAN_LOCATION.match(after))
                 or (_INDEFINITE_SUBJECT.match(s[:m.start()]) and _DEFINITION.match(after))
                 # "Pulmonary embolism is a blockage of ...": a mass noun opening the sentence with no
                 # article, defined (issue 48, set O); not "Pneumothorax is a small one" (a size, a side)
                 or (not s[:m.start()].strip(" \t\"'*_(") and _DEFINITION.match(after) and not _BARE_SIZED.match(after)))
    # "beyond what I can offer" speaks of the reply's reach, not of something it observes
    clause = re.sub(r"\bwhat i (?:can|could)\b", " ", clause)
    # a range of grades in Roman numerals ("from I to IV") is no "I" who observes (issue 48, set Q)
    clause = re.sub(r"\b[ivx]{1,4}\s*(?:to|-|\u2013|through)\s*[ivx]{1,4}\b", " ", clause)
    # the subject may open a later clause of the sentence: only that clause's words count
    subject = _SUBJECT_CLAUSE_CUT.split(s[:m.start()])[-1]
    return bool(_GENERIC_SUBJECT.match(subject) and predicate and not _OBSERVED.search(subject + clause))


# A list under a header that says how its items stand ("Seen: clear lungs. Not seen: effusion,
# pneumothorax."; issue 48, set M): the header is the list's predicate, and its items are plain nouns
_LIST_HEADER = re.compile(
    r"(?:^|[.;]\s*)\W*(?:(?P<neg>not\s+(?:seen|visible|visuali[sz]ed|identified|present|demonstrated|detected|shown|found)|"
    r"absent|negative(?:\s+for)?|excluded|ruled\s+out|none\s+of|no\s+evidence\s+of)|"
    r"(?P<pos>seen|visible|visuali[sz]ed|identified|present|demonstrated|detected|shown|found|positive(?:\s+for)?))"
    r"\s*:\s*(?:[\w/-]+(?:\s+[\w/-]+){0,3}\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+))*$")


_NEITHER_AFTER = re.compile(r"^(?:s|es)?\s+(?:(?:can|could|may)\s+)?(?:be\s+)?(?:neither|not)\s+(?:be\s+)?(?:confirmed|"
                            r"established|proven|diagnosed)\s+(?:n?or|and)\s+(?:be\s+)?(?:excluded|ruled out|refuted|denied)\b")
_NEITHER_BEFORE = re.compile(r"\b(?:neither|not)\s+(?:confirm|establish|prove|diagnose)\s+(?:n?or)\s+(?:exclude|rule out)\s+"
                             r"(?:(?:the|a|an|any)\s+)?(?:[\w-]+\s+){0,2}?$")


_PREVENTION_BEFORE = re.compile(r"\b(?:(?:reduce|lower|decrease|minimi[sz]e|cut)\s+(?:your|the|one's|their)\s+(?:risk|chances?|"
                                r"likelihood)\s+of|(?:prevent|avoid|help prevent|protect against))\s+(?:developing\s+|getting\s+|"
                                r"forming\s+|future\s+|further\s+|recurrent\s+)?(?:[\w-]+\s+)?$")


def _mention_status(s: str, m: re.Match, finding: str, organ: bool = False) -> str | None:
    """One mention's status, or None when it asserts nothing about the finding (another side, a landmark)."""
    conflict = _side_conflict(s, m.start(), finding)
    if conflict == "skip":
        return None
    if _LANDMARK_BEFORE.search(s[:m.start()]) or _LANDMARK_AFTER.match(s[m.end():]):
        # only its own relative clause speaks of it: "below the spleen, which is therefore not depicted"
        return "negated" if _WHICH_NOT.match(s[m.end():]) else None
    if _CONCLUSION_BEFORE.search(s[:m.start()]) and _CONCLUDED_NOT.match(s[m.end():]) and not re.search(
            r"\b(?:if|were|had)\b", s[:m.start()]):
        return "negated"  # "... of the pelvis, so the heart would not be included": the reply's conclusion
    if _GERUND_TOPIC.search(s[:m.start()]) and _TOPIC_PREDICATE.match(s[m.end():]):
        return "hypothetical"  # "Identifying the lungs on imaging depends on the window": a topic (issue 48, set L)
    if _GENERIC_SUBJECT.match(_SUBJECT_CLAUSE_CUT.split(s[:m.start()])[-1]) and _NORM_PREDICATE.match(s[m.end():]):
        return "hypothetical"  # "The pancreas is usually seen at this level": what is usual, not what is here
    if _EITHER.search(s[:m.start()]) and re.search(r"\bor\b", s):
        # "Either this slice is above the pelvis or the bladder is empty": two explanations offered,
        # neither asserted (issue 48, set L); the reply's own verdict stands elsewhere
        return "hypothetical"
    if ((re.search(r"\brule\s+(?:(?:the|a|an|any)\s+)?(?:[\w-]+\s+){0,2}?$", s[:m.start()])
         and re.match(r"^(?:s|es)?\s+in\s+or\s+(?:rule\s+)?out\b", s[m.end():]))
            or re.search(r"\brule\s+in\s+or\s+(?:rule\s+)?out\s+(?:(?:the|a|an|any)\s+)?(?:[\w-]+\s+){0,2}?$", s[:m.start()])):
        return None  # "I can't reliably rule a bleed in or out" (issue 48, set P): both ways named, the call declined
    if _NEITHER_AFTER.match(s[m.end():]) or _NEITHER_BEFORE.search(s[:m.start()]):
        return None  # "X can be neither confirmed nor excluded" (issue 48, set M): the call is declined
    if _PREVENTION_BEFORE.search(s[:m.start()]):
        return "hypothetical"  # "... to reduce your risk of kidney stones": advice about the finding, not this image (set T)
    if _TOOK_FOR.search(s[:m.start()]):
        return "hypothetical"  # "the structure I took for the aorta": a belief reported, then withdrawn
    if _WHERE_BEFORE.search(s[:m.start()]) and _WHERE_AFTER.match(s[m.end():]):
        return None  # "lateral to where the IVC runs": a place in the body named by the organ
    if conflict:
        return conflict
    if _MODALITY_FOR.search(s[:m.start()]):
        return "hypothetical"  # "CT is insensitive for non-calcified gallstones": the test's reach, not this image
    if _DECLINED_PREDICATE.match(s[m.end():]):
        return None  # "The rectum could not be evaluated due to streak artefact": the read is declined (issue 48, set O)
    if _DECLINED_OBJECT.search(s[:m.start()]):
        return None  # "I can't reliably comment on the bladder": the comment is refused, not the organ
    if _one_of_two_candidates(s, m):
        return None  # undecided between two readings of one structure: it asserts neither
    if _generic_statement(s, m, organ):
        return "hypothetical"  # a textbook statement asserts nothing about this image
    header = _LIST_HEADER.search(s[:m.start()])
    if header is not None:  # "Not seen: effusion, pneumothorax" (issue 48, set M): the header decides its list
        return "affirmed" if header.group("pos") else "negated"
    st = status(s, m.start(), m.end())
    if st == "negated" and organ and _PROPERTY_AFTER.match(s[m.end():]) and not _ORGAN_ITSELF.match(s[m.end():]):
        return "affirmed"  # "no bladder wall thickening": the organ names where, the property is denied
    if st == "negated":
        before = s[:m.start()]
        cue = None
        for cue in _NEGATION_CUE.finditer(before):
            pass
        if cue is not None and _PROPERTY_DENIED.match(before[cue.end():]):
            return "affirmed"
    return st


def _textbook_sentence(s: str, terms: tuple[str, ...], finding: str) -> bool:
    """Whether the sentence opens as a textbook statement about the finding (its first mention the
    subject of :func:`_generic_statement`) and never turns to the image."""
    pat = _term_pattern(terms)
    hits = [m for m in pat.finditer(s) if not _other_qualified_head(s, m, finding)] if pat is not None else []
    return bool(hits) and _generic_statement(s, hits[0]) and not _OBSERVED.search(s)


_REMNANT = re.compile(r"\b(?:remnant|remaining|residual)\s+(?:(?:left|right)\s+)?(?:lobes?|segments?|portion|part)\b")


def _mention_statuses(sentences: list[str], terms: tuple[str, ...], finding: str, organ: bool = False) -> list[str]:
    pat = _term_pattern(terms)
    if pat is None:
        return []
    resected = _resection_pattern(finding)
    free = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(t) for t in terms) + r")-free\b") if terms else None
    # the finding's name with "non-" ("the gas pattern is non-obstructive"; issue 48, set L) denies it
    nonform = re.compile(r"(?<![\w-])non-?(?:" + "|".join(re.escape(t) for t in terms) + r")(?![\w-])") if terms else None
    out, found = [], False
    for s in sentences:
        s = _PARENTHETICAL.sub(" ", s)  # "the thyroid, however, is not present": one clause
        named_before = found
        hits = [m for m in pat.finditer(s) if not _other_qualified_head(s, m, finding)]
        # a sentence that opens as a textbook statement about the finding stays one ("Polyps are
        # common, and most are hyperplastic polyps") unless it turns to the image
        textbook = bool(hits) and _generic_statement(s, hits[0], organ) and not _OBSERVED.search(s)
        both_ways = bool(hits) and _hedged_both_ways(s[hits[-1].end():])
        for i, m in enumerate(hits):
            found = True
            if both_ways and i == len(hits) - 1:
                out.extend(("possible", "negated"))  # "could be contracted and indistinguishable, or it could be ..."
                continue
            st = "hypothetical" if textbook and i else _mention_status(s, m, finding, organ)
            if st is not None:
                out.append(st)
        if free is not None and (free.search(s) or nonform.search(s)):  # "polyp-free mucosa", "non-obstructive"
            found = True
            out.append("negated")
        for m in resected.finditer(s) if resected is not None else ():
            if _side_conflict(s, m.start(), finding) == "skip":
                continue
            if re.search(r"\b(?:partial|subtotal|hemi|sleeve|segmental|wedge)\W*$", s[:m.start()]):
                continue  # a partial resection leaves the organ
            if not any(w in _SIDES for w in normalize(finding).split()) and re.search(
                    r"\b(?:left|right)(?:\s+lobe)?\W*$", s[:m.start()]):
                # "status post right hepatectomy" to "the liver": one side removed, the rest remains; "the remnant
                # left lobe is visible" then speaks of the organ (issue 48, set T)
                for part in _REMNANT.finditer(s, m.end()):
                    if status(s, part.start(), part.end()) == "affirmed":
                        found = True
                        out.append("affirmed")
                continue
            st = status(s, m.start(), m.end())
            if st not in ("negated", "hypothetical"):  # "status post nephrectomy": the organ is gone
                found = True
                out.append("negated")
        if both_ways:
            continue
        tail = s[hits[-1].end():] if hits else s
        if hits and named_before:  # named before: a pronoun ahead of this mention may speak of it too
            tail = s[:hits[0].start()] + " ; " + tail
        if found and _BACK_POSSIBLE.search(tail):
            out.append("possible")
        elif found and _BACK_NEGATED.search(tail):
            out.append("negated")
    return out


# (issue 48, set Q) the organ offered two ways, one of them unseen: "The gallbladder could be contracted and
# therefore indistinguishable, or it could be the small hypodense focus": hedged both ways, it commits to neither
_BOTH_WAYS = re.compile(r"^(?:s|es)?\s+(?:could|might|may)\s+(?:also\s+)?(?:be|have|lie)\b(?P<first>[^;]*?),?\s+or\s+"
                        r"(?:(?:it|that|this|they)\s+)?(?:(?:could|might|may)\s+(?:also\s+)?(?:be|have|lie)|(?:is|are)\s+"
                        r"(?:simply|just|perhaps))\b(?P<second>[^;]*)")
_UNSEEN = re.compile(r"\b(?:indistinguishable|inseparable|invisible|absent|not\s+(?:\w+\s+)?(?:visible|seen|identifiable|"
                     r"included|in view|captured|depicted)|out\s+of\s+(?:view|the field|plane)|outside\s+the\s+(?:field|image|slice)|"
                     r"obscured|hidden)\b")


# (issue 48, set T) a modal taken back in its own sentence: "The kidneys might be in the image, or they might not"
_OR_NOT = re.compile(r"^(?:s|es)?\s+(?:could|might|may)\s+(?:well\s+)?(?:be|lie|appear)\b[^;.]*?,?\s+or\s+"
                     r"(?:(?:it|that|this|they)\s+)?(?:could|might|may)\s+not\b")


def _hedged_both_ways(after: str) -> bool:
    """Whether the text after a mention offers it two ways, one of them unseen (see :data:`_BOTH_WAYS`)."""
    if _OR_NOT.match(after):
        return True
    m = _BOTH_WAYS.match(after)
    return m is not None and any(_UNSEEN.search(g) for g in m.groups())


_NORMAL_AS_REFERENCE = re.compile(r"\b(?:above|beyond|exceeds?|exceeding|outside|over|upper limit of|greater than)\s+(?:the\s+)?"
                                  r"(?:upper\s+)?(?:limits?\s+of\s+)?normal\b|\bnormal\s+(?:threshold|cut-?off|value|range)\b")


# "Lines and tubes otherwise unremarkable", "the catheter is in a normal position": a device's
# position, not the patient's health.
_DEVICE_NORMAL = re.compile(
    r"\b(?:lines?|tubes?|catheters?|devices?|hardware|drains?|leads?|wires?|clips?|stents?|pacemaker)"
    r"(?:\s+and\s+(?:lines?|tubes?|catheters?|devices?|drains?))?\s+(?:(?:is|are|appear|appears|look|looks|"
    r"otherwise|in|a|an|position|positioned|placement)\s+){0,3}(?:unremarkable|normal|satisfactory|appropriate|fine|ok)\b")


# Both health words offered as the choice ("I can't call it normal or abnormal") assert neither.
_HEALTH_CHOICE = re.compile(r"\b(?:ab)?normal\s+(?:or|nor|and|versus|vs\.?|/)\s+(?:ab)?normal\b|\bnormal\s+or\s+not\b")
# a report's list item "no X," before a normal word: the normal word opens the next item
_NEGATED_ITEM_BEFORE = re.compile(r"\bno\s+(?:[\w-]+\s+){0,3}?[\w-]+\s*,\s*(?:and\s+)?(?=$)")


# a normal word that excepts what the reply has just named ("Otherwise unremarkable", "the rest of the
# study is normal") says nothing against it (issue 48, set L)
_OTHERWISE = re.compile(r"\b(?:otherwise|elsewhere)\s+(?:[\w-]+\s+){0,3}?$|^\W*(?:the\s+)?(?:rest|remainder)\s+of\b|"
                        r"\b(?:is|are|looks?|appears?)\s+otherwise\s+$")


# "Ce n'est pas normal", "no es normal", "non è normale", "nicht normal", "não é normal": a negated normal
# word in another language is "abnormal". ConText's English negators do not reach "pas" / "nicht" before
# the shared word "normal", so the French reply read as "normal" (issue 48, set P: a flip).
_FOREIGN_NOT_NORMAL = re.compile(
    r"\b(?:(?:ce\s+|c'|il\s+|elle\s+)?n'(?:est|sont|a)\s+pas\s+(?:l'air\s+|tout\s+[àa]\s+fait\s+)?normal(?:e|es|s)?|"
    r"pas\s+normal(?:e|es|s)?|no\s+(?:es|est[áa]|son|parece|se\s+ve)\s+normal(?:es)?|"
    r"non\s+(?:[èe]|sono|sembra|appare)\s+normal[ei]|n[ãa]o\s+(?:[ée]|est[áa]|s[ãa]o|parece)\s+normal(?:is)?|"
    r"(?:nicht|kein(?:e|en)?)\s+normal(?:e|er|es)?|niet\s+normaal|nie\s+jest\s+(?:normaln\w+|prawidłow\w+)|"
    r"(?:inte|ikke)\s+normal(?:t)?|není\s+normální|nu\s+(?:este|e|arată)\s+normal(?:ă)?|"
    # (issue 48, set S) Swahili "si ya kawaida" / "isiyo ya kawaida" (not ordinary, abnormal)
    r"(?:si|isiyo|sio)\s+ya\s+kawaida)\b", re.I)


# (issue 48, set R) a denied "not normal": "I don't see anything that isn't normal", "nothing here is not normal",
# "no area that does not look normal" say all is normal; read word by word, the inner "not normal" read abnormal
_NOTHING_NOT_NORMAL = re.compile(
    r"\b(?:nothing|not\s+(?:\w+\s+){0,3}?(?:anything|any\s+\w+)|no\s+(?:\w+\s+){0,2}?(?:area|part|region|finding|structure|"
    r"feature|thing)s?)\s+(?:\w+\s+){0,3}?(?:(?:that|which)\s+)?(?:is|are|looks?|appears?|seems?|does|do)\s+not\s+"
    r"(?:look\s+|appear\s+|seem\s+)?(?:normal|healthy|unremarkable)\b")


_LIFESTYLE = re.compile(r"\b(?:healthy|normal)\s+(?:lifestyle|diet|weight|habits?|eating|living|choices|fluid intake|"
                        r"hydration|blood pressure)\b")


def _health_statuses(sentences: list[str], kind: str = "health", excepting: bool = False) -> list[str]:
    """Normal / abnormal words as mentions of the finding (a normal word's polarity inverted, a hedged
    normal word a hedged denial). To a
    "above the normal threshold" is a reference, not a statement of health; a device "otherwise
    unremarkable" speaks of the device."""
    out = []
    sentences = [_NOTHING_NOT_NORMAL.sub(" all is normal ", s) for s in sentences]
    # "maintain a healthy lifestyle" is advice to the patient, not the image's health (issue 48, set T)
    sentences = [_LIFESTYLE.sub(" ", s) for s in sentences]
    sentences = [_FOREIGN_NOT_NORMAL.sub(" abnormal ", _HEALTH_CHOICE.sub(" ", _DEVICE_NORMAL.sub(" ", _NORMAL_AS_REFERENCE.sub(" ", s))))
                 for s in sentences]
    abnormal = _term_pattern(ABNORMAL_WORDS)
    normal = _term_pattern(NORMAL_WORDS)
    # a hedged normal word is a hedged denial of the abnormality ("probably normal" reads as "probably
    # no abnormality" does), never a hedged claim of it
    invert = {"affirmed": "negated", "negated": "affirmed", "possible": "negated"}
    for s in sentences:
        for m in abnormal.finditer(s):
            out.append(status(s, m.start(), m.end()))
        for m in normal.finditer(s):
            if m.group(0) == "no acute":
                out.append("negated")
                continue
            if excepting and _OTHERWISE.search(s[:m.start()]):
                continue  # "... a calculus. Otherwise unremarkable.": normal apart from what was named
            item = _NEGATED_ITEM_BEFORE.search(s[:m.start()])
            if item:  # "no free gas, normal heart": a new item of a report's list, outside the "no"
                st = status(s[item.end():], m.start() - item.end(), m.end() - item.end())
            else:
                st = status(s, m.start(), m.end())
            out.append(invert.get(st, st))
        if re.search(r"(?<!image )(?<!picture )(?<!film )(?<!view )\b(?:are|is|look|looks|appear|appears|remain|remains)"
                     r"\s+clear\b|\b(?:lungs|lung fields|both lungs|lung)\s+clear\s*(?:$|[.;,])", s):
            out.append("negated")
    return out


def _names_over_signs(mentions: list[str], sentences: list[str], terms, finding: str, organ: bool) -> list[str]:
    """Where mentions assert both ways, the finding's own name outranks its signs: "the hazy opacity
    ... so this is not consolidation" denies consolidation, whatever the opacity is. Only an
    affirmed-against-negated conflict is settled so, and only when the name's own mentions commit."""
    if _aggregate(mentions) != ("unclear", None):
        return mentions
    own = tuple(t for t in terms if t in set(name_terms(finding)))
    if not own or len(own) == len(terms):
        return mentions
    named = _mention_statuses(sentences, own, finding, organ)
    got = _aggregate(named)
    if got is not None and got[0] == "answer" and any(m in ("affirmed", "negated") for m in named):
        return named
    return mentions


def _one_side_seen(sentences: list[str], terms: tuple[str, ...], finding: str) -> bool:
    """Whether a paired organ asked without a side ("Are the adrenal glands visible?") is seen on one
    side and denied on the other, every clause that asserts naming its side: one of the pair is in
    view, so the organ is (issue 48, set L). A clause without a side that denies keeps it unclear."""
    if any(w in _SIDES for w in normalize(finding).split()):
        return False
    readings = _clause_readings(sentences, terms, finding, True)
    pat = _term_pattern(terms)
    sided = []
    for st, clause in readings:
        m = pat.search(clause) if pat is not None else None
        before = clause[:m.start()].split()[-3:] if m is not None else []
        side = next((w for w in before if w in _SIDES), None)
        if side is None:
            return False
        sided.append((st, side))
    seen = {side for st, side in sided if st == "affirmed"}
    denied = {side for st, side in sided if st == "negated"}
    return bool(seen) and bool(denied) and not (seen & denied)


# (issue 48, set Q) the reader sent to a person ("Please see a dermatologist, who can examine the lesion properly"):
# what the person can do there ("who can examine the lesion") names the reader's lesion to be examined, not a
# finding of the image; the rest of the sentence still speaks ("see a doctor, as this looks abnormal")
_SENT_TO = re.compile(r"\b(?:(?:please|should|must|to|(?:recommend|suggest)\s+you)\s+see|consult|visit|contact|talk\s+to|"
                      r"speak\s+(?:to|with)|show\s+(?:it|this|that)\s+to|"
                      r"get\s+(?:it|this|that)\s+(?:checked|looked\s+at|seen|examined)\s+by)\s+(?:a|an|your|the)\s+(?:[\w-]+\s+){0,2}?"
                      r"(?:\w+ologists?|doctors?|physicians?|gp|clinicians?|specialists?|surgeons?|nurses?|optometrists?|"
                      r"professionals?|experts?)\b")
_PERSON_WILL = re.compile(_SENT_TO.pattern + r"\s*,?\s*(?:who|that|which)\s+(?:can|could|will|would|may|should)\b[^.;]*")


def _content(sentences: list[str], terms, finding, kind, flip: bool) -> tuple[str, bool | None, str] | None:
    """Rules 3-5 on some sentences: leading particle, mentions, health words."""
    if sentences and _BOTH.match(re.sub(r"^[\W_]+", "", sentences[0])):
        return "refer", None, "both"  # "Yes and no - ...": commits to neither
    mentions = _mention_statuses(sentences, terms, finding, organ=kind == "organ")
    mentions = _names_over_signs(mentions, sentences, terms, finding, kind == "organ")
    # "no acute abnormality" is not about an organ; "a polyp is an abnormal growth" is a textbook sentence
    # a sentence that hands the read to someone ("Skin lesions need to be assessed in person by a
    # dermatologist") speaks of who should look, not of what this image shows (issue 48, set L)
    health = _health_statuses([_PERSON_WILL.sub(" ", x) for x in sentences if not _textbook_sentence(x, terms, finding)
                               and not _HANDED_OVER.search(x)], kind) if kind != "organ" else []
    if kind == "health" and flip:
        # To "Is this normal?", "No, I don't see a pneumothorax" denies the finding: the particle's
        # polarity is ambiguous there, an explicit statement about the finding is not.
        got = _aggregate(mentions)
        if got is not None:
            # "Otherwise unremarkable" after the finding excepts it: no disagreement with it
            told = _aggregate(_health_statuses([x for x in sentences if not _textbook_sentence(x, terms, finding)],
                                               kind, excepting=True))
            hedged_only = not any(m in ("affirmed", "negated") for m in mentions)
            if hedged_only and got[0] == "answer" and told is not None and told[0] == "answer" and told[1] != got[1]:
                return "unclear", None, "mention"  # "normal, though a pneumothorax cannot be excluded"
            return (*got, "mention")
    if sentences:
        lead = _leading(sentences[0], kind, flip)
        if lead is not None:
            said = _aggregate([m for m in mentions if m in ("affirmed", "negated")]
                              or [h for h in health if h in ("affirmed", "negated")])
            if said is not None and said[0] == "unclear":
                # the mentions assert both ways: the particle stands only with the sentence that answers
                first = next((i for i, x in enumerate(sentences) if _mention_statuses([x], terms, finding, kind == "organ")), None)
                said = _aggregate([m for m in _mention_statuses(sentences[:first + 1] if first is not None else [],
                                                                terms, finding, kind == "organ")
                                   if m in ("affirmed", "negated")])
                if said is None or said[0] != "answer" or said[1] != lead:
                    return "unclear", None, "leading-yes-no"
            if said is not None and said[0] == "answer" and said[1] != lead:
                return "unclear", None, "leading-yes-no"  # "Yes. The liver is not visible.": two verdicts
            return "answer", lead, "leading-yes-no"
    searched = revisions.search_outcome(" ".join(sentences), _term_pattern(terms))
    if searched is not None:
        return "answer", searched, "search-outcome"
    if kind == "organ" and _aggregate(mentions) == ("unclear", None) and _one_side_seen(sentences, terms, finding):
        return "answer", True, "one-side-seen"  # "the right adrenal is seen, the left is not": the organ is in view
    for rule, statuses in (("mention", mentions), ("health-words", health)):
        got = _aggregate(statuses)
        if got is not None:
            return (*got, rule)
    return None


def _decide(lines, terms, finding, kind):
    """Rules 1-5 on some lines: checklist, verdict line, label line, final colon, then the content."""
    got = (_checkmarks(lines, terms) or _verdict_lines(lines, terms, finding, kind) or _label_lines(lines, terms)
           or _final_colon(lines, terms, finding, kind))
    if got is None:
        got = _content([s for line in lines for s in _sentences(line)], terms, finding, kind, flip=True)
    return got


def _verdict_lines(lines, terms, finding, kind):
    """Rule 1: the last explicit verdict that decides."""
    candidates = []
    for i, line in enumerate(lines):
        for s in _sentences(line):
            m = _VERDICT.search(s) or _THEREFORE.match(s)
            if m and re.search(r"\blong\s*$", s[:m.start()]):
                continue  # "Short answer: can't say. Long answer: ...": the long one explains, the short one answers
            if m:
                rest = m.group("rest") + line[line.find(s) + len(s):]
                candidates.append(rest)
    for rest in reversed(candidates):
        got = _content(_sentences(rest), terms, finding, kind, flip=True)
        if got is not None:
            return got[0], got[1], "verdict-line"
    return None


@lru_cache(maxsize=256)
def _label_pattern(terms: tuple[str, ...]) -> re.Pattern:
    # (issue 48, set T) a field names an organ with its head noun or without it ("Prostate gland:", "Left adrenal:"
    # for the left adrenal gland): unmatched, the field's denial was read as a bare mention, present
    heads = {re.sub(r"\s+glands?$", "", t) for t in terms}
    alt = "|".join(re.escape(t) for t in sorted(heads | set(terms), key=len, reverse=True))
    return re.compile(rf"^{_LABEL_PREFIX}(?:{alt})(?:\s+glands?)?{_LABEL_SUFFIX}"
                      rf"\s*(?:[:=?]|\s[-\u2013\u2014]|(?=\s*\(\s*[+-]\s*\)\s*[.;]?\s*$))\s*(?P<rest>.*)$")


@lru_cache(maxsize=256)
def _count_pattern(terms: tuple[str, ...]) -> re.Pattern:
    alt = "|".join(re.escape(t) for t in terms)
    return re.compile(rf"^(?:(?:number|count|total) of\s+(?:{alt})(?:e?s)?|(?:{alt})(?:e?s)?\s+(?:count|number|total))"
                      rf"\s*[:=]\s*(?P<n>\d+)\s*(?:[.;,]|$)")


_CHOICE_HEADER = re.compile(r"^(?:present|yes|seen|visible)\s+(?:absent|no|not seen|not visible)\b|"
                            r"^(?:absent|no)\s+(?:present|yes)\b")


# The whole value of a "<finding>: <value>" field in clinical shorthand (issue 48, set H): "neg",
# "nil", "-ve" deny; "pos", "+ve" claim. Only the whole value: "nil else" or "neg for mass" is not it.
# (issue 48, set T) a sign alone or in brackets is the value too: "L kidney (-)", "GB: +"
_SHORT_VALUE = re.compile(r"^(?:(?P<neg>neg|negative|nil|-\s?ve|absent|none|not seen|not present|no|n/v|\(\s*-\s*\)|-)|"
                          r"(?P<pos>pos|positive|\+\s?ve|present|seen|yes|\(\s*\+\s*\)|\+))\s*[.!;]?\s*$")
# a side abbreviated before a field's name ("L kidney (-)", "R adrenal: normal") is that side spelled out
_SIDE_LETTER = re.compile(r"^([lr])\.?\s+(?=[^\W\d_]{2})")


# a presence word as the label of a yes / no value ("Present: no", "Visible:" over "yes", "Absent: true"): read
# as a leading particle, "present" claimed whatever the value said (issue 48, set P)
_POLARITY_LABEL = re.compile(r"^(?:(?P<pos>present|visible|seen|detected|identified|positive)|(?P<neg>absent|not visible|"
                             r"not seen|not present|negative))\s*(?:[:=]|\s[-\u2013\u2014])\s*(?P<val>yes|no|true|false|y|n)"
                             r"\s*[.!]?\s*$")


# (issue 48, set S) a field whose whole value leaves it open ("Rectum: cannot comment.", "Haemorrhage: unclear"):
# declined, not filled; read as status, the bare "unclear" / "cannot comment" affirmed the finding
_UNDECIDED_VALUE = re.compile(r"^(?:(?:can not|could not|unable to|not able to)\s+(?:comment|assess|evaluate|say|tell|judge)|"
                              r"unclear|uncertain|indeterminate|equivocal|undetermined|unknown|not assessable|not evaluable|"
                              r"no comment|n/?a|\?+)\s*(?:[.!;,]|$)")


_NEXT_FIELD = re.compile(r"(?<=[.;])\s+(?=[^\W\d_][^:.;\n]{0,40}:)")


# (issue 48, set U) a measurement field of an organ ("Spleen length:") whose value says the organ is out of view
_MEASURE_FIELD = re.compile(r"^(?P<name>[a-z][a-z ]{1,30}?)\s+(?:length|size|span|diameter|volume|measurements?|"
                            r"dimensions?)\s*[:=]\s*(?P<rest>.+)$")
_OUT_OF_VIEW = re.compile(r"(?<!partly )(?<!partially )\b(?:outside|out of|beyond|not (?:in|within))\s+(?:the\s+)?"
                          r"(?:field of view|fov|imaged field|scan range)\b")


def _label_lines(lines, terms):
    """Rule 2: "<finding>: <value>" lines; the value is finding polarity."""
    if not terms:
        return None
    pat = _label_pattern(terms)
    counted = _count_pattern(terms)
    found = None
    for part in (p for line in lines for p in [line] + _sentences(line)[1:]):
        v = _POLARITY_LABEL.match(part)
        if v:  # "Present: no", "Absent: yes": the value answers the label's word, not the particle the label opens with
            found = ("answer", (v.group("val") in ("yes", "true", "y")) == (v.group("pos") is not None))
            continue
        c = counted.match(part)
        if c:  # "Polyp count: 0": a count of none denies, a count of one or more claims
            found = ("answer", int(c.group("n")) > 0)
            continue
        measured = _MEASURE_FIELD.match(part)
        if measured and any(t == measured.group("name") for t in terms) and _OUT_OF_VIEW.search(measured.group("rest")):
            # "Spleen length: not measurable (outside the field of view)" (issue 48, set U): the organ is out of view
            found = ("answer", False)
            continue
        m = pat.match(_SIDE_LETTER.sub(lambda x: "left " if x.group(1) == "l" else "right ", part))
        if not m or not (re.search(r"\w", m.group("rest")) or _SHORT_VALUE.match(m.group("rest"))):
            continue
        # a field's value ends where the next field of its line begins ("Right adrenal: normal. Left adrenal: not
        # seen."; issue 48, set T): read to the line's end, the other side's denial was the asked side's value
        rest = _NEXT_FIELD.split(m.group("rest"), maxsplit=1)[0]
        if _DECLINE.search(rest) or _DECLINED_PREDICATE.match(" " + rest) or _UNDECIDED_VALUE.match(rest):
            # "Prostate — can't tell; motion artefact ..." (issue 48, set O): the field is declined, not filled
            found = ("refer", None)
            continue
        if _CHOICE_HEADER.match(rest):  # "| Pneumothorax | Present | Absent |": the columns, not a value
            found = ("unclear", None)
            continue
        short = _SHORT_VALUE.match(rest)
        if short:  # "PTX: neg", "Effusion: nil.", "Fx: +ve": a report's verdict field
            found = ("answer", short.group("neg") is None)
            continue
        lead = _leading(rest, "presence", flip=False)
        if lead is not None:
            found = ("answer", lead)
            continue
        if _ABSENT_PREDICATE.search(rest) and not _NEGATION_CUE.search(_ABSENT_PREDICATE.sub(" ", rest)):
            # "GB: s/p CCY, not visualized." (issue 48, set T): a denial later in the value, past a clause the scope
            # of "x <value>" stops at
            found = ("answer", False)
            continue
        st = status("x " + rest, 0, 1)
        got = _aggregate([st])
        if got is not None:
            found = got
    return (*found, "label-line") if found else None


def _phrases(phrases) -> re.Pattern:
    alt = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alt})(?![\w-])")


_CLARIFY = _phrases(CLARIFY_PHRASES)
_REFER = _phrases(REFER_PHRASES)
_YES = re.compile("(?:" + "|".join(re.escape(p) for p in sorted(YES_PARTICLES, key=len, reverse=True)) + ")" + _PARTICLE_END)
_NO = re.compile("(?:" + "|".join(re.escape(p) for p in sorted(NO_PARTICLES, key=len, reverse=True)) + ")" + _PARTICLE_END)
_BARE_NO = re.compile(r"no(?:$|\s*[,.!?;:()\u2013\u2014]|\s-|\s+(?:there|it|i|the|this|that|they|we)\b)")
_NOT_HERE = re.compile(r"not\s+(?:on|in)\s+(?:this|the)\s+(?:one|image|slice|scan|frame|film)\b|not\s+here\b|"
                       r"not\s+(?:that\s+)?i\s+(?:can\s+)?see\b")
# a verdict that opens the reply without naming the finding: "Not seen on this slice", "Pretty much
# certain it isn't - ..." (the pronoun is the asked finding: nothing else has been named yet)
_NOT_LEAD = re.compile(r"not\s+(?:present|seen|visible|visuali[sz]ed|identified|depicted|included|in view)\b")
_SURE_LEAD = re.compile(r"(?:i am\s+)?(?:reasonably|fairly|pretty much|pretty|quite|very|almost|moderately|highly)\s+"
                        r"(?:confident|certain|sure)\s*(?:that\s+)?(?=(?:it|this)\b)")
_PRONOUN_NOT = re.compile(r"(?:it|this)\s+(?:is|was)\s+not(?=\s*(?:$|[,.!;:\u2013\u2014]|\s-)|\s+(?:on|in)\s+(?:this|the)\s+"
                          r"(?:slice|image|scan|section|view)\b|\s+(?:there|here|visible|seen|present)\b)")
_PRONOUN_IS = re.compile(r"(?:it|this)\s+(?:is|was)(?=\s*(?:$|[,.!;:\u2013\u2014]|\s-)|\s+(?:on|in)\s+(?:this|the)\s+"
                         r"(?:slice|image|scan|section|view)\b|\s+(?:there|here|visible|seen|present)\b)")
# "yes no hard to tell" (no comma between: both particles, not "Yes, no pneumothorax") says neither
# (issue 48, set R) and in the languages whose yes is read: "sì e no", "sí y no", "sim e não", "oui et non", "ja und nein"
_BOTH = re.compile(r"(?:both\s+)?(?:yes\s+and\s+no|no\s+and\s+yes|yes\s+or\s+no|yes\s*/\s*no|yes\s+no|no\s+yes|"
                   r"s[ìií]\s+(?:e|y)\s+no|sim\s+e\s+n[ãa]o|oui\s+et\s+non|ja\s+(?:und|en|og|och)\s+(?:nein|nee|nej))(?!\w)")
_HEDGED_LEAD = re.compile(r"(?:" + "|".join(re.escape(p) for p in sorted(HEDGED_LEADS, key=len, reverse=True))
                          + r")[\s,:]+(?:a\s+|that\s+)?(?=(?:yes|no|not|" + "|".join(
                              re.escape(p) for p in YES_PARTICLES + NO_PARTICLES if " " not in p) + r")\b)")
_POLARITY = re.compile(r"(present|positive|absent|negative|none|nothing|unlikely|likely)"
                       r"(?:\s+(?:seen|identified|visible|detected|found|noted))?(?=$|\s*[,.!;:()\u2013\u2014]|\s-)")


_ORGANS = _term_pattern(tuple(sorted(ORGAN_WORDS, key=len, reverse=True)))


def _other_anatomy(text: str, terms: tuple[str, ...], finding: str) -> bool:
    """Whether ``text`` names anatomy other than the asked organ (another organ, or the other side)."""
    own = " ".join(terms)
    if any(m.group(0) not in own for m in _ORGANS.finditer(text)):
        return True
    pat = _term_pattern(terms)
    return pat is not None and any(_side_conflict(text, m.start(), finding) for m in pat.finditer(text))


_QUALITY_FINE = re.compile(r"\b(?:image quality|the image|quality) (?:is|looks|seems) (?:\w+ )?(?:adequate|good|fine|"
                           r"sufficient|acceptable|ok|okay|diagnostic|clear)\b")


# "The image is a lateral lumbar spine radiograph; heart size cannot be assessed": the reply says
# what the image is and that the question cannot be answered on it, so it is the wrong image.
_IMAGE_IS = re.compile(r"\b(?:the|this) (?:image|scan|study|film|picture) is an? [^.;]{0,50}?"
                       r"\b(?:image|radiograph|x-ray|ultrasound|ct|mri|endoscopy|colonoscopy|photo|scan|film)\b")
_CANNOT_ANSWER_HERE = re.compile(r"\bcan not be (?:reliably )?(?:evaluated|assessed|judged|answered|determined)\b|"
                                 r"\bcan not (?:answer|evaluate|assess|judge)\b|\bcan not make a determination\b")


# The ordinary ways a reply asks for another image, or leaves the call to a person (issue 48, set
# H): phrase families, not one reply's wording. Read only where nothing else decides.
_ASKS_FOR_IMAGE = re.compile(
    r"\b(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:send|upload|share|attach|provide|re-?send)\b|"
    r"\bplease\s+(?:send|upload|share|attach|re-?send)\b|"
    r"\b(?:i would|i will|i|we would|we) (?:need|require) (?:to see )?(?:the|a|an|more|another|other|additional|further|"
    r"some)\s+(?:[\w/-]+\s+){0,3}?(?:images?|slices?|series|views?|sequences?|films?|scans?|projections?|cuts|ct|mri|"
    r"x-rays?|radiographs?|ultrasounds?|mammograms?|photographs?)\b|"
    r"\b(?:please\s+)?confirm\s+which\s+(?:\w+\s+)?(?:joint|side|view|image|body part|organ|study|region|limb|breast|eye)\b|"
    r"\bwhich\s+(?:image|scan|picture|frame|view|film)\b|"
    r"\bonly\s+(?:received|got|have)\s+an?\s+(?:\w+\s+){0,3}(?:frame|image|file|page|screen|square)\b|"
    r"\bblank\s+(?:\w+\s+)?(?:frame|image|screen|square)\b|"
    r"\byou\s+asked\s+(?:about|for)\s+(?:the|a|an)\b[^.;]{0,40}\b(?:but|while|whereas)\b|"
    r"\bbut\s+you\s+asked\s+(?:about|for)\b|"
    # "That's a knee, not a chest ... Wrong file maybe? Send the CXR"
    r"\bwrong\s+(?:file|image|study|scan|upload|picture|attachment)\b|"
    r"\b(?:that|this|it)\s+is\s+an?\s+(?:\w+\s+){0,2}?\w+\s*,\s+not\s+an?\s+\w+\b|"
    r"\bsend\s+(?:me\s+|over\s+)?the\s+(?:\w+\s+)?(?:cxr|image|scan|film|x-ray|radiograph|ct|mri|study|photo)\b|"
    # the same in the languages models answer in
    r"\b(?:puede|podría|pourriez-vous|pouvez-vous|können sie|könnten sie|potrebbe|può)\s+(?:\w+\s+){0,2}?"
    r"(?:enviar|envoyer|senden|schicken|inviare|mandar|subir)\b|"
    r"\b(?:está cortada|está cortado|est coupée|est coupé|ist abgeschnitten|è tagliata)\b|"
    r"请(?:重新)?(?:上传|提供|发送)|分辨率(?:太|过)低|图(?:像|片)(?:太|过于)?模糊|画像を(?:再度|もう一度)?(?:送|アップロード)|"
    r"画質が(?:悪|低|不十分)")
# the read handed to a person, in the passive ("need to be assessed in person by a dermatologist")
_HANDED_OVER = re.compile(
    r"\b(?:should|must|needs? to|has to|have to|is best)\s+be\s+(?:done|performed|made|read|reviewed|assessed|interpreted|"
    r"reported|graded|evaluated|examined|seen)\s+(?:in person\s+|directly\s+|clinically\s+|properly\s+)?by\s+(?:a|an|the|your)\b|"
    # (issue 48, set R) the same said actively: "A dermatologist should examine the lesion in person"
    r"\b(?:a|an|the|your)\s+(?:[\w-]+\s+){0,2}?(?:\w+ologists?|doctors?|physicians?|clinicians?|specialists?|surgeons?|gp|"
    r"experts?|professionals?)\s+(?:should|must|needs? to|has to|have to|can|could|will|would need to)\s+(?:\w+\s+)?"
    r"(?:examine|review|assess|evaluate|see|look at|check|read|interpret)\b")
_DEFERS = re.compile(
    r"\bdefer(?:ring)?\s+(?:\w+\s+){0,3}?to\s+(?:a|an|the|your)\b|\b(?:i would|i had|i will|i am going to)\s+(?:rather|prefer)\s+not\s+(?:to\s+)?"
    r"(?:say|comment|guess|call it|commit)\b|"
    r"\b(?:reviewed|assessed|read|evaluated|checked|looked at|interpreted|reported|seen)\s+(?:urgently\s+)?by\s+"
    r"(?:a|an|the|your)\s+(?:\w+\s+){0,2}?(?:\w+ologists?|radiographers?|doctors?|physicians?|clinicians?|"
    r"specialists?|surgeons?|endoscopists?|professionals?|experts?)\b|"
    r"\bhave\s+(?:a|an|the|your)\s+(?:\w+\s+){0,2}?(?:\w+ologists?|doctors?|physicians?|clinicians?|specialists?|"
    r"endoscopists?|experts?)\s+(?:review|look at|read|check|assess|interpret)\b|"
    r"\b(?:a|the)\s+(?:call|question|decision|job)\s+for\s+(?:a|an|the|your)\s+(?:\w+\s+){0,2}?"
    r"(?:\w+ologists?|\w+scopists?|doctors?|physicians?|clinicians?|specialists?|surgeons?|experts?)\b|"
    r"\b(?:can not|will not|am not able to|am unable to)\s+(?:make|give|offer|provide|offer you)\s+(?:a|an|any)\s+"
    r"(?:diagnosis|diagnostic|interpretation|medical)\b|"
    r"\b(?:can not|could not|am not able to|am unable to)\s+(?:\w+\s+)?(?:comment on|give|offer|provide)\s+"
    r"(?:(?:a|an|any)\s+)?(?:definitive|definite|confident|reliable|firm|certain)\s+(?:answer|opinion|read|call)\b|"
    r"\b(?:can not|could not|am not able to|am unable to)\s+(?:reliably|confidently|safely|really)\s+comment\b|"
    # (issue 48, set J) the person named as the one who should read it, the read named as beyond the
    # reply ("a gastroenterologist should review", "should be done by an ophthalmologist", "I'll defer
    # to them", "discuss with your breast imaging team", "beyond what I can safely offer")
    r"\b(?:a|an|the|your)\s+(?:[\w-]+\s+){0,3}?(?:\w+ologists?|radiographers?|doctors?|physicians?|clinicians?|"
    r"specialists?|surgeons?|endoscopists?|graders?|team|experts?|professionals?)\s+(?:should|must|needs to|will need to)\s+"
    r"(?:\w+\s+)?(?:review|look at|read|report|assess|interpret|evaluate|see|examine|check|grade)\b|"
    + _HANDED_OVER.pattern + r"|"
    r"\bdefer(?:ring)?\s+to\s+(?:them|him|her|those|that|their)\b|"
    r"\b(?:discuss|talk about)\s+(?:this\s+|it\s+)?with\s+(?:a|an|the|your)\s+(?:[\w-]+\s+){0,3}?(?:team|doctors?|"
    r"\w+ologists?|clinicians?|physicians?|specialists?|gp|providers?|surgeons?)\b|"
    r"\byou\s+should\s+(?:be\s+)?(?:evaluated|seen|assessed|examined|checked)\s+(?:in|at|by)\b|"
    r"\b(?:rather than|instead of|do not|should not|can not)\s+rel(?:y|ying)\s+on\s+me\b|"
    r"\bbeyond\s+(?:what\s+i\s+can|my\s+(?:scope|abilities|ability|capabilities|remit))\b|"
    r"\bnot\s+in\s+a\s+position\s+to\b|\b(?:needs?|requires?)\s+(?:a|an)\s+(?:qualified|trained|certified|licensed|"
    r"human)\b|"
    # (issue 48, set Q) "PE assessment needs a radiologist with ...", "please get an urgent read", "I can't reliably
    # rule a bleed in or out": the read named as a person's, or as not to be made here
    r"\b(?:needs?|requires?|calls?\s+for)\s+(?:a|an)\s+(?:[\w-]+\s+){0,2}?(?:\w+ologists?|radiographers?|doctors?|"
    r"physicians?|clinicians?|specialists?|experts?|professionals?)\b|"
    r"\b(?:get|have|arrange|obtain|request|seek)\s+(?:a|an)\s+(?:(?:urgent|formal|proper|specialist|expert|radiologist's|"
    r"official|human)\s+)+(?:read|review|report|opinion|look)\b|"
    r"\b(?:can not|could not|am unable to|am not able to|unable to)\s+(?:\w+\s+)?rule\s+(?:[\w-]+\s+){0,3}?in\s+or\s+out\b|"
    r"\b(?:recommend|suggest|advise)\s+(?:an?|the|your)\s+(?:[\w-]+\s+){0,2}?(?:or\s+(?:[\w-]+\s+){1,2})?"
    r"(?:read|review|opinion|consultation|consult)\b|"
    # the same in the languages models answer in
    r"\bno puedo (?:dar|hacer|ofrecer)\b|\bje ne (?:peux|puis) pas (?:me prononcer|donner|poser|faire)\b|"
    r"\bkeine aussage\b|\bkann ich (?:nichts|keine)\b|\bnon posso (?:dare|fare|esprimermi|interpretare|valutare)\b|"
    r"\bno puedo (?:interpretar|evaluar)\b|\bje ne (?:peux|puis) pas (?:interpréter|évaluer)\b|"
    r"\b(?:si rivolga|rivolgersi|rivolgiti|acuda|acudir|adressez-vous)\s+(?:a|à|al)\b|"
    r"\b(?:consulte|consultar|consulter|konsultieren|consultare|consulti)\s+(?:a|un|une|einen|eine|il|un|votre|su|à)?\s*"
    r"(?:\w+\s+)?(?:radi\w+|m[ée]dic\w+|médecin|arzt|ärztin|doctor|dottore|especialista|spécialiste|facharzt)\b|"
    r"\bvon einem (?:radiologen|arzt|facharzt)\b|"
    # (issue 48, set L) "wenden Sie sich an Ihren Arzt", "fragen Sie Ihren Arzt", "parlez-en à votre médecin"
    r"\b(?:wenden sie sich|wende dich)\s+(?:bitte\s+)?an\b|\bfragen sie\s+(?:ihren|ihre|einen|eine)\s+(?:arzt|ärztin|radiologen)\b|"
    r"\bparlez-en\s+à\b|\bhable con su\s+(?:médico|radiólogo)\b|\bconverse com (?:o )?seu\s+(?:médico|radiologista)\b|"
    # (issue 48, set Q) the read handed to a person in nl / es / it / pt / id, and "I can't diagnose this" there:
    # "laat de foto beoordelen door een radioloog", "que lo valore un radiólogo", "lo faccia valutare da un medico",
    # "sebaiknya diperiksa oleh dokter", "ik kan hierover geen diagnose stellen"
    r"\b(?:beoordeeld|beoordelen|bekijken|bekeken|nakijken|nagekeken|laten zien)\s+(?:\w+\s+)?door\s+(?:een|uw|je|de)\b|"
    r"\braadpleeg\s+(?:een|uw|je|de)\b|\bkan\s+(?:\w+\s+)?geen\s+(?:diagnose|uitspraak|oordeel)\b|"
    r"\bque\s+(?:lo|la|los|las)\s+(?:revise|valore|evalúe|vea|interprete)\s+(?:un|una|su)\b|"
    r"\b(?:debe|deben|deber[íi]a)\s+ser\s+(?:evaluad|valorad|revisad|interpretad)\w*\s+por\b|"
    r"\b(?:far|faccia|fate|fai)\s+(?:valutare|vedere|controllare|esaminare)\s+(?:\w+\s+){0,2}?da\s+(?:un|uno|una|il|lo|la|un')|"
    r"\b(?:deve|dovrebbe)\s+essere\s+(?:valutat|esaminat|refertat|interpretat)\w*\s+da\b|"
    r"\b(?:deve|deveria)\s+ser\s+(?:avaliad|examinad|interpretad)\w*\s+por\b|\bprocure\s+(?:um|uma|o\s+seu)\b|"
    r"\b(?:konsultasikan|periksakan)\b|\b(?:sebaiknya|harus|perlu)\s+(?:\w+\s+)?(?:diperiksa|dievaluasi|dinilai|dibaca)\s+oleh\b|"
    r"\btidak\s+(?:dapat|bisa|mampu)\s+(?:\w+\s+)?(?:mendiagnosis|memberikan\s+diagnosis)\b|"
    # an image discussed with the person who reads it: "I recommend discussing this image with your radiologist"
    r"\b(?:discuss|discussing|review|reviewing|go over|going over)\s+(?:this|the|these|your)\s+(?:\w+\s+)?"
    r"(?:image|images|scan|scans|film|films|study|mammogram|x-ray|results?|findings?)\s+with\s+(?:a|an|the|your)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:\w+ologists?|doctors?|physicians?|clinicians?|specialists?|gp|providers?|team)\b")


# (issue 48, set S) the question said not to fit the image ("This is a knee radiograph; the question about intracranial
# haemorrhage does not apply to it"): the wrong image for the question, so a request for the right one
# the anatomy a finding would be in said to be outside the image: with nothing asserted and a decline, the image is
# the wrong one for the question (clarify), not a usable image the reader cannot decide on (refer)
_REGION_NOT_IMAGED = re.compile(
    r"\b(?:is|are|was|were)\s+not\s+(?:\w+\s+)?(?:included|imaged|covered|captured|in\s+(?:the|this)\s+(?:field\s+of\s+view|image|"
    r"scan|study|film|slice))\b|\b(?:outside|beyond|out\s+of)\s+(?:the|this)\s+(?:field\s+of\s+view|imaged\s+(?:volume|area|"
    r"region|field)|scan(?:ned)?\s+(?:range|area|region))\b|\b(?:scan|image|study|film|slice|view)\s+(?:only|just)\s+"
    r"(?:covers|includes|shows|images)\b")
# (issue 48, set V) "No image was attached to your message": the image never arrived, so the reply asks for it
_IMAGE_WORD = r"(?:image|images|picture|photo|file|attachment|scan|radiograph|x-ray)"
_NO_IMAGE_RECEIVED = re.compile(
    rf"\bno\s+{_IMAGE_WORD}\s+(?:was|were|has\s+been|have\s+been|is|are|seems\s+to\s+have\s+been|appears\s+to\s+have\s+been)\s+"
    rf"(?:\w+\s+)?(?:attached|included|provided|uploaded|received|shared|sent|supplied)\b|"
    rf"\b(?:the\s+|your\s+)?{_IMAGE_WORD}\s+(?:was|is|has|were|did)\s+not\s+(?:been\s+|get\s+)?(?:attached|uploaded|received|shared|"
    rf"included|sent|come\s+through)\b|\b(?:i|we)\s+(?:did|do|have)\s+not\s+(?:receive|received|get|got)\s+(?:an?|any|the|your)\s+"
    rf"{_IMAGE_WORD}\b|\bthere\s+is\s+no\s+{_IMAGE_WORD}\s+(?:attached|in\s+(?:your|the|this)\s+message)\b")
_QUESTION_DOES_NOT_APPLY = re.compile(r"\bquestion\b[^.;]{0,80}?\b(?:does not apply|do not apply|is not applicable|"
                                      r"not applicable to (?:this|the) (?:image|scan|study|film|radiograph))\b")


_EMPTY_BED = re.compile(r"\b(?:(?P<side>left|right) )?(?P<organ>[a-z]+) (?:fossa|bed|recess) (?:is|are|appears?|looks?|lies|remains?) "
                        r"(?:now |completely |entirely )?empty\b|\bempty (?:(?P<side2>left|right) )?(?P<organ2>[a-z]+) (?:fossa|bed)\b")


def _empty_bed(text: str, finding: str) -> bool:
    """Whether the organ's own bed or fossa is said to be empty ("the left renal fossa is empty", "an empty
    gallbladder fossa"): the organ is not there. The bed is the organ's by its adjective or noun, and on the
    asked side when one is asked."""
    words = normalize(finding).split()
    asked_side = next((w for w in words if w in ("left", "right")), None)
    organ = " ".join(w for w in words if w not in ("left", "right"))
    for m in _EMPTY_BED.finditer(text):
        named, side = m.group("organ") or m.group("organ2"), m.group("side") or m.group("side2")
        if _ORGAN_ADJECTIVES.get(named, named) == organ and (asked_side is None or side in (None, asked_side)):
            return True
    return False


def _normal_sign(text: str, finding: str) -> bool:
    """Whether ``text`` gives the finding's normal sign (:data:`lexicon.NORMAL_SIGNS`), not negated, in place of a verdict."""
    for pattern in NORMAL_SIGNS.get(normalize(finding), ()):
        m = re.search(pattern, text)
        if m and not re.search(r"\b(?:not|no|never|neither|nor|without|less)\b", text[max(0, m.start() - 40):m.end()]):
            return True
    return False


def _undecided(text: str) -> str | None:
    text = _QUALITY_FINE.sub(" ", text)  # "the image quality is adequate, but I can't tell" declines on a usable image
    if (_CLARIFY.search(text) or _WRONG_ANATOMY.search(text) or _ASKS_FOR_IMAGE.search(text)
            or _QUESTION_DOES_NOT_APPLY.search(text) or _NO_IMAGE_RECEIVED.search(text)):
        return "clarify"
    if _IMAGE_IS.search(text) and _CANNOT_ANSWER_HERE.search(text):
        return "clarify"
    if _REFER.search(text) or _DEFERS.search(text) or _SENT_TO.search(text):
        # a decline for the image's sake in another language ("muito escura e com muito ruído; não é possível avaliar")
        # asks for a better image (issue 48, set R)
        return "clarify" if languages.complains_of_image(text) else "refer"
    return None


# a clinical note's section headings after which a short value speaks of the section, not the finding
_NOTE_SECTION = re.compile(r"^\W*(?:s|o|p|plan|recommendations?|follow[- ]?up|history|clinical history|indication|"
                           r"technique|comparison|signed|dictated by)\s*:")


def _final_colon(lines, terms, finding, kind):
    """Rule ``final-colon``: a short verdict after the reply's last colon, question polarity."""
    last = _sentences(lines[-1])
    if last and _NOTE_SECTION.match(last[-1]):
        return None  # "P: None." closes a SOAP note: the plan is none, not the organ
    rest = revisions.final_colon_rest(last[-1]) if last else None
    if rest and _LIST_HEADER.search(last[-1].rsplit(":", 1)[0] + ":"):
        return None  # "Not seen: effusion, pneumothorax": a list under its header, read by the mention rule
    got = _content([rest], terms, finding, kind, flip=True) if rest else None
    return (got[0], got[1], "final-colon") if got is not None else None


def _json_value_reader(question: str, finding: str, kind: str):
    """How a JSON verdict string is read (:mod:`medscope.answers.structured`): a general key's value
    ("answer", "verdict") as a whole reply to the question; a presence or finding key's value as a
    label's value in the finding's polarity ("no, not seen", "not visualised", "surgically absent").
    Undecided values ("cannot determine", "difficult to assess") do not resolve."""
    def read(key_kind: str, value: str) -> tuple[bool, bool | None]:
        flag = normalize(value).strip(" .!")
        if flag in ("y", "n"):  # a one-letter flag
            return True, (flag == "y") != (key_kind == "general" and kind == "health")
        if key_kind == "general":
            r = read_decision(value, question, finding, kind)
            return r.action == "answer", (r.claim if r.action == "answer" else None)
        v = flag
        lead = _leading(v, "presence", flip=False)
        if lead is not None:
            return True, lead
        if _undecided(v):
            return False, None
        ahead = status(v + " x", len(v) + 1, len(v) + 2)  # the value as a lead-in: "no evidence of it"
        if ahead in ("negated", "conflicting"):
            return ahead == "negated", (False if ahead == "negated" else None)
        st = status("x " + v, 0, 1)  # the value as a label's predicate
        if st == "negated":
            return True, False
        if st in ("affirmed", "possible"):
            return True, True
        return False, None

    return read


# A JSON reply's own reasoning ("reasoning": "This is the liver.", "present": false) read as free
# text; where it commits the other way the reply contradicts itself.
REASONING_KEYS = ("reasoning", "reason", "rationale", "explanation", "observation", "observations", "thinking",
                  "thoughts", "analysis", "justification", "notes", "note", "comment", "comments")
# a second identity offered for the structure the verdict calls the finding
_ANOTHER_IDENTITY = re.compile(r"\b(?:could|might|may|can)\s+(?:also|equally|instead|just as well)\s+(?:be|represent)\b|"
                               r"\bor (?:it )?(?:could|might|may) be\b")
_STATEMENT_DENIAL = re.compile(r"\b(?:incorrect|wrong|untrue|false|not true|not the case|can not be said|inaccurate)\b")
_OFF_LEVEL = re.compile(r"\bnot expected (?:at|on|in) this (?:level|slice|image|section)\b|"
                        r"\b(?:is|lies|sits) (?:below|above) this level\b|"
                        # the slice placed at a level "where it is not" (the organ seen at another level)
                        r"\b(?:where|at which)\s+(?:it|they)\s+(?:is|are)\s+not\b")


def _reasoning_disagrees(obj: dict, claim: bool, finding: str, synonyms) -> bool:
    """Whether the object's reasoning fields say plainly the opposite of ``claim``: "This is the
    liver." beside ``"present": false``; "not expected at this level" or "the heart is not
    included" beside ``"present": true``. Only plain identifications and plain denials count (one
    sentence, the finding named, no second negation): reasoning about anatomy ("the esophagus ends
    above this level") is not read as a verdict."""
    texts = [str(v) for k, v in obj.items() if isinstance(v, str) and structured._norm(k) in REASONING_KEYS]
    terms = finding_terms(finding, tuple(synonyms))
    if not texts or not terms:
        return False
    alt = "|".join(re.escape(t) for t in terms)
    if revisions.correction_tail(normalize(" ".join(texts))):
        return False  # "The liver is visible. Wait, that is the spleen.": the field is where it ended
    # the organ or its own parts as the subject ("both thyroid lobes are shown", issue 48 set L)
    affirms = re.compile(rf"\b(?:this|it) is (?:the |a )?(?P<t>{alt})\b|\b(?P<u>{alt})(?: (?:lobes?|poles?|parenchyma|"
                         rf"tissue|gland|glands))? (?:is|are) (?:clearly |well |partly |both |fully )?"
                         rf"(?:seen|visible|identified|present|depicted|included|shown|captured|demonstrated|in view)\b")
    # "not visualised / demonstrated / shown / appreciated" deny as plainly as "not seen" (issue 48, set P)
    denies = re.compile(rf"\b(?P<t>{alt}) (?:is|are) not (?:\w+ ){{0,2}}?(?:seen|visible|identified|present|depicted|"
                        rf"included|expected|visuali[sz]ed|demonstrated|shown|appreciated|captured|in view)\b|"
                        rf"\bno (?P<u>{alt}) (?:is |are )?(?:seen|visible|identified|visuali[sz]ed)\b")

    def about_it(m: re.Match | None, sentence: str) -> bool:  # not "the right kidney is visible" for the left
        return m is not None and _side_conflict(sentence, m.start("t" if m.group("t") else "u"), finding) is None

    for sentence in (x for t in texts for line in _lines(t) for x in _sentences(line)):
        cues = len(_NEGATION_CUE.findall(sentence)) + len(_STATEMENT_DENIAL.findall(sentence))
        if claim is False and cues == 0 and about_it(affirms.search(sentence), sentence):
            return True
        if claim is True and (_OFF_LEVEL.search(sentence) or (cues == 1 and about_it(denies.search(sentence), sentence))):
            return True
        if claim is True and _ANOTHER_IDENTITY.search(sentence) and not re.search(rf"\b(?:{alt})\b", sentence):
            return True  # "could also be duodenum": the structure called the finding may be something else
    return False


_FINAL_TAG = re.compile(r"<\s*final\s*>(?P<inner>.*?)(?:<\s*/\s*final\s*>|$)", re.IGNORECASE | re.DOTALL)


_SCALAR_PAIR = re.compile(r"[\"'](?P<key>[^\"'\n]{1,40})[\"']\s*:\s*(?P<value>true|false|null|yes|no|-?\d+(?:\.\d+)?|\"[^\"\n]{0,40}\")",
                          re.IGNORECASE)


def _duplicate_key_disagrees(text: str) -> bool:
    """Whether one key is given twice with different scalar values ("present": true, "present": false):
    JSON parsers keep the last, others the first, so the object commits to neither (issue 48, set P)."""
    body = text[:text.rfind("}") + 1]
    if body.count("{") != 1 or "[" in body:
        return False  # one flat object only: a list of objects names each organ once per object
    seen: dict[str, str] = {}
    for m in _SCALAR_PAIR.finditer(body):
        key, value = m.group("key").strip().lower(), m.group("value").strip().lower()
        if key in seen and seen[key] != value:
            return True
        seen.setdefault(key, value)
    return False


def _structured(text, question, finding, kind, synonyms) -> Reading | str | None:
    """Rules ``final-tag`` and ``json-field``: a Reading when the structure decides, the reply's
    string values (its words without the JSON keys) when it is JSON without a verdict field, None
    when the reply is not structured."""
    m = _FINAL_TAG.search(text or "")
    if m:
        inner = m.group("inner")
        obj = parser._first_object(inner)
        if isinstance(obj, dict) and ("action" in obj or "answer" in obj):
            final, _ = parser.read_final(obj)
            if final is None or final.action != "answer":
                return Reading(final.action if final else "unparseable", None, "final-tag")
            inner = final.answer or ""
        r = read_decision(inner, question, finding, kind, synonyms)
        return Reading(r.action, r.claim, "final-tag")
    t = (text or "").strip()
    listed = structured.list_reply(t)
    if listed is not None:  # ["stomach", false]: the pair as {"stomach": false}
        t = json.dumps(listed)
    brace = t.find("{")
    if brace < 0 or (brace > 80 and not t.lstrip("`json \n").startswith("{")):
        return None
    terms = finding_terms(finding, tuple(synonyms))
    after = _lines(t[t.rfind("}") + 1:])
    late = _verdict_lines(after, terms, finding, kind) if after else None
    if late is not None:  # "Final answer: No" after the object outranks it, as in every format
        return Reading(late[0], late[1], "verdict-line")
    tail = revisions.correction_tail("\n".join(after)) if after else None
    retracted = False
    if tail:  # "Correction: on closer inspection ..." after the object takes its verdict back
        r = read_decision(tail, question, finding, kind, synonyms, _corrections=False)
        if r.action == "answer":
            return Reading(r.action, r.claim, "self-correction")
        retracted = r.action in ("refer", "clarify", "unclear")
    obj = parser._first_object(t)
    complete = isinstance(obj, dict)
    if complete and _duplicate_key_disagrees(t[brace:]):
        return Reading("unclear", None, "json-field")  # {"present": true, "present": false}: a parser keeps either
    v = structured.json_verdict(obj if complete else structured.complete_pairs(t[brace:]), finding, terms,
                                _json_value_reader(question, finding, kind))
    if v.found:
        if v.claim is None:
            # (issue 48, set S) a null verdict whose reason is the wrong body part or a poor image asks for the right
            # image, as the same reason in prose does: {"present": null, "reason": "wrong body part: ... a hand"}
            why = normalize(" ".join(structured.string_values(obj))) if complete else ""
            return Reading("clarify" if why and _undecided(why) == "clarify" else "refer", None, "json-field")
        if retracted:  # {"present": true} then "Note: on review only the diaphragm is visible"
            return Reading("unclear", None, "self-correction")
        if complete and _reasoning_disagrees(obj, v.claim, finding, synonyms):
            return Reading("unclear", None, "json-field")
        return Reading("answer", v.claim, "json-field" if complete else "json-partial")
    if not complete:
        return Reading("unparseable", None, "none")  # a cut-off object: its verdict never came
    return "\n".join(structured.string_values(obj))


# (issue 48, set O) a vision model's image placeholder ("<image>") is a template token too
# (issue 48, set Q) a detection model's location and mask tokens ("<loc_0412>", "<seg_017>") are too
_SPECIAL_TOKENS = re.compile(r"\[(?:end|eos|sep|pad|/?inst)\]|</?s>|<\|[\w-]+\|>|<(?:eos|pad|unk|bos|image|img)>|"
                             r"<(?:loc|seg)_?\d{1,4}>", re.IGNORECASE)
# A template left unfilled (issue 48, set O): every line an empty label ("Answer:", "Fracture
# evaluation:"), a bare list number ("1."), or the question echoed back ("Question: Is there ...?"),
# so the reply holds no word of its own about the finding. A label that is itself a verdict ("No:") is words.
_EMPTY_LABEL = re.compile(r"^\W*(?P<label>[^:\n]{1,40}?)\s*:\s*$")
_BARE_ITEM = re.compile(r"^\W*\d{0,2}\s*[.)\-*\u2022]?\s*$")
_VERDICT_WORD = re.compile(r"\b(?:yes|no|not|none|present|absent|positive|negative|seen|visible|normal|abnormal|nil|"
                           r"neg|pos|true|false)\b")


# (issue 48, set R) how an image was made: scanner, field strength, sequence, acquisition
_ACQUISITION = re.compile(r"\b(?:acquired|acquisition|scanner|sequences?|[\w-]*weighted|tesla|\d+(?:\.\d+)?\s*t|slice thickness|"
                          r"kvp|mas|field strength|reconstructed|reconstruction kernel|contrast phase|protocol)\b")
# byte debris a generator leaves: replacement characters, SentencePiece word markers, hex literals
_BYTE_DEBRIS = re.compile(r"[\ufffd\u2581]|\b0x[0-9a-f]+\b")


def _unfilled_template(text: str, question: str) -> bool:
    """Whether ``text`` is a template with nothing filled in (see :data:`_EMPTY_LABEL`)."""
    asked = re.sub(r"\W+", " ", normalize(question or "")).strip()
    lines = [ln.strip() for ln in normalize(text or "").split("\n") if ln.strip()]
    if not lines:
        return False
    frame = False  # an option letter or number alone ("(B)", "1") is a choice, not a template
    for line in lines:
        label = _EMPTY_LABEL.match(line)
        echo = re.sub(r"\W+", " ", _QUESTION_LEAD.sub("", line)).strip()
        if (label is not None and not _VERDICT_WORD.search(label.group("label"))) or (asked and echo == asked):
            frame = True
        elif not _BARE_ITEM.match(line):
            return False
    return frame
# a short reply that stops on a word that cannot end a sentence ("The lateral ventricles are"): cut off
_CUT_OFF = re.compile(r"\b(?:is|are|was|were|the|a|an|of|and|or|to|with|in|on|at|by|for|but|that|which|its|their|be|"
                      r"been|being)\s*$")
# (issue 48, set Q) a lead-in phrase and then only the subject, no predicate and no full stop ("Looking at the
# image, the trachea"; "On this slice, both kidneys"): cut off before it says how the subject stands
_LEAD_IN_CUT = re.compile(r"^\W*(?:(?:looking|having looked)\s+(?:at|through|over)|examining|reviewing|inspecting|assessing|"
                          r"evaluating|scanning|on\s+(?:close\s+)?(?:review|inspection|examination)(?:\s+of)?|in|on|at|from|based\s+on)"
                          r"\b[^,.;:!?\n]{0,50},\s*(?:(?:the|a|an|this|these|both)\s+)?(?:[\w-]+\s+){0,2}[\w-]+\s*$")


def _phrase_loop(words: list[str]) -> bool:
    """Whether ``words`` are one phrase of two to four words said over and over, at least three times
    ("breast lesion breast lesion breast lesion"; issue 48, set Q); the last turn may be cut short."""
    for period in range(2, 5):
        if len(words) >= 3 * period and all(w == words[i % period] for i, w in enumerate(words)):
            return True
    return False


_KEY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _keyboard_run(word: str) -> bool:
    """Whether ``word`` is three or more neighbouring keys of one keyboard row struck in order ("asdf", "qwerty", "jkl")."""
    return len(word) >= 3 and any(word in row or word in row[::-1] for row in _KEY_ROWS)


# (issue 48, set U) Russian written in Latin letters: the reply is all Latin letters, says "ne" / "net" beside a
# verb or noun of finding ("vyyavleno", "vidna", "patologii") and has no English function word
_ROMANIZED_NEGATOR = re.compile(r"\b(?:ne|net)\b", re.I)
_ROMANIZED_WORD = re.compile(r"\b(?:vyyavl\w*|obnaruzh\w*|vid(?:en|na|no|ny|at)|patologi\w*|nichego|otmecha\w*)\b", re.I)
_ENGLISH_WORD = re.compile(r"\b(?:the|is|are|this|that|of|and|there|no|not|seen|visible)\b", re.I)
_LATIN_TO_CYRILLIC = (("shch", "щ"), ("sch", "щ"), ("zh", "ж"), ("kh", "х"), ("ts", "ц"), ("ch", "ч"), ("sh", "ш"),
                      ("yu", "ю"), ("ya", "я"), ("yo", "ё"), ("ye", "е"), ("a", "а"), ("b", "б"), ("v", "в"),
                      ("g", "г"), ("d", "д"), ("e", "е"), ("z", "з"), ("i", "и"), ("y", "ы"), ("k", "к"), ("l", "л"),
                      ("m", "м"), ("n", "н"), ("o", "о"), ("p", "п"), ("r", "р"), ("s", "с"), ("t", "т"), ("u", "у"),
                      ("f", "ф"), ("'", "ь"))
_LATIN_LETTERS = re.compile("|".join(re.escape(a) for a, _ in _LATIN_TO_CYRILLIC))
_CYRILLIC_OF = dict(_LATIN_TO_CYRILLIC)


def _cyrillic_of_romanized_russian(text: str) -> str:
    """The reply in Cyrillic where it is Russian in Latin letters; otherwise the reply unchanged."""
    if (not text.isascii() or "{" in text or not _ROMANIZED_NEGATOR.search(text) or not _ROMANIZED_WORD.search(text)
            or _ENGLISH_WORD.search(text)):
        return text
    return _LATIN_LETTERS.sub(lambda m: _CYRILLIC_OF[m.group(0)], text.lower())


# (issue 48, set U) sarcasm: an ironic lead ("oh sure", "oh no", "yeah right"), an emphatic word in its verdict
# ("totally", "absolutely") and a tail after a dash that takes it back ("- if you count ...", "... for fun")
_SARCASM = re.compile(r"^\W*(?:oh\s+(?:sure|yes|yeah|no|absolutely|definitely|totally)|yeah,?\s+right|sure\s+thing)\b"
                      r"[^.\n]{0,80}?\b(?:totally|absolutely|definitely|clearly|obviously|certainly)\b[^.\n]{0,80}?"
                      r"(?:\s[-\u2013\u2014]|[\u2013\u2014])\s*(?=[^.\n]*\b(?:if you count|unless|for fun|just|only if|"
                      r"as long as|assuming)\b)")


# (issue 48, set U) a transplanted kidney named as there: "renal transplant", "transplant kidney", "renal allograft"
_TRANSPLANT = re.compile(r"\b(?:(?:renal|kidney)\s+(?:transplant|allograft|graft)|transplant(?:ed)?\s+kidney|"
                         r"allograft\s+kidney)\b")
_CLAUSE_BREAK = re.compile(r"[.;,:\n]|\b(?:but|with|while|whereas|although)\b")


def _transplant_seen(text: str, finding: str) -> bool:
    """Whether an unsided kidney question is answered by a transplanted kidney said to be there: not
    negated in its own clause ("no renal transplant", "the transplant kidney is not seen" are not)."""
    if finding.strip().lower() not in ("kidney", "kidneys") or _YES.match(text) or _NO.match(text):
        return False
    m = _TRANSPLANT.search(text)
    if not m:
        return False
    before = _CLAUSE_BREAK.split(text[:m.start()])[-1]
    after = _CLAUSE_BREAK.split(text[m.end():])[0]
    return not _NEGATION_CUE.search(before + " " + after) and not re.search(r"\b(?:absent|removed|explanted)\b", after)


# (issue 48, set U) a conditional answered both ways: "If this is the arterial phase, ... would be the liver; if it is a
# non-contrast study, it could just as well be a fluid collection", "If there was trauma, this could be a fracture; if not,
# a nutrient canal". Every sentence opens a branch, and there are two branches: the reply commits to neither
_BRANCH_LEAD = re.compile(r"^\W*(?:(?:but|whereas|and)\s+)?(?:if|otherwise|else|unless)\b")
_BRANCH = re.compile(r"(?:^|[;,.:\u2013\u2014]\s*|\b(?:but|whereas|while|and)\s+)(?:if|otherwise|else|unless)\b")


def _conditional_both_ways(text: str) -> bool:
    """Whether ``text`` (normalised) is only a conditional with two or more branches, each opened by "if" /
    "otherwise" / "unless", and no unconditional sentence that commits."""
    sentences = [x for x in re.split(r"(?<=[.!?])\s+|\n+", text) if re.search(r"\w", x)]
    if not sentences or len(sentences) > 3 or not all(_BRANCH_LEAD.match(x) for x in sentences):
        return False
    return len(_BRANCH.findall(text)) >= 2


# (issue 48, set U) "Could be a normal variant, could be early disease": a normal alternative set against a disease
# alternative, each hedged, says neither; read word by word, the normal word denied the abnormality
_MAYBE = r"(?:could|may|might|can)\s+(?:also\s+|just\s+as\s+well\s+|equally\s+)?be\s+(?:an?\s+)?"
_NORMAL_ALTERNATIVE = r"(?:normal|physiologic(?:al)?|benign)(?:\s+(?:variant|finding|appearance|anatomy))?"
_DISEASE_ALTERNATIVE = r"(?:early\s+|true\s+|real\s+|a\s+)?(?:disease|patholog\w*|abnormal\w*|something\s+(?:real|serious))"
_NORMAL_OR_DISEASE = re.compile(
    rf"\b{_MAYBE}{_NORMAL_ALTERNATIVE}\b[^.;]{{0,30}}?[,;]\s*(?:(?:or|but)\s+)?(?:it\s+)?{_MAYBE}{_DISEASE_ALTERNATIVE}\b|"
    rf"\b{_MAYBE}{_DISEASE_ALTERNATIVE}\b[^.;]{{0,30}}?[,;]\s*(?:(?:or|but)\s+)?(?:it\s+)?{_MAYBE}{_NORMAL_ALTERNATIVE}\b")


# (issue 48, set U) a decline sent on to a person: "I can't reliably identify abnormalities on this film; please consult a
# qualified radiologist" refers the question; its "can't identify abnormalities" is the reader's limit, not a denial
_CANNOT_IDENTIFY = re.compile(
    r"\b(?:can not|could not|unable to|not able to)\s+(?:confidently|reliably|definitely|accurately|safely)\s+"
    r"(?:identify|detect|see|assess|evaluate|interpret|exclude|rule out)\b")
_TO_A_PERSON = re.compile(r"\b(?:consult|see|ask|contact|refer\w*\s+to|review(?:ed)?\s+by)\s+(?:with\s+)?(?:a|an|your|the)\s+"
                          r"(?:qualified\s+|board[- ]certified\s+|trained\s+|licensed\s+|treating\s+)?"
                          r"(?:radiologist|specialist|doctor|physician|clinician|professional)\b")


# (issue 48, set U) small talk to an open question ("Great question. Radiology is a fascinating field with many
# subspecialties."): a pleasantry or a remark about the field, no finding; read as a finding described it claimed
_SMALL_TALK = re.compile(
    r"^\W*(?:(?:what\s+an?\s+|a\s+)?(?:great|good|excellent|interesting|fascinating|nice)\s+question|thanks?(?:\s+you)?"
    r"(?:\s+for\s+(?:asking|the\s+question|sharing))?|(?:hello|hi|hey)(?:\s+there)?|happy\s+to\s+help|"
    r"i\s+am\s+(?:happy|glad)\s+to\s+help|"
    r"(?:radiology|medicine|medical\s+imaging|imaging|diagnostic\s+imaging)\s+is\s+(?:a|an|such\s+a)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:field|discipline|specialty|speciality|science|area|subject)\b[^.!?]*)\W*$")


def read_decision(text: str, question: str, finding: str, question_kind: str | None = None,
              synonyms: tuple[str, ...] | list[str] = (), *, _corrections: bool = True) -> Reading:
    """Read a free-text reply (or an answer field) into a decision about ``finding``.

    Parameters
    ----------
    text : str
        The reply (or an answer field).
    question : str
        The question the model was asked; its wording sets the question kind when ``question_kind`` is None.
    finding : str
        The asked finding (e.g. ``"pneumothorax"``, ``"left kidney"``).
    question_kind : {"presence", "health", "open", "organ"} or None, optional
        The question's kind; None to infer it with :func:`infer_question_kind`. ``"organ"`` is a
        presence question about an organ (the organ-presence probe): health words ("no acute
        abnormality") do not answer it, and a reply about other organs only is ``refer``.
    synonyms : sequence of str, optional
        Extra words naming the finding (the view's own list), added to :func:`finding_terms`.
    _corrections : bool, optional
        Internal: False when reading the tail after a self-correction, so it is not read again.

    Returns
    -------
    Reading
        ``action`` (``answer``, ``refer``, ``clarify`` or ``unparseable``), ``claim`` for an answer,
        and ``rule``, the rule of :data:`RULES` that decided.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10.
    """
    # NUL characters are a decoder's leftovers (UTF-16 read as bytes: "Y\x00e\x00s"), never part of a word (issue 48)
    text = (text or "").replace("\x00", "")
    # (issue 48, set U) Russian in Latin letters ("Patologii ne vyyavleno", no pathology found) is read in Cyrillic,
    # as the reader reads Russian; read as English, the open question's reply was a finding described
    text = _cyrillic_of_romanized_russian(text)
    # end-of-sequence and template tokens ("[END]", "</s>", "<|endoftext|>") are a generator's
    # leftovers, not words of the reply (issue 48, set M)
    stripped = normalize(_SPECIAL_TOKENS.sub(" ", text or ""))
    words = re.findall(r"\w+", stripped)
    # "Answer: A" to a question with lettered options is a choice, not a reply cut after its article (issue 48, set R)
    chose_letter = bool(re.fullmatch(r"\W*(?:(?:final\s+)?answer\W*)?\(?[a-e]\)?\W*", stripped)) and markup.has_options(question)
    if 2 <= len(words) <= 8 and _CUT_OFF.search(stripped) and not chose_letter:
        return Reading("unparseable", None, "none", "the reply stops mid-sentence before it says anything of the finding")
    if len(words) <= 12 and _LEAD_IN_CUT.match(stripped) and not _VERDICT_WORD.search(stripped):
        return Reading("unparseable", None, "none", "the reply stops after its subject, before it says anything of it")
    if len(words) >= 3 and len(set(words)) == 1:
        return Reading("unparseable", None, "none", "one word repeated: degenerate output, not a reply")
    if _phrase_loop(words):
        return Reading("unparseable", None, "none", "one phrase repeated in a loop: degenerate output, not a reply")
    runs = [len(list(g)) for _, g in groupby(words)]
    enough = 4 if stripped != normalize(text or "") else 6  # a leftover token marks a degenerate output already
    if len(words) >= enough and len(runs) >= 2 and min(runs) >= 2:  # "skin skin skin lesion lesion image image"
        return Reading("unparseable", None, "none", "words repeated in runs: degenerate output, not a reply")
    if enough == 4 and runs and max(runs) >= 3:  # "asdkj heart heart heart ||| <unk>" (issue 48, set P)
        return Reading("unparseable", None, "none", "a word stuttered beside a generator token: degenerate output")
    if (enough == 4 and runs and max(runs) >= 2 and not _VERDICT_WORD.search(stripped)
            and not _POSITIVE_PREDICATE.search(stripped)):
        # "adrenal adrenal ### 0.87 seg_mask <loc_0412>" (issue 48, set Q): a name said twice beside a generator's
        # token and no word that says anything of it
        return Reading("unparseable", None, "none", "a name stuttered beside a generator token, no statement: degenerate output")
    if enough == 4 and _BYTE_DEBRIS.search(stripped) and not _VERDICT_WORD.search(stripped) and not _POSITIVE_PREDICATE.search(stripped):
        # "</s><s>[/INST] ▁▁▁ 0x3f ### image_patch_17 ��": generator tokens beside byte debris, no statement (issue 48, set R)
        return Reading("unparseable", None, "none", "generator tokens and byte debris, no statement: degenerate output")
    if words and all(_keyboard_run(w) for w in words):
        # "asdf ### <unk> <unk> </s>" (issue 48, set T): keys struck in a row beside a generator's tokens, no word;
        # to an open question any text had read as a finding described
        return Reading("unparseable", None, "none", "keys struck in a row, no word: degenerate output, not a reply")
    if re.fullmatch(r"(?:i|we)\s+(?:can\s+)?see|i\s+understand|okay|ok|hmm+", " ".join(words)):
        # "I see" alone acknowledges; it says nothing of the finding (issue 48, set P)
        return Reading("unparseable", None, "none", "an acknowledgement alone, not a reply")
    # the same after a label that echoes the question ("Aortic aneurysm: the the aorta aorta ####"; issue 48, set L)
    label = re.match(r"^\W*[^:\n]{1,40}:\s*(?P<value>[^\n]*)$", normalize(text or ""))
    value = re.findall(r"\w+", label.group("value")) if label else []
    value_runs = [len(list(g)) for _, g in groupby(value)]
    if len(value) >= 4 and len(value_runs) >= 2 and min(value_runs) >= 2:
        return Reading("unparseable", None, "none", "words repeated in runs after a label: degenerate output, not a reply")
    if _unfilled_template(stripped, question):
        return Reading("unparseable", None, "none", "an unfilled template: empty labels, list numbers or the question echoed")
    if _SARCASM.search(stripped):
        # (issue 48, set U) "Oh sure, the pancreas is *totally* visible — if you count a slice through the thighs":
        # the words say one thing and mean the other; read literally it flipped, and the reader cannot be sure
        return Reading("unclear", None, "conflicting-evidence", "sarcasm: an ironic lead and an emphatic verdict "
                       "taken back by its own tail; the literal words may mean the opposite")
    if _conditional_both_ways(stripped):
        # (issue 48, set U) each branch commits only under its own condition; read whole, one branch's words decided
        return Reading("refer", None, "undecided", "a conditional answered both ways: each branch commits only if its "
                       "condition holds")
    if question_kind == "organ" and _transplant_seen(stripped, finding):
        # (issue 48, set U) "the native kidneys are not well seen, but there is a renal transplant in the right
        # iliac fossa": a transplanted kidney is a kidney; the native ones' denial read absent
        return Reading("answer", True, "mention", _TRANSPLANT.search(stripped).group(0))
    token = _REVERSED_QUESTION.set(question_is_reversed(question))
    declines = _DECLINING.set(bool(_undecided(normalize(text or ""))))
    try:
        r = _read_wrapped(text, question, finding, question_kind, tuple(synonyms), _corrections)
    finally:
        _REVERSED_QUESTION.reset(token)
        _DECLINING.reset(declines)
    return r if r.evidence else replace(r, evidence=_evidence(r, text, finding_terms(finding, tuple(synonyms))))


# An explicit refusal to decide the asked question; beside a reading made from mentions it makes
# two readings, so the reply is unclear (a verdict line or a label outranks it: those commit).
_DECLINE = re.compile(
    r"\b(?:can not|could not|unable to|not able to|impossible to)\s+(?:reliably\s+|confidently\s+|really\s+)?"
    r"(?:tell|determine|decide|judge|be sure|be certain|say (?:whether|if|for sure|for certain|with certainty|"
    r"definitely|definitively))\b|\bcan not be determined\b|"
    # "I can't confidently identify it" (issue 48, set L): the reader declines the identification
    r"\b(?:can not|could not|unable to|not able to)\s+(?:confidently|reliably|definitely|clearly|really)\s+"
    r"(?:identify|see|make out|distinguish|separate)\s+(?:it|them|this|that|the)\b|"
    r"\b(?:difficult|hard) to (?:tell|determine|say|decide|be sure)\b|\b(?:i am )?not sure\b|\bindeterminate\b|"
    # a refusal to commit, said as such: "it's cropped and I can't say.", "I'd rather not commit"
    r"\bcan not say\s*(?:[.!;,]|$)|\b(?:rather not|not going to|will not|do not want to)\s+commit\b|"
    # (issue 48, sets M and N) "I can't say either way", "whether the cord itself is discernible is uncertain"
    r"\bcan not say either way\b|\bwhether\b[^.;]{1,80}\b(?:is|remains)\s+(?:uncertain|unclear|indeterminate)\b|"
    # (issue 48, set T) "I cannot reach a conclusion" after a lucency that "could be a fracture, but could also be a physis"
    r"\b(?:can not|could not|unable to|not able to)\s+(?:reach|come to|make|draw|arrive at)\s+(?:a|any)\s+"
    r"(?:firm\s+|definite\s+|definitive\s+|final\s+)?(?:conclusion|decision|determination|call)\b")

# Checklists: "[x] Pneumothorax", "✓ nodule", "Polyp: ✗", "| Effusion | ❌ |" (a table row reads as
# "effusion: ❌"). A tick claims, a cross denies, an empty box is not read as either.
_TICKS, _CROSSES, _EMPTY = "x\u2713\u2714\u2611\u2705", "\u2717\u2718\u2612\u274c\u274e", "\u2610\u2b1c"
_MARK = (rf"(?:\[(?P<box>[{_TICKS} ])\]|(?P<mark>[{_TICKS[1:]}{_CROSSES}{_EMPTY}]))")
_CHECK_LEAD = re.compile(rf"^{_MARK}\s*(?P<label>[^{_TICKS[1:]}{_CROSSES}{_EMPTY}]+?)\s*[.!]?$")
_CHECK_TRAIL = re.compile(rf"^(?P<label>[^{_TICKS[1:]}{_CROSSES}{_EMPTY}\[]+?)\s*[:=\-\u2013\u2014]?\s*{_MARK}\s*[.!]?$")


def _checkmarks(lines: list[str], terms: tuple[str, ...]) -> tuple[str, bool | None, str] | None:
    """Rule ``label-line`` for checklists: the finding's line ticked, crossed or left empty. Lines
    that disagree, or an empty box, are ``unclear``: a box left empty may mean "absent" or "not
    looked at"."""
    pat = _term_pattern(terms)
    if pat is None:
        return None
    marks = []
    for line in lines:
        m = _CHECK_LEAD.match(line) or _CHECK_TRAIL.match(line)
        if not m or not pat.search(m.group("label")) or len(m.group("label").split()) > 6:
            continue
        box, mark = m.group("box"), m.group("mark")
        if box == " " or (mark and mark in _EMPTY):
            marks.append(None)
        else:
            marks.append(not (mark and mark in _CROSSES))
    if not marks:
        return None
    if None in marks or len(set(marks)) > 1:
        return "unclear", None, "label-line"
    return "answer", marks[0], "label-line"


# Probabilities ("~80% likely present", "probability of a nodule: 0.15") and ratings ("confidence 3/5"):
# the thresholds (an addition) are lexicon.PROBABILITY_CLAIM_AT / PROBABILITY_DENY_AT, shared with
# markup's reading of a probability value in an object.
# Guard (c) of the round tuned on set G (issue 48): "P(stone) in [0.02, 0.08]" states a probability
# as a verdict; read as "stone probability ..." it goes to the probability rule and its documented
# thresholds (an interval decides only when both ends fall on one side), else it is unclear.
_P_NOTATION = re.compile(r"(?<![\w.])p\s*\(\s*([a-z][^()]{0,40}?)\s*\)(?=[^\d\n]{0,12}\d)")
_PROBABILITY_WORDS = re.compile(r"\b(?:likely|likelihood|probability|probable|chance|odds)\b")
_CONFIDENCE_WORDS = re.compile(r"\b(?:confident|confidence|certain|certainty|sure)\b")
_NUMBER = re.compile(r"(?<![\w.])(?P<pct>\d{1,3}(?:\.\d+)?)\s*%|(?<![\w.])(?P<dec>0?\.\d+|1\.0+|0|1)(?![\w%/]|\.\d)")
_RATING = re.compile(r"(?<![\w.])(?:10|\d)\s*(?:/|out of)\s*(?:5|7|10)\b|"
                     r"\b[01]\s*=\s*[^,;)]{0,40}[,;]\s*(?:[2-9]|10)\s*=")  # a scale with its legend

# Findings named by a graded sign (issue 48's "findings named only by their signs"): BI-RADS for a
# breast lesion (ACR BI-RADS: 1 negative; 2 benign, 3 probably benign, 4-5 suspicious, 6 known
# cancer: a finding is there; 0 incomplete) and the cardiothoracic ratio for cardiomegaly (above
# 0.5 on a PA film is the textbook definition; exactly 0.5 decides nothing).
_BIRADS = re.compile(r"\bbi-?rads\s*(?:category\s*|cat\.?\s*)?[:=]?\s*(?P<cat>[0-6])(?:[abc])?\b")
_BOUND = re.compile(r"(?P<lt>\b(?:less|lower|smaller)\s+than|\bbelow|\bunder|<)|(?P<gt>\b(?:more|greater|higher|larger)\s+than|"
                    r"\babove|\bover|\bexceeds?|\bexceeding|>)")
_CTR = re.compile(r"\b(?:ctr|cardio-?thoracic ratio)\b[^.;\d]{0,25}?(?P<v>0?\.\d+|\d{2}(?:\.\d+)?\s*%)")


def _graded_sign(text: str, finding: str) -> tuple[str, bool | None] | None:
    """The verdict a graded sign states for the finding, or None when the reply states none."""
    f = normalize(finding)
    found = set()
    if re.search(r"\b(?:breast|lesion|mass)\b", f):
        for m in _BIRADS.finditer(text):
            cat = int(m.group("cat"))
            found.add(("refer", None) if cat == 0 else ("answer", cat >= 2))
    if "cardiomegaly" in f:
        for m in _CTR.finditer(text):
            v = m.group("v")
            ratio = float(v.rstrip(" %")) / 100 if "%" in v else float(v)
            # a bound, not a value (issue 48, set L): "less than 0.5" is below the threshold, "over 0.5" above
            bound = _BOUND.search(text[m.start():m.start("v")])
            if bound is not None and not re.search(r"\b(?:not|no)\s+$", text[m.start():m.start() + bound.start()]):
                below = bound.group("lt") is not None
                settled = (below and ratio <= 0.5) or (not below and ratio >= 0.5)
                found.add(("answer", not below) if settled else ("unclear", None))  # "under 0.6": either side
                continue
            found.add(("unclear", None) if ratio == 0.5 else ("answer", ratio > 0.5))
    if not found:
        return None
    return found.pop() if len(found) == 1 else ("unclear", None)


# (issue 48, set V) a rating on a scale the reply states the direction of: by its legend ("1 = definitely not visible,
# 5 = definitely visible") or by a likelihood word ("Likelihood of nodule (1-5): 4"). Above the scale's middle is a
# claim (a hedged one on its way up, as "probably present" is), below it a denial, the middle itself commits to
# neither (refer), each only where words say the same ("3 - indeterminate", "1 - definitely absent", or the legend's
# entry for the value); a bare number stays unclear (which point is the answer is not checked, the D round's rule).
# Without a stated direction the rating stays unclear ("rating"); read as a probability, the "1" of "(1-5)" was a
# certainty.
_SCALE_RANGE = re.compile(r"(?:\(\s*|\bscale\s+of\s+|\bon\s+an?\s+)(?P<lo>\d{1,2})\s*(?:-|\u2013|to)\s*(?P<hi>\d{1,2})"
                          r"(?:\s*\)|\s+scale\b|(?=\s*[,:]))")
_LEGEND_ENTRY = re.compile(r"(?<![\w.])(?P<n>\d{1,2})\s*=\s*(?P<text>[^,;=()\u2026]+?)\s*(?=[,;)\u2026]|\.\.\.|\d{1,2}\s*=|$)")
_OUT_OF = re.compile(r"(?<![\w.])(?P<v>\d{1,2})\s*(?:/|out of)\s*(?P<hi>5|7|10)\b")
_SCALE_VALUE = re.compile(r"\)?\s*\**\s*[:=]?\s*\**\s*(?P<v>\d{1,2})(?!\d|\.\d|\s*(?:[-\u2013/=]|out of|to)\s*\d)\**")
_SCALE_BOUND = re.compile(r"[01]\s*(?:-|\u2013|to)\s*(?:[2-9]|10)(?![\d.%])")
_SCALE_DIRECTION_WORDS = re.compile(r"\b(?:likelihood|probability|chance|odds)\b")
_SCALE_UNDECIDED = re.compile(r"\b(?:indeterminate|equivocal|uncertain|undetermined|unsure|can\s*not\s+tell|not\s+sure|"
                              r"neither|either way)\b")
_SCALE_NEGATIVE = re.compile(r"\b(?:not|no|absent|unlikely|none|without)\b")
_SCALE_POSITIVE = re.compile(r"\b(?:present|visible|seen|in view|likely|identified|detected)\b")


def _scale_polarity(words: str) -> str | None:
    """'refer', 'negative' or 'positive' for the words of a scale's anchor, or None when they say none of these."""
    if _SCALE_UNDECIDED.search(words):
        return "refer"
    if _SCALE_NEGATIVE.search(words):
        return "negative"
    return "positive" if _SCALE_POSITIVE.search(words) else None


def _scale_rating(sentence: str) -> tuple[str, bool | None] | None:
    """What a rating on a scale of stated direction says (``("answer", claim)``, ``("refer", None)`` or
    ``("unclear", None)``), or None when the sentence holds no such rating."""
    legend = {int(m.group("n")): m.group("text") for m in _LEGEND_ENTRY.finditer(sentence)}
    if any(re.search(r"\b(?:normal|abnormal)\b", t) for t in legend.values()):
        return None  # a normality scale: its direction is the finding's only through what "normal" means for it
    out_of, span = _OUT_OF.search(sentence), _SCALE_RANGE.search(sentence)
    if out_of:
        lo, hi, value, end = (0 if out_of.group("hi") == "10" else 1), int(out_of.group("hi")), int(out_of.group("v")), out_of.end()
    else:
        entries = list(_LEGEND_ENTRY.finditer(sentence))
        if span is not None:
            lo, hi = int(span.group("lo")), int(span.group("hi"))
        elif len(legend) >= 2:
            lo, hi = min(legend), max(legend)
        else:
            return None
        end = max(([span.end()] if span else []) + [e.end() for e in entries])
        m = _SCALE_VALUE.match(sentence, end)
        if m is None:
            return None
        value, end = int(m.group("v")), m.end()
    if not lo <= value <= hi or lo >= hi:
        return None
    ends = (_scale_polarity(legend[lo]) if lo in legend else None, _scale_polarity(legend[hi]) if hi in legend else None)
    if ends in (("negative", "positive"), ("negative", None), (None, "positive")) or (
            ends == (None, None) and _SCALE_DIRECTION_WORDS.search(sentence[:end])):
        up = True
    elif ends in (("positive", "negative"), ("positive", None), (None, "negative")):
        up = False
    else:
        return None
    middle = (lo + hi) / 2
    side = "refer" if value == middle else ("positive" if (value > middle) == up else "negative")
    # the number is read only with words that say the same: its own ("4 - probably present") or its legend entry's
    # ("5 = definitely visible"); a bare "2/5" or a point between the legend's entries stays unclear
    said = _scale_polarity(sentence[end:])
    if said is None and value in legend:
        said = _scale_polarity(legend[value])
    if said != side:
        return "unclear", None  # "Likelihood (1-5): 4 - unlikely": the words and the number disagree, or no words
    return ("refer", None) if side == "refer" else ("answer", side == "positive")


def _without_probability(line: str, terms: tuple[str, ...]) -> str:
    """A line with its stated probabilities removed: the number, the probability word and the
    finding's name within four words of it ("pneumothorax probability: 0.1" -> "")."""
    if not (_PROBABILITY_WORDS.search(line) and _NUMBER.search(line)):
        return line
    pat = _term_pattern(terms)
    if pat is not None:
        near = re.compile(rf"(?:{pat.pattern})(?:\W+\w+){{0,4}}?\W+(?={_PROBABILITY_WORDS.pattern})|"
                          rf"{_PROBABILITY_WORDS.pattern}(?:\W+\w+){{0,4}}?\W+(?:{pat.pattern})")
        line = near.sub(" ", line)
    line = re.sub(rf"{_PROBABILITY_WORDS.pattern}(?:\W+\w+){{0,2}}?\W+(?:present|presence|visible|seen)\b", " ", line)
    return _SPACES.sub(" ", _NUMBER.sub(" ", _PROBABILITY_WORDS.sub(" ", line))).strip(" ,:;()")


def _probability(sentences: list[str]) -> tuple[str, bool | None] | None:
    """What the reply's stated probabilities say: ``("answer", claim)``, ``("unclear", None)``,
    ``("keep", None)`` (a confident statement: the other rules read it), or None (none stated)."""
    found = []
    for s in sentences:
        prob, conf = _PROBABILITY_WORDS.search(s), _CONFIDENCE_WORDS.search(s)
        if not (prob or conf):
            continue
        for m in _NUMBER.finditer(s):
            if _SCALE_BOUND.match(s, m.start()):
                continue  # "(1-5)": the bounds of a rating scale, not a certainty (issue 48, set V)
            p = float(m.group("pct")) / 100 if m.group("pct") else float(m.group("dec"))
            if not 0 <= p <= 1:
                continue
            if conf or _NEGATION_CUE.search(s) or re.search(r"\b(?:absent|absence)\b", s):
                found.append(("keep", None) if p >= PROBABILITY_CLAIM_AT else ("unclear", None))
            elif p >= PROBABILITY_CLAIM_AT:
                found.append(("answer", True))
            elif p <= PROBABILITY_DENY_AT:
                found.append(("answer", False))
            else:
                found.append(("unclear", None))
    if not found:
        return None
    if ("unclear", None) in found or len({f for f in found if f[0] == "answer"}) > 1:
        return "unclear", None
    answers = [f for f in found if f[0] == "answer"]
    return answers[0] if answers else ("keep", None)


_UNCLEAR_WHY = {
    "other-subject": "the finding is not named and the presence words speak of another entity (their subject)",
    "bare-mention": "the finding is only named (no word says it is there) and the same line carries a negative, "
                    "zero or unknown-language token the reader did not attach",
    "probability": "the stated probability is between the claim and denial thresholds, or disagrees with the words",
    "rating": "a rating on a scale whose direction the reader cannot check",
    "graded-sign": "the graded sign (BI-RADS, cardiothoracic ratio) and the reply's words disagree",
    "label-line": "the checklist's marks for the finding disagree, or its box is left empty",
    "declined": "the reply declines to decide, and its mentions of the finding would commit",
    "other-language": "the reply's clauses in another language disagree, hedge or decline",
    "self-correction": "the reply takes its verdict back without committing to another",
    "json-field": "the verdict field and the reply's own reasoning disagree",
    "mention": "the finding's mentions assert both ways, or a negation of a negation it cannot resolve",
    "leading-yes-no": "the opening yes / no and what the reply says of the finding disagree",
    "predicate": "the finding is never named, and the reply's presence words stand beside negations",
    "table-row": "the table's row for the finding gives no value (n/a, blank)",
    "modified-echo": "the reply restates the question as another one (a property, the other side) before answering it",
    "qualified-normal": "the reply denies the finding but excepts or affirms something else: it does not call the image normal",
    "conflicting-evidence": "another clause about the finding, read alone, asserts the opposite of the verdict",
    "unaccounted-negation": "the clause that decided holds a negation of the finding or its predicate that no rule accounted for",
}


def _evidence(r: Reading, text: str, terms: tuple[str, ...]) -> str:
    """The text that decided ``r`` (normalised, at most 200 characters), or why it is unclear."""
    if r.action == "unclear":
        return _UNCLEAR_WHY.get(r.rule) or markup.UNCLEAR_WHY.get(r.rule, "the reply's readings disagree")
    if r.rule in ("json-field", "json-partial", "final-tag"):
        return " ".join((text or "").split())[:200]
    sentences = [s for line in _lines(text) for s in _sentences(line)]
    if not sentences:
        return ""
    pat = _term_pattern(terms)
    finders = {
        "leading-yes-no": lambda s: True, "both": lambda s: True,
        "verdict-line": lambda s: bool(_VERDICT.search(s) or _THEREFORE.match(s)),
        "label-line": lambda s: bool(pat and _label_pattern(terms).match(s)),
        "mention": lambda s: bool(pat and pat.search(s)), "search-outcome": lambda s: bool(pat and pat.search(s)),
        "health-words": lambda s: bool(_term_pattern(NORMAL_WORDS + ABNORMAL_WORDS).search(s)),
        "undecided": lambda s: bool(_CLARIFY.search(s) or _REFER.search(s) or _WRONG_ANATOMY.search(s)),
        "predicate": lambda s: bool(_ABSENT_PREDICATE.search(s) or _PRESENT_PREDICATE.search(s)),
        "probability": lambda s: bool(_PROBABILITY_WORDS.search(s) and _NUMBER.search(s)),
        "other-entity": lambda s: bool(_ORGANS.search(s)), "none": lambda s: False,
    }
    find = finders.get(r.rule)
    if find is None:
        return sentences[-1][:200]
    hits = [s for s in sentences if find(s)] or ([] if r.rule == "none" else sentences)
    if not hits:
        return ""
    return (hits[-1] if r.rule in ("verdict-line", "label-line") else hits[0])[:200]


# adjectives that name an organ's property, not the organ ("no aortic aneurysm" is about the aorta's size)
_QUESTION_SIDE = re.compile(r"\b(right|left)(?:-sided| sided)?\b")


def _read_wrapped(text: str, question: str, finding: str, question_kind: str | None, synonyms: tuple[str, ...],
                  _corrections: bool) -> Reading:
    """:func:`_read` after :func:`markup.unwrap`, with the checks a wrapper or the question adds:
    a reasoning block that disagrees, several JSON objects, a cut-off reply, the other side, a
    denied property of the organ."""
    kind = question_kind or infer_question_kind(question)
    terms = finding_terms(finding, tuple(synonyms))
    table = structured.delimited_table(text)
    row = structured.table_row_verdict(table, terms, finding) if table else None
    if row == "verdict-column":  # "organ,visible / gallbladder,0": the row is a JSON object in another shape
        text = json.dumps(structured.typed_cells(
            next(r for r in table if structured.names_finding(next(iter(r.values())), terms, finding))))
    elif row == "absent":
        return Reading("answer", False, "table-row")
    elif row == "empty":
        return Reading("unclear", None, "table-row")
    brace = (text or "").find("{")
    if brace >= 0 and _duplicate_key_disagrees(text[brace:]):
        return Reading("unclear", None, "json-field")  # {"present": true, "present": false}: a parser keeps either
    u = markup.unwrap(text, question, lambda k: structured.key_kind(k, terms, finding) in ("presence", "general"))
    if u.unparseable:
        return Reading("unparseable", None, "none")
    if u.unclear and u.unclear != "truncated":
        return Reading("unclear", None, u.unclear, markup.UNCLEAR_WHY[u.unclear])
    if u.objects:
        reads = [_read(o, question, finding, kind, synonyms, _corrections) for o in u.objects]
        if len({(r.action, r.claim) for r in reads}) == 1:
            return reads[0]
        return Reading("unclear", None, "two-objects", markup.UNCLEAR_WHY["two-objects"])
    r = _read(u.text, question, finding, kind, synonyms, _corrections)
    if r.action != "answer":
        return r
    if u.reasoning:
        thought = _read(u.reasoning, question, finding, kind, synonyms, _corrections)
        if thought.action == "answer" and thought.claim is not r.claim:
            return Reading("unclear", None, "reasoning-disagrees", markup.UNCLEAR_WHY["reasoning-disagrees"])
    if u.unclear == "truncated" and r.rule not in ("leading-yes-no", "verdict-line", "label-line", "json-field",
                                                   "final-tag", "self-correction"):
        return Reading("unclear", None, "truncated", markup.UNCLEAR_WHY["truncated"])
    flat = normalize(u.text)
    asked = _QUESTION_SIDE.search(normalize(question))
    if asked and not any(w in _SIDES for w in normalize(finding).split()):
        other = _SIDES[asked.group(1)]
        if re.search(rf"\b{other}\b", flat) and not re.search(rf"\b{asked.group(1)}\b", flat):
            return Reading("unclear", None, "other-side", markup.UNCLEAR_WHY["other-side"])
    pat = _term_pattern(tuple(t for t in terms if t not in _ORGAN_ADJECTIVES))
    resected = _resection_pattern(finding)
    # (issue 48, set V) "Status post hysterectomy: ... there is no uterine body": the operation that removed the organ is
    # named, so the adjective's denial is the organ's, not one of its properties
    if (kind == "organ" and r.claim is False and pat is not None and not pat.search(flat)
            and not (resected is not None and resected.search(flat))):  # only the adjective names it
        names = set(normalize(finding).split())
        for m in re.finditer(r"\bno ((?:\w+ ){0,2}\w+) \w+", flat):
            if re.match(r"no (?:residual |remaining )?\w+ (?:tissue|parenchyma|lumen)\b(?! \w+ (?:is|are|seen)\b)", m.group(0)):
                # "no gastric tissue remains", "no rectal lumen" (set S, once "rectal" was in the one table): the
                # organ's own tissue or lumen, not a property of it
                continue
            if any(_ORGAN_ADJECTIVES.get(w) in names for w in m.group(1).split()):
                return Reading("unclear", None, "property-denied", markup.UNCLEAR_WHY["property-denied"])
    if kind == "organ" and r.claim is False and re.search(
            r"\b(?:no|without|absent)\s+(?:\w+\s+)?(?:%s)\s+(?:uptake|echogenicity)\b" % "|".join(_ORGAN_ADJECTIVES), flat):
        # (issue 48, set S) "no hepatic uptake" on PET shows an organ that takes up no tracer, not its absence
        return Reading("unclear", None, "property-denied", markup.UNCLEAR_WHY["property-denied"])
    return r


# Guard (a) of the round tuned on set G (issue 48): a present / claim reading that rests only on a
# bare mention ("organ: stomach", "Spleen: \U0001f534", "pankreas ... irisan ini") has no word that
# says the finding is there; where the same line also carries a negative or zero token the reader
# did not attach to the mention (a 0% bar, 0.0 cm2, NOT_VISIBLE, a strike-through, a red or cross
# mark, a word in a language the reader does not know), the line may well deny it: unclear.
_POSITIVE_PREDICATE = re.compile(
    r"\b(?:visible|visuali[sz]ed?|seen|present|presence|identified|identifiable|noted|depicted|shown|demonstrated|"
    r"included|in view|evident|appreciated|captured|detected|appears?|measur\w*|enlarged|there (?:is|are)|"
    r"yes|true|contains?|i see|can see|shows?|showing|normal|unremarkable|intact|lies|sits|located|occup\w+)\b")
_NEGATIVE_TOKEN = re.compile(
    r"(?<![\w'])(?:false|nil)(?![\w'])|"
    r"(?<![\w.])0+(?:[.,]0+)?(?:\s*%|(?![\w.,]))|(?<![\w.])0(?:[.,]0+)?\s*(?:mm|cm|ml|cc|cm2|cm\u00b2|mm\u00b2|voxels?)\b|"
    r"\bnot_\w+|~~|[\U0001f534\u274c\u2717\u2718\u26d4\U0001f6ab\u2716\u2715\u2613]")


def _bare_mention_negated(lines: list[str], terms: tuple[str, ...], finding: str, organ: bool) -> bool:
    """Whether a present / claim reading made from mentions rests on bare mentions only (no
    sentence naming the finding says it is there) while a line naming it carries a negative, zero or
    unknown-language token (guard (a) of the round tuned on set G, issue 48)."""
    pat = _term_pattern(terms)
    if pat is None:
        return False
    negative = False
    for line in lines:
        if not pat.search(line):
            continue
        for s in _sentences(line):
            if not pat.search(s):
                continue
            rest = pat.sub(" ", s)
            if _POSITIVE_PREDICATE.search(rest):
                return False
        rest = pat.sub(" ", line)
        negative = negative or bool(_NEGATIVE_TOKEN.search(rest)) or (organ and _unknown_language(rest))
    return negative


_ENGLISH_WORD = re.compile(r"\b(?:with|and|or|on|at|to|for|from|by|as|be|was|were|has|have|its|here|seen|right|left)\b")


def _unknown_language(prose: str) -> bool:
    """Whether a line beside a mention is prose in a language the reader has no lexicon for: three
    or more words, none of them an English function word, and no markup or numbers (a tag, a box,
    a measurement read as English shorthand)."""
    if re.search(r"[<\[{(|\d]", prose):
        return False
    words = re.findall(r"[^\W\d_]+", prose)
    return len(words) >= 3 and not languages._ENGLISH_TEXT.search(prose) and not _ENGLISH_WORD.search(prose)


# Guard (b) of the round tuned on set G (issue 48): a predicate read without the finding's name
# ("Not visible.", "It is present.") speaks of the finding only when its subject is a pronoun or the
# finding's own words; "Lung sliding is present", "B-lines absent" speak of another entity.
_SUBJECT_FREE = frozenset(
    "yes no not it its this that these those they them one ones there here is are was were be been being am "
    "do does did can could clearly definitely certainly probably likely possibly partially partly only barely "
    "well also still fully completely easily readily just really indeed both either i we you organ structure "
    "finding answer so and but however thus therefore then well now too again a an the".split())


def _other_subject(flat: str, m: re.Match, terms: tuple[str, ...]) -> bool:
    """Whether the clause before the predicate ``m`` names a subject other than a pronoun or the
    finding's own words (guard (b) of the round tuned on set G, issue 48)."""
    if not [t for t in terms if t.strip()]:
        return False  # no finding named to the reader (a caller without one): any subject may be it
    clause = re.split(r"[.;:,!?\u2013\u2014(]|\s-\s", flat[:m.start()])[-1]
    words = [w for w in re.findall(r"[^\W\d_]+", clause) if w not in _SUBJECT_FREE]
    if not words:
        return False
    own = {w for t in terms for w in t.split()}
    if all(w in own for w in words):
        return False
    joined = "".join(words)  # "the pan cree us is visible": the name spelt out in pieces
    return not any(_osa_distance(joined, t.replace(" ", ""), 3) <= 2 for t in terms if len(t) >= 5)


_DIFFERENTIAL_HEAD = re.compile(r"\b(?:differential|ddx|possibilities|candidates|considerations|alternatives)\b")
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*\u2022])\s+\S")


_MOST_LIKELY = re.compile(r"\b(?:most likely|most probable|favou?red|leading (?:diagnosis|candidate)|top candidate)\b")


def _differential_item(text: str, terms: tuple[str, ...]) -> bool:
    """Whether the reply is a ranked list of alternatives ("Ranked differential: 1. Skin fold
    2. Scapular border 3. Pneumothorax (unlikely)") with the finding one item of two or more: each
    item is a candidate, so its own words rank it and do not commit the reply."""
    pat = _term_pattern(terms)
    raw = [line for line in text.splitlines() if line.strip()]
    lines = [normalize(line) for line in raw]
    head = next((i for i, line in enumerate(lines) if _DIFFERENTIAL_HEAD.search(line)), None)
    if pat is None or head is None:
        return False
    items = [i for i in range(head + 1, len(lines)) if _LIST_ITEM.match(lines[i])]
    if len(items) < 2 or not any(pat.search(lines[i]) for i in items):
        return False
    # a conclusion after the list that names the finding or points at an item ("Most likely #1.")
    # commits, and the rest of the reader reads it
    # an item that names the finding and ranks it first ("1. Acute appendicitis - most likely, given
    # ...") is the reply's call, unless another item is ranked so too
    ranked = [i for i in items if _MOST_LIKELY.search(lines[i])]
    if len(ranked) == 1 and pat.search(lines[ranked[0]]) and not re.search(r"\b(?:un|less |least )likely\b", lines[ranked[0]]):
        return False
    after = " ".join(lines[items[-1] + 1:])
    pointer = re.search(r"#\s*\d|\b(?:number|option|item|choice)\s+\d", " ".join(raw[items[-1] + 1:]), re.I)
    return not (pat.search(after) or pointer)


# To "Is this X-ray normal?", a denial of the asked finding is not "normal" where the reply excepts
# something ("totally normal - if you ignore the collapsed lung") or affirms another finding after
# a contrast ("No pneumothorax, pero hay un pequeño derrame"): the image is not called normal.
# ("normal apart from degenerative changes" is still normal for the finding: a report's usual phrasing)
_QUALIFIED_NORMAL = re.compile(r"\bif (?:you|we|one) (?:ignore|overlook|discount|disregard|look past)\b")
_OTHER_ABNORMALITY = re.compile(r"(?:\b(?:but|however|although|though|pero|mais|aber|mas|por[ée]m)\b|但是?|不过)"
                                r"[^.;]*?(?:\b(?:there (?:is|are)|hay|il y a|es gibt|h[áa]|c'[èe])\b|有)(?!\s+(?:no|not|nothing|ningún|ninguna)\b)")


# The conflict guard of the round tuned on set K (issue 48): a committed verdict stands only where
# no other clause about the asked finding, read alone with its assertion status, asserts the
# opposite. Rules read a reply as a whole (the opening particle, the first mention, a verdict
# line), and ConText reads each mention within its own scope, so a predicate the mention's scope
# does not reach ("the liver lies well above the field of view and is not included"), a clause
# whose subject is a pronoun ("... not absent - it is seen posterior to the bladder") or a second
# sentence that says the opposite ("Yes, the X is visible. The X is not seen.") was outvoted by the
# louder reading. The guard never picks a side: it makes the reading unclear.
_CLAUSE_CUT = re.compile(r"[;\u2013\u2014]|\s-\s|,?\s+(?=(?:but|however|so|though|although|whereas|yet)\b)|"
                         r"\s+(?=and\s+(?:(?:it|they)\s+)?(?:is|are|was|were|lies|lie|sits|sit)\b)|"
                         # (issue 48, set Q) a reason with a subject of its own: "..., as both can be seen ..."
                         r",\s+(?=(?:as|since|because)\s+(?:it|they|both|each)\b)")
_CLAUSE_LEAD = re.compile(r"^\W*(?:(?:but|however|so|though|although|whereas|yet|and|thus|therefore|hence|as|since|because)"
                          r"\b\W*)*")
# a clause whose subject is left out or a pronoun ("both", "each" of a pair: issue 48, set Q): the nearest
# clause before it names its subject
_PRONOUN_SUBJECT = re.compile(r"^(?:(?:it|they|this organ|this structure|both|each|both of them|each of them)\s+)?"
                              r"(?=(?:is|are|was|were|lies|lie|sits|sit|can)\b)")
# "they are both clearly visible": the quantifier after the verb belongs to the subject
_FLOATING_QUANTIFIER = re.compile(r"^((?:they|both|each)\s+(?:are|were|can\s+be))\s+(?:both|all|each)\b")
_CLAUSE_SEEN = re.compile(r"^(?:is|are|was|were|can be)\s+(?:(?:clearly|well|easily|readily|definitely|certainly|"
                          r"also|still|partly|partially|fully)\s+)?(?:seen|visible|present|identified|included|depicted|"
                          r"shown|visuali[sz]ed|captured|in view)\b")
# "X, however, is not present": a discourse adverb between the subject and its predicate
_PARENTHETICAL = re.compile(r"(?<=\w),\s*(?:however|though|too|also|in turn|in contrast|by contrast|instead|of course|"
                            r"unfortunately|on the other hand)\s*,\s*(?=(?:is|are|was|were|does|do|did|can|could|lies|lie|"
                            r"sits|sit|appears?|remains?|seems?)\b)")


# what a clause must say to affirm the finding on its own: an observation of it, with no negative
# token anywhere in the clause ("Spleen in field of view: [x] No" affirms nothing)
_CLAUSE_OBSERVES = re.compile(r"\b(?:seen|visible|visuali[sz]ed|present|identified|included|depicted|shown|captured|"
                              r"in view|demonstrated|noted|appreciated|evident|there (?:is|are)|i (?:can )?see|"
                              r"we (?:can )?see|shows?|showing|measur\w*|detected)\b")
_CLAUSE_NEGATIVE = re.compile(r"(?<![\w'])(?:no|not|none|nothing|without|neg|nil|negative|absent|false|0)(?![\w'])|"
                              r"[\u2717\u2718\u274c\u2716\u2715]")
# a belief reported, a hedge or a case supposed: the clause asserts nothing about this image
_CLAUSE_UNASSERTED = re.compile(r"\b(?:initially|at first|first glance|thought|i think|i believe|looks? like|looked like|"
                                r"could|might|may|would|should|if|whether|normally|usually|typically|generally|expected|"
                                r"reader \w|sampled|vote[sd]?)\b")


def _clause_readings(sentences: list[str], terms: tuple[str, ...], finding: str, organ: bool) -> list[tuple[str, str]]:
    """Every clause about the finding with its own assertion status, read alone: ``(status, clause)``
    for the clauses that affirm or deny it (a clause naming it, or one whose subject is a pronoun or
    left out right after a clause naming it). Hedged, hypothetical and textbook clauses assert nothing."""
    pat = _term_pattern(terms)
    if pat is None:
        return []
    out = []
    for s in sentences:
        s = _PARENTHETICAL.sub(" ", s)
        previous_named = False
        for raw in _CLAUSE_CUT.split(s):
            clause = _CLAUSE_LEAD.sub("", raw).strip()
            if not clause:
                continue
            first = pat.search(clause)
            if first:
                previous_named = True
                if _CLAUSE_UNASSERTED.search(clause):
                    continue
                statuses = _mention_statuses([clause], terms, finding, organ)
                rest = pat.sub(" ", clause)
                if "negated" in statuses:
                    # only a negation attached to the finding (its predicate, or within four words
                    # before it): "lack of a vascular distribution favours neoplasm" denies no neoplasm
                    near = " ".join(clause[:first.start()].split()[-4:]) + " " + clause[first.start():]
                    if "negated" in _mention_statuses([near], terms, finding, organ):
                        out.append(("negated", clause))
                elif "affirmed" in statuses and _CLAUSE_OBSERVES.search(rest) and not _CLAUSE_NEGATIVE.search(rest):
                    out.append(("affirmed", clause))
                continue
            clause = _FLOATING_QUANTIFIER.sub(r"\1", clause)
            m = _PRONOUN_SUBJECT.match(clause)
            if previous_named and m is not None and not _CLAUSE_UNASSERTED.search(clause):
                predicate = clause[m.end():]
                name = next(t for t in terms if t.strip())
                st = _mention_statuses([f"the {name} {predicate}"], terms, finding, organ)
                if "negated" in st:
                    out.append(("negated", clause))
                elif st == ["affirmed"] and _CLAUSE_SEEN.match(predicate):
                    out.append(("affirmed", clause))
                continue
            previous_named = False
    return out


def _conflicting_evidence(lines: list[str], terms: tuple[str, ...], finding: str, organ: bool, claim: bool) -> str | None:
    """The clause that asserts the opposite of ``claim`` about the finding, or None (see :data:`_CLAUSE_CUT`)."""
    opposite = "negated" if claim else "affirmed"
    sentences = [x for line in lines for x in _sentences(line)]
    return next((c for st, c in _clause_readings(sentences, terms, finding, organ) if st == opposite), None)


# The unaccounted-negation guard of the round tuned on sets M and N (issue 48): a verdict stands only
# where its deciding clause holds no negation the reader did not account for. A clause about the
# finding that ConText reads as affirmed, while a negation cue covers the finding (within a few words
# before it) or its predicate ("The femoral heads are not part of this image"), was decided by a rule
# that did not see that negation: the reading is unclear, never present / claim. Its mirror: a
# clause read as denying that holds a second negation chained to the first ("not unremarkable",
# "never absent") is unclear unless a rule resolved it. Negations that rules do account for are
# taken out first: hedges ("cannot be excluded", "no doubt", "not only"), a denied property of the
# organ ("not enlarged"), and cues that scope another entity ("with no effusion").
_SCOPED_CUE = re.compile(r"(?<![\w'])(?:no|not|never|without|neither|nor|none|nothing|absent|free of|lacks?|lacking)(?![\w'])")
_ACCOUNTED_NEGATION = re.compile(
    r"\b(?:can|could|may|might|should|must|will|would)\s+not\s+be\s+(?:\w+\s+)?(?:excluded|ruled out|discounted|"
    r"dismissed)\b|\b(?:can|could)\s+not\s+(?:\w+\s+)?(?:exclude|rule out|discount)\b|"
    r"\b(?:has|have|is|are)\s+not\s+been\s+(?:excluded|ruled out)\b|"
    r"\b(?:no|without)\s+(?:a\s+)?(?:doubt|question)\b|\bnot\s+(?:only|just|merely|least|uncommon|unusual|infrequently)\b|"
    r"\bnone\s+other\s+than\b|\b(?:not|never)\s+(?:\w+\s+)?(?:absent|missing|lacking)\b|"
    r"\bnot\s+(?:\w+\s+)?(?:enlarged|dilated|distended|thickened|calcified|displaced|compressed|obstructed|inflamed|"
    r"atrophic|small|large|enhancing|opacified|normal|abnormal|unremarkable|remarkable|markedly|significantly|"
    r"particularly|well\s+(?:defined|circumscribed|distended|opacified|aerated)|in\s+(?:its|their)\s+(?:usual|normal))\b|"
    r"\b(?:no|without)\s+(?:\w+\s+){0,2}?(?:lesions?|mass(?:es)?|abnormalit(?:y|ies)|dilat(?:ation|ion)|enlargement|"
    r"thickening|stones?|calcul(?:us|i)|fluid|collections?|nodules?|cysts?|(?:focal|acute)\s+\w+|change|"
    r"evidence of (?:(?:a|an|any)\s+)?(?:complication|rupture|perforation|mass effect|shift))\b")
_SCOPE_BREAK = re.compile(r"\b(?:with|and|but|while|whereas|although|though|which|that|who|apart from|except)\b|[,;:()]")
_PREDICATE_LEAD = re.compile(
    r"^(?:s|es)?\s*,?\s*(?:(?:is|are|was|were|has|have|had|does|do|did|can|could|will|would|should|may|might|must|"
    # (issue 48, set R) not across "with": "is visible with absent lung markings" negates the markings, not the predicate
    r"appears?|seems?|remains?|lies|lie|sits?|gets?)\s+)(?:(?!with\b)[\w-]+\s+){0,2}?$")
_CHAINED_NEGATION = re.compile(
    r"(?<![\w'])(?:not|never|no|hardly|scarcely)\s+(?:(?:\w+ly|be|been|entirely|at all)\s+)?(?:absent|missing|lacking|without|excluded|"
    r"none|no|not|un(?!der|til|less|ion|it|iform|ited)[a-z]+(?:ed|able|ible|ent|ant|ous|ive|ful))(?![\w'])")


def _negation_covers(clause: str, m: re.Match) -> str | None:
    """The negation cue in ``clause`` whose scope covers the mention ``m`` or its predicate, once the
    negations rules account for are taken out; None if there is none."""
    text = _ACCOUNTED_NEGATION.sub(lambda x: "_" * len(x.group()), clause)
    # two negations or a denied statement ("it would be wrong to say there is no X", "not without X",
    # "isn't no X"): the rule for denied denials resolved them
    if len(_SCOPED_CUE.findall(text)) >= 2 or _STATEMENT_DENIAL.search(text) or re.search(r"\b(?:i|we)\s+do\s+not\s+(?:think|believe|feel)\b", text):
        return None
    before = text[:m.start()]
    if _PROPERTY_AFTER.match(text[m.end():]) and not _ORGAN_ITSELF.match(text[m.end():]):
        before = ""  # "no bladder wall thickening": the organ names where, the property is denied
    for cue in _SCOPED_CUE.finditer(before):
        between = before[cue.end():]
        if len(between.split()) <= 3 and not _SCOPE_BREAK.search(between):
            return cue.group()
    after = text[m.end():]
    for cue in _SCOPED_CUE.finditer(after):
        if _PREDICATE_LEAD.match(after[:cue.start()]):
            return cue.group()
        break  # only the predicate's first negation: later ones scope its object
    return None


def _unaccounted_negation(lines: list[str], terms: tuple[str, ...], finding: str, organ: bool, claim: bool) -> str | None:
    """The deciding clause that holds a negation no rule accounted for (see :data:`_SCOPED_CUE`), or None."""
    pat = _term_pattern(terms)
    if pat is None:
        return None
    for s in (x for line in lines for x in _sentences(line)):
        for raw in _CLAUSE_CUT.split(_PARENTHETICAL.sub(" ", s)):
            clause = _CLAUSE_LEAD.sub("", raw).strip()
            hits = [m for m in pat.finditer(clause) if not _other_qualified_head(clause, m, finding)]
            if not hits:
                continue
            statuses = _mention_statuses([clause], terms, finding, organ)
            if claim and "affirmed" in statuses and "negated" not in statuses:
                for m in hits:
                    cue = _negation_covers(clause, m)
                    if cue is not None:
                        return f"'{cue}' in: {clause}"
            if not claim and "negated" in statuses and "affirmed" not in statuses:
                chained = _CHAINED_NEGATION.search(_ACCOUNTED_NEGATION.sub(lambda x: "_" * len(x.group()), clause))
                if chained is not None:
                    return f"'{chained.group()}' in: {clause}"
    return None


# A hedged mention beside a request for more imaging or another reader ("A small effusion cannot be
# excluded ... a decubitus view would help clarify", "repeat films in 10-14 days are advised") defers
# the call: the reply refers, it does not claim.
_FURTHER_WORKUP = re.compile(
    # (issue 48, set O) a reader named to look again: "I'd recommend a radiologist review the adjacent slices"
    r"\b(?:recommend|suggest|advise)\s+(?:that\s+)?(?:a|an|the|your)\s+(?:[\w-]+\s+)?(?:radiologists?|\w+ologists?|"
    r"specialists?|clinicians?|doctors?|physicians?)\s+(?:review|reviews|look at|looks at|assess|assesses|check|checks)\b|"
    r"\b(?:would|could|will|may|might)\s+help\s+(?:to\s+)?(?:clarify|confirm|exclude|settle|decide|resolve)\b|"
    r"\b(?:repeat|further|additional|follow-up|dedicated|cross-sectional)\s+(?:\w+\s+){0,2}?(?:films?|imaging|views?|"
    r"radiographs?|x-rays?|ct|mri|ultrasound|sequences?|scans?)\b[^.]*\b(?:advised|recommended|suggested|needed|"
    r"required|warranted)\b|"
    r"\b(?:review|assessment|opinion|correlation)\b[^.]{0,60}\b(?:is|are|would be)\s+(?:needed|required|advised|"
    r"recommended|warranted)\b|"
    # (issue 48, sets M and N) "Consider an expiratory film or CT", "must be reviewed urgently by a
    # radiologist", "correlate clinically"
    r"\bconsider\s+(?:an?\s+)?(?:[\w-]+\s+){0,2}?(?:films?|views?|radiographs?|x-rays?|ct|mri|ultrasound|imaging|scans?)\b|"
    r"\b(?:must|should|needs? to)\s+be\s+(?:\w+\s+)?(?:reviewed|reported|assessed|read)\s+(?:\w+\s+)?by\b|"
    # "correlate clinically" after an exclusion hedge only: "suggests X; recommend clinical correlation" still claims
    r"\b(?:can|could)\s+not\s+be\s+(?:\w+\s+)?(?:excluded|ruled out)\b[^.]{0,30}?\bcorrelate\s+clinically\b")


# ... or beside a limitation of the technique that the reply gives as its reason ("cannot be excluded on
# this AP film, as the AP projection magnifies the heart"; issue 48, set L): it refers too
_TECHNIQUE_LIMIT = re.compile(
    r"\b(?:ap|portable|supine|rotated|oblique|under-?penetrated|lordotic|expiratory)\s+(?:\w+\s+)?(?:films?|projections?|"
    r"views?|radiographs?|technique|positioning|study|image)\b[^.]*\b(?:magnif\w*|exaggerat\w*|overestimat\w*|limits?|"
    r"limited|limiting|can not be (?:reliably )?(?:assessed|judged|evaluated))\b|"
    r"\blimited by (?:the\s+)?(?:ap|portable|supine|rotation|projection|technique|positioning|motion|artefact|artifact)\b")


# A last sentence that offers another answer to the one just given ("Or it might be both.", "Or
# maybe not.") takes the verdict back without a replacement.
_REOPENED = re.compile(r"^\W*or\s+(?:(?:(?:it|that|this|they|there)\s+)?(?:might|may|could)\b|maybe\b|perhaps\b|"
                       r"(?:both|neither|not)\s*[.!?]*$)")


# A finding that is a property of a named part, said of the part (issue 48, set M): "Renal pelves and
# calyces are not dilated" denies hydronephrosis, as "no hydronephrosis" does; "the left collecting
# system is mildly dilated" claims it. Only this one property of these parts is read so.
_DILATED_SYSTEM = re.compile(
    r"\b(?:the\s+)?(?:(?:left|right|bilateral)\s+)?(?:renal\s+)?(?:pelv(?:is|es)|pelvicalyceal\s+systems?|pelvicaliceal\s+systems?|"
    r"collecting\s+systems?|calyces|calices)(?:\s+and\s+(?:the\s+)?(?:calyces|calices|collecting\s+systems?))?\s+(?:is|are)\s+"
    r"(?P<neg>not\s+)?(?:(?:mildly|moderately|severely|markedly|slightly|minimally)\s+)?dilated\b")


# The body region or bony housing that holds an organ (issue 48, set O): a reply that says the region is
# out of the image ("The posterior fossa is not included", "the sella turcica is not in the field of
# view", "the pelvis lies well below the field of view") says the organ inside it is out too. Only
# regions that wholly contain the organ, and only where the organ itself is not named.
_CONTAINING_REGION = {
    "cerebellum": ("posterior fossa", "posterior cranial fossa"), "brainstem": ("posterior fossa", "posterior cranial fossa"),
    "pons": ("posterior fossa",), "medulla": ("posterior fossa",), "fourth ventricle": ("posterior fossa",),
    "pituitary": ("sella turcica", "sella", "pituitary fossa", "hypophyseal fossa"),
    "bladder": ("pelvis", "true pelvis", "lesser pelvis"), "prostate": ("pelvis", "true pelvis", "lesser pelvis"),
    "uterus": ("pelvis", "true pelvis", "lesser pelvis"), "ovary": ("pelvis", "true pelvis"), "ovaries": ("pelvis", "true pelvis"),
    "rectum": ("pelvis", "true pelvis"), "seminal vesicles": ("pelvis",),
    "heart": ("chest", "thorax", "mediastinum"), "lungs": ("chest", "thorax"), "lung": ("chest", "thorax"),
    "globe": ("orbits", "orbit"), "globes": ("orbits", "orbit"), "eye": ("orbits", "orbit"), "eyes": ("orbits", "orbit"),
    "lens": ("orbits", "orbit"), "optic nerve": ("orbits", "orbit"),
}
_REGION_OUT = re.compile(
    r"^\s+(?:(?:is|are|was|were)\s+(?:(?:therefore|thus|also|clearly|entirely|completely)\s+)?not\s+(?:included|imaged|covered|"
    r"captured|visible|seen|shown|depicted|(?:in|within)\s+(?:the\s+|this\s+)?(?:field\s+of\s+view|fov|view|image|slice|section|"
    r"scan))|(?:lies?|sits?|is|are)\s+(?:well\s+|far\s+|entirely\s+|completely\s+)?(?:below|above|outside|beyond)\s+"
    r"(?:the\s+|this\s+)?(?:field\s+of\s+view|fov|slice|image|section|scan|imaged\s+(?:volume|range)))\b")


def _region_excluded(flat: str, finding: str, terms: tuple[str, ...]) -> bool:
    """Whether the reply puts the region that holds ``finding`` out of the image (:data:`_CONTAINING_REGION`)
    and says nothing else of that region; the organ itself must not be named (its own mentions decide)."""
    name = normalize(finding)
    regions = _CONTAINING_REGION.get(name) or next(
        (v for k, v in _CONTAINING_REGION.items() if re.search(rf"\b{re.escape(k)}\b", name)), None)
    if not regions:
        return False
    pat = _term_pattern(terms)
    if pat is not None and pat.search(flat):
        return False
    hits = list(re.finditer(r"\b(?<!renal )(?<!kidney )(?:the\s+)?(?:" + "|".join(re.escape(r) for r in sorted(regions, key=len, reverse=True))
                            + r")\b", flat))  # "the renal pelvis" is the kidney's, not the body's
    # every mention of the region puts it out, none hedged ("may not be included") or partial ("only partly included")
    return bool(hits) and all(_REGION_OUT.match(flat[h.end():]) for h in hits) and not re.search(
        r"\b(?:partly|partially|part of|may|might|could|possibly|probably)\b", flat)


# "The appendix is not visualised. There are no secondary signs such as fat stranding or free fluid"
# (issue 48, set O): where the finding is not named, a reply that denies its secondary (indirect,
# ancillary) signs and says nothing positive denies it, as a reader who cannot see the organ does.
_SECONDARY_SIGNS = re.compile(r"\b(?:no|without|absence of|nor)\s+(?:(?:other|secondary|indirect|ancillary|associated)\s+)"
                              r"(?:signs?|features?|findings?)\b")
_HEDGE_WORD = re.compile(r"\b(?:may|might|could|possibl[ey]|probabl[ey]|perhaps|cannot|can not|uncertain|unclear|equivocal|"
                         r"suspicious|suggest\w*|likely)\b")


def _no_secondary_signs(sentences: list[str]) -> bool:
    """Whether the reply denies the finding's secondary signs and every sentence of it is a negation."""
    return (any(_SECONDARY_SIGNS.search(x) for x in sentences)
            and all(_NEGATION_CUE.search(x) for x in sentences if re.search(r"\w", x))
            and not any(_HEDGE_WORD.search(x) for x in sentences))


# A property of the organ named by the organ's adjective ("No focal hepatic lesion is identified", "a
# simple renal cyst"): the organ is where the property is looked for, so it is in view, as "no focal
# lesion in the liver" already reads (issue 48, set Q). Only properties that lie in the organ; a vessel
# named by the adjective ("the hepatic veins", "the splenic vein") may run where the organ is not.
_ORGAN_PROPERTY = (r"(?:lesions?|mass(?:es)?|stones?|calcul(?:us|i)|thickening|dilat(?:ation|ion)|enlargement|"
                   r"injur(?:y|ies)|lacerations?|abnormalit(?:y|ies)|pathology|calcifications?|cysts?|nodules?|"
                   r"hypodensit(?:y|ies)|hyperdensit(?:y|ies)|collections?|tumou?rs?|metastas[ie]s)")


def _property_by_adjective(lines: list[str], finding: str, terms: tuple[str, ...]) -> list[str]:
    """The lines with the organ's adjective before a property of the organ read as the organ's name
    ("no focal hepatic lesion" -> "no focal liver lesion"), where the reply never names the organ
    and the organ has no side (a "renal cyst" does not say which kidney)."""
    organ = normalize(finding)
    adjectives = _ADJECTIVES_OF_ORGAN.get(_singular(organ), ())
    pat = _term_pattern(terms)
    if not adjectives or any(w in _SIDES for w in organ.split()) or (pat is not None and any(pat.search(x) for x in lines)):
        return lines
    before_property = re.compile(r"\b(?:" + "|".join(adjectives) + r")(?=\s+" + _ORGAN_PROPERTY + r"\b)")
    return [before_property.sub(_singular(organ), line) for line in lines]


# faults of the image that keep the finding from being read (issue 48, set T)
_POOR_IMAGE = re.compile(r"\b(?:obscured|hidden|overexposed|underexposed|over-exposed|under-exposed|blurr(?:ed|y)|out of focus|"
                         r"too (?:dark|bright|blurry|small|noisy)|poor(?:ly)? (?:quality|exposed|lit)|low resolution|pixelated|"
                         r"motion artefact|motion artifact)\b")


def _clauses(sentences: list[str]) -> list[str]:
    return [c for x in sentences for c in re.split(r";|,?\s+and\s+(?=the\b|this\b|it\b)", x) if re.search(r"\w", c)]


def _read(text: str, question: str, finding: str, question_kind: str | None, synonyms: tuple[str, ...],
          _corrections: bool) -> Reading:
    """:func:`read_decision` without the evidence."""
    kind = question_kind or infer_question_kind(question)
    got = _structured(text, question, finding, kind, synonyms)
    if isinstance(got, Reading):
        return got
    if isinstance(got, str):
        text = got
    terms = finding_terms(finding, tuple(synonyms))
    # a line that names the finding in another language is not mended as an English typo ("bloeding" is Dutch)
    mended = [line if languages.names_in_other_language(line, terms) else _mend_typos(line, terms) for line in _lines(text)]
    if _modified_echo(mended, terms, question):
        return Reading("unclear", None, "modified-echo")
    lines = [_P_NOTATION.sub(r"\1 probability", line) for line in _drop_echo(mended, terms, question)]
    if kind == "organ":
        lines = _property_by_adjective(lines, finding, terms)
    if "hydronephrosis" in terms:
        lines = [_DILATED_SYSTEM.sub(lambda m: "no hydronephrosis" if m.group("neg") else "hydronephrosis", line) for line in lines]
    if not lines:
        return Reading("unparseable", None, "none")
    retracted = False
    if _corrections:
        tail = revisions.correction_tail("\n".join(lines))
        r = read_decision(tail, question, finding, kind, synonyms, _corrections=False) if tail else None
        if r is not None and r.action == "answer":  # read by what follows its last correction
            last = [x for line in _lines(tail) for x in _sentences(line)][-1:]
            if last and _REOPENED.match(last[0]):
                return Reading("unclear", None, "self-correction")  # the correction itself taken back
            return Reading(r.action, r.claim, "self-correction")
        retracted = r is not None and r.action in ("refer", "clarify", "unclear")
    terms = finding_terms(finding, tuple(synonyms))
    flat = " ".join(lines)
    if _differential_item(text, terms):
        return Reading("refer", None, "differential")  # the finding is one ranked alternative, not a verdict
    got = _decide(lines, terms, finding, kind)
    sentences = [s for line in lines for s in _sentences(line)]
    scaled = [(x, _scale_rating(x)) for x in sentences]
    scaled = [(x, r) for x, r in scaled if r is not None]
    if scaled:
        # the rest of the reply, read without the rating's sentences, must not say otherwise
        rest = [line for line in lines if not any(x in line for x, _ in scaled)]
        other = _decide(rest, terms, finding, kind) if rest else None
        verdicts = {r for _, r in scaled} | ({other[:2]} if other is not None and other[0] == "answer" else set())
        if len(verdicts) > 1 or ("unclear", None) in verdicts:
            return Reading("unclear", None, "rating")
        return Reading(*verdicts.pop(), "rating")
    stated = _probability(sentences)
    if stated is not None and stated[0] != "keep":
        # "Pneumothorax probability: 0.1": the mention is the probability's subject, so the reply is
        # read again without it; what the rest says must agree with the probability
        bare = [_without_probability(line, terms) for line in lines]
        bare = [line for line in bare if re.search(r"\w", line)]
        other = _decide(bare, terms, finding, kind) if bare else None
        if stated[0] == "unclear" or (other is not None and other[0] == "unclear") or (
                other is not None and other[0] == "answer" and other[1] is not stated[1]):
            return Reading("unclear", None, "probability")
        return Reading("answer", stated[1], "probability")
    sign = _graded_sign(flat, finding)
    if sign is not None:
        if got is not None and got[0] == "answer" and (sign[0] != "answer" or got[1] is not sign[1]):
            return Reading("unclear", None, "graded-sign")  # "BI-RADS 1 ... a suspicious mass": two verdicts
        if got is None or got[0] != "answer":
            return Reading(sign[0], sign[1], "graded-sign")
    rated = [x for x in sentences if _RATING.search(x)]
    if rated and (got is None or got[0] != "answer" or any(_PROBABILITY_WORDS.search(x) for x in rated)):
        return Reading("unclear", None, "rating")  # "likelihood 2/5": which end of the scale is "present"?
    if got is not None and got[0] == "answer" and retracted:
        return Reading("unclear", None, "self-correction")  # "Yes. Actually, on review, I can't tell."
    if got is not None and got[0] == "answer" and sentences and _REOPENED.match(sentences[-1]):
        return Reading("unclear", None, "self-correction")  # "... isn't in this slice. Or it might be both."
    if (got is not None and got[0] == "answer" and got[2] in ("mention", "health-words") and _CANNOT_IDENTIFY.search(flat)
            and _TO_A_PERSON.search(flat)):
        return Reading("refer", None, "declined")  # the reader's limit, sent on to a radiologist (issue 48, set U)
    if got is not None and got[0] == "answer" and got[2] == "health-words" and _NORMAL_OR_DISEASE.search(flat):
        return Reading("refer", None, "undecided")  # "could be a normal variant, could be early disease" (issue 48, set U)
    if got is not None and got[0] == "answer" and got[2] in ("mention", "health-words") and _DECLINE.search(flat):
        return Reading("unclear", None, "declined")  # "Can't tell. The loops could be sigmoid."
    if (got is not None and got[0] == "answer" and got[2] in ("mention", "open") and _ASKS_FOR_IMAGE.search(flat)
            and all(_POOR_IMAGE.search(x) or _ASKS_FOR_IMAGE.search(x) for x in _clauses(sentences))
            # a fault of the image named: "that is a mucosal fold, not a polyp" also matches a wrong-image
            # pattern ("That's a knee, not a chest") and is a denial, not a request for a better image
            and any(_POOR_IMAGE.search(x) for x in _clauses(sentences))):
        # "The lesion is obscured by hair and the photo is overexposed; could you provide a clearer image?": the
        # image's faults and a request for a better one, nothing said of the finding (issue 48, set T)
        return Reading("clarify", None, "undecided")
    if (got is not None and got[:3] == ("answer", True, "mention") and languages.is_foreign(flat) and languages.declines(flat)
            and (languages.foreign_reading(flat, terms, None) or ("",))[0] != "answer"):
        # "trop sombre pour évaluer s'il y a un pneumothorax": the English name inside a decline in another language
        # (issue 48, set T)
        return Reading("clarify" if languages.complains_of_image(flat) else "refer", None, "other-language")
    if (kind == "health" and got is not None and got[:2] == ("answer", False) and got[2] in ("mention", "health-words")
            and (_QUALIFIED_NORMAL.search(flat) or _OTHER_ABNORMALITY.search(flat))):
        return Reading("unclear", None, "qualified-normal")
    side = next((w for w in normalize(finding).split() if w in _SIDES), None)
    switched = languages.code_switched_reading(flat, terms, side)
    if switched is not None and got is not None and got[0] == "answer" and (switched[0] != "answer"
                                                                            or switched[1] is not got[1]):
        return Reading("unclear", None, "other-language")  # "Yes, ... 不过，右肾在这个层面看不到。"
    if got is not None and got[:1] + got[2:] == ("answer", "leading-yes-no") and languages.is_foreign(flat):
        # "Sí, no se observa consolidación": the particle read as English must not say the opposite of what the
        # reply's own language says of the finding (issue 48, set Q)
        if languages.foreign_reading(flat, terms, side) == ("answer", not got[1]):
            return Reading("unclear", None, "other-language")
        if languages.names_finding_bare(flat, terms, side):
            # (issue 48, set R) the finding named and nothing more said of it states it, as in English: to "Is this
            # normal?" it is the abnormality, whatever the particle ("Sí. Consolidación en el lóbulo inferior
            # derecho", as "Yes. Consolidation in the right lower lobe." reads); beside a "no" to a presence
            # question the no and the named finding disagree ("No, emorragia intraparenchimale ...")
            if kind == "health":
                return Reading("answer", True, "other-language")
            if got[1] is False and kind in ("presence", "organ") and not _REVERSED_QUESTION.get():
                return Reading("unclear", None, "other-language")
    if switched is not None and switched[0] == "answer" and (got is None or got[0] not in ("answer", "unclear")):
        return Reading(*switched, "other-language")  # "The liver is visible, pero el bazo no aparece"
    if got is not None and got[:3] == ("answer", True, "mention") and _bare_mention_negated(lines, terms, finding, kind == "organ"):
        if languages.foreign_reading(flat, terms, side) == ("answer", True):
            return Reading("answer", True, "other-language")  # "la prostata è visibile": its own language says so
        return Reading("unclear", None, "bare-mention", _UNCLEAR_WHY["bare-mention"])
    if (got is not None and got[:3] == ("answer", True, "mention") and (_FURTHER_WORKUP.search(flat) or _TECHNIQUE_LIMIT.search(flat))
            and "affirmed" not in _mention_statuses(sentences, terms, finding, kind == "organ")):
        return Reading("refer", None, "hedged-workup")  # "X cannot be excluded ... a decubitus view would help"
    if got is not None and got[0] == "answer" and got[2] not in ("self-correction", "one-side-seen"):
        against = _conflicting_evidence(lines, terms, finding, kind == "organ", got[1])
        if against is not None:
            return Reading("unclear", None, "conflicting-evidence", f"{_UNCLEAR_WHY['conflicting-evidence']}: {against[:150]}")
        unaccounted = _unaccounted_negation(lines, terms, finding, kind == "organ", got[1])
        if unaccounted is not None:
            return Reading("unclear", None, "unaccounted-negation", f"{_UNCLEAR_WHY['unaccounted-negation']}: {unaccounted[:150]}")
    if got is not None:
        return Reading(*got)
    foreign = languages.foreign_reading(flat, terms, side, answers_presence=kind in ("presence", "organ")
                                        and not _REVERSED_QUESTION.get())
    if foreign is None and languages.declines(flat):
        # a decline in another language that names no finding ("bu haliyle değerlendirme yapılamıyor"; issue 48, set R)
        return Reading("clarify" if languages.complains_of_image(flat) else "refer", None, "other-language")
    if foreign is None and kind in ("presence", "health") and not _REVERSED_QUESTION.get() and languages.names_finding_bare(flat, terms, side):
        # "Derrame pleural derecho.": the finding named alone states it, as "Right pleural effusion." does (issue 48, set R)
        return Reading("answer", True, "other-language")
    if foreign is not None and foreign[0] == "refer":
        # a decline in another language: a request for a better image still asks for it (clarify)
        return Reading(_undecided(flat) or ("clarify" if languages.complains_of_image(flat) else "refer"), None, "other-language")
    if foreign is not None:  # full sentences in another language: its own verdict lexicon
        return Reading(foreign[0], foreign[1], "other-language")
    if kind == "organ" and _empty_bed(flat, finding):
        return Reading("answer", False, "region-excluded")  # "The left renal fossa is empty" (issue 48, set S)
    if kind == "organ" and _region_excluded(flat, finding, terms):
        return Reading("answer", False, "region-excluded")  # "The posterior fossa is not included" (the cerebellum)
    undecided = _undecided(flat)
    if undecided == "refer" and kind != "organ" and _REGION_NOT_IMAGED.search(flat):
        # "the scan only covers the pelvis; the liver is not included, so liver lesions cannot be assessed": the image
        # does not hold the anatomy asked about, the wrong image for the question (issue 48, set V)
        return Reading("clarify", None, "undecided")
    if undecided:
        return Reading(undecided, None, "undecided")
    if kind in ("presence", "health") and not _REVERSED_QUESTION.get() and _normal_sign(flat, finding):
        return Reading("answer", False, "normal-sign")  # "Both costophrenic angles are sharp." (an effusion; issue 48, set S)
    if kind == "organ" and terms and _other_anatomy(flat, terms, finding):
        return Reading("refer", None, "other-entity")  # it speaks of other organs, not the asked one
    pat = _term_pattern(terms)
    if kind != "organ" and (pat is None or not pat.search(flat)) and _no_secondary_signs(sentences):
        return Reading("answer", False, "no-secondary-signs")  # "... not visualised. No secondary signs such as ..."
    if pat is None or not pat.search(flat):
        absent, present = _ABSENT_PREDICATE.search(flat), _PRESENT_PREDICATE.search(flat)
        if (absent or present) and _other_subject(flat, absent or present, terms):
            return Reading("unclear", None, "other-subject", _UNCLEAR_WHY["other-subject"])
        if absent:
            return Reading("answer", False, "predicate")
        if present and kind != "open":
            if _NEGATION_CUE.search(flat):  # "no evidence that the cortex is not intact ... visualized": no verdict
                return Reading("unclear", None, "predicate")
            return Reading("answer", True, "predicate")
    if kind == "open" and all(_ACQUISITION.search(x) for x in sentences) and not _POSITIVE_PREDICATE.search(flat) and not (
            _term_pattern(ABNORMAL_WORDS).search(flat) or _term_pattern(NORMAL_WORDS).search(flat)):
        # "This image was acquired on a 1.5 T scanner using a T2-weighted sequence": how the image was made, no
        # finding (issue 48, set R)
        return Reading("unparseable", None, "none", "the reply speaks only of how the image was acquired")
    if kind == "open" and sentences and all(_SMALL_TALK.match(x) for x in sentences):
        return Reading("unparseable", None, "none", "small talk: pleasantries or remarks about the field, no finding")
    if kind == "open" and re.search(r"\w", flat):
        return Reading("answer", True, "open")
    return Reading("unparseable", None, "none")


def claims_finding(answer: str, question: str, finding: str, question_kind: str | None = None,
                   synonyms: tuple[str, ...] | list[str] = ()) -> bool | None:
    """Whether ``answer`` claims ``finding`` is present: True, False, or None (undecided).

    Parameters
    ----------
    answer : str
        The reply or answer text.
    question : str
        The question the model was asked; its wording sets the question kind when ``question_kind`` is None.
    finding : str
        The asked finding (e.g. ``"pneumothorax"``, ``"left kidney"``).
    question_kind : {"presence", "health", "open"} or None, optional
        The question's kind; None to infer it with :func:`infer_question_kind`.
    synonyms : sequence of str, optional
        Extra words naming the finding (the view's own list), added to :func:`finding_terms`.

    Returns
    -------
    bool or None
        The claim when the reply is read as an answer; None when it is refer, clarify or unparseable.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10.
    """
    r = read_decision(answer, question, finding, question_kind, synonyms)
    return r.claim if r.action == "answer" else None


def read_free_text(text: str, question: str, finding: str, question_kind: str | None = None,
                   synonyms: tuple[str, ...] | list[str] = ()) -> tuple[str, bool | None]:
    """Read a reply that has no action tag: ``(action, claims_finding)``, the same for every
    model: ``answer`` with its claim, ``clarify``, ``refer`` or ``unparseable``.

    Parameters
    ----------
    text : str
        The reply.
    question : str
        The question the model was asked; its wording sets the question kind when ``question_kind`` is None.
    finding : str
        The asked finding (e.g. ``"pneumothorax"``, ``"left kidney"``).
    question_kind : {"presence", "health", "open"} or None, optional
        The question's kind; None to infer it with :func:`infer_question_kind`.
    synonyms : sequence of str, optional
        Extra words naming the finding (the view's own list), added to :func:`finding_terms`.

    Returns
    -------
    action : str
        ``"answer"``, ``"refer"``, ``"clarify"`` or ``"unparseable"``.
    claim : bool or None
        For an answer, whether it claims the finding; else None.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10.
    """
    r = read_decision(text, question, finding, question_kind, synonyms)
    return r.action, r.claim
