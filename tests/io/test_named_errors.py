"""Every file a verb reads fails in one line naming the file (issue 51, fourth round).

Before: a truncated ``qc_report.json`` (``views show``) or ``run.json`` (``report``), an
``analysis.json`` holding a list (``report --reader-analysis``: ``TypeError: list indices``), a PNG
or a UTF-16 file given as ``reports.jsonl`` (``UnicodeDecodeError``), report CSVs with a BOM (no
row read), in Latin-1 (``UnicodeDecodeError``) or with a field over 128 KiB (``field larger than
field limit``), and a JSONL of deeply nested arrays (``RecursionError``).
"""

from __future__ import annotations

import codecs
import json

import pytest

from medscope.benchgen.cohort import read_reports
from medscope.io import safe_text
from medscope.testing.views import write_views
from pipelines import cli

REPORT = {"case_id": "c1", "study": "s", "findings": "A 2 cm lesion in the liver.", "impression": "Liver lesion."}
PNG_HEAD = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00"


def _one_line_error(capsys, *names: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for name in names:
        assert name in err, err
    return err


def _csv(rows: list[dict]) -> str:
    head = list(rows[0])
    return "\r\n".join([",".join(head)] + [",".join(f'"{r[h]}"' for h in head) for r in rows]) + "\r\n"


def test_report_csv_with_a_bom_is_read(tmp_path):
    path = tmp_path / "reports.csv"
    path.write_bytes(codecs.BOM_UTF8 + _csv([REPORT]).encode())
    rows, rejects = read_reports(str(path))
    assert [r["case_id"] for r in rows] == ["c1"] and rejects == []


def test_report_csv_in_latin1_is_read(tmp_path):
    path = tmp_path / "reports.csv"
    path.write_bytes(_csv([{**REPORT, "findings": "Lésion hépatique de 2 cm."}]).encode("latin-1"))
    rows, _ = read_reports(str(path))
    assert rows[0]["findings"] == "Lésion hépatique de 2 cm."


def test_report_csv_field_over_128_kib_is_read_whole(tmp_path):
    long_findings = "Nodule. " * 25_000  # 200,000 characters, over csv's 131,072 default
    path = tmp_path / "reports.csv"
    path.write_text(_csv([{**REPORT, "findings": long_findings}]))
    rows, _ = read_reports(str(path))
    assert rows[0]["findings"] == long_findings.strip()


def test_deeply_nested_jsonl_line_is_a_reject_and_the_rest_are_read(tmp_path):
    path = tmp_path / "reports.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n" + json.dumps(REPORT) + "\n[1, 2]\n")
    rows, rejects = read_reports(str(path))
    assert [r["case_id"] for r in rows] == ["c1"]
    by_item = {r["item_id"]: r for r in rejects}
    assert by_item["line 1"]["reason"] == "not_json" and "nested too deeply" in by_item["line 1"]["detail"]
    assert by_item["line 3"]["reason"] == "not_json_object"


def test_utf16_jsonl_is_read(tmp_path):
    path = tmp_path / "reports.jsonl"
    path.write_bytes((json.dumps(REPORT) + "\r\n").encode("utf-16"))
    rows, _ = read_reports(str(path))
    assert [r["case_id"] for r in rows] == ["c1"]


def test_png_given_as_reports_is_one_line_naming_it(tmp_path, capsys):
    path = tmp_path / "reports.jsonl"
    path.write_bytes(PNG_HEAD)
    with pytest.raises(safe_text.BadText, match=r"reports\.jsonl: binary file, not text"):
        read_reports(str(path))
    # the verb benchgen build shares its reader with: one line, exit 2
    assert cli.main(["benchgen", "schema", "induce", "--reports", str(path), "--out", str(tmp_path / "s.yaml")]) == 2
    _one_line_error(capsys, "reports.jsonl", "binary file")


def test_views_show_with_a_truncated_qc_report_names_it(tmp_path, capsys):
    build = tmp_path / "views"
    write_views(str(build / "views.parquet"), 4)
    (build / "qc_report.json").write_text('{"auc": {"edit": 0.5')
    assert cli.main(["views", "show", str(build)]) == 2
    _one_line_error(capsys, "qc_report.json", "truncated")


def test_report_with_a_truncated_run_json_names_it(tmp_path, capsys):
    run = tmp_path / "scored"
    run.mkdir()
    (run / "run.json").write_text('{"protocol": "counterf')
    assert cli.main(["report", "--run", str(run), "--out", str(tmp_path / "rep")]) == 2
    _one_line_error(capsys, "run.json", "truncated")


@pytest.mark.parametrize("content, expected", [
    ("[1, 2, 3]", "expected a JSON object"),
    ('{"readers": []}', "not the JSON that `medscope reader analyse` writes"),
])
def test_report_reader_analysis_of_the_wrong_shape_names_it(tmp_path, capsys, content, expected):
    run = tmp_path / "scored"
    run.mkdir()
    (run / "run.json").write_text('{"protocol": "counterfactual"}')
    analysis = tmp_path / "analysis"
    analysis.mkdir()
    (analysis / "analysis.json").write_text(content)
    assert cli.main(["report", "--run", str(run), "--reader-analysis", str(analysis),
                     "--out", str(tmp_path / "rep")]) == 2
    _one_line_error(capsys, "analysis.json", expected)


def test_jsonl_and_json_object_readers_by_hand(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + b'{"a": 1}\r\n\r\n{"a": 2}\r\n"x"\r\n')
    with pytest.raises(safe_text.BadText, match=r"calls\.jsonl:line 4: expected a JSON object \(got str\)"):
        safe_text.read_jsonl(str(path))
    path.write_bytes(codecs.BOM_UTF8 + b'{"a": 1}\r\n\r\n{"a": 2}\r\n')
    assert safe_text.read_jsonl(str(path)) == [{"a": 1}, {"a": 2}]
    listed = tmp_path / "manifest.json"
    listed.write_text("[]")
    with pytest.raises(safe_text.BadText, match=r"manifest\.json: expected a JSON object \(got list\)"):
        safe_text.read_json_object(str(listed))
    table = tmp_path / "t.csv"
    table.write_text('a,b\n1,"open quote\n')
    with pytest.raises(safe_text.BadText, match=r"t\.csv: not valid CSV \(line 2"):
        safe_text.read_csv(str(table))


@pytest.mark.parametrize("content, expected", [
    ("candidates: [{id: a, decision: approve\n", "not valid YAML"),
    ("- a\n- b\n", "expected a YAML mapping"),
    ("candidates: {a: 1}\n", "candidates must be a list"),
    ("candidates: []\ncandidates: []\n", "not valid YAML"),
])
def test_a_hand_edited_review_file_names_itself(tmp_path, content, expected):
    from medscope.errors import MedScopeError
    from medscope.pairs.review import load_review

    (tmp_path / "review.yaml").write_text(content)
    with pytest.raises(MedScopeError, match=rf"review\.yaml: {expected}"):
        load_review(str(tmp_path))
