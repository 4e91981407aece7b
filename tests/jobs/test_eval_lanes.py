"""The eval sweep's lanes without Ray: units go to the least busy actor of their lane, never past
its request slots, and a local model's units never reach the pool."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

from pipelines.support.eval_drive import POOL, Lane, _fill, _lanes


class FakeActor:
    def __init__(self, name: str):
        self.name = name
        self.sent: list[dict] = []
        self.run = SimpleNamespace(remote=self._remote)

    def _remote(self, unit: dict):
        self.sent.append(unit)
        return (self.name, unit["key"])  # stands in for the object ref

    def __repr__(self):
        return self.name


def _entry(name: str, kind: str = "openai", placement: str = "auto"):
    return SimpleNamespace(name=name, kind=kind, placement=placement)


def test_units_fill_each_lane_up_to_its_slots():
    spawned = []

    def spawn(dedicated: bool):
        spawned.append(FakeActor(f"{'local' if dedicated else 'api'}-{len(spawned)}"))
        return spawned[-1]

    cfg = SimpleNamespace(workers=2, concurrency=2)
    entries = [_entry("api-model"), _entry("local-model", placement="dedicated")]
    todo = [{"key": f"a{i}", "model": "api-model"} for i in range(6)] + \
           [{"key": f"l{i}", "model": "local-model"} for i in range(3)]
    lanes = _lanes(cfg, entries, todo, spawn)
    assert [lane.name for lane in lanes] == [POOL, "local-model"]
    assert [len(lane.actors) for lane in lanes] == [2, 1] and not lanes[0].dedicated and lanes[1].dedicated

    pending: dict = {}
    _fill(lanes, pending)
    pool, local = lanes
    # two API workers of two slots each take four units, alternating; the local model takes one
    assert [[u["key"] for u in a.sent] for a in pool.actors] == [["a0", "a2"], ["a1", "a3"]]
    assert [u["key"] for u in local.actors[0].sent] == ["l0"]
    assert [u["key"] for u in pool.queue] == ["a4", "a5"] and len(local.queue) == 2
    assert len(pending) == 5 and pool.free_actor() is None


def test_a_retired_actor_keeps_its_count_of_requests_in_flight():
    lane = Lane(POOL, 1, deque())
    old, new = FakeActor("old"), FakeActor("new")
    lane.add(old)
    lane.requests_in_flight[old] += 1
    lane.actors.remove(old)
    lane.add(new)
    lane.requests_in_flight[old] -= 1  # its last unit came back after it was replaced
    assert lane.free_actor() is new

