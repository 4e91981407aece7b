"""Inputs an eval sweep refuses before any work (issue 51, fourth campaign): an item table with no
rows, and an --out another sweep is writing into."""

from __future__ import annotations

import json
import os
import socket

import pytest

from medscope.errors import MedScopeError
from medscope.io import folder_lock, records
from medscope.testing import providers as fp
from medscope.testing.protocols import SingleTurnProtocol
from medscope.testing.views import views_rows, write_views
from pipelines.eval import run_sweep

from tests.jobs.test_eval_sweep import KEY_ENV, cfg, entry


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key-openai")
    srv = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key="test-key-openai")
    yield srv
    srv.close()


def test_an_item_table_with_no_rows_is_an_error_not_a_finished_run(tmp_path, server):
    views = str(tmp_path / "views.parquet")
    records.write_table("views", views_rows(0), views)
    out = tmp_path / "eval"
    with pytest.raises(MedScopeError, match=r"views\.parquet: no items to evaluate \(the item table has no rows"):
        run_sweep(cfg(views, str(out)), protocol=SingleTurnProtocol(), entries=[entry(server)])
    assert not out.exists() and server.count() == 0  # it used to exit 0 with a sweep.json of 0 units


def test_a_second_sweep_into_a_folder_being_written_is_refused(tmp_path, server):
    views = write_views(str(tmp_path / "views.parquet"), 4)
    out = tmp_path / "eval"
    out.mkdir()
    # the first sweep's lock: a live process on this host (this one), another token
    (out / folder_lock.LOCK_NAME).write_text(json.dumps(
        {"token": "other", "host": socket.gethostname(), "pid": os.getpid(), "verb": "eval run"}))
    with pytest.raises(MedScopeError, match=rf"another eval run \(pid {os.getpid()} on .*\) is writing into this "
                                            r"folder; wait for it to finish or use another --out"):
        run_sweep(cfg(views, str(out)), protocol=SingleTurnProtocol(), entries=[entry(server)])
    # nothing sent, nothing written: both sweeps used to run, the second's units failing in the first's folder
    assert server.count() == 0 and sorted(os.listdir(out)) == [folder_lock.LOCK_NAME]
