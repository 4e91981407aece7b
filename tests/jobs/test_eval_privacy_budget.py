"""Secrets, privacy, the budget cap, local-model actors, and the two entry points of the sweep."""

from __future__ import annotations

import argparse
import io
import os

import pyarrow.parquet as pq
import pytest
import yaml

from medscope.io import records
from medscope.testing import providers as fp
from medscope.testing.protocols import SingleTurnProtocol, unit_tag
from medscope.testing.views import write_views
from pipelines import eval as evaluate
from pipelines.eval import EvalConfig, run_sweep
from pipelines.support.jobs import guarded, job_main

from tests.jobs.test_eval_sweep import cfg, entry, KEY_ENV

SENTINEL = "sk-SENTINEL-9d2f61c4e8b7a035"
PROTOCOL = "medscope.testing.protocols:SingleTurnProtocol"


def cli_main(argv: list[str]) -> int:
    """``medscope`` with only this module's verbs (other branches' modules may be absent)."""
    parser = argparse.ArgumentParser(prog="medscope")
    evaluate.register(parser.add_subparsers(dest="verb"))
    args = parser.parse_args(argv)
    return guarded(lambda: args.func(args))


def _all_text(path: str) -> list[tuple[str, str]]:
    """(file, text) for every file under ``path``; Parquet files decoded to their values."""
    found = []
    for root, _, files in os.walk(path):
        for f in files:
            full = os.path.join(root, f)
            data = open(full, "rb").read()
            found.append((full, data.decode("latin-1")))
            if f.endswith(".parquet"):
                found.append((full + "#values", str(pq.read_table(io.BytesIO(data)).to_pylist())))
    return found


@pytest.mark.slow
def test_api_key_reaches_the_server_and_nothing_else(ray_cluster, tmp_path, monkeypatch, capfd):
    import ray

    monkeypatch.setenv("MEDSCOPE_SENTINEL_KEY", SENTINEL)
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key=SENTINEL)
    server.on(unit_tag("v002", "agent"), fp.ECHO_KEY)  # a server that repeats the key in an error
    try:
        views = write_views(str(tmp_path / "views.parquet"), 4)
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [{
            "name": "gpt-sentinel", "kind": "openai", "model": "fake-1", "base_url": server.url,
            "api_key_env": "MEDSCOPE_SENTINEL_KEY", "price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0}]}))
        out = str(tmp_path / "eval")
        # the echoing server's one error is a failed unit: accepted here with --max-failed 1
        assert cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "agent,plain",
                         "--out", out, "--protocol", PROTOCOL, "--max-failed", "1"]) == 0
        assert cli_main(["eval", "show", out]) == 0
        captured = capfd.readouterr()
        assert "gpt-sentinel" in captured.out and "episodes" in captured.out
        rows = records.read_table("episodes", out + "/episodes").to_pylist()
        assert len(rows) == 8
        # The key did travel: every request but the echo carried it and was answered.
        assert sum(1 for r in rows if r["error"]) == 1 and all(r["answer"] == "yes" for r in rows if not r["error"])
        echoed = [r for r in rows if r["error"]][0]
        assert "[redacted]" in echoed["error"]
        texts = _all_text(out) + [("stdout", captured.out), ("stderr", captured.err)]
        logs = ray._private.worker._global_node.get_logs_dir_path()
        texts += _all_text(logs)
        assert len(texts) > 5
        leaks = [name for name, text in texts if SENTINEL in text]
        assert leaks == []
    finally:
        server.close()


@pytest.mark.slow
def test_private_items_go_only_to_allowed_endpoints(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    allowed_srv = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key="k")
    other_srv = fp.FakeProvider("openai", responder=lambda text, images: "no", expected_key="k")
    try:
        # v000, v002, v004 are private and may go to allowed_srv only.
        views = write_views(str(tmp_path / "views.parquet"), 6, private_every=2, allow=(allowed_srv.url + "/",))
        out = str(tmp_path / "eval")
        models = [entry(allowed_srv, name="allowed"), entry(other_srv, name="other"),
                  # Local weights send nothing anywhere; one dedicated actor holds them once.
                  entry(allowed_srv, name="local", kind="tests.fixtures.fakes.models:HeldModel", placement="dedicated",
                        base_url=None, api_key_env=None)]
        config_file = tmp_path / "eval.yaml"
        models_file = tmp_path / "models.yaml"
        models_file.write_text(yaml.safe_dump({"models": [m.model_dump(exclude_defaults=True) for m in models]}))
        config_file.write_text(yaml.safe_dump({"views": views, "models": str(models_file), "out": out,
                                               "conditions": ["agent"], "protocol": PROTOCOL, "backoff_s": 0.05}))
        # 3 refused units: the exit code says so (pipelines.support.accounting.EXIT_UNITS_FAILED)
        assert job_main("evaluate", EvalConfig, run_sweep, ["--config", str(config_file)]) == 3
        private = [f"v{i:03d}" for i in (0, 2, 4)]
        for v in private:
            assert other_srv.count(unit_tag(v, "agent")) == 0
            assert allowed_srv.count(unit_tag(v, "agent")) == 1
        assert other_srv.count() == 3
        rows = records.read_table("episodes", out + "/episodes").to_pylist()
        assert sorted((r["model"], r["item_id"]) for r in rows if r["model"] == "other") == [
            ("other", v) for v in ("v001", "v003", "v005")]
        rejects = records.read_table("rejects", out + "/rejects").to_pylist()
        assert sorted((r["source"], r["item_id"], r["reason"]) for r in rejects) == [
            ("other", v, "private_endpoint_not_allowed") for v in private]
        local = [r["raw_text"] for r in rows if r["model"] == "local"]
        assert len(local) == 6 and len(set(local)) == 1  # one model instance in one actor for all
        # A rerun sends nothing and writes no second reject.
        n_allowed, n_other = allowed_srv.count(), other_srv.count()
        assert job_main("evaluate", EvalConfig, run_sweep, ["--config", str(config_file)]) == 3
        assert (allowed_srv.count(), other_srv.count()) == (n_allowed, n_other)
        assert records.read_table("rejects", out + "/rejects").num_rows == 3
    finally:
        allowed_srv.close()
        other_srv.close()


@pytest.mark.slow
def test_budget_cap_stops_cleanly_and_resumes(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    server = fp.FakeProvider("anthropic", responder=lambda text, images: "yes", expected_key="k")
    try:
        views = write_views(str(tmp_path / "views.parquet"), 8)
        out = str(tmp_path / "eval")
        # "yes" is 1 output token (len // 4 + 1) at $1e6 per 1M: exactly $1 an episode.
        model = entry(server, price_in_per_mtok=0.0, price_out_per_mtok=1e6)
        one_at_a_time = dict(conditions=["plain"], workers=1, concurrency=1)
        first = run_sweep(cfg(views, out, budget_usd=3.5, **one_at_a_time), SingleTurnProtocol(), [model])
        assert first["stopped"] == "budget" and first["done"] == 4 and first["spent_usd"] == pytest.approx(4.0)
        assert len(server.requests) == 4 and records.read_table("episodes", out + "/episodes").num_rows == 4
        again = run_sweep(cfg(views, out, budget_usd=3.5, **one_at_a_time), SingleTurnProtocol(), [model])
        assert again["stopped"] == "budget" and len(server.requests) == 4  # already spent: nothing sent
        rest = run_sweep(cfg(views, out, budget_usd=100.0, **one_at_a_time), SingleTurnProtocol(), [model])
        assert rest["stopped"] is None and rest["done"] == 4 and rest["spent_usd"] == pytest.approx(8.0)
        assert len(server.requests) == 8 and records.read_table("episodes", out + "/episodes").num_rows == 8
    finally:
        server.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.timeout(600)  # Ray's start-up on a loaded machine, not the test's own work
def test_url_credentials_reach_no_output_and_score_refuses_a_partial_copy(ray_cluster, tmp_path, monkeypatch, capfd):
    """A real sweep (local Ray, loopback OpenAI-wire server) whose base_url carries a user and
    password: the password is in no printed line, no sweep.json, no table. Then half the
    episodes are deleted: ``score`` refuses in one line instead of scoring what is left."""
    import argparse
    import json

    import yaml

    from medscope.testing import providers as fp
    from medscope.testing.views import write_views
    from pipelines import score as scoremod
    from pipelines.support import runcheck
    from pipelines.support.jobs import guarded
    from tests.jobs.test_eval_privacy_budget import PROTOCOL, cli_main
    from tests.jobs.test_eval_sweep import KEY_ENV

    secret = "s3cretPassw0rd"
    monkeypatch.setenv(KEY_ENV, "k")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes")
    try:
        views = write_views(str(tmp_path / "views.parquet"), 2)
        url = server.url.replace("http://", f"http://alice:{secret}@", 1)
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [{"name": "vault", "kind": "openai", "model": "fake-1",
                                                      "base_url": url, "api_key_env": KEY_ENV, "timeout_s": 5.0}]}))
        out = tmp_path / "eval"
        rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain,agent",
                       "--out", str(out), "--protocol", PROTOCOL, "--backoff-s", "0.01"])
        printed = capfd.readouterr()
        assert rc == 0 and len(server.requests) == 4  # the sweep really ran against the server
    finally:
        server.close()
    assert secret not in printed.out + printed.err
    sweep = json.loads((out / "sweep.json").read_text())
    assert secret not in (out / "sweep.json").read_text()
    assert sweep["models"][0]["endpoint"] == url.replace(f"alice:{secret}", "***")
    for path in out.rglob("*"):  # every file the run wrote, tables decoded (Parquet is compressed)
        if path.suffix == ".parquet":
            assert secret not in str(pq.read_table(path).to_pylist()), path
        elif path.is_file():
            assert secret.encode() not in path.read_bytes(), path

    # the whole run passes the completeness check; with half its parts gone, score refuses
    runcheck.require_complete(str(out / "episodes"))
    parts = sorted((out / "episodes").glob("part-*.parquet"))
    assert len(parts) == 4
    for p in parts[:2]:
        p.unlink()
    parser = argparse.ArgumentParser(prog="medscope")
    scoremod.register(parser.add_subparsers(dest="verb"))
    args = parser.parse_args(["score", "--episodes", str(out), "--out", str(tmp_path / "scored")])
    assert guarded(lambda: args.func(args)) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "says 4 episodes were written, but only 2 are there (2 missing" in err[0]
    assert not (tmp_path / "scored").exists()

    # parts taken out by `cohort remove` are named as such, with what to do, not as a partial copy;
    # a damaged log line does not hide the records around it
    record = {"at": "2026-12-05T10:00:00Z", "cases": ["c1"],
              "removed": {"rows": {f"episodes/{parts[0].name}": 1, "views.parquet": 3}}}
    (out / "removals.jsonl").write_text(json.dumps(record) + "\n{damaged\n")
    assert runcheck.removed_episodes(str(out)) == (1, "2026-12-05T10:00:00Z")
    assert guarded(lambda: args.func(args)) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "says 4 episodes were written, 2 are there: `medscope cohort remove` took 1 out" in err[0]
    assert "last at 2026-12-05T10:00:00Z); rerun `medscope eval run`" in err[0]
    assert err[0].endswith("; 1 more are missing than were removed: copy the whole run folder")
    record["removed"]["rows"][f"episodes/{parts[1].name}"] = 1
    (out / "removals.jsonl").write_text(json.dumps(record) + "\n")
    assert guarded(lambda: args.func(args)) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert "took 2 out" in err[0] and "more are missing" not in err[0] and "partial copy" not in err[0]
