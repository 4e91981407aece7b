"""The hand-labelled reply table and how a reader agrees with it.

``data/replies.yaml`` holds realistic free-text replies with the decision a careful clinician
assigns (claim / deny / refer / clarify / unparseable). :func:`agreement` reads each reply with
a reader and counts agreement and *flips* (a claim read as a denial or the reverse — the errors
that move erased-lesion claims and ESG directly).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

LABELS = ("claim", "deny", "refer", "clarify", "unparseable")  # what a clinician assigns a reply
DECISIONS = LABELS + ("unclear",)  # what the reader may return: unclear when its rules did not commit
CORPUS_FILE = "replies.yaml"


@dataclass(frozen=True)
class LabelledReply:
    reply: str
    question: str
    finding: str
    kind: str  # presence | health | open
    style: str
    expect: str  # one of LABELS


@lru_cache(maxsize=1)
def _corpus() -> tuple[LabelledReply, ...]:
    text = resources.files("medscope.answers").joinpath("data", CORPUS_FILE).read_text("utf-8")
    raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    qs = raw["questions"]
    out = []
    for row in raw["replies"]:
        q = qs[row["q"]]
        if row["expect"] not in LABELS:
            raise ValueError(f"unknown decision {row['expect']!r} in {CORPUS_FILE}")
        out.append(LabelledReply(row["reply"], q["question"], q["finding"], q["kind"], row["style"], row["expect"]))
    return tuple(out)


def load_corpus() -> list[LabelledReply]:
    """Every labelled reply shipped with the package.

    Returns
    -------
    list of LabelledReply
        The rows of ``data/replies.yaml``, in file order (a new list; the parse is cached).

    Raises
    ------
    ValueError
        When a row's ``expect`` is not one of :data:`LABELS`.
    """
    return list(_corpus())


def load_jsonl_table(name: str) -> list[LabelledReply]:
    """A labelled table shipped as JSON lines under ``data/`` (the held-out tables): one
    object a line with question, finding, kind, style, expect and reply.

    Parameters
    ----------
    name : str
        File name under the package's ``data/`` folder (e.g. ``"replies_item6.jsonl"``).

    Returns
    -------
    list of LabelledReply
        One per non-blank line, in file order.

    Raises
    ------
    ValueError
        When a line's ``expect`` is not one of :data:`LABELS` (the message names the line).
    """
    import json

    text = resources.files("medscope.answers").joinpath("data", name).read_text("utf-8")
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["expect"] not in LABELS:
            raise ValueError(f"{name}:{i}: unknown decision {row['expect']!r}")
        out.append(LabelledReply(row["reply"], row["question"], row["finding"], row["kind"], row["style"], row["expect"]))
    return out


def decision(action: str, claim: bool | None) -> str:
    """(action, claims_finding) as one of DECISIONS.

    Parameters
    ----------
    action : str
        The reader's action: ``answer``, ``refer``, ``clarify`` or ``unparseable``.
    claim : bool or None
        Whether an answer claims the finding.

    Returns
    -------
    str
        ``"claim"`` / ``"deny"`` for an answer (by the truth of ``claim``), the action itself when it is
        one of :data:`DECISIONS`, else ``"unparseable"``.
    """
    if action == "answer":
        return "claim" if claim else "deny"
    return action if action in DECISIONS else "unparseable"


@dataclass(frozen=True)
class Agreement:
    n: int
    agree: int
    flips: int  # claim read as deny or deny read as claim
    misses: list[tuple[LabelledReply, str]]  # (row, what the reader said)

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else float("nan")


def agreement(read: Callable[[str, str, str, str], tuple[str, bool | None]],
              rows: list[LabelledReply] | None = None) -> Agreement:
    """Agreement of ``read(reply, question, finding, kind) -> (action, claim)`` with the table.

    Parameters
    ----------
    read : callable
        ``read(reply, question, finding, kind) -> (action, claim)``, e.g.
        :func:`medscope.answers.matching.read_free_text`.
    rows : list of LabelledReply or None, optional
        The table to read; None for :func:`load_corpus`.

    Returns
    -------
    Agreement
        Rows read, rows agreeing, claim/deny flips, and the misses as ``(row, decision read)``.
    """
    rows = load_corpus() if rows is None else rows
    misses, flips = [], 0
    for row in rows:
        got = decision(*read(row.reply, row.question, row.finding, row.kind))
        if got != row.expect:
            misses.append((row, got))
            flips += {got, row.expect} == {"claim", "deny"}
    return Agreement(len(rows), len(rows) - len(misses), flips, misses)
