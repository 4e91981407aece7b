"""One test per reply kind that set S (issue 48) showed read the wrong way, over-committed or too
timidly, each in wording of its own (not the set's rows, except where a test says so), decided by hand:
what a careful reader commits to, and what must stay as it was (the other polarity).

S's flips were an idiom's "never" ("I have never seen a clearer view of ...") and an XML answer made of
text elements (``<visible>no</visible>``) read as prose; its over-commitments a field that declines
("Rectum: cannot comment."), a reply cut off before its verdict, a field that is unclear beside a
referral, and a decline for a poor image in Spanish; its timid readings other languages, organs
described by their parts, signs given as the verdict and a resolved finding."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver", question=None):
    return read_reply_decision("organ_presence", reply, question or ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray", question=None):
    return read_reply_decision("counterfactual", reply, question or f"Is there a {f} in this {where}?", f).decision


# A negated comparison is emphasis: it affirms what it compares. Read as a "never", the organ read
# absent (S's flip). A plain "never seen" still denies.
@pytest.mark.parametrize("reply, want", [
    ("I have never seen a clearer view of the spleen.", "present"),
    ("I've never had a sharper image of the spleen than this one.", "present"),
    ("I have never seen the spleen on a slice this low.", "absent"),
])
def test_negated_comparison_is_emphasis(reply, want):
    assert organ(reply, "spleen") == want


# An answer made of text elements is read as the JSON verdict formats are: its verdict element
# decides, not a "no" found in the prose it makes (the uterus read present: S's flip).
@pytest.mark.parametrize("reply, want", [
    ("<answer><organ>spleen</organ><visible>no</visible><reason>splenectomy</reason></answer>", "absent"),
    ("<result><organ>spleen</organ><visible>yes</visible><note>no focal lesion</note></result>", "present"),
])
def test_xml_text_elements_read_as_fields(reply, want):
    assert organ(reply, "spleen") == want
