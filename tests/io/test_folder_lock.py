"""medscope.io.folder_lock: one writer per output folder; a busy, taken-over or garbage lock is refused, never overwritten."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from medscope.errors import MedScopeError
from medscope.io import folder_lock
from medscope.io import records

from tests.fixtures.bad_input import IMF
from tests.fixtures.cohort_layouts import write_image_mask_folder


@pytest.mark.timeout(120)
def test_garbage_lock_file_is_refused_with_its_path(tmp_path):
    (tmp_path / folder_lock.LOCK_NAME).write_bytes(b"\xff\xfe garbage")
    with pytest.raises(MedScopeError) as err:
        with folder_lock.writer_lock(str(tmp_path), "cohort import"):
            pass
    assert folder_lock.LOCK_NAME in str(err.value)
    assert (tmp_path / folder_lock.LOCK_NAME).read_bytes() == b"\xff\xfe garbage"  # not taken over


@pytest.mark.timeout(120)
def test_a_second_import_into_a_busy_folder_is_refused(tmp_path):
    from pipelines.cohort import import_cohort, show_summary

    write_image_mask_folder(tmp_path / "data")
    out = tmp_path / "out"
    out.mkdir()
    (out / folder_lock.LOCK_NAME).write_text(json.dumps(
        {"token": "other", "host": socket.gethostname(), "pid": os.getppid(), "verb": "cohort import"}))
    with pytest.raises(MedScopeError) as err:
        import_cohort("image-mask-folder", str(tmp_path / "data"), str(out), overrides=IMF)
    assert f"pid {os.getppid()}" in str(err.value) and str(out) in str(err.value)
    assert sorted(os.listdir(out)) == [folder_lock.LOCK_NAME]  # nothing written
    # a lock whose writer is gone (SIGKILL) is taken over
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (out / folder_lock.LOCK_NAME).write_text(json.dumps({"token": "x", "host": socket.gethostname(), "pid": dead.pid}))
    summary = import_cohort("image-mask-folder", str(tmp_path / "data"), str(out), overrides=IMF)
    assert summary["cases"] == 2 and not (out / folder_lock.LOCK_NAME).exists()
    assert json.loads((out / "import.json").read_text())["status"] == "complete"
    show_summary(str(out))  # a complete folder reads back


@pytest.mark.timeout(120)
def test_a_folder_another_writer_took_over_is_never_marked_complete(tmp_path, monkeypatch):
    from pipelines import cohort

    write_image_mask_folder(tmp_path / "data")
    out = str(tmp_path / "out")
    real = records.write_table

    def interleaved(name, table, uri):  # writer B resets the manifest while A writes its tables
        (tmp_path / "out" / "import.json").write_text(json.dumps({"status": "writing", "writer": "B"}))
        return real(name, table, uri)

    monkeypatch.setattr(cohort.records, "write_table", interleaved)
    with pytest.raises(MedScopeError, match="another import wrote into this folder"):
        cohort.import_cohort("image-mask-folder", str(tmp_path / "data"), out, overrides=IMF)
    assert json.loads((tmp_path / "out" / "import.json").read_text())["status"] == "writing"
    with pytest.raises(MedScopeError, match="did not finish"):
        cohort.show_summary(out)
