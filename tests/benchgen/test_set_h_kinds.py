"""Kinds of error found on held-out set H (scrotal ultrasound / MRI, written blind and then tuned on in
this round), each worked by hand on report wordings of our own in several organs (benchmark-MCQ paper
Methods: a schema key is taken deterministically from the report text, and a report-derived key is
kept only when the report explicitly supports it; a question about the dominant lesion takes every
key from that one finding). No report here is copied from the set."""

from __future__ import annotations

from medscope.benchgen.extract import paired_subject_side
from medscope.benchgen.findings import _sizes, dominant, report_findings
from medscope.benchgen.grounding import normalize_sentence, prior_length
from tests.benchgen.kind_helpers import extract_keys as _extract, kept as _kept


# --- kind 1: a denial about one of a pair of organs never settles the side-free field -----------------
# (H: "The right testis is normal, with no focal lesion" beside a left testicular mass keyed the whole
# field's No: three wrong keys)

def test_one_kidney_cleared_leaves_the_side_free_field():
    findings = ("There is a 2.6 cm solid enhancing mass in the upper pole of the left kidney. "
                "The right kidney is normal in size, with no focal renal lesion.")
    got, unset = _extract("kidney_schema.yaml", findings)
    # by hand: the left kidney has a mass, so the field is Yes, never the right kidney's No
    assert got["renal_lesion_present"] == "yes"
    # with the left kidney not described at all, the right one's denial settles nothing
    got, unset = _extract("kidney_schema.yaml", "The right kidney measures 11 cm, with no focal renal lesion.")
    assert "renal_lesion_present" not in got and unset["renal_lesion_present"] == "only_partial_denial"


def test_each_of_a_pair_cleared_in_turn_is_the_whole_no():
    findings = ("The right kidney is normal, with no focal renal lesion. "
                "The left kidney is normal, with no focal renal lesion.")
    got, _ = _extract("kidney_schema.yaml", findings)
    assert got["renal_lesion_present"] == "no"
    # "both" before the denial clears the pair in one sentence
    got, _ = _extract("kidney_schema.yaml", "Both kidneys are normal in size, with no focal renal lesion.")
    assert got["renal_lesion_present"] == "no"


def test_paired_subject_side_by_hand():
    # the nearest side-named paired organ before the denial decides (ovary, breast, lung, adrenal)
    assert paired_subject_side(normalize_sentence("The left ovary is normal, with ")) == {"left"}
    assert paired_subject_side(normalize_sentence("The right breast is heterogeneously dense, with ")) == {"right"}
    assert paired_subject_side(normalize_sentence("Right and left adrenal glands are normal, ")) == {"left", "right"}
    # an unpaired organ (liver) names no side of a pair; "both" clears the pair
    assert paired_subject_side(normalize_sentence("The left lobe of the liver is normal, with ")) == set()
    assert paired_subject_side(normalize_sentence("The left lung and both lungs otherwise show ")) == set()


def test_category_said_of_one_lesion_is_not_narrowed():
    # "O-RADS 2" of a left ovarian dermoid is the study's category, not a side-limited denial
    got, _ = _extract("adnexa_schema.yaml", "A 3 cm left ovarian dermoid, O-RADS US 2.")
    assert got["lesion_present"] == "no"


# --- kind 2: a size in a clause set in an earlier study is a prior size ------------------------------
# (H: "Comparison: <date>, when the right testicular lesion measured 7 mm" keyed as the current 7 mm,
# and "On the 2025 study the right lesion measured 12 mm" kept as the current size)

def test_comparison_line_length_is_prior():
    s = normalize_sentence("Comparison: CT of 4 May 2025, when the left renal cyst measured 31 mm.")
    assert _sizes(s) == ((), 31.0)
    s = normalize_sentence("On the previous ultrasound the thyroid nodule measured 9 mm.")
    assert _sizes(s) == ((), 9.0)
    s = normalize_sentence("On the 2024 study the right adrenal nodule measured 14 mm")
    assert prior_length(s, s.index("14"))
    # "now" after the earlier study's words: the length is today's
    s = normalize_sentence("On the prior study it measured 9 mm; it now measures 13 mm.")
    assert _sizes(s) == ((13.0,), 9.0)


def test_comparison_line_lesion_is_the_earlier_view():
    findings = ("Comparison: CT of 4 May 2025, when the left renal mass measured 1.5 cm. "
                "The solid enhancing mass in the lower pole of the left kidney now measures 3.2 cm.")
    found = report_findings(findings, "")
    # the comparison line's mass is no candidate ("when" also reads as a conditional: not present either way)
    assert [f.status == "present" for f in found] == [False, True]
    got, _ = _extract("kidney_schema.yaml", findings)
    # by hand: 32 mm today, in the bin 2 to 3.9 cm (the prior 15 mm would read "less than 2 cm")
    assert got["lesion_size"] == "2 to 3.9 cm"
    f, why = dominant(found, "kidney")
    assert why == "" and f.size_mm == 32.0


def test_prior_size_is_no_current_size_answer():
    findings = ("The right adrenal nodule is unchanged in appearance. On the 2024 study the right adrenal "
                "nodule measured 14 mm.")
    options = ["14 mm", "9 mm", "20 mm", "30 mm"]
    kept, _ = _kept("What is the current size of the right adrenal nodule?", options, 0, findings)
    assert not kept
    kept, _ = _kept("What was the size of the right adrenal nodule in 2024?", options, 0, findings)
    assert kept


# --- kind 3: the largest lesion called benign beside a smaller suspicious one ------------------------
# (H: a 14 mm simple cyst beside a 9 mm solid vascular nodule: the writer's "suspicious, then largest"
# and the documented "the largest" disagree; three wrong keys)

def test_benign_largest_beside_suspicious_smaller_is_no_pick_kidney():
    findings = ("There is a 4.5 cm simple cyst in the upper pole of the right kidney. In the lower pole of "
                "the left kidney there is a 1.8 cm solid enhancing mass, suspicious for renal cell carcinoma.")
    got, unset = _extract("kidney_schema.yaml", findings)
    for field in ("lesion_side", "lesion_size", "lesion_pole"):
        assert field not in got and unset[field] == "no_dominant_lesion:suspicious_not_largest"


def test_benign_largest_alone_or_unsuspicious_neighbour_stays_dominant():
    # two simple cysts: no suspicion, so the larger (45 mm) is the dominant one, on the right
    findings = ("There is a 4.5 cm simple cyst in the upper pole of the right kidney. A 1.2 cm simple cyst "
                "in the lower pole of the left kidney.")
    got, _ = _extract("kidney_schema.yaml", findings)
    assert got["lesion_side"] == "right kidney" and got["lesion_size"] == "4 to 6.9 cm"
    # "no solid component" denies the suspicion word: the cyst is not suspicious
    f, why = dominant(report_findings("A 30 mm simple cyst of the liver with no solid component. A 12 mm "
                                      "simple cyst of the liver.", ""), "liver")
    assert why == "" and f.size_mm == 30.0


# --- kind 4: a condition named as a risk is no finding ------------------------------------------------
# (H: "a risk factor for germ cell neoplasia in situ" kept as a Yes to "Is there GCNIS?")

def test_risk_factor_is_not_asserted():
    findings = "The liver is cirrhotic with a nodular contour. No focal liver lesion."
    impression = "Cirrhosis, a risk factor for hepatocellular carcinoma; surveillance ultrasound in 6 months."
    kept, _ = _kept("Is there hepatocellular carcinoma?", ["Yes", "No"], 0, findings, impression)
    assert not kept
    kept, _ = _kept("Is there a breast cancer?", ["Yes", "No"], 0,
                    "Extremely dense breasts. No mass.", "The patient is at increased risk of breast cancer.")
    assert not kept
    # the finding itself, said outright, is kept
    kept, _ = _kept("Is the liver cirrhotic?", ["Yes", "No"], 0, findings, impression)
    assert kept


# --- kind 5: no dominant lesion where the report denies the asked lesion outright ---------------------
# (H: "Neither testis contains a focal lesion" and an inflamed epididymis's increased flow kept as "the
# dominant lesion's" vascularity)

def test_dominant_lesion_feature_not_taken_from_diffuse_change():
    findings = ("The pancreas is diffusely swollen with peripancreatic fat stranding and increased "
                "enhancement, in keeping with acute pancreatitis. No focal pancreatic lesion.")
    kept, reason = _kept("What is the enhancement of the dominant lesion?", ["Increased", "Absent", "Normal"], 0,
                         findings)
    assert not kept and reason == "no_lesion_reported"
    # a lesion the report does describe still answers
    kept, _ = _kept("Does the dominant lesion enhance?", ["Yes", "No"], 0,
                    "A 2 cm enhancing lesion in the pancreatic tail.")
    assert kept


# --- kind 6 (found on F while scoring this round): the question's own qualifier narrows nothing -------

def test_denial_qualified_as_the_question_is_covering():
    # "Are there suspicious calcifications?": "no suspicious calcifications" denies exactly what is asked
    # (the side-limited "Right breast: ..." alone would leave it unset; the whole-study denial settles it)
    got, _ = _extract("breast_schema.yaml", "Right breast: no suspicious mass or calcifications. "
                                            "No suspicious calcifications.")
    assert got["suspicious_calcifications"] == "no"
    # one of a choice ("solid or complex") is part of what is asked: the complex ones are left unsaid
    got, unset = _extract("scrotum_schema.yaml", "Both testes are of normal size, with no solid lesion.")
    assert "lesion_present" not in got and unset["lesion_present"] == "only_partial_denial"
