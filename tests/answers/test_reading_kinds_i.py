"""One test per reply kind that set I (issue 48) showed read the wrong way round or committed
where a careful reader declines, each in wording of its own (not the set's rows), decided by hand:
a hedged "normal" is a hedged denial of the abnormality, not a claim of it; a textbook statement
about the finding, a finding offered as one of two candidates, and a verdict whose reasoning offers
the structure another identity commit to nothing."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

NORMAL_Q = "Is this abdominal radiograph normal?"
ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="pancreas"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o)


def finding(reply, f="gallstone"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this ultrasound image?", f)


def health(reply, f="bowel obstruction"):
    return read_reply_decision("counterfactual", reply, NORMAL_Q, f)


@pytest.mark.parametrize("reply", [
    "Likely normal, nothing jumps out at me.",
    "It looks probably unremarkable to me.",
    "Most likely a normal film, though I can only see one view.",
])
def test_a_hedged_normal_denies_the_abnormality(reply):
    assert health(reply).decision == "deny"


def test_a_hedged_normal_beside_a_named_abnormality_does_not_deny():
    # "probably normal" and a stated abnormality assert both ways: never a denial
    assert health("Probably normal bowel gas, but there is a dilated loop that looks abnormal.").decision != "deny"


@pytest.mark.parametrize("reply, o", [
    ("The pancreas is a gland behind the stomach that makes insulin and digestive enzymes.", "pancreas"),
    ("The thyroid is usually found in the lower neck, in front of the trachea.", "thyroid"),
    ("The trachea runs from the larynx to the carina.", "trachea"),
    ("Pancreas assessment needs a pancreatic-protocol CT; a routine portal-venous slice isn't enough.", "pancreas"),
])
def test_a_textbook_statement_about_the_organ_does_not_say_it_is_visible(reply, o):
    assert organ(reply, o).decision == "not_addressed"


@pytest.mark.parametrize("reply", [
    "Gallstones are more frequent in women over forty.",
    "A gallstone develops when bile becomes supersaturated with cholesterol.",
    "Gallstones are treated with cholecystectomy when they cause pain.",
    "A gallstone is a common cause of biliary colic.",
])
def test_a_textbook_statement_about_the_finding_is_no_claim(reply):
    assert finding(reply).decision == "unparseable"


def test_a_textbook_subject_with_an_observation_still_reads_as_seen():
    assert organ("The pancreas is a gland that is seen here behind the stomach.").decision == "present"


@pytest.mark.parametrize("reply", [
    "There is an echogenic focus that may be a gallstone or a polyp.",
    "Echogenic focus: sludge ball versus gallstone.",
])
def test_a_finding_offered_as_one_of_two_candidates_commits_to_nothing(reply):
    assert finding(reply).decision not in ("claim", "deny")


def test_two_kinds_of_the_finding_after_it_is_seen_still_claim():
    assert finding("There is a gallstone; it could be a cholesterol gallstone or a pigment gallstone.").decision == "claim"


def test_an_organ_offered_as_one_of_two_candidates_is_not_present():
    assert organ("The soft tissue behind the stomach could be the pancreas or unopacified bowel.").decision != "present"


def test_a_verdict_whose_reasoning_offers_another_identity_is_unclear():
    reply = '{"pancreas_visible": true, "reasoning": "soft tissue behind the stomach; it might also be a bowel loop"}'
    assert organ(reply).decision == "unclear"


@pytest.mark.parametrize("reply", [
    "Motion blurs the pelvis, so I can't confidently comment on the bladder.",
    "With this much streak artefact I am unable to assess the bladder.",
])
def test_a_refusal_to_comment_on_the_organ_is_no_absence(reply):
    assert organ(reply, "bladder").decision == "not_addressed"


@pytest.mark.parametrize("reply", [
    "Ultrasound of the gallbladder needs a fasting patient; I cannot give a definite answer from this.",
    "I can't reliably comment here; a sonographer should review the whole cine loop.",
])
def test_a_refusal_to_give_a_firm_answer_reads_as_refer(reply):
    assert finding(reply).decision == "refer"


@pytest.mark.parametrize("reply", [
    "This looks like a localiser only; I would need the transverse images of the gallbladder.",
    "Only the longitudinal sweep came through, so I'd need additional views to decide.",
])
def test_saying_which_images_it_would_need_reads_as_clarify(reply):
    assert finding(reply).decision == "clarify"


@pytest.mark.parametrize("reply", ["gallstone gallstone gallstone gallstone", "Yes yes yes yes yes"])
def test_one_word_repeated_is_degenerate_output_not_a_reply(reply):
    assert finding(reply).decision == "unparseable"


@pytest.mark.parametrize("reply, want", [
    ("No ureteral calculi are seen on either side.", "deny"),
    ("Nephrolithiasis in the lower pole of the left kidney, about 4 mm.", "claim"),
])
def test_a_calculus_names_a_kidney_stone(reply, want):
    got = read_reply_decision("counterfactual", reply, "Is there a kidney stone in this CT?", "kidney stone")
    assert got.decision == want
