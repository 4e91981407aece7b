"""One test per reply kind that set F (issue 48) showed read the wrong way round, each in wording of
its own (not the set's rows): the decision a careful reader gives by hand, and ``unclear`` where
two readings conflict. A wrong-way reading (a flip) is the error each guards against."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"
NORMAL_Q = "Is this chest X-ray normal?"


def organ(reply, o="spleen", q=None):
    return read_reply_decision("organ_presence", reply, q or ORGAN_Q.format(o=o), o).decision


def finding(reply, f, q, kind=None):
    return read_reply_decision("counterfactual", reply, q, f, kind).decision


@pytest.mark.parametrize("reply, o, expected", [
    # the asked organ's row, not the other rows' measurements, answers
    ("| Organ | Length (cm) | Note |\n|---|---|---|\n| Liver | 16 | Normal |\n| Spleen | \u2014 | Not in field of view |",
     "spleen", "absent"),
    ("| Organ | Length (cm) | Note |\n|---|---|---|\n| Liver | 16 | Normal |\n| Spleen | 11 | Normal |",
     "spleen", "present"),
    ("| Organ | Thickness (mm) | Content |\n|---|---|---|\n| Bladder | n/a | n/a |\n| Rectum | 3 | gas |",
     "bladder", "unclear"),  # the row gives no value: not addressed
    ("organ,seen,score\nliver,1,0.9\nspleen,0,0.8", "spleen", "absent"),
    ("organ,seen,score\nliver,0,0.9\nspleen,1,0.8", "spleen", "present"),
    ("structure,in_view\nleft kidney,TRUE\nright kidney,FALSE", "right kidney", "absent"),
    ("structure,in_view\nleft kidney,TRUE\nright kidney,FALSE", "left kidney", "present"),
])
def test_tables_and_csv_are_read_by_the_asked_row(reply, o, expected):
    assert organ(reply, o=o) == expected


def test_a_csv_verdict_column_for_a_lesion():
    assert finding("finding,detected,score\npolyp,0,0.91", "polyp", "Is there a polyp in this frame?") == "deny"
    assert finding("finding,detected,score\npolyp,1,0.91", "polyp", "Is there a polyp in this frame?") == "claim"


def test_a_soap_note_is_not_answered_by_its_plan_line():
    note = "S: 60M, flank pain.\nO: Axial CT, spleen seen in the left upper quadrant.\nA: Spleen present.\nP: None."
    assert organ(note) == "present"
    assert organ("S: 60M.\nO: Axial CT of the pelvis.\nA: Spleen not seen on this slice.\nP: Nil.") == "absent"


@pytest.mark.parametrize("reply, expected", [
    # a No about a property of the organ is not a denial of the organ
    ("> Is the spleen enlarged on this image?\n\nNo, it is about 9 cm long, which is normal.", "unclear"),
    ("Is the spleen calcified? No.", "unclear"),
    ("Is the spleen visible on this image? No, the slice is through the pelvis.", "absent"),  # the same question
])
def test_a_question_restated_as_another(reply, expected):
    assert organ(reply) == expected


def test_a_restated_question_about_a_subtype_of_the_finding():
    q = "Is there a pneumothorax on this chest X-ray?"
    assert finding("Is there a *large* pneumothorax? No, but a thin apical rim is present.", "pneumothorax", q) == "unclear"
    # the reply's own question (another verb) is no restatement: its verdict line decides
    assert finding("Could the line be a pneumothorax? More likely a skin fold.\nFinal answer: no pneumothorax.",
                   "pneumothorax", q) == "deny"


@pytest.mark.parametrize("reply, o, expected", [
    ("The slice is well below where the gallbladder lies, so it should not be on this slice.", "gallbladder", "absent"),
    ("The gallbladder fossa looks empty to me; I would call it not seen.", "gallbladder", "absent"),
    ("No gallbladder here, with the usual caveat about a contracted gallbladder after a meal.", "gallbladder", "absent"),
])
def test_landmarks_expectations_and_caveats(reply, o, expected):
    assert organ(reply, o=o) == expected


@pytest.mark.parametrize("reply, f, q, expected", [
    ("Koi polyp nahi dikh raha, mucosa saaf hai.", "polyp", "Is there a polyp in this frame?", "deny"),
    ("Polyp count: 0.", "polyp", "Is there a polyp in this frame?", "deny"),
    ("Number of polyps: 2. Both sessile.", "polyp", "Is there a polyp in this frame?", "claim"),
    ("nope, lungs look clean", "pleural effusion", "Is this chest X-ray healthy?", "unclear"),  # "no" to healthy vs clean lungs
])
def test_plain_verdicts_in_other_wordings(reply, f, q, expected):
    assert finding(reply, f, q, "health" if "healthy" in q else "presence") == expected


@pytest.mark.parametrize("reply, o, expected", [
    ("Yes, the spleen is visible. 但是，这个层面看不到脾。", "spleen", "unclear"),  # the two languages disagree
    ("Yes, the spleen is visible. 脾可见。", "spleen", "present"),  # they agree
    ("The liver is visible, pero el bazo no aparece en esta imagen.", "spleen", "absent"),
])
def test_a_reply_that_switches_language(reply, o, expected):
    assert organ(reply, o=o) == expected


def test_a_claim_taken_back_in_another_language():
    reply = "Yes, a nodule. 但再看一下，不是结节，只是血管影。"
    assert finding(reply, "lung nodule", "Is there a lung nodule on this chest X-ray?") == "unclear"


@pytest.mark.parametrize("reply, expected", [
    ("Sure, perfectly normal - if you ignore the huge pneumothorax.", "unclear"),
    ("No pneumothorax, but there is a large left effusion.", "unclear"),  # not called normal either
    ("No pneumothorax, but there is no effusion either.", "deny"),
    ("Normal, apart from old rib fractures.", "deny"),  # a report's usual phrasing
    ("Normal? With that much air outside the lung? No.", "claim"),  # the echo, then its answer
])
def test_is_it_normal_with_an_exception(reply, expected):
    assert finding(reply, "pneumothorax", NORMAL_Q, "health") == expected


@pytest.mark.parametrize("reply, expected", [
    ("Differential for the opacity:\n1. Atelectasis\n2. Pneumonia\n3. Pneumothorax (unlikely)", "refer"),
    ("Differential:\n1. Pneumothorax\n2. Skin fold\nMost likely #1.", "claim"),  # the conclusion points at it
    ("Differential:\n1. Skin fold\n2. Pneumothorax\nSo no pneumothorax after all.", "deny"),
])
def test_a_ranked_differential(reply, expected):
    assert finding(reply, "pneumothorax", "Is there a pneumothorax on this chest X-ray?") == expected


@pytest.mark.parametrize("reply, q, expected", [
    ("Bowel loops fill the pelvis.\nFinal answer: (B)", "Is the spleen visible in this CT slice? (A) Yes (B) No", "absent"),
    ("Soft tissue under the left hemidiaphragm.\n\nFinal answer: (A)", "Is the spleen visible in this CT slice? (A) Yes (B) No",
     "present"),
    ("Could be spleen or colon.\nFinal answer: (C)",
     "Is the spleen visible in this CT slice? (A) Yes (B) No (C) Cannot be determined", "not_addressed"),
    ("Soft tissue under the left hemidiaphragm.\nFinal answer: (A)", None, "unclear"),  # no options to give (A) a meaning
])
def test_a_final_option_letter(reply, q, expected):
    assert organ(reply, q=q) in ((expected,) if expected != "not_addressed" else ("not_addressed", "unclear"))


@pytest.mark.parametrize("reply, expected", [
    ("Fairly confident it isn't on this slice.", "absent"),
    ("Quite sure it is not - the slice is through the pelvis, only bladder and rectum.", "absent"),
    ("Not seen here; the left upper quadrant holds only colon.", "absent"),
    ("BLUF: not present. The slice is through the pelvis.", "absent"),
    ("Fairly confident it is there, under the left hemidiaphragm.", "present"),
    ("I was unable to identify the spleen on this image.", "absent"),
    ('{"visualised": false}', "absent"),
])
def test_verdicts_that_do_not_name_the_organ_first(reply, expected):
    assert organ(reply) == expected


@pytest.mark.parametrize("reply, f, q, expected", [
    ("Short answer: can't say.\nLong answer: a faint line at the apex could be a pneumothorax or a skin fold.",
     "pneumothorax", "Is there a pneumothorax on this chest X-ray?", ("unclear", "refer")),
    ("A shadow at the base might be consolidation, but I'd rather not commit.", "consolidation",
     "Is there consolidation on this chest X-ray?", ("unclear", "refer")),
    ("Can't rule it in, can't rule it out.", "fracture", "Is there a fracture in this radiograph?", ("refer",)),
    ("This is shown in a bone window, so the lungs can't be judged. Please send lung windows.", "nodule",
     "Is there a nodule on this chest CT?", ("clarify",)),
    ("Read more about fractures [in this article](https://example.org/fractures).", "fracture",
     "Is there a fracture in this radiograph?", ("unparseable",)),
    ("A prior frame showed a polyp; the scope has moved on and it is no longer in view.", "polyp",
     "Is there a polyp in this frame?", ("deny",)),
    # "earlier" is no history word: a polyp affirmed, then denied, is two readings
    ("Earlier in the video there was a polyp; the scope has moved on and it is no longer in view.", "polyp",
     "Is there a polyp in this frame?", ("unclear",)),
])
def test_declines_requests_and_pointers(reply, f, q, expected):
    assert finding(reply, f, q) in expected


@pytest.mark.parametrize("reply, expected", [
    ("Not seen on this slice.", "absent"), ("Fairly confident it is not on this slice.", "absent"),
    ("Not here.", "absent"), ("No.", "present"), ("Yes.", "absent"),  # a particle answers the reversed question
])
def test_an_opening_statement_keeps_its_polarity_to_a_question_about_absence(reply, expected):
    assert organ(reply, o="stomach", q="Is the stomach absent from this CT slice?") == expected


@pytest.mark.parametrize("reply, expected", [
    ("Not visible due to overlying artifact.", "clarify"),  # asks for another image, does not deny
    ("Not seen, but the image is too dark to be sure.", "clarify"),
    ("Not present.", "deny"),
])
def test_an_opening_not_seen_beside_a_request_for_another_image(reply, expected):
    assert finding(reply, "pneumothorax", "Is there a pneumothorax on this chest X-ray?") == expected
