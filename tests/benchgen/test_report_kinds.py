"""Kinds of report wording found on spent held-out set C (thyroid ultrasound, issue 49), checked on
other organs (liver, breast, kidney, adnexa, prostate) so that the rules are read generically.

Every expected key and every keep / reject below was worked out by hand from the report text:
a part's own measurement is not its lesion's size; a resolved lesion is not present; a descriptor
range ("mildly hyperechoic to isoechoic") or a mixture ("mixed cystic and solid", "predominantly
solid") settles neither end; "X and Y segment" is two places; a lesion labelled by number or
followed by a place set off by commas is one lesion; the dominant lesion's side names the one
side-valued part; a denial in part of an organ, or in a resection bed, is not a whole-organ No;
"No seminal vesicle extension" is another kind of extension; a category given for another
lesion is not this one's.
"""

from __future__ import annotations

import pytest
import yaml

from medscope.benchgen.extract import extract_with_rejects
from medscope.benchgen.lesion_grounding import check_key
from medscope.benchgen.schema import load_schema

LIVER_US = {
    "name": "liver_us_kinds", "organ": "liver", "framework": "test schema (issue 49 kinds)",
    "sequences": {"us": {"modality": "US"}}, "report_sequences": ["us"],
    "fields": [
        {"name": "lesion_present", "type": "binary", "subcategory": "lesion detection",
         "question": "Is there a focal liver lesion?",
         "no_patterns": [r"\bno (?:focal )?(?:liver )?lesions?\b", r"\bwithout (?:\w+ )?lesions?\b"],
         "yes_patterns": [r"\b(?:solid|cystic|hypoechoic|hyperechoic|isoechoic) (?:\w+ )?lesions?\b"]},
        {"name": "lesion_lobe", "type": "multi", "subcategory": "location",
         "question": "Which lobe contains the dominant lesion?",
         "values": [{"value": "right lobe", "patterns": [r"\bright (?:hepatic )?lobe\b"]},
                    {"value": "left lobe", "patterns": [r"\bleft (?:hepatic )?lobe\b"]},
                    {"value": "caudate lobe", "patterns": [r"\bcaudate\b"]}]},
        {"name": "lesion_segment", "type": "multi", "subcategory": "location",
         "question": "In which segment is the dominant lesion?",
         "values": [{"value": "anterior segment", "patterns": [r"\banterior segments?\b"]},
                    {"value": "posterior segment", "patterns": [r"\bposterior segments?\b"]}]},
        {"name": "lesion_size", "type": "binned", "subcategory": "size",
         "question": "What is the size of the dominant lesion?", "context": [r"\blesions?\b"],
         "measure": r"(?:measuring|measures|size of)\D{0,20}?(\d+(?:\.\d+)?)\s*(mm|cm)\b",
         "bins": [{"below": 10, "value": "less than 1 cm"}, {"below": 20, "value": "1 to 1.9 cm"},
                  {"below": None, "value": "2 cm or larger"}]},
        {"name": "lesion_echo", "type": "multi", "subcategory": "echogenicity",
         "question": "What is the echogenicity of the dominant lesion?",
         "values": [{"value": "hypoechoic", "patterns": [r"\bhypoechoic\b"]},
                    {"value": "isoechoic", "patterns": [r"\bisoechoic\b"]},
                    {"value": "hyperechoic", "patterns": [r"\bhyperechoic\b"]}]},
        {"name": "lesion_composition", "type": "multi", "subcategory": "characterization",
         "question": "What is the composition of the dominant lesion?",
         "values": [{"value": "cystic", "patterns": [r"\bcystic\b"]}, {"value": "solid", "patterns": [r"\bsolid\b"]}]},
    ],
    "templates": {"binary_options": ["Yes", "No"], "min_options": 3, "max_options": 4,
                  "prompt_suffix": "Answer with the letter of one option."},
}

# (findings, {field: hand key, None where the report does not settle it})
KEYED = [
    # 16.2 cm is the liver's own size; the lesion is 1.4 cm
    ("The liver measures 16.2 cm and contains a 1.4 x 1.1 cm solid hyperechoic lesion in the right lobe.",
     {"lesion_present": "yes", "lesion_lobe": "right lobe", "lesion_segment": None, "lesion_size": "1 to 1.9 cm",
      "lesion_echo": "hyperechoic", "lesion_composition": "solid"}),
    # subject, a place between commas, then its copula: one lesion; "mixed cystic and solid" is neither
    # value of a schema without a mixed one; "right posterior segment" puts it in the right lobe
    ("The dominant lesion, in the right posterior segment, is a 3.1 x 2.0 cm mixed cystic and solid hypoechoic "
     "lesion. A 6 mm cyst in the left lobe.",
     {"lesion_present": "yes", "lesion_lobe": "right lobe", "lesion_segment": "posterior segment",
      "lesion_size": "2 cm or larger", "lesion_echo": "hypoechoic", "lesion_composition": None}),
    # numbered lesions: "Lesion 1, right lobe: ... lesion" is one lesion, the larger; its echogenicity is a range
    ("Lesion 1, right lobe: 2.5 x 2.1 cm solid, mildly hyperechoic to isoechoic lesion. "
     "Lesion 2, left lobe: 1.0 x 0.8 cm solid hypoechoic lesion.",
     {"lesion_present": "yes", "lesion_lobe": "right lobe", "lesion_segment": None, "lesion_size": "2 cm or larger",
      "lesion_echo": None, "lesion_composition": "solid"}),
    # gone since the prior study: nothing about it is keyed, and the liver has no lesion now
    ("The previously described 1.8 cm hypoechoic lesion in the left lobe, thought to represent a haematoma, has "
     "resolved. No focal liver lesion.",
     {"lesion_present": "no", "lesion_lobe": None, "lesion_segment": None, "lesion_size": None,
      "lesion_echo": None, "lesion_composition": None}),
    # one mass over two segments: no one segment; "predominantly solid" is a mixture, no composition
    ("A 4.0 cm predominantly solid hyperechoic lesion occupying the anterior and posterior segment of the right lobe.",
     {"lesion_present": "yes", "lesion_lobe": "right lobe", "lesion_segment": None, "lesion_size": "2 cm or larger",
      "lesion_echo": "hyperechoic", "lesion_composition": None}),
    # a clear resection bed denies recurrence, not a lesion of the remaining liver
    ("Status post left hepatectomy. The hepatectomy bed is clear without lesion or collection.",
     {"lesion_present": None, "lesion_lobe": None, "lesion_segment": None, "lesion_size": None,
      "lesion_echo": None, "lesion_composition": None}),
    # a denial in one lobe leaves the other lobe's lesion a plain Yes, not a conflict
    ("No lesions in the left lobe or caudate lobe. Right lobe: 1.2 cm solid hyperechoic lesion.",
     {"lesion_present": "yes", "lesion_lobe": "right lobe", "lesion_segment": None, "lesion_size": "1 to 1.9 cm",
      "lesion_echo": "hyperechoic", "lesion_composition": "solid"}),
]


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("kinds") / "liver_us.yaml"
    path.write_text(yaml.safe_dump(LIVER_US))
    return load_schema(str(path))


@pytest.mark.parametrize("findings,want", KEYED)
def test_schema_keys_follow_the_hand_key(schema, findings, want):
    got, unset = extract_with_rejects(schema, findings, "")
    assert {k: v for k, (v, _) in got.items()} == {k: v for k, v in want.items() if v is not None}, unset
    assert all(unset[k] for k, v in want.items() if v is None)


# (findings, question, key, kept?, reason when rejected)
PLANTED = [
    ("Right kidney: 3.0 cm solid mass in the interpolar region, mildly hypoechoic to isoechoic.",
     "Is the mass hypoechoic?", "Yes", False, "range_in_report"),
    ("Right kidney: 3.0 cm solid mass in the interpolar region, mildly hypoechoic to isoechoic.",
     "What is the echogenicity of the right renal mass?", "Isoechoic", False, "range_in_report"),
    ("Right kidney: 3.0 cm solid mass in the interpolar region, mildly hypoechoic to isoechoic.",
     "Is the mass solid?", "Yes", True, ""),
    ("Right ovary: 5 cm mixed cystic and solid mass. Left ovary: 2 cm simple cyst.",
     "Is the right ovarian mass solid?", "Yes", False, "mixed_composition_in_report"),
    ("Right ovary: 5 cm mixed cystic and solid mass. Left ovary: 2 cm simple cyst.",
     "What is the composition of the right ovarian mass?", "Cystic", False, "mixed_composition_in_report"),
    ("Prostate measures 42 cc. A 1.4 cm lesion in the left peripheral zone. No seminal vesicle extension.",
     "Is there extraprostatic extension?", "No", False, "subject_only_partly_in_report"),
    ("Right breast: 1.1 cm irregular mass, BI-RADS 4. Left breast: 8 mm oval circumscribed mass.",
     "What is the BI-RADS category of the left breast mass?", "BI-RADS 4", False, "not_stated_for_asked_lesion"),
    ("Right ovary: 3 cm cystic mass with thin septations and no solid component. No solid adnexal mass.",
     "Is there a solid adnexal mass?", "No", True, ""),
    ("Right kidney: three small cysts, the largest 9 mm in the upper pole. Left kidney: 1.7 cm solid mass.",
     "What is the size of the largest right renal cyst?", "9 mm", True, ""),
    ("Right kidney: two simple cysts, the largest 12 mm. Left kidney: 8 mm simple cyst in the lower pole.",
     "Are the renal cysts unilateral or bilateral?", "Bilateral", True, ""),
    ("No lesions in the left lobe or caudate lobe. Right lobe: 1.2 cm hyperechoic lesion.",
     "Is there a lesion in the caudate lobe?", "No", True, ""),
    # "the remaining" lesions are their own group: its largest is "up to" its size, not the dominant one's
    ("Multiple liver lesions. The dominant lesion is 2.2 cm in segment 6. The remaining lesions measure up to 1.4 cm.",
     "What is the size of the largest of the remaining lesions?", "1.4 cm", True, ""),
    ("Multiple liver lesions. The dominant lesion is 2.2 cm in segment 6. The remaining lesions measure up to 1.4 cm.",
     "What is the size of the largest of the remaining lesions?", "2.2 cm", False, "quantity_not_stated"),
    # lesions labelled by number, the label followed by "(" or " - " and the place
    ("Lesion #1 (segment 7): 3.2 cm arterially enhancing lesion with washout. "
     "Lesion #2 (segment 2): 1.0 cm lesion without washout.",
     "Which segment contains the largest lesion?", "Segment 7", True, ""),
    ("Lesion 1 - segment 7: 3.2 cm arterially enhancing lesion with washout. Lesion 2 - segment 2: 1.0 cm lesion "
     "without washout.", "Does the largest lesion show washout?", "Yes", True, ""),
    # foci whose comet-tail (or ring-down) artifact says what they are are not the asked foci
    ("Left lobe: 2.1 cm solid isoechoic nodule with punctate echogenic foci with comet-tail artifact.",
     "Does the nodule contain punctate echogenic foci?", "Yes", False, "artifact_in_report"),
    ("Left lobe: 2.1 cm solid isoechoic nodule with punctate echogenic foci.",
     "Does the nodule contain punctate echogenic foci?", "Yes", True, ""),
    # change questions: "since the prior study" and the organ's name are not what changed; a
    # resolution said of the lesion is a Yes, "has not / partially resolved" a No
    ("Comparison: CT of 3 March. The left renal cyst now measures 3.1 cm, previously 2.2 cm.",
     "Has the left renal cyst grown since the prior study?", "Yes", True, ""),
    ("The left renal cyst is unchanged at 2.1 cm. No new renal cysts.",
     "Has the left renal cyst changed in size?", "No", True, ""),
    ("The previously described 1.6 cm liver lesion, thought to represent a haematoma, has resolved.",
     "Has the liver lesion resolved?", "Yes", True, ""),
    ("The right lower lobe nodule has partially resolved, now 5 mm.",
     "Has the nodule resolved?", "Yes", False, "contradicted_by_report"),
    ("The previously seen 2 cm liver lesion has not resolved.",
     "Has the liver lesion resolved?", "Yes", False, "contradicted_by_report"),
]


@pytest.mark.parametrize("findings,question,answer,kept,reason", PLANTED)
def test_planted_keys_kept_only_when_asserted(findings, question, answer, kept, reason):
    got_kept, evidence, got_reason = check_key(question, answer, findings, "")
    assert (got_kept, got_reason) == (kept, reason), evidence
