"""Reports exported as one text field: the section splitter (benchmark-MCQ paper Methods input)."""

from __future__ import annotations

import csv

import pytest

from medscope.benchgen.cohort import read_reports, split_sections


@pytest.mark.parametrize("text,findings,impression", [
    ("FINDINGS: Liver lesion 2 cm.\nIMPRESSION: Metastasis.", "Liver lesion 2 cm.", "Metastasis."),
    ("CLINICAL HISTORY: pain.\nTECHNIQUE: CT.\nFindings:\nLIVER: lesion.\nSPLEEN: normal.\n\nConclusion:\n1. Lesion.",
     "LIVER: lesion.\nSPLEEN: normal.", "1. Lesion."),
    ("Comparison: none. Findings - No mass. Impressions - Normal study. Signed by: Dr X",
     "No mass.", "Normal study."),
    ("REPORT\nNo nodule.\nOPINION\nNormal.\nRECOMMENDATIONS: none", "No nodule.", "Normal."),
    ("FINDINGS: Mass.\nIMPRESSION AND RECOMMENDATIONS: Glioma; MRI follow-up.", "Mass.", "Glioma; MRI follow-up."),
])
def test_split_sections_reads_the_usual_headers(text, findings, impression):
    assert split_sections(text) == (findings, impression, None)


@pytest.mark.parametrize("text,reason", [
    ("The liver shows a lesion. Likely metastasis.", "no_sections_found"),
    ("FINDINGS: Liver lesion.", "no_impression_section"),
    ("IMPRESSION: Metastasis.", "no_findings_section"),
    ("FINDINGS:\nIMPRESSION:\n", "no_sections_found"),  # headers with nothing under them
])
def test_split_sections_reject_reasons(text, reason):
    assert split_sections(text)[2] == reason


def test_one_text_field_csv_is_read_and_unsplittable_rows_are_rejected(tmp_path):
    path = tmp_path / "reports.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "report"])
        w.writerow(["c1", "FINDINGS: Two liver lesions.\nIMPRESSION: Metastases."])
        w.writerow(["c2", "Two liver lesions, likely metastases."])
    rows, rejects = read_reports(str(path))
    assert rows == [{"case_id": "c1", "study": "", "findings": "Two liver lesions.", "impression": "Metastases."}]
    assert [(r["item_id"], r["reason"]) for r in rejects] == [("c2", "no_sections_found")]
