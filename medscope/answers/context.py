"""Assertion status of one mention in a reply: NegEx / ConText with explicit scope.

Clinical NLP reads whether a sentence asserts a concept with trigger phrases and a scope
(Chapman et al., NegEx 2001; Harkema et al., ConText 2009): a *forward* trigger ("no", "without",
"possible", "history of") modifies the concepts after it up to a terminator ("but", "however",
";", a new clause); a *backward* trigger ("is not seen", "has resolved", "cannot be excluded")
modifies the concept before it; a *pseudo-trigger* ("no doubt", "no change", "not only",
"cannot rule out") contains a trigger word but is not that trigger. The status of a mention is
the category of its closest trigger in scope, backward triggers first (they are the clause's
predicate); with none it is affirmed.

Why rules here and not medspaCy / negspacy: those libraries implement exactly this algorithm
but need spaCy and a sentence model (hundreds of MB, not in the project environment), and their
lexicons are tuned to clinical notes, not to chatbot replies ("I don't think there is",
"there doesn't appear to be", "can't be excluded"). The lexicon below is ConText's categories
with reply phrasings added; every trigger is in one table a reviewer can read, and contractions
are expanded before matching ("doesn't" -> "does not") so one entry covers both spellings.

Categories: ``negated`` (a denial; hedged denials such as "unlikely", "no definite", "I doubt"
included), ``possible`` (a hedged affirmation: "possible", "cannot be excluded", "consistent
with"), ``hypothetical`` (mentioned but not asserted: "whether", "if", "assess for", "would",
"too blurry to tell"), ``historical`` (a past finding: "history of", "previously seen"; a
*resolved* one — "has resolved", "no longer" — is ``negated``: it is not there now), and
``affirmed``.

References: W. W. Chapman et al., "A simple algorithm for identifying negated findings and
diseases in discharge summaries" (NegEx), J. Biomed. Inform. 34(5), 2001; H. Harkema et al.,
"ConText: an algorithm for determining negation, experiencer, and temporal status from clinical
reports", J. Biomed. Inform. 42(5), 2009.
"""

from __future__ import annotations

import re

STATUSES = ("affirmed", "negated", "possible", "hypothetical", "historical", "conflicting")

# A denial of a statement ("it would be wrong to say", "I don't think") around a second negation
# affirms ("it would be wrong to say there is no X", "I don't think X is missing"); a hedged one
# ("I can't say") around a second negation commits to nothing. Alone, both deny.
STATEMENT_DENIALS = (
    "not the case that", "wrong to say", "wrong to call", "wrong to claim", "incorrect to say", "incorrect to call", "inaccurate to say",
    "not true that", "not correct that", "not correct to say", "untrue that", "false to say", "a mistake to say",
    "not fair to say", "not that", "do not think", "do not believe", "would not say", "would not call",
    "would not describe", "disagree that",
)
HEDGED_DENIALS = ("can not say", "can not tell", "not sure", "unsure", "can not be sure", "can not claim",
                  "can not confirm", "not certain")
# Phrases that look like triggers but are not (matched first, then masked).
PSEUDO = (
    "no doubt", "without doubt", "without a doubt", "no question", "not only", "no wonder",
    "no change", "no interval change", "no significant change", "no increase", "no decrease",
    "not surprisingly", "not unexpectedly", "not just", "no further", "not untrue", "not incorrect", "not wrong",
    "not false",
)

FORWARD = {
    "negated": (
        "no", "not", "without", "never", "neither", "nor", "none", "nothing", "no evidence of",
        "no sign of", "no signs of", "no definite", "no obvious", "no convincing", "absence of",
        "absent", "free of", "negative for", "rule out", "rules out", "ruled out", "excludes",
        "exclude", "lack of", "lacks", "doubt", "unlikely to be", "unable to see", "resolved",
        "resolution of", "no longer", "no residual", "fails to", "failed to", "resected", "excised",
        "removed", "rather than", "instead of", "mimicking", "mimics", "mimicker of", "simulating",
        "unable to identify", "was unable to identify", "could not identify", "can not identify", "did not identify",
        # (issue 48, set R) "Unable to visualize the pancreas": the reader looked and did not see it
        "unable to visualize", "unable to visualise", "could not visualize", "could not visualise",
        "can not visualize", "can not visualise", "not able to visualize", "not able to visualise",
        "unable to demonstrate", "could not demonstrate", "unable to locate", "could not locate",
        "masquerading as", "pseudo", "devoid of", "free from", "clear of", "nothing to suggest",
        # evidence weighed against the finding ("contains air, arguing against appendicitis")
        "argues against", "argue against", "arguing against", "argued against", "speaks against",
        "speak against", "speaking against", "evidence against", "points against", "pointing against", "nicht", "kein", "keine", "keinen", "geen", "pas de", "sin", "sem", "nessun",
        "nessuna", "brak",
        # (issue 48, set R) the plain "not" of Indonesian, Dutch and Vietnamese ("gambar ini tidak normal")
        "tidak", "bukan", "niet", "không", "non si osserva", "non si osservano", "non si vede", "non si vedono", "no se observa",
        "no se observan", "no se ven", "não se observa", "não se observam", "não", "nao", "aucun", "aucune", "ningún", "ninguna", "nenhum", "nenhuma", "nessuno",
    ) + STATEMENT_DENIALS + HEDGED_DENIALS,
    "possible": (
        "possible", "possibly", "probable", "probably", "likely", "may", "might", "could",
        "suspicious for", "suspected", "suspect", "suggestive of", "suggests", "suggest",
        "concerning for", "consistent with", "in keeping with", "compatible with",
        "can not rule out", "can not exclude", "could not rule out", "not rule out", "questionable",
        # (issue 48, set R) the same said of the mention before, read by what follows: "X can not be excluded given
        # blunting of the angle" is no denial of the blunting (its "not" read as one)
        "can not be excluded", "can not be ruled out", "could not be excluded", "could not be ruled out",
        "represent", "represents", "may represent", "cannot exclude",
        # a denied inconsistency is a hedged consistency ("not inconsistent with a meningioma")
        "not inconsistent with",
    ),
    "hypothetical": (
        "whether", "if", "assess for", "assessing for", "evaluate for", "evaluating for",
        "evaluation for", "look for", "looks for", "looking for", "looked for", "check for",
        "checking for", "to rule out", "ruling out", "question of", "asks", "asked", "too", "equivocal for",
        "indeterminate for", "may or may not", "mistaken for", "mimic", "considered",
        "first thought", "to tell", "to identify", "to say", "can not assess", "can not evaluate",
        "can not determine", "can not judge", "can not comment on", "can not decide", "unable to assess",
        "unable to evaluate", "probability that", "probability of", "likelihood that", "likelihood of",
        "chance that", "chance of", "question about", "asks about", "asked about", "can hide", "may hide",
        "could hide", "initially", "at first", "looked like",
        # a refusal that names the finding only as a topic ("consult your doctor about any concerns
        # regarding lung nodules") asserts nothing about this image
        "concerns about", "concerns regarding", "concern about", "concern regarding", "questions about",
        "questions regarding", "information about", "information on",
        # a caveat names a case the reply allows for, not one it sees ("with the usual caveat about a
        # contracted gallbladder")
        "caveat about", "caveat regarding", "caveat of", "caveats about",
        # a pointer to reading elsewhere names the finding as a topic ("read more about pleural effusions here")
        "read more about", "more about", "walkthrough of", "a guide to", "locating", "to comment on",
        # (issue 48, set R) the organ as the aim of more imaging ("recommended to fully evaluate the pancreas"): a
        # purpose, not a sighting
        "to evaluate", "to fully evaluate", "to better evaluate", "to further evaluate", "to assess", "to fully assess",
        "to better assess", "to further assess",
        # (issue 48, set S) a question the reasoning asks itself ("a subtle opacity, could that be consolidation? But ..."):
        # the inverted modal asks, where "that could be consolidation" hedges
        "could that be", "could this be", "might that be", "might this be", "can that be", "is that really",
    ),
    "historical": ("history of", "previously seen", "previous", "prior", "status post", "old"),
}
# After the mention: the clause's predicate about it.
BACKWARD = {
    "negated": (
        "is absent", "are absent", "absent", "none", "unlikely", "is unlikely", "excluded",
        "ruled out", "has resolved", "resolved", "no longer", "was removed", "removed", "was resected",
        "resected", "excised",
        "not seen", "not visible", "not present", "not identified", "not detected",
        "not demonstrated", "not shown", "not depicted", "not included", "not in", "not there",
        "not evident", "not appreciated", "not noted", "not found", "not captured", "not imaged", "not covered",
        # (issue 48, set Q) a report's conclusion that the findings do not bear the diagnosis out
        "not supported", "is not supported", "not favoured", "not favored", "is not favoured", "is not favored",
        "not clearly visible", "not clearly seen", "found none", "none seen", "is missing", "are missing",
        "missing", "is lacking", "lacking", "not within", "outside the field of view", "out of the field of view",
        "outside the field", "out of view", "out of plane", "not in fov", "not in the fov",
        # the same in the languages models answer in
        "no se observa", "no se identifica", "no se ve", "no se visualiza", "no es visible", "não se observa",
        "não é visível", "não está presente", "não se identifica", "n'est pas visible", "n'est pas vu",
        "nicht sichtbar", "nicht erkennbar", "değil", "non è visibile", "non si vede", "niet zichtbaar", "不可见", "未见",
        "看不到", "見えません", "見られません", "보이지 않습니다",
        # Hinglish, as written in Latin letters ("koi fracture nahi dikh raha")
        "nahi", "nahin", "nahi hai", "nahi dikh raha", "nahi dikhta", "nahi dikhai", "नहीं",
        # an organ placed off the slice ("the sigmoid is below this level", "not expected at this level")
        "is below this level", "is above this level", "lies below this level", "lies above this level",
        "below this level", "above this level", "below the level of this slice", "above the level of this slice",
        "not expected at this level", "not at this level",
        # the organ placed off the imaged volume ("lies well above the field of view", "lie below this slice")
        "above the field of view", "below the field of view", "beyond the field of view", "above this slice",
        "below this slice", "above the slice", "below the slice", "above the imaged", "below the imaged",
        "outside the imaged region", "outside the imaged volume", "outside the imaged field", "outside the imaged area",
        "outside the scan range", "outside the scanned", "out of the imaged",
        # (issue 48, set L) the scanned range named by its other words
        "above the scanned", "below the scanned", "beyond the scanned", "above the scan range", "below the scan range",
        "above the imaging range", "below the imaging range", "above the scanned range", "below the scanned range",
        # (issue 48, sets M and N) the field of view named with "this", and a slice that cannot hold the organ
        "outside this field of view", "outside this field", "outside this image", "outside this slice",
        "outside of this field of view", "can not appear here", "can not appear in this", "can not appear on this",
        "can not be in this", "can not be on this",
        # German / Italian / French predicates a mended name ("Pankreas" -> "pancreas") leaves in English prose
        "nicht abgebildet", "nicht dargestellt", "nicht erfasst", "nicht getroffen", "nicht vorhanden", "nicht zu sehen",
        "non si osserva", "non si osservano", "non si vede", "non si vedono", "non sono visibili", "n'est pas visible",
        "ne sont pas visibles",
    ),
    "possible": (
        "can not be excluded", "can not be ruled out", "not excluded", "not ruled out",
        "could not be excluded", "is likely", "is possible", "is suspected", "is probable",
        "may be present", "might be present", "might be", "may be",
    ),
    "hypothetical": ("would", "would appear", "would be", "could be hidden", "may or may not", "might or might not",
                     "can be occult", "could be occult", "may be occult", "can be missed", "could be missed",
                     "may be missed", "can not be assessed", "can not be evaluated", "can not be determined",
                     "can not be commented on", "can not be answered", "refers to", "is defined as", "is a condition",
                     "is a collection", "is a term", "can be difficult", "can be very difficult", "can be hard",
                     "may be difficult", "can be subtle",
                     # a textbook statement about the finding in general, not about this image
                     # ("Pleural effusions are commonly caused by heart failure ...")
                     "are commonly", "are often", "are usually", "are typically", "are generally",
                     "are most commonly", "are caused by", "is commonly caused", "is usually caused",
                     "is often caused", "is typically caused"),
}
# "X is/was/appears ... not <verb>" with up to two words between "not" and the verb.
_NOT_PREDICATE = re.compile(
    r"^(?:\W*\w+){0,6}?\W*\bnot\s+(?:\w+\s+){0,2}?"
    r"(?:visible|seen|present|identified|detected|depicted|demonstrated|shown|evident|"
    r"appreciated|included|captured|found|noted|visuali[sz]ed|imaged|covered|scanned|in|on|there|part\s+of)\b"
)
# The organ placed past one edge of the image, named by its direction ("lies below the caudal extent of
# this image", "is beyond the lower margin of the scan"; issue 48, set Q): below the lower edge or above the
# upper one is off the image, while "above the lower edge" is still on it, so the direction must agree.
_EDGE = r"(?:extent|edge|margin|limit|border|boundary|end)\s+of\s+(?:this|the)\s+(?:\w+\s+)?(?:image|slice|scan|study|field of view|" \
        r"fov|volume|range|coverage|acquisition|series|film|radiograph|section)\b"
_OFF_EDGE = re.compile(
    r"^\s*(?:(?:lies?|sits?|is|are|was|were|falls?|remains?|located|situated|positioned|well|entirely|completely|wholly|"
    r"just|far|further|farther|probably)\s+){1,4}(?:(?:below|beneath|under|caudal to|inferior to)\s+(?:the\s+)?"
    r"(?:caudal|inferior|lower|bottom)(?:most)?\s+" + _EDGE + r"|(?:above|cranial to|superior to)\s+(?:the\s+)?"
    r"(?:cranial|superior|upper|top)(?:most)?\s+" + _EDGE + r"|(?:beyond|outside|past)\s+(?:the\s+)?(?:\w+\s+)?" + _EDGE + ")")
_FORWARD_END = re.compile(
    r"\b(?:but|however|although|though|yet|except|whereas|while|apart from|aside from|despite|"
    r"because|so|therefore)\b|[;:\u2013\u2014]|\s-\s|,\s*(?=(?:a|an|the|there|it|this|which|i|we|and)\b)"
)
_BACKWARD_END = re.compile(
    r"\b(?:but|however|although|though|yet|except|whereas|while|and there|there is|there are|with|without)\b|[;:(\u2013\u2014]"
    r"|\s-\s|,(?!\s*which\b)"
)


def _alternation(phrases) -> re.Pattern:
    parts = sorted({re.escape(p).replace(r"\ ", r"\s+") for p in phrases}, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(?:" + "|".join(parts) + r")(?![\w'])")


_PSEUDO = _alternation(PSEUDO)
_FORWARD = {cat: _alternation(p) for cat, p in FORWARD.items()}
_BACKWARD = {cat: _alternation(p) for cat, p in BACKWARD.items()}
# "no" followed by punctuation is the answer particle ("No, there is..."), not a determiner.
# (issue 48, set R) so are Vietnamese and Indonesian "không," / "tidak," (their "not" negates a word it precedes)
_PARTICLE_NO = re.compile(r"(?<![\w'])(?:no|không|tidak)(?=\s*[,.!\-\u2013\u2014:]|\s*$)")


# (issue 48, set S) a negated comparison is emphasis, not denial: "I have never seen a clearer view of the portal vein",
# "it could not be clearer" affirm what they compare (read as a "never" / "not", the organ read absent: a flip)
_EMPHATIC_NEGATION = re.compile(
    r"(?<![\w'])(?:never\s+(?:(?:have|had|has|'ve)\s+)?(?:seen|had|got|gotten|obtained|found)\s+(?:an?|such\s+an?)\s+"
    r"(?:(?:much|far|any)\s+)?(?:better|clearer|sharper|nicer|cleaner|finer|more\s+\w+|\w{3,}er)"
    r"|(?:could|can|would)\s+not\s+(?:have\s+)?(?:be|been|look|looked)\s+(?:any\s+)?(?:better|clearer|sharper|more\s+obvious|more\s+clearly))"
    r"(?![\w'])")


def _mask(text: str) -> str:
    """Pseudo-triggers and answer particles replaced by same-length filler (offsets kept)."""
    text = _PSEUDO.sub(lambda m: "_" * len(m.group(0)), text)
    text = _EMPHATIC_NEGATION.sub(lambda m: "_" * len(m.group(0)), text)
    return _PARTICLE_NO.sub(lambda m: "_" * len(m.group(0)), text)


def forward_scope(before: str) -> str:
    """The part of the text before a mention that forward triggers can reach: back to the last
    terminator, at most eight words.

    Parameters
    ----------
    before : str
        The (masked, normalised) text before the mention.

    Returns
    -------
    str
        The text after the last forward terminator (``but``, ``;``, a new clause, ...), cut to its last
        eight words.
    """
    cuts = list(_FORWARD_END.finditer(before))
    scope = before[cuts[-1].end():] if cuts else before
    words = list(re.finditer(r"\S+", scope))
    return scope[words[-8].start():] if len(words) > 8 else scope


def backward_scope(after: str) -> str:
    """The part of the text after a mention that backward triggers can reach.

    Parameters
    ----------
    after : str
        The (masked, normalised) text after the mention.

    Returns
    -------
    str
        The text up to the first backward terminator (``but``, ``;``, a comma not before ``which``, ...),
        cut to its first eight words when longer.
    """
    m = _BACKWARD_END.search(after)
    scope = after[: m.start()] if m else after
    words = list(re.finditer(r"\S+", scope))
    return scope[: words[7].end()] if len(words) > 8 else scope


_STATEMENT = _alternation(STATEMENT_DENIALS)
_HEDGED = _alternation(HEDGED_DENIALS)
_NEGATION_WORDS = re.compile(r"(?<![\w'])(?:not|no|never|none|missing|absent|lacking|excluded)(?![\w'])")
_NOT_WITHOUT = re.compile(r"(?<![\w'])not\s+(?:without|no)(?![\w'])")


# (issue 48, set V) "... but the right kidney is not;": a "not" that ends the clause denies the predicate it leaves out
# (the one said just before of the other side); read without it, the mention was affirmed
_ELIDED_NOT = re.compile(r"\s*(?:is|are|was|were|can|could)\s+not(?:\s+(?:be|seen|visible))?\s*(?:[;.:)!]|$|\s[-\u2013\u2014]|\s+(?:but|and|though|whereas)\b)")
# ... only where the predicate left out is one of presence ("the heart is enlarged; the liver is not" says nothing of
# whether the liver is there)
_PRESENCE_BEFORE = re.compile(r"(?<![\w'])(?:seen|visible|present|identified|depicted|shown|included|visuali[sz]ed|"
                              r"demonstrated|detected|evident|in view)(?![\w'])")
_NOT_ABSENT = re.compile(r"^\W*(?:(?:is|are|was|were)\s+)?(?:\w+\s+)?not\s+(?:\w+\s+)?(?:absent|missing|lacking)(?![\w'])")


def _double_negation(before: str, after: str) -> str | None:
    """'affirmed' for a denied denial ("wrong to say there is no X", "I don't think X is missing",
    "not without X"), 'conflicting' for a hedged one ("I can't say X is absent"), None otherwise."""
    if _NOT_WITHOUT.search(before):
        return "affirmed"
    for pat, result in ((_STATEMENT, "affirmed"), (_HEDGED, "conflicting")):
        outer = None
        for m in pat.finditer(before):
            outer = m
        if outer is None:
            continue
        inner = _STATEMENT.sub(" ", _HEDGED.sub(" ", before[outer.end():]))
        negations = len(_FORWARD["negated"].findall(inner)) + len(_NEGATION_WORDS.findall(after))
        if negations >= 2:
            return "conflicting"  # "incorrect to say that X is not missing": three negations, no verdict
        if negations == 1:
            return result
    return None


# (issue 48, set R) "absent" / "missing" / "lacking" as an attribute of the noun that follows ("and absent lung
# markings peripheral to it"): a pre-negation of that noun, so no backward trigger of an earlier mention
_ATTRIBUTIVE_NEGATION = re.compile(r"(?:absent|missing|lacking)\s+(?!(?:in|on|at|from|here|there|bilaterally|throughout|and|or|but|"
                                   r"as|since|because|due|with|without|within|on|this|these|the|entirely|completely|altogether|"
                                   r"today|now|again|too|also|is|are|was|were)\b)[a-z][\w-]*")


_COORDINATION = re.compile(r"(?<![\w'])(?:and|or)(?![\w'])")


def _statement_scope(text_before: str, before: str) -> str:
    """The text a statement denial before a mention can reach: its whole clause, back past the eight words of
    ``before`` (issue 48, set V: "it is not the case that the lungs are free of X" puts the denial nine words away,
    and read without it the inner "free of" denies, a flip), but not past an "and" / "or", which starts a statement
    of its own ("I don't think the film is rotated and there is no X" denies X)."""
    cuts = list(_FORWARD_END.finditer(text_before))
    clause = text_before[cuts[-1].end() if cuts else 0:]
    joins = list(_COORDINATION.finditer(clause))
    clause = clause[joins[-1].end():] if joins else clause
    return clause if len(clause) > len(before) else before


def status(sentence: str, start: int, end: int) -> str:
    """Assertion status of the mention ``sentence[start:end]`` (normalised text).

    Parameters
    ----------
    sentence : str
        One normalised sentence (:func:`medscope.answers.matching.normalize`).
    start, end : int
        Character offsets of the mention in ``sentence``.

    Returns
    -------
    str
        One of :data:`STATUSES`: ``"affirmed"``, ``"negated"``, ``"possible"``, ``"hypothetical"``,
        ``"historical"``, or ``"conflicting"`` (a hedged denial of a denial, "I can't say X is absent":
        neither affirmed nor negated).
    """
    masked = _mask(sentence)
    after = backward_scope(masked[end:])
    before = forward_scope(masked[:start])
    double = _double_negation(_statement_scope(masked[:start], before), after)
    if double is not None:
        return double
    if _NOT_ABSENT.match(after):
        # "X is certainly not absent": a denied absence affirms, unless something else negates it too
        return "conflicting" if _FORWARD["negated"].search(before) else "affirmed"
    if _ELIDED_NOT.match(masked[end:]) and _PRESENCE_BEFORE.search(masked[:start]):
        return "negated"  # "the left kidney is seen, but the right kidney is not;": the predicate before, denied
    best = None  # (position, category): the backward trigger nearest the mention
    m = _NOT_PREDICATE.search(after)
    if m:
        best = (m.group(0).rfind("not"), "negated")  # "is not seen", "isn't in this slice"
    clause_end = _BACKWARD_END.search(masked[end:])
    m = _OFF_EDGE.match(masked[end:][:clause_end.start()] if clause_end else masked[end:])  # past eight words: "... of this field of view"
    if m and (best is None or m.start() < best[0]):
        best = (m.start(), "negated")  # "lies below the caudal extent of this image"
    longest = None  # the length of the backward phrase that set ``best`` (None: one of the two patterns above)
    for cat, pat in _BACKWARD.items():
        # "absent lung markings": a bare "absent" / "missing" before a noun is that noun's, not the mention's predicate
        m = next((x for x in pat.finditer(after) if not _ATTRIBUTIVE_NEGATION.match(after, x.start())), None)
        if m is None:
            continue
        size = m.end() - m.start()
        # at one place the longer phrase is the predicate ("may be occult" is a generic caveat, hypothetical, not the
        # hedge "may be" it starts with; issue 48, set V), a hedge on equal terms
        tie = best is not None and m.start() == best[0] and (
            cat == "possible" if longest is None else size > longest or (size == longest and cat == "possible"))
        if best is None or m.start() < best[0] or tie:
            best, longest = (m.start(), cat), size
    if best is not None:
        return best[1]
    best = None  # the forward trigger nearest the mention (largest end; longest on ties)
    for cat, pat in _FORWARD.items():
        for m in pat.finditer(before):
            key = (m.end(), m.end() - m.start())
            if best is None or key > best[0]:
                best = (key, cat)
    if best is not None and best[1] == "possible":
        cuts = list(_FORWARD_END.finditer(masked[:start]))
        clause = masked[cuts[-1].end() if cuts else 0:start]  # the whole clause, not only eight words
        lead = clause[:len(clause) - (len(before) - (best[0][0] - best[0][1]))]
        # (issue 48, set M) "nothing concerning for X", "no features suspicious for X"
        if (re.search(r"\b(?:to|that|which|not)\s+(?:(?:would|could|might|may|can)\s+)?$|\b(?:nothing|no\s+(?:[\w-]+\s+){0,2}?"
                      r"(?:features?|findings?|signs?|areas?|changes?|appearances?))\s+$", lead)
                and _FORWARD["negated"].search(lead)):
            # "nothing to suggest X", "I don't see features that suggest X", "not suggestive of X": the hedge is denied
            return "negated"
    return best[1] if best is not None else "affirmed"
