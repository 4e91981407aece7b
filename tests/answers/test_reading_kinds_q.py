"""One test per reply kind that set Q (issue 48) showed read too timidly, over-committed or the wrong
way round, each in wording of its own (not the set's rows, except where a test says so), decided by
hand: what a careful reader commits to, and what must stay as it was (the other polarity).

Kinds: an organ named by its adjective (its outline or tissue names it, a property in it presupposes
it); an organ placed past the image's edge in its own direction; degenerate outputs (a phrase loop, a
lead-in cut before its predicate, a name stuttered beside a detection token); an organ offered two ways,
one unseen, and a denied organ that a reason clause says is seen; yes / no, names, verdicts, declines
and hand-overs in Spanish, Italian, Indonesian and Dutch; report register (cholelithiasis, bare
"stones", "not supported"); referrals ("please see a dermatologist", "needs a radiologist", "won't make
a call", "rule X in or out"); textbook statements of how a finding is graded."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver"):
    return read_reply_decision("organ_presence", reply, ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pneumothorax", where="chest X-ray"):
    return read_reply_decision("counterfactual", reply, f"Is there a {f} in this {where}?", f).decision


def read(reply, f, question, kind=None):
    return read_reply_decision("counterfactual", reply, question, f, kind)


# An organ's outline or tissue named by the organ's adjective is the organ: its polarity is the clause's.
@pytest.mark.parametrize("reply, o, want", [
    ("The cardiac shadow projects over the left hemithorax and is not enlarged.", "heart", "present"),
    ("The renal outline is smooth on both sides.", "kidneys", "present"),
    ("Splenic tissue is not seen; the left upper quadrant holds only bowel.", "spleen", "absent"),
    ("The cardiac contour is not included on this slice through the pelvis.", "heart", "absent"),
    # the organ's side is kept: the other side's outline is another organ
    ("The right renal contour is smooth.", "left kidney", "not_addressed"),
])
def test_organ_named_by_its_adjective_and_outline(reply, o, want):
    assert organ(reply, o) == want


# A property that lies in the organ, named by the organ's adjective, presupposes the organ, denied or not
# ("no focal lesion in the liver" already read so); a vessel named by the adjective may run elsewhere.
@pytest.mark.parametrize("reply, o, want", [
    ("No focal splenic lesion.", "spleen", "present"),
    ("A 2 cm simple pancreatic cyst is present in the body.", "pancreas", "present"),
    ("No renal calculi or hydronephrosis.", "kidneys", "present"),
    ("The hepatic veins drain into the IVC.", "liver", "not_addressed"),
    # a side the adjective does not give: "renal" says nothing of which kidney
    ("No renal lesion.", "left kidney", "not_addressed"),
    # named and denied: the adjective's property does not overrule the organ's own clause
    ("No hepatic lesion can be assessed because the liver is not included.", "liver", "absent"),
])
def test_property_named_by_the_organs_adjective(reply, o, want):
    assert organ(reply, o) == want


# Past the edge in the edge's own direction is off the image; on the near side of an edge is on it.
@pytest.mark.parametrize("reply, o, want", [
    ("The femoral heads lie beyond the inferior margin of the scan.", "femoral heads", "absent"),
    ("The thyroid sits above the upper edge of this field of view.", "thyroid", "absent"),
    ("The bladder lies well beyond the caudal limit of the acquired series, so it is not seen.", "bladder", "absent"),
    ("The coccyx lies just above the lower edge of the image.", "coccyx", "present"),
    ("The thyroid sits just below the upper edge of this image.", "thyroid", "present"),
])
def test_organ_past_the_edge_of_the_image(reply, o, want):
    assert organ(reply, o) == want


@pytest.mark.parametrize("reply", [
    "the lung the lung the lung the lung",
    "no pneumothorax no pneumothorax no pneumothorax",
    # copied from set Q (LQ065's kind, asked here about a pneumothorax)
    "breast lesion breast lesion breast lesion breast lesion",
])
def test_phrase_loop_is_unparseable(reply):
    assert finding(reply) == "unparseable"


@pytest.mark.parametrize("reply, o, want", [
    ("Looking at this slice, the kidneys", "kidneys", "not_addressed"),
    ("On close inspection of the image, the left kidney", "left kidney", "not_addressed"),
    ("spleen spleen <seg_012> mask", "spleen", "not_addressed"),
    ("liver liver <loc_0123> 0.91", "liver", "not_addressed"),
    # a predicate, or a full box of location tokens, is a reply again
    ("Looking at the image, the kidneys are visible", "kidneys", "present"),
    ("The spleen is visible <loc_0412>", "spleen", "present"),
])
def test_cut_off_and_token_garbage_are_not_addressed(reply, o, want):
    assert organ(reply, o) == want


@pytest.mark.parametrize("reply, o, want", [
    ("The pancreas may be atrophic and therefore not visible, or it may be the thin soft tissue anterior to the "
     "splenic vein.", "pancreas", "not_addressed"),
    ("The spleen might be hidden behind the stomach, or it might be the soft tissue lateral to the kidney.", "spleen",
     "not_addressed"),
    # one hedged reading alone is a hedged yes, as before
    ("The gallbladder could be the small hypodense focus next to segment V.", "gallbladder", "present"),
])
def test_organ_offered_two_ways_one_unseen(reply, o, want):
    assert organ(reply, o) == want


def test_finding_offered_two_ways_one_unseen_refers():
    assert finding("The pneumothorax could be small and therefore not visible, or it may be the lucency at the "
                   "apex.") == "refer"


@pytest.mark.parametrize("reply, want", [
    ("The kidneys are not seen here, as they are both clearly visible at the level of the hila.", "unclear"),
    ("The kidneys are not visible, as they lie lower down.", "absent"),
    ("The kidneys are visible, as both can be seen lateral to the psoas.", "present"),
])
def test_denied_then_seen_in_a_reason_clause(reply, want):
    assert organ(reply, "kidneys") == want


@pytest.mark.parametrize("reply, f, want", [
    ("Tidak tampak pneumotoraks pada foto ini.", "pneumothorax", "deny"),
    ("Tampak pneumotoraks kanan.", "pneumothorax", "claim"),
    ("Terdapat efusi pleura kiri yang kecil.", "pleural effusion", "claim"),
    ("Tidak ditemukan fraktur.", "fracture", "deny"),
    # "tidak ada X yang terlihat" (no X that is seen) is one denial, not a denial beside a presence word
    ("Tidak ada fraktur yang terlihat pada gambar ini.", "fracture", "deny"),
    ("Kemungkinan ada fraktur kecil.", "fracture", "unclear"),
    ("Saya tidak bisa menentukan apakah ada pneumotoraks.", "pneumothorax", "refer"),
])
def test_indonesian(reply, f, want):
    assert finding(reply, f) == want


@pytest.mark.parametrize("reply, want", [
    ("Hati terlihat jelas pada irisan ini.", "present"),
    ("Hati tidak terlihat pada irisan ini.", "absent"),
])
def test_indonesian_organ(reply, want):
    assert organ(reply, "liver") == want


@pytest.mark.parametrize("reply, want", [
    # a yes or no of its own beside a clause that only names the finding
    ("Neumotórax apical derecho. Sí.", "claim"),
    ("Pneumotorace apicale destro. Sì.", "claim"),
    ("Ja, een kleine pneumothorax rechts apicaal.", "claim"),
    ("Nee. Geen pneumothorax zichtbaar.", "deny"),
    # the English reading of the particle contradicted by the reply's own language
    ("Sì, non si vede pneumotorace.", "unclear"),
    ("Sí. No se observa neumotórax.", "unclear"),
])
def test_yes_and_no_in_another_language(reply, want):
    assert finding(reply) == want


def test_yes_in_another_language_to_a_question_about_absence_is_not_read_as_presence():
    # "Is there no pneumothorax?" "Sí" would say there is none, against the clause naming one: the yes clause is
    # read only where it answers presence, and nothing else here commits
    got = read("Neumotórax apical derecho. Sí.", "pneumothorax", "Is there no pneumothorax in this chest X-ray?")
    assert got.decision == "unparseable"


@pytest.mark.parametrize("reply, want", [
    ("Ik kan dit niet beoordelen; raadpleeg een radioloog.", "refer"),
    ("No puedo confirmar ni descartar un neumotórax; debe ser valorado por un radiólogo.", "refer"),
    ("Non posso fare una diagnosi: la faccia valutare da un radiologo.", "refer"),
    ("Konsultasikan dengan dokter Anda.", "refer"),
    # "I can't exclude X" is a hedge in these languages too, not a decline and not a denial
    ("Non posso escludere uno pneumotorace.", "unclear"),
])
def test_declines_and_hand_overs_in_other_languages(reply, want):
    assert finding(reply) == want


@pytest.mark.parametrize("reply, f, want", [
    ("Multiple mobile shadowing calculi in the gallbladder — cholelithiasis.", "gallstones", "claim"),
    ("No cholelithiasis.", "gallstones", "deny"),
    ("GB: thin wall, no calculi.", "gallstones", "deny"),
    # copied from set Q (LQ040)
    ("Gallbladder is thin-walled and anechoic; no stones or sludge.", "gallstones", "deny"),
    ("Normal appendix; acute appendicitis is not supported by these images.", "appendicitis", "deny"),
    ("Clear lungs; pneumonia not favoured.", "pneumonia", "deny"),
    ("Dilated 11 mm appendix with periappendiceal stranding; appendicitis is favoured.", "appendicitis", "claim"),
])
def test_report_register(reply, f, want):
    assert finding(reply, f) == want


@pytest.mark.parametrize("reply, f", [
    ("I can't tell you whether this mole is cancer. Please see a dermatologist, who can look at the lesion with a "
     "dermatoscope.", "melanoma"),
    ("Please show this to an orthopaedic surgeon.", "fracture"),
    ("This needs a radiologist; I won't make a call on a phone photo of a monitor.", "pneumothorax"),
    ("I won't make a call on this one — get a formal read.", "pneumothorax"),
    ("I can't rule a fracture in or out on one view.", "fracture"),
    # set P's known misreading (LP002's kind), read deny before this round
    ("I can't reliably rule a bleed in or out — please get an urgent read.", "intracranial haemorrhage"),
])
def test_referrals_refer(reply, f):
    assert finding(reply, f) == "refer"


def test_a_lesion_named_only_in_the_referral_is_no_claim():
    got = read("Please see a dermatologist, who can examine the lesion properly.", "melanoma",
               "Is there a melanoma in this dermoscopy image?")
    assert got.decision == "refer"


def test_a_referral_that_gives_its_reason_still_says_it():
    # only what the person will do is set aside: "as this looks abnormal" is the reply's own verdict
    got = read("Please see a doctor as this looks abnormal.", "pneumothorax", "Is this chest X-ray normal?", "health")
    assert got.decision == "claim"


@pytest.mark.parametrize("reply, f, want", [
    ("Pneumothorax can be classified as primary or secondary.", "pneumothorax", "unparseable"),
    ("Fractures may be classified by their location into proximal, waist and distal types.", "fracture", "unparseable"),
    # the reply's own grade is an observation
    ("Hydronephrosis can be graded as mild.", "hydronephrosis", "claim"),
])
def test_how_a_finding_is_graded_in_general(reply, f, want):
    assert finding(reply, f) == want
