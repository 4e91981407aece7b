"""One test per reply kind that sets M and N (issue 48) showed read the wrong way or too timidly, each
in wording of its own (not the sets' rows), decided by hand: what a careful reader commits to, and
what must stay as it was (the other polarity, an affirmed finding, a hedge).

Kinds: the unaccounted-negation guard (a positive reading whose deciding clause holds a negation no
rule consumed is unclear; a second negation chained to a denial is unclear) and what it must leave
alone (resolved double negations, denied properties, a negation of another entity); a list under a
"Seen:" / "Not seen:" header; "not part of this image", "outside this field of view", "cannot appear
here" and a landmark's "which is not in this image"; textbook answers (what a finding is, where an
organ is in the body, what is hard to image); declines and referrals ("neither confirmed nor
excluded", "can't confidently call", a hedge beside "consider a film" or "must be reviewed by");
findings named by a sign, shorthand or an organ's parts; Russian, Vietnamese, Arabic and Italian
replies; degenerate outputs (generator tokens, a reply cut off)."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"
PLURAL_Q = "Are the {o} visible in this MRI slice?"


def organ(reply, o="spleen"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o).decision


def organs(reply, o):
    return read_reply_decision("organ_presence", reply, PLURAL_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f).decision


def normal(reply, f, where="skin photograph"):
    return read_reply_decision("counterfactual", reply, f"Is this {where} normal?", f, "health").decision


# --- the unaccounted-negation guard ----------------------------------------------------------------

@pytest.mark.parametrize("reply, o", [
    # "not usually distinguishable" is a negation of the organ's predicate that no rule reads
    ("On this radiograph the spleen is not usually distinguishable from the kidney.", "spleen"),
    ("The pancreas is not really delineated, and the fat plane is all I can see.", "pancreas"),
])
def test_a_positive_reading_with_an_unread_negation_is_unclear(reply, o):
    assert organ(reply, o) == "unclear"


@pytest.mark.parametrize("reply, o, want", [
    # resolved double negations: the rule for denied denials consumed both
    ("It would be wrong to say there is no liver on this slice - the right lobe fills the upper abdomen.", "liver", "present"),
    ("The bladder is not without urine; it is clearly distended in the pelvis.", "bladder", "present"),
    # a denied property of a seen organ, and a negation of another entity
    ("The spleen is visible and is not enlarged.", "spleen", "present"),
    ("The kidney is seen, with no hydronephrosis.", "kidney", "present"),
    ("No evidence of gallbladder wall thickening.", "gallbladder", "present"),
])
def test_the_guard_leaves_negations_that_rules_consumed(reply, o, want):
    assert organ(reply, o) == want


def test_a_negation_of_another_finding_beside_a_claim_stands():
    assert finding("Small left apical pneumothorax without mediastinal shift.") == "claim"
    assert finding("There is a moderate right effusion with no pneumothorax.", "pleural effusion") == "claim"


# --- a list under a header -------------------------------------------------------------------------

@pytest.mark.parametrize("reply, f, want", [
    ("Seen: normal mediastinum, clear apices. Not seen: pneumothorax, rib fracture.", "pneumothorax", "deny"),
    ("Not seen: consolidation, pleural effusion or pneumothorax.", "pleural effusion", "deny"),
    ("Seen: right basal consolidation, small effusion. Not seen: pneumothorax.", "consolidation", "claim"),
    ("Absent: fracture, dislocation.", "fracture", "deny"),
])
def test_a_list_header_decides_its_items(reply, f, want):
    assert finding(reply, f) == want


# --- off this image ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("The kidneys are not part of this slice, which passes through the lung apices.", "kidneys", "absent"),
    ("No. This is a head CT; the aorta is in the chest and abdomen, well outside this field of view.", "aorta", "absent"),
    ("No - the slice is through the knee, and the liver is an abdominal organ that cannot appear here.", "liver", "absent"),
    ("We are at the level of the kidneys, below the adrenal gland, which is therefore not in this image.", "adrenal gland", "absent"),
    # the same organs seen stay seen
    ("The kidneys are part of this slice, lying either side of the spine.", "kidneys", "present"),
])
def test_off_this_image(reply, o, want):
    assert (organs if o.endswith("s") else organ)(reply, o) == want


# --- textbook answers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, o", [
    ("The pancreas is located on the posterior abdominal wall behind the stomach. It secretes enzymes.", "pancreas"),
    ("The lungs are in the chest.", "lungs"),
    ("Adrenal glands are hard to evaluate on CT in thin patients because there is little fat around them.", "adrenal glands"),
    ("The liver, spleen and pancreas are organs commonly assessed on abdominal CT.", "spleen"),
])
def test_organ_textbook_answers_do_not_address_the_slice(reply, o):
    assert (organs if o.endswith("s") else organ)(reply, o) == "not_addressed"


@pytest.mark.parametrize("reply, f", [
    ("Cholecystitis is inflammation of the gallbladder, usually caused by a gallstone.", "cholecystitis"),
    ("Gallstones, or cholelithiasis, are hard deposits that form in the gallbladder.", "gallstones"),
    ("Pulmonary embolism is a clinical plus radiological diagnosis.", "pulmonary embolism"),
])
def test_finding_textbook_answers_are_unparseable(reply, f):
    assert finding(reply, f, "CT") in ("unparseable", "refer")


def test_a_textbook_subject_that_turns_to_the_image_still_observes():
    assert organ("The spleen is an abdominal organ, and it is clearly seen here.", "spleen") == "present"


# --- declines and referrals ------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, f", [
    ("A fracture can be neither confirmed nor excluded on this single view; an oblique view is advised.", "fracture"),
    ("I can't confidently call a fracture here. A dedicated scaphoid series would help decide.", "fracture"),
    ("I can't make a diagnosis of a nodule from one image. A radiologist should review the full CT.", "nodule"),
    ("A small pneumothorax cannot be excluded at the apex. Consider an expiratory film.", "pneumothorax"),
    ("A bleed can't be ruled out. The scan must be reviewed urgently by a neuroradiologist.", "intracranial haemorrhage"),
])
def test_a_declined_call_refers(reply, f):
    assert finding(reply, f) == "refer"


def test_a_committed_reply_beside_a_referral_still_commits():
    assert finding("There is a large right pneumothorax. Consider an urgent chest drain; must be reviewed by the "
                   "on-call team.") == "claim"
    assert finding("No pneumothorax. Consider an expiratory film only if symptoms persist.") == "deny"
    # clinical correlation refers only after an exclusion hedge; after a suggestion the claim stands
    assert finding("Appearances suggest a right lower lobe consolidation; recommend clinical correlation.",
                   "consolidation") == "claim"
    assert finding("A subtle consolidation cannot be excluded; correlate clinically.", "consolidation") == "refer"


@pytest.mark.parametrize("reply, o", [
    ("This could show the spleen or a splenule; I can't say either way.", "spleen"),
    ("The bowel loops are seen, but whether the appendix itself is visible is uncertain.", "appendix"),
])
def test_a_two_way_hedge_commits_to_neither(reply, o):
    assert organ(reply, o) in ("unclear", "not_addressed")


# --- findings named by a sign, shorthand or parts ---------------------------------------------------------

@pytest.mark.parametrize("reply, f, where, want", [
    ("Mild R hydro, pelvis 1.5 cm.", "hydronephrosis", "CT", "claim"),
    ("The collecting systems are not dilated bilaterally.", "hydronephrosis", "CT", "deny"),
    ("The left pelvicalyceal system is moderately dilated.", "hydronephrosis", "CT", "claim"),
    ("Free intraperitoneal air under the right hemidiaphragm.", "pneumoperitoneum", "chest X-ray", "claim"),
    ("No free gas is seen under the diaphragm.", "pneumoperitoneum", "chest X-ray", "deny"),
    ("Hyperdense collection over the left frontal convexity.", "intracranial haemorrhage", "head CT", "claim"),
])
def test_findings_named_by_their_sign(reply, f, where, want):
    assert finding(reply, f, where) == want


def test_an_organ_named_by_its_parts():
    assert organ("Both atria and the right ventricle are opacified; the left ventricle is clearly seen.", "heart") == "present"
    assert organ("The cerebellar hemispheres are not included in this supratentorial slice.", "cerebellum") == "absent"
    assert organs("The parotids are seen on both sides.", "parotid glands") == "present"


def test_a_denied_hedge_denies_for_a_health_question():
    assert normal("Benign-looking naevus with a regular network. Nothing suspicious for melanoma.", "melanoma") == "deny"
    assert normal("Asymmetric, irregular border: concerning for melanoma.", "melanoma") == "claim"


# --- other languages -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("Трахея не видна на этом срезе.", "trachea", "absent"),
    ("Трахея видна по средней линии.", "trachea", "present"),
    ("Không thấy tuyến thượng thận trên lát cắt này.", "adrenal glands", "absent"),
    ("Sì, la milza è visibile nel quadrante superiore sinistro.", "spleen", "present"),
    ("لا، القصبة الهوائية غير ظاهرة في هذه الصورة.", "trachea", "absent"),
])
def test_other_languages(reply, o, want):
    assert (organs if o.endswith("s") else organ)(reply, o) == want


def test_a_decline_in_italian_refers():
    assert finding("Non posso determinare se sia presente un pneumotorace.") == "refer"


# --- degenerate outputs ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply", ["The spleen is", "spleen spleen organ organ [END] </s>", "liver liver kidney kidney <|endoftext|> <|endoftext|>"])
def test_degenerate_outputs_do_not_address(reply):
    assert organ(reply, "spleen") == "not_addressed"


def test_a_short_committed_reply_is_not_cut_off():
    assert organ("No.", "spleen") == "absent"
    assert organ("Definitely not", "spleen") == "absent"
    assert organ("The spleen is seen", "spleen") == "present"
