"""Answer matching: does a reply claim the asked finding? (seed 000 §3.1, §3.10)

:func:`claims_finding` reads, in this order:

1. **the asked finding** (or a synonym, plural, head noun): its first mention, with negation
   read inside its clause — before it ("no", "without", "no evidence of", "negative for",
   "free of", "rules out"; a preceding "cannot"/"not" flips them: "cannot rule out X" claims X)
   and after it ("X is absent", "X not seen"). "pneumothorax without mediastinal shift" claims
   pneumothorax; "no pneumothorax" does not;
2. **a leading yes/no**, with the question's polarity: to a health question ("Is … healthy /
   normal?") "Yes" means absent and "No" present;
3. **health words** ("normal", "unremarkable", "healthy", "no abnormality"; "abnormal") and
   **generic abnormality words** ("lesion", "mass", "abnormality"), again with negation;
4. for an **open** question, any other substantive answer names an abnormality (claims).

Hedges that commit to nothing ("cannot determine", "unclear") give None, as does an empty
reply. :func:`read_free_text` reads a reply with no action tag into an action the same way for
every model (clarify and refer phrases first, then the matcher).
"""

from __future__ import annotations

import re

# Synonyms of common findings; the finding's own words, plurals and head noun are always tried.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "tumor": ("tumour", "neoplasm", "mass", "glioma", "malignancy", "cancer", "carcinoma"),
    "tumour": ("tumor", "neoplasm", "mass", "glioma", "malignancy", "cancer", "carcinoma"),
    "mass": ("tumor", "tumour", "neoplasm", "lump"),
    "nodule": ("nodular opacity", "lump"),
    "polyp": ("polypoid lesion", "adenoma"),
    "pneumothorax": ("collapsed lung", "ptx"),
    "effusion": ("fluid collection",),
    "lesion": ("abnormality", "mass", "tumor", "tumour"),
    "opacity": ("opacification", "consolidation", "infiltrate"),
    "consolidation": ("opacity", "infiltrate", "airspace disease"),
    "fracture": ("break",),
    "cardiomegaly": ("enlarged heart", "cardiac enlargement"),
    "hemorrhage": ("haemorrhage", "bleed", "bleeding", "hematoma"),
    "calcification": ("calcified",),
}
GENERIC_ABNORMAL = ("abnormality", "abnormalities", "lesion", "lesions", "mass", "masses", "finding",
                    "findings", "pathology", "tumor", "tumour", "anomaly")
NEGATION_BEFORE = (
    "no evidence of", "no sign of", "no signs of", "no definite", "no obvious", "no visible",
    "no apparent", "no", "not", "without", "absence of", "absent", "negative for", "free of",
    "rules out", "ruled out", "rule out", "excludes", "exclude", "excluded", "nor", "neither",
    "lack of", "lacks", "none", "never", "don't see", "do not see", "cannot see", "can't see",
    "cannot identify", "unable to see", "isn't", "is not", "aren't", "are not", "there is no",
)
NEGATION_AFTER = (
    "is absent", "are absent", "absent", "not seen", "not visible", "not present", "not identified",
    "not detected", "not evident", "not demonstrated", "not appreciated", "ruled out", "excluded", "not noted", "none", "cannot be seen",
    "can't be seen", "is not seen", "no longer",
)
FLIPPERS = ("cannot", "can't", "can not", "could not", "couldn't", "unable to", "not")
HEALTHY_WORDS = ("normal", "healthy", "unremarkable", "within normal limits", "no abnormality",
                 "no abnormalities", "no abnormal", "no acute", "no pathology", "no lesion",
                 "no lesions", "no findings", "no finding", "nothing abnormal", "clear", "clean")
ABNORMAL_WORDS = ("abnormal", "unhealthy", "pathological", "diseased", "not normal", "not healthy")
YES = ("yes", "yeah", "yep", "correct", "affirmative", "true", "positive", "present", "there is",
       "there are", "visible", "seen")
NO = ("no", "nope", "negative", "false", "absent", "none", "not present", "not visible",
      "there is no", "there are no", "not seen", "nothing")
HEDGES = ("cannot determine", "can't determine", "cannot be determined", "unable to determine",
          "cannot tell", "can't tell", "unclear", "uncertain", "not sure", "indeterminate",
          "i don't know", "i do not know", "unknown", "cannot say", "can't say", "not possible to",
          "not clear", "difficult to", "hard to", "unable to tell", "can't be sure", "cannot be sure")
CLARIFY_PHRASES = ("too blurry", "too blurred", "blurry", "blurred", "too noisy", "noisy",
                   "low resolution", "low-resolution", "poor quality", "image quality",
                   "unusable", "non-diagnostic", "nondiagnostic", "not diagnostic",
                   "wrong anatomy", "different anatomy", "not the anatomy", "different modality",
                   "cannot be interpreted", "uninterpretable", "please provide", "could you provide",
                   "can you provide", "degraded", "artifact")
REFER_PHRASES = ("refer", "specialist", "radiologist should", "further imaging", "further evaluation",
                 "clinical correlation", "cannot decide", "can't decide") + HEDGES

_CLAUSE_SPLIT = re.compile(r"[.;!?\n\u2013\u2014]| - |,|\bbut\b|\bhowever\b|\balthough\b|\bthough\b|\bwhereas\b")
_WORD = re.compile(r"[a-z0-9']+")


def normalize(text: str) -> str:
    """Lower case, unified quotes and spaces, markdown emphasis removed."""
    text = (text or "").lower().replace("\u2019", "'").replace("*", " ").replace("_", " ")
    text = re.sub(r"[\"`#>]", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def infer_question_kind(question: str) -> str:
    """presence | health | open, from the wording of a question."""
    q = normalize(question)
    if re.search(r"\b(healthy|normal|unremarkable)\b", q) and re.match(
        r"^(is|are|does|do|would|can|could|was|were|will)\b", q
    ):
        return "health"
    if re.match(r"^(is|are|does|do|can|could|was|were|has|have|would|will|any)\b", q):
        return "presence"
    return "open"


def _plural(word: str) -> tuple[str, ...]:
    if word.endswith(("s", "x", "sh", "ch")):
        return (word, word + "es")
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return (word, word[:-1] + "ies")
    return (word, word + "s")


def finding_terms(finding: str) -> tuple[str, ...]:
    """Words that name the finding: itself, plural, head noun, synonyms (longest first)."""
    f = normalize(finding)
    terms: set[str] = set()
    if f:
        terms.update(_plural(f))
        words = f.split()
        head = words[-1] if words else f
        if len(words) > 1 and head not in GENERIC_ABNORMAL:
            terms.update(_plural(head))
        for key in {f, head}:
            for syn in SYNONYMS.get(key, ()):
                terms.update(_plural(syn))
    return tuple(sorted(terms, key=len, reverse=True))


def _find_term(text: str, terms: tuple[str, ...]) -> re.Match | None:
    best = None
    for term in terms:
        m = re.search(rf"(?<![a-z]){re.escape(term)}(?![a-z])", text)
        if m and (best is None or m.start() < best.start()):
            best = m
    return best


def _has_phrase(text: str, phrases: tuple[str, ...]) -> str | None:
    for p in sorted(phrases, key=len, reverse=True):
        if re.search(rf"(?<![a-z']){re.escape(p)}(?![a-z])", text):
            return p
    return None


def _clause_bounds(text: str, start: int, end: int) -> tuple[str, str]:
    """The text of the clause before and after the span [start, end)."""
    before_all, after_all = text[:start], text[end:]
    cuts = list(_CLAUSE_SPLIT.finditer(before_all))
    before = before_all[cuts[-1].end():] if cuts else before_all
    m = _CLAUSE_SPLIT.search(after_all)
    after = after_all[: m.start()] if m else after_all
    return before, after


def _negated_before(before: str) -> bool:
    words = _WORD.findall(before)[-7:]
    window = " ".join(words)
    cue = None
    for phrase in sorted(NEGATION_BEFORE, key=len, reverse=True):
        for m in re.finditer(rf"(?<![a-z']){re.escape(phrase)}(?![a-z'])", window):
            if cue is None or m.start() > cue.start():
                cue = m
    if cue is None:
        return False
    # "cannot rule out X", "not excluded": a flipper right before the cue undoes it.
    prefix = " ".join(_WORD.findall(window[: cue.start()])[-2:])
    if cue.group(0) not in ("not", "no") and _has_phrase(prefix, FLIPPERS):
        return False
    return True


def _negated_after(after: str) -> bool:
    window = " ".join(_WORD.findall(after)[:5])
    if re.search(r"\b(cannot|can't|can not|could not|couldn't|not) (be )?(excluded|ruled out)", window):
        return False  # "X cannot be excluded": a hedged claim, like "cannot rule out X"
    return _has_phrase(window, NEGATION_AFTER) is not None


def _term_polarity(text: str, terms: tuple[str, ...]) -> bool | None:
    """True (claimed), False (negated) or None (not mentioned, or inside a hedge) for the
    first mention."""
    m = _find_term(text, terms)
    if m is None:
        return None
    before, after = _clause_bounds(text, m.start(), m.end())
    if _has_phrase(before, HEDGES):
        return None  # "unclear whether there is a nodule": the mention is not a claim
    return not (_negated_before(before) or _negated_after(after))


def _leading_yes_no(text: str) -> bool | None:
    head = re.sub(r"^(answer|final answer|response|a)\s*[:\-]\s*", "", text)
    first = _CLAUSE_SPLIT.split(head, maxsplit=1)[0].strip()
    words = _WORD.findall(first)
    if not words:
        return None
    lead = " ".join(words[:3])
    for phrase in sorted(NO + YES, key=len, reverse=True):
        if re.match(rf"{re.escape(phrase)}(?![a-z'])", lead):
            return phrase in YES
    return None


def claims_finding(answer: str, question: str, finding: str, question_kind: str | None = None) -> bool | None:
    """Whether ``answer`` claims ``finding`` is present: True, False, or None (undecided)."""
    text = normalize(answer)
    if not text:
        return None
    kind = question_kind or infer_question_kind(question)
    polarity = _term_polarity(text, finding_terms(finding))
    if polarity is not None:
        return polarity
    if _has_phrase(text, HEDGES):
        return None
    lead = _leading_yes_no(text)
    if lead is not None:
        return (not lead) if kind == "health" else lead
    if _has_phrase(text, ABNORMAL_WORDS):
        return True
    if _has_phrase(text, HEALTHY_WORDS):
        return False
    generic = _term_polarity(text, GENERIC_ABNORMAL)
    if generic is not None:
        return generic
    if kind == "open" and _WORD.search(text):
        # An open question answered with something other than a negation names an abnormality
        # ("Liver", "Left lung", "Mass in the right lobe").
        return True
    return None


def read_free_text(text: str, question: str, finding: str, question_kind: str | None = None) -> tuple[str, bool | None]:
    """Read a reply that has no action tag: ``(action, claims_finding)``.

    Identical for every model: a request for a usable image is ``clarify``; a reply that
    declines to decide is ``refer``; a reply the matcher can read is ``answer``; anything
    else is ``unparseable``.
    """
    norm = normalize(text)
    if not norm:
        return "unparseable", None
    claim = claims_finding(text, question, finding, question_kind)
    if claim is None and _has_phrase(norm, CLARIFY_PHRASES):
        return "clarify", None
    if claim is None and _has_phrase(norm, REFER_PHRASES):
        return "refer", None
    if claim is None:
        return "unparseable", None
    return "answer", claim
