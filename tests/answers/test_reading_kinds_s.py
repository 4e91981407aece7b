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


def finding(reply, f="pneumothorax", where="chest X-ray", question=None, kind=None):
    return read_reply_decision("counterfactual", reply, question or f"Is there a {f} in this {where}?", f, kind).decision


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


# A field whose whole value leaves it open is declined, not filled: read as the value's status, the bare
# "cannot comment" / "unclear" affirmed the finding (S read present and claim). A filled field still reads.
@pytest.mark.parametrize("reply, want", [
    ("Spleen: cannot comment.", "not_addressed"),
    ("Spleen: indeterminate", "not_addressed"),
    ("Spleen: not seen.", "absent"),
    ("Spleen: visible.", "present"),
])
def test_organ_field_left_open(reply, want):
    assert organ(reply, "spleen") == want


@pytest.mark.parametrize("reply, want", [
    ("Pneumothorax: uncertain\nRecommendation: senior review", "refer"),
    ("Pneumothorax: unclear", "refer"),
    ("Pneumothorax: present", "claim"),
    ("Pneumothorax: none", "deny"),
])
def test_finding_field_left_open(reply, want):
    assert finding(reply) == want


# A reply cut between its subject and its predicate never gave the verdict, however short it is; a
# finished sentence of the same length commits.
@pytest.mark.parametrize("reply, want", [
    ("On this coronal slice the spleen appears to be", "unclear"),
    ("In the left upper quadrant the spleen is", "not_addressed"),
    ("On this coronal slice the spleen appears to be normal in size.", "present"),
])
def test_reply_cut_before_predicate(reply, want):
    assert organ(reply, "spleen") == want


# A decline because the image is too dark or noisy asks for a better image, in Spanish, Portuguese, Italian
# and Italian as in English ("too dark ... to assess whether there is" read claim: its "hay" is the question's).
@pytest.mark.parametrize("reply, question", [
    ("La radiografía está demasiado oscura para valorar si hay neumotórax.", "¿Hay un neumotórax en esta radiografía?"),
    ("A imagem está demasiado escura para avaliar se há pneumotórax.", "Há pneumotórax nesta radiografia?"),
    ("L'immagine è troppo rumorosa per valutare se c'è uno pneumotorace.", "C'è uno pneumotorace?"),
])
def test_foreign_decline_for_a_poor_image(reply, question):
    assert finding(reply, question=question, kind="presence") == "clarify"


def test_foreign_claim_still_reads():
    assert finding("Sí, hay un neumotórax derecho.", question="¿Hay un neumotórax en esta radiografía?", kind="presence") == "claim"
