"""The evaluation sweep's actor loop (``medscope eval``; the counterfactual paper §3.10): units fed to Ray actors
in lanes (one pool of API workers, one dedicated actor per local model), each actor kept busy up
to its request slots, and workers that die replaced while the sweep goes on.

A lost worker's unit was not written, so it goes back to its lane's queue. Deaths are counted in
a row per lane: a lane that finishes a unit has shown that its replacements work, so losing nodes
now and then never stops a long sweep, while a worker that cannot run at all (its constructor
fails, its model does not fit) stops it after ``max_actor_restarts`` tries in a row.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections import deque

from medscope.io import storage
from medscope.errors import MedScopeError
from medscope.models.api_common import short_secret_warning
from medscope.models.config import ModelEntry
from medscope.models.registry import LOCAL_KINDS
from pipelines.support.accounting import failure_reason
from pipelines.support.jobs import Progress


def unit_outcome(res: dict) -> tuple[str, str | None]:
    """(outcome, failure reason) of one worker result (pipelines.support.accounting): a written
    episode is done unless it carries a permanent provider error; ``exists`` (written by an earlier
    worker) is skipped; failed and retries-exhausted units are failed, with their reason."""
    if res["status"] == "exists":
        return "skipped", None
    if res["status"] == "done" and not res.get("error"):
        return "done", None
    return "failed", failure_reason(res["status"], res.get("error"))


def drive_units(cfg, protocol, entries, todo, episodes_uri, run_id, spent, gpus):
    """Feed units to actors, keep each busy up to its capacity, replace workers that die.

    Returns (worker results, why submitting stopped early or None, workers lost, keys of the units
    that were in flight on a lost worker and went back to the queue: each may have reached the
    provider before the loss, so it may be requested, and billed, twice)."""
    import ray

    from pipelines.support.actors import ProviderLimiter, worker_class

    groups: dict[str, ModelEntry] = {}
    for e in entries:
        if e.rpm or e.tpm:
            g = groups.setdefault(e.limiter_group, e)
            if (e.rpm or float("inf")) < (g.rpm or float("inf")):
                groups[e.limiter_group] = e
    limiters = {g: ProviderLimiter.remote(e.rpm, e.tpm) for g, e in groups.items()}
    secrets = {e.api_key_env: os.environ[e.api_key_env] for e in entries if e.api_key_env and e.api_key_env in os.environ}
    for env_name, key in sorted(secrets.items()):  # too short to scrub from text: said, not edited
        if (warning := short_secret_warning(env_name, key)):
            print(warning, file=sys.stderr, flush=True)
    # Workers started before the driver's environment changed would not see a new endpoint.
    s3 = storage.s3_endpoint()
    dumped = [e.model_dump() for e in entries]
    tag = f"medscope-eval-{run_id}-{uuid.uuid4().hex[:6]}"
    serial = iter(range(10**9))

    def spawn(dedicated: bool):
        cls = worker_class(dedicated, gpus, cfg.concurrency)
        extra = {} if dedicated or not cfg.pool_resources else {"resources": dict(cfg.pool_resources)}
        return cls.options(name=f"{tag}-{next(serial)}", **extra).remote(
            protocol, dumped, episodes_uri, run_id, limiters, secrets, s3, cfg.backoff_s, cfg.items)

    dedicated = {e.name for e in entries if e.placement == "dedicated" or (e.placement == "auto" and e.kind in LOCAL_KINDS)}
    lanes: dict[str, dict] = {"pool": {"actors": [spawn(False) for _ in range(max(1, cfg.workers))], "cap": cfg.concurrency}}
    for name in sorted(dedicated):
        lanes[name] = {"actors": [spawn(True)], "cap": 1}
    load: dict = {a: 0 for lane in lanes.values() for a in lane["actors"]}
    inflight: dict = {}
    results: list[dict] = []
    # Deaths in a row per lane (the module docstring says why). A replacement placed on a node
    # that Ray has not yet declared dead dies without running; that is counted too, and the
    # lane's progress on live nodes resets it.
    deaths_in_a_row = {lane: 0 for lane in lanes}
    deaths_total = 0
    sent_again: list[str] = []
    stopped = None
    progress = Progress("episodes", total=len(todo))
    _ACTOR_LOST = actor_lost_errors()
    queues = {lane: deque(u for u in todo if (u["model"] if u["model"] in dedicated else "pool") == lane) for lane in lanes}
    try:
        while inflight or (not stopped and any(queues.values())):
            if not stopped:
                for lane, q in queues.items():
                    actors, cap = lanes[lane]["actors"], lanes[lane]["cap"]
                    while q:
                        actor = min(actors, key=lambda a: load[a])
                        if load[actor] >= cap:
                            break
                        unit = q.popleft()
                        inflight[actor.run.remote(unit)] = (unit, actor, lane)
                        load[actor] += 1
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=5.0)
            for ref in ready:
                unit, actor, lane = inflight.pop(ref)
                load[actor] -= 1
                try:
                    res = ray.get(ref)
                except _ACTOR_LOST as err:
                    # The worker died (killed, OOM, node lost) or cannot be reached. Its unit was
                    # not written, so it goes back to the queue; the worker is replaced.
                    queues[lane].appendleft(unit)
                    sent_again.append(unit["key"])
                    if actor in lanes[lane]["actors"]:
                        lanes[lane]["actors"].remove(actor)
                        ray.kill(actor)  # one that is only unreachable must not answer twice
                        deaths_in_a_row[lane] += 1
                        deaths_total += 1
                        print(f"  a {lane} worker was lost ({death_reason(err)}); its units go back to the queue "
                              f"({deaths_in_a_row[lane]} in a row, at most {cfg.max_actor_restarts} replaced)",
                              file=sys.stderr, flush=True)
                        if deaths_in_a_row[lane] > cfg.max_actor_restarts:
                            raise MedScopeError(
                                f"evaluation workers of the {lane} lane died {deaths_in_a_row[lane]} times in a row "
                                f"without finishing a unit ({death_reason(err)}); rerun to resume")
                        fresh = spawn(lane != "pool")
                        lanes[lane]["actors"].append(fresh)
                        load[fresh] = 0
                    continue
                deaths_in_a_row[lane] = 0
                results.append(res)
                spent += res.get("cost_usd") or 0.0
                progress.update(outcome=unit_outcome(res)[0])
                if cfg.budget_usd is not None and spent >= cfg.budget_usd and not stopped:
                    stopped = "budget"
                    print(f"  budget of ${cfg.budget_usd:g} reached (${spent:.4f}); finishing work in flight",
                          file=sys.stderr, flush=True)
    finally:
        for lane in lanes.values():
            for actor in lane["actors"]:
                ray.kill(actor)
        for handle in limiters.values():
            ray.kill(handle)
    return results, stopped, deaths_total, sent_again


def death_reason(err: BaseException) -> str:
    """One line on why a worker is gone, from Ray's multi-line error."""
    text = str(err)
    for needle, said in (("never ran", "placed on a node that was going away; it never ran"),
                         ("node has died", "its node was lost"), ("temporarily unavailable", "unreachable"),
                         ("out of memory", "out of memory")):
        if needle in text:
            return said
    return type(err).__name__


def actor_lost_errors() -> tuple:
    """The exceptions by which Ray says an actor died or cannot be reached (names differ by Ray version)."""
    import ray

    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError")
    return tuple(getattr(ray.exceptions, n) for n in names if hasattr(ray.exceptions, n))
