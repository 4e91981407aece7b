"""One test per reply kind that set R (issue 48) showed read the wrong way, too timidly or over-committed,
each in wording of its own (not the set's rows, except where a test says so), decided by hand: what a
careful reader commits to, and what must stay as it was (the other polarity).

R's writer was asked for styles a rule reader finds hard: question kinds spelled another way
("normality"), description-only replies, nested JSON by side, multiple-choice letters, double
negations, and yes / no verdicts in languages the reader had not read (Vietnamese, Indonesian, Italian,
Portuguese, Dutch, Turkish)."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver", question=None):
    return read_reply_decision("organ_presence", reply, question or ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray", kind=None):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f, kind).decision


def normal(reply, kind="health", f="any abnormality", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is this {where} normal?", f, kind).decision


# "Is this X-ray normal?" is the health question however its kind is spelled: "No." says it is abnormal,
# a claim; read as a presence question it was a denial, the wrong way round.
@pytest.mark.parametrize("kind", ["health", "normality", "Normality", None, "some-kind-not-known"])
@pytest.mark.parametrize("reply, want", [
    ("No.", "claim"),
    ("Yes.", "deny"),
    ("No, it is not normal: there is a right pleural effusion.", "claim"),
    ("Yes, it is a normal study.", "deny"),
])
def test_health_question_kind_spellings(kind, reply, want):
    assert normal(reply, kind) == want


# "Unable to visualize X" says the reader looked for X and did not see it: absent, as "unable to see" was.
@pytest.mark.parametrize("reply, o, want", [
    ("Unable to visualise the spleen.", "spleen", "absent"),
    ("I could not visualize the gallbladder on this slice.", "gallbladder", "absent"),
    ("Could not locate the appendix.", "appendix", "absent"),
    # the other polarity stays
    ("The spleen is well visualised.", "spleen", "present"),
])
def test_unable_to_visualize(reply, o, want):
    assert organ(reply, o) == want


# A verdict given per side: the asked side's value decides; asked about no side, the sides must agree.
@pytest.mark.parametrize("reply, o, want", [
    ('{"organ": "kidney", "visible": {"left": true, "right": false}}', "right kidney", "absent"),
    ('{"organ": "kidney", "visible": {"left": true, "right": false}}', "left kidney", "present"),
    ('{"organ": "kidneys", "visible": {"left": true}}', "right kidney", "not_addressed"),
    ('{"organ": "kidneys", "present": {"left": true, "right": true}}', "kidneys", "present"),
    ('{"organ": "kidneys", "present": {"left": false, "right": true}}', "kidneys", "not_addressed"),
])
def test_json_verdict_per_side(reply, o, want):
    assert organ(reply, o) == want


# A "with" phrase describes the mention; a negation inside it is about what it names ("absent lung
# markings"), not the mention's predicate.
@pytest.mark.parametrize("reply, want", [
    ("Large left pneumothorax with absent lung markings lateral to the pleural edge.", "claim"),
    ("Tension pneumothorax with no lung markings beyond the pleural line.", "claim"),
    # the mention's own predicate still denies
    ("Pneumothorax is absent.", "deny"),
    ("No pneumothorax, with normal lung markings to the periphery.", "deny"),
])
def test_negation_inside_a_with_phrase(reply, want):
    assert finding(reply) == want


# The plain "not" of Indonesian, Dutch and Turkish negates what it precedes (follows, in Turkish), so
# "tidak normal" is not "normal": read as English, the bare "normal" answered "Is this normal?" yes.
@pytest.mark.parametrize("reply, want", [
    ("Tidak, gambar ini tidak normal; terdapat efusi pleura.", "claim"),
    ("Tidak normal.", "claim"),
    ("Bu görüntü normal değil.", "claim"),
    ("Nee, deze foto is niet normaal.", "claim"),
    # the other polarity stays
    ("Gambar ini normal, tidak ada kelainan.", "deny"),
    ("Ya, gambar ini normal.", "deny"),
])
def test_foreign_not_before_normal(reply, want):
    assert normal(reply) == want


# Options lettered "A. ..." or "A: ..." are options as "(A) ..." are: the chosen letter is read as its text.
@pytest.mark.parametrize("reply, o, want", [
    ("B", "spleen", "absent"),
    ("Answer: A", "spleen", "present"),
    ("(B)", "spleen", "absent"),
])
def test_lettered_options_with_a_dot(reply, o, want):
    assert organ(reply, o, question=f"Is the {o} visible in this CT slice? A. Yes B. No") == want


@pytest.mark.parametrize("reply, want", [
    ("A", "deny"),  # "None": no abnormality
    ("C", "claim"),
])
def test_lettered_options_open_question(reply, want):
    q = "What is shown in this chest X-ray? A: None B: Pneumothorax C: Rib fracture"
    assert read_reply_decision("counterfactual", reply, q, "any abnormality", "open").decision == want


# A denied "not normal" ("nothing that isn't normal") says all is normal; the inner "not normal" alone is
# not the reply's verdict.
@pytest.mark.parametrize("reply, want", [
    ("Nothing on this film is not normal.", "deny"),
    ("There is no area that doesn't look normal.", "deny"),
    ("I can't find anything that is not normal here.", "deny"),
    # the other polarity stays
    ("I see something that is not normal.", "claim"),
    ("I don't think it's normal.", "claim"),
])
def test_nothing_that_is_not_normal(reply, want):
    assert normal(reply) == want


# Vietnamese: its yes / no ("Có," / "Không,") as clauses of their own, names of the common findings and
# organs, "cho thấy" (shows) and "không phát hiện" (not detected), "bình thường" (normal); "an abnormality"
# named in the languages read, so a denial of it answers an open question "none".
@pytest.mark.parametrize("reply, want", [
    ("Có, có tràn khí màng phổi bên trái.", "claim"),
    ("Không, không phát hiện tràn khí màng phổi.", "deny"),
])
def test_vietnamese_presence(reply, want):
    assert finding(reply, kind="presence") == want


def test_vietnamese_organ():
    assert organ("Có, tuyến giáp được nhìn thấy ở thùy phải.", "thyroid") == "present"
    assert organ("Không thấy gan trên lát cắt này.", "liver") == "absent"


@pytest.mark.parametrize("reply, want", [
    ("Có, hình ảnh bình thường.", "deny"),
    ("Không, hình ảnh này không bình thường.", "claim"),
    # a leading "Không," is the answer, not a "not" before the next word (copied kind of set N's LN067, here
    # to the health question: the "normal" after it is the reply's own)
    ("Không, bình thường.", "unclear"),
])
def test_vietnamese_health(reply, want):
    assert normal(reply) == want


@pytest.mark.parametrize("reply, want", [
    ("Không thấy bất thường nào trên hình ảnh.", "deny"),
    ("No se observan anomalías en esta imagen.", "deny"),
    ("Tidak ditemukan kelainan.", "deny"),
])
def test_open_question_none_in_other_languages(reply, want):
    assert read_reply_decision("counterfactual", reply, "What abnormality is shown in this image?",
                               "any abnormality", "open").decision == want


# A reply in another language that names the finding and says nothing more of it states the finding, as
# "Consolidation in the right lower lobe." does: to "Is this normal?" it is the abnormality whatever the
# particle (the English reader reads "Yes. Consolidation ..." so too); beside a "no" to a presence question
# the no and the named finding disagree, so unclear (before, the "no" read deny alone).
@pytest.mark.parametrize("reply, want", [
    ("Sí. Derrame pleural derecho.", "claim"),
    ("Sì. Addensamento al lobo inferiore destro.", "claim"),
    ("No. Derrame pleural derecho.", "claim"),
    # the other polarity stays: a verdict phrase or a negation is no bare name
    ("Sí, normal.", "deny"),
    ("Oui, sans épanchement.", "deny"),
])
def test_finding_named_bare_to_a_health_question(reply, want):
    assert normal(reply, f="effusion" if "rrame" in reply or "panchement" in reply else "consolidation") == want


@pytest.mark.parametrize("reply, want", [
    ("No, emorragia subaracnoidea nei solchi frontali.", "unclear"),
    ("No, hemorragia subaracnoidea en los surcos frontales.", "unclear"),
    # the other polarity and plain denials stay
    ("Sì, emorragia subaracnoidea nei solchi frontali.", "claim"),
    ("No, non si vede emorragia.", "deny"),
    ("Nein, keine Blutung.", "deny"),
])
def test_no_beside_a_named_finding(reply, want):
    assert finding(reply, f="haemorrhage", where="head CT", kind="presence") == want


@pytest.mark.parametrize("reply, want", [
    ("Derrame pleural derecho.", "claim"),  # named alone, as "Right pleural effusion." claims
    ("Sì e no: il versamento potrebbe esserci.", "refer"),  # "yes and no" in Italian commits to neither
])
def test_named_alone_and_yes_and_no(reply, want):
    assert finding(reply, f="pleural effusion", kind="presence") == want


# A bare name in English that the foreign lexicon also lists ("pneumothorax" is French too) is the English
# rules' to read: "Equivocal for pneumothorax." stays a hedge, not a finding named bare.
@pytest.mark.parametrize("reply, want", [
    ("Equivocal for pneumothorax.", "refer"),
    ("Absent: pneumothorax, effusion.", "deny"),
])
def test_english_name_is_not_a_foreign_bare_name(reply, want):
    assert finding(reply, kind="presence") == want


# NUL characters (UTF-16 read as bytes) are stripped before reading.
@pytest.mark.parametrize("reply, want", [
    ("Y\x00e\x00s\x00", "claim"),
    ("N\x00o\x00.", "deny"),
    ('{"present": fa\x00lse}', "deny"),
    ("\x00There is a small apical pneumothorax.\x00", "claim"),
])
def test_nul_characters_stripped(reply, want):
    assert finding(reply, kind="presence") == want


# Where the answer holds, said before the particle, leaves the particle the answer.
@pytest.mark.parametrize("reply, o, want", [
    ("On this slice, yes", "liver", "present"),
    ("In this image, no.", "spleen", "absent"),
    ("At this level, yes, both kidneys are seen.", "kidneys", "present"),
])
def test_where_before_the_particle(reply, o, want):
    assert organ(reply, o) == want


def test_where_before_the_particle_finding():
    assert finding("On this slice, yes", kind="presence") == "claim"
    assert finding("On this film, no.", kind="presence") == "deny"


# "is graded as <one grade>" is the reply's own grade (a claim); "graded as X or Y" / a list says how the
# finding is graded in general.
@pytest.mark.parametrize("reply, want", [
    ("Hydronephrosis is graded as SFU grade 3 on the right.", "claim"),
    ("The hydronephrosis is graded as moderate.", "claim"),
    ("Hydronephrosis is graded as mild, moderate or severe.", "unparseable"),
    ("Hydronephrosis is graded as either mild or severe.", "unparseable"),
])
def test_graded_as_one_grade(reply, want):
    assert finding(reply, f="hydronephrosis", where="renal ultrasound", kind="presence") == want


# A bare head noun qualified by another site is that site's ("a renal stone" asked about gallstones).
@pytest.mark.parametrize("reply, want", [
    ("No gallstones; a 6 mm renal stone is incidentally noted.", "deny"),
    ("No gallstones. Incidental left ureteric stone.", "deny"),
    # the finding's own sites and the bare noun in the gallbladder's context stay
    ("Several stones lie in the gallbladder.", "claim"),
    ("A biliary stone is seen.", "claim"),
    ("No stones or sludge.", "deny"),
])
def test_stone_of_another_site(reply, want):
    assert finding(reply, f="gallstones", where="ultrasound image", kind="presence") == want


# A description that names the finding's sign and not the finding: the sign's polarity is the finding's.
@pytest.mark.parametrize("reply, f, want", [
    ("A thin visceral pleural line is seen at the left apex.", "pneumothorax", "claim"),
    ("No visceral pleural line is identified at either apex.", "pneumothorax", "deny"),
    ("Blunting of the left costophrenic angle.", "pleural effusion", "claim"),
    ("Sharp costophrenic angles, no blunting of the costophrenic angle.", "pleural effusion", "deny"),
])
def test_signs_named_instead_of_the_finding(reply, f, want):
    assert finding(reply, f=f, kind="presence") == want


def test_gallstone_sign():
    assert finding("Thin-walled gallbladder without echogenic shadowing foci.", f="gallstones",
                   where="ultrasound image", kind="presence") == "deny"
    assert finding("Two echogenic shadowing foci lie in the gallbladder neck.", f="gallstones",
                   where="ultrasound image", kind="presence") == "claim"


# "absent" before a noun is that noun's ("absent lung markings"); after the mention with nothing after it, the
# mention's predicate.
@pytest.mark.parametrize("reply, want", [
    ("Left pneumothorax, visceral pleural line visible and absent lung markings beyond it.", "claim"),
    ("Pneumothorax: absent.", "deny"),
    ("Pneumothorax absent on this film.", "deny"),
])
def test_attributive_absent(reply, want):
    assert finding(reply, kind="presence") == want


# "X cannot be excluded given Y": the hedge holds, and the sign Y after it is not denied by its "not".
def test_cannot_be_excluded_given_a_sign():
    assert finding("A small pleural effusion cannot be excluded given mild blunting of the costophrenic angle.",
                   f="pleural effusion", kind="presence") == "claim"


# "Post-hysterectomy appearance": the resection with its prefix joined by a hyphen removes the organ.
def test_post_resection_hyphenated():
    assert organ("Post-hysterectomy appearance; the vaginal cuff is unremarkable.", "uterus") == "absent"
    assert organ("Post-cholecystectomy clips in the right upper quadrant.", "gallbladder") == "absent"


# A "not" put back as a question ("Not visible? Quite the opposite: ...") is not the reply's answer.
@pytest.mark.parametrize("reply, want", [
    ("Not visible? Far from it: the spleen is clearly outlined behind the stomach.", "present"),
    ("Not visible.", "absent"),
])
def test_rhetorical_not(reply, want):
    assert organ(reply, "spleen") == want


# The cardiomediastinal silhouette holds the heart's outline.
@pytest.mark.parametrize("reply, want", [
    ("Cardiomediastinal contour is unremarkable.", "present"),
    ("The cardiomediastinal silhouette is not included on this abdominal film.", "absent"),
])
def test_cardiomediastinal_silhouette(reply, want):
    assert organ(reply, "heart", question="Is the heart visible in this X-ray?") == want


# A decline in another language because the image is too poor (dark, noisy, blurred, low resolution) asks for a
# better image; a decline alone refers.
@pytest.mark.parametrize("reply, want", [
    ("La imagen está muy oscura y con mucho ruido; no es posible evaluar.", "clarify"),
    ("Görüntü bulanık; bu haliyle değerlendirme yapılamıyor.", "clarify"),
    ("Bu haliyle değerlendirme yapılamıyor.", "refer"),
    ("No es posible determinar si hay neumotórax.", "refer"),
])
def test_foreign_decline_for_a_poor_image(reply, want):
    assert finding(reply, kind="presence") == want


# Appendicitis named in other languages, so "appendicite" is not mended as an English typo of it (that read
# "non ci sono segni di appendicite" as an affirmed "appendicitis").
@pytest.mark.parametrize("reply, want", [
    ("No, non ci sono segni di appendicite.", "deny"),
    ("Sì, quadro di appendicite acuta con appendice ispessita.", "claim"),
    ("No, no hay signos de apendicitis.", "deny"),
])
def test_appendicitis_in_other_languages(reply, want):
    assert finding(reply, f="appendicitis", where="CT image", kind="presence") == want


# What an organ is in general ("paired retroperitoneal organs located ...") is a textbook statement.
def test_paired_organs_textbook():
    assert organ("The kidneys are paired retroperitoneal organs located on either side of the spine.",
                 "kidneys") == "not_addressed"
    assert organ("Both kidneys are seen as paired bean-shaped organs here.", "kidneys") == "present"


# The organ as the aim of more imaging ("recommended to fully evaluate the pancreas") is not seen.
@pytest.mark.parametrize("reply, want", [
    ("Thinner slices are needed to fully evaluate the spleen.", "not_addressed"),
    ("The spleen is seen; its hilum is hard to assess.", "present"),
])
def test_organ_as_the_aim_of_imaging(reply, want):
    assert organ(reply, "spleen") == want


# A person named as the one to examine ("A dermatologist should examine the lesion in person") hands the read
# over; the lesion named there is not an abnormality the reply sees.
@pytest.mark.parametrize("reply, want", [
    ("I can't diagnose this from a photo. A dermatologist should examine the lesion in person.", "refer"),
    ("A radiologist should review the full series.", "refer"),
])
def test_person_should_examine(reply, want):
    assert finding(reply, f="melanoma", where="skin photo", kind="presence") == want


def open_q(reply):
    return read_reply_decision("counterfactual", reply, "What is the main finding in this image?", "any abnormality",
                               "open").decision


# Generator tokens beside byte debris (replacement characters, SentencePiece markers, hex) are no reply; a reply
# that speaks only of how the image was acquired names no finding.
@pytest.mark.parametrize("reply, want", [
    ("<s>[INST] \u2581\u2581 0x1a ## token_patch_3 \ufffd", "unparseable"),
    ("Acquired on a 3 T scanner with a FLAIR sequence.", "unparseable"),
    # a finding named beside either stays a reply
    ("FLAIR sequence shows a mass in the right temporal lobe.", "claim"),
    ("</s> A mass in the liver.", "claim"),
])
def test_debris_and_acquisition_only(reply, want):
    assert open_q(reply) == want
