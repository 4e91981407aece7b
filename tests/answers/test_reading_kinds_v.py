"""One test per reply kind that set V (issue 48) read wrongly, each in wording of its own (not the set's rows),
decided by hand: what a careful reader commits to, and what must stay as it was (the other polarity).

V's one flip was a statement denial ("it is not the case that") nine words before the finding, past the reach of a
plain trigger, so the denied "free of" read as a denial."""

from __future__ import annotations

from medscope.answers.decisions import read_reply_decision

ORGAN_Q = "Is the {o} visible in this CT slice?"


def organ(reply, o="liver", question=None):
    return read_reply_decision("organ_presence", reply, question or ORGAN_Q.format(o=o), o).decision


def finding(reply, f="pleural effusion", where="chest radiograph", question=None, kind=None):
    return read_reply_decision("counterfactual", reply, question or f"Is there a {f} on this {where}?", f, kind).decision


# A statement denial reaches over its whole clause: the denied "free of" affirms however far the denial stands from
# the finding. An "and" starts a statement of its own, which the denial before it does not reach.
def test_statement_denial_reaches_its_whole_clause():
    assert finding("It is not the case that the right costophrenic recess is free of effusion: a meniscus of fluid "
                   "blunts it.") == "claim"
    assert organ("It is not the case that this particular slice is devoid of the spleen: it sits behind the stomach.",
                 "spleen") == "present"
    assert finding("I do not think the film is rotated and there is no pleural effusion.") == "deny"
    assert finding("The right costophrenic recess is free of effusion.") == "deny"
