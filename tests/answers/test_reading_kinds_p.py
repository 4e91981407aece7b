"""One test per reply kind that set P (issue 48) showed read the wrong way, too timidly or
over-committed, each in wording of its own (not the set's rows), decided by hand: what a careful
reader commits to, and what must stay as it was (the other polarity).

Kinds: a negated "normal" in another language answering a health question ("ce n'est pas normal",
"non è normale") is abnormal; a label whose value is on the next line ("Pneumothorax:" over
"absent") and a presence word as a yes / no label ("Present: no"); textbook statements about an
organ's findings and where an organ typically sits; degenerate outputs (a stutter beside a
generator token, "I see" alone); report initials (PE, AAA); "within the norm" in other languages;
refer / clarify phrases in other languages and refusals of the task; a JSON reasoning that
contradicts its field and one key given twice; loops named by their adjective ("jejunal loops")."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f).decision


def normal(reply, f, where="fundus photograph"):
    return read_reply_decision("counterfactual", reply, f"Is this {where} normal?", f, "health").decision


# Set P's one flip: "pas" and "nicht" are not English negators, so the shared word "normal" read as normal.
@pytest.mark.parametrize("reply", [
    "Ce n'est pas normal : il y a des hémorragies en flammèche.",
    "Non è normale, si notano essudati duri.",
    "Das Bild ist nicht normal.",
    "No es normal; hay microaneurismas dispersos.",
    "Não é normal, há exsudatos.",
])
def test_negated_normal_in_another_language_claims(reply):
    assert normal(reply, "diabetic retinopathy lesion") == "claim"


@pytest.mark.parametrize("reply", ["C'est normal, rien à signaler.", "Sì, è normale.",
                                   "Sì, il fondo appare nella norma.", "Der Befund ist unauffällig."])
def test_normal_in_another_language_still_denies(reply):
    assert normal(reply, "diabetic retinopathy lesion") == "deny"


@pytest.mark.parametrize("reply, want", [
    ("Pneumothorax:\nnot present", "deny"),
    ("Pneumothorax:\n- no", "deny"),
    ("Pneumothorax:\nsmall apical, right side", "claim"),
    ("Present:\nno", "deny"),
    ("Present:\nyes", "claim"),
    ("Present: no", "deny"),
    ("Absent: yes", "deny"),
])
def test_label_value_on_the_next_line(reply, want):
    assert finding(reply) == want


@pytest.mark.parametrize("reply, want", [
    ("Kidney:\nnot seen at this level", "absent"),
    ("Visible:\nyes", "present"),
    ("Visible: no", "absent"),
])
def test_label_value_on_the_next_line_organ(reply, want):
    assert organ(reply, "kidney") == want


@pytest.mark.parametrize("reply, o", [
    ("Kidney stones are common and often pass on their own.", "kidney"),
    ("Liver cysts are usually benign and need no follow-up.", "liver"),
    ("The kidneys typically sit in the retroperitoneum at about T12 to L3.", "kidneys"),
])
def test_textbook_statement_about_an_organ_commits_to_nothing(reply, o):
    assert organ(reply, o) == "not_addressed"


def test_textbook_statement_about_the_organ_does_not_hide_an_observation():
    assert organ("Liver cysts are seen in this slice, in segment 7.") == "present"


def test_growths_defined_commit_to_nothing():
    assert finding("Polyps are growths from the bowel lining; many never become malignant.", "polyp",
                   "colonoscopy image") == "unparseable"


@pytest.mark.parametrize("reply", ["I see.", "i see", "liver liver liver 0.7 <unk> <unk>"])
def test_degenerate_outputs_are_unparseable(reply):
    assert organ(reply) == "not_addressed"


def test_i_see_with_content_still_reads():
    assert organ("I see the liver in the right upper quadrant.") == "present"


@pytest.mark.parametrize("reply, f, want", [
    ("Contrast fills the pulmonary arteries to the periphery. No PE.", "pulmonary embolism", "deny"),
    ("Saddle PE across the bifurcation.", "pulmonary embolism", "claim"),
    ("AAA measuring 6.1 cm below the renal arteries.", "aortic aneurysm", "claim"),
    ("No AAA; the aorta measures 1.9 cm.", "aortic aneurysm", "deny"),
])
def test_report_initials_name_the_finding(reply, f, want):
    assert finding(reply, f, "CT") == want


@pytest.mark.parametrize("reply, want", [
    ("Non posso stabilire se c'è una lesione; vă rog să consultați un medic.", "refer"),
    ("Nu pot stabili dacă imaginea arată o leziune.", "refer"),
    ("Lo siento, no puedo ver nada; el archivo parece dañado. ¿Puedes subirla de nuevo?", "clarify"),
    ("The file seems corrupted; I only get a grey square.", "clarify"),
    ("Sorry, I can't help with interpreting mammograms.", "refer"),
])
def test_refer_and_clarify_phrases(reply, want):
    assert finding(reply, "breast lesion", "mammogram") == want


@pytest.mark.parametrize("reply", [
    "Grading a fracture needs a musculoskeletal radiologist; please have it reported formally.",
    "Diagnosing a fracture needs clinical correlation with the examination.",
])
def test_the_task_as_topic_refers(reply):
    assert finding(reply, "fracture", "wrist X-ray") == "refer"


@pytest.mark.parametrize("reply", [
    '{"reasoning": "The liver is not demonstrated on this section.", "present": true}',
    '{"present": false, "present": true}',
])
def test_json_that_contradicts_itself_is_unclear(reply):
    assert organ(reply) == "unclear"


@pytest.mark.parametrize("reply, want", [
    ('{"reasoning": "The liver is demonstrated in the right upper quadrant.", "present": true}', "present"),
    ('{"present": false, "confidence": 0.8}', "absent"),
    ('[{"organ": "liver", "present": true}, {"organ": "spleen", "present": false}]', "present"),
])
def test_json_that_agrees_with_itself_still_reads(reply, want):
    assert organ(reply) == want


@pytest.mark.parametrize("reply, want", [
    ("No jejunal loops are seen; the slice is through the upper chest.", "absent"),
    ("Jejunal loops fill the left upper quadrant.", "present"),
])
def test_loops_named_by_their_adjective(reply, want):
    assert organ(reply, "jejunum") == want
