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
import re
import sys
import uuid
from collections import deque
from dataclasses import dataclass, field

from medscope.io import safe_text, storage
from medscope.errors import MedScopeError
from medscope.models.api_common import short_secret_warning
from medscope.models.config import ModelEntry
from medscope.models.registry import LOCAL_KINDS
from pipelines.support.accounting import failure_reason
from pipelines.support.jobs import Progress


def unit_outcome(res: dict) -> tuple[str, str | None]:
    """(outcome, failure reason) of one worker result (pipelines.support.accounting): a written
    episode is done unless it carries a permanent provider error; ``exists`` (written by an earlier
    worker) is skipped; failed and retries-exhausted units are failed, with their reason.

    Parameters
    ----------
    res : dict
        The summary ``EpisodeWorker.run`` returned: its ``status`` and ``error``.

    Returns
    -------
    outcome : str
        ``"done"``, ``"skipped"`` or ``"failed"``.
    reason : str or None
        The failure reason (``accounting.failure_reason``) for a failed unit, else None.
    """
    if res["status"] == "exists":
        return "skipped", None
    if res["status"] == "done" and not res.get("error"):
        return "done", None
    return "failed", failure_reason(res["status"], res.get("error"))


POOL = "pool"  # the lane of API workers; every other lane is one local model's

# addition: no paper sets it. Five units in a row that could not connect to one endpoint (each after
# its own max_attempts) mean the endpoint is down, not slow: the rest of its units are not sent.
MAX_CONNECTION_FAILURES = 5
# what a unit's error says when no connection was made (the SDKs' and httpx's names, the OS's words,
# the request deadline's DNS messages): a server that answered (HTTP 4xx / 5xx, a slow or cut body)
# is reachable and never counts
_NO_CONNECTION = re.compile(
    r"APIConnectionError|ConnectError|ConnectTimeout|Connection refused|Connection error|"
    r"Name or service not known|nodename nor servname|No route to host|Network is unreachable|"
    r"DNS lookup of \S+ (?:failed|did not answer)", re.IGNORECASE)


def connection_failure(res: dict) -> bool:
    """Whether a worker result is a unit that failed without ever reaching its endpoint.

    Parameters
    ----------
    res : dict
        The summary ``EpisodeWorker.run`` returned: its ``status`` and ``error``.

    Returns
    -------
    bool
        True for a failed or retry-later unit whose error names a connection that was never made
        (refused, unreachable, unknown host, DNS without an answer); False for anything the server
        answered, including HTTP errors and replies cut short.
    """
    if res.get("status") not in ("failed", "retry_later"):
        return False
    error = res.get("error") or ""
    return not re.search(r"\bHTTP [1-5]\d\d\b", error) and bool(_NO_CONNECTION.search(error))


@dataclass
class EndpointBreaker:
    """Consecutive units that could not connect, per endpoint; at ``limit`` the endpoint is stopped.

    Any result of a unit that reached the endpoint (an answer, an HTTP error) resets its count, so
    an endpoint that drops a connection now and then is never stopped. ``limit`` 0 never stops one.
    """

    limit: int
    in_a_row: dict = field(default_factory=dict)
    stopped: dict = field(default_factory=dict)  # endpoint -> the reason, as the console said it

    def record(self, endpoint: str, res: dict) -> bool:
        """Count one result of ``endpoint``; True when this result stops it."""
        if endpoint in self.stopped or endpoint == "local":
            return False
        if not connection_failure(res):
            self.in_a_row[endpoint] = 0
            return False
        self.in_a_row[endpoint] = self.in_a_row.get(endpoint, 0) + 1
        if self.limit and self.in_a_row[endpoint] >= self.limit:
            last = (res.get("error") or "").splitlines()[0][:160]
            self.stopped[endpoint] = (f"{self.in_a_row[endpoint]} units in a row could not connect "
                                      f"(last: {last})")
            return True
        return False


def not_sent(unit: dict, endpoint: str, why: str) -> dict:
    """The result of a unit left unsent because its endpoint was stopped: a failed unit whose
    reason (``failed: not sent``) groups in the accounting, the endpoint in its error.

    Parameters
    ----------
    unit : dict
        The queued unit (``key``, ``model``, ``condition``, ``item_id``).
    endpoint : str
        The stopped endpoint (redacted in the error).
    why : str
        Why it was stopped, as :class:`EndpointBreaker` recorded it.

    Returns
    -------
    dict
        A worker result: status ``failed``, no cost, no attempts, the error ``not sent: ...``.
    """
    return {"key": unit["key"], "model": unit["model"], "condition": unit["condition"], "item_id": unit["item_id"],
            "status": "failed", "cost_usd": 0.0, "attempts": 0,
            "error": f"not sent: endpoint {safe_text.redact_url(endpoint)} stopped, {why}"}


@dataclass
class Lane:
    """One lane of the sweep: its actors, the units waiting for them, and the requests each actor has
    in flight (at most ``slots``)."""

    name: str
    slots: int
    queue: deque
    actors: list = field(default_factory=list)
    # kept for an actor after it is retired: its other units in flight still come back through it
    requests_in_flight: dict = field(default_factory=dict)
    deaths_in_a_row: int = 0

    @property
    def dedicated(self) -> bool:
        return self.name != POOL

    def add(self, actor) -> None:
        self.actors.append(actor)
        self.requests_in_flight[actor] = 0

    def free_actor(self):
        """The least busy actor if it has a request slot free, else None."""
        actor = min(self.actors, key=lambda a: self.requests_in_flight[a])
        return actor if self.requests_in_flight[actor] < self.slots else None


@dataclass
class DriveOutcome:
    """What driving the units came to.

    ``sent_again`` holds the keys of units that were in flight on a lost worker and went back to the
    queue: each may have reached the provider before the loss, so it may be requested, and billed,
    twice."""

    results: list[dict]
    stopped: str | None  # why submitting stopped early
    workers_lost: int
    sent_again: list[str]
    endpoints_stopped: dict = field(default_factory=dict)  # endpoint -> why its units were not sent


def drive_units(cfg, protocol, entries, todo, episodes_uri, run_id, spent, gpus) -> DriveOutcome:
    """Feed units to actors, keep each busy up to its capacity, replace workers that die.

    Parameters
    ----------
    cfg : EvalConfig
        The sweep's config: ``concurrency``, ``workers``, ``pool_resources``, ``backoff_s``,
        ``items``, ``budget_usd``, ``max_actor_restarts`` and ``max_connection_failures`` are read.
    protocol : EvalProtocol
        The protocol each worker runs its episodes through.
    entries : list of ModelEntry
        The models of the sweep (local ones get a lane of their own).
    todo : list of dict
        The units to run, in order (each with ``model``, ``condition``, ``item_id``, ``key``).
    episodes_uri : str
        Where workers write the finished episodes (one part per request key).
    run_id : str
        The sweep's run id, in the actors' names and the episode rows.
    spent : float
        USD already spent (by earlier runs), counted against ``cfg.budget_usd``.
    gpus : bool
        Whether the cluster has GPUs (a dedicated actor then takes one).

    Returns
    -------
    DriveOutcome
        The workers' results (with a failed ``not sent`` result for each unit of an endpoint that
        was stopped: :class:`EndpointBreaker`), why submitting stopped early (``"budget"`` or
        None), the workers lost, the keys of units sent again after a loss and the endpoints stopped.

    Raises
    ------
    MedScopeError
        When a lane's workers die more than ``cfg.max_actor_restarts`` times in a row.

    References
    ----------
    .. [1] counterfactual paper, §3.10.
    """
    import ray

    from pipelines.support.actors import worker_class

    limiters = _rate_limiters(entries)
    secrets = _secrets(entries)
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

    lanes = _lanes(cfg, entries, todo, spawn)
    pending: dict = {}
    outcome = DriveOutcome(results=[], stopped=None, workers_lost=0, sent_again=[])
    progress = Progress("episodes", total=len(todo))
    endpoints = {e.name: e.endpoint for e in entries}
    breaker = EndpointBreaker(getattr(cfg, "max_connection_failures", MAX_CONNECTION_FAILURES))
    actor_lost = actor_lost_errors()
    try:
        while pending or (not outcome.stopped and any(lane.queue for lane in lanes)):
            if not outcome.stopped:
                _fill(lanes, pending)
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=5.0)
            for ref in ready:
                unit, actor, lane = pending.pop(ref)
                lane.requests_in_flight[actor] -= 1
                try:
                    res = ray.get(ref)
                except actor_lost as err:
                    _replace_lost_worker(lane, unit, actor, err, outcome, cfg.max_actor_restarts, spawn)
                    continue
                lane.deaths_in_a_row = 0
                outcome.results.append(res)
                endpoint = endpoints[unit["model"]]
                if breaker.record(endpoint, res):
                    _stop_endpoint(endpoint, breaker.stopped[endpoint], lanes, endpoints, outcome, progress)
                spent += res.get("cost_usd") or 0.0
                progress.update(outcome=unit_outcome(res)[0])
                if cfg.budget_usd is not None and spent >= cfg.budget_usd and not outcome.stopped:
                    outcome.stopped = "budget"
                    print(f"  budget of ${cfg.budget_usd:g} reached (${spent:.4f}); finishing work in flight",
                          file=sys.stderr, flush=True)
    finally:
        for lane in lanes:
            for actor in lane.actors:
                ray.kill(actor)
        for handle in limiters.values():
            ray.kill(handle)
    outcome.endpoints_stopped = dict(breaker.stopped)
    return outcome


def _stop_endpoint(endpoint: str, why: str, lanes: list[Lane], endpoints: dict, outcome: DriveOutcome,
                   progress: Progress) -> None:
    """Take every queued unit of ``endpoint`` off its lane as a failed ``not sent`` unit (those in
    flight come back as they are) and say so on the console, naming the endpoint and why."""
    left = 0
    for lane in lanes:
        keep = deque()
        for unit in lane.queue:
            if endpoints[unit["model"]] == endpoint:
                outcome.results.append(not_sent(unit, endpoint, why))
                progress.update(outcome="failed")
                left += 1
            else:
                keep.append(unit)
        lane.queue = keep
    print(f"  endpoint {safe_text.redact_url(endpoint)} stopped: {why}; its {left} queued unit(s) are not sent "
          f"(failed units; fix the endpoint and rerun to send them)", file=sys.stderr, flush=True)


def _rate_limiters(entries) -> dict:
    """One limiter actor per limiter group, at the group's strictest requests-per-minute entry."""
    from pipelines.support.actors import ProviderLimiter

    groups: dict[str, ModelEntry] = {}
    for e in entries:
        if e.rpm or e.tpm:
            g = groups.setdefault(e.limiter_group, e)
            if (e.rpm or float("inf")) < (g.rpm or float("inf")):
                groups[e.limiter_group] = e
    return {g: ProviderLimiter.remote(e.rpm, e.tpm) for g, e in groups.items()}


def _secrets(entries) -> dict:
    secrets = {e.api_key_env: os.environ[e.api_key_env] for e in entries if e.api_key_env and e.api_key_env in os.environ}
    for env_name, key in sorted(secrets.items()):  # too short to scrub from text: said, not edited
        if (warning := short_secret_warning(env_name, key)):
            print(warning, file=sys.stderr, flush=True)
    return secrets


def _lanes(cfg, entries, todo, spawn) -> list[Lane]:
    """The pool lane (API workers, ``cfg.concurrency`` requests each), then one lane per local model
    in name order (one actor, one request at a time), each holding its units in ``todo``'s order."""
    dedicated = {e.name for e in entries if e.placement == "dedicated" or (e.placement == "auto" and e.kind in LOCAL_KINDS)}
    lanes = [Lane(POOL, cfg.concurrency, deque())] + [Lane(name, 1, deque()) for name in sorted(dedicated)]
    by_name = {lane.name: lane for lane in lanes}
    for lane in lanes:
        for _ in range(max(1, cfg.workers) if lane.name == POOL else 1):
            lane.add(spawn(lane.dedicated))
    for unit in todo:
        by_name[unit["model"] if unit["model"] in dedicated else POOL].queue.append(unit)
    return lanes


def _fill(lanes: list[Lane], pending: dict) -> None:
    """Submit queued units until every actor's request slots are taken or the queues are empty."""
    for lane in lanes:
        while lane.queue:
            actor = lane.free_actor()
            if actor is None:
                break
            unit = lane.queue.popleft()
            pending[actor.run.remote(unit)] = (unit, actor, lane)
            lane.requests_in_flight[actor] += 1


def _replace_lost_worker(lane: Lane, unit: dict, actor, err: BaseException, outcome: DriveOutcome,
                         max_restarts: int, spawn) -> None:
    """The worker died (killed, OOM, node lost) or cannot be reached: its unit was not written, so it
    goes back to the queue, and the worker is replaced unless the lane keeps losing them."""
    import ray

    lane.queue.appendleft(unit)
    outcome.sent_again.append(unit["key"])
    if actor not in lane.actors:  # already replaced when an earlier unit of it came back
        return
    lane.actors.remove(actor)
    ray.kill(actor)  # one that is only unreachable must not answer twice
    # A replacement placed on a node that Ray has not yet declared dead dies without running; that
    # is counted too, and the lane's progress on live nodes resets it (the module docstring says why).
    lane.deaths_in_a_row += 1
    outcome.workers_lost += 1
    print(f"  a {lane.name} worker was lost ({death_reason(err)}); its units go back to the queue "
          f"({lane.deaths_in_a_row} in a row, at most {max_restarts} replaced)", file=sys.stderr, flush=True)
    if lane.deaths_in_a_row > max_restarts:
        raise MedScopeError(
            f"evaluation workers of the {lane.name} lane died {lane.deaths_in_a_row} times in a row "
            f"without finishing a unit ({death_reason(err)}); rerun to resume")
    lane.add(spawn(lane.dedicated))


def death_reason(err: BaseException) -> str:
    """One line on why a worker is gone, from Ray's multi-line error.

    Parameters
    ----------
    err : BaseException
        The error Ray raised for the lost worker.

    Returns
    -------
    str
        A short known cause (node lost, unreachable, out of memory, never ran), else the
        error's type name.
    """
    text = str(err)
    for needle, said in (("never ran", "placed on a node that was going away; it never ran"),
                         ("node has died", "its node was lost"), ("temporarily unavailable", "unreachable"),
                         ("out of memory", "out of memory")):
        if needle in text:
            return said
    return type(err).__name__


def actor_lost_errors() -> tuple:
    """The exceptions by which Ray says an actor died or cannot be reached (names differ by Ray version).

    Returns
    -------
    tuple of type
        Those of ``RayActorError``, ``ActorDiedError`` and ``ActorUnavailableError`` that
        ``ray.exceptions`` has, for an ``except`` clause.
    """
    import ray

    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError")
    return tuple(getattr(ray.exceptions, n) for n in names if hasattr(ray.exceptions, n))
