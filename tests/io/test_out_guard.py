"""An --out holding a different run is refused unless --append / --overwrite."""

from __future__ import annotations

import json

import pytest

from medscope.io import records
from medscope.errors import MedScopeError
from pipelines import cli
from pipelines.support import outguard


def test_identity_ignores_operational_settings():
    a = outguard.identity("eval run", {"items": "a/", "protocol": "counterfactual", "workers": 2, "budget_usd": 1.0})
    b = outguard.identity("eval run", {"items": "a/", "protocol": "counterfactual", "workers": 8, "max_failed": 3,
                                       "models": "more-models.yaml"})  # adding models extends the same run
    c = outguard.identity("eval run", {"items": "b/", "protocol": "counterfactual", "workers": 2})
    assert a["hash"] == b["hash"] and a["hash"] != c["hash"]
    # the same job as a verb or as `python -m pipelines.eval` is the same run
    assert outguard.identity("eval", {"items": "a/"})["hash"] == outguard.identity("eval run", {"items": "a/"})["hash"]
    assert outguard.verb_of(["-v", "eval", "run", "--items", "x"]) == "eval run"
    assert not outguard.is_folder_out("/x/report.json") and outguard.is_folder_out("/x/run")


def test_check_record_append_overwrite(tmp_path):
    out = str(tmp_path / "run")
    first = outguard.identity("benchgen build", {"cohort": "liver"})
    other = outguard.identity("benchgen build", {"cohort": "kidney"})
    outguard.check(out, first)  # nothing there yet
    outguard.record(out, first)  # a run that wrote nothing leaves no mark
    assert not (tmp_path / "run").exists()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "items.parquet").write_bytes(b"231 items")
    outguard.record(out, first)
    outguard.check(out, first)  # a rerun of the same run resumes
    with pytest.raises(MedScopeError, match=r"holds a different run .*cohort: 'liver' there, 'kidney' now.*--append.*--overwrite"):
        outguard.check(out, other)
    assert (tmp_path / "run" / "items.parquet").read_bytes() == b"231 items"  # nothing deleted
    outguard.check(out, other, append=True)
    outguard.record(out, other)
    marker = json.loads((tmp_path / "run" / outguard.MARKER).read_text())
    assert [r["settings"]["cohort"] for r in marker["runs"]] == ["liver", "kidney"]
    third = outguard.identity("benchgen build", {"cohort": "lung"})
    aside = outguard.check(out, third, overwrite=True)
    assert not (tmp_path / "run").exists()
    outguard.settle(out, aside, finished=False)  # the new run failed: the old one is back, whole
    assert (tmp_path / "run" / "items.parquet").read_bytes() == b"231 items"
    aside = outguard.check(out, third, overwrite=True)
    (tmp_path / "run").mkdir()
    outguard.settle(out, aside, finished=True)
    assert not list(tmp_path.glob(".run*")) and (tmp_path / "run").exists()


def test_second_build_into_the_same_folder_is_refused_and_keeps_the_first(tmp_path, capsys):
    out = str(tmp_path / "cohort")
    assert cli.main(["cohort", "phantom", "--out", out, "--cases", "8", "--volumes", "0"]) == 0
    n = records.read_table("cases", out + "/cases.parquet").num_rows
    assert cli.main(["cohort", "phantom", "--out", out, "--cases", "8", "--volumes", "0"]) == 0  # a rerun
    capsys.readouterr()
    assert cli.main(["cohort", "phantom", "--out", out, "--cases", "12", "--volumes", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds a different run" in err and "cases: 8 there, 12 now" in err
    assert records.read_table("cases", out + "/cases.parquet").num_rows == n
    # --overwrite with bad input: the error, and the first cohort still whole
    assert cli.main(["cohort", "phantom", "--out", out, "--cases", "0", "--volumes", "0", "--overwrite"]) == 2
    assert records.read_table("cases", out + "/cases.parquet").num_rows == n
    assert cli.main(["cohort", "phantom", "--out", out, "--cases", "12", "--volumes", "0", "--overwrite"]) == 0
    assert records.read_table("cases", out + "/cases.parquet").num_rows != n


def test_append_and_overwrite_together_are_refused_and_the_folder_kept(tmp_path, capsys):
    # Fresh campaign (issue 51): both flags were accepted and --overwrite silently won.
    out = str(tmp_path / "cohort")
    assert cli.main(["cohort", "phantom", "--out", out, "--cases", "8", "--volumes", "0"]) == 0
    n = records.read_table("cases", out + "/cases.parquet").num_rows
    capsys.readouterr()
    assert cli.main(["cohort", "phantom", "--out", out, "--cases", "12", "--volumes", "0", "--append",
                     "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--append and --overwrite contradict each other" in err
    assert records.read_table("cases", out + "/cases.parquet").num_rows == n
    with pytest.raises(MedScopeError, match="contradict"):
        outguard.refuse_both(True, True)
    for one in ((True, False), (False, True), (False, False)):
        assert outguard.refuse_both(*one) is None
