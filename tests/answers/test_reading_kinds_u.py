"""One test per reply kind that set U (issue 48) read the wrong way round, each in wording of its own (not the
set's rows), decided by hand: what a careful reader commits to, and what must stay as it was (the other
polarity).

U's flips were sarcasm read literally, a dictated "know" for "no", Russian in Latin letters, a Hebrew "no" as a
JSON value, a measurement field whose value puts the organ out of view, and a transplanted kidney beside native
kidneys not seen."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver", question=None):
    return read_reply_decision("organ_presence", reply, question or ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray", question=None, kind=None):
    return read_reply_decision("counterfactual", reply, question or f"Is there a {f} in this {where}?", f, kind).decision


# Sarcasm asserts the opposite of its words; the reader cannot be sure which is meant, so it commits to neither
# (never the literal reading). A plain "Oh no" before a finding stays a claim.
def test_sarcasm_reads_unclear():
    assert organ("Oh sure, the kidney is absolutely visible — if you count a slice through the skull.", "kidney") == "unclear"
    assert finding("Oh yes, there's definitely a pneumothorax — just like in every other normal film.") == "unclear"
    assert finding("Oh no, there is a large pneumothorax on the left.") == "claim"
    assert organ("Yes, the kidney is clearly visible — both poles are on this slice.", "kidney") == "present"


# A dictation error "Know <finding> seen" is "No <finding> seen"; "know" as the verb is untouched.
def test_dictated_know_is_no():
    assert finding("Know effusion seen. Heart size normal.", "pleural effusion") == "deny"
    assert organ("Know spleen is identified on this slice.", "spleen") == "absent"
    assert finding("I know this is hard to see, but there is a pleural effusion.", "pleural effusion") == "claim"


# Russian in Latin letters reads as Russian does: "Perelom ne vyyavlen" (no fracture found) denies.
def test_romanized_russian_reads_as_russian():
    assert finding("Patologii ne vyyavleno.", "abnormality", question="What abnormality, if any, is shown on this CT?") == "deny"
    assert finding("Perelom ne vyyavlen.", "fracture", "wrist radiograph") == "deny"
    assert organ("Net, pechen' ne vidna.", "liver") == "absent"


# A Hebrew "no" / "yes" is a verdict word like the other languages' particles, also as a JSON value.
@pytest.mark.parametrize("value, want", [("לא", "absent"), ("כן", "present")])
def test_hebrew_verdict_as_json_value(value, want):
    q = 'Is the liver visible in this CT slice? Answer as JSON with a "present" field.'
    assert read_reply_decision("organ_presence", '{"present": "%s"}' % value, q, "liver").decision == want


# A measurement field whose value puts the organ out of view denies it; a measured value keeps it present.
def test_measurement_field_out_of_view():
    assert organ("Liver span: cannot be given (outside the field of view).", "liver") == "absent"
    assert organ("Liver span: 15 cm.", "liver") == "present"


# A transplanted kidney is a kidney: seen beside native kidneys not seen, the kidney is present; a transplant said
# not to be there leaves the native kidneys' denial standing.
def test_transplanted_kidney_is_a_kidney():
    q = "Is the kidney visible in this ultrasound image?"
    assert organ("Native kidneys not identified; a transplant kidney is seen in the left iliac fossa.", "kidney", q) == "present"
    assert organ("Native kidneys not identified. No renal transplant is seen.", "kidney", q) == "absent"


# The readings that committed where the reply does not (issue 48, set U, its second part).

# A conditional answered both ways commits only under each condition: it refers (an organ: not addressed). One
# condition with a plain verdict after it still commits.
def test_conditional_both_ways_does_not_commit():
    assert finding("If the film was taken in expiration, this line may be a pneumothorax; otherwise it is a skin fold.") == "refer"
    assert organ("If this is the portal venous phase, the bright organ on the left is the spleen; if not, it may be "
                 "a haematoma.", "spleen") == "not_addressed"
    assert finding("If you look at the apex, there is a large pneumothorax.") == "claim"


# "I can't reliably identify abnormalities; please consult a radiologist" is the reader's limit sent on to a person,
# not a denial of an abnormality.
def test_cannot_identify_and_consult_refers():
    q = "What abnormality, if any, is shown on this CT?"
    assert finding("I cannot confidently identify any abnormalities on this scan; please see a qualified radiologist.",
                   "abnormality", question=q) == "refer"
    assert finding("No abnormalities are identified on this scan.", "abnormality", question=q) == "deny"


# A normal alternative set against a disease alternative, each hedged, is no verdict on "Is this normal?".
def test_normal_or_disease_refers():
    q = "Is this chest radiograph normal?"
    assert finding("Hard to call. May be a normal variant; may also be early disease.", "abnormality", question=q) == "refer"
    assert finding("This is a normal variant.", "abnormality", question=q) == "deny"


# Small talk to an open question describes no finding: unparseable, not a finding claimed.
def test_small_talk_to_an_open_question_is_unparseable():
    q = "What abnormality, if any, is shown on this knee radiograph?"
    assert finding("Thank you for asking. Medical imaging is a rewarding specialty.", "abnormality", question=q) == "unparseable"
    assert finding("Great question. There is a joint effusion.", "abnormality", question=q) == "claim"


# Russian "nothing pathological found", in Cyrillic or Latin letters, denies to an open or a normality question, also
# when the row's finding is a specific one; to an organ question it says nothing of the organ being in view.
@pytest.mark.parametrize("reply", ["Ничего патологического не выявлено.", "Nichego patologicheskogo ne vyyavleno."])
def test_russian_nothing_pathological_denies(reply):
    assert finding(reply, "abnormality", question="What abnormality, if any, is shown on this hand radiograph?") == "deny"
    assert finding(reply, "fracture", question="Is this hand radiograph normal?") == "deny"
    assert finding("Выявлены патологические изменения.", "abnormality",
                   question="What abnormality, if any, is shown on this hand radiograph?") == "claim"
    assert organ("Патологии не выявлено.", "liver") == "not_addressed"
