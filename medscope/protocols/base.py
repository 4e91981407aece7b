"""The contract between a protocol and the shared harness (DESIGN.md, "One harness, four protocols").

A protocol supplies its items (images + question + expected truth), how one episode is run
for an item under a condition (its prompt builder and reply reader, through the shared model
interface), its scoring (episodes -> per-item scores and metrics with intervals) and its
report sections. ``medscope eval``, ``score`` and ``report`` know nothing else, so a new
protocol is a new folder under ``medscope/protocols/`` and touches no shared code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from medscope.models.base import ChatModel, Decoding


@dataclass(frozen=True)
class Item:
    """One unit of evaluation: a 2D view, a probe slice x organ, a question of a montage..."""

    item_id: str  # view_id / probe item_id: the key column of the episodes table (view_id)
    case_id: str  # the bootstrap cluster: one source image or volume
    question: str
    truth: str  # the protocol's expected outcome (present | absent | clarify | a letter ...)
    images: tuple[bytes, ...] = ()  # PNG bytes, in the order the prompt shows them
    private: bool = False
    endpoint_allowlist: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)  # protocol-specific (finding, kind, box, ...)


READINGS = ("format", "json", "rules", "judge")


@dataclass
class EpisodeResult:
    """What one episode produced; the sweep adds run/model/condition/key columns and timing."""

    turns: list[dict]  # {"role", "text", "image_ref"}
    raw_text: str  # the final reply's raw text
    action: str  # answer | refer | clarify | unparseable
    answer: str | None = None
    claims_finding: bool | None = None
    box: list[int] | None = None
    confidence: float | None = None
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    parse_error: str | None = None  # why the reply was unparseable, or a tool-call problem
    model_turns: int = 0  # how many replies the model wrote in this episode
    reading: str | None = None  # how the decision was read: format | json | rules | judge (READINGS)


class EvalProtocol(Protocol):
    name: str  # e.g. "counterfactual", "organ_presence"
    prompt_version: str  # bumps whenever a template changes; part of every request key

    def load_items(self, uri: str) -> list[Item]:
        """Read the protocol's item table (views, probe_items, ...) into items."""

    def conditions(self) -> tuple[str, ...]:
        """Condition names this protocol understands (agent, plain, blind, blank, ...)."""

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        """Run one episode: build the prompt for ``condition``, talk to ``model``, read the reply."""

    def score(self, episodes_uri: str, items_uri: str, out: str, options: ScoreOptions) -> dict:
        """Score episodes against the items: write the scored-run folder ``out`` (its scores
        and metrics tables and ``run.json``, laid out by ``medscope.layout.ScoredRun``) and
        return a summary."""

    def report_sections(self, scored_run: str, work_dir: str) -> list[tuple[str, list]]:
        """(title, blocks) sections of the report for a scored run this protocol wrote."""


@dataclass(frozen=True)
class ScoreOptions:
    """What every protocol's scoring takes from ``medscope score``; ``extra`` carries the
    protocol's own options (a cost matrix, a test set, a judge...), checked by the protocol."""

    n_boot: int = 2000
    seed: int = 42
    extra: dict = field(default_factory=dict)


def items_table_kind(table: pa.Table) -> str:
    """Which item table a Parquet table is, by its key column (views or probe_items)."""
    if "view_id" in table.column_names:
        return "views"
    if "item_id" in table.column_names:
        return "probe_items"
    raise ValueError("not an item table: needs view_id or item_id")
