"""Faults a sweep must survive, through Ray workers and loopback provider servers: after each,
no episode lost, none duplicated, no request repeated for a finished key."""

from __future__ import annotations

import os
import threading

import pytest

from medscope.io import records
from medscope.errors import MedScopeError
from pipelines.eval import run_sweep
from medscope.testing import providers as fp
from medscope.testing.gate import wait_for
from tests.fixtures.fakes.fixtures import fake_provider  # noqa: F401 - a fixture
from medscope.testing.protocols import SingleTurnProtocol, unit_tag
from medscope.testing.views import write_views
from tests.jobs.test_eval_sweep import KEY_ENV, cfg, entry

TIMEOUT_S = 6.0
# item index -> (fault, requests the unit needs: 2 when the fault is retried once)
FAULTS = {
    0: (fp.status(429, retry_after=0.3), 2),
    1: (fp.status(429), 2),
    2: (fp.status(500), 2),
    3: (fp.status(503), 2),
    4: (fp.HANG, 2),  # no answer until the client's timeout gives up on it
    5: (fp.RESET, 2),
    6: (fp.TRUNCATED, 2),
    7: (fp.NONJSON, 2),
    8: (fp.EMPTY, 1),  # an answer (unparseable), not a failure
    9: (fp.REFUSAL, 1),
    10: (fp.status(400), 1),  # permanent: recorded with its error, never retried
}


@pytest.mark.slow
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
        # the timeout decides only the hanging unit's wait: ample for an answered request on a
        # busy machine, so no other unit times out
        models = [entry(servers["openai"], name="oa", timeout_s=TIMEOUT_S, max_attempts=4),
                  entry(servers["gemini"], name="gm", timeout_s=TIMEOUT_S, max_attempts=4),
                  entry(servers["anthropic"], name="an", max_attempts=2)]
        config = cfg(views, out, conditions=["agent"], concurrency=6)
        summary = run_sweep(config, SingleTurnProtocol(), models)
        # Retries exhausted on one Anthropic unit: nothing written for it, a rejects row says why.
        assert summary["done"] == 35 and summary["retry_later"] == 1 and summary["failed"] == 0
        reasons = records.read_table("rejects", out + "/rejects").to_pylist()
        assert [(r["reason"], r["source"]) for r in reasons] == [("retry_later", "an")]
        episodes = records.read_table("episodes", out + "/episodes").to_pylist()
        for name, wire in (("oa", "openai"), ("gm", "gemini")):
            rows = {r["item_id"]: r for r in episodes if r["model"] == name}
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


@pytest.mark.slow
def test_worker_killed_mid_sweep(ray_cluster, tmp_path, monkeypatch, fake_provider):
    """Kill a Ray worker actor's process while its requests are in flight (held at the
    provider); the sweep replaces it, exactly its units in flight are asked again, finished keys
    never, and a rerun sends nothing."""
    import psutil

    monkeypatch.setenv(KEY_ENV, "kill-key")
    server = fake_provider("openai", responder=lambda text, images: "yes", expected_key="kill-key")
    n, first = 16, 4
    server.gate.hold(lambda method, text: True, after=first)  # answer 4 units, then hold every request
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    views = write_views(str(tmp_path / "views.parquet"), n)
    out = str(tmp_path / "eval")
    model = entry(server, timeout_s=300.0)  # held requests wait for the kill: no client timeout may end them
    config = cfg(views, out, conditions=["agent"], workers=2, concurrency=2, run_id="killtest")
    result: dict = {}
    sweeper = threading.Thread(target=lambda: result.update(run_sweep(config, SingleTurnProtocol(), [model])))
    sweeper.start()

    def sender_of_held():
        """(the pid of a worker with every request slot held at the provider, those requests).

        A worker with all its slots held can send nothing more, so the requests it loses are
        exactly these, whatever else the sweep sends after the kill."""
        if len(records.part_keys(out + "/episodes")) < first:
            return None
        held = server.gate.held()
        senders = {c.laddr.port: c.pid for c in psutil.net_connections(kind="tcp")
                   if c.pid and c.raddr and c.raddr.port == port}
        by_pid: dict[int, list] = {}
        for h in held:
            if h.client_port in senders:
                by_pid.setdefault(senders[h.client_port], []).append(h)
        full = [(pid, hs) for pid, hs in sorted(by_pid.items()) if len(hs) == config.concurrency]
        return full[0] if full else None

    held: list = []  # the killed worker's held requests, once chosen
    try:
        pid, held = wait_for(sender_of_held, f"{first} episodes written and a worker with all "
                             f"{config.concurrency} of its requests held at the provider")
        finished_at_kill = records.part_keys(out + "/episodes")
        worker = psutil.Process(pid)
        assert "EpisodeWorker" in " ".join(worker.cmdline())  # a sweep worker, not this process
        worker.kill()
        wait_for(lambda: not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE,
                 f"worker process {pid} to exit after SIGKILL")
    finally:
        # the killed worker's held requests close unanswered; every other request is answered,
        # including any its replacement sent after the kill (a snapshot of live connections
        # taken here would miss those and drop them too: seen once on a slow host)
        killed_ports = {h.client_port for h in held}
        dropped = server.gate.release(drop=lambda h: h.client_port in killed_ports)
        sweeper.join(timeout=300)
    assert not sweeper.is_alive(), "the sweep did not finish after the kill"
    assert len(finished_at_kill) == first and result["failed"] == result["retry_later"] == 0
    assert result["workers_lost"] == 1
    table = records.read_table("episodes", out + "/episodes").to_pylist()
    # the driver's record of what it queued again: the killed worker's units (those held at the
    # provider, and any it had been given but not yet sent), at most its request slots
    sent_again = {r["item_id"] for r in table if r["request_key"] in result["units_sent_again"]}
    assert sorted(r["item_id"] for r in table) == [f"v{i:03d}" for i in range(n)]  # none lost or doubled
    finished_views = {r["item_id"] for r in table if r["request_key"] in finished_at_kill}
    assert len(finished_views) == first
    in_flight = {v for v in (f"v{i:03d}" for i in range(n)) for h in dropped if unit_tag(v, "agent") in h.what}
    assert sorted(h.what for h in dropped) == sorted(h.what for h in held)
    assert len(in_flight) == config.concurrency  # both of the killed worker's slots
    assert in_flight <= sent_again and len(sent_again) <= config.concurrency
    # finished before the kill: asked once; in flight on the killed worker: asked again, once
    assert {v: server.count(unit_tag(v, "agent")) for v in (f"v{i:03d}" for i in range(n))} == {
        v: 2 if v in in_flight else 1 for v in (f"v{i:03d}" for i in range(n))}
    before = len(server.requests)
    again = run_sweep(config, SingleTurnProtocol(), [model])
    assert again["to_run"] == 0 and len(server.requests) == before


@pytest.mark.slow
def test_workers_that_cannot_start_stop_the_sweep_after_the_replacements_in_a_row(ray_cluster, tmp_path, monkeypatch,
                                                                                 fake_provider):
    """A worker that dies before its lane finishes a unit is replaced at most max_actor_restarts
    times in a row; then the sweep stops with a line that says so, and nothing was requested."""
    monkeypatch.setenv(KEY_ENV, "start-key")
    server = fake_provider("openai", responder=lambda text, images: "yes", expected_key="start-key")
    driver = os.getpid()

    def load_protocol(pid):
        if os.getpid() != pid:  # on a worker: as a protocol whose module is missing there would
            raise ImportError("this protocol cannot be loaded on a worker")
        return SingleTurnProtocol()

    class UnloadableOnWorkers(SingleTurnProtocol):
        def __reduce__(self):
            return load_protocol, (driver,)

    views = write_views(str(tmp_path / "views.parquet"), 4)
    config = cfg(views, str(tmp_path / "eval"), conditions=["agent"], workers=1, max_actor_restarts=1)
    with pytest.raises(MedScopeError, match="pool lane died 2 times in a row without finishing a unit"):
        run_sweep(config, UnloadableOnWorkers(), [entry(server)])
    assert server.requests == []
