"""One test per reply kind that set R (issue 48) showed read the wrong way, too timidly or over-committed,
each in wording of its own (not the set's rows, except where a test says so), decided by hand: what a
careful reader commits to, and what must stay as it was (the other polarity).

R's writer was asked for styles a rule reader finds hard: question kinds spelled another way
("normality"), description-only replies, nested JSON by side, multiple-choice letters, double
negations, and yes / no verdicts in languages the reader had not read (Vietnamese, Indonesian, Italian,
Portuguese, Dutch, Turkish)."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver", question=None):
    return read_reply_decision("organ_presence", reply, question or ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray", kind=None):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f, kind).decision


def normal(reply, kind="health", f="any abnormality", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is this {where} normal?", f, kind).decision


# "Is this X-ray normal?" is the health question however its kind is spelled: "No." says it is abnormal,
# a claim; read as a presence question it was a denial, the wrong way round.
@pytest.mark.parametrize("kind", ["health", "normality", "Normality", None, "some-kind-not-known"])
@pytest.mark.parametrize("reply, want", [
    ("No.", "claim"),
    ("Yes.", "deny"),
    ("No, it is not normal: there is a right pleural effusion.", "claim"),
    ("Yes, it is a normal study.", "deny"),
])
def test_health_question_kind_spellings(kind, reply, want):
    assert normal(reply, kind) == want


# "Unable to visualize X" says the reader looked for X and did not see it: absent, as "unable to see" was.
@pytest.mark.parametrize("reply, o, want", [
    ("Unable to visualise the spleen.", "spleen", "absent"),
    ("I could not visualize the gallbladder on this slice.", "gallbladder", "absent"),
    ("Could not locate the appendix.", "appendix", "absent"),
    # the other polarity stays
    ("The spleen is well visualised.", "spleen", "present"),
])
def test_unable_to_visualize(reply, o, want):
    assert organ(reply, o) == want


# A verdict given per side: the asked side's value decides; asked about no side, the sides must agree.
@pytest.mark.parametrize("reply, o, want", [
    ('{"organ": "kidney", "visible": {"left": true, "right": false}}', "right kidney", "absent"),
    ('{"organ": "kidney", "visible": {"left": true, "right": false}}', "left kidney", "present"),
    ('{"organ": "kidneys", "visible": {"left": true}}', "right kidney", "not_addressed"),
    ('{"organ": "kidneys", "present": {"left": true, "right": true}}', "kidneys", "present"),
    ('{"organ": "kidneys", "present": {"left": false, "right": true}}', "kidneys", "not_addressed"),
])
def test_json_verdict_per_side(reply, o, want):
    assert organ(reply, o) == want


# A "with" phrase describes the mention; a negation inside it is about what it names ("absent lung
# markings"), not the mention's predicate.
@pytest.mark.parametrize("reply, want", [
    ("Large left pneumothorax with absent lung markings lateral to the pleural edge.", "claim"),
    ("Tension pneumothorax with no lung markings beyond the pleural line.", "claim"),
    # the mention's own predicate still denies
    ("Pneumothorax is absent.", "deny"),
    ("No pneumothorax, with normal lung markings to the periphery.", "deny"),
])
def test_negation_inside_a_with_phrase(reply, want):
    assert finding(reply) == want


# The plain "not" of Indonesian, Dutch and Turkish negates what it precedes (follows, in Turkish), so
# "tidak normal" is not "normal": read as English, the bare "normal" answered "Is this normal?" yes.
@pytest.mark.parametrize("reply, want", [
    ("Tidak, gambar ini tidak normal; terdapat efusi pleura.", "claim"),
    ("Tidak normal.", "claim"),
    ("Bu görüntü normal değil.", "claim"),
    ("Nee, deze foto is niet normaal.", "claim"),
    # the other polarity stays
    ("Gambar ini normal, tidak ada kelainan.", "deny"),
    ("Ya, gambar ini normal.", "deny"),
])
def test_foreign_not_before_normal(reply, want):
    assert normal(reply) == want


# Options lettered "A. ..." or "A: ..." are options as "(A) ..." are: the chosen letter is read as its text.
@pytest.mark.parametrize("reply, o, want", [
    ("B", "spleen", "absent"),
    ("Answer: A", "spleen", "present"),
    ("(B)", "spleen", "absent"),
])
def test_lettered_options_with_a_dot(reply, o, want):
    assert organ(reply, o, question=f"Is the {o} visible in this CT slice? A. Yes B. No") == want


@pytest.mark.parametrize("reply, want", [
    ("A", "deny"),  # "None": no abnormality
    ("C", "claim"),
])
def test_lettered_options_open_question(reply, want):
    q = "What is shown in this chest X-ray? A: None B: Pneumothorax C: Rib fracture"
    assert read_reply_decision("counterfactual", reply, q, "any abnormality", "open").decision == want


# A denied "not normal" ("nothing that isn't normal") says all is normal; the inner "not normal" alone is
# not the reply's verdict.
@pytest.mark.parametrize("reply, want", [
    ("Nothing on this film is not normal.", "deny"),
    ("There is no area that doesn't look normal.", "deny"),
    ("I can't find anything that is not normal here.", "deny"),
    # the other polarity stays
    ("I see something that is not normal.", "claim"),
    ("I don't think it's normal.", "claim"),
])
def test_nothing_that_is_not_normal(reply, want):
    assert normal(reply) == want
