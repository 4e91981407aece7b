"""Kinds of error found on held-out set E (prostate MRI, tuned on in this round), each worked by
hand on our own report wordings in several organs (benchmark-MCQ paper Methods, "report-grounded
check": a key is kept only when the report explicitly supports it)."""

from __future__ import annotations

import pytest

from medscope.benchgen.questions import grounded


def _kept(question: str, options: list[str], answer: int, findings: str, impression: str) -> bool:
    q = {"question": question, "options": options, "answer": answer, "level": "perception"}
    return grounded(q, findings, impression)[0]


# Two lesions at different levels: the level of one is never the answer for the other.
TWO_LEVELS = ("LESION 1: Right lobe of the liver at the dome, 30 mm, arterially enhancing. "
              "LESION 2: Left lobe of the liver at the caudal tip, 8 mm, arterially enhancing. LR-4.", "")


@pytest.mark.parametrize("answer, kept", [(0, False)])
def test_asked_attribute_does_not_hide_the_asked_lesion(answer, kept):
    # "At what level is the left lesion?": "level" is what is asked, not a word the lesion's text must
    # hold; read that way the left lesion is found, and the right lesion's dome is no answer for it
    assert _kept("At what level is the left liver lesion?", ["Dome", "Caudal tip"], answer,
                 *TWO_LEVELS) is kept


def test_apical_adjective_names_the_lesion_at_the_apex():
    # "the apical lesion" is the lesion at the apex: the basal lesion's score is no answer for it
    findings = ("LESION 1: Left peripheral zone at the apex, 16 x 9 mm, mild restriction. PI-RADS 3. "
                "LESION 2: Right peripheral zone at the base, 10 x 6 mm, marked restriction. PI-RADS 4.")
    opts = ["PI-RADS 4", "PI-RADS 3"]
    assert not _kept("What is the PI-RADS category of the left apical lesion?", opts, 0, findings, "")


@pytest.mark.parametrize("question", ["Is the right adrenal nodule an adenoma?",
                                      "Is the left breast mass a fibroadenoma?"])
def test_yes_needs_a_sentence_calling_the_finding_so(question):
    # the sentence that places and sizes the finding says nothing of what it is; the only naming is
    # hedged ("may represent", "cannot be excluded"), so Yes is not asserted
    findings = ("A 14 mm nodule in the right adrenal gland, 12 HU. A 9 mm mass in the left breast, "
                "oval and circumscribed.")
    impression = "Both are indeterminate; this may represent an adenoma, and a fibroadenoma cannot be excluded."
    assert not _kept(question, ["Yes", "No"], 0, findings, impression)


def test_yes_kept_when_a_sentence_calls_the_finding_so():
    findings = "A 14 mm nodule in the right adrenal gland measures 8 HU."
    impression = "The right adrenal nodule is an adenoma."
    assert _kept("Is the right adrenal nodule an adenoma?", ["Yes", "No"], 0, findings, impression)


# --- the dominant lesion: a category the report assigns outranks size ------------------------

def _extract(schema_name: str, findings: str, impression: str = "") -> dict[str, str]:
    from medscope.benchgen.extract import extract_with_rejects
    from medscope.benchgen.schema import load_schema
    from tests.benchgen.heldout_abdomen import HERE
    values, _ = extract_with_rejects(load_schema(str(HERE / schema_name)), findings, impression)
    return {k: v for k, (v, _) in values.items()}


def test_higher_category_is_dominant_over_a_larger_lesion_thyroid():
    # the 24 mm nodule (TR3) is written first and is larger; the 12 mm TR5 nodule is the index one
    keys = _extract("thyroid_schema.yaml",
                    "Nodule 1: right lobe, lower pole, 24 x 15 mm, spongiform. ACR TI-RADS 3. "
                    "Nodule 2: left lobe, upper pole, 12 x 9 mm, solid and markedly hypoechoic. ACR TI-RADS 5.")
    assert keys["nodule_lobe"] == "left lobe"
    assert keys["nodule_size"] == "1 to 1.4 cm"


def test_same_category_falls_back_to_size_and_larger_question_reads_size():
    from medscope.benchgen import findings as findmod
    found = findmod.report_findings("Lesion A: segment 7, 31 mm, LR-4. Lesion B: segment 3, 18 mm, LR-5.", "",
                                    {"lesion"})
    assert findmod.dominant(found)[0].size_mm == 18.0      # LR-5 outranks the larger LR-4
    assert findmod.dominant(found, by_category=False)[0].size_mm == 31.0   # "the larger lesion"
    tie = findmod.report_findings("Lesion A: 31 mm, LR-4. Lesion B: 18 mm, LR-4.", "", {"lesion"})
    assert findmod.dominant(tie)[0].size_mm == 31.0


def test_overall_category_is_the_dominant_lesions():
    keys = _extract("prostate_schema.yaml",
                    "Lesion 1: left transition zone at the base, 18 mm, PI-RADS 2. "
                    "Lesion 2: right peripheral zone at the apex, 8 mm, PI-RADS 5.")
    assert keys["pirads_category"] == "PI-RADS 5"
    assert keys["lesion_side"] == "right"


# --- a removed organ: its own fields are not settled by a nodule in its bed -------------------

def test_total_thyroidectomy_bed_nodule_is_no_thyroid_nodule():
    from medscope.benchgen.extract import extract_with_rejects
    from medscope.benchgen.schema import load_schema
    from tests.benchgen.heldout_abdomen import HERE
    schema = load_schema(str(HERE / "thyroid_schema.yaml"))
    findings = ("History: total thyroidectomy for papillary carcinoma in 2019. In the right thyroid bed there is "
                "a 7 mm hypoechoic nodule. No cervical lymphadenopathy.")
    values, unset = extract_with_rejects(schema, findings, "")
    assert unset["thyroid_nodule_present"] == "organ_removed"
    assert unset["nodule_size"] == "organ_removed" and "nodule_lobe" not in values
    assert values["cervical_lymphadenopathy"][0] == "no"   # a field outside the removed organ stays


def test_partial_removal_leaves_the_organ_and_absent_prostate_removes_it():
    from medscope.benchgen import findings as findmod
    assert not findmod.organ_removed("status post right hemithyroidectomy. left lobe nodule, 12 mm.", "thyroid")
    assert not findmod.organ_removed("distal pancreatectomy in 2020; the pancreatic head is normal.", "pancreas")
    assert findmod.organ_removed("the prostate and seminal vesicles are surgically absent.", "prostate")
    assert findmod.organ_removed("post total pancreatectomy.", "pancreas")
    assert not findmod.organ_removed("left nephrectomy in 2015.", "kidney")   # the other kidney remains


# --- partial denials: one of a pair, or some sequences only ------------------------------------

def _unset(schema_name: str, findings: str, impression: str = "") -> dict[str, str]:
    from medscope.benchgen.extract import extract_with_rejects
    from medscope.benchgen.schema import load_schema
    from tests.benchgen.heldout_abdomen import HERE
    return extract_with_rejects(load_schema(str(HERE / schema_name)), findings, impression)[1]


def test_denial_of_one_seminal_vesicle_leaves_the_pair_unsettled():
    unset = _unset("prostate_schema.yaml", "Seminal vesicles: T1-bright blood products in the right seminal vesicle, "
                   "without invasion. No lymphadenopathy.")
    assert unset["seminal_vesicle_invasion"] == "only_partial_denial"


def test_denial_on_some_sequences_does_not_settle_presence():
    # pancreas: the arterial phase is degraded; only the portal venous phase is read
    unset = _unset("pancreas_schema.yaml", "Arterial phase degraded by motion. No focal pancreatic lesion on the "
                   "portal venous phase images.", "A small pancreatic lesion cannot be excluded.")
    assert unset["pancreatic_lesion_present"] == "only_partial_denial"
    unset = _unset("prostate_schema.yaml", "DWI is non-diagnostic. No suspicious lesion on T2-weighted or DCE "
                   "images.", "A small lesion cannot be excluded.")
    assert unset["prostate_lesion_present"] == "only_partial_denial"


def test_one_of_a_pair_rule():
    from medscope.benchgen.extract import _one_of_a_pair
    assert _one_of_a_pair("Is there seminal vesicle invasion?", "Haemorrhage in the left seminal vesicle, without invasion.")
    assert not _one_of_a_pair("Is there seminal vesicle invasion?", "Both seminal vesicles are free of tumour; the left is small.")
    assert not _one_of_a_pair("Is the left ovary normal?", "The left ovary is normal.")


# --- a denial under another organ's heading ----------------------------------------------------

@pytest.mark.parametrize("schema_name, field, findings, settled", [
    ("kidney_schema.yaml", "renal_lesion_present", "LIVER: No focal lesion. KIDNEYS: Normal in size.", False),
    ("pancreas_schema.yaml", "pancreatic_lesion_present", "LIVER: No focal lesion. SPLEEN: Normal.", False),
    # the asked organ's own heading still denies
    ("kidney_schema.yaml", "renal_lesion_present", "LIVER: Steatosis. KIDNEYS: No focal lesion.", True),
])
def test_denial_under_another_organs_heading_is_no_denial(schema_name, field, findings, settled):
    from medscope.benchgen.extract import extract_with_rejects
    from medscope.benchgen.schema import load_schema
    from tests.benchgen.heldout_abdomen import HERE
    values, _ = extract_with_rejects(load_schema(str(HERE / schema_name)), findings, "")
    assert (values.get(field, (None,))[0] == "no") is settled


# --- a favoured cause is a hedge; a prior category is not the current one ------------------------

def test_favoured_cause_is_not_asserted():
    findings = "The liver is enlarged, 19 cm, and diffusely hypodense."
    impression = "Hepatomegaly. The diffuse hypodensity favours steatosis as the cause of the hepatomegaly."
    assert not _kept("Is the hepatomegaly caused by steatosis?", ["Yes", "No"], 0, findings, impression)


def test_prior_category_is_not_the_current_one():
    findings = "The left breast mass is now BI-RADS 5, upgraded from BI-RADS 4."
    q = "What is the current BI-RADS category of the mass?"
    assert not _kept(q, ["BI-RADS 4", "BI-RADS 3", "BI-RADS 2"], 0, findings, "")
    assert _kept(q, ["BI-RADS 5", "BI-RADS 3", "BI-RADS 2"], 0, findings, "")


# --- a contrast is not the lesion's place; a junction of two places is neither ------------------

@pytest.mark.parametrize("question, findings", [
    ("Is the left adrenal finding a normal asymmetric adrenal limb?",
     "LEFT ADRENAL: an asymmetric 14 mm nodular thickening of the medial limb, low in attenuation, distinct from "
     "the symmetric normal adrenal limb on the right."),
    ("Is the splenic finding a normal lobulated spleen?",
     "A lobulated 2 cm hypoenhancing focus at the splenic hilum, distinct from the normal lobulated spleen contour."),
])
def test_what_a_lesion_is_distinct_from_is_not_asserted_of_it(question, findings):
    assert not _kept(question, ["Yes", "No"], 0, findings, "")


@pytest.mark.parametrize("answer", [0, 1])
def test_junction_of_two_parts_answers_neither(answer):
    findings = "A 22 mm hypoenhancing mass at the junction of the pancreatic body and tail."
    assert not _kept("In which part of the pancreas is the mass?", ["Body", "Tail", "Head"], answer, findings, "")


# --- "in centimetres" asks for a unit, not for a sentence that writes it --------------------------

@pytest.mark.parametrize("question, options, findings", [
    ("What is the size of the lesion in centimetres?", ["0.9 cm", "9 cm", "0.7 cm"],
     "Liver: a 9 x 7 mm hypodense lesion in segment 6. The spleen measures 11 cm."),
    ("What is the size of the nodule in millimetres?", ["16 mm", "1.6 mm", "11 mm"],
     "Right lobe: a solid nodule, 1.6 x 1.1 cm. The left lobe measures 14 mm in thickness."),
])
def test_size_asked_in_the_other_unit_is_read_from_the_lesions_sentence(question, options, findings):
    assert _kept(question, options, 0, findings, "")
    assert not _kept(question, options[1:] + options[:1], 0, findings, "")   # 9 cm / 1.6 mm are not it
