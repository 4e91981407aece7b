"""Every failed, refused or unjudged unit is counted, shown, and decides the exit code."""

from __future__ import annotations

import json
import socket

import pytest
import yaml

from pipelines.support import accounting as accmod
from pipelines.support.accounting import EXIT_NO_WORK, EXIT_OK, EXIT_UNITS_FAILED
from medscope.testing import providers as fp
from medscope.testing.views import write_views
from tests.jobs.test_eval_privacy_budget import PROTOCOL, cli_main
from tests.jobs.test_eval_sweep import KEY_ENV, entry


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _acc(done=0, failed=0, refused=0, skipped=0, stopped=0) -> dict:
    return {"done": done, "failed": failed, "refused": refused, "skipped": skipped, "stopped": stopped}


def test_exit_code_rules_worked_by_hand():
    assert accmod.exit_code(_acc(done=10)) == EXIT_OK
    assert accmod.exit_code(_acc(done=9, failed=1)) == EXIT_UNITS_FAILED
    assert accmod.exit_code(_acc(done=9, refused=1)) == EXIT_UNITS_FAILED
    # nothing done (and nothing from an earlier run): no tolerance can accept it
    assert accmod.exit_code(_acc(failed=48), max_failed=1000) == EXIT_NO_WORK
    assert accmod.exit_code(_acc(refused=54), max_failed=0.99) == EXIT_NO_WORK
    # a count: 2 accepted, 3 not
    assert accmod.exit_code(_acc(done=8, failed=2), max_failed=2) == EXIT_OK
    assert accmod.exit_code(_acc(done=7, failed=3), max_failed=2) == EXIT_UNITS_FAILED
    # a fraction of done + skipped + failed + refused = 20 units: 0.1 -> 2 accepted
    assert accmod.exit_code(_acc(done=10, skipped=8, failed=1, refused=1), max_failed=0.1) == EXIT_OK
    assert accmod.exit_code(_acc(done=10, skipped=7, failed=2, refused=1), max_failed=0.1) == EXIT_UNITS_FAILED
    # a rerun whose new units all failed still has the earlier run's results: tolerance applies
    assert accmod.exit_code(_acc(skipped=6, failed=6), max_failed=0.5) == EXIT_OK
    # the budget stopping units is the user's own cap, not a failure; an all-skipped rerun is fine
    assert accmod.exit_code(_acc(done=4, stopped=4)) == EXIT_OK
    assert accmod.exit_code(_acc(skipped=12)) == EXIT_OK
    with pytest.raises(Exception, match="max-failed"):
        accmod.allowed_failures(-1, 10)


def test_failure_reasons_group_by_error_name():
    assert accmod.failure_reason("retry_later", "APIConnectionError: Connection error.") == "retry_later: APIConnectionError"
    assert accmod.failure_reason("done", "permanent: HTTP 401: AuthenticationError: no key") == "done: permanent HTTP 401"
    assert accmod.failure_reason("failed", None) == "failed: no error text"


@pytest.mark.slow
def test_closed_port_endpoint_fails_every_unit_and_exits_no_work(ray_cluster, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv(KEY_ENV, "k")
    views = write_views(str(tmp_path / "views.parquet"), 3)
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [{
        "name": "nowhere", "kind": "openai", "model": "m", "base_url": f"http://127.0.0.1:{_closed_port()}/v1",
        "api_key_env": KEY_ENV, "max_attempts": 1, "timeout_s": 2.0}]}))
    out = tmp_path / "eval"
    # --no-preflight: the units themselves meet the closed port (the pre-flight would stop the sweep first)
    rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "agent,plain",
                   "--out", str(out), "--protocol", PROTOCOL, "--backoff-s", "0.01", "--no-preflight"])
    err = capfd.readouterr().err
    assert rc == EXIT_NO_WORK
    acc = json.loads((out / "sweep.json").read_text())["accounting"]
    assert (acc["done"], acc["failed"], acc["refused"]) == (0, 6, 0)
    assert [(r["model"], r["condition"], r["failed"]) for r in acc["by_model_condition"]] == [
        ("nowhere", "agent", 3), ("nowhere", "plain", 3)]
    assert sum(acc["failed_by_reason"].values()) == 6 and all(k.startswith("retry_later") for k in acc["failed_by_reason"])
    assert "did no work" in err and "nowhere" in err and "failed 6" in err


@pytest.mark.slow
def test_some_failed_units_exit_3_unless_accepted(ray_cluster, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv(KEY_ENV, "k")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key="k")
    try:
        views = write_views(str(tmp_path / "views.parquet"), 2)
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [
            entry(server, name="up").model_dump(exclude_defaults=True),
            {"name": "down", "kind": "openai", "model": "m", "base_url": f"http://127.0.0.1:{_closed_port()}/v1",
             "api_key_env": KEY_ENV, "max_attempts": 1, "timeout_s": 2.0}]}))
        out = tmp_path / "eval"
        argv = ["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain",
                "--out", str(out), "--protocol", PROTOCOL, "--backoff-s", "0.01", "--no-preflight"]
        assert cli_main(argv) == EXIT_UNITS_FAILED
        err = capfd.readouterr().err
        assert "2 unit(s) failed" in err and "--max-failed" in err
        acc = json.loads((out / "sweep.json").read_text())["accounting"]
        assert [(r["model"], r["done"], r["failed"]) for r in acc["by_model_condition"]] == [("down", 0, 2), ("up", 2, 0)]
        # rerun: up's 2 are skipped (never re-sent), down's 2 fail again; half of 4 accepted
        n = len(server.requests)
        assert cli_main(argv + ["--max-failed", "0.5"]) == EXIT_OK
        assert len(server.requests) == n
        assert cli_main(argv + ["--max-failed", "1"]) == EXIT_UNITS_FAILED
    finally:
        server.close()


def test_private_items_without_allow_list_are_refused_with_the_fix(ray_cluster, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv(KEY_ENV, "k")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key="k")
    try:
        # every item private, allow-listed for another endpoint only
        views = write_views(str(tmp_path / "views.parquet"), 3, private_every=1, allow=("http://elsewhere:1/v1",))
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [entry(server, name="cloud").model_dump(exclude_defaults=True)]}))
        out = tmp_path / "eval"
        rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain",
                       "--out", str(out), "--protocol", PROTOCOL])
        err = capfd.readouterr().err
        assert rc == EXIT_NO_WORK and server.count() == 0
        acc = json.loads((out / "sweep.json").read_text())["accounting"]
        assert (acc["done"], acc["refused"]) == (0, 3)
        assert acc["refused_endpoints"][0]["endpoint"] == server.url and acc["refused_endpoints"][0]["n"] == 3
        assert server.url in err and "endpoint_allowlist" in err and "--allow-endpoint" in err
    finally:
        server.close()


def test_permanent_error_stays_a_failure_on_resume_without_a_resend(ray_cluster, tmp_path, monkeypatch, capfd):
    from medscope.testing.protocols import unit_tag

    monkeypatch.setenv(KEY_ENV, "k")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key="k")
    server.on(unit_tag("v001", "plain"), fp.status(400))  # a 4xx: written once with its error
    try:
        views = write_views(str(tmp_path / "views.parquet"), 3)
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [entry(server, name="m").model_dump(exclude_defaults=True)]}))
        out = tmp_path / "eval"
        argv = ["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain",
                "--out", str(out), "--protocol", PROTOCOL]
        assert cli_main(argv) == EXIT_UNITS_FAILED
        acc = json.loads((out / "sweep.json").read_text())["accounting"]
        assert (acc["done"], acc["failed"]) == (2, 1) and list(acc["failed_by_reason"]) == ["done: permanent HTTP 400"]
        n = server.count()
        assert cli_main(argv) == EXIT_UNITS_FAILED and server.count() == n  # counted again, never re-sent
        acc = json.loads((out / "sweep.json").read_text())["accounting"]
        assert (acc["skipped"], acc["failed"]) == (2, 1)
        assert list(acc["failed_by_reason"]) == ["done: permanent HTTP 400 (earlier run)"]
    finally:
        server.close()


def test_connection_failures_are_told_apart_from_answers():
    from pipelines.support.eval_drive import connection_failure

    refused = {"status": "retry_later", "error": "APIConnectionError: Connection error."}
    dns = {"status": "retry_later", "error": "DNS lookup of api.example.invalid failed: [Errno -2] Name or service "
                                             "not known; APIConnectionError: Connection error."}
    assert connection_failure(refused) and connection_failure(dns)
    # the server answered: an HTTP error, a body cut short, a slow reply, a permanent error
    assert not connection_failure({"status": "retry_later", "error": "HTTP 503: InternalServerError: ConnectError upstream"})
    assert not connection_failure({"status": "retry_later", "error": "malformed response: no choices"})
    assert not connection_failure({"status": "retry_later", "error": "no complete answer within the request deadline "
                                                                     "of 2 s (timeout_s); APITimeoutError: timed out"})
    assert not connection_failure({"status": "done", "error": "permanent: HTTP 400: BadRequestError"})
    assert not connection_failure({"status": "done", "error": None})


def test_breaker_stops_an_endpoint_after_limit_connection_failures_in_a_row():
    from pipelines.support.eval_drive import EndpointBreaker

    down = {"status": "retry_later", "error": "APIConnectionError: Connection error."}
    answered = {"status": "retry_later", "error": "HTTP 429: RateLimitError"}
    done = {"status": "done", "error": None}
    b = EndpointBreaker(limit=3)
    # A: down, down, answered (resets), down, down, down -> stopped at the sixth result
    trips = [b.record("http://a/v1", r) for r in (down, down, answered, down, down, down)]
    assert trips == [False, False, False, False, False, True]
    assert b.stopped["http://a/v1"].startswith("3 units in a row could not connect")
    # B's results never count towards A's, and a stopped endpoint does not trip again
    assert [b.record("http://b/v1", r) for r in (down, done, down, down)] == [False, False, False, False]
    assert not b.record("http://a/v1", down)
    # local models never connect anywhere; a limit of 0 never stops
    assert not any(EndpointBreaker(limit=1).record("local", down) for _ in range(3))
    assert not any(EndpointBreaker(limit=0).record("http://a/v1", down) for _ in range(10))


@pytest.mark.slow
def test_down_endpoint_is_stopped_and_its_queued_units_counted_not_sent(ray_cluster, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv(KEY_ENV, "k")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key="k")
    try:
        views = write_views(str(tmp_path / "views.parquet"), 8)
        down_url = f"http://127.0.0.1:{_closed_port()}/v1"
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [
            entry(server, name="up").model_dump(exclude_defaults=True),
            {"name": "down", "kind": "openai", "model": "m", "base_url": down_url,
             "api_key_env": KEY_ENV, "max_attempts": 1, "timeout_s": 2.0}]}))
        out = tmp_path / "eval"
        # one worker, one request at a time: down's results arrive one by one, so exactly 3 are sent
        rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "agent,plain",
                       "--out", str(out), "--protocol", PROTOCOL, "--backoff-s", "0.01", "--no-preflight",
                       "--workers", "1", "--concurrency", "1", "--max-connection-failures", "3"])
        err = capfd.readouterr().err
        assert rc == EXIT_UNITS_FAILED
        sweep = json.loads((out / "sweep.json").read_text())
        acc = sweep["accounting"]
        # 8 views x 2 conditions per model: up does all 16; down sends 3, 13 are not sent
        assert [(r["model"], r["done"], r["failed"]) for r in acc["by_model_condition"]] == [
            ("down", 0, 8), ("down", 0, 8), ("up", 8, 0), ("up", 8, 0)]
        assert acc["failed_by_reason"] == {"retry_later: APIConnectionError": 3, "failed: not sent": 13}
        assert list(sweep["endpoints_stopped"]) == [down_url]
        assert sweep["endpoints_stopped"][down_url].startswith("3 units in a row could not connect")
        assert f"endpoint {down_url} stopped: 3 units in a row could not connect" in err
        assert "its 13 queued unit(s) are not sent" in err
        # the rerun sends down's units again (stopped once more after 3) and never re-sends up's
        n = len(server.requests)
        cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "agent,plain",
                  "--out", str(out), "--protocol", PROTOCOL, "--backoff-s", "0.01", "--no-preflight",
                  "--workers", "1", "--concurrency", "1", "--max-connection-failures", "3"])
        assert len(server.requests) == n
    finally:
        server.close()
