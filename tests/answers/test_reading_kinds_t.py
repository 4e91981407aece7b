"""One test per reply kind that set T (issue 48) showed read the wrong way or committed where the reply
does not, each in wording of its own (not the set's rows, except where a test says so), decided by hand:
what a careful reader commits to, and what must stay as it was (the other polarity).

T's flips were a field whose label carries the organ's head noun or leaves it off ("Prostate gland:",
"Left adrenal:"), the shorthand signs "(-)" / "+" as a field's value, and a sided resection of an organ
whose remnant is seen; its over-commitments a modal taken back in its own sentence, a decline after
two candidates, a request for a better image, advice to the patient, keys struck in a row, and a decline
in French around the English name of the finding."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver", question=None):
    return read_reply_decision("organ_presence", reply, question or ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray", question=None, kind=None):
    return read_reply_decision("counterfactual", reply, question or f"Is there a {f} in this {where}?", f, kind).decision


# A field's label may carry the organ's head noun ("Thyroid gland:") or leave it off ("Right adrenal:" for
# the right adrenal gland); unmatched, its denial read as a bare mention: present (T's flips).
@pytest.mark.parametrize("reply, o, want", [
    ("Thyroid gland: not included in this study, which stops at the clavicles.", "thyroid", "absent"),
    ("Thyroid gland: visible, normal size.", "thyroid", "present"),
    ("Right adrenal: not seen. Left adrenal: normal.", "right adrenal gland", "absent"),
    ("Right adrenal: normal. Left adrenal: not seen.", "right adrenal gland", "present"),
])
def test_field_label_with_or_without_head_noun(reply, o, want):
    assert organ(reply, o) == want


# A sign alone or in brackets is a field's whole value, and "L" / "R" before the name is the side
# ("L kidney (-)" read present, "GB: +" not at all: T).
@pytest.mark.parametrize("reply, o, want", [
    ("R kidney (-)", "right kidney", "absent"),
    ("R kidney (+)", "right kidney", "present"),
    ("Spleen: -", "spleen", "absent"),
    ("GB: +", "gallbladder", "present"),
    ("GB: n/v", "gallbladder", "absent"),
    ("GB: s/p cholecystectomy, not visualised.", "gallbladder", "absent"),
])
def test_shorthand_sign_values(reply, o, want):
    assert organ(reply, o) == want


# A sided resection of an organ asked without a side leaves the rest of it; its remnant seen is the organ
# seen (T read "right hepatectomy; the remnant left lobe is visible" absent). A whole resection still denies,
# and the resected side, when it is the side asked, is gone.
@pytest.mark.parametrize("reply, o, want", [
    ("Status post left hepatectomy; the remaining right lobe is seen and enlarged.", "liver", "present"),
    ("Status post nephrectomy.", "left kidney", "absent"),
    ("Status post left nephrectomy.", "left kidney", "absent"),
])
def test_sided_resection_leaves_the_remnant(reply, o, want):
    assert organ(reply, o) == want


# A modal taken back in its own sentence commits to nothing (T read present); a plain modal stays a hedge
# that leans.
def test_modal_taken_back_in_its_sentence():
    assert organ("The spleen may be on this slice, or it may not; the level is hard to judge.", "spleen") == "not_addressed"
    assert organ("The spleen may be on this slice; it is faint.", "spleen") != "not_addressed"


# "I cannot reach a conclusion" declines: beside a mention that would commit, the reply is not read as a
# claim (T, the paediatric elbow row: its label is refer; unclear is its agreement, not a verdict).
def test_cannot_reach_a_conclusion_declines():
    reply = ("The lucency at the radial head could be a fracture, but it could also be a nutrient canal. "
             "I cannot reach a conclusion.")
    assert finding(reply, "fracture", "wrist radiograph") == "unclear"
    assert finding("There is a fracture of the radial head.", "fracture", "wrist radiograph") == "claim"


# The image's faults and a request for a better one say nothing of the finding: clarify (T read claim).
# A reply that names what it sees, then asks, still claims.
@pytest.mark.parametrize("reply, want", [
    ("The rash is hidden by a shadow and the picture is blurry; could you send a sharper photo?", "clarify"),
    ("A 7 mm pigmented lesion with irregular borders; could you send a dermoscopic image to confirm?", "claim"),
])
def test_poor_image_and_request(reply, want):
    assert finding(reply, "abnormality", question="What abnormality is shown in this photograph?", kind="open") == want


# Advice to the patient about the finding is no reading of the image (T read claim, then deny on "healthy").
@pytest.mark.parametrize("reply, want", [
    ("Eat a balanced diet and keep a healthy weight to lower your risk of gallstones.", "unparseable"),
    ("There are gallstones in the gallbladder.", "claim"),
])
def test_advice_is_not_a_reading(reply, want):
    assert finding(reply, "gallstone", "ultrasound") == want


# Keys struck in a row beside generator tokens are no reply, even to an open question (T read claim).
@pytest.mark.parametrize("reply, want", [
    ("qwerty <unk> <unk> </s>", "unparseable"),
    ("jkl ### asdfg", "unparseable"),
    ("A flask-shaped cardiac silhouette.", "claim"),
])
def test_keyboard_runs_are_unparseable(reply, want):
    assert finding(reply, "abnormality", question="What abnormality is shown on this image?", kind="open") == want


# A decline in another language around the finding's English name declines; the name alone does not claim.
# (The second wording is the one the S round's notes left reading claim.)
@pytest.mark.parametrize("reply", ["L'image est trop floue pour dire s'il y a un pneumothorax.",
                                   "L'image est trop sombre pour évaluer s'il y a un pneumothorax."])
def test_foreign_decline_around_english_name(reply):
    assert finding(reply) == "clarify"


@pytest.mark.parametrize("reply, expected", [
    # a correction to another structure denies (the CI run after the T round read it clarify: "that is a X, not
    # a Y" is also how a reply says the image is of the wrong body part)
    ("Yes, a polyp. Correction: that is a mucosal fold, not a polyp.", "deny"),
    ("That is a mucosal fold, not a polyp.", "deny"),
    # the image's fault named with the request: still clarify
    ("The mucosa is obscured by debris and the frame is blurry; could you provide a clearer image?", "clarify"),
])
def test_a_correction_to_another_structure_is_no_request_for_an_image(reply, expected):
    assert read_reply_decision("counterfactual", reply, "Is there a polyp in this image?", "polyp", "presence").decision == expected
