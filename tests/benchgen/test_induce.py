"""``benchgen schema induce``: a stratified sample of reports -> an offline rule-based proposal
-> accepted by the approval checkpoint (benchmark-MCQ paper Methods)."""

from __future__ import annotations

import csv
import json

from medscope.benchgen import schema as sch
from medscope.benchgen.induce import stratified_sample, term_counts
from pipelines import cli

REPORTS = [  # (study, report text): washout and ascites each affirmed and denied; gallstones never denied
    ("CT abdomen", "FINDINGS: 2.4 cm lesion in the right lobe with washout. No ascites. Gallstones.\n"
                   "IMPRESSION: Right lobe lesion."),
    ("CT abdomen", "FINDINGS: 1.1 cm lesion in the left lobe. No washout. Small ascites. Gallstones.\n"
                   "IMPRESSION: Left lobe lesion."),
    ("CT abdomen", "FINDINGS: 3.5 cm mass in the right lobe with washout. Moderate ascites.\nIMPRESSION: Mass."),
    ("MR liver", "FINDINGS: 0.8 cm lesion in the left lobe without washout. No ascites.\nIMPRESSION: Small lesion."),
    ("MR liver", "FINDINGS: 5.0 cm mass in the right lobe with washout. No ascites.\nIMPRESSION: Large mass."),
    ("MR liver", "FINDINGS: 1.9 cm lesion in the caudate lobe. No washout. Ascites.\nIMPRESSION: Lesion."),
]


def _rows(n):
    return [{"case_id": f"c{i}", "study": REPORTS[i % 6][0], "findings": "", "impression": ""} for i in range(n)]


def test_stratified_sample_is_proportional_seeded_and_covers_every_stratum():
    reports = _rows(30) + [{"case_id": "rare", "study": "PET", "findings": "", "impression": ""}]
    got = stratified_sample(reports, 10, seed=1)
    by = {s: sum(r["study"] == s for r in got) for s in ("CT abdomen", "MR liver", "PET")}
    assert by == {"CT abdomen": 5, "MR liver": 4, "PET": 1} or by == {"CT abdomen": 4, "MR liver": 5, "PET": 1}
    assert len(got) == 10 and got == stratified_sample(reports, 10, seed=1)
    assert stratified_sample(reports, 100) == reports


def test_term_counts_read_negation_scope():
    sample = [{"case_id": "x", "findings": "No ascites. Lesion without washout.", "impression": "Gallstones."}]
    c = term_counts(sample)
    assert c["ascites"] == {"negated": 1} and c["washout"] == {"negated": 1} and c["gallstones"] == {"affirmed": 1}


def _reports_csv(tmp_path):
    """REPORTS as an export with one report text field (split into findings and impression on read)."""
    path = tmp_path / "reports.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "study", "report"])
        for i, (study, text) in enumerate(REPORTS):
            w.writerow([f"c{i}", study, text])
    return path


def test_induce_writes_a_schema_that_approve_accepts(tmp_path):
    path = _reports_csv(tmp_path)
    out = str(tmp_path / "induced.yaml")
    assert cli.main(["benchgen", "schema", "induce", "--reports", str(path), "--sample", "6", "--out", out,
                     "--organ", "liver", "--sequence", "ct:CT"]) == 0
    s = sch.load_schema(out)
    names = {f.name: f for f in s.fields}
    assert {"washout", "ascites"} <= set(names) and "gallstones" not in names  # never denied: no question
    assert [v.value for v in names["side"].values] == ["left", "right"]
    assert "location" not in names  # only "caudate lobe" is an anatomical unit here, named once
    # tertiles of the sample's sizes 24, 11, 35, 8, 50, 19 mm (numpy's linear percentiles: 16.3, 27.7)
    assert [b.below for b in names["largest_size"].bins] == [16.0, 28.0, None]
    for cp in sch.CHECKPOINTS:
        assert cli.main(["benchgen", "schema", "approve", out, "--checkpoint", cp, "--by", "Dr Reviewer"]) == 0
    from medscope.benchgen.questions import REPORT_PROMPT

    assert set(sch.require_approved(out, REPORT_PROMPT)) == set(sch.CHECKPOINTS)


def _proposer(text: str, images: int) -> str:
    """A proposer double: fields from the words of the batch it is sent, plus a hallucination."""
    fields = [{"name": "hydronephrosis", "type": "binary", "question": "Is there hydronephrosis?",
               "subcategory": "other organs", "terms": ["hydronephrosis"]},  # in no report
              {"name": "lobe", "type": "multi", "question": "Which lobe holds the lesion?",
               "subcategory": "anatomic distribution",
               "values": [{"value": "right", "terms": ["right lobe"]}, {"value": "left", "terms": ["left lobe"]},
                          {"value": "caudate", "terms": ["caudate lobe"]}]},
              {"name": "broken", "type": "binary", "terms": []}]  # malformed: no terms
    for word in ("ascites", "washout", "gallstones"):
        if word in text.lower().split("report 1:", 1)[-1]:
            fields.append({"name": word, "type": "binary", "question": f"Is there {word}?",
                           "subcategory": "finding", "terms": [word]})
    return json.dumps({"fields": fields})


def test_induce_with_a_language_model_proposer_keeps_what_the_sample_supports(tmp_path, ray_cluster, monkeypatch):
    """The paper's route: the proposer's fields, grounded in the six sampled reports (counted by
    hand from REPORTS): ascites affirmed 3 / denied 3, washout 3 / 3 -> kept; gallstones affirmed 2,
    denied 0 -> dropped; hydronephrosis in no report -> dropped; lobe: right 3, left 2, caudate 1
    -> right and left kept (min support 2)."""
    from medscope.testing.providers import FakeProvider

    path = _reports_csv(tmp_path)
    fake = FakeProvider("openai", responder=_proposer)
    monkeypatch.setenv("MEDSCOPE_TEST_PROPOSER_KEY", "local")
    models = tmp_path / "proposer.yaml"
    models.write_text(f"models:\n  - {{name: proposer, kind: openai, model: local, base_url: '{fake.url}', "
                      "api_key_env: MEDSCOPE_TEST_PROPOSER_KEY, max_attempts: 1}\n")
    out = str(tmp_path / "llm.yaml")
    args = ["benchgen", "schema", "induce", "--reports", str(path), "--sample", "6", "--out", out, "--organ", "liver",
            "--proposer", "llm", "--generator-models", str(models), "--batch", "3"]
    try:
        assert cli.main(args) == 2  # private reports, endpoint not on the allow-list: refused before any call
        assert fake.count() == 0
        assert cli.main(args + ["--allow-endpoint", fake.url]) == 0
        assert fake.count() == 2  # two batches of three reports
        assert cli.main(args + ["--allow-endpoint", fake.url, "--overwrite"]) == 0
        assert fake.count() == 2  # the same sample again: answered from the cache
    finally:
        fake.close()
    s = sch.load_schema(out)
    names = {f.name: f for f in s.fields}
    assert set(names) == {"ascites", "washout", "lobe"}
    assert [v.value for v in names["lobe"].values] == ["right", "left"]
    text = open(out).read()
    assert "dropped gallstones: affirmed in 2, denied in 0" in text and "dropped hydronephrosis" in text
    assert "broken: no terms" in text
    for cp in sch.CHECKPOINTS:
        assert cli.main(["benchgen", "schema", "approve", out, "--checkpoint", cp, "--by", "Dr Reviewer"]) == 0
