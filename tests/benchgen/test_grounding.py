"""The report-grounded check against hand-labelled keys (benchmark-MCQ paper Methods).

``tests/data/benchgen/grounding_labels.yaml`` was written by hand before the check's rules, from
the reader's side: negations, numbers with units, laterality, differentials, hedges, multiple
lesions. The check must keep only keys a radiologist would sign (precision of kept keys >= 0.98)
and every rejected key keeps its reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from medscope.benchgen import questions
from medscope.benchgen.grounding import measurements, stem
from medscope.benchgen.lesion_grounding import check_key

TABLE = Path(__file__).parents[1] / "data" / "benchgen" / "grounding_labels.yaml"


def _rows():
    reports = yaml.safe_load(TABLE.read_text())["reports"]
    return [(rid, r["findings"], r["impression"], *row) for rid, r in reports.items() for row in r["rows"]]


def test_hand_labelled_table_precision_of_kept_keys():
    rows = _rows()
    assert len(rows) >= 200
    tp = fp = fn = tn = 0
    wrong = []
    for rid, findings, impression, question, key, verdict, _why in rows:
        kept, evidence, reason = check_key(question, str(key), findings, impression)
        assert kept == bool(evidence) and kept != bool(reason), (rid, question, key)  # a reason iff rejected
        want = verdict == "keep"
        tp, fp, fn, tn = tp + (kept and want), fp + (kept and not want), fn + (want and not kept), tn + (not kept and not want)
        if kept != want:
            wrong.append((rid, question, key, verdict, reason))
    n = tp + fp + fn + tn
    precision, agreement = tp / (tp + fp), (tp + tn) / n
    print(f"\ngrounded check vs hand labels: n={n} rows, kept {tp + fp} (true {tp}, false {fp}), "
          f"rejected {fn + tn} (wrongly {fn}); precision of kept keys {precision:.3f} (n={tp + fp}), "
          f"agreement {agreement:.3f} (n={n}); disagreements: {wrong}")
    assert precision >= 0.98
    assert agreement >= 0.90  # recall matters too: a check that rejects everything is useless


@pytest.mark.parametrize("question,key,findings,reason", [
    # the planted errors of the issue
    ("What complication is present?", "Hydrocephalus", "Large mass. No hydrocephalus.", "contradicted_by_report"),
    ("What is the largest dimension of the mass?", "3.1 cm", "Mass measuring 4.2 x 3.1 cm.", "quantity_not_stated"),
    ("What is the most likely diagnosis?", "Metastasis", "Enhancing mass. Differential includes metastasis.",
     "uncertain_in_report"),
    ("Is there ascites?", "Yes", "No ascites.", "contradicted_by_report"),
    ("What is the most likely diagnosis?", "Abscess", "Ring lesion; cannot exclude abscess.", "uncertain_in_report"),
    ("On which side is the mass?", "Left", "Incidental left thalamic infarct. Right parietal mass.",
     "contradicted_by_report"),
    ("Which lobe is the lesion centered in?", "Temporal lobe", "Lesion centered in the insula extending into the "
     "temporal lobe.", "secondary_location"),
])
def test_planted_errors_are_rejected_with_their_reason(question, key, findings, reason):
    assert check_key(question, key, findings, "") == (False, "", reason)


def test_correct_no_and_largest_dimension_are_kept():
    assert check_key("Does the mass enhance?", "No", "Left frontal mass. No enhancement.", "")[0]
    assert check_key("What is the largest dimension of the mass?", "42 mm", "Mass measuring 4.2 x 3.1 cm.", "") == (
        True, "Mass measuring 4.2 x 3.1 cm.", "")


def test_quantities_and_stems():
    assert measurements("mass 4.2 x 3.1 cm and node 9 mm, 5 hu") == [
        ("length", [42.0, 31.0], 5), ("length", [9.0], 27), ("hu", [5.0], 33)]
    assert {stem(w) for w in ("enhance", "enhancing", "enhancement", "enhanced")} == {"enhanc"}


def test_grounded_keeps_the_original_sentence_and_checks_the_quote():
    q = {"question": "Is there hydrocephalus?", "options": ["Yes", "No"], "answer": 1, "evidence": "No hydrocephalus."}
    assert questions.grounded(q, "Mass. No hydrocephalus.", "Glioma.") == (True, "No hydrocephalus.", "")
    q["evidence"] = "Hydrocephalus is severe."
    assert questions.grounded(q, "Mass. No hydrocephalus.", "Glioma.") == (False, "", "evidence_not_in_report")
