"""One test per reply kind that set O (issue 48) showed read too timidly or over-committed, each in
wording of its own (not the set's rows), decided by hand: what a careful reader commits to, and what
must stay as it was (the other polarity, an affirmed organ, a hedge).

Kinds: the region that holds an organ put out of the image ("the posterior fossa is not included"
for the cerebellum); an organ's edge as the slice's landmark; a denial followed by the test's own
limitation ("although CT is insensitive for ..."); secondary signs denied where the finding is not
named; declined reads ("could not be evaluated due to artefact", a field "can't tell"); referrals
("evaluation of X requires ...", "recommend a radiologist review"); advice to re-read is not a
self-correction; "Not entirely: there is X" to a health question; textbook definitions; unfilled
templates and image placeholders; each set language's negated visibility verbs, negating
determiners and declines (it, sv, no, da, nl, pl, cs, ro, el, tr, ko)."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this MRI slice?"


def organ(reply, o="cerebellum"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f).decision


def normal(reply, f, where="chest radiograph"):
    return read_reply_decision("counterfactual", reply, f"Is this {where} normal?", f, "health").decision


@pytest.mark.parametrize("reply, o", [
    ("This section runs through the centrum semiovale; the posterior fossa is not in the field of view.", "cerebellum"),
    ("Axial image at the level of the third ventricle. The posterior cranial fossa is not imaged.", "brainstem"),
    ("The cut is high on the convexity, and the sella turcica lies well below the slice.", "pituitary gland"),
    ("Upper abdominal slice through the pancreas; the pelvis is not included.", "prostate"),
])
def test_region_that_holds_the_organ_put_out_denies_it(reply, o):
    assert organ(reply, o) == "absent"


@pytest.mark.parametrize("reply, o, want", [
    # the region included, or only hedged out, or the organ itself named: its own words decide
    ("The posterior fossa is included and the cerebellar hemispheres are seen.", "cerebellum", "present"),
    ("The pelvis may not be included on this slice.", "bladder", "not_addressed"),
    # the kidney's own pelvis is not the body's pelvis
    ("The renal pelvis is not visible on this slice.", "bladder", "not_addressed"),
])
def test_region_rule_leaves_other_readings_alone(reply, o, want):
    assert organ(reply, o) == want


def test_organ_edge_as_landmark_does_not_count_as_seen():
    assert organ("No. The slice sits below the lower pole of the left kidney, so the kidney is not included.",
                 "left kidney") == "absent"
    assert organ("No - we are above the dome of the liver here, so the liver is not captured.", "liver") == "absent"
    # the organ's own tip seen on the slice is the organ seen
    assert organ("Yes, the inferior tip of the spleen is seen.", "spleen") == "present"


@pytest.mark.parametrize("reply, f", [
    ("No renal stones are seen, although a plain film misses radiolucent stones.", "renal stone"),
    ("There is no pneumothorax, though a supine film is insensitive for small anterior pneumothoraces.", "pneumothorax"),
    ("No polyp is seen; note that CT colonography is less reliable for flat polyps.", "polyp"),
])
def test_denial_then_the_tests_limitation_is_a_denial(reply, f):
    assert finding(reply, f) == "deny"


def test_limitation_does_not_turn_a_claim():
    assert finding("There is a 4 mm stone in the left kidney, although ultrasound is poor at detecting small stones.",
                   "kidney stone") == "claim"


@pytest.mark.parametrize("reply, f, where", [
    ("The gallbladder is not seen. No secondary signs such as pericholecystic fluid or wall thickening.",
     "cholecystitis", "abdominal ultrasound"),
    ("The bowel wall is not well seen; there are no indirect signs, no free gas and no fluid.", "perforation", "CT"),
])
def test_secondary_signs_denied_deny_the_unnamed_finding(reply, f, where):
    assert finding(reply, f, where) == "deny"


def test_secondary_signs_hedged_or_beside_a_positive_stay_undecided():
    # a hedge, or a positive sentence, keeps the reader from committing
    assert finding("The appendix may be dilated. No other secondary signs.", "appendicitis", "CT") != "deny"
    assert finding("Fat stranding around the caecum. No secondary signs elsewhere.", "appendicitis", "CT") != "deny"


@pytest.mark.parametrize("reply, o", [
    ("The bladder could not be evaluated because of beam hardening from the hip implants.", "bladder"),
    ("The uterus and ovaries cannot be reliably assessed due to motion.", "uterus"),
    ("Pancreas: cannot tell, the slice is too noisy.", "pancreas"),
])
def test_declined_read_is_not_present(reply, o):
    assert organ(reply, o) == "not_addressed"


def test_declined_read_refers_on_a_finding_question():
    assert finding("The lung apices could not be evaluated due to overlying clavicles.\nPneumothorax: can't tell.") == "refer"


@pytest.mark.parametrize("reply, f", [
    ("Assessment of a fracture requires dedicated views and review by an orthopaedic surgeon; please consult your doctor.",
     "fracture"),
    ("There may be a faint consolidation at the left base, but it could also be overlapping soft tissue. I'd suggest a "
     "radiologist review the lateral film.", "consolidation"),
])
def test_referrals(reply, f):
    assert finding(reply, f) == "refer"


def test_advice_to_reread_is_not_a_self_correction():
    assert organ("Whether the bowel is visible depends on the contrast phase; I suggest reviewing the portal venous series.",
                 "bowel") == "not_addressed"
    # a real self-correction still reads by its tail
    assert organ("No. Actually, on closer inspection, the liver is visible at the top of the image.", "liver") == "present"


def test_display_window_named_after_an_organ_is_not_the_organ():
    assert organ("Review this in bone windows and liver windows before deciding.", "liver") != "present"


def test_not_entirely_answers_a_health_question_no():
    assert normal("Not entirely: there is a small left apical pneumothorax.", "pneumothorax") == "claim"
    assert normal("Not completely - a 5 mm nodule projects over the right mid zone.", "nodule") == "claim"
    # to a presence question "partly" is not read as a no
    assert organ("Not entirely: only the dome of the liver is seen.", "liver") != "absent"


@pytest.mark.parametrize("reply, f", [
    ("Pneumothorax is a collection of air in the pleural space, between the lung and the chest wall.", "pneumothorax"),
    ("Pleural effusion is an abnormal collection of fluid in the pleural space.", "pleural effusion"),
])
def test_textbook_definition_is_unparseable(reply, f):
    assert finding(reply, f) == "unparseable"


def test_a_sized_finding_is_not_a_definition():
    assert finding("Pneumothorax is a small one at the right apex.") == "claim"


@pytest.mark.parametrize("reply, f", [
    ("Answer:\n\nQuestion: Is there a pneumothorax in this chest X-ray?\nAnswer:", "pneumothorax"),
    ("Findings:\n1.\n2.", "pneumothorax"),
    ("Nodule assessment:\n-", "nodule"),
])
def test_unfilled_template_is_unparseable(reply, f):
    assert finding(reply, f) == "unparseable"


def test_a_filled_label_or_an_option_letter_is_not_a_template():
    assert finding("Pneumothorax: absent") == "deny"
    assert finding("Answer: yes") == "claim"


def test_image_placeholder_with_repeated_words_is_degenerate():
    assert organ("<image> liver liver the the image image", "liver") == "not_addressed"


@pytest.mark.parametrize("reply, o, want", [
    ("La milza non è compresa in questa sezione.", "spleen", "absent"),
    ("Il fegato è compreso nella sezione.", "liver", "present"),
    ("Mjälten syns inte på denna nivå.", "spleen", "absent"),
    ("Levern syns tydligt.", "liver", "present"),
    ("Milten ses ikke på dette snit.", "spleen", "absent"),
    ("De lever is niet zichtbaar op deze coupe.", "liver", "absent"),
    ("Śledziona nie jest widoczna na tym przekroju.", "spleen", "absent"),
    ("Játra nejsou viditelná na tomto řezu.", "liver", "absent"),
    ("Splina nu este vizibilă pe această secțiune.", "spleen", "absent"),
    ("Ο σπλήνας δεν απεικονίζεται σε αυτή την τομή.", "spleen", "absent"),
    ("Η καρδιά απεικονίζεται.", "heart", "present"),
    ("Dalak bu kesitte görülmüyor.", "spleen", "absent"),
])
def test_other_languages_visibility_verbs(reply, o, want):
    assert organ(reply, o) == want


@pytest.mark.parametrize("reply, f, want", [
    ("Ingen lungblödning ses.", "haemorrhage", "deny"),
    ("Geen bloeding zichtbaar.", "haemorrhage", "deny"),
    ("Det ses en blödning i vänster hemisfär.", "haemorrhage", "claim"),
])
def test_negating_determiner_with_its_own_predicate(reply, f, want):
    assert read_reply_decision("counterfactual", reply, f"Is there a {f} on this CT?", f).decision == want


def test_declines_in_other_languages_are_not_denials():
    q = "Is there a haemorrhage on this CT?"
    for reply in ("판단할 수 없습니다.", "Jag kan inte avgöra om det finns en blödning.",
                  "Nie można ocenić, czy jest krwotok."):
        assert read_reply_decision("counterfactual", reply, q, "haemorrhage").decision in ("refer", "unclear"), reply


@pytest.mark.parametrize("reply", ["Krwotok nie jest wykluczony.", "Blödning kan inte uteslutas.",
                                   "Mogelijk een kleine bloeding.", "Πιθανή μικρή αιμορραγία."])
def test_hedges_in_the_added_languages_do_not_commit(reply):
    # "not excluded" / "cannot be excluded" / "possibly": a Polish "nie jest" or a Dutch name that looks
    # like an English typo ("bloeding") must not make a verdict
    assert read_reply_decision("counterfactual", reply, "Is there a haemorrhage on this CT?",
                               "haemorrhage").decision not in ("claim", "deny")
