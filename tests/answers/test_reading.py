"""The free-text reader: the hand-labelled reply table, scope rules one by one,
the rule that decided, and the probe reading through the same reader.

Expected decisions are the labels in ``medscope/answers/data/replies.yaml``, written by reading
each reply as a clinician would (see the file's header), not by running the code.
"""

from collections import Counter

import pytest

from medscope.answers.context import status
from medscope.answers.corpus import LABELS, agreement, decision, load_corpus
from medscope.answers.matching import claims_finding, normalize, read_free_text, read_decision
from medscope.protocols.organ_presence.replies import read_reply, text_verdict

CORPUS = load_corpus()


@pytest.mark.parametrize("row", CORPUS, ids=[f"{i}-{r.style}" for i, r in enumerate(CORPUS)])
def test_every_labelled_reply(row):
    got = decision(*read_free_text(row.reply, row.question, row.finding, row.kind))
    assert got == row.expect, row.reply


def test_table_size_and_coverage():
    assert len(CORPUS) >= 200
    assert {r.kind for r in CORPUS} == {"presence", "health", "open"}
    assert {r.expect for r in CORPUS} == set(LABELS)
    styles = Counter(r.style for r in CORPUS)
    for style in ("contracted", "scope", "verdict-line", "verdict-first", "hedge", "clarify", "refer",
                  "synonym", "list", "language", "health", "open", "probe", "verbose", "heldout", "heldout2"):
        assert styles[style] >= 5, style


def test_agreement_target_and_no_flips():
    a = agreement(read_free_text)
    assert a.rate >= 0.97 and a.flips == 0, [(r.reply, got) for r, got in a.misses]


def test_agreement_counts_flips_separately():
    # A reader that says "claim" to everything: its flips are exactly the rows labelled deny.
    a = agreement(lambda *_: ("answer", True))
    assert a.flips == sum(r.expect == "deny" for r in CORPUS)
    assert a.agree == sum(r.expect == "claim" for r in CORPUS)


@pytest.mark.parametrize(
    "sentence, term, expected",
    [
        ("no pneumothorax", "pneumothorax", "negated"),
        ("there does not appear to be a pneumothorax", "pneumothorax", "negated"),
        ("no doubt there is a pneumothorax", "pneumothorax", "affirmed"),
        ("no change in the size of the pneumothorax", "pneumothorax", "affirmed"),
        ("can not rule out a pneumothorax", "pneumothorax", "possible"),
        ("a nodule can not be excluded in the right upper zone", "nodule", "possible"),
        ("the pneumothorax has resolved", "pneumothorax", "negated"),
        ("history of pneumothorax", "pneumothorax", "historical"),
        ("it is unclear whether there is a nodule", "nodule", "hypothetical"),
        ("unable to assess for pneumothorax due to motion", "pneumothorax", "hypothetical"),
        ("probably no polyp", "polyp", "negated"),  # nearest trigger wins
        ("possible polyp", "polyp", "possible"),
        ("the pneumothorax is not large", "pneumothorax", "affirmed"),  # "not" outside the predicate
        ("the spleen is not clearly visible", "spleen", "negated"),
        ("no effusion, but a pneumothorax is seen", "pneumothorax", "affirmed"),  # "but" ends scope
        ("pneumothorax without mediastinal shift", "pneumothorax", "affirmed"),
        ("a pneumothorax is unlikely", "pneumothorax", "negated"),
    ],
)
def test_context_status(sentence, term, expected):
    start = sentence.index(term)
    assert status(sentence, start, start + len(term)) == expected


def test_contractions_are_expanded():
    assert normalize("I don’t think there's one; it can't be") == "i do not think there is one; it can not be"


@pytest.mark.parametrize(
    "reply, kind, rule, claim",
    [
        ("Looks like a polyp.\nFinal answer: No", "presence", "verdict-line", False),
        ("Polyp: yes", "presence", "label-line", True),
        ("Polyp: no", "health", "label-line", False),  # a label is finding polarity, never flipped
        ("Yes", "health", "leading-yes-no", False),  # a yes/no particle carries the question's polarity
        ("None.", "health", "leading-yes-no", False),  # a polarity word does not
        ("There is no polyp.", "presence", "mention", False),
        ("Nothing abnormal.", "presence", "health-words", False),
        ("It is not visible on this slice.", "presence", "predicate", False),
    ],
)
def test_rule_that_decided(reply, kind, rule, claim):
    r = read_decision(reply, "Is there a polyp?", "polyp", kind)
    assert (r.action, r.claim, r.rule) == ("answer", claim, rule)


def test_undecided_is_refer_or_clarify_and_claims_nothing():
    assert read_decision("Cannot determine.", "Is there a polyp?", "polyp", "presence").action == "refer"
    assert read_decision("Too blurry to tell.", "Is there a polyp?", "polyp", "presence").action == "clarify"
    assert claims_finding("Cannot determine whether a polyp is present.", "Is there a polyp?", "polyp") is None


def test_view_synonyms_extend_the_shipped_table():
    q = "Is there a lesion in this breast ultrasound image?"
    assert claims_finding("Papilloma at 2 o'clock.", q, "breast lesion", "presence") is None
    assert claims_finding("Papilloma at 2 o'clock.", q, "breast lesion", "presence", synonyms=["papilloma"]) is True


@pytest.mark.parametrize(
    "text, organ, verdict",
    [
        ("The spleen isn't visible in this slice.", "spleen", "absent"),
        ("I couldn't find the pancreas.", "pancreas", "absent"),
        ("No doubt the liver is present.", "liver", "present"),
        ("Liver: not seen", "liver", "absent"),
        ("The image shows the liver. Final answer: the spleen is not visible.", "spleen", "absent"),
        ("Only the right kidney is visible.", "left kidney", "absent"),
        ("Hard to say if the gallbladder is included.", "gallbladder", "not_addressed"),
    ],
)
def test_probe_uses_the_same_reader(text, organ, verdict):
    assert text_verdict(text, organ) == verdict
    assert read_reply(text, "free_text", ["hard to say"], organ=organ).verdict == verdict


def test_a_label_cannot_be_unclear():
    # unclear is the reader's admission, never a clinician's label: a table labelled unclear
    # would score the reader's abstentions as agreement.
    assert "unclear" not in LABELS
    assert decision("unclear", None) == "unclear"
