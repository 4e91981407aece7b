"""One test per reply kind that set J (issue 48) showed read the wrong way round or committed where
a careful reader declines, each in wording of its own (not the set's rows), decided by hand:
evidence weighed against the finding denies it; where an organ lies in the body is anatomy, not
this slice; the reply that names who should read the image refers; a definition, a grading
scheme or a choice between "normal or abnormal" asserts nothing; a plural organ is named in the
singular and by its own tissue; the commonest keyboard slips name the finding; a verdict taken
back by a last "Or ..." is unclear."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"
JSON_Q = ORGAN_Q + ' Answer as JSON with "reasoning" and "present" fields.'


def organ(reply, o="spleen", question=ORGAN_Q):
    return read_reply_decision("organ_presence", reply, question.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f).decision


def health(reply, f="pleural effusion"):
    return read_reply_decision("counterfactual", reply, "Is this chest X-ray normal?", f).decision


# -- flips: evidence against the finding, and an organ's place in the body ----------------------

@pytest.mark.parametrize("reply, f", [
    ("Lung sliding is preserved on the cine, which argues against a pneumothorax.", "pneumothorax"),
    ("The cortex is continuous all the way round, arguing against a fracture.", "fracture"),
    ("The gallbladder wall is thin and there is no pericholecystic fluid; this speaks against cholecystitis.",
     "cholecystitis"),
    ("Everything here points against a pleural effusion.", "pleural effusion"),
])
def test_evidence_weighed_against_the_finding_denies_it(reply, f):
    assert finding(reply, f) == "deny"


def test_evidence_for_the_finding_still_claims_it():
    assert finding("The periappendiceal fat stranding supports appendicitis.", "appendicitis", "CT scan") == "claim"


@pytest.mark.parametrize("reply, o", [
    ("The prostate sits below the bladder base, so it is not on this slice.", "prostate"),
    ("The gallbladder lies under the liver, but it is not on this section.", "gallbladder"),
    ("The thyroid lies in the lower neck, so it isn't in this image.", "thyroid"),
])
def test_where_the_organ_lies_is_anatomy_and_the_pronoun_verdict_decides(reply, o):
    assert organ(reply, o) == "absent"


def test_where_the_organ_lies_beside_an_observation_is_present():
    assert organ("The spleen lies in the left upper quadrant, and it is seen here.") == "present"


def test_where_a_finding_lies_is_where_the_reply_sees_it():
    assert finding("The polyp is located in the rectum, 8 cm from the anal verge.", "polyp", "colonoscopy image") == "claim"


# -- the reply leaves the read to a person, or says the image is another one ---------------------

@pytest.mark.parametrize("reply", [
    "Pneumothorax assessment is beyond what I can offer; please discuss it with your doctor.",
    "I am not able to reliably detect a pneumothorax. A radiologist should review the images.",
    "Ruling out a pneumothorax should be done by a qualified clinician, so I will defer to them.",
    "You should be seen in an emergency department rather than rely on me for this.",
    "Non posso valutare questa radiografia. Si rivolga al suo medico.",
    "I'm not in a position to answer; I'd recommend a radiology review.",
])
def test_leaving_the_read_to_a_person_refers(reply):
    assert finding(reply) == "refer"


@pytest.mark.parametrize("reply", [
    "This is an MRI of the knee, not the chest.",
    "The attachment seems to be a hand radiograph; I need a chest X-ray to look for air.",
    "Is this the right or the left side? Please confirm which side was imaged.",
])
def test_another_image_or_a_request_to_confirm_it_is_clarify(reply):
    assert finding(reply) == "clarify"


# -- textbook statements and choices assert nothing ----------------------------------------------

@pytest.mark.parametrize("reply, f", [
    ("A polyp is an abnormal growth of tissue projecting from a mucous membrane.", "polyp"),
    ("A kidney stone is a hard deposit of minerals that forms in the kidney.", "kidney stone"),
    ("Gallstones are common, and many are cholesterol gallstones.", "gallstone"),
    ("Pneumothorax is diagnosed with a chest radiograph or with ultrasound.", "pneumothorax"),
    ("Fractures are classified by their pattern and displacement.", "fracture"),
])
def test_a_definition_or_a_grading_scheme_is_no_claim(reply, f):
    assert finding(reply, f) == "unparseable"


@pytest.mark.parametrize("reply", ["A fracture is a possibility at the distal radius.",
                                   "A fracture is a clear finding here."])
def test_a_finding_called_a_possibility_is_no_definition(reply):
    assert finding(reply, "fracture", "wrist X-ray") == "claim"


def test_a_choice_between_normal_and_abnormal_commits_to_neither():
    assert health("I am not in a position to call this film normal or abnormal.") not in ("claim", "deny")


@pytest.mark.parametrize("reply", ["No effusion, normal heart size and mediastinum.",
                                   "Clear costophrenic angles — no effusion, normal cardiac silhouette."])
def test_a_normal_word_after_a_reports_list_item_is_its_own_item(reply):
    # the asked finding is not named, so the health words decide
    assert health(reply, "pneumothorax") == "deny"


def test_a_normal_word_in_the_scope_of_its_own_negation_still_claims():
    assert health("The heart is not normal in size.", "cardiomegaly") == "claim"


@pytest.mark.parametrize("reply", ["Both lungs clear.", "Both lung fields clear."])
def test_lungs_clear_without_a_verb_denies_consolidation(reply):
    assert finding(reply, "consolidation") == "deny"


# -- the organ named in the singular, by its tissue, or typed in a hurry -------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("Neither kidney is seen on this slice.", "kidneys", "absent"),
    ("The left kidney is visible posteriorly.", "kidneys", "present"),
    ("Lung tissue is seen at the top of the image.", "lungs", "present"),
    ("Lung parenchyma is not included; the field of view ends at the iliac crests.", "lungs", "absent"),
    ("Neither adrenal gland is seen at this level.", "adrenal glands", "absent"),
])
def test_a_plural_organ_is_named_in_the_singular_and_by_its_tissue(reply, o, want):
    assert organ(reply, o) == want


def test_a_property_of_the_organs_tissue_still_presupposes_the_organ():
    assert organ("There is no liver parenchyma lesion.", "liver") == "present"


@pytest.mark.parametrize("reply, o, want", [
    ("no splen on this cut", "spleen", "absent"),
    ("no kidnye on this cut, only bowel", "kidney", "absent"),
    ("Only the splen is seen at this level.", "spleen", "present"),
])
def test_the_commonest_slips_in_a_short_name_are_read_as_the_name(reply, o, want):
    assert organ(reply, o) == want


def test_a_doubled_letter_slip_in_a_finding_denies_it():
    assert finding("no efusion, costophrenic angles sharp", "effusion") == "deny"


def test_another_word_one_letter_away_is_not_the_name():
    assert organ("The rectus muscle is visible anteriorly.", "rectum") == "not_addressed"


@pytest.mark.parametrize("reply, o", [
    ("The liver isn't imaged.", "liver"),
    ("No — the brain is not covered by this abdominal scan.", "brain"),
])
def test_not_imaged_or_not_covered_denies_the_organ(reply, o):
    assert organ(reply, o) == "absent"


# -- candidates, verdicts taken back, reasoning that disagrees -----------------------------------

@pytest.mark.parametrize("reply, o", [
    ("That round thing might be the spleen, might be a splenule.", "spleen"),
    ("That tubular structure could be a bowel loop, could be the gallbladder.", "gallbladder"),
])
def test_two_candidates_each_with_its_modal_commit_to_neither(reply, o):
    assert organ(reply, o) != "present"


@pytest.mark.parametrize("reply", [
    "The appendix is seen in the right iliac fossa. Or maybe not.",
    "Yes, the pancreas is visible. Actually no, that is jejunum, the pancreas is not on this slice. Or it could be both.",
])
def test_a_last_or_takes_the_verdict_back(reply):
    o = "appendix" if "appendix" in reply else "pancreas"
    assert organ(reply, o) == "unclear"


def test_or_rather_that_narrows_the_verdict_keeps_it():
    assert organ("The gallbladder is visible, or rather its fundus is.", "gallbladder") == "present"


def test_a_json_verdict_whose_reasoning_puts_the_organ_at_another_level_is_unclear():
    reply = '{"reasoning": "The kidneys lie at L1-L3 and this slice is at T11, where they are not.", "present": true}'
    assert organ(reply, "kidneys", JSON_Q) == "unclear"


@pytest.mark.parametrize("reply, o", [
    ('{"reasoning": "Status post total gastrectomy; no gastric tissue remains.", "present": false}', "stomach"),
    ('{"reasoning": "Post hysterectomy, no uterine tissue remains.", "present": false}', "uterus"),
])
def test_no_tissue_of_the_organ_left_is_its_absence_not_a_property(reply, o):
    assert organ(reply, o, JSON_Q) == "absent"


def test_a_denied_property_under_an_adjective_stays_unclear():
    assert organ('{"reasoning": "No splenic lesion.", "present": false}', "spleen", JSON_Q) == "unclear"


# -- a hedged one-word answer, and the lesions a DR grade is made of -----------------------------

@pytest.mark.parametrize("reply, want", [
    ("Possibly.", "claim"),
    ("Probably — a rim of air along the left apex.", "claim"),
    ("Possibly not.", "deny"),
    ("Quite possibly, yes.", "claim"),
])
def test_a_hedged_one_word_answer_is_read_by_the_hedge_rule(reply, want):
    assert finding(reply) == want


def test_a_hedged_yes_to_a_health_question_denies_the_finding():
    assert health("Probably.") == "deny"


@pytest.mark.parametrize("reply, want", [
    ("Scattered microaneurysms and hard exudates near the fovea.", "claim"),
    ("A few dot-blot haemorrhages in the inferior arcade.", "claim"),
    ("No microaneurysms, haemorrhages or exudates are seen.", "deny"),
    ("Diabetic retinopathy is graded into non-proliferative and proliferative forms.", "unparseable"),
])
def test_a_diabetic_retinopathy_lesion_is_named_by_its_lesions(reply, want):
    assert finding(reply, "diabetic retinopathy lesion", "fundus photograph") == want


@pytest.mark.parametrize("reply, f, where", [
    ("I can't diagnose diabetic retinopathy; please see an eye specialist.", "diabetic retinopathy lesion",
     "fundus photograph"),
    ("I can't diagnose a pneumothorax from this; please ask a radiologist.", "pneumothorax", "chest X-ray"),
])
def test_a_refusal_to_diagnose_the_finding_is_no_denial(reply, f, where):
    assert finding(reply, f, where) == "refer"
