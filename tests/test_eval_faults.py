"""Faults a sweep must survive, through Ray workers and loopback provider servers: after each,
no episode lost, none duplicated, no request repeated for a finished key."""

from __future__ import annotations

import threading
import time

from medscope import records
from pipelines.eval import run_sweep
from medscope.testing import providers as fp
from tests.fakes.fixtures import fake_provider  # noqa: F401 - a fixture
from medscope.testing.protocols import SingleTurnProtocol, unit_tag
from medscope.testing.views import write_views
from tests.test_eval_sweep import KEY_ENV, cfg, entry

# item index -> (fault, requests the unit needs: 2 when the fault is retried once)
FAULTS = {
    0: (fp.status(429, retry_after=0.3), 2),
    1: (fp.status(429), 2),
    2: (fp.status(500), 2),
    3: (fp.status(503), 2),
    4: (fp.slow(5.0), 2),  # past the 2.5 s timeout
    5: (fp.RESET, 2),
    6: (fp.TRUNCATED, 2),
    7: (fp.NONJSON, 2),
    8: (fp.EMPTY, 1),  # an answer (unparseable), not a failure
    9: (fp.REFUSAL, 1),
    10: (fp.status(400), 1),  # permanent: recorded with its error, never retried
}


def test_sweep_survives_every_fault(ray_cluster, tmp_path, monkeypatch):
    """One sweep, three providers: OpenAI and Gemini servers fail each unit of FAULTS once;
    the Anthropic server fails one unit more often than its model's max_attempts."""
    monkeypatch.setenv(KEY_ENV, "fault-key")
    servers = {w: fp.FakeProvider(w, responder=lambda text, images: "yes", expected_key="fault-key") for w in fp.WIRES}
    try:
        views = write_views(str(tmp_path / "views.parquet"), 12)
        for wire in ("openai", "gemini"):
            for i, (fault, _) in FAULTS.items():
                servers[wire].on(unit_tag(f"v{i:03d}", "agent"), fault)
        servers["anthropic"].on(unit_tag("v001", "agent"), fp.status(503), fp.status(503))
        out = str(tmp_path / "eval")
        models = [entry(servers["openai"], name="oa", timeout_s=2.5, max_attempts=4),
                  entry(servers["gemini"], name="gm", timeout_s=2.5, max_attempts=4),
                  entry(servers["anthropic"], name="an", max_attempts=2)]
        config = cfg(views, out, conditions=["agent"], concurrency=6)
        summary = run_sweep(config, SingleTurnProtocol(), models)
        # Retries exhausted on one Anthropic unit: nothing written for it, a rejects row says why.
        assert summary["done"] == 35 and summary["retry_later"] == 1 and summary["failed"] == 0
        reasons = records.read_table("rejects", out + "/rejects").to_pylist()
        assert [(r["reason"], r["source"]) for r in reasons] == [("retry_later", "an")]
        episodes = records.read_table("episodes", out + "/episodes").to_pylist()
        for name, wire in (("oa", "openai"), ("gm", "gemini")):
            rows = {r["view_id"]: r for r in episodes if r["model"] == name}
            assert sorted(rows) == [f"v{i:03d}" for i in range(12)]  # none lost, none duplicated
            for i in range(12):
                need = FAULTS.get(i, (None, 1))[1]
                assert servers[wire].count(unit_tag(f"v{i:03d}", "agent")) == need, (wire, i)
                assert rows[f"v{i:03d}"]["attempts"] == need
            assert rows["v008"]["action"] == "unparseable" and rows["v008"]["raw_text"] == ""
            assert rows["v009"]["error"] is None
            assert rows["v010"]["error"].startswith("permanent: HTTP 400") and rows["v010"]["action"] == "unparseable"
            assert rows["v011"]["answer"] == "yes" and rows["v011"]["error"] is None
        # Rerun: only the unit left for later is asked (once more); finished keys, the 400
        # included, send nothing.
        before = {w: len(s.requests) for w, s in servers.items()}
        again = run_sweep(config, SingleTurnProtocol(), models)
        assert again["to_run"] == 1 and again["done"] == 1
        assert {w: len(s.requests) - before[w] for w, s in servers.items()} == {"openai": 0, "gemini": 0, "anthropic": 1}
        assert servers["anthropic"].count(unit_tag("v001", "agent")) == 3
        keys = [r["request_key"] for r in records.read_table("episodes", out + "/episodes").to_pylist()]
        assert len(keys) == len(set(keys)) == 36
    finally:
        for s in servers.values():
            s.close()


def test_worker_killed_mid_sweep(ray_cluster, tmp_path, monkeypatch, fake_provider):
    """Kill a Ray worker actor while episodes are in flight; the sweep replaces it, finished
    keys are never requested again, and a rerun sends nothing."""
    import ray

    monkeypatch.setenv(KEY_ENV, "kill-key")
    server = fake_provider("openai", responder=lambda text, images: "yes", latency_s=0.25, expected_key="kill-key")
    n = 16
    views = write_views(str(tmp_path / "views.parquet"), n)
    out = str(tmp_path / "eval")
    model = entry(server)
    config = cfg(views, out, conditions=["agent"], workers=2, concurrency=2, run_id="killtest")
    result: dict = {}
    sweeper = threading.Thread(target=lambda: result.update(run_sweep(config, SingleTurnProtocol(), [model])))
    sweeper.start()
    deadline = time.monotonic() + 60
    while len(records.part_keys(out + "/episodes")) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    finished_at_kill = {r.split("-")[0] for r in records.part_keys(out + "/episodes")}
    victims = [a for a in ray.util.list_named_actors() if a.startswith("medscope-eval-killtest")]
    assert victims, "no named worker actors found"
    ray.kill(ray.get_actor(sorted(victims)[0]))
    sweeper.join(timeout=120)
    assert not sweeper.is_alive() and result["done"] >= n - len(finished_at_kill)
    table = records.read_table("episodes", out + "/episodes").to_pylist()
    assert sorted(r["view_id"] for r in table) == [f"v{i:03d}" for i in range(n)]  # none lost or doubled
    finished_views = {r["view_id"] for r in table if r["request_key"] in finished_at_kill}
    assert len(finished_views) == len(finished_at_kill) >= 4
    for v in finished_views:
        assert server.count(unit_tag(v, "agent")) == 1  # finished before the kill: asked once
    # Only units in flight on the killed worker may have been asked twice.
    assert sum(server.count(unit_tag(f"v{i:03d}", "agent")) - 1 for i in range(n)) <= config.concurrency
    before = len(server.requests)
    again = run_sweep(config, SingleTurnProtocol(), [model])
    assert again["to_run"] == 0 and len(server.requests) == before
