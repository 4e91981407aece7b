"""One test per reply kind that set S (issue 48) showed read the wrong way, over-committed or too
timidly, each in wording of its own (not the set's rows, except where a test says so), decided by hand:
what a careful reader commits to, and what must stay as it was (the other polarity).

S's flips were an idiom's "never" ("I have never seen a clearer view of ...") and an XML answer made of
text elements (``<visible>no</visible>``) read as prose; its over-commitments a field that declines
("Rectum: cannot comment."), a reply cut off before its verdict, a field that is unclear beside a
referral, and a decline for a poor image in Spanish; its timid readings other languages, organs
described by their parts, signs given as the verdict and a resolved finding."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver", question=None):
    return read_reply_decision("organ_presence", reply, question or ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray", question=None, kind=None):
    return read_reply_decision("counterfactual", reply, question or f"Is there a {f} in this {where}?", f, kind).decision


# A negated comparison is emphasis: it affirms what it compares. Read as a "never", the organ read
# absent (S's flip). A plain "never seen" still denies.
@pytest.mark.parametrize("reply, want", [
    ("I have never seen a clearer view of the spleen.", "present"),
    ("I've never had a sharper image of the spleen than this one.", "present"),
    ("I have never seen the spleen on a slice this low.", "absent"),
])
def test_negated_comparison_is_emphasis(reply, want):
    assert organ(reply, "spleen") == want


# An answer made of text elements is read as the JSON verdict formats are: its verdict element
# decides, not a "no" found in the prose it makes (the uterus read present: S's flip).
@pytest.mark.parametrize("reply, want", [
    ("<answer><organ>spleen</organ><visible>no</visible><reason>splenectomy</reason></answer>", "absent"),
    ("<result><organ>spleen</organ><visible>yes</visible><note>no focal lesion</note></result>", "present"),
])
def test_xml_text_elements_read_as_fields(reply, want):
    assert organ(reply, "spleen") == want


# A field whose whole value leaves it open is declined, not filled: read as the value's status, the bare
# "cannot comment" / "unclear" affirmed the finding (S read present and claim). A filled field still reads.
@pytest.mark.parametrize("reply, want", [
    ("Spleen: cannot comment.", "not_addressed"),
    ("Spleen: indeterminate", "not_addressed"),
    ("Spleen: not seen.", "absent"),
    ("Spleen: visible.", "present"),
])
def test_organ_field_left_open(reply, want):
    assert organ(reply, "spleen") == want


@pytest.mark.parametrize("reply, want", [
    ("Pneumothorax: uncertain\nRecommendation: senior review", "refer"),
    ("Pneumothorax: unclear", "refer"),
    ("Pneumothorax: present", "claim"),
    ("Pneumothorax: none", "deny"),
])
def test_finding_field_left_open(reply, want):
    assert finding(reply) == want


# A reply cut between its subject and its predicate never gave the verdict, however short it is; a
# finished sentence of the same length commits.
@pytest.mark.parametrize("reply, want", [
    ("On this coronal slice the spleen appears to be", "unclear"),
    ("In the left upper quadrant the spleen is", "not_addressed"),
    ("On this coronal slice the spleen appears to be normal in size.", "present"),
])
def test_reply_cut_before_predicate(reply, want):
    assert organ(reply, "spleen") == want


# A decline because the image is too dark or noisy asks for a better image, in Spanish, Portuguese, Italian
# and Italian as in English ("too dark ... to assess whether there is" read claim: its "hay" is the question's).
@pytest.mark.parametrize("reply, question", [
    ("La radiografía está demasiado oscura para valorar si hay neumotórax.", "¿Hay un neumotórax en esta radiografía?"),
    ("A imagem está demasiado escura para avaliar se há pneumotórax.", "Há pneumotórax nesta radiografia?"),
    ("L'immagine è troppo rumorosa per valutare se c'è uno pneumotorace.", "C'è uno pneumotorace?"),
])
def test_foreign_decline_for_a_poor_image(reply, question):
    assert finding(reply, question=question, kind="presence") == "clarify"


def test_foreign_claim_still_reads():
    assert finding("Sí, hay un neumotórax derecho.", question="¿Hay un neumotórax en esta radiografía?", kind="presence") == "claim"


# Languages S's writer used that the reader did not read (Korean, Arabic, Russian, Swahili, romanised
# Chinese) and verbs it lacked in German and Portuguese: each language's names and visibility words are
# vocabulary in medscope/answers/languages.py. Both polarities, in sentences of their own.
@pytest.mark.parametrize("reply, o, want", [
    ("간이 잘 보입니다.", "liver", "present"),
    ("이 단면에서는 간이 보이지 않습니다.", "liver", "absent"),
    ("البنكرياس غير مرئي في هذا المقطع.", "pancreas", "absent"),
    ("Желчный пузырь не визуализируется.", "gallbladder", "absent"),
    ("Желчный пузырь визуализируется, стенки тонкие.", "gallbladder", "present"),
    ("Ndiyo, kongosho inaonekana vizuri.", "pancreas", "present"),
    ("Kibofu cha mkojo hakionekani kwenye picha hii.", "bladder", "absent"),
    ("Kan bu dao jiazhuangxian.", "thyroid", "absent"),
    ("Jiazhuangxian ke jian, huisheng junyun.", "thyroid", "present"),
    ("Die Gallenblase ist gut abgrenzbar.", "gallbladder", "present"),
    ("Die Gallenblase ist nicht abgrenzbar.", "gallbladder", "absent"),
])
def test_other_languages_organ_verdicts(reply, o, want):
    assert organ(reply, o, question=f"Is the {o} visible?") == want


# "It is not possible to visualise X" looks and does not see, as "unable to visualize" does in English;
# "it is not possible to determine" still declines.
@pytest.mark.parametrize("reply, want", [
    ("Não é possível visualizar o fígado neste corte.", "absent"),
    ("No es posible visualizar el hígado en este corte.", "absent"),
    ("No es posible determinar si el hígado está incluido.", "not_addressed"),
])
def test_not_possible_to_visualise(reply, want):
    assert organ(reply, "liver", question="Is the liver visible?") == want


@pytest.mark.parametrize("reply, f, want", [
    ("نعم، يوجد احتشاء في الفص الصدغي الأيمن.", "infarct", "claim"),
    ("Камней в желчном пузыре не обнаружено.", "gallstones", "deny"),
    ("В желчном пузыре выявлены мелкие конкременты.", "gallstones", "claim"),
])
def test_other_languages_finding_verdicts(reply, f, want):
    assert finding(reply, f, question=f"Is there {f}?", kind="presence") == want


# Swahili "si ya kawaida" (not ordinary) answers "Is this normal?" abnormal; "ni ya kawaida" normal.
@pytest.mark.parametrize("reply, want", [
    ("Hapana, picha hii si ya kawaida.", "claim"),
    ("Ndiyo, picha hii ni ya kawaida.", "deny"),
])
def test_swahili_normal(reply, want):
    got = read_reply_decision("counterfactual", reply, "Je, picha hii ni ya kawaida?", "any abnormality", "normality")
    assert got.decision == want


# One table of organ adjectives (it was defined twice; the one in use lacked "rectal", "biliary", "mammary",
# "thyroid"): a denied property named by "rectal" is the rectum's property, and the organ's own lumen is the organ.
@pytest.mark.parametrize("reply, want", [
    ('{"present": false, "reason": "no rectal wall thickening"}', "unclear"),
    ('{"reasoning": "After resection there is no rectal lumen.", "present": false}', "absent"),
])
def test_rectal_adjective(reply, want):
    assert organ(reply, "rectum", question="Is the rectum visible in this MRI?") == want


def test_one_organ_adjective_table():
    from medscope.answers import matching
    assert {"biliary", "mammary", "thyroid", "rectal", "aortic", "duodenal"} <= set(matching._ORGAN_ADJECTIVES)
    assert matching._ORGAN_ADJECTIVES["rectal"] == "rectum"


# A null verdict whose reason is the wrong body part asks for the right image, as the reason in prose does;
# a null verdict without such a reason still hands the read over. A question said not to fit the image too.
@pytest.mark.parametrize("reply, want", [
    ('{"present": null, "reason": "wrong body part: this is a foot radiograph"}', "clarify"),
    ('{"present": null, "reason": "too blurry to read"}', "clarify"),
    ('{"present": null, "reason": "needs a radiologist"}', "refer"),
    ("This is an abdominal film; the question about a pneumothorax does not apply to it.", "clarify"),
])
def test_wrong_image_for_the_question(reply, want):
    assert finding(reply) == want


# Pneumonia on a radiograph is read from its consolidation, with the sign's polarity ("has resolved"
# denies); a question the reasoning asks itself ("could that be consolidation?") asserts nothing.
@pytest.mark.parametrize("reply, want", [
    ("Dense left lower lobe consolidation with air bronchograms.", "claim"),
    ("The left lower lobe consolidation has resolved since the last film.", "deny"),
    ("No consolidation.", "deny"),
    ("<think>Hazy density at the right base, could that be consolidation? No, it is the breast shadow.</think>\n"
     "Final answer: No.", "deny"),
])
def test_pneumonia_read_from_consolidation(reply, want):
    assert finding(reply, "pneumonia") == want


# A normal sign given in place of the verdict denies the finding; the sign negated decides nothing here.
@pytest.mark.parametrize("reply, f, want", [
    ("The costophrenic angles are sharp bilaterally.", "pleural effusion", "deny"),
    ("Sharp costophrenic angles.", "pleural effusion", "deny"),
    ("The costophrenic angles are not sharp.", "pleural effusion", "unparseable"),
    ("Lung markings extend to the chest wall on both sides.", "pneumothorax", "deny"),
])
def test_normal_sign_as_verdict(reply, f, want):
    assert finding(reply, f) == want


def test_structure_behaving_normally_is_normal():
    got = read_reply_decision("counterfactual", "The common bile duct tapers normally to the ampulla.",
                              "Is this ultrasound normal?", "any abnormality", "normality")
    assert got.decision == "deny"


# The organ's own bed or fossa said to be empty: the organ is not there, on the asked side only.
@pytest.mark.parametrize("reply, o, want", [
    ("The right renal fossa is empty; bowel loops lie in it.", "right kidney", "absent"),
    ("The right renal fossa is empty; bowel loops lie in it.", "left kidney", "not_addressed"),
    ("Empty gallbladder fossa with surgical clips.", "gallbladder", "absent"),
])
def test_empty_organ_bed(reply, o, want):
    assert organ(reply, o, question=f"Is the {o} visible?") == want


# What an image shows of the organ's own substance names the organ: its uptake on PET, its echotexture on
# ultrasound. Uptake denied is a property of the organ (no tracer taken up), not its absence.
@pytest.mark.parametrize("reply, want", [
    ("Physiological splenic uptake, SUVmax 2.1.", "present"),
    ("Splenic echotexture is homogeneous.", "present"),
    ("No splenic uptake on this slice.", "unclear"),
])
def test_organ_named_by_its_substance(reply, want):
    assert organ(reply, "spleen", question="Is the spleen visible in this PET/CT image?") == want
