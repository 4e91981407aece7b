"""One test per reply kind that set I (issue 48) showed read the wrong way round or committed
where a careful reader declines, each in wording of its own (not the set's rows), decided by hand:
a hedged "normal" is a hedged denial of the abnormality, not a claim of it."""

from __future__ import annotations

import pytest

from medscope.answers.decisions import read_reply_decision

NORMAL_Q = "Is this abdominal radiograph normal?"


def health(reply, f="bowel obstruction"):
    return read_reply_decision("counterfactual", reply, NORMAL_Q, f)


@pytest.mark.parametrize("reply", [
    "Likely normal, nothing jumps out at me.",
    "It looks probably unremarkable to me.",
    "Most likely a normal film, though I can only see one view.",
])
def test_a_hedged_normal_denies_the_abnormality(reply):
    assert health(reply).decision == "deny"


def test_a_hedged_normal_beside_a_named_abnormality_does_not_deny():
    # "probably normal" and a stated abnormality assert both ways: never a denial
    assert health("Probably normal bowel gas, but there is a dilated loop that looks abnormal.").decision != "deny"
