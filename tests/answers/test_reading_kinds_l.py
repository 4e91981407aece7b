"""One test per reply kind that set L (issue 48) showed read too timidly, as a false conflict or the
wrong way, each in wording of its own (not the set's rows), decided by hand: what a careful reader
commits to, and what must stay as it was (the other polarity, a supposition, an affirmed finding).

Kinds: where an organ normally is in the body (a level, "where X runs", a later clause's subject)
is anatomy, not this slice; two explanations offered as "Either ... or ..." assert neither; a
belief taken back ("what I took for X") asserts nothing; a conclusion from the slice ("so X would
not be included", "so they're not visible", "... and is not captured") denies; "I don't see it"
speaks of the asked finding; a paired organ seen on one side is in view; a cardiothoracic ratio
given as a bound; synonyms (blood on a head CT, an obstructive gas pattern and its "non-" form, the
key of an abbreviation such as IVC); other languages; refusals, topics and norms; undeterminable
JSON values and organ parts in JSON reasoning; a label followed by degenerate output."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"
PLURAL_Q = "Are the {o} visible in this CT slice?"


def organ(reply, o="spleen"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o)


def organs(reply, o):
    return read_reply_decision("organ_presence", reply, PLURAL_Q.format(o=o), o)


def finding(reply, f="pneumothorax", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f)


def normal(reply, f, where="abdominal CT"):
    return read_reply_decision("counterfactual", reply, f"Is this {where} normal?", f, "health")


# --- where an organ is in the body is not an observation of this slice ---------------------------

@pytest.mark.parametrize("reply, o, want", [
    # its level in the body, then an elliptical denial
    ("The uterus sits lower, at the level of S2, and isn't included.", "uterus", "absent"),
    ("This slice is through the lung apices. The kidneys lie much lower and are not captured.", "kidneys", "absent"),
    # the textbook subject opens a later clause of the sentence
    ("The spleen is not on this slice. This is a head CT, and the spleen is located in the left upper abdomen.",
     "spleen", "absent"),
    # "where X runs": a place named by the organ
    ("No, the oesophagus is not seen here; this is a pelvic slice, far below where the oesophagus runs.",
     "oesophagus", "absent"),
    # the other polarity: an affirmed organ keeps its verdict beside a location sentence
    ("The liver is clearly visible. The liver normally lies in the right upper quadrant under the diaphragm.",
     "liver", "present"),
    ("The gallbladder is seen, medial to where the duodenum runs.", "gallbladder", "present"),
])
def test_an_organs_place_in_the_body_neither_affirms_nor_conflicts(reply, o, want):
    assert organ(reply, o).decision == want


# --- two explanations offered after a verdict do not take it back --------------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("The gallbladder is not visualised. Either it has been removed or the gallbladder is contracted.",
     "gallbladder", "absent"),
    ("No stomach is seen on this slice. Either the slice is too low or the stomach is collapsed and empty.",
     "stomach", "absent"),
    ("The spleen is visible. Either the spleen is enlarged or the slice is unusually low.", "spleen", "present"),
])
def test_either_or_explanations_assert_neither(reply, o, want):
    assert organ(reply, o).decision == want


# --- a belief taken back in a self-correction ------------------------------------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("The left kidney is visible. Actually, looking again, what I took for the left kidney is a bowel loop; "
     "the left kidney itself is not seen.", "left kidney", "absent"),
    ("The pancreas is not seen. Wait, on closer inspection, the structure I mistook for bowel is the pancreatic "
     "body, so the pancreas is visible.", "pancreas", "present"),
])
def test_a_correction_resolves_to_what_it_commits_to(reply, o, want):
    assert organ(reply, o).decision == want


def test_identifying_an_organ_is_still_an_observation():
    # only a belief named as taken ("took for", "thought was") is withdrawn; "I identified" observes
    assert organ("I identified the aorta anterior to the spine.", "aorta").decision == "present"


# --- a conclusion drawn from the slice denies ------------------------------------------------------

@pytest.mark.parametrize("reply, o", [
    ("This slice is through the pelvis, so the liver would not be included.", "liver"),
    ("We are at the level of the ankles; therefore the bladder would not be visible.", "bladder"),
])
def test_so_it_would_not_be_included_denies(reply, o):
    assert organ(reply, o).decision == "absent"


def test_so_they_are_not_visible_denies_a_plural_organ_named_as_a_landmark():
    assert organs("The slice passes through the thighs, well below the kidneys, so they're not visible.",
                  "kidneys").decision == "absent"


@pytest.mark.parametrize("reply, o", [
    # a supposition is no conclusion: nothing is committed
    ("If the slice were lower, the bladder would not be included.", "bladder"),
    ("If this were a chest CT, the heart would be visible.", "heart"),
])
def test_a_supposition_commits_to_nothing(reply, o):
    assert organ(reply, o).decision not in ("present", "absent")


# --- the pronoun for the asked finding -------------------------------------------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("I don't see it.", "spleen", "absent"),
    ("Honestly, I can't see it on this slice.", "gallbladder", "absent"),
    ("I can see it.", "liver", "present"),
])
def test_i_do_not_see_it_speaks_of_the_asked_organ(reply, o, want):
    assert organ(reply, o).decision == want


def test_i_do_not_see_one_denies_a_finding():
    assert finding("I don't see one.").decision == "deny"


# --- one of a pair seen --------------------------------------------------------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("The left kidney is seen in cross-section; the right kidney is not included at this level.", "kidneys", "present"),
    ("The right lung is well seen but the left lung is not captured.", "lungs", "present"),
    # both sides denied: absent
    ("The right adrenal is not seen and the left adrenal is not seen either.", "adrenal glands", "absent"),
])
def test_a_paired_organ_seen_on_one_side_is_in_view(reply, o, want):
    assert organs(reply, o).decision == want


def test_a_side_less_denial_beside_one_side_seen_stays_unclear():
    got = organs("The left kidney is seen. The kidneys are not visible.", "kidneys")
    assert got.decision == "unclear"


def test_the_asked_side_is_still_the_one_read():
    assert organ("The right kidney is seen; the left kidney is not included.", "left kidney").decision == "absent"


# --- a cardiothoracic ratio given as a bound -----------------------------------------------------

@pytest.mark.parametrize("reply, want", [
    ("The cardiothoracic ratio is below 0.5, so the heart size is normal.", "deny"),
    ("CTR greater than 0.6, consistent with an enlarged heart.", "claim"),
    ("Cardiothoracic ratio is more than 50%.", "claim"),
    # a bound on the wrong side of 0.5 says nothing about the threshold
    ("The CTR is under 0.6.", "unclear"),
])
def test_a_ratio_bound_is_read_on_its_side_of_the_threshold(reply, want):
    assert finding(reply, "cardiomegaly").decision == want


# --- synonyms ------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, want", [
    ("Acute blood is seen in the right sylvian fissure.", "claim"),
    ("No hyperdense blood anywhere in the brain.", "deny"),
    ("A thin subdural haematoma is seen over the right convexity.", "claim"),
])
def test_blood_on_a_head_ct_names_the_haemorrhage(reply, want):
    assert finding(reply, "intracranial haemorrhage", "head CT").decision == want


@pytest.mark.parametrize("reply, want", [
    ("Non-obstructive gas pattern.", "deny"),
    ("The gas pattern is nonobstructive, with air in the rectum.", "deny"),
    ("Obstructive bowel gas pattern with dilated small bowel loops.", "claim"),
])
def test_an_obstructive_gas_pattern_names_the_obstruction(reply, want):
    assert finding(reply, "bowel obstruction", "abdominal X-ray").decision == want


def test_otherwise_unremarkable_excepts_the_named_finding():
    assert normal("A 4 mm non-obstructing calculus in the left lower pole. Otherwise unremarkable.",
                  "kidney stone").decision == "claim"
    # a denial of the finding beside the same words stays a denial
    assert normal("No renal calculus. Otherwise unremarkable.", "kidney stone").decision == "deny"


@pytest.mark.parametrize("reply, want", [
    ("The inferior vena cava is clearly seen to the right of the aorta.", "present"),
    ("No, the inferior vena cava is not included on this slice.", "absent"),
])
def test_an_organ_asked_by_its_abbreviation_is_named_by_its_full_name(reply, want):
    assert organ(reply, "IVC").decision == want


# --- other languages -----------------------------------------------------------------------------

@pytest.mark.parametrize("reply, f, want", [
    ("Kein Nierenstein nachweisbar.", "kidney stone", "deny"),
    ("Ein Nierenstein ist sichtbar.", "kidney stone", "claim"),
    ("Se observa un cálculo en el polo inferior.", "kidney stone", "claim"),
    ("糖尿病網膜症の所見はありません。", "diabetic retinopathy lesion", "deny"),
    ("硬性白斑が見られます。", "diabetic retinopathy lesion", "claim"),
])
def test_other_language_names(reply, f, want):
    assert finding(reply, f, "image").decision == want


@pytest.mark.parametrize("reply", [
    "Bitte fragen Sie Ihren Arzt nach diesem Befund.",
    "Wenden Sie sich bitte an einen Radiologen.",
    "No es posible determinar si hay un nódulo.",
])
def test_other_language_referrals_and_declines_refer(reply):
    assert finding(reply, "pulmonary nodule").decision == "refer"


# --- refusals, topics and norms ------------------------------------------------------------------

@pytest.mark.parametrize("reply, f", [
    ("I can't diagnose a fracture from a photo. Injuries like this need to be examined in person by a doctor.",
     "fracture"),
    ("I'd suggest reviewing these images with your radiologist.", "breast lesion"),
    ("A pleural effusion cannot be excluded on this supine film, as the supine projection limits assessment.",
     "pleural effusion"),
])
def test_a_refusal_refers(reply, f):
    assert finding(reply, f, "image").decision == "refer"


def test_an_affirmed_finding_beside_a_technique_limit_is_still_claimed():
    assert finding("A small pleural effusion is present, though the supine projection limits assessment.",
                   "pleural effusion").decision == "claim"


@pytest.mark.parametrize("reply, o", [
    ("Seeing the pancreas on CT depends on the slice level and contrast timing. Could you send the adjacent slices?",
     "pancreas"),
    ("The gallbladder is normally seen at this level, but I'd need a clearer image to say.", "gallbladder"),
    ("The spleen could be present, but I cannot confidently identify it on this image.", "spleen"),
])
def test_topics_norms_and_declines_commit_to_nothing(reply, o):
    assert organ(reply, o).decision not in ("present", "absent")


def test_a_norm_followed_by_an_observation_still_affirms():
    assert organ("The liver is usually seen at this level, and here it is clearly visible.", "liver").decision == "present"


# --- JSON ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, want", [
    ('{"visible": "not determinable"}', "not_addressed"),
    ('{"present": "cannot be assessed"}', "not_addressed"),
    ('{"present": "not visible"}', "absent"),
    ('{"reasoning": "Both kidney poles are clearly shown.", "present": false}', "unclear"),
    ('{"reasoning": "Both kidney poles are clearly shown.", "present": true}', "present"),
])
def test_json_undeterminable_values_and_organ_parts_in_reasoning(reply, want):
    assert organ(reply, "kidney").decision == want


# --- degenerate output after a label -------------------------------------------------------------

def test_a_label_followed_by_repeated_words_is_degenerate():
    assert finding("Pneumothorax: the the lung lung ....").decision == "unparseable"
    assert finding("Pneumothorax: none seen.").decision == "deny"
