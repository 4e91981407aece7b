"""Issue 20 through the CLI: one-line errors, an import written as one unit, and counts that
match the files on disk."""

import json
import os

import pytest

from medscope.io import records, storage
from pipelines.cli import main

from tests.fixtures.bad_input import _err
from tests.fixtures.cohort_bad_layouts import add_bad_2d
from tests.fixtures.cohort_layouts import write_kvasir, write_nifti_labels

pytestmark = pytest.mark.timeout(300)  # a hang guard, ample on a busy machine


def run_json(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def one_line_error(capsys, argv, text):
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("medscope: error:") and "\n" not in err and text in err, err


def test_empty_path_is_a_one_line_error(tmp_path, capsys):
    one_line_error(capsys, ["cohort", "import", "--format", "busi", "--path", "", "--out", str(tmp_path / "o")],
                   "--path is empty")
    assert not (tmp_path / "o").exists()


def test_format_change_and_failed_import_leave_no_mix(tmp_path, capsys):
    out = str(tmp_path / "out")
    write_nifti_labels(tmp_path / "btcv")
    run_json(capsys, ["cohort", "import", "--format", "nifti-labels", "--path", str(tmp_path / "btcv"), "--out", out,
                      "--dataset-config", str(tmp_path / "btcv" / "organs.yaml")])
    good, bad = write_kvasir(tmp_path / "kv")
    # another dataset into the same --out is refused unless --overwrite (nothing deleted unasked)
    one_line_error(capsys, ["cohort", "import", "--format", "kvasir-seg", "--path", str(tmp_path / "kv"), "--out", out],
                   "holds a different run")
    summary = run_json(capsys, ["cohort", "import", "--format", "kvasir-seg", "--path", str(tmp_path / "kv"), "--out", out,
                                "--overwrite"])
    assert sorted(os.listdir(out)) == [".medscope-out.json", "cases.parquet", "import.json", "rejects.parquet"]  # no stale volumes
    manifest = json.loads(storage.read_utf8(f"{out}/import.json"))
    assert manifest["status"] == "complete" and manifest["files"] == {"cases": "cases.parquet", "rejects": "rejects.parquet"}
    shown = run_json(capsys, ["cohort", "show", out])
    assert "volumes" not in shown and shown["cases"]["n"] == len(good) == summary["cases"]
    assert shown["rejects"]["n"] == len(bad)
    # an import that fails (here: no such folder) leaves the previous import whole
    before = {n: (tmp_path / "out" / n).read_bytes() for n in os.listdir(out)}
    one_line_error(capsys, ["cohort", "import", "--format", "kvasir-seg", "--path", str(tmp_path / "gone"), "--out", out,
                            "--overwrite"], "no images under images/")
    assert {n: (tmp_path / "out" / n).read_bytes() for n in os.listdir(out)} == before
    # an import killed while writing leaves import.json saying so: show refuses the folder
    storage.write_text(f"{out}/import.json", json.dumps({"status": "writing"}))
    one_line_error(capsys, ["cohort", "show", out], "did not finish")
    one_line_error(capsys, ["cohort", "show", f"{out}/cases.parquet"], "did not finish")


def test_show_counts_match_the_files_on_disk(tmp_path, capsys):
    root = tmp_path / "kv"
    write_kvasir(root)
    add_bad_2d(root, ext="jpg")
    out = str(tmp_path / "out")
    summary = run_json(capsys, ["cohort", "import", "--format", "kvasir-seg", "--path", str(root), "--out", out])
    shown = run_json(capsys, ["cohort", "show", out])
    assert shown["cases"]["n"] == summary["cases"]
    assert shown["rejects"]["n"] == summary["rejects"] and shown["ignored"]["n"] == summary["ignored"]
    assert shown["rejects"]["by_reason"] == summary["rejects_by_reason"]
    rejects = records.read_table("rejects", f"{out}/rejects.parquet").to_pylist()
    cases = records.read_table("cases", f"{out}/cases.parquet", columns=["source_file"]).column("source_file").to_pylist()
    # every entry of images/ (files, FIFOs, links, the looping folder link) is one case, reject or ignored row
    on_disk = len(os.listdir(os.fsencode(root / "images")))
    listed = len(cases) + sum(r["item_id"].startswith("images/") for r in rejects)
    assert listed == on_disk
    # every mask file is claimed by an image of the same stem, or is itself a reject / ignored row
    image_stems = {os.path.splitext(n)[0] for n in os.listdir(os.fsencode(root / "images"))}
    own_rows = {r["item_id"] for r in rejects if r["item_id"].startswith("masks/")}
    for name in os.listdir(os.fsencode(root / "masks")):
        shown_name = "masks/" + os.fsdecode(name).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        assert os.path.splitext(name)[0] in image_stems or shown_name in own_rows, shown_name


@pytest.mark.timeout(120)
def test_truncated_import_json_names_the_file(tmp_path):
    from pipelines.cohort import show_summary

    (tmp_path / "import.json").write_text('{"status": "compl')
    assert "import.json" in _err(lambda: show_summary(str(tmp_path)))
