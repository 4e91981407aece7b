"""Id lists as people write them, and a withdrawal that is all or nothing (issue 51).

The finding: ``cohort remove --cases @ids.txt`` with the file saved as UTF-8 with BOM and CRLF
exited 0, printed the first id as ``"\\ufeff..."`` and left that case in every table. Expected
values come from the file's content written by hand: the ids in it, nothing else.
"""

from __future__ import annotations

import codecs
import json

import pytest

from medscope.cohorts import phantom
from medscope.errors import MedScopeError
from medscope.io import layout, records, storage
from medscope.io.id_lists import parse_id_text, read_id_list
from pipelines import cli


@pytest.fixture
def cohort(tmp_path):
    rows, _ = phantom.phantom_cases(6, seed=0)
    folder = str(tmp_path / "cohort")
    records.write_table("cases", rows, layout.Cohort(folder).cases)
    return folder, sorted(r["case_id"] for r in rows)


def _case_ids(folder: str) -> list[str]:
    return sorted(records.read_table("cases", layout.Cohort(folder).cases).column("case_id").to_pylist())


def test_bom_crlf_list_with_notes_removes_exactly_its_ids(cohort, tmp_path, capsys):
    folder, ids = cohort
    listed = tmp_path / "ids.txt"
    # Notepad's "UTF-8 with BOM", CRLF, a heading note, a blank line, spaces, a trailing note
    text = f"# withdrawn 3 May\r\n{ids[0]}\r\n\r\n   {ids[1]}  # asked by phone\r\n"
    listed.write_bytes(codecs.BOM_UTF8 + text.encode())
    assert cli.main(["cohort", "remove", "--cases", f"@{listed}", "--from", folder]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["cases"] == sorted(ids[:2])  # no "\ufeff" glued to the first id
    assert _case_ids(folder) == ids[2:]
    assert summary["rows_by_table"] == {"cases": 2} and summary["rows_removed"] == 2
    assert "removed 2 case(s): 2 row(s) (2 from cases)" in captured.err


def test_an_id_that_matches_nothing_is_an_error_and_nothing_is_removed(cohort, tmp_path, capsys):
    folder, ids = cohort
    before = storage.read_bytes(layout.Cohort(folder).cases)
    assert cli.main(["cohort", "remove", "--cases", f"{ids[0]},phantom-typo", "--from", folder]) == 2
    err = capsys.readouterr().err
    assert "1 of 2 case id(s) match no case" in err and "'phantom-typo'" in err and "nothing was removed" in err
    assert len(err.strip().splitlines()) == 1
    assert storage.read_bytes(layout.Cohort(folder).cases) == before  # all or nothing: ids[0] is still there
    assert not storage.exists(storage.join(folder, layout.REMOVALS))


def test_an_id_removed_before_is_named_with_when(cohort, capsys):
    folder, ids = cohort
    assert cli.main(["cohort", "remove", "--cases", ids[0], "--from", folder]) == 0
    capsys.readouterr()
    assert cli.main(["cohort", "remove", "--cases", ids[0], "--from", folder]) == 2
    err = capsys.readouterr().err
    assert f"'{ids[0]}' (removed 20" in err  # the time of the earlier removals.jsonl record


def test_id_text_rules_by_hand():
    text = "\ufeffa1 , a2\n#note\n\n a3\t# x\n\u00a0a4\u200b\na#5\na1\n"
    # '#' inside an id (no space before it) is part of the id; a1 repeated is kept once
    assert parse_id_text(text) == ["a1", "a2", "a3", "a4", "a#5"]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_csv_id_column_in_any_bom_encoding(tmp_path, encoding):
    path = tmp_path / "withdrawn.csv"
    path.write_bytes("note,case_id\r\nphone, c1 \r\n\r\nemail,c2\r\n".encode(encoding))
    assert read_id_list(f"@{path}") == ["c1", "c2"]


def test_bad_lists_are_one_line_errors_naming_the_file(tmp_path):
    png = tmp_path / "ids.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(MedScopeError, match=r"ids\.png: binary file, not text"):
        read_id_list(f"@{png}")
    notes = tmp_path / "empty.txt"
    notes.write_text("# nobody yet\n\n")
    with pytest.raises(MedScopeError, match=r"empty\.txt: no ids in the file"):
        read_id_list(f"@{notes}")
    table = tmp_path / "two.csv"
    table.write_text("a,b\n1,2\n")
    with pytest.raises(MedScopeError, match=r"two\.csv: no 'case_id' column"):
        read_id_list(f"@{table}")
    with pytest.raises(MedScopeError, match="no such file"):
        read_id_list(f"@{tmp_path / 'absent.txt'}")
    with pytest.raises(MedScopeError, match="--cases is empty"):
        read_id_list(" , ,")
