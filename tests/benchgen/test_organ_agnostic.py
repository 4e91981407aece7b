"""Issue 49: the lesion-level rules on organ systems the held-out sets never saw.

Two small institutional schemas (``tests/data/benchgen/synthetic``: brain MRI with British
spellings, thyroid on neck CT with lobes, poles and the isthmus) and four reports each. Every key
below was worked out by hand from the report as a radiologist reads it, before the rules were run
on these reports: ``None`` where the report does not settle the field. The benchmark-MCQ paper's
Methods populate fields "deterministically from report text" and keep a key only when it is
"explicitly supported by the source text"; the schema asks about *the dominant* lesion.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from medscope.benchgen.extract import extract_with_rejects
from medscope.benchgen.questions import grounded
from medscope.benchgen.schema import load_schema

HERE = Path(__file__).parents[1] / "data" / "benchgen" / "synthetic"

BRAIN = {
    # dominant by size (42 mm vs 8 mm), "4.2 x 3.8 x 3.5 cm" read as its largest dimension
    "b1": ("There is a 4.2 x 3.8 x 3.5 cm heterogeneously enhancing mass centred in the right frontal lobe with "
           "surrounding vasogenic oedema and 6 mm of leftward midline shift. A further 8 mm enhancing lesion in the "
           "left occipital lobe. No intratumoural haemorrhage.",
           "Dominant right frontal enhancing tumour with mass effect, and a second small left occipital lesion, "
           "in keeping with metastases.",
           {"tumour_present": "yes", "hemisphere": "right hemisphere", "lobe": "frontal", "size": "4 cm or larger",
            "enhancement": "yes", "oedema": "yes", "midline_shift": "yes", "haemorrhage": "no"}),
    # a bilateral group whose largest member is placed and sized
    "b2": ("Multiple ring-enhancing lesions in both cerebral hemispheres, the largest in the left parietal lobe "
           "measuring 2.4 cm with surrounding oedema. No hydrocephalus or midline shift.",
           "Multiple enhancing lesions, likely metastases.",
           {"tumour_present": "yes", "hemisphere": "left hemisphere", "lobe": "parietal", "size": "2 to 3.9 cm",
            "enhancement": "yes", "oedema": "yes", "midline_shift": "no", "haemorrhage": None}),
    # post-operative, no tumour: a denied list ("No haemorrhage, hydrocephalus or midline shift")
    "b3": ("Postoperative changes in the left temporal lobe. No residual or recurrent enhancing tumour. "
           "No haemorrhage, hydrocephalus or midline shift.",
           "No evidence of recurrent tumour.",
           {"tumour_present": "no", "hemisphere": None, "lobe": None, "size": None, "enhancement": None,
            "oedema": None, "midline_shift": "no", "haemorrhage": "no"}),
    "b4": ("Normal appearance of the brain parenchyma. No focal lesion, haemorrhage or midline shift.",
           "Normal MRI brain.",
           {"tumour_present": "no", "hemisphere": None, "lobe": None, "size": None, "enhancement": None,
            "oedema": None, "midline_shift": "no", "haemorrhage": "no"}),
    # a differential and "cannot be excluded": no lesion is asserted, so nothing about one is keyed
    "b5": ("Ill-defined T2 hyperintensity in the right temporal lobe, possibly a low-grade glioma versus cortical "
           "dysplasia. No enhancement. No mass effect.",
           "Indeterminate right temporal signal abnormality; a low-grade tumour cannot be excluded.",
           {"tumour_present": None, "hemisphere": None, "lobe": None, "size": None, "enhancement": None,
            "oedema": None, "midline_shift": None, "haemorrhage": None}),
}

THYROID = {
    # "Right lobe:" headers place each nodule; 2.3 x 1.6 x 1.4 cm = 23 mm beats 6 mm
    "t1": ("Right lobe: 2.3 x 1.6 x 1.4 cm solid hypoattenuating nodule in the lower pole with microcalcifications. "
           "Left lobe: 6 mm cystic nodule in the upper pole. Isthmus normal. No abnormal cervical lymph nodes.",
           "Dominant right lower pole solid nodule, TI-RADS 5.",
           {"nodule_present": "yes", "nodule_site": "right lobe", "nodule_pole": "lower pole",
            "nodule_size": "15 to 24 mm", "composition": "solid", "microcalcifications": "yes",
            "cervical_nodes": "no"}),
    "t2": ("The thyroid gland is normal in size. A 1.2 cm mixed cystic and solid nodule in the isthmus without "
           "microcalcifications. Tiny colloid cysts in the left lobe, up to 3 mm.",
           "Isthmic nodule, TI-RADS 3.",
           {"nodule_present": "yes", "nodule_site": "isthmus", "nodule_pole": None, "nodule_size": "10 to 14 mm",
            "composition": "mixed cystic and solid", "microcalcifications": "no", "cervical_nodes": None}),
    # current vs prior size; "no new nodules" beside a known one is not a No
    "t3": ("Known solid nodule in the left lobe now measures 18 mm, previously 14 mm. No new thyroid nodules. "
           "Enlarged level IV lymph node on the left, 12 mm in short axis.",
           "Interval growth of the left lobe solid nodule.",
           {"nodule_present": "yes", "nodule_site": "left lobe", "nodule_pole": None, "nodule_size": "15 to 24 mm",
            "composition": "solid", "microcalcifications": None, "cervical_nodes": "yes"}),
    "t4": ("Both lobes are normal in size and attenuation. No thyroid nodules. No abnormal cervical lymph nodes.",
           "Normal thyroid.",
           {"nodule_present": "no", "nodule_site": None, "nodule_pole": None, "nodule_size": None,
            "composition": None, "microcalcifications": None, "cervical_nodes": "no"}),
}

LIVER = {
    # dominant by size; only the left portal vein is said patent: the main and right ones are unsaid
    "l1": ("Cirrhotic liver. A 3.4 x 2.8 cm arterially hyperenhancing lesion in segment 7 with washout and an "
           "enhancing capsule. A second 1.1 cm lesion in segment 4 without washout. The left portal vein is patent. "
           "No ascites.",
           "Dominant segment 7 lesion, LR-5.",
           {"lesion_present": "yes", "segment": "segment 7", "size": "20 to 49 mm", "washout": "yes",
            "portal_vein": None, "ascites": "no"}),
    # "No solid liver lesion" denies solid lesions only; the cysts' largest is 8 mm ("up to")
    "l2": ("Several hepatic cysts, up to 8 mm. No solid liver lesion. The portal veins are patent. Small volume "
           "ascites.",
           "Simple hepatic cysts. Small volume ascites.",
           {"lesion_present": "yes", "segment": None, "size": "under 10 mm", "washout": None, "portal_vein": "no",
            "ascites": "yes"}),
    # the one known lesion has resolved and there is no new one
    "l3": ("Previously seen segment 6 lesion has resolved. No new focal liver lesion. No ascites.",
           "Resolution of the segment 6 lesion.",
           {"lesion_present": "no", "segment": None, "size": None, "washout": None, "portal_vein": None,
            "ascites": "no"}),
    # a mass spanning two segments has no one segment
    "l4": ("Liver: 6.2 cm heterogeneous mass in the right lobe (segments 7 and 8) with tumour thrombus extending "
           "into the right portal vein. Moderate ascites.",
           "Large right lobe HCC with right portal vein tumour thrombus.",
           {"lesion_present": "yes", "segment": None, "size": "50 mm or larger", "washout": None,
            "portal_vein": "yes", "ascites": "yes"}),
}

# (report, question, options, index of the key, whether the report asserts that key)
PLANTED = [
    ("b1", "What is the maximum diameter of the right frontal mass?", ["42 mm", "38 mm", "8 mm"], 0, True),
    ("b1", "Which lobe contains the largest lesion?", ["Frontal lobe", "Occipital lobe", "Parietal lobe"], 0, True),
    ("b1", "Is there haemorrhage?", ["Yes", "No"], 1, True),
    ("b1", "On which side is the occipital lesion?", ["Left", "Right"], 0, True),
    ("b2", "Are the lesions unilateral or bilateral?", ["Unilateral", "Bilateral"], 1, True),
    ("b2", "Is there hydrocephalus?", ["Yes", "No"], 1, True),
    ("b2", "What is the most likely diagnosis?", ["Metastases", "Abscesses", "Glioblastoma"], 0, True),
    ("b3", "Is there residual enhancing tumour?", ["Yes", "No"], 1, True),
    ("b3", "Is there a tumour in the left temporal lobe?", ["Yes", "No"], 0, False),
    ("b5", "Is there a low-grade glioma?", ["Yes", "No"], 0, False),
    ("b5", "Is there a tumour in the right temporal lobe?", ["Yes", "No"], 0, False),
    ("b5", "Does the abnormality enhance?", ["Yes", "No"], 1, True),
    ("b5", "Is there mass effect?", ["Yes", "No"], 1, True),
    ("t1", "What is the size of the dominant nodule?", ["2.3 cm", "1.6 cm", "6 mm"], 0, True),
    ("t1", "Which lobe contains the cystic nodule?", ["Left lobe", "Right lobe", "Isthmus"], 0, True),
    ("t2", "Does the isthmic nodule contain microcalcifications?", ["Yes", "No"], 1, True),
    ("t3", "What was the previous size of the left lobe nodule?", ["14 mm", "18 mm", "12 mm"], 0, True),
    ("t3", "What is the size of the left lobe nodule?", ["1.4 cm", "1.8 cm"], 0, False),
    ("t3", "Is there a new thyroid nodule?", ["Yes", "No"], 1, True),
    ("t3", "Is there a new thyroid nodule?", ["Yes", "No"], 0, False),
    ("t3", "Has the left lobe nodule grown?", ["Yes", "No"], 0, True),
    ("t4", "Is there a thyroid nodule?", ["Yes", "No"], 1, True),
    ("t4", "Is there a nodule in the right lobe?", ["Yes", "No"], 1, True),
    ("l1", "What is the size of the dominant lesion?", ["34 mm", "28 mm", "11 mm"], 0, True),
    ("l1", "What is the size of the dominant lesion?", ["3.4 cm", "2.8 cm", "1.1 cm"], 0, True),
    ("l1", "Is there tumour thrombus in the portal vein?", ["Yes", "No"], 1, False),
    ("l1", "Which segment contains the largest lesion?", ["Segment 7", "Segment 4", "Segment 2"], 0, True),
    ("l2", "What is the size of the largest cyst?", ["8 mm", "3 mm", "12 mm"], 0, True),
    ("l3", "Has the segment 6 lesion resolved?", ["Yes", "No"], 0, True),
    ("l3", "Is there a lesion in segment 6?", ["Yes", "No"], 0, False),
    ("l4", "Is there ascites?", ["Yes", "No"], 0, True),
    ("l4", "Is there tumour thrombus in the portal vein?", ["Yes", "No"], 0, True),
    ("l4", "Is there tumour thrombus in the portal vein?", ["Yes", "No"], 1, False),
    ("l1", "Is there tumour thrombus in the renal vein?", ["Yes", "No"], 1, False),
]


@pytest.mark.parametrize("schema_file,reports", [("brain_mri_schema.yaml", BRAIN),
                                                 ("thyroid_ct_schema.yaml", THYROID),
                                                 ("liver_ct_schema.yaml", LIVER)])
def test_schema_keys_match_the_hand_keys(schema_file, reports):
    schema = load_schema(str(HERE / schema_file))
    for rid, (findings, impression, want) in reports.items():
        got, unset = extract_with_rejects(schema, findings, impression)
        emitted = {k: v for k, (v, _) in got.items()}
        assert emitted == {k: v for k, v in want.items() if v is not None}, (rid, unset)
        assert all(unset[k] for k, v in want.items() if v is None), (rid, unset)


@pytest.mark.parametrize("rid,question,options,answer,asserted", PLANTED)
def test_planted_questions_kept_exactly_when_the_report_asserts_the_key(rid, question, options, answer, asserted):
    findings, impression, _ = {**BRAIN, **THYROID, **LIVER}[rid]
    q = {"question": question, "options": options, "answer": answer, "level": "perception"}
    kept, evidence, reason = grounded(q, findings, impression)
    assert kept is asserted, (reason, evidence)
    assert (reason == "") is kept


@pytest.mark.parametrize("text,dims_mm", [
    ("a 12-mm nodule", [12.0]),                # hyphenated unit
    ("1,2 cm", [12.0]),                        # decimal comma: 12 mm, not 2 cm
    ("1.5 cm x 2.0 cm", [15.0, 20.0]),         # a unit after each dimension is one measurement
    ("2 cm x 15 mm", [20.0, 15.0]),            # each dimension in its own unit
    ("12 millimetres", [12.0]), ("1.5 centimeters", [15.0]),
])
def test_lengths_in_any_written_form_are_one_measurement_in_mm(text, dims_mm):
    from medscope.benchgen.grounding import measurements, normalize_sentence

    assert [dims for kind, dims, _ in measurements(normalize_sentence(text))] == [dims_mm]


def test_a_one_sided_normal_structure_does_not_answer_the_side_free_question():
    # "Left pleural space is clear" says nothing of the right: no No to "Is there a pleural effusion?"
    q = {"question": "Is there a pleural effusion?", "options": ["Yes", "No"], "answer": 1, "level": "perception"}
    kept, _, reason = grounded(q, "Left pleural space is clear. 8 mm nodule in the right upper lobe.", "")
    assert not kept and reason == "only_side_specific_denial"


# Report-derived questions on other organs (adrenal, pancreas, brain, thyroid, pleura), one report
# each: (findings, impression, question, options, index of the key, whether the report asserts it).
# Change and polarity ("resolved", "still present", "decreased"), prior vs current size, denied
# lists, British and American spellings, "the larger" of a bilateral pair, a side called normal.
SINGLE_REPORTS = [
    # one-word findings and their spelled-out wording, both ways
    ("Mediastinal lymph nodes are not enlarged.", "", "Is there mediastinal lymphadenopathy?", ["Yes", "No"], 1, True),
    ("Right paratracheal lymph node, enlarged, 1.6 cm short axis.", "", "Is there lymphadenopathy?", ["Yes", "No"], 0,
     True),
    ("No lymphadenopathy.", "", "Are there enlarged lymph nodes?", ["Yes", "No"], 1, True),
    ("The spleen is enlarged, measuring 15 cm.", "", "Is there splenomegaly?", ["Yes", "No"], 0, True),
    ("Previously seen right frontal enhancing lesion is no longer seen. No new lesions.", "", "Has the right frontal lesion resolved?", ["Yes","No"], 0, True),
    ("Previously seen right frontal enhancing lesion is no longer seen. No new lesions.", "", "Is the right frontal lesion still present?", ["Yes","No"], 1, True),
    ("Right frontal mass measures 3.1 cm, previously 2.2 cm.", "", "Has the mass decreased in size?", ["Yes","No"], 1, True),
    ("Right frontal mass measures 3.1 cm, previously 2.2 cm.", "", "What was the previous size of the mass?", ["22 mm","31 mm"], 0, True),
    ("Right frontal mass measures 3.1 cm, previously 2.2 cm.", "", "What is the current size of the mass?", ["31 mm","22 mm"], 0, True),
    ("Right frontal mass measures 3.1 cm, previously 2.2 cm.", "", "What is the size of the mass?", ["2.2 cm","3.1 cm"], 0, False),
    ("The thyroid gland is normal in size and attenuation. No nodules.", "", "Is the thyroid gland enlarged?", ["Yes","No"], 1, True),
    ("Enhancement is absent.", "", "Does the lesion enhance?", ["Yes","No"], 1, True),
    ("Left temporal lesion with surrounding vasogenic oedema.", "", "Is there vasogenic edema?", ["Yes","No"], 0, True),
    ("Left temporal lesion with surrounding vasogenic oedema.", "", "Is there oedema around the lesion?", ["Yes","No"], 0, True),
    ("No acute haemorrhage.", "", "Is there acute hemorrhage?", ["Yes","No"], 1, True),
    ("Right frontal tumour with foci of haemorrhage.", "", "Is there intratumoral hemorrhage?", ["Yes","No"], 0, True),
    ("No hydrocephalus, haemorrhage or midline shift.", "", "Is there hydrocephalus?", ["Yes","No"], 1, True),
    ("No hydrocephalus, haemorrhage or midline shift.", "", "Is there midline shift?", ["Yes","No"], 1, True),
    ("No hydrocephalus, haemorrhage or midline shift.", "", "Is there a haemorrhage?", ["Yes","No"], 1, True),
    ("Small left pleural effusion. No right effusion.", "", "On which side is the pleural effusion?", ["Left","Right","Bilateral"], 0, True),
    ("Bilateral adrenal nodules, the larger on the left measuring 1.8 cm.", "", "On which side is the larger adrenal nodule?", ["Left","Right"], 0, True),
    ("Bilateral adrenal nodules, the larger on the left measuring 1.8 cm.", "", "Are the adrenal nodules bilateral?", ["Yes","No"], 0, True),
    ("Bilateral adrenal nodules, the larger on the left measuring 1.8 cm.", "", "Is there a right adrenal nodule?", ["Yes","No"], 0, True),
    ("Right adrenal nodule measuring 1.2 cm. Left adrenal gland normal.", "", "Is there a left adrenal nodule?", ["Yes","No"], 1, True),
    ("Right adrenal nodule measuring 1.2 cm. Left adrenal gland normal.", "", "Is there an adrenal nodule?", ["Yes","No"], 0, True),
    ("Right adrenal nodule measuring 1.2 cm. Left adrenal gland normal.", "", "What is the size of the right adrenal nodule?", ["12 mm","1.5 cm"], 0, True),
    ("Pancreatic head mass measuring 3.2 x 2.5 cm abutting the SMV. No pancreatic duct dilatation.", "", "Where is the pancreatic mass located?", ["Pancreatic head","Pancreatic tail","Uncinate process"], 0, True),
    ("Pancreatic head mass measuring 3.2 x 2.5 cm abutting the SMV. No pancreatic duct dilatation.", "", "Is the pancreatic duct dilated?", ["Yes","No"], 1, True),
    ("Pancreatic head mass measuring 3.2 x 2.5 cm abutting the SMV. No pancreatic duct dilatation.", "", "What is the size of the pancreatic mass?", ["3.2 cm","2.5 cm"], 0, True),
    ("Possible small nodule in the left lobe versus a prominent vessel.", "", "Is there a nodule in the left lobe?", ["Yes","No"], 0, False),
    ("A metastasis cannot be excluded.", "", "Is there a metastasis?", ["Yes","No"], 0, False),
    ("Solid nodule in the left lobe. No suspicious features.", "", "Is there a thyroid nodule?", ["Yes","No"], 0, True),
    ("Mild right hydronephrosis.", "", "Is there hydronephrosis on the left?", ["Yes","No"], 1, False),
    ("Segment 7 lesion measuring 2 cm. Segment 2 cyst 5 mm.", "", "In which segment is the largest lesion?", ["Segment 7","Segment 2"], 0, True),
]


@pytest.mark.parametrize("findings,impression,question,options,answer,asserted", SINGLE_REPORTS)
def test_report_questions_on_other_organs(findings, impression, question, options, answer, asserted):
    q = {"question": question, "options": options, "answer": answer, "level": "perception"}
    kept, evidence, reason = grounded(q, findings, impression)
    assert kept is asserted, (reason, evidence)


def test_a_schema_pattern_on_a_one_word_finding_still_reads_it():
    # the check spells "splenomegaly" out as "enlarged spleen" but keeps the word, so an
    # institution's "no splenomegaly" pattern still denies it
    from medscope.benchgen.extract import field_value
    from medscope.benchgen.schema import FieldSpec

    field = FieldSpec(name="splenomegaly", type="binary", subcategory="spleen", question="Is there splenomegaly?",
                      no_patterns=[r"\bno (?:\w+ )?splenomegaly\b"], yes_patterns=[r"\bsplenomegaly\b"])
    assert field_value(field, "No splenomegaly.") == "no"
    assert field_value(field, "Mild splenomegaly.") == "yes"


def test_headers_on_their_own_line_place_what_follows_and_narrow_denials():
    # "No nodules." under "LEFT LOBE:" denies the left lobe's only: the right lobe's nodule stands
    schema = load_schema(str(HERE / "thyroid_ct_schema.yaml"))
    got, unset = extract_with_rejects(schema, "RIGHT LOBE:\nSolid nodule in the lower pole measuring 1.8 cm.\n"
                                              "LEFT LOBE:\nNo nodules.", "")
    assert {k: v for k, (v, _) in got.items()} == {"nodule_present": "yes", "nodule_site": "right lobe",
                                                   "nodule_pole": "lower pole", "nodule_size": "15 to 24 mm",
                                                   "composition": "solid"}


@pytest.mark.parametrize("schema_file,findings,field", [
    ("brain_mri_schema.yaml", "Large enhancing mass involving the right frontal and parietal lobes measuring 5.2 cm.",
     "lobe"),
    ("brain_mri_schema.yaml", "Right frontal/parietal enhancing mass measuring 4 cm.", "lobe"),
])
def test_a_lesion_spanning_two_places_gets_no_one_place(schema_file, findings, field):
    # taking the first-named lobe would key one lobe of a two-lobe mass
    got, unset = extract_with_rejects(load_schema(str(HERE / schema_file)), findings, "")
    assert field not in got and unset[field] == "several_values_for_dominant_lesion"


# Questions about one of several lesions (liver, brain, thyroid): a feature, place or size of
# "the largest" / "the smaller" / "the occipital" lesion comes from that lesion's own words, never
# from another lesion's. (findings, question, options, index of the key, whether it is asserted)
L1 = ("Cirrhotic liver. A 3.4 x 2.8 cm arterially hyperenhancing lesion in segment 7 with washout and an enhancing capsule. "
      "A second 1.1 cm lesion in segment 4 without washout. The left portal vein is patent. No ascites.")
B1 = ("There is a 4.2 x 3.8 x 3.5 cm heterogeneously enhancing mass centred in the right frontal lobe with "
      "surrounding vasogenic oedema. A further 8 mm enhancing lesion in the left occipital lobe. No intratumoural haemorrhage.")
T1 = ("Right lobe: 2.3 x 1.6 x 1.4 cm solid nodule in the lower pole with microcalcifications. "
      "Left lobe: 6 mm cystic nodule in the upper pole.")
PER_LESION = [
    (L1, "Which segment contains the largest lesion?", ["Segment 4","Segment 7"], 0, False),
    (L1, "Which segment contains the dominant lesion?", ["Segment 7","Segment 4"], 0, True),
    (L1, "Does the largest lesion show washout?", ["Yes","No"], 0, True),
    (L1, "Does the largest lesion show washout?", ["Yes","No"], 1, False),
    (L1, "Does the smaller lesion show washout?", ["Yes","No"], 1, True),
    (L1, "What is the size of the lesion in segment 4?", ["11 mm","34 mm"], 0, True),
    (L1, "What is the size of the lesion in segment 4?", ["34 mm","11 mm"], 0, False),
    (L1, "What is the size of the largest lesion?", ["11 mm","34 mm"], 0, False),
    (B1, "In which lobe is the largest lesion?", ["Occipital lobe","Frontal lobe"], 0, False),
    (B1, "In which lobe is the largest lesion?", ["Frontal lobe","Occipital lobe"], 0, True),
    (B1, "On which side is the dominant mass?", ["Left","Right"], 0, False),
    (B1, "On which side is the dominant mass?", ["Right","Left"], 0, True),
    (B1, "What is the size of the occipital lesion?", ["8 mm","42 mm"], 0, True),
    (B1, "What is the size of the occipital lesion?", ["42 mm","8 mm"], 0, False),
    (T1, "Which lobe contains the largest nodule?", ["Left lobe","Right lobe"], 0, False),
    (T1, "Which pole contains the dominant nodule?", ["Upper pole","Lower pole"], 0, False),
    (T1, "Which pole contains the dominant nodule?", ["Lower pole","Upper pole"], 0, True),
    (T1, "What is the composition of the largest nodule?", ["Cystic","Solid"], 0, False),
    (T1, "Does the left lobe nodule contain microcalcifications?", ["Yes","No"], 0, False),
]


@pytest.mark.parametrize("findings,question,options,answer,asserted", PER_LESION)
def test_a_question_about_one_of_several_lesions_reads_that_lesion(findings, question, options, answer, asserted):
    q = {"question": question, "options": options, "answer": answer, "level": "characterization"}
    kept, evidence, reason = grounded(q, findings, "")
    assert kept is asserted, (reason, evidence)


def test_a_hedged_denial_and_none_dominant_settle_nothing():
    brain = load_schema(str(HERE / "brain_mri_schema.yaml"))
    got, unset = extract_with_rejects(brain, "Right parietal enhancing mass measuring 2 cm. Haemorrhagic "
                                             "transformation is unlikely.", "")
    assert "haemorrhage" not in got  # "unlikely" is a hedge, not a stated absence
    thyroid = load_schema(str(HERE / "thyroid_ct_schema.yaml"))
    got, unset = extract_with_rejects(thyroid, "Multinodular goitre with innumerable nodules, none dominant.", "")
    assert got["nodule_present"][0] == "yes" and unset["nodule_size"] == "no_dominant_lesion:group"
    q = {"question": "Is there haemorrhage?", "options": ["Yes", "No"], "answer": 1, "level": "perception"}
    assert grounded(q, "Haemorrhage is unlikely.", "")[2] == "uncertain_in_report"


def test_a_named_tumour_is_a_lesion_the_dominant_questions_can_be_about():
    # "glioblastoma", "meningioma" are lesions: the 3.2 cm left frontal one is the dominant one
    brain = load_schema(str(HERE / "brain_mri_schema.yaml"))
    got, _ = extract_with_rejects(brain, "A 3.2 cm enhancing glioblastoma in the left frontal lobe with vasogenic "
                                         "oedema. Small right parietal meningioma 8 mm.", "")
    assert {k: got[k][0] for k in ("hemisphere", "lobe", "size", "enhancement")} == {
        "hemisphere": "left hemisphere", "lobe": "frontal", "size": "2 to 3.9 cm", "enhancement": "yes"}
