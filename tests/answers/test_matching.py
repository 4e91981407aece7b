"""Answer matching (counterfactual paper §3.1, §3.10): one table of real-looking replies, every rule.

Each row: reply, question, finding, question kind (None: inferred), expected claims_finding.
Expected values are what a radiologist reading the reply would say it asserts about the
asked finding.
"""

import pytest

from medscope.answers.matching import claims_finding, infer_question_kind, read_free_text

PTX = ("Is there a pneumothorax?", "pneumothorax", "presence")
NOD = ("Is there a nodule in the lung?", "nodule", "presence")
POLYP = ("Is there a polyp?", "polyp", "presence")
EFF = ("Is there a pleural effusion?", "pleural effusion", "presence")
TUM = ("Is there a brain tumor?", "brain tumor", "presence")
MASS = ("Is there a mass in the breast?", "mass", "presence")
HEALTH_LIVER = ("Is the liver healthy?", "liver lesion", "health")
HEALTH_BRAIN = ("Does this brain look normal?", "tumor", "health")
OPEN = ("What abnormality is seen in this image?", "polyp", "open")
OPEN_WHERE = ("Where is the lesion?", "lesion", "open")

TABLE = [
    # --- the paper's own examples ---
    ("no pneumothorax", *PTX, False),
    ("pneumothorax without mediastinal shift", *PTX, True),
    ("Yes", *HEALTH_LIVER, False),
    ("No abnormality", *OPEN, False),
    # --- presence: bare yes / no and their variants ---
    ("Yes", *PTX, True),
    ("yes.", *NOD, True),
    ("No", *PTX, False),
    ("No.", *POLYP, False),
    ("Negative", *PTX, False),
    ("Positive", *PTX, True),
    ("Yes, there is a large right-sided pneumothorax.", *PTX, True),
    ("No, the lungs are fully expanded.", *PTX, False),
    ("**Yes** – a polyp is visible in the upper left.", *POLYP, True),
    ("Answer: No", *POLYP, False),
    ("Final answer: yes", *NOD, True),
    # --- presence: finding-first with negation before it ---
    ("There is no pneumothorax.", *PTX, False),
    ("No evidence of pneumothorax.", *PTX, False),
    ("No definite nodule is seen.", *NOD, False),
    ("I do not see a nodule.", *NOD, False),
    ("There is no sign of a polyp in this view.", *POLYP, False),
    ("Negative for pneumothorax.", *PTX, False),
    ("The mucosa is free of polyps.", *POLYP, False),
    ("Without any pleural effusion.", *EFF, False),
    ("No pleural effusion or pneumothorax.", *EFF, False),
    ("No pneumothorax or pleural effusion.", *EFF, False),
    ("Absence of a pleural effusion.", *EFF, False),
    ("This rules out a pneumothorax.", *PTX, False),
    # --- presence: negation after the finding ---
    ("Pneumothorax: not seen.", *PTX, False),
    ("A pleural effusion is absent.", *EFF, False),
    ("The nodule is not visible in this image.", *NOD, False),
    ("Polyp not identified.", *POLYP, False),
    ("Pneumothorax is ruled out.", *PTX, False),
    # --- presence: finding claimed, other things negated ---
    ("Small left apical pneumothorax, no mediastinal shift.", *PTX, True),
    ("Pneumothorax present; no effusion.", *PTX, True),
    ("There is a 1 cm nodule in the right upper lobe.", *NOD, True),
    ("A sessile polyp is seen at 3 o'clock.", *POLYP, True),
    ("Moderate right pleural effusion.", *EFF, True),
    ("Bilateral effusions.", *EFF, True),
    ("No consolidation, but a small nodule is present.", *NOD, True),
    ("No effusion, however a pneumothorax is seen on the left.", *PTX, True),
    ("Cannot rule out a small pneumothorax.", *PTX, True),
    ("A nodule cannot be excluded.", *NOD, True),  # a hedged claim, as "cannot rule out"
    ("Pneumothorax can't be ruled out.", *PTX, True),
    ("Possible pneumothorax at the apex.", *PTX, True),
    ("Suspicious for a polyp.", *POLYP, True),
    ("Multiple nodules are seen.", *NOD, True),
    # --- synonyms and head nouns ---
    ("There is a large tumour in the left frontal lobe.", *TUM, True),
    ("An enhancing mass is present in the temporal lobe.", *TUM, True),
    ("No glioma is seen.", *TUM, False),
    ("A tumor is visible.", *MASS, True),
    ("No lump or mass.", *MASS, False),
    ("Collapsed lung on the right.", *PTX, True),
    # --- generic and health words on presence questions ---
    ("The lungs are clear.", *PTX, False),
    ("Normal chest radiograph.", *PTX, False),
    ("Unremarkable study.", *POLYP, False),
    ("A lesion is visible in the upper lobe.", *NOD, True),
    ("No lesion.", *NOD, False),
    # --- health questions: polarity inverted ---
    ("No", *HEALTH_LIVER, True),
    ("Yes, the liver appears healthy.", *HEALTH_LIVER, False),
    ("No, there is a liver lesion.", *HEALTH_LIVER, True),
    ("Healthy", *HEALTH_LIVER, False),
    ("Normal", *HEALTH_BRAIN, False),
    ("Abnormal", *HEALTH_BRAIN, True),
    ("No – there is a tumor in the right hemisphere.", *HEALTH_BRAIN, True),
    ("Yes, no tumor is seen.", *HEALTH_BRAIN, False),
    ("The brain is not normal.", *HEALTH_BRAIN, True),
    ("Within normal limits.", *HEALTH_BRAIN, False),
    # --- open questions ---
    ("Polyp", *OPEN, True),
    ("A pedunculated polyp.", *OPEN, True),
    ("None", *OPEN, False),
    ("Normal mucosa, no abnormality.", *OPEN, False),
    ("No polyp is seen.", *OPEN, False),
    ("Ulcer", *OPEN, True),  # names another abnormality: claims one
    ("Liver", *OPEN_WHERE, True),
    ("Left lung", *OPEN_WHERE, True),
    ("No lesion is present.", *OPEN_WHERE, False),
    ("Nothing abnormal.", *OPEN, False),
    # --- more phrasings seen from VLMs ---
    ("There appears to be a pneumothorax on the right.", *PTX, True),
    ("The image shows a polyp.", *POLYP, True),
    ("I can see a nodule in the left lower zone.", *NOD, True),
    ("I cannot see any nodule.", *NOD, False),
    ("No visible polyp.", *POLYP, False),
    ("The pneumothorax is not large.", *PTX, True),
    ("Findings: no acute cardiopulmonary process.", *PTX, False),
    ("Impression: right pneumothorax.", *PTX, True),
    ("The nodule is no longer visible.", *NOD, False),
    # --- undecided ---
    ("It is unclear whether there is a nodule.", *NOD, None),
    ("Cannot determine whether a polyp is present.", *POLYP, None),
    ("It is difficult to say if a pneumothorax is present.", *PTX, None),
    ("", *PTX, None),
    ("I cannot determine this from the image.", *PTX, None),
    ("Unclear.", *NOD, None),
    ("Indeterminate", *HEALTH_LIVER, None),
    ("Not sure", *OPEN, None),
]


@pytest.mark.parametrize("reply,question,finding,kind,expected", TABLE)
def test_claims_finding_table(reply, question, finding, kind, expected):
    assert claims_finding(reply, question, finding, kind) is expected


def test_table_is_large_and_covers_every_kind():
    assert len(TABLE) >= 60
    kinds = {row[3] for row in TABLE}
    assert kinds == {"presence", "health", "open"}
    assert {row[4] for row in TABLE} == {True, False, None}


@pytest.mark.parametrize(
    "question,kind",
    [
        ("Is there a pneumothorax?", "presence"),
        ("Are there any polyps?", "presence"),
        ("Does the image show a mass?", "presence"),
        ("Is the liver healthy?", "health"),
        ("Does this brain look normal?", "health"),
        ("Is this examination normal?", "health"),
        ("What abnormality is seen?", "open"),
        ("Where is the lesion?", "open"),
        ("Which organ is abnormal?", "open"),
        ("Is the image abnormal?", "presence"),  # presence of an abnormality: "Yes" claims it
        ("Is there any abnormality?", "presence"),
    ],
)
def test_infer_question_kind(question, kind):
    assert infer_question_kind(question) == kind


def test_kind_inferred_when_not_given():
    # "Yes" to a health question means absent even without the explicit kind
    assert claims_finding("Yes", "Is the liver healthy?", "lesion") is False
    assert claims_finding("Yes", "Is there a lesion?", "lesion") is True
    assert claims_finding("Yes", "Is the image abnormal?", "lesion") is True
    assert claims_finding("Present.", "Is there a lesion?", "polyp") is True
    assert claims_finding("Absent.", "Is there a lesion?", "polyp") is False


@pytest.mark.parametrize(
    "reply,action,claim",
    [
        ("Yes, a polyp is visible.", "answer", True),
        ("No polyp.", "answer", False),
        ("The image is too blurry to assess.", "clarify", None),
        ("This image is of poor quality; could you provide a better one?", "clarify", None),
        ("I cannot determine this from the image; refer to a radiologist.", "refer", None),
        ("Hmm.", "unparseable", None),
        ("", "unparseable", None),
        ("The image is blurred but a polyp is clearly present.", "answer", True),
    ],
)
def test_read_free_text(reply, action, claim):
    assert read_free_text(reply, "Is there a polyp?", "polyp", "presence") == (action, claim)
