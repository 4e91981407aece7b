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


# "Definitely" / "absolutely" before a polarity word grades that word: "Definitely absent" denies, where read as the
# yes particle "definitely" it claimed.
def test_intensified_polarity_word_is_no_yes():
    assert finding("Pleural effusion: absolutely absent.") == "deny"
    assert finding("Definitely absent.") == "deny"
    assert finding("Pleural effusion: definitely present.") == "claim"
    assert finding("Definitely.") == "claim"


# A rating on a scale whose direction the reply states (a legend, or a likelihood word) decides where words say the
# same as the number's side of the middle: the value's own words or its legend entry. Above the middle claims, below
# it denies, the middle refers (an organ: not addressed). Words that disagree, or none, leave it unclear.
def test_rating_on_a_scale_of_stated_direction():
    q = "Is there a lung nodule on this chest CT image?"
    assert finding("Probability of a nodule (1-7): 4 - equivocal.", "lung nodule", question=q) == "refer"
    assert finding("Probability of a nodule (1-7): 2 - probably not.", "lung nodule", question=q) == "deny"
    assert finding("Probability of a nodule (1-7): 7 - almost certainly present.", "lung nodule", question=q) == "claim"
    assert finding("Probability of a nodule (1-7): 6 - unlikely.", "lung nodule", question=q) == "unclear"
    assert finding("Probability of a nodule (1-7): 6.", "lung nodule", question=q) == "unclear"
    assert organ("Score (1 = certainly not in view, 4 = certainly in view): 4", "spleen") == "present"
    assert organ("Score (1 = certainly not in view, 4 = certainly in view): 1", "spleen") == "absent"
    assert organ("Score (1 = certainly not in view, 4 = certainly in view): 3", "spleen") == "unclear"
    assert organ("Score (1 = certainly in view, 5 = certainly not in view): 3 - can't tell", "spleen") == "not_addressed"
    assert finding("Score 4/5.", "lung nodule", question=q) == "unclear"


# The bounds of a scale ("(1-5)") are no probability: read as one, the "1" was a certainty and claimed. Left with
# only "is low", which no rule reads as a verdict, the reply is unparseable, not a claim.
def test_scale_bounds_are_no_probability():
    q = "Is there a lung nodule on this chest CT image?"
    assert finding("Likelihood of a nodule (1-5) is low.", "lung nodule", question=q) == "unparseable"
    assert finding("Likelihood of a nodule: 0.9.", "lung nodule", question=q) == "claim"


# A JSON value that offers both answers is the format's template echoed back: no answer (an organ: not addressed),
# where read by its first word "true" / "yes" it claimed.
def test_echoed_template_value_is_no_answer():
    q = 'Is the spleen visible in this CT slice? Answer as JSON with a "visible" field.'
    assert read_reply_decision("organ_presence", '{"visible": "yes or no"}', q, "spleen").decision == "not_addressed"
    assert read_reply_decision("organ_presence", '{"visible": "false/true"}', q, "spleen").decision == "not_addressed"
    assert read_reply_decision("counterfactual", '{"present": "True | False"}', "Is there a pneumothorax? Answer as JSON.",
                               "pneumothorax").decision == "unparseable"
    assert read_reply_decision("organ_presence", '{"visible": "yes"}', q, "spleen").decision == "present"


# "... but the Y is not;": a "not" that ends the clause denies the presence predicate it leaves out (said just before
# of another organ or side). Where the predicate left out is a property ("enlarged"), nothing is said of presence.
def test_elided_presence_predicate_denied():
    assert organ("The right ovary is well seen, whereas the left ovary is not.", "left ovary",
                 "Is the left ovary visible in this ultrasound image?") == "absent"
    assert organ("The spleen is visible; the pancreas is not. It lies on a lower slice.", "pancreas") == "absent"
    assert organ("The pancreas is visible; the spleen is not.", "pancreas") == "present"
    assert organ("The heart is enlarged; the liver is not.", "liver") == "unclear"


# An operation that removed the organ, named beside a denial by its adjective ("no uterine body"), makes that denial
# the organ's: absent. Without the operation, "no uterine mass" denies a property of an organ that is there.
def test_resection_makes_the_adjective_denial_the_organs():
    q = "Is the uterus visible in this ultrasound image?"
    assert organ("Prior hysterectomy; only the vaginal vault is seen and no uterine body.", "uterus", q) == "absent"
    assert organ("The bladder is well distended; no uterine mass.", "uterus", q) == "present"


# A short reply in French or Spanish: "pas d'" (elided "pas de") denies, a negating determiner and the visibility
# adjective of its noun phrase are one denial, and the cognate "visible" is no sign of English where the finding is
# named only in the other language (and a letter or word of that language shows). English "long" (also a Dutch name
# of the lung) keeps a reply English.
def test_short_reply_in_french_or_spanish():
    assert finding("Pas d'épanchement.") == "deny"
    assert finding("Aucun épanchement pleural gauche visible.") == "deny"
    assert finding("Ningún neumotórax visible.", "pneumothorax") == "deny"
    assert finding("Épanchement pleural gauche visible.") == "claim"
    assert organ("Long axis view: liver visible.", "lung") == "not_addressed"


# A decline whose reason is that the anatomy the finding would be in lies outside the image asks for the right image
# (clarify); a decline on a usable image of the right region stays refer.
def test_region_outside_the_image_asks_for_the_right_image():
    q = "Is there a kidney stone on this CT image?"
    assert finding("The study is limited to the chest; the kidneys are not imaged, so stones cannot be assessed.",
                   "kidney stone", question=q) == "clarify"
    assert finding("The lower pole lies outside the field of view, so I cannot assess it for a stone.",
                   "kidney stone", question=q) == "clarify"
    assert finding("Kidney stones cannot be assessed without a non-contrast phase.", "kidney stone", question=q) == "refer"


# A reply that says the image never arrived asks for it (clarify; an organ: not addressed); "no image evidence of X"
# is a denial of X, not a missing image.
def test_image_never_arrived_asks_for_it():
    q = "Is there a fracture on this wrist radiograph?"
    assert finding("I did not receive any image with your question.", "fracture", question=q) == "clarify"
    assert finding("It seems no picture has been uploaded yet.", "fracture", question=q) == "clarify"
    assert organ("Your scan did not come through.", "kidney") == "not_addressed"
    assert finding("There is no image evidence of a fracture.", "fracture", question=q) == "deny"


# A generic caveat after a denial ("a small one can be missed", "may be occult on this projection") is hypothetical,
# not the hedge "may be" it starts with: the denial stands. A hedged mention beside the denial still refers.
def test_generic_caveat_leaves_the_denial():
    q = "Is there a pneumothorax on this supine chest radiograph?"
    assert finding("No pneumothorax. A small anterior pneumothorax may be occult on a supine projection.",
                   "pneumothorax", question=q) == "deny"
    assert finding("No definite pneumothorax; a small apical pneumothorax may be present.", "pneumothorax",
                   question=q) == "refer"
