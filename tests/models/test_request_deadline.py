"""One deadline per request and a capped retry wait (issue 51, fourth round of bad input).

Before: a provider that sent its headers and then one byte every 2 s held a sweep whose model
said ``timeout_s: 5`` until it was killed, because the SDK's timeout bounds each read; and a
``Retry-After: 999999999`` was waited for. Each test runs the request in a thread joined with a
generous bound, so a regression is a failing test, never a hung suite.
"""

from __future__ import annotations

import socket
import threading

import httpcore2
import pytest

from medscope.models import deadline
from medscope.models.base import Decoding, Message, TransientModelError
from medscope.models.config import ModelEntry
from medscope.models.guarded import MAX_RETRY_WAIT_S, GuardedModel, RetryAfterOverCap
from medscope.models.registry import build_model
from medscope.testing import providers as fp

KEY = "deadline-test-key"
TIMEOUT_S = 1.0  # the model's timeout_s: the whole request's deadline
BYTE_INTERVAL_S = 0.05  # the trickle's pace: 20x inside the read timeout, so no read ever times out
HANG_GUARD_S = 60.0  # far past any deadline here; reaching it is the hang the issue reported


@pytest.fixture(params=[*fp.WIRES, fp.AZURE])
def server(request, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_DEADLINE_KEY", KEY)
    srv = fp.FakeProvider(request.param, expected_key=KEY)
    yield srv
    srv.close()


def model_for(srv, **kw):
    entry = dict(name="m", kind=srv.wire, model="fake-model", base_url=srv.url, api_key_env="MEDSCOPE_DEADLINE_KEY",
                 timeout_s=TIMEOUT_S)
    if srv.wire == fp.AZURE:
        entry["settings"] = {"api_version": "2024-12-01-preview"}
    entry.update(kw)
    return build_model(ModelEntry(**entry))


def run_bounded(fn):
    """``fn()`` in a thread; its result or exception, or a test failure if it outlives the guard."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            outcome["error"] = err

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(HANG_GUARD_S)
    assert not worker.is_alive(), f"the request was still running after {HANG_GUARD_S} s: no deadline"
    return outcome


def test_trickling_body_ends_at_the_deadline_with_a_reason(server):
    server.push(fp.trickle(BYTE_INTERVAL_S))
    model = model_for(server)
    outcome = run_bounded(lambda: model.complete([Message.text("user", "hello")], Decoding(max_output_tokens=8)))
    err = outcome.get("error")
    assert isinstance(err, TransientModelError), outcome
    assert "request deadline of 1 s" in str(err)
    # the client left while bytes were still coming: the server saw it go mid-body
    assert server.trickle_done.wait(HANG_GUARD_S)
    sent, total = server.trickles[0]
    assert 0 < sent < total


def test_the_same_client_answers_the_next_request(server):
    # the deadline belongs to one request: a connection given up on does not poison the client
    server.push(fp.trickle(BYTE_INTERVAL_S))
    model = model_for(server)
    first = run_bounded(lambda: model.complete([Message.text("user", "one")], Decoding(max_output_tokens=8)))
    assert isinstance(first.get("error"), TransientModelError)
    second = run_bounded(lambda: model.complete([Message.text("user", "two")], Decoding(max_output_tokens=8)))
    assert second.get("value") is not None and second["value"].text == "ok", second


def test_guarded_sweep_unit_fails_after_max_attempts_of_trickle():
    # the sweep: max_attempts 2, every attempt trickled; the unit fails, naming the deadline
    srv = fp.FakeProvider("openai", expected_key=KEY)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MEDSCOPE_DEADLINE_KEY", KEY)
            srv.push(fp.trickle(BYTE_INTERVAL_S), fp.trickle(BYTE_INTERVAL_S))
            waits: list[float] = []
            guarded = GuardedModel(model_for(srv), max_attempts=2, sleep=waits.append)
            outcome = run_bounded(lambda: guarded.complete([Message.text("user", "x")], Decoding(max_output_tokens=8)))
        assert isinstance(outcome.get("error"), TransientModelError)
        assert guarded.attempts == 2 and len(srv.requests) == 2
        assert all("request deadline" in e for e in guarded.errors)
    finally:
        srv.close()


def test_huge_retry_after_is_a_failed_attempt_not_a_31_year_wait():
    srv = fp.FakeProvider("anthropic", expected_key=KEY)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MEDSCOPE_DEADLINE_KEY", KEY)
            srv.push(fp.status(429, retry_after=999999999))
            waits: list[float] = []
            penalties: list[float] = []

            class Limiter:
                def reserve(self, tokens):
                    return 0.0

                def settle(self, estimated, actual):
                    pass

                def penalize(self, seconds):
                    penalties.append(seconds)

            guarded = GuardedModel(model_for(srv), limiter=Limiter(), max_attempts=6, sleep=waits.append)
            outcome = run_bounded(lambda: guarded.complete([Message.text("user", "x")], Decoding(max_output_tokens=8)))
        err = outcome.get("error")
        assert isinstance(err, RetryAfterOverCap), outcome
        assert "999999999 s" in str(err) and f"{MAX_RETRY_WAIT_S:g} s cap" in str(err)
        assert guarded.attempts == 1 and len(srv.requests) == 1  # not retried early against the provider's word
        assert waits == []  # nothing slept
        assert penalties == [MAX_RETRY_WAIT_S]  # the shared limiter is held no longer than the cap
    finally:
        srv.close()


def test_retry_after_within_the_cap_is_still_honoured():
    srv = fp.FakeProvider("gemini", expected_key=KEY)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MEDSCOPE_DEADLINE_KEY", KEY)
            srv.push(fp.status(503, retry_after=90))
            waits: list[float] = []
            guarded = GuardedModel(model_for(srv), max_attempts=3, sleep=waits.append)
            outcome = run_bounded(lambda: guarded.complete([Message.text("user", "x")], Decoding(max_output_tokens=8)))
        assert outcome.get("value") is not None and outcome["value"].text == "ok", outcome
        assert waits == [90.0]  # 90 s < 120 s: waited exactly as asked (jitter is at most 30 s)
    finally:
        srv.close()


def test_deadline_outside_a_request_block_changes_nothing():
    # the backend bounds only what runs inside request_deadline
    assert deadline._bounded(7.0, TimeoutError) == 7.0
    with deadline.request_deadline(0.0):
        with pytest.raises(TimeoutError, match="request deadline of 0 s passed"):
            deadline._bounded(7.0, TimeoutError)
        assert deadline.deadline_passed()
    assert not deadline.deadline_passed()


@pytest.fixture
def resolver(monkeypatch):
    """getaddrinfo as the system's, except for names under .slow-dns.test, whose lookups wait on an event
    (a resolver that does not answer), and *.no-such.test, which do not exist."""
    real = socket.getaddrinfo
    answer = threading.Event()
    asked: list[str] = []

    def getaddrinfo(host, *args, **kwargs):
        asked.append(host)
        if str(host).endswith(".slow-dns.test"):
            answer.wait(HANG_GUARD_S)
            return real("127.0.0.1", *args, **kwargs)
        if str(host).endswith(".no-such.test"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield asked
    answer.set()


def _openai_server():
    return fp.FakeProvider("openai", expected_key=KEY)


def test_a_dns_lookup_that_never_answers_ends_at_the_deadline_naming_the_host(resolver, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_DEADLINE_KEY", KEY)
    srv = _openai_server()
    try:
        port = srv.url.split(":")[2].split("/")[0]
        model = model_for(srv, base_url=f"http://provider.slow-dns.test:{port}/v1")
        outcome = run_bounded(lambda: model.complete([Message.text("user", "x")], Decoding(max_output_tokens=8)))
        err = outcome.get("error")
        assert isinstance(err, TransientModelError), outcome
        assert "DNS lookup of provider.slow-dns.test did not answer within the request deadline of 1 s" in str(err)
        assert "provider.slow-dns.test" in resolver and srv.requests == []
    finally:
        srv.close()


def test_a_host_name_is_resolved_and_connected_to(resolver, monkeypatch):
    # "localhost" may resolve to ::1 first, where the loopback server does not listen: the next address is tried
    monkeypatch.setenv("MEDSCOPE_DEADLINE_KEY", KEY)
    srv = _openai_server()
    try:
        port = srv.url.split(":")[2].split("/")[0]
        model = model_for(srv, base_url=f"http://localhost:{port}/v1")
        outcome = run_bounded(lambda: model.complete([Message.text("user", "x")], Decoding(max_output_tokens=8)))
        assert outcome.get("value") is not None and outcome["value"].text == "ok", outcome
        assert "localhost" in resolver and len(srv.requests) == 1
    finally:
        srv.close()


def test_an_unknown_host_fails_in_one_line(resolver):
    with deadline.request_deadline(5.0):
        with pytest.raises(httpcore2.ConnectError, match="DNS lookup of api.no-such.test failed"):
            deadline.resolve("api.no-such.test", 443)


def test_a_model_on_an_unknown_host_says_the_lookup_failed(resolver, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_DEADLINE_KEY", KEY)
    srv = _openai_server()
    try:
        model = model_for(srv, base_url="http://api.no-such.test:9/v1")
        outcome = run_bounded(lambda: model.complete([Message.text("user", "x")], Decoding(max_output_tokens=8)))
        err = outcome.get("error")
        assert isinstance(err, TransientModelError) and "DNS lookup of api.no-such.test failed" in str(err), outcome
        assert KEY not in str(err)
    finally:
        srv.close()
