"""Ray actors of the evaluation sweep: one rate limiter per provider, and episode workers.

A worker holds its models once (built on first use), runs one episode per call through the
protocol, and writes the finished episode to object storage itself, as a write-once part
keyed by the request key, before it reports back: whatever happens to the driver later, a
finished episode is never requested again. API workers are threaded actors (requests are
I/O), local-model workers hold the weights once, on a GPU when the cluster has one.

A unit names its item by id (the driver holds no pixels): the worker fetches the unit's block
of items from the items table by id (``protocol.load_items(uri, ids=...)``) and keeps the last
few blocks, so the items of one block cost one read per worker, not one per unit.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import ray

from medscope.io import records, storage
from medscope.protocols.base import EpisodeResult, EvalProtocol, Item
from medscope.models.api_common import scrub
from medscope.models.base import PermanentModelError, TransientModelError
from medscope.models.config import ModelEntry
from medscope.models.guarded import GuardedModel
from medscope.models.ratelimit import RateBucket
from medscope.models.registry import build_model

ITEM_CACHE_BLOCKS = 4  # blocks of items a worker keeps (units in flight span one or two)


# Restarted (with a fresh bucket) and its calls retried if its node is lost: otherwise every
# worker's next reserve() would raise and the sweep would record its units as failed.
@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)
class ProviderLimiter:
    """One provider's requests-per-minute and tokens-per-minute, shared by every worker."""

    def __init__(self, rpm: float | None, tpm: float | None):
        self.bucket = RateBucket(rpm, tpm)

    def reserve(self, tokens: int) -> float:
        return self.bucket.reserve(tokens)

    def settle(self, estimated: int, actual: int) -> None:
        self.bucket.settle(estimated, actual)

    def penalize(self, seconds: float) -> None:
        self.bucket.penalize(seconds)


class LimiterClient:
    """The Limiter interface of GuardedModel over a ProviderLimiter actor handle."""

    def __init__(self, handle):
        self.handle = handle

    def reserve(self, tokens: int) -> float:
        return ray.get(self.handle.reserve.remote(tokens))

    def settle(self, estimated: int, actual: int) -> None:
        self.handle.settle.remote(estimated, actual)  # fire and forget: nobody waits on it

    def penalize(self, seconds: float) -> None:
        ray.get(self.handle.penalize.remote(seconds))


class EpisodeWorker:
    """Runs episodes of one sweep; decorated with ray.remote by ``worker_class``."""

    def __init__(
        self,
        protocol: EvalProtocol,
        entries: list[dict],
        episodes_uri: str,
        run_id: str,
        limiters: dict,
        secrets: dict[str, str],
        s3_endpoint: str | None,
        backoff_s: float = 0.5,
        items_uri: str | None = None,
    ):
        # Keys travel as actor arguments, never as runtime_env (which Ray may log), and stay
        # in this process's environment, where the adapters read them.
        os.environ.update(secrets)
        self._secrets = list(secrets.values())
        if s3_endpoint:
            storage.configure(s3_endpoint=s3_endpoint)
        self.protocol = protocol
        self.entries = {e["name"]: ModelEntry.model_validate(e) for e in entries}
        self.episodes_uri = episodes_uri
        self.run_id = run_id
        self.limiters = {g: LimiterClient(h) for g, h in limiters.items()}
        self.backoff_s = backoff_s
        self._models: dict = {}
        self._lock = threading.Lock()  # threads of one actor share its models
        self.items_uri = items_uri
        self._items: OrderedDict[str, Item] = OrderedDict()  # item id -> item, oldest first
        self._cache_lock = threading.Lock()
        self._fetch_lock = threading.Lock()  # one fetch at a time: threads wanting it wait, then hit

    def _model(self, name: str):
        with self._lock:
            if name not in self._models:
                self._models[name] = build_model(self.entries[name])
            return self._models[name]

    def _cached(self, item_id: str) -> Item | None:
        with self._cache_lock:
            item = self._items.get(item_id)
            if item is not None:
                self._items.move_to_end(item_id)
            return item

    def item(self, unit: dict) -> Item | None:
        """The unit's item: shipped whole (a protocol without ``load_items(ids=...)``), or from
        this worker's cache, or fetched by id with the unit's block; None if the items table
        no longer holds it."""
        if "item" in unit:
            return unit["item"]
        item_id = unit["item_id"]
        item = self._cached(item_id)
        if item is not None:
            return item
        with self._fetch_lock:
            item = self._cached(item_id)  # fetched by another thread while this one waited
            if item is not None:
                return item
            block = unit.get("block") or (item_id,)
            fetched = self.protocol.load_items(self.items_uri, ids=block)
            with self._cache_lock:
                for it in fetched:
                    self._items[it.item_id] = it
                    self._items.move_to_end(it.item_id)
                while len(self._items) > ITEM_CACHE_BLOCKS * len(block):
                    self._items.popitem(last=False)
        return self._cached(item_id)

    def run(self, unit: dict) -> dict:
        """Run one episode and write it; returns a small summary for the driver."""
        entry = self.entries[unit["model"]]
        decoding = entry.decoding()
        out = {"key": unit["key"], "model": entry.name, "condition": unit["condition"], "item_id": unit["item_id"]}
        try:
            item = self.item(unit)
        except Exception as err:  # an unreadable items table: the unit fails, a rerun retries it
            return {**out, "status": "failed", "error": self._clean(f"items: {type(err).__name__}: {err}")}
        if item is None:
            return {**out, "status": "failed", "error": "item no longer in the items table"}
        if not entry.may_receive(item.private, item.endpoint_allowlist):
            # The driver never sends such a unit; this guard keeps a private item local even if
            # a caller bypasses it.
            return {**out, "status": "failed", "error": "private item: endpoint not on its allow-list"}
        if storage.exists(records.part_uri(self.episodes_uri, unit["key"])):
            # Finished by a worker that died before reporting, or by a concurrent run: never
            # request (or bill) a finished key twice.
            return {**out, "status": "exists", "cost_usd": 0.0, "attempts": 0, "error": None}
        try:
            guarded = GuardedModel(
                self._model(entry.name), self.limiters.get(entry.limiter_group), entry.max_attempts, self.backoff_s
            )
        except Exception as err:  # a model that cannot be built: the sweep reports it, goes on
            return {**out, "status": "failed", "error": self._clean(f"{type(err).__name__}: {err}")}
        error = None
        try:
            result = self.protocol.run_episode(item, guarded, unit["condition"], decoding)
        except PermanentModelError as err:
            # Not worth retrying (other 4xx): recorded as an episode with its error, so the
            # rerun does not bill it again.
            result = EpisodeResult(turns=[], raw_text="", action="unparseable")
            error = self._clean(f"permanent: {err}")
        except TransientModelError as err:
            # Retries exhausted: nothing is written, a rerun tries again.
            return {**out, "status": "retry_later", "attempts": guarded.attempts, "error": self._clean(str(err))}
        except Exception as err:
            return {**out, "status": "failed", "attempts": guarded.attempts, "error": self._clean(f"{type(err).__name__}: {err}")}
        row = episode_row(unit, item, entry, result, guarded, guarded.request_s, error, self.run_id, self.protocol)
        row = {k: self._clean(v) if isinstance(v, str) else v for k, v in row.items()}
        wrote = records.write_part("episodes", [row], self.episodes_uri, unit["key"])
        return {**out, "status": "done" if wrote else "exists", "cost_usd": row["cost_usd"],
                "attempts": guarded.attempts, "error": error}

    def _clean(self, text: str) -> str:
        for secret in self._secrets:
            text = scrub(text, secret)
        return text


def episode_row(unit, item: Item, entry: ModelEntry, result: EpisodeResult, guarded: GuardedModel,
                latency_s: float, error: str | None, run_id: str, protocol: EvalProtocol) -> dict:
    """One episodes-table row; tokens are the provider's counts when the model reported any.

    Parameters
    ----------
    unit : dict
        The unit the driver sent: its ``condition`` and request ``key`` are recorded.
    item : Item
        The item the episode ran on (its ``item_id`` and ``case_id``).
    entry : ModelEntry
        The model's entry: its name, decoding and cost per token.
    result : EpisodeResult
        What the protocol's ``run_episode`` returned.
    guarded : GuardedModel
        The guarded model the episode ran through: its token counts and attempts.
    latency_s : float
        Seconds from each request sent to its reply, summed over the episode's requests and
        attempts (the guarded model's ``request_s``); the wait for the rate limiter is recorded
        apart, as ``queued_s``, from the guarded model.
    error : str or None
        A permanent provider error recorded with the episode, or None.
    run_id : str
        The sweep's run id.
    protocol : EvalProtocol
        The protocol (its ``name`` and ``prompt_version``).

    Returns
    -------
    dict
        One row of the episodes table, with its cost in USD from the larger of the guarded and
        reported token counts, and the guarded model's time queued for the rate limiter.
    """
    tokens_in = max(guarded.input_tokens, result.input_tokens or 0)
    tokens_out = max(guarded.output_tokens, result.output_tokens or 0)
    return {
        "run_id": run_id,
        "protocol": protocol.name,
        "model": entry.name,
        "condition": unit["condition"],
        "item_id": item.item_id,
        "case_id": item.case_id,
        "request_key": unit["key"],
        "prompt_version": protocol.prompt_version,
        "decoding": entry.decoding().key(),
        "turns": [{"role": t.get("role"), "text": t.get("text"), "image_ref": t.get("image_ref")} for t in result.turns],
        "raw_text": result.raw_text,
        "action": result.action,
        "answer": result.answer,
        "claims_finding": result.claims_finding,
        "box": result.box,
        "confidence": result.confidence,
        "tool_calls": int(result.tool_calls or 0),
        "input_tokens": int(tokens_in),
        "output_tokens": int(tokens_out),
        "cost_usd": entry.cost_usd(tokens_in, tokens_out),
        "latency_s": float(latency_s),
        "attempts": int(guarded.attempts),
        "error": error,
        "queued_s": float(guarded.queued_s),
        "reading": getattr(result, "reading", None),
        "reading_rule": getattr(result, "reading_rule", None),
        "reading_note": getattr(result, "reading_note", None),
    }


def worker_class(dedicated: bool, gpus: bool, concurrency: int):
    """EpisodeWorker as a Ray actor: threaded for API calls, or one actor holding a local
    model's weights once (on one GPU when the cluster has GPUs).

    Parameters
    ----------
    dedicated : bool
        True for a local model's actor (one CPU, one request at a time), False for a pool
        actor of API workers (no CPU reserved, spread over nodes).
    gpus : bool
        Whether a dedicated actor takes one GPU (ignored for pool actors).
    concurrency : int
        Requests in flight at once on a pool actor (its ``max_concurrency``).

    Returns
    -------
    ray.actor.ActorClass
        ``EpisodeWorker`` decorated with ``ray.remote`` and those resources.
    """
    if dedicated:
        return ray.remote(num_gpus=1 if gpus else 0, num_cpus=1, max_concurrency=1)(EpisodeWorker)
    # SPREAD: the pool's actors go to different nodes, so a lost node takes only its share of
    # the units in flight (the driver re-queues those and replaces the actor); zero-CPU actors
    # would otherwise all land on the driver's node.
    return ray.remote(num_cpus=0, max_concurrency=concurrency, scheduling_strategy="SPREAD")(EpisodeWorker)
