"""Latency is the provider's (each request sent to its reply); the wait for the rate limiter is
recorded and shown apart, against a real loopback provider and the real rate schedule."""

from __future__ import annotations

import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from medscope.images import encode_png
from medscope.io import records
from medscope.models.base import Decoding, Message
from medscope.models.config import ModelEntry
from medscope.models.guarded import GuardedModel
from medscope.models.ratelimit import RateBucket
from medscope.models.registry import build_model
from medscope.protocols.base import EpisodeResult, Item
from medscope.protocols.counterfactual import PROTOCOL as CounterfactualProtocol
from medscope.testing import providers as fp
from pipelines.eval import show
from pipelines.support.actors import episode_row
from tests.jobs.test_eval_privacy_budget import cli_main

KEY = "latency-test-key"
SERVER_S = 0.2  # the loopback provider's own time per request
CLIENT_DEADLINE_S = 5.0  # the client gives up on a request after this: no answered request took longer
RPM = 6  # one request every 60 / 6 = 10 s on the limiter's schedule


class BookedAtOneInstant:
    """The sweep's limiter (a RateBucket) with every request booked at the same instant, so the
    waits it hands out are exactly the schedule's: 0, 10, 20 s for three requests at 6 rpm."""

    def __init__(self):
        self.bucket = RateBucket(rpm=RPM)
        self.at = time.time()

    def reserve(self, tokens: int) -> float:
        return self.bucket.reserve(tokens, now=self.at)

    def settle(self, estimated: int, actual: int) -> None:
        self.bucket.settle(estimated, actual)

    def penalize(self, seconds: float) -> None:
        self.bucket.penalize(seconds, now=self.at)


def _queued_episodes(monkeypatch):
    """Three requests through one guarded model whose limiter queues them; the queue's sleeps
    advance a virtual clock instead of the test's time."""
    monkeypatch.setenv("MEDSCOPE_LATENCY_KEY", KEY)
    server = fp.FakeProvider("openai", responder=lambda text, images: "<final>yes</final>", latency_s=SERVER_S,
                             expected_key=KEY)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)

    def clock() -> float:
        return time.monotonic() + sum(slept)

    entry = ModelEntry(name="m", kind="openai", model="fake", base_url=server.url, api_key_env="MEDSCOPE_LATENCY_KEY",
                       timeout_s=CLIENT_DEADLINE_S)
    guarded = GuardedModel(build_model(entry), limiter=BookedAtOneInstant(), max_attempts=1, sleep=sleep, clock=clock)
    try:
        for i in range(3):
            guarded.complete([Message.text("user", f"question {i}")], Decoding(max_output_tokens=16))
    finally:
        server.close()
    return entry, guarded, slept, server


def test_latency_is_the_servers_and_the_limiter_queue_is_apart(monkeypatch):
    _, guarded, slept, server = _queued_episodes(monkeypatch)
    assert len(server.requests) == 3
    # the schedule: the second request of one instant waits one slot (10 s), the third two
    assert slept == [pytest.approx(10.0), pytest.approx(20.0)]
    assert guarded.queued_s >= sum(slept)  # the 30 s queued, plus the bookings' own round trips
    # each request took at least the server's own time, and at most the client's deadline: the
    # 30 s spent in the queue (twice the three deadlines) are not in it
    assert 3 * SERVER_S <= guarded.request_s < 3 * CLIENT_DEADLINE_S < sum(slept)


def test_an_episode_records_both_and_eval_show_prints_them_apart(tmp_path, monkeypatch, capsys):
    entry, guarded, slept, _ = _queued_episodes(monkeypatch)
    item = Item(item_id="v0", case_id="c0", question="Is there a polyp?", truth="present",
                images=(encode_png(np.full((8, 8), 90, dtype=np.uint8)),), meta={"finding": "polyp"})
    result = EpisodeResult(turns=[], raw_text="<final>yes</final>", action="answer", answer="yes", claims_finding=True)
    row = episode_row({"condition": "agent", "key": "k0"}, item, entry, result, guarded, guarded.request_s, None,
                      "run1", CounterfactualProtocol())
    assert (row["latency_s"], row["queued_s"]) == (guarded.request_s, guarded.queued_s)
    run = tmp_path / "eval"
    records.write_part("episodes", [row], str(run / "episodes"), "k0")
    (shown,) = show(str(run))
    assert shown["mean_latency_s"] == round(guarded.request_s, 3)
    assert shown["mean_queued_s"] == round(guarded.queued_s, 3)
    assert cli_main(["eval", "show", str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split()
    values = dict(zip(header, out[1].split()))
    assert values["mean_latency_s"] == f"{round(guarded.request_s, 3):.3f}"
    assert values["mean_queued_s"] == f"{round(guarded.queued_s, 3):.3f}"
    assert any(line.startswith("mean_latency_s: from each request sent to its reply") for line in out)


def test_a_table_written_before_queueing_was_recorded_shows_a_dash(tmp_path, capsys):
    row = {"run_id": "r", "protocol": "counterfactual", "model": "old", "condition": "agent", "item_id": "v0",
           "case_id": "c0", "request_key": "k0", "prompt_version": "v1", "decoding": "greedy", "action": "answer",
           "tool_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 22.0,
           "attempts": 1}
    table = records.to_table("episodes", [row]).drop(["queued_s"])  # an earlier release's columns
    (tmp_path / "eval" / "episodes").mkdir(parents=True)
    pq.write_table(table, tmp_path / "eval" / "episodes" / "part-0.parquet")
    (shown,) = show(str(tmp_path / "eval"))
    assert (shown["mean_latency_s"], shown["mean_queued_s"]) == (22.0, None)
    assert cli_main(["eval", "show", str(tmp_path / "eval")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert dict(zip(out[0].split(), out[1].split()))["mean_queued_s"] == "-"
    assert "'-': not recorded by the release that ran it" in "\n".join(out)
