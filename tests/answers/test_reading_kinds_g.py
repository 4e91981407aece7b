"""One test per reply kind that set G (issue 48) showed read the wrong way round, each in wording of
its own (not the set's rows): the decision a careful reader gives by hand, and ``unclear`` where the
reply's negation is of a kind the reader has no rule for. The guards are structural: a bare mention
beside a token the reader did not attach, a presence predicate whose subject is another entity, a
probability written as P(x)."""

from __future__ import annotations

import json

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"
PTX_Q = "Is there a pneumothorax on this lung ultrasound?"


def organ(reply, o="liver"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o)


def finding(reply, f, q):
    return read_reply_decision("counterfactual", reply, q, f)


@pytest.mark.parametrize("reply, o", [
    ("Gallbladder coverage: [\u2591\u2591\u2591\u2591\u2591] 0%", "gallbladder"),  # a 0% bar
    ("Left kidney mask volume: 0.0 mL", "left kidney"),  # a zero measurement
    ("Key: \u2705 in view, \U0001f534 out of view\nAorta: \u2705\nBladder: \U0001f534", "bladder"),  # a red mark
    ("Hindi, ang pancreas ay hindi makikita sa hiwang ito.", "pancreas"),  # Tagalog: no lexicon for it
    ("Liver \u26d4", "liver"),  # a no-entry mark
])
def test_a_bare_mention_beside_an_unattached_negative_token_is_unclear(reply, o):
    got = organ(reply, o)
    assert got.decision == "unclear" and got.rule == "bare-mention", got


@pytest.mark.parametrize("reply, o", [
    ("Gallbladder coverage: 0%. The gallbladder is seen in the right upper quadrant.", "gallbladder"),
    ("The bladder is seen; volume 0.0 mL after voiding.", "bladder"),
    ("Nie, trzustka nie jest widoczna na tym przekroju. Pancreas body is visible though.", "pancreas"),
])
def test_a_mention_with_a_positive_predicate_is_not_guarded(reply, o):
    assert organ(reply, o).rule != "bare-mention"


def test_the_guard_leaves_a_zero_under_a_label_to_the_label_rule():
    # a label line commits on its own words ("calcified" describes an aorta that is there)
    assert organ("Aorta: calcified, 0 aneurysm.", "aorta").decision == "present"


@pytest.mark.parametrize("reply", [
    "Pleural sliding is present, with comet-tail artefacts.",
    "B-lines absent in all zones.",
    "The seashore sign is seen on M-mode.",
])
def test_a_predicate_about_another_entity_is_unclear(reply):
    got = finding(reply, "pneumothorax", PTX_Q)
    assert got.decision == "unclear" and got.rule == "other-subject", got


@pytest.mark.parametrize("reply, expected", [
    ("Not seen.", "deny"),
    ("It is present, at the right apex.", "claim"),
])
def test_a_pronoun_or_no_subject_still_reads(reply, expected):
    assert finding(reply, "pneumothorax", PTX_Q).decision == expected


@pytest.mark.parametrize("reply, expected", [
    ("P(fracture) = 0.92: cortical break at the distal radius.", "claim"),
    ("P(fracture) in [0.05, 0.12]", "deny"),  # both ends at or under the 0.30 denial threshold
    ("P(fracture) in [0.20, 0.80]", "unclear"),  # the ends fall on both sides
    ("P(fracture) = 0.04; no cortical break.", "unclear"),  # the existing rule: a low probability beside words
])
def test_a_probability_in_p_notation_is_read_by_the_thresholds(reply, expected):
    assert finding(reply, "fracture", "Is there a fracture on this wrist X-ray?").decision == expected


@pytest.mark.parametrize("reply, expected", [
    ("organ: liver\npresence: NOT_PRESENT", "absent"),
    ("organ: liver\npresence: PRESENT", "present"),
    (json.dumps({"name": "report_organ", "arguments": json.dumps({"organ": "liver", "in_view": False})}), "absent"),
    (json.dumps({"function": {"name": "report_organ", "arguments": json.dumps({"organ": "liver", "visible": True})}}),
     "present"),
    (json.dumps({"resourceType": "Observation", "code": {"text": "Liver seen on slice"}, "valueBoolean": False}),
     "absent"),
    (json.dumps({"resourceType": "Observation", "code": {"text": "Liver"},
                 "interpretation": [{"coding": [{"code": "POS"}]}]}), "present"),
    ('CONTAINER: Findings\n  CODE: (T-62000, SRT, "Liver")\n    HAS PROPERTIES: (G-A203, SRT, "Presence") = '
     '(R-0038D, SRT, "Yes")', "present"),
    ('CONTAINER: Findings\n  CODE: (T-62000, SRT, "Liver")\n    HAS PROPERTIES: (G-A203, SRT, "Presence") = '
     '(R-00339, SRT, "No")', "absent"),
    # an HL7 v2 OBX segment is read by its value field (the identifiers and the "F" status are not prose)
    ("OBX|1|ST|LIV^Liver in slice^L||No||||||F", "absent"),  # the identifier asks, the value answers
    ("OBX|1|CWE|LIV^Liver in slice^L||N^No^HL70136||||||F", "absent"),
    ("OBX|1|CWE|LIV^Liver in slice^L||Y^Yes^HL70136||||||F", "present"),
    ("OBX|2|ST|8251-1^Liver^LN||Not in field of view||||||F", "absent"),
])
def test_structured_verdict_forms(reply, expected):
    assert organ(reply, "liver").decision == expected


@pytest.mark.parametrize("reply, expected", [
    ("~~Present~~ Absent: the liver is above this level.", "absent"),
    ("~~Not visible~~ The liver is visible at the top of the slice.", "present"),
    ("~~Visible~~ ~~Not visible~~ I need another look.", "not_addressed"),
])
def test_struck_through_text_is_withdrawn(reply, expected):
    assert organ(reply, "liver").decision == expected


def test_without_a_finding_name_the_subject_guard_stands_aside():
    # the organ-presence reader may be called with no organ name: any subject may then be the organ
    from medscope.answers.matching import read_decision
    r = read_decision("The kidney appears in the posterior abdomen.", "Is the organ visible?", "", "organ")
    assert (r.action, r.claim) == ("answer", True)
