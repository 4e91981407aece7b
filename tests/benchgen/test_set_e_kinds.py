"""Kinds of error found on held-out set E (prostate MRI, tuned on in this round), each worked by
hand on our own report wordings in several organs (benchmark-MCQ paper Methods, "report-grounded
check": a key is kept only when the report explicitly supports it)."""

from __future__ import annotations

import pytest

from medscope.benchgen.questions import grounded


def _kept(question: str, options: list[str], answer: int, findings: str, impression: str) -> bool:
    q = {"question": question, "options": options, "answer": answer, "level": "perception"}
    return grounded(q, findings, impression)[0]


# Two lesions at different levels: the level of one is never the answer for the other.
TWO_LEVELS = ("LESION 1: Right lobe of the liver at the dome, 30 mm, arterially enhancing. "
              "LESION 2: Left lobe of the liver at the caudal tip, 8 mm, arterially enhancing. LR-4.", "")


@pytest.mark.parametrize("answer, kept", [(0, False)])
def test_asked_attribute_does_not_hide_the_asked_lesion(answer, kept):
    # "At what level is the left lesion?": "level" is what is asked, not a word the lesion's text must
    # hold; read that way the left lesion is found, and the right lesion's dome is no answer for it
    assert _kept("At what level is the left liver lesion?", ["Dome", "Caudal tip"], answer,
                 *TWO_LEVELS) is kept


def test_apical_adjective_names_the_lesion_at_the_apex():
    # "the apical lesion" is the lesion at the apex: the basal lesion's score is no answer for it
    findings = ("LESION 1: Left peripheral zone at the apex, 16 x 9 mm, mild restriction. PI-RADS 3. "
                "LESION 2: Right peripheral zone at the base, 10 x 6 mm, marked restriction. PI-RADS 4.")
    opts = ["PI-RADS 4", "PI-RADS 3"]
    assert not _kept("What is the PI-RADS category of the left apical lesion?", opts, 0, findings, "")


@pytest.mark.parametrize("question", ["Is the right adrenal nodule an adenoma?",
                                      "Is the left breast mass a fibroadenoma?"])
def test_yes_needs_a_sentence_calling_the_finding_so(question):
    # the sentence that places and sizes the finding says nothing of what it is; the only naming is
    # hedged ("may represent", "cannot be excluded"), so Yes is not asserted
    findings = ("A 14 mm nodule in the right adrenal gland, 12 HU. A 9 mm mass in the left breast, "
                "oval and circumscribed.")
    impression = "Both are indeterminate; this may represent an adenoma, and a fibroadenoma cannot be excluded."
    assert not _kept(question, ["Yes", "No"], 0, findings, impression)


def test_yes_kept_when_a_sentence_calls_the_finding_so():
    findings = "A 14 mm nodule in the right adrenal gland measures 8 HU."
    impression = "The right adrenal nodule is an adenoma."
    assert _kept("Is the right adrenal nodule an adenoma?", ["Yes", "No"], 0, findings, impression)
