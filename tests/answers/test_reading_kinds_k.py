"""One test per reply kind that set K (issue 48) showed read the wrong way round or committed where
a careful reader declines, each in wording of its own (not the set's rows), decided by hand.

The conflict guard: a committed verdict beside another clause about the asked finding that, read
alone, says the opposite is unclear (rule ``conflicting-evidence``), never the first or the louder
reading; a clause read wrongly on its own was fixed instead (a parenthetical "however" between
subject and predicate, "not absent", "no features that suggest X", an organ placed above or below
the field of view). Then the kinds: other languages, "not inconsistent with", a ranked differential
with the finding called most likely, words repeated in runs, a hedged mention beside a request for
more imaging, and a reply about the wrong image."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="spleen"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o)


def finding(reply, f="pneumothorax", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f)


# --- the conflict guard: two readings of the asked finding that disagree -------------------------

@pytest.mark.parametrize("reply, o", [
    # a later sentence says the opposite of the opening particle
    ("Yes, the pancreas is seen. The pancreas is not visible on this slice.", "pancreas"),
    # a pronoun clause affirms what the first clause denied
    ("The bladder is not included, and it is seen anterior to the rectum.", "bladder"),
])
def test_a_clause_that_says_the_opposite_makes_the_reading_unclear(reply, o):
    got = organ(reply, o)
    assert got.decision == "unclear" and got.rule == "conflicting-evidence"


def test_an_organ_above_the_scanned_range_is_read_absent_since_the_l_round():
    # the K round left this unclear (the location clause read as affirming); since the L round
    # "sits far above the scanned range" puts the organ off the slice and the elliptical clause agrees
    got = organ("We are at the level of the knees, so the heart sits far above the scanned range and is not captured.", "heart")
    assert got.decision == "absent"


@pytest.mark.parametrize("reply, o, want", [
    # a resolved self-correction still decides ("Actually, looking again ...")
    ("The kidney is visible. Actually, looking again, the kidney is not visible; that is bowel.", "kidney", "absent"),
    # the same verdict twice is no conflict
    ("The liver is not included. It lies above this slice.", "liver", "absent"),
    ("The gallbladder is seen. It is visible beside the liver.", "gallbladder", "present"),
    # a denied property of the organ is not a denial of the organ
    ("The kidney is visible - no stones in the kidney.", "kidney", "present"),
    # a reported first impression is not a clause that asserts
    ("At first I thought the stomach was visible, but that is colon; the stomach is not on this slice.", "stomach", "absent"),
])
def test_agreeing_or_resolved_clauses_keep_the_verdict(reply, o, want):
    assert organ(reply, o).decision == want


def test_an_opening_no_against_a_sentence_that_sees_it_is_unclear():
    # the particle rule already declines this one; the guard must not make it a verdict
    got = organ("No. The spleen is clearly visible in the left upper quadrant.")
    assert got.decision == "unclear" and got.rule == "leading-yes-no"


@pytest.mark.parametrize("reply, o, want", [
    # "X, however, is not present": the adverb does not cut the subject from its predicate
    ("I can see both kidneys. The pancreas, however, is not present here.", "pancreas", "absent"),
    ("The lungs are out of view. The heart, however, is visible.", "heart", "present"),
    # a denied absence affirms
    ("The bladder is definitely not absent: it is seen full of urine.", "bladder", "present"),
    ("The spleen is not missing in this image.", "spleen", "present"),
    # an organ placed above / below the imaged volume is off it, whatever else the sentence says
    ("The slice is through the pelvis, so the spleen lies well above the field of view.", "spleen", "absent"),
    ("This is a pelvic MRI; the liver is outside the imaged region.", "liver", "absent"),
])
def test_clause_readings_fixed_rather_than_guarded(reply, o, want):
    assert organ(reply, o).decision == want


@pytest.mark.parametrize("reply, f, want", [
    ("This is a dermatofibroma. I don't see features that suggest melanoma.", "melanoma", "deny"),
    ("There is nothing here that would suggest a pneumothorax.", "pneumothorax", "deny"),
    ("The opacity is not suggestive of consolidation; it is overlapping soft tissue.", "consolidation", "deny"),
    # the hedge alone still claims (hedged)
    ("The appearances suggest a small pneumothorax at the apex.", "pneumothorax", "claim"),
])
def test_a_denied_hedge_denies(reply, f, want):
    assert finding(reply, f).decision == want


def test_a_diff_withdraws_its_removed_lines():
    assert organ("```diff\n- spleen: visible\n+ spleen: not visible (pelvic slice)\n```").decision == "absent"
    assert organ("```diff\n- kidney: absent\n+ kidney: present\n```", "kidney").decision == "present"


# --- kinds --------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, o, want", [
    ("Sì, la testa del femore destro è visibile nell'acetabolo.", "right femoral head", "present"),
    ("No, la cabeza femoral no se observa en este corte.", "femoral head", "absent"),
    ("Nein, die Milz ist in dieser Schicht nicht abgebildet.", "spleen", "absent"),
])
def test_organ_replies_in_other_languages(reply, o, want):
    assert organ(reply, o).decision == want


@pytest.mark.parametrize("reply, f, want", [
    ("Non si osservano fratture della tibia.", "fracture", "deny"),
    ("Pas de signe de rétinopathie diabétique.", "diabetic retinopathy lesion", "deny"),
    ("Si osserva una frattura del perone.", "fracture", "claim"),
])
def test_findings_in_other_languages(reply, f, want):
    assert finding(reply, f, "X-ray").decision == want


@pytest.mark.parametrize("reply, f", [
    ("The findings are not inconsistent with a pleural effusion: the left costophrenic angle is blunted.", "pleural effusion"),
    ("Appearances are not inconsistent with a small pneumothorax at the right apex.", "pneumothorax"),
])
def test_not_inconsistent_with_claims(reply, f):
    assert finding(reply, f).decision == "claim"


def test_consistent_with_something_else_does_not_claim():
    assert finding("The appearances are consistent with atelectasis, not inconsistent with nothing else; "
                   "no pneumothorax.").decision != "claim"


@pytest.mark.parametrize("reply, f, want", [
    ("Differential:\n1. Pneumonia - most likely, given the air bronchograms\n2. Atelectasis\n3. Pulmonary oedema",
     "pneumonia", "claim"),
    # the finding is an item, another one is ranked first: no verdict
    ("Differential:\n1. Atelectasis - most likely\n2. Pneumonia\n3. Oedema", "pneumonia", "refer"),
    # no ranking: each item is a candidate
    ("Differential:\n1. Pneumonia\n2. Atelectasis", "pneumonia", "refer"),
])
def test_a_differential_with_the_finding_ranked_most_likely(reply, f, want):
    assert finding(reply, f).decision == want


@pytest.mark.parametrize("reply", ["polyp polyp colon colon colon mucosa mucosa",
                                   "fracture fracture bone bone x-ray x-ray"])
def test_words_repeated_in_runs_are_degenerate(reply):
    assert finding(reply, "polyp").decision == "unparseable"


def test_a_short_repeated_denial_is_not_degenerate():
    assert finding("No. No pneumothorax. No.").decision == "deny"


@pytest.mark.parametrize("reply, f", [
    ("A tiny apical pneumothorax cannot be excluded; an expiratory film would help clarify.", "pneumothorax"),
    ("There may be a hairline fracture of the radial head; repeat radiographs in 10 days are recommended.", "fracture"),
])
def test_a_hedged_mention_with_more_imaging_refers(reply, f):
    assert finding(reply, f).decision == "refer"


def test_a_seen_finding_with_more_imaging_still_claims():
    assert finding("There is a fracture of the radial head; further CT imaging is recommended for surgical planning.",
                   "fracture").decision == "claim"


@pytest.mark.parametrize("reply", [
    "That's an abdominal film, not a chest. Could be the wrong file?",
    "This is a hand, not a chest radiograph - please send the chest X-ray.",
])
def test_a_reply_about_the_wrong_image_asks_for_it(reply):
    assert finding(reply).decision == "clarify"
