"""The probe's reply reading and the shared reader against hand-labelled tables.

``tests/data/probe_replies.jsonl``: probe replies in the three output formats, written from the
reader's blind side (null / unclear / nested / string-typed verdicts, negated values, hedges,
organ synonyms, laterality, "not visualised" vs "absent" vs "surgically absent") and labelled
present / absent / not_addressed by reading. ``medscope/answers/data/replies_item6.jsonl``:
replies of the kinds that flipped on a hidden table (self-correction, post-negation, a verdict
after a final colon, JSON keyed by the finding, health-question denials), labelled claim / deny.
Both were written and committed before the rules they check (first-run figures: docs/answers.md).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from medscope.answers.corpus import decision, load_jsonl_table
from medscope.answers.matching import read_free_text
from medscope.protocols.organ_presence.replies import read_reply
from medscope.volumes.config import DEFAULT_HEDGES

PROBE_TABLE = [json.loads(line) for line in (Path(__file__).parents[2] / "data" / "probe_replies.jsonl").read_text().splitlines()]
ITEM6 = load_jsonl_table("replies_item6.jsonl")


def test_tables_are_large_enough_and_cover_their_kinds():
    assert len(PROBE_TABLE) >= 150 and len(ITEM6) >= 150
    fmts = Counter(r["format"] for r in PROBE_TABLE)
    assert set(fmts) == {"free_text", "verdict_json", "reasoning_json"} and min(fmts.values()) >= 30
    kinds = {r["kind"] for r in PROBE_TABLE}
    assert {"null", "unclear", "nested", "string", "negated", "hedge", "synonym", "laterality", "not-visualised",
            "surgical", "absent", "final"} <= kinds
    assert Counter(r.style for r in ITEM6).keys() == {"self-correction", "post-negation", "final-colon",
                                                       "json-finding-key", "health-denial"}


@pytest.mark.parametrize("row", PROBE_TABLE, ids=lambda r: f"{r['format']}-{r['kind']}-{r['reply'][:30]}")
def test_probe_reply(row):
    got = read_reply(row["reply"], row["format"], list(DEFAULT_HEDGES), organ=row["organ"], question=row["question"])
    assert got.verdict == row["expect"]


def test_probe_table_zero_flips_and_unresolved_fields_not_addressed():
    flips = unresolved_present = 0
    for row in PROBE_TABLE:
        v = read_reply(row["reply"], row["format"], list(DEFAULT_HEDGES), organ=row["organ"], question=row["question"]).verdict
        flips += {v, row["expect"]} == {"present", "absent"}
        unresolved_present += row["kind"] in ("null", "unclear") and v != "not_addressed"
    assert (flips, unresolved_present) == (0, 0)


@pytest.mark.parametrize(
    "reply, fmt, clean",
    [
        ('{"present": false, "reason": "x"}', "verdict_json", True),  # the format's own verdict field
        ('{"presence": {"spleen": false}}', "reasoning_json", True),
        ('{"present": "unclear"}', "verdict_json", False),  # parsed, but the verdict did not resolve
        ("No, the spleen is not visible.", "verdict_json", False),  # resolved, but not as JSON
        ('<final>{"action": "answer", "answer": "No"}</final>', "verdict_json", False),
        ('{"present": fal', "verdict_json", False),
        ('{"present": true, "reason": "x"}\nFinal answer: No, the spleen is not visible.', "verdict_json", False),
        ("No.", "free_text", True),
        ("I cannot determine this.", "free_text", False),
    ],
)
def test_clean_resolution_is_the_parse_rate(reply, fmt, clean):
    assert read_reply(reply, fmt, ["x"], organ="spleen").clean is clean


def test_a_verdict_line_after_the_json_outranks_it():
    r = read_reply('{"present": true, "reason": "x"}\nFinal answer: No, the spleen is not visible.', "verdict_json",
                   ["x"], organ="spleen")
    assert (r.verdict, r.clean) == ("absent", False)


@pytest.mark.parametrize("row", ITEM6, ids=lambda r: f"{r.style}-{r.reply[:30]}")
def test_item6_reply(row):
    assert decision(*read_free_text(row.reply, row.question, row.finding, row.kind)) == row.expect


def test_item6_zero_flips():
    flips = sum({decision(*read_free_text(r.reply, r.question, r.finding, r.kind)), r.expect} == {"claim", "deny"}
                for r in ITEM6)
    assert flips == 0
