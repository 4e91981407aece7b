"""Compaction of part folders (medscope.io.parts, ``medscope compact``): readers see the same rows,
finished keys stay the same at every step (crash safety), a second run changes nothing, local
and on the loopback S3 server; scoring and case removal read through it."""

from __future__ import annotations

import json

import pyarrow.compute as pc
import pytest

from medscope.io import layout, parts, records, storage
from medscope.cohorts.removal import remove_cases
from medscope.errors import MedScopeError
from medscope.testing import synthetic_runs as synthetic
from medscope.seeding import stable_hash


def _episodes(n_lesion=6, n_negative=6, n_degraded=2, models=2, seed=1):
    v = synthetic.views(n_lesion, n_negative, n_degraded, seed=seed)
    return v, synthetic.episodes(v, synthetic.model_zoo(models), seed=seed)


def _write_parts(folder: str, table) -> dict[str, dict]:
    """One part per episode, keyed like the sweep (a hash of the request key)."""
    out = {}
    for row in table.to_pylist():
        key = stable_hash(row["request_key"], length=24)
        assert records.write_part("episodes", [row], folder, key)
        out[key] = row
    return out


def _rows(folder: str) -> list[tuple]:
    t = records.read_table("episodes", folder)
    return sorted(zip(t.column("request_key").to_pylist(), t.column("item_id").to_pylist(),
                      t.column("action").to_pylist()))


def _names(folder: str) -> list[str]:
    return sorted(u.rsplit("/", 1)[-1] for u in storage.list_files(folder))


@pytest.mark.slow
def test_compaction_keeps_rows_order_and_keys_and_is_idempotent(tmp_path):
    folder = str(tmp_path / "eval" / "episodes")
    _, e = _episodes(20, 20, 6, models=2)  # 2 x 86 = 172 parts
    written = _write_parts(folder, e)
    before = records.read_table("episodes", folder)
    assert len(storage.list_files(folder)) == len(written) == 172

    results = parts.compact(str(tmp_path / "eval"), max_parts=50)
    assert [r["parts_compacted"] for r in results] == [172] and results[0]["files_written"] == 4
    names = _names(folder)
    assert names == [layout.COMPACTION] + [n for n in names if n.startswith("part-compacted-")] and len(names) == 5
    after = records.read_table("episodes", folder)
    assert after.equals(before)  # same rows, same order (parts are folded in key order)
    assert records.part_keys(folder) == set(written)
    assert all(records.has_part(folder, k) for k in list(written)[:5]) and not records.has_part(folder, "nope")
    held = parts.manifest(folder)
    assert [sum(n for _, n in f["parts"]) for f in held["files"]] == [50, 50, 50, 22]
    assert sum(f["rows"] for f in held["files"]) == 172 and parts.verify(folder) == []

    manifest_bytes = storage.read_bytes(storage.join(folder, layout.COMPACTION))
    again = parts.compact(str(tmp_path / "eval"), max_parts=50)
    assert again[0]["parts_compacted"] == 0 and again[0]["files_written"] == 0
    assert _names(folder) == names and storage.read_bytes(storage.join(folder, layout.COMPACTION)) == manifest_bytes

    # a resumed job adds parts: they are read beside the compacted files, then folded in too
    extra = {"extra-key": {**e.slice(0, 1).to_pylist()[0], "request_key": "extra"}}
    records.write_part("episodes", list(extra.values()), folder, "extra-key")
    assert records.part_keys(folder) == set(written) | {"extra-key"}
    assert len(records.read_table("episodes", folder)) == 173
    parts.compact(folder, max_parts=50)
    assert len(parts.manifest(folder)["files"]) == 5 and len(records.read_table("episodes", folder)) == 173
    # a tampered file is caught by --verify
    victim = storage.join(folder, parts.manifest(folder)["files"][0]["name"])
    storage.write_bytes(victim, storage.read_bytes(storage.join(folder, parts.manifest(folder)["files"][1]["name"])))
    assert any("sha256" in p for p in parts.verify(folder))


class Crash(RuntimeError):
    pass


@pytest.mark.slow
@pytest.mark.parametrize("step", ["after_write", "after_commit", "mid_delete"])
def test_a_crash_between_steps_loses_and_doubles_nothing(tmp_path, monkeypatch, step):
    folder = str(tmp_path / "episodes")
    _, e = _episodes()
    written = _write_parts(folder, e)
    rows = _rows(folder)
    real_delete = parts._delete

    if step == "after_write":  # the compacted file is written, the manifest not yet
        monkeypatch.setattr(parts, "commit", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    elif step == "after_commit":  # the manifest names it, no part deleted yet
        monkeypatch.setattr(parts, "delete_absorbed", lambda batch: (_ for _ in ()).throw(Crash()))
    else:  # half the absorbed parts deleted

        def half(batch):
            real_delete(batch[: len(batch) // 2])
            raise Crash()

        monkeypatch.setattr(parts, "delete_absorbed", half)
    with pytest.raises(Crash):
        parts.compact_folder(folder, max_parts=20)
    on_disk = _names(folder)
    assert any(n.startswith("part-compacted-") for n in on_disk)  # the crash left something behind
    # every reader: the same rows, once; the same finished keys for a resume
    assert _rows(folder) == rows
    assert records.part_keys(folder) == set(written)
    monkeypatch.undo()
    res = parts.compact_folder(folder, max_parts=20)
    assert res["leftovers_removed"] > 0
    assert _rows(folder) == rows and records.part_keys(folder) == set(written) and parts.verify(folder) == []
    assert not [n for n in _names(folder) if n.startswith("part-") and not parts.is_compacted(n)]


@pytest.mark.slow
def test_compaction_on_s3(s3_bucket):
    run = f"{s3_bucket}/eval"
    _, e = _episodes(3, 3, 1, models=2)  # 26 parts: the loopback server is slow on a busy machine
    written = _write_parts(f"{run}/episodes", e)
    records.write_part("rejects", [records.reject_row("episodes", "m", "v1", "eval", "failed")], f"{run}/rejects", "k1")
    before = _rows(f"{run}/episodes")
    results = parts.compact(run, max_parts=10)
    assert {r["folder"].rsplit("/", 1)[-1]: r["parts_compacted"] for r in results} == {"episodes": len(written), "rejects": 1}
    assert len(storage.list_files(f"{run}/episodes", ".parquet")) == -(-len(written) // 10) == 3
    assert _rows(f"{run}/episodes") == before and records.part_keys(f"{run}/episodes") == set(written)
    assert records.read_table("rejects", f"{run}/rejects").column("reason").to_pylist() == ["failed"]
    assert parts.compact(run, max_parts=10)[0]["files_written"] == 0 and parts.verify(f"{run}/episodes") == []


@pytest.mark.slow
def test_scores_are_the_same_after_compaction(tmp_path):
    from medscope.protocols.counterfactual.scoring import score_run

    v, e = _episodes(10, 10, 4, models=3)
    records.write_table("views", v, str(tmp_path / "views.parquet"))
    folder = str(tmp_path / "eval" / "episodes")
    _write_parts(folder, e)
    score_run(folder, str(tmp_path / "views.parquet"), str(tmp_path / "before"), n_boot=50)
    parts.compact(str(tmp_path / "eval"), max_parts=40)
    assert len(storage.list_files(folder, ".parquet")) == -(-e.num_rows // 40)
    score_run(folder, str(tmp_path / "views.parquet"), str(tmp_path / "after"), n_boot=50)
    for name in ("scores", "metrics"):
        a = records.read_parquet(str(tmp_path / "before" / f"{name}.parquet"))
        b = records.read_parquet(str(tmp_path / "after" / f"{name}.parquet"))
        assert a.num_rows > 0 and a.equals(b), name


def test_case_removal_edits_compacted_files_and_their_manifest(tmp_path):
    run = str(tmp_path / "eval")
    folder = f"{run}/episodes"
    _, e = _episodes(6, 6, 2, models=2)
    written = _write_parts(folder, e)
    parts.compact(run, max_parts=10)
    gone = "case-0000" if "case-0000" in set(e.column("case_id").to_pylist()) else e.column("case_id")[0].as_py()
    lost_keys = {k for k, r in written.items() if r["case_id"] == gone}
    assert lost_keys
    summary = remove_cases([gone], [run])
    assert summary["rows_removed"] == len(lost_keys)
    t = records.read_table("episodes", folder)
    assert gone not in set(t.column("case_id").to_pylist()) and t.num_rows == len(written) - len(lost_keys)
    # the removed units are no longer finished (a resume would not count them), the rest are
    assert records.part_keys(folder) == set(written) - lost_keys
    assert parts.verify(folder) == []
    record = json.loads(storage.read_utf8(storage.join(run, layout.REMOVALS)).splitlines()[-1])
    assert sum(record["removed"]["rows"].values()) == len(lost_keys)


def test_compact_verb(tmp_path, capsys):
    from pipelines.cli import main

    _, e = _episodes(4, 4, 1, models=1)
    _write_parts(str(tmp_path / "eval" / "episodes"), e)
    assert main(["compact", str(tmp_path / "eval"), "--max-parts", "5"]) == 0
    out = capsys.readouterr().out
    assert f"{e.num_rows} parts -> {-(-e.num_rows // 5)} new files" in out
    assert main(["compact", str(tmp_path / "eval"), "--verify"]) == 0
    assert "ok" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    with pytest.raises(MedScopeError):
        from pipelines import compact

        compact.run(type("A", (), {"run_folder": str(tmp_path / "empty"), "verify": False,
                                   "target_mb": 1.0, "max_parts": None})())


def test_unchanged_filter_keeps_order():
    # guards the assumption filter_compacted relies on: pyarrow keeps row order under filter
    _, e = _episodes(2, 2, 0, models=1)
    mask = pc.invert(pc.equal(e["item_id"], e["item_id"][0]))
    assert e.filter(mask).column("item_id").to_pylist() == e.column("item_id").to_pylist()[1:]


@pytest.mark.slow
def test_a_resumed_sweep_after_compaction_sends_nothing(ray_cluster, tmp_path, monkeypatch):
    """Resume stays exact: the sweep reads its finished keys from the manifest and the parts."""
    from medscope.testing import providers as fp
    from medscope.testing.protocols import SingleTurnProtocol
    from medscope.testing.views import write_views
    from pipelines.eval import run_sweep
    from tests.jobs.test_eval_sweep import KEY_ENV, cfg, entry

    monkeypatch.setenv(KEY_ENV, "compact-key")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key="compact-key")
    try:
        views = write_views(str(tmp_path / "views.parquet"), 6)
        out = str(tmp_path / "eval")
        config = cfg(views, out, conditions=["agent", "blind"])
        first = run_sweep(config, SingleTurnProtocol(), [entry(server)])
        assert first["done"] == 12 and len(server.requests) == 12
        rows = _rows(f"{out}/episodes")
        parts.compact(out, max_parts=5)
        assert len(storage.list_files(f"{out}/episodes", ".parquet")) == 3
        again = run_sweep(config, SingleTurnProtocol(), [entry(server)])
        assert again["to_run"] == 0 and again["skipped_finished"] == 12 and len(server.requests) == 12
        assert _rows(f"{out}/episodes") == rows
    finally:
        server.close()


def test_files_are_sized_by_their_rows(tmp_path):
    folder = str(tmp_path / "episodes")
    _, e = _episodes(10, 10, 3, models=2)  # 86 parts
    _write_parts(folder, e)
    before = records.read_table("episodes", folder)
    per_row = e.nbytes / e.num_rows
    target = int(40 * per_row)  # about 40 parts' rows per file; parts are read 64 at a time
    parts.compact_folder(folder, target_bytes=target)
    files = parts.manifest(folder)["files"]
    assert [len(f["parts"]) for f in files] == [64, 22]
    assert records.read_table("episodes", folder).equals(before)


def test_a_deleted_compacted_file_is_named_not_read_as_no_rows(tmp_path):
    # issue 51: its parts were deleted at commit, so reading on without it lost its rows silently
    # ("no episodes") and a resume would have skipped those units as finished
    folder = str(tmp_path / "eval" / "episodes")
    _, e = _episodes(4, 4, 1, models=1)
    _write_parts(folder, e)
    parts.compact(str(tmp_path / "eval"))
    [entry] = parts.manifest(folder)["files"]
    assert entry["rows"] == e.num_rows
    (tmp_path / "eval" / "episodes" / entry["name"]).unlink()
    for read in (lambda: records.read_table("episodes", folder), lambda: records.part_keys(folder),
                 lambda: parts.compact(str(tmp_path / "eval"))):
        with pytest.raises(MedScopeError, match=rf"compacted file {entry['name']} named in compaction.json is "
                                                rf"missing \({e.num_rows} rows\); restore it"):
            read()


def test_verify_names_a_compacted_file_whose_bytes_changed(tmp_path, capsys):
    from pipelines.cli import main

    folder = tmp_path / "eval" / "episodes"
    _, e = _episodes(4, 4, 1, models=1)
    _write_parts(str(folder), e)
    parts.compact(str(tmp_path / "eval"))
    [entry] = parts.manifest(str(folder))["files"]
    data = bytearray((folder / entry["name"]).read_bytes())
    mid = len(data) // 2
    data[mid:mid + 16] = bytes(b ^ 0xFF for b in data[mid:mid + 16])  # the footer may no longer parse
    (folder / entry["name"]).write_bytes(bytes(data))
    assert main(["compact", str(tmp_path / "eval"), "--verify"]) == 2
    captured = capsys.readouterr()
    assert f"{entry['name']}: sha256 differs from the manifest (the file was changed)" in captured.out
    assert "medscope: error: compacted files differ from their manifests" in captured.err
