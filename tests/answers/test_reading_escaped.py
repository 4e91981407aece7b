"""Replies escaped by a post-processor (issue 48, a kind held-out set F showed): HTML entities and
literal ``\\n`` read as the model wrote them, in wording of their own (not the set's rows)."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision
from medscope.answers.markup import unwrap

Q = "Is the spleen visible in this CT slice?"


def organ(reply: str) -> str:
    return read_reply_decision("organ_presence", reply, Q, "spleen").decision


@pytest.mark.parametrize("reply, expected", [
    ("&lt;answer&gt;No&lt;/answer&gt; &ndash; the spleen isn&#39;t in this pelvic slice.", "absent"),
    ("Spleen:&nbsp;not&nbsp;seen.&nbsp;Bladder:&nbsp;distended.", "absent"),
    ("Spleen:&#160;visible in the left upper quadrant.", "present"),
    ("Findings:\\n- Spleen: not in the field of view\\n- Liver: normal", "absent"),
    ("Findings:\\n- Spleen: present, normal size\\n- Liver: normal", "present"),
])
def test_escaped_replies_read_as_written(reply, expected):
    assert organ(reply) == expected


def test_only_escapes_are_decoded():
    # an ampersand that is no entity, a reply that has real line breaks, and LaTeX's \neq stay as they are
    assert unwrap("Spleen & liver: both seen").text == "Spleen & liver: both seen"
    assert unwrap("Spleen: seen\nnote: a literal \\n stays").text.endswith("a literal \\n stays")
    assert unwrap("p \\neq 0.5; spleen seen").text == "p \\neq 0.5; spleen seen"
    assert unwrap("A&amp;E slice\\nSpleen: seen").text == "A&E slice\nSpleen: seen"
