"""One reading of one reply, for every protocol: the decision, the rule that made it and the text
that decided it, and how a reading is compared with a careful reader's label.

The counterfactual protocol decides ``claim`` / ``deny`` / ``refer`` / ``clarify`` /
``unparseable`` (counterfactual paper §3.1); the organ-presence probe ``present`` / ``absent`` /
``not_addressed`` (organ-presence paper, Methods). Both readers may also say ``unclear``: the
reader's own evidence does not agree (two verdicts, a double negation it cannot resolve, another
entity as the subject), so it does not commit. An unclear reading is never a verdict: it only
lowers n, and it is counted and shown.

A *flip* is a committed reading opposite to the label (claim read for a denial, absent for
present, and back): the error that moves a headline number. ``unclear`` is a miss only where the
label commits.
"""

from __future__ import annotations

from dataclasses import dataclass

PROTOCOL_DECISIONS = {
    "counterfactual": ("claim", "deny", "refer", "clarify", "unparseable", "unclear"),
    "organ_presence": ("present", "absent", "not_addressed", "unclear"),
}
READABLE_PROTOCOLS = tuple(PROTOCOL_DECISIONS)
COMMITTED = frozenset({"claim", "deny", "present", "absent"})
OPPOSITE = {"claim": "deny", "deny": "claim", "present": "absent", "absent": "present"}
# spellings of labels written by hand (the development sets say "claims" / "denies")
LABEL_SPELLINGS = {"claims": "claim", "denies": "deny", "not addressed": "not_addressed", "not-addressed": "not_addressed"}
# spellings of question kinds written by hand: "Is this X-ray normal?" is the reader's health question
# (set R calls it "normality"; read as a presence question, "No." to it read deny, the wrong way round)
QUESTION_KIND_SPELLINGS = {"normality": "health", "normal": "health", "abnormality": "health", "health": "health",
                           "presence": "presence", "open": "open", "open-ended": "open", "open_ended": "open"}


@dataclass(frozen=True)
class ReplyReading:
    """What one reply was read as: ``decision`` (see :data:`PROTOCOL_DECISIONS`), the ``rule`` that
    decided, and ``evidence``: the text that decided, or for ``unclear`` why it was not certain."""

    decision: str
    rule: str
    evidence: str = ""


def label_decision(label: str) -> str:
    """A hand-written label in the reader's vocabulary ("claims" -> "claim", "Not addressed" -> "not_addressed").

    Parameters
    ----------
    label : str
        A label as written in a labelled table or a labelling page.

    Returns
    -------
    str
        The label lower-cased, with the development sets' spellings mapped (:data:`LABEL_SPELLINGS`).
    """
    key = str(label).strip().lower()
    return LABEL_SPELLINGS.get(key, key)


def is_flip(read: str, label: str) -> bool:
    """Whether ``read`` commits to the opposite of ``label`` (claim for deny, absent for present, ...).

    Parameters
    ----------
    read : str
        The reader's decision.
    label : str
        The careful reader's label.

    Returns
    -------
    bool
        True for the wrong-way readings only; any other disagreement is a miss, not a flip.
    """
    label = label_decision(label)
    return OPPOSITE.get(label) == label_decision(read)


def agrees(read: str, label: str, also_defensible: tuple[str, ...] | list[str] = ()) -> bool:
    """Whether a reading agrees with a label: the same decision, one the labeller also accepts, or
    ``unclear`` where the label itself does not commit.

    Parameters
    ----------
    read : str
        The reader's decision.
    label : str
        The careful reader's label.
    also_defensible : sequence of str, optional
        Other decisions the labeller accepts for this reply.

    Returns
    -------
    bool
        True when the reading is not a miss.
    """
    read, label = label_decision(read), label_decision(label)
    if read == label or read in {label_decision(a) for a in also_defensible}:
        return True
    return read == "unclear" and label not in COMMITTED


def read_reply_decision(protocol: str, reply: str | None, question: str, finding: str,
                        question_kind: str | None = None, synonyms: tuple[str, ...] | list[str] = ()) -> ReplyReading:
    """Read one reply as ``protocol`` reads it: the decision, the rule and the evidence.

    Parameters
    ----------
    protocol : {'counterfactual', 'organ_presence'}
        Whose decisions: claim / deny / refer / clarify / unparseable, or present / absent /
        not_addressed (both also ``unclear``).
    reply : str or None
        The model's reply (any format: a ``<final>`` tag, JSON, free text); None reads as empty.
    question : str
        The question the model was asked.
    finding : str
        The asked finding or organ (``"polyp"``, ``"left kidney"``).
    question_kind : {"presence", "health", "open"} or None, optional
        The question's kind (or a spelling of :data:`QUESTION_KIND_SPELLINGS`, "normality" for
        "health"); None or an unknown kind to infer it from ``question`` (the organ-presence probe
        always asks presence).
    synonyms : sequence of str, optional
        Extra words naming the finding.

    Returns
    -------
    ReplyReading

    Raises
    ------
    ValueError
        When ``protocol`` is not one of :data:`READABLE_PROTOCOLS`.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10; organ-presence paper, Methods (present / absent / not addressed).
    """
    from medscope.answers.matching import read_decision

    if protocol not in PROTOCOL_DECISIONS:
        raise ValueError(f"unknown protocol {protocol!r} for reading replies; known: {', '.join(READABLE_PROTOCOLS)}")
    # a kind the reader does not know is inferred from the question's wording, never read as presence
    kind = "organ" if protocol == "organ_presence" else QUESTION_KIND_SPELLINGS.get(str(question_kind or "").strip().lower())
    r = read_decision(reply or "", question, finding, kind, tuple(synonyms))
    evidence = getattr(r, "evidence", "")
    if r.action == "unclear":
        return ReplyReading("unclear", r.rule, evidence)
    if protocol == "organ_presence":
        if r.action != "answer":
            return ReplyReading("not_addressed", r.rule, evidence)
        return ReplyReading("present" if r.claim else "absent", r.rule, evidence)
    if r.action == "answer":
        return ReplyReading("claim" if r.claim else "deny", r.rule, evidence)
    return ReplyReading(r.action, r.rule, evidence)


@dataclass(frozen=True)
class LabelledSetRow:
    """One reply of a labelled set: what was asked, the reply, and the careful reader's label."""

    row_id: str
    protocol: str
    question: str
    finding: str
    question_kind: str | None
    reply: str
    label: str
    also_defensible: tuple[str, ...]
    style: str


@dataclass(frozen=True)
class SetScore:
    """How a reader agrees with a labelled set: n, agreements, flips, unclear readings and every miss."""

    n: int
    agree: int
    flips: int
    unclear: int
    misses: tuple[tuple[LabelledSetRow, ReplyReading], ...]

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else float("nan")


def load_labelled_set(path: str) -> list[LabelledSetRow]:
    """A labelled reply set as JSON lines: per line ``protocol`` (counterfactual | organ_presence),
    ``question``, ``finding`` (or ``organ``), ``question_kind`` (optional), ``reply``, ``label`` (or
    ``decision`` / ``verdict``), ``also_defensible`` (optional), ``id`` and ``style`` (optional).

    Parameters
    ----------
    path : str
        A local file path.

    Returns
    -------
    list of LabelledSetRow
        One per non-blank line, in file order.

    Raises
    ------
    ValueError
        When a line's protocol or label is unknown (the message names the file and line).
    """
    from medscope.io import safe_text

    out = []
    for i, line in enumerate(safe_text.read_text(str(path)).split("\n"), 1):
        if not line.strip():
            continue
        row = safe_text.loads_json(line, f"{path}:{i}")
        if not isinstance(row, dict):
            raise safe_text.BadText(f"{path}:{i}", "expected a JSON object", f"got {type(row).__name__}")
        protocol = row.get("protocol") or ("organ_presence" if "verdict" in row else "counterfactual")
        label = label_decision(row.get("label") or row.get("decision") or row.get("verdict") or "")
        if protocol not in PROTOCOL_DECISIONS or label not in PROTOCOL_DECISIONS[protocol]:
            raise ValueError(f"{path}:{i}: unknown protocol {protocol!r} or label {label!r}")
        finding = row.get("finding") or row.get("organ") or ""
        out.append(LabelledSetRow(
            str(row.get("id", i)), protocol, row.get("question") or f"Is the {finding} visible?", finding,
            row.get("question_kind"), row.get("reply") or "", label,
            tuple(label_decision(a) for a in row.get("also_defensible") or ()), row.get("style") or ""))
    return out


def score_labelled_set(rows: list[LabelledSetRow], read=read_reply_decision) -> SetScore:
    """Read every row and compare with its label (:func:`agrees`, :func:`is_flip`).

    Parameters
    ----------
    rows : list of LabelledSetRow
        The labelled replies (:func:`load_labelled_set`).
    read : callable, optional
        ``read(protocol, reply, question, finding, question_kind) -> ReplyReading``; default the
        project's reader, :func:`read_reply_decision`.

    Returns
    -------
    SetScore
    """
    agree = flips = unclear = 0
    misses = []
    for row in rows:
        got = read(row.protocol, row.reply, row.question, row.finding, row.question_kind)
        unclear += got.decision == "unclear"
        if agrees(got.decision, row.label, row.also_defensible):
            agree += 1
            continue
        flips += is_flip(got.decision, row.label)
        misses.append((row, got))
    return SetScore(len(rows), agree, flips, unclear, tuple(misses))
