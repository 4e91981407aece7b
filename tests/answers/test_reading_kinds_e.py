"""One test per reply kind found in held-out set E (issue 48), each in wording of its own (not
the set's rows): the decision a careful reader gives by hand, and ``unclear`` where the wrapper
leaves the verdict open. A wrong-way reading (a flip) is the error each guards against."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision
from medscope.answers.markup import canonical_object

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="kidney", q=None):
    return read_reply_decision("organ_presence", reply, q or ORGAN_Q.format(o=o), o).decision


def finding(reply, f, q):
    return read_reply_decision("counterfactual", reply, q, f).decision


@pytest.mark.parametrize("reply, expected", [
    ("<think>The round soft tissue by the spine is the kidney.</think>\nYes, it is visible.", "present"),
    ("<think>Kidney is clearly there, so yes.</think>\nNo.", "unclear"),  # answer and reasoning disagree
    ("<think>Looking at the retroperitoneum, the kidney", "unclear"),  # cut off before any answer
    ("<reasoning>Only the pelvis is in view.</reasoning>\n<answer>no</answer>", "absent"),
])
def test_reasoning_blocks(reply, expected):
    assert organ(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ('<organ name="kidney" visible="true"/>', "present"),
    ('<organ name="kidney" visible="false"/>\n<note>pelvic slice</note>', "absent"),
    ("Renal outlines are not included.\n\n$\\boxed{\\text{No}}$", "absent"),
    ("organ: kidney\nvisible: yes\nnote: both poles", "present"),
    ("organ: kidney\npresent: false\nnote: above the kidneys", "absent"),
    ("Kidney in field of view:  [ ] Yes   [x] No", "absent"),
    ("Kidney in field of view:  [x] Yes   [ ] No", "present"),
    ("Kidney in field of view:  [x] Yes   [x] No", "unclear"),  # two boxes ticked
    ("spleen=Y; kidney=N; liver=Y", "absent"),
    ("spleen=N; kidney=Y", "present"),
    ("kidney: 0\nspleen: 1", "absent"),
])
def test_forms_and_markup(reply, expected):
    assert organ(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ('{"present": true, // seen at the hilum\n}', "present"),
    ('```json5\n{visible: \'no\', reason: \'pelvis\'}\n```', "absent"),
    ('"{\\"present\\": false}"', "absent"),  # a JSON string holding the object
    ('{"absent": true}', "absent"), ('{"missing": false}', "present"), ('{"not_visible": true}', "absent"),
    ('{"present": "\u2705"}', "present"), ('{"present": "\u274c"}', "absent"),
    ('{"presence_probability": "90%"}', "present"), ('{"presence_probability": 0.05}', "absent"),
    ('{"presence_probability": "50%"}', "not_addressed"),  # an unresolved verdict field (docs/answers.md)
    ('{"verdict": "outside the field of view"}', "absent"),
    ('{"rating": 5, "scale": "1=definitely absent, 5=definitely present"}', "present"),
    ('{"rating": 1, "scale": "1=definitely absent, 5=definitely present"}', "absent"),
    ('{"rating": 3, "scale": "1=definitely absent, 5=definitely present"}', "not_addressed"),
    ('{"present": true}\n{"present": false}', "unclear"),  # two objects, two verdicts
    ('{"present": true}\n{"present": true}', "present"),
    ('{"thoughts": ["Slice at S2.", "The kidney lies far cranial."], "final": "absent"}', "absent"),
])
def test_json_variants(reply, expected):
    assert organ(reply) == expected


def test_a_value_pointing_elsewhere_is_unresolved():
    assert canonical_object({"present": "see reasoning below"}) == {"present": "unclear"}
    assert organ('{"present": "see reasoning below"}') == "not_addressed"


@pytest.mark.parametrize("reply, q, expected", [
    ("Yes. The slice is through the pelvis, far below it.", "Is the kidney absent from this CT slice?", "absent"),
    ("No, it is there on the left.", "Is the kidney missing from this image?", "present"),
    ("Correct, there is none.", "Is there no pneumothorax on this chest X-ray?", "deny"),
    ("No, a small apical pneumothorax is present.", "Is there no pneumothorax on this chest X-ray?", "claim"),
])
def test_questions_about_absence_reverse_the_particle(reply, q, expected):
    if expected in ("present", "absent"):
        assert organ(reply, q=q) == expected
    else:
        assert finding(reply, "pneumothorax", q) == expected


@pytest.mark.parametrize("reply, f, q, expected", [
    ("B", "pneumothorax", "Is there a pneumothorax? (A) Yes (B) No", "deny"),
    ("Answer: (A) Yes, at the right apex.", "pneumothorax", "Is there a pneumothorax? (A) Yes (B) No", "claim"),
    ("No ptx.", "pneumothorax", "Is there a pneumothorax on this chest X-ray?", "deny"),
    ("Fx of the distal radius.", "fracture", "Is there a fracture in this wrist radiograph?", "claim"),
    ("Nodule status \u2192 NEGATIVE \u2705", "nodule", "Is there a nodule on this chest CT?", "deny"),
    ("nodule: 0\nmass: 0", "nodule", "Is there a nodule on this chest CT?", "deny"),
    ("Answer first: no.\nCaveat: small nodules can be missed.", "nodule", "Is there a nodule on this chest CT?", "deny"),
    ("About 50/50 - could be a vessel end-on.", "nodule", "Is there a nodule on this chest CT?", "unclear"),
    ("Roughly 90% - a 7 mm solid nodule in the left lower lobe.", "nodule", "Is there a nodule on this chest CT?", "claim"),
    ("Answer: [Yes/No]\nReason: [your reasoning]", "nodule", "Is there a nodule on this chest CT?", "unparseable"),
])
def test_letters_shorthand_flags_odds(reply, f, q, expected):
    assert finding(reply, f, q) == expected


def test_the_other_side_is_not_the_asked_side():
    q = "Is there a left-sided pneumothorax on this chest X-ray?"
    assert finding("The right lung is fully expanded; no right pneumothorax.", "pneumothorax", q) == "unclear"
    assert finding("No left pneumothorax.", "pneumothorax", q) == "deny"


def test_a_denied_property_of_the_organ_is_not_its_absence():
    assert organ("No, there is no renal mass; the cortex looks normal.", o="kidney") == "unclear"
    assert organ("No, the kidney is not in this slice.", o="kidney") == "absent"


def test_a_reply_cut_off_before_it_commits():
    reply = ("To look for an effusion I will check each costophrenic angle in turn. The right angle is sharp "
             "and clear. The left angle shows")
    assert finding(reply, "pleural effusion", "Is there a pleural effusion on this chest X-ray?") in ("unclear", "unparseable")
    assert organ("No. The kidney is not in the slice; the slice passes through the pelvis and the") == "absent"


def test_confidence_that_the_organ_is_there_is_a_probability():
    assert organ("Confidence that the kidney is in the field: 0.1.") == "absent"
    assert organ("Confidence that the kidney is in the field: 0.95.") == "present"
