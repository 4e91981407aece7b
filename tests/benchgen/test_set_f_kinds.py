"""Kinds of error found on held-out set F (breast mammography / ultrasound with BI-RADS, written
blind and then tuned on in this round), each worked by hand on report wordings of our own in
several organs (benchmark-MCQ paper Methods: a schema key is taken deterministically from the report
text, and a report-derived key is kept only when the report explicitly supports it; a question about
the dominant lesion takes every key from that one finding). No report here is copied from the set."""

from __future__ import annotations

from medscope.benchgen.findings import category, dominant, report_findings
from medscope.benchgen.grounding import measurements, normalize_sentence
from medscope.benchgen.questions import grounded
from medscope.benchgen.schema import load_schema
from tests.benchgen.heldout_abdomen import HERE
from tests.benchgen.kind_helpers import extract_keys as _extract


def _kept(question: str, options: list[str], answer: int, findings: str, impression: str = "") -> tuple[bool, str]:
    q = {"question": question, "options": options, "answer": answer, "level": "perception"}
    kept, _, reason = grounded(q, findings, impression)
    return kept, reason


# --- kind 1: a distance from a landmark is never a size -----------------------------------------
# (F: "3 cm from the nipple ... measuring 14 x 8 x 11 mm" keyed 20 to 49 mm; six of its ten wrong keys)

def test_distance_from_a_landmark_is_not_a_measurement_of_length():
    kinds = [k for k, _, _ in measurements(normalize_sentence(
        "Mass 6 cm from the anal verge, 2 cm deep to the skin, within 5 mm of the pleura, measuring 3.1 cm."))]
    assert kinds == ["distance", "distance", "distance", "length"]
    # "from" before a number or an earlier study is a change, not a landmark: both stay lengths
    kinds = [k for k, _, _ in measurements(normalize_sentence("Increased to 2.1 cm from 1.7 cm from the prior study."))]
    assert kinds == ["length", "length"]


def test_distance_before_the_size_is_not_the_size_kidney():
    # 4.5 cm would be "4 to 6.9 cm"; the mass itself is 18 mm, "less than 2 cm"
    keys, _ = _extract("kidney_schema.yaml", "In the right kidney, 4.5 cm from the hilum, there is a solid enhancing "
                                             "mass measuring 18 x 12 mm.")
    assert keys["lesion_size"] == "less than 2 cm"
    assert dominant(report_findings("In the right kidney, 4.5 cm from the hilum, there is a solid enhancing mass "
                                    "measuring 18 x 12 mm.", ""), "kidney")[0].size_mm == 18.0


def test_distance_after_a_place_is_not_the_size_thyroid():
    keys, _ = _extract("thyroid_schema.yaml", "Right lobe, lower pole, 1.2 cm deep to the skin: a solid hypoechoic "
                                              "nodule measuring 8 x 6 mm.")
    assert keys["nodule_size"] == "less than 1 cm"


def test_size_question_is_not_answered_by_a_distance_and_how_far_by_no_size():
    report = "A 9 mm polyp is seen in the rectum, 7 cm from the anal verge."
    assert not _kept("What is the size of the rectal polyp?", ["7 cm", "9 mm", "2 cm", "15 mm"], 0, report)[0]
    assert _kept("What is the size of the rectal polyp?", ["9 mm", "7 cm", "2 cm", "15 mm"], 0, report)[0]
    assert _kept("How far from the anal verge is the polyp?", ["7 cm", "9 mm", "2 cm", "15 mm"], 0, report)[0]
    # with no landmark written, "how far" still reads the length ("protrudes 1.8 cm into the lumen")
    assert _kept("How far does the polyp protrude into the lumen?", ["18 mm", "9 mm", "4 mm", "30 mm"], 0,
                 "A pedunculated polyp protrudes 1.8 cm into the lumen.")[0]


# --- kind 2: a restatement and the sentence after it describe the restated lesion ---------------
# (F: the impression's "BI-RADS 4A" line after "1. Right breast 9 mm mass" was read as the last
# listed, left, lesion's, so the BI-RADS 3 left mass became dominant: side, size and margin wrong)

def test_sentence_after_a_restatement_describes_the_restated_lesion_kidney():
    findings = ("Right kidney: a 1.4 cm solid enhancing mass in the upper pole. "
                "Left kidney: a 3.0 cm simple cyst in the lower pole.")
    impression = "1. Right renal 1.4 cm solid mass. Avid heterogeneous enhancement, 110 HU."
    found = report_findings(findings, impression)
    right = [f for f in found if f.side == "right"]
    left = [f for f in found if f.side == "left"]
    assert "avid heterogeneous enhancement" in right[0].text
    assert left and all("avid" not in f.text for f in left)


def test_lettered_category_ranks_within_its_number_and_picks_the_index_lesion():
    findings = ("Right breast: at 9 o'clock there is an 8 mm irregular mass. "
                "Left breast: at 2 o'clock there is a 15 mm oval circumscribed mass.")
    impression = ("1. Right breast 8 mm irregular mass. BI-RADS 4B: biopsy recommended. "
                  "2. Left breast 15 mm oval mass, probably benign. BI-RADS 3.")
    found = report_findings(findings, impression)
    dom, _ = dominant(found, "breast")
    # the smaller right mass is the higher category (4B > 3), so it is the index lesion
    assert dom is not None and dom.side == "right" and dom.size_mm == 8.0
    assert sorted(c for c in (category(f) for f in found) if c is not None) == [3, 4.2]


# --- kind 3: both of a paired organ removed leaves its lesion fields unsettled ---------------------
# (F: fat necrosis in a flap after bilateral mastectomies keyed as the breast lesion's size and margin,
# and "BI-RADS 2" as a No to a breast lesion)

def test_both_kidneys_removed_leave_the_lesion_fields_unsettled():
    report = ("History: bilateral nephrectomies for renal cell carcinoma, on dialysis. In the left renal fossa "
              "there is a 2.4 cm enhancing soft tissue nodule.")
    keys, unset = _extract("kidney_schema.yaml", report)
    assert "lesion_size" not in keys and unset["lesion_size"] == "organ_removed"
    assert "renal_lesion_present" not in keys and unset["renal_lesion_present"] == "organ_removed"


def test_one_kidney_removed_leaves_the_other_described():
    report = "Status post left nephrectomy. In the right kidney, upper pole, there is a 2.4 cm enhancing solid mass."
    keys, _ = _extract("kidney_schema.yaml", report)
    assert keys["lesion_size"] == "2 to 3.9 cm" and keys["lesion_side"] == "right kidney"
    # a partial removal of both is still not a whole removal
    keys, _ = _extract("kidney_schema.yaml", "Bilateral partial nephrectomies. A 2.4 cm enhancing solid mass in the "
                                             "right kidney, upper pole.")
    assert keys["lesion_size"] == "2 to 3.9 cm"


# --- kind 4: a RADS category given to a lymph node is no lesion of the organ ---------------------
# (F: "Abnormal 2.8 cm right axillary lymph node ... BI-RADS 4C." keyed Yes to a breast lesion)

def test_category_of_a_node_is_not_the_organs_lesion():
    schema = load_schema(str(HERE / "breast_schema.yaml"))
    field = next(f for f in schema.fields if f.name == "lesion_present")
    from medscope.benchgen.extract import study_binary
    value, _, _ = study_binary(field, ["Enlarged left axillary lymph node with a 6 mm cortex and effaced hilum.",
                                       "BI-RADS 4B."])
    assert value is None
    # the same category after a mass is the mass's
    value, _, _ = study_binary(field, ["Irregular 11 mm mass at 10 o'clock in the left breast.", "BI-RADS 4B."])
    assert value == "yes"


# --- kind 5: a finding the report explains away is no lesion ------------------------------------
# (F: "Which quadrant holds the dominant lesion?" kept as the place of an asymmetry called summation)

def test_place_of_a_finding_called_summation_or_normal_tissue_is_no_lesions_place():
    kept, reason = _kept("In which lobe is the dominant lesion?", ["Right lower lobe", "Left upper lobe", "Lingula",
                                                                  "Right upper lobe"], 0,
                         "The questioned opacity in the right lower lobe represents overlapping normal vessels on "
                         "the lateral view. No pulmonary nodule.")
    assert not kept and reason == "finding_explained_away"


# --- kind 6: "suspicious" is not "malignant"; a finding named with its place, then called X ------
# (F: "Is the additional mass at left 2 o'clock malignant?" kept Yes from "suspicious mass")

def test_named_and_placed_finding_called_malignant_needs_a_sentence_calling_it_so():
    q = "Is the additional nodule at 3 o'clock malignant?"
    report = "Additional 5 mm suspicious nodule at 3 o'clock in the anal canal, 2 cm from the known tumour."
    assert not _kept(q, ["Yes", "No"], 0, report)[0]
    assert _kept(q, ["Yes", "No"], 0, "The additional 5 mm nodule at 3 o'clock in the anal canal is malignant on "
                                      "biopsy.")[0]


# --- kind 7: a cause is kept only where a sentence states the link -------------------------------
# (F: "Is the gynecomastia caused by spironolactone?" kept from "man on spironolactone")

def test_cause_needs_a_sentence_stating_the_link():
    report = "History: on amiodarone. The liver is diffusely hyperattenuating, consistent with iodine deposition."
    kept, reason = _kept("Is the hyperattenuation caused by amiodarone?", ["Yes", "No"], 0, report)
    assert not kept and reason == "cause_not_stated"
    assert _kept("Is the hyperattenuation caused by amiodarone?", ["Yes", "No"], 0,
                 "The liver is diffusely hyperattenuating, due to amiodarone.")[0]


# --- kind 8: a clock-face position is read as its quadrant (a normalisation, like cm to mm) -------
# (F: quadrant fields left unset where the report gives only "left breast 10 o'clock"; the writer's
# rule is the ACR one, as the radiologist faces the patient; 12, 3, 6 and 9 o'clock stay unsettled)

def test_clock_position_to_quadrant_by_hand():
    from medscope.benchgen.findings import clock_quadrant
    # right breast: 9-12 upper outer, 12-3 upper inner, 3-6 lower inner, 6-9 lower outer; left mirrored
    assert clock_quadrant("mass at 10 o'clock", "right") == ("upper outer", "")
    assert clock_quadrant("mass at 10 o'clock", "left") == ("upper inner", "")
    assert clock_quadrant("mass at 4:30", "left") == ("lower outer", "")
    assert clock_quadrant("mass at 7 o'clock", "right") == ("lower outer", "")
    assert clock_quadrant("mass at 12 o'clock", "right") == (None, "clock_between_quadrants")
    assert clock_quadrant("mass at 3:00", "left") == (None, "clock_between_quadrants")
    assert clock_quadrant("mass at 2 o'clock", None) == (None, "side_not_stated")
    assert clock_quadrant("masses at 2 and at 5 o'clock, the other at 7 o'clock", "left")[0] is None


def test_quadrant_key_from_the_dominant_lesions_clock_position():
    keys, _ = _extract("breast_schema.yaml", "Ultrasound. In the right breast at 2 o'clock, 6 cm from the nipple, there "
                                             "is a 12 mm irregular hypoechoic mass with angular margins. BI-RADS 4B.")
    assert keys["lesion_quadrant"] == "upper inner quadrant" and keys["lesion_size"] == "10 to 19 mm"
    keys, unset = _extract("breast_schema.yaml", "Ultrasound. In the left breast at 9 o'clock, 3 cm from the nipple, "
                                                 "there is a 12 mm irregular hypoechoic mass. BI-RADS 4A.")
    assert "lesion_quadrant" not in keys and unset["lesion_quadrant"] == "clock_between_quadrants"
    # the words win over the clock: "retroareolar" is checked first
    keys, _ = _extract("breast_schema.yaml", "Left breast: in the retroareolar region at 10 o'clock there is a 7 mm "
                                             "intraductal mass. BI-RADS 4A.")
    assert keys["lesion_quadrant"] == "retroareolar / central"
