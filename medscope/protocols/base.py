"""The contract between a protocol and the shared harness (docs/design.md, "One harness, four protocols").

A protocol supplies its items (images + question + expected truth), how one episode is run
for an item under a condition (its prompt builder and reply reader, through the shared model
interface), its scoring (episodes -> per-item scores and metrics with intervals) and its
report sections. ``medscope eval``, ``score`` and ``report`` know nothing else, so a new
protocol is a new folder under ``medscope/protocols/`` and touches no shared code.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Protocol

from medscope.items import READINGS, EpisodeResult, Item  # noqa: F401 - the protocol interface names them
from medscope.models.base import ChatModel, Decoding


class EvalProtocol(Protocol):
    name: str  # e.g. "counterfactual", "organ_presence"
    prompt_version: str  # bumps whenever a template changes; part of every request key

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        """Read the protocol's item table (views, probe_items, ...) into items, in its order.

        ``ids``: only the items with these item ids (a sweep's worker fetching the few it is
        about to run). ``images=False``: the same items with ``images=()``, read without holding
        the table's pixels (a sweep's driver needs ids and privacy flags only; issue 16). The
        selection never depends on the two arguments, so the driver's items and the workers'
        agree; read through ``medscope.tablescan``, which streams a table instead of loading it."""

    def conditions(self) -> tuple[str, ...]:
        """Condition names this protocol understands (agent, plain, blind, blank, ...)."""

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        """Run one episode: build the prompt for ``condition``, talk to ``model``, read the reply."""

    def score(self, episodes_uri: str, items_uri: str, out: str, options: ScoreOptions) -> dict:
        """Score episodes against the items: write the scored-run folder ``out`` (its own
        scores tables at ``layout.ScoredRun(out).table(name)``, the shared metrics table and
        ``run.json``) and return a summary. A protocol's own tables (items, scores) are
        registered with ``records.register_table`` when its module is imported (its ``tables.py``)."""

    def report_sections(self, scored_run: str, work_dir: str, **options) -> tuple[list, dict]:
        """The report's sections (``medscope.report.render.Section``) for a scored run this
        protocol wrote, and a dict of anything else it wrote under ``work_dir`` (the report folder)."""


@dataclass(frozen=True)
class ScoreOptions:
    """What every protocol's scoring takes from ``medscope score``: bootstrap resamples and seed
    (None: the protocol's own default, its paper's), and ``extra``, the protocol's own options
    (a cost matrix, a test set, a judge...), which the protocol checks."""

    n_boot: int | None = None
    seed: int | None = None
    extra: dict = field(default_factory=dict)
