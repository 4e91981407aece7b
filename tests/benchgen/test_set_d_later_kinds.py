"""Issue 49, the round tuned on held-out set D (pancreas CT / MR): the kinds of miss it found, each
on hand-written reports of other organs too, so the rules are checked as organ-agnostic.

Every key was worked out by hand from the report as a radiologist reads it; ``asserted`` says
whether the report states the key. The benchmark-MCQ paper's Methods keep a key only when it is
"explicitly supported by the source text".
"""

from __future__ import annotations

import pytest

from medscope.benchgen.questions import grounded


def check(findings: str, impression: str, question: str, options: list[str], answer: int):
    q = {"question": question, "options": options, "answer": answer, "level": "perception"}
    return grounded(q, findings, impression)


# A question about what the report recommends reads the recommendation; a recommendation still
# asserts no finding. (findings, impression, question, options, key index, asserted)
RECOMMENDATIONS = [
    ("Branch-duct IPMN 1.6 cm.", "Follow-up MRI in 1 year is recommended.", "When is follow-up MRI recommended?",
     ["In 1 year", "In 6 months"], 0, True),
    ("Branch-duct IPMN 1.6 cm.", "Follow-up MRI in 1 year is recommended.", "When is follow-up MRI recommended?",
     ["In 6 months", "In 1 year"], 0, False),
    ("Indeterminate 2 cm right renal lesion.", "Recommend renal mass protocol CT.", "Which study is recommended?",
     ["Renal mass protocol CT", "Ultrasound"], 0, True),
    ("Indeterminate 2 cm right renal lesion.", "Recommend renal mass protocol CT.", "Is a renal mass protocol CT recommended?",
     ["Yes", "No"], 0, True),
    # the finding a recommendation names is not asserted by it
    ("Indeterminate 2 cm right renal lesion.", "Recommend CT to exclude renal cell carcinoma.",
     "Is there a renal cell carcinoma?", ["Yes", "No"], 0, False),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", RECOMMENDATIONS)
def test_a_question_about_the_recommendation_reads_it(findings, impression, question, options, answer, asserted):
    kept, evidence, reason = check(findings, impression, question, options, answer)
    assert kept is asserted, (reason, evidence)


# An earlier size ("previously 1.7 cm", "It measured 4.1 cm in 2022", "1.2 cm on the prior CT") answers
# only a question about the earlier size, and the current one only the current question.
PRIOR_SIZES = [
    ("The cyst in the splenic hilum now measures 2.4 x 1.9 cm, previously 1.7 x 1.5 cm.", "",
     "What was the size of the splenic cyst on the prior study?", ["1.7 cm", "2.4 cm"], 0, True),
    ("The cyst in the splenic hilum now measures 2.4 x 1.9 cm, previously 1.7 x 1.5 cm.", "",
     "What was the size of the splenic cyst on the prior study?", ["2.4 cm", "1.7 cm"], 0, False),
    ("The cyst in the splenic hilum now measures 2.4 x 1.9 cm, previously 1.7 x 1.5 cm.", "",
     "What is the size of the splenic cyst?", ["1.7 cm", "2.4 cm"], 0, False),
    ("A 4.2 x 3.6 cm adrenal myelolipoma. It measured 4.1 cm in 2022.", "",
     "What was the size of the myelolipoma in 2022?", ["4.1 cm", "4.2 cm"], 0, True),
    ("A 4.2 x 3.6 cm adrenal myelolipoma. It measured 4.1 cm in 2022.", "",
     "What was the size of the myelolipoma in 2022?", ["4.2 cm", "4.1 cm"], 0, False),
    # no earlier size given: the current one is no answer to the earlier one
    ("A 4.2 x 3.6 cm adrenal myelolipoma.", "", "What was the previous size of the myelolipoma?",
     ["4.2 cm", "3.6 cm"], 0, False),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", PRIOR_SIZES)
def test_an_earlier_size_answers_only_the_earlier_size_question(findings, impression, question, options, answer,
                                                                 asserted):
    kept, evidence, reason = check(findings, impression, question, options, answer)
    assert kept is asserted, (reason, evidence)


# A question about a structure's normal state is the denial of its abnormal one: "dilated to 6 mm"
# answers No to "of normal calibre?" and "non-dilated?", a normal calibre answers Yes.
NORMAL_STATE = [
    ("The common bile duct is dilated to 11 mm.", "", "Is the common bile duct of normal calibre?", ["Yes", "No"], 1,
     True),
    ("The common bile duct is dilated to 11 mm.", "", "Is the common bile duct of normal calibre?", ["Yes", "No"], 0,
     False),
    ("Obstructing calculus in the distal left ureter, which is dilated to 9 mm upstream.", "", "Is the left ureter non-dilated?",
     ["Yes", "No"], 1, True),
    ("The common bile duct is not dilated.", "", "Is the common bile duct of normal calibre?", ["Yes", "No"], 0, True),
    # the other duct's dilatation says nothing of the asked one's
    ("The main pancreatic duct is dilated to 6 mm.", "", "Is the common bile duct of normal calibre?", ["Yes", "No"],
     1, False),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", NORMAL_STATE)
def test_a_normal_state_question_is_read_as_the_denial_of_the_abnormal_one(findings, impression, question, options,
                                                                           answer, asserted):
    kept, evidence, reason = check(findings, impression, question, options, answer)
    assert kept is asserted, (reason, evidence)


# "The SMA is free" / "are spared" answers No to involvement; vessel and duct abbreviations are read as
# their names; "displaced but not narrowed" denies the narrowing; a lesion noun is named by its
# adjective ("cystic lesion in the tail" is the tail cyst); "Does X have Y?" asks about Y of X.
VESSELS_AND_NOUNS = [
    ("The mass abuts the SMV. The SMA, coeliac axis and common hepatic artery are free with preserved fat planes.", "",
     "Does the pancreatic mass involve the superior mesenteric artery?", ["Yes", "No"], 1, True),
    ("The mass abuts the SMV. The SMA, coeliac axis and common hepatic artery are free with preserved fat planes.", "",
     "Does the mass involve the SMA?", ["Yes", "No"], 0, False),
    # the SMV is abutted, not said free: no No to its involvement
    ("The mass abuts the SMV. The SMA is free.", "", "Does the mass involve the superior mesenteric vein?",
     ["Yes", "No"], 1, False),
    ("The IVC is displaced but not narrowed by the right adrenal mass.", "", "Is the inferior vena cava narrowed?",
     ["Yes", "No"], 1, True),
    ("The CBD is dilated to 12 mm.", "", "Is the common bile duct dilated?", ["Yes", "No"], 0, True),
    ("A 3.4 cm unilocular cystic lesion in the left ovary with a thin wall and no solid component.", "",
     "Does the left ovarian cyst have a solid component?", ["Yes", "No"], 1, True),
    ("A 3.4 cm unilocular cystic lesion in the left ovary with a thin wall and no solid component.", "",
     "Does the left ovarian cyst have a solid component?", ["Yes", "No"], 0, False),
    ("A 2.1 cm multiloculated cystic lesion in the right kidney communicates with the collecting system.", "",
     "Does the right renal cyst communicate with the collecting system?", ["Yes", "No"], 0, True),
    ("A 2.1 cm multiloculated cystic lesion in the right kidney communicates with the collecting system.", "",
     "Does the left renal cyst communicate with the collecting system?", ["Yes", "No"], 0, False),
    # "free fluid" is fluid, not a structure called free
    ("Small volume of free fluid in the pelvis.", "", "Is there free fluid?", ["Yes", "No"], 0, True),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", VESSELS_AND_NOUNS)
def test_free_vessels_abbreviations_and_lesion_adjectives(findings, impression, question, options, answer, asserted):
    kept, evidence, reason = check(findings, impression, question, options, answer)
    assert kept is asserted, (reason, evidence)


# An operation in any of its names answers "What operation has the patient had?" (the Whipple
# procedure is a pancreaticoduodenectomy); "splenectomy" answers "Has the spleen been removed?"; an
# operation's indication ("nephrectomy for renal cell carcinoma") answers the indication question,
# though the lesion it names is gone and so answers no presence question.
OPERATIONS = [
    ("Post-Whipple changes. No local recurrence.", "", "What operation has the patient had?",
     ["Pancreaticoduodenectomy", "Distal pancreatectomy"], 0, True),
    ("Post-Whipple changes. No local recurrence.", "", "What operation has the patient had?",
     ["Distal pancreatectomy", "Pancreaticoduodenectomy"], 0, False),
    ("Status post right hemicolectomy. No recurrence.", "", "What operation has the patient had?",
     ["Right hemicolectomy", "Sigmoid colectomy"], 0, True),
    ("Status post distal pancreatectomy and splenectomy for mucinous cystic neoplasm.", "",
     "Has the spleen been removed?", ["Yes", "No"], 0, True),
    ("Status post distal pancreatectomy and splenectomy for mucinous cystic neoplasm.", "",
     "Has the spleen been removed?", ["Yes", "No"], 1, False),
    ("Status post left nephrectomy for renal cell carcinoma. The right kidney is normal.", "",
     "Has the left kidney been removed?", ["Yes", "No"], 0, True),
    # the operation removed another organ: nothing said of the asked one
    ("Status post cholecystectomy. The spleen is normal in size.", "", "Has the spleen been removed?",
     ["Yes", "No"], 0, False),
    ("Status post left nephrectomy for renal cell carcinoma.", "", "What was the indication for the nephrectomy?",
     ["Renal cell carcinoma", "Angiomyolipoma"], 0, True),
    ("Status post left nephrectomy for renal cell carcinoma.", "", "What was the indication for the nephrectomy?",
     ["Angiomyolipoma", "Renal cell carcinoma"], 0, False),
    ("Status post left nephrectomy for renal cell carcinoma.", "", "Is there a renal cell carcinoma?",
     ["Yes", "No"], 0, False),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", OPERATIONS)
def test_operations_removals_and_indications(findings, impression, question, options, answer, asserted):
    kept, evidence, reason = check(findings, impression, question, options, answer)
    assert kept is asserted, (reason, evidence)


# "Multiple lesions ... The largest is in the left parietal lobe and measures 2.4 cm.": a sentence
# opening with "the largest" after a group describes the group's largest member, the dominant lesion;
# "The others measure up to 8 mm and lie in the frontal lobes" is the rest of the group, never it.
GROUP_THEN_LARGEST = ("Multiple ring-enhancing lesions in both cerebral hemispheres. The largest is in the left "
                      "parietal lobe and measures 2.4 cm, with surrounding oedema. The others measure up to 8 mm and "
                      "lie in the frontal lobes. No midline shift.")


def test_a_sentence_on_the_largest_of_a_group_gives_the_dominant_lesion():
    from pathlib import Path

    from medscope.benchgen.extract import extract_with_rejects
    from medscope.benchgen.schema import load_schema

    brain = load_schema(str(Path(__file__).parents[1] / "data" / "benchgen" / "synthetic" / "brain_mri_schema.yaml"))
    got, unset = extract_with_rejects(brain, GROUP_THEN_LARGEST, "")
    assert {k: v for k, (v, _) in got.items()} == {
        "tumour_present": "yes", "hemisphere": "left hemisphere", "lobe": "parietal", "size": "2 to 3.9 cm",
        "enhancement": "yes", "oedema": "yes", "midline_shift": "no"}
    assert unset == {"haemorrhage": "not_in_report"}


@pytest.mark.parametrize("question,options,asserted", [
    ("Which lobe contains the largest lesion?", ["Parietal lobe", "Frontal lobe"], True),
    ("Which lobe contains the largest lesion?", ["Frontal lobe", "Parietal lobe"], False),
    ("What is the size of the largest lesion?", ["24 mm", "8 mm"], True),
    ("What is the size of the largest lesion?", ["8 mm", "24 mm"], False),
    ("On which side is the largest lesion?", ["Left", "Right"], True),
])
def test_questions_on_the_largest_of_a_group(question, options, asserted):
    kept, evidence, reason = check(GROUP_THEN_LARGEST, "", question, options, 0)
    assert kept is asserted, (reason, evidence)
    assert not kept or evidence.startswith("The largest is in the left parietal lobe")


# "most suggestive of X" signs the diagnosis as "most consistent with" does ("suggestive of" alone
# stays a hedge); a patient's age ("24-year-old") is no old, historical finding.
DIAGNOSIS_WORDING = [
    ("A 1.4 cm arterially hyperenhancing lesion in segment 6.", "Most suggestive of a focal nodular hyperplasia.",
     "What is the most likely diagnosis of the segment 6 lesion?", ["Focal nodular hyperplasia", "Metastasis"], 0,
     True),
    ("A 1.4 cm arterially hyperenhancing lesion in segment 6.", "Suggestive of a focal nodular hyperplasia.",
     "Is there a focal nodular hyperplasia?", ["Yes", "No"], 0, False),
    ("A 3.1 cm solid mass in the right testis.",
     "3.1 cm right testicular mass. In this 30-year-old man, seminoma is favoured; lymphoma is less likely.",
     "What is the favoured diagnosis of the testicular mass?", ["Seminoma", "Lymphoma"], 0, True),
    ("A 3.1 cm solid mass in the right testis.",
     "3.1 cm right testicular mass. In this 30-year-old man, seminoma is favoured; lymphoma is less likely.",
     "What is the favoured diagnosis of the testicular mass?", ["Lymphoma", "Seminoma"], 0, False),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", DIAGNOSIS_WORDING)
def test_diagnosis_wording(findings, impression, question, options, answer, asserted):
    kept, evidence, reason = check(findings, impression, question, options, answer)
    assert kept is asserted, (reason, evidence)


# A question naming only the kind of its answer ("Which anatomic variant is present?") is answered by
# the answer asserted alone; "borderline resectable" states that option, never "Resectable" inside it.
ANSWER_KINDS = [
    ("Retroaortic left renal vein. Both kidneys are normal.", "", "Which anatomic variant is present?",
     ["Retroaortic left renal vein", "Circumaortic left renal vein"], 0, True),
    ("Retroaortic left renal vein. Both kidneys are normal.", "", "Which anatomic variant is present?",
     ["Circumaortic left renal vein", "Retroaortic left renal vein"], 0, False),
    ("No pancreas divisum. Normal pancreas.", "", "Which anatomic variant is present?",
     ["Pancreas divisum", "Annular pancreas"], 0, False),
    ("Hilar cholangiocarcinoma with encasement of the right hepatic artery.", "Borderline resectable.",
     "What is the resectability status of the tumour?", ["Borderline resectable", "Resectable"], 0, True),
    ("Hilar cholangiocarcinoma with encasement of the right hepatic artery.", "Borderline resectable.",
     "What is the resectability status of the tumour?", ["Resectable", "Borderline resectable"], 0, False),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", ANSWER_KINDS)
def test_answer_kind_questions_and_options_inside_others(findings, impression, question, options, answer, asserted):
    kept, evidence, reason = check(findings, impression, question, options, answer)
    assert kept is asserted, (reason, evidence)


# The dominant lesion's place: places that belong to another finding ("with oedema of the frontal and
# parietal lobes", "atrophy of the body and tail") are not the lesion's; a number with a unit after a
# place ("segment 6, 18 mm") is a size, not a second place; an incidental lesion's own words place it.
# A lesion that does span two places still gets none.
@pytest.mark.parametrize("schema_file,findings,field,value", [
    ("brain_mri_schema.yaml", "Incidental 6 mm enhancing lesion in the left frontal lobe, likely a meningioma.",
     "lobe", "frontal"),
    ("brain_mri_schema.yaml", "A 2.5 cm enhancing mass in the right temporal lobe with oedema of the frontal and "
     "parietal lobes.", "lobe", "temporal"),
    ("liver_ct_schema.yaml", "Hypervascular lesion in segment 6, 18 mm, with washout.", "segment", "segment 6"),
    ("brain_mri_schema.yaml", "A 2.5 cm enhancing mass involving the frontal and parietal lobes.", "lobe", None),
])
def test_the_dominant_lesions_place_is_its_own(schema_file, findings, field, value):
    from pathlib import Path

    from medscope.benchgen.extract import extract_with_rejects
    from medscope.benchgen.schema import load_schema

    schema = load_schema(str(Path(__file__).parents[1] / "data" / "benchgen" / "synthetic" / schema_file))
    got, unset = extract_with_rejects(schema, findings, "")
    if value is None:
        assert field not in got and unset[field] == "several_values_for_dominant_lesion"
    else:
        assert got[field][0] == value, unset


# A statement about another structure settles nothing about the asked one ("The common bile duct is
# normal" / "No pancreatic ductal dilatation" vs the other duct; "The portal vein is patent" vs the
# splenic vein); "otherwise unremarkable" settles nothing; a denial of one kind ("without an obstructing
# calculus") is no No to the kind-free question, though "No suspicious lymph nodes" denies
# lymphadenopathy; ", with" ends a denial's reach; "patent?" is the denial of "occluded?"; a group's
# bound ("the others measure up to 9 mm and lie in the left kidney and right lower pole") is no size
# of a lesion in one of those places.
OTHER_STRUCTURES = [
    ("A 2.1 cm mass in the pancreatic head. No pancreatic ductal dilatation.", "Is there biliary ductal dilatation?",
     1, False),
    ("The common bile duct is normal.", "Is the main pancreatic duct dilated?", 1, False),
    ("The common bile duct is dilated to 12 mm.", "Is the main pancreatic duct dilated?", 0, False),
    ("The main pancreatic duct is normal in calibre.", "Is the main pancreatic duct dilated?", 1, True),
    ("The splenic vein is occluded. The portal vein is patent.", "Is the splenic vein patent?", 1, True),
    ("The splenic vein is occluded. The portal vein is patent.", "Is the splenic vein patent?", 0, False),
    ("The splenic vein is occluded. The portal vein is patent.", "Is the portal vein patent?", 0, True),
    ("A 2 cm cyst in segment 7. The liver is otherwise unremarkable.", "Is there hepatic steatosis?", 1, False),
    ("Mild right hydronephrosis without an obstructing calculus.", "Is there a renal calculus?", 1, False),
    ("Mild right hydronephrosis without an obstructing calculus.", "Is there an obstructing calculus?", 1, True),
    ("No suspicious cervical lymph nodes.", "Is there cervical lymphadenopathy?", 1, True),
    ("Dilatation of the common bile duct to 12 mm without an obstructing stone, with mild intrahepatic biliary "
     "dilatation.", "Is there intrahepatic biliary dilatation?", 0, True),
]


@pytest.mark.parametrize("findings,question,answer,asserted", OTHER_STRUCTURES)
def test_a_statement_about_another_structure_or_kind_settles_nothing(findings, question, answer, asserted):
    kept, evidence, reason = check(findings, "", question, ["Yes", "No"], answer)
    assert kept is asserted, (reason, evidence)


def test_a_groups_bound_is_no_size_of_a_lesion_in_one_of_its_places():
    findings = ("Multiple renal cysts. The largest is in the right upper pole and measures 3.1 cm. The others "
                "measure up to 9 mm and lie in the left kidney and right lower pole.")
    kept, _, reason = check(findings, "", "What is the size of the largest cyst in the left kidney?",
                            ["9 mm", "31 mm"], 0)
    assert not kept and reason == "group_bound_spans_other_places"


# Sentences that tie on the asked words: the one naming the asked place says which lesion ("In the
# renal sinus, 11 mm"), not one naming only the lesion noun and another place ("the largest 1.9 cm in
# the upper pole").
SEVERAL_SIZED = ("Several hypodense renal cysts. In the renal sinus, 11 mm. In the renal cortex, 7 mm. The largest, "
                 "in the upper pole, measures 19 x 15 mm.")
SEVERAL_SIZED_IMPRESSION = "Three small renal cysts, the largest 1.9 cm in the upper pole."


@pytest.mark.parametrize("question,options,asserted", [
    ("What is the size of the renal sinus cyst?", ["1.1 cm", "1.9 cm"], True),
    ("What is the size of the renal sinus cyst?", ["1.9 cm", "1.1 cm"], False),
    ("What is the size of the largest renal cyst?", ["19 mm", "11 mm"], True),
])
def test_the_sentence_naming_the_asked_place_gives_its_size(question, options, asserted):
    kept, evidence, reason = check(SEVERAL_SIZED, SEVERAL_SIZED_IMPRESSION, question, options, 0)
    assert kept is asserted, (reason, evidence)


def test_a_measurement_between_a_structure_and_its_state_leaves_the_state_its_own():
    # an institution's pattern "common bile duct is normal" still reads "... measures 4 mm and is normal"
    from medscope.benchgen.extract import study_binary
    from medscope.benchgen.schema import FieldSpec

    field = FieldSpec(name="cbd_dilatation", type="binary", subcategory="bile duct",
                      question="Is the common bile duct dilated?",
                      no_patterns=[r"\bcommon bile duct (?:is )?(?:normal|not dilated)\b"],
                      yes_patterns=[r"\bcommon bile duct (?:is )?dilated\b"])
    assert study_binary(field, ["The common bile duct measures 4 mm and is normal."])[0] == "no"
    assert study_binary(field, ["The common bile duct measures 14 mm and is dilated."])[0] == "yes"
    assert study_binary(field, ["The common bile duct measures 4 mm."])[0] is None


def test_a_past_operation_answers_no_question_about_the_recommended_one():
    kept, _, reason = check("Status post cholecystectomy. Dilated common bile duct.", "Recommend ERCP.",
                            "Which procedure is recommended?", ["Cholecystectomy", "ERCP"], 0)
    assert not kept, reason
    kept, _, reason = check("Status post cholecystectomy. Dilated common bile duct.", "Recommend ERCP.",
                            "Which procedure is recommended?", ["ERCP", "Cholecystectomy"], 0)
    assert kept, reason


# A sentence whose only mentions are historical answers no presence question, but a question that
# asks about the past itself ("Is there a history of ...?") is answered by it.
@pytest.mark.parametrize("findings,question,asserted", [
    ("History of renal cell carcinoma. No renal mass.", "Is there a history of renal cell carcinoma?", True),
    ("Status post left nephrectomy for renal cell carcinoma.", "Is there a renal cell carcinoma?", False),
])
def test_a_historical_mention_answers_only_a_question_about_the_past(findings, question, asserted):
    kept, evidence, reason = check(findings, "", question, ["Yes", "No"], 0)
    assert kept is asserted, (reason, evidence)
