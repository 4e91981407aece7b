"""What the hand-worked tests of each held-out round's kinds (tests/benchgen/test_set_*_kinds.py) call:
the schema extractor's keys and the grounding check's verdict on one small report of their own."""

from __future__ import annotations

from medscope.benchgen.extract import extract_with_rejects
from medscope.benchgen.questions import grounded
from medscope.benchgen.schema import load_schema
from tests.benchgen.heldout_abdomen import HERE


def extract_keys(schema: str, findings: str, impression: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The keys the rule extractor sets from a report against a held-out schema (a file name in
    tests/data/benchgen/heldout/), and the reject reason of every field it leaves unset."""
    values, unset = extract_with_rejects(load_schema(str(HERE / schema)), findings, impression)
    return {k: v for k, (v, _) in values.items()}, unset


def kept(question: str, options: list[str], answer: int, findings: str, impression: str = "") -> tuple[bool, str]:
    """Whether a perception question with its key is kept as grounded in the report, and the reject reason."""
    ok, _, reason = grounded({"question": question, "options": options, "answer": answer, "level": "perception"},
                             findings, impression)
    return ok, reason
