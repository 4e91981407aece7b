"""The kinds of reply set D showed (issue 48, tuned on D after its one honest read) and the generic
styles real models answer in, each with a reply written for this test and its verdict worked
out by hand. None of these replies is taken from the held-out sets.

The rule for every case: a wrong-way reading is the worst error, so where the reply's own
evidence disagrees, declines or cannot be checked the reader says ``unclear``."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision
from medscope.answers.matching import _osa_distance, name_terms
from medscope.answers.structured import list_reply


def organ(reply, name):
    return read_reply_decision("organ_presence", reply, f"Is the {name} visible in this CT slice?", name)


def lesion(reply, finding, question=None):
    return read_reply_decision("counterfactual", reply, question or f"Is there a {finding}?", finding)


@pytest.mark.parametrize("reply, finding, decision", [
    # the finding's own name outranks its signs ("opacity" is a sign of consolidation)
    ("The opacity at the left base is the breast shadow; there is no consolidation.", "consolidation", "deny"),
    ("A patchy opacity in the right lower zone: this is consolidation.", "consolidation", "claim"),
    # a retraction with a committed replacement is read by the replacement, one without is unclear
    ("Yes, a polyp. Actually, on second thought, it is a fold; no polyp.", "polyp", "deny"),
    ("Yes, a polyp. Actually, on second thought, I can't tell.", "polyp", "unclear"),
    # a decline beside a mention that would commit
    # (a finding offered as one of two candidates asserts nothing, set I: the decline alone refers,
    # as set I's labeller read "could be a flat polyp or just a fold. Would defer ...")
    ("Can't tell. The rounded density could be a nodule or a nipple shadow.", "lung nodule", "refer"),
    ("I can't tell if the opacity in the left upper zone is a nodule.", "lung nodule", "unclear"),
    # the finding only as a topic of a refusal or a textbook sentence asserts nothing of the image
    ("I am an AI. Please consult your doctor about any concerns regarding lung nodules.", "lung nodule", "refer"),
    ("Pleural effusions are commonly caused by heart failure.", "pleural effusion", "unparseable"),
    # a device "unremarkable" is not the patient's health
    ("Chest drain in situ. Lines and tubes otherwise unremarkable.", "pneumothorax", "unparseable"),
    # the wrong image, said as "the image is a ..." with a decline, or as "rather than"
    ("The image is a knee radiograph; the lungs cannot be assessed.", "lung nodule", "clarify"),
    ("It looks like a renal ultrasound rather than chest imaging.", "lung nodule", "clarify"),
    ("The image did not come through; please upload it again.", "lung nodule", "clarify"),
    ("The cardiac size can't be reliably judged behind the opacities.", "cardiomegaly", "refer"),
    # a typed name: one edit (a transposition) at eight letters or more
    ("no pnuemothorax seen", "pneumothorax", "deny"),
    ("fx of the distal radius", "fracture", "claim"),
])
def test_lesion_kinds(reply, finding, decision):
    assert lesion(reply, finding).decision == decision


@pytest.mark.parametrize("reply, name, decision", [
    # a head noun qualified as another segment is another entity; the segment's own name decides
    ("The loop here is descending colon; the sigmoid lies below this level.", "sigmoid colon", "absent"),
    ("Only the transverse colon is seen.", "sigmoid colon", "not_addressed"),
    # a JSON list as pairs
    ('["liver", false]', "liver", "absent"),
    ('[["spleen", true], ["liver", true]]', "liver", "present"),
    # a JSON verdict beside reasoning that plainly says the opposite, or a retraction after it
    ('{"reasoning": "This is the liver.", "present": false}', "liver", "unclear"),
    ('{"reasoning": "The prostate is not expected at this level.", "present": true}', "prostate", "unclear"),
    ('{"present": true}\nOn review, only the lung bases are seen; I cannot tell.', "heart", "unclear"),
    # reasoning about anatomy that agrees with the field stays the field's verdict
    ('{"reasoning": "The prostate is not included at this level.", "present": false}', "prostate", "absent"),
])
def test_organ_kinds(reply, name, decision):
    assert organ(reply, name).decision == decision


@pytest.mark.parametrize("reply, name, decision", [
    ("El hígado no se observa en este corte.", "liver", "absent"),
    ("Se observa el hígado en el cuadrante superior derecho.", "liver", "present"),
    ("O rim direito não é visível; o rim esquerdo é visível.", "right kidney", "absent"),
    ("O rim esquerdo é visível.", "right kidney", "not_addressed"),  # only the other side
    ("Le foie est visible, mais pas la rate.", "liver", "present"),
    ("Die Leber ist nicht sichtbar.", "liver", "absent"),
    ("Il fegato non è visibile in questa immagine.", "liver", "absent"),
    ("未见肝脏。", "liver", "absent"),
    ("肝脏可见。", "liver", "present"),
    ("Es posible que el hígado esté presente.", "liver", "unclear"),  # a hedge
    ("El hígado se observa. El hígado no se observa.", "liver", "unclear"),  # two verdicts
    ('{"器官": "肝", "结论": "不可见"}', "liver", "absent"),  # a verdict key in Chinese
])
def test_other_languages(reply, name, decision):
    assert organ(reply, name).decision == decision


@pytest.mark.parametrize("reply, decision", [
    # addition: >= 70% claims, <= 30% denies, between is unclear
    ("~80% likely present.", "claim"),
    ("There is a 10% chance of a pneumothorax.", "deny"),
    ("About 50% chance of a pneumothorax.", "unclear"),
    ("Pneumothorax probability: 0.15", "deny"),
    # words that disagree with the number, or a low confidence in what is said
    ("Yes, a small apical pneumothorax (probability 0.2).", "unclear"),
    ("No pneumothorax. Pneumothorax probability: 0.9", "unclear"),
    ("I'm 60% confident there is no pneumothorax.", "unclear"),
    ("I'm 95% confident there is no pneumothorax.", "deny"),
    # a size in percent is not a probability
    ("A 30% apical pneumothorax is present.", "claim"),
    # ratings: which end of the scale is "present" cannot be checked
    ("Confidence: 3/5", "unclear"),
    ("Pneumothorax likelihood: 2/5", "unclear"),
    ("No pneumothorax. Confidence: 4/5", "deny"),
    # checklists and tables of marks
    ("- [x] Pneumothorax\n- [ ] Effusion", "claim"),
    ("- [ ] Pneumothorax\n- [x] Effusion", "unclear"),
    ("Pneumothorax: \u2717", "deny"),
    ("\u2705 Pneumothorax", "claim"),
    ("| Finding | Present |\n|---|---|\n| Pneumothorax | \u274c |\n| Effusion | \u2705 |", "deny"),
    ("- \u2713 Pneumothorax\n- \u2717 Pneumothorax", "unclear"),
])
def test_probabilities_ratings_and_checklists(reply, decision):
    assert lesion(reply, "pneumothorax").decision == decision


def test_name_terms_leave_out_the_signs():
    assert set(name_terms("consolidation")) == {"consolidation", "consolidations"}
    assert "lesion" in name_terms("breast lesion") and "hypoechoic area" not in name_terms("breast lesion")


def test_edit_distance_by_hand():
    assert _osa_distance("pneumothroax", "pneumothorax", 2) == 1  # one transposition
    assert _osa_distance("kitten", "sitting", 5) == 3
    assert _osa_distance("rectus", "rectum", 1) == 1  # why words under eight letters are left alone


def test_list_reply_shapes():
    assert list_reply('["stomach", false]') == {"stomach": False}
    assert list_reply('[{"organ": "liver", "present": true}]') == {"findings": [{"organ": "liver", "present": True}]}
    assert list_reply('[1, 2, 3]') is None and list_reply("no") is None


@pytest.mark.parametrize("reply, finding, decision", [
    # graded signs: ACR BI-RADS (1 negative, 2-6 a finding is there, 0 incomplete)
    ("BI-RADS 4A", "breast lesion", "claim"),
    ("BI-RADS 1", "breast lesion", "deny"),
    ("BI-RADS 0: additional imaging needed.", "breast lesion", "refer"),
    ("No lesion. BI-RADS 4.", "breast lesion", "unclear"),  # the words and the grade disagree
    # the cardiothoracic ratio: above 0.5 is cardiomegaly
    ("CTR 0.58", "cardiomegaly", "claim"),
    ("Cardiothoracic ratio 0.45.", "cardiomegaly", "deny"),
    # a table whose columns are the choices: the mark's column cannot be read, so unclear
    ("| Pneumothorax | Present | Absent |\n|---|---|---|\n| | X | |", "pneumothorax", "unclear"),
    # a scale with its legend: which number is the answer is not checked
    ("Likert (1=definitely absent, 5=definitely present): 4", "pneumothorax", "unclear"),
])
def test_graded_signs_and_scales(reply, finding, decision):
    assert lesion(reply, finding).decision == decision


@pytest.mark.parametrize("reply, name, decision", [
    ("LK: not in FOV", "left kidney", "absent"),
    ("RK: present. LK: not in FOV.", "left kidney", "absent"),
    ("RK: present. LK: not in FOV.", "right kidney", "present"),
])
def test_side_shorthand(reply, name, decision):
    assert organ(reply, name).decision == decision
