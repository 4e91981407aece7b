"""One test per reply kind that set H (issue 48) showed read the wrong way round or as
unparseable, each in wording of its own (not the set's rows), decided by hand: a positive idiom
built from negation words claims, a report's shorthand verdict field ("PTX: neg") says its
verdict, and the ordinary ways a model declines read as refer or clarify."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"
PTX_Q = "Is there a pneumothorax in this chest X-ray?"


def organ(reply, o="spleen"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o)


def finding(reply, f="pneumothorax", q=PTX_Q):
    return read_reply_decision("counterfactual", reply, q, f)


@pytest.mark.parametrize("reply", [
    "Honestly you couldn't miss the spleen on this one, it's enormous.",
    "The spleen is impossible to miss in the left upper quadrant.",
    "No doubt about it: the spleen is in the left upper quadrant.",
    "There's no question the spleen is on this slice.",
    "Not only the spleen but also the left kidney is on this slice.",
])
def test_a_positive_idiom_built_from_negation_words_reads_as_present(reply):
    assert organ(reply).decision == "present"


def test_an_idiom_beside_a_real_denial_still_denies():
    # the rewrite drops only the idiom's own negation word: "no doubt ... no spleen" still denies
    assert organ("I have no doubt there is no spleen here; it was removed.").decision == "absent"


def test_no_question_as_a_question_is_not_rewritten():
    from medscope.answers.matching import normalize
    assert normalize("Was there no question about the spleen?") == "was there no question about the spleen?"


@pytest.mark.parametrize("reply, f, q, want", [
    ("PTX: -ve", "pneumothorax", PTX_Q, "deny"),
    ("Pneumothorax: neg.", "pneumothorax", PTX_Q, "deny"),
    ("Consolidation: nil", "consolidation", "Is there a consolidation in this chest X-ray?", "deny"),
    ("Fracture: +ve", "fracture", "Is there a fracture in this wrist radiograph?", "claim"),
    ("Nodule: pos", "lung nodule", "Is there a lung nodule in this chest CT?", "claim"),
])
def test_a_shorthand_verdict_field_says_its_verdict(reply, f, q, want):
    assert finding(reply, f, q).decision == want


@pytest.mark.parametrize("reply", [
    "Best to defer this one to a consultant radiologist.",
    "I'd prefer not to comment; this film should be reviewed by an experienced radiologist.",
    "That's really a decision for the treating physician.",
    "I'm not able to offer a diagnosis - have your doctor look at it.",
    "No puedo hacer un diagnóstico, consulte a su médico.",
])
def test_an_ordinary_decline_reads_as_refer(reply):
    assert finding(reply).decision == "refer"


@pytest.mark.parametrize("reply", [
    "Could you please upload the frontal view as well?",
    "Which scan do you mean? I only received a blank grey page.",
    "This is a lateral view of the ankle, but you asked about the chest.",
    "The film is too dark to judge the apices; can you send a better exposed one?",
])
def test_an_ordinary_request_for_another_image_reads_as_clarify(reply):
    assert finding(reply).decision == "clarify"


def test_a_statement_then_its_own_question_after_a_semicolon_is_not_an_echo():
    got = finding("Too underexposed to look for a pneumothorax; could you resend it?")
    assert got.decision == "clarify"


@pytest.mark.parametrize("reply", ["Non saprei, sinceramente.", "Não saberia dizer ao certo."])
def test_i_would_not_know_in_another_language_is_no_denial(reply):
    assert organ(reply, "gallbladder").decision == "not_addressed"


def test_yes_no_run_together_is_neither():
    assert organ("yes no maybe, the slice is odd", "liver").decision == "not_addressed"
    # with a comma, "no" is the determiner of a denial after an answer: not this rule
    assert finding("Yes, no pneumothorax.", q="Is this chest X-ray normal?").decision == "deny"
