"""Generation calls as a protocol of the shared sweep (benchmark-MCQ paper: "limited language-model calls").

Each report is an item; condition ``questions`` asks the generator for report-derived
questions, ``extract`` asks an LLM extractor to fill the schema's fields as JSON. Running them
through ``medscope eval``'s sweep gives generation the same rate-limited Ray actors, request-key
cache (a finished call is never repeated, so a rerun resumes), budget and privacy allow-list as
every evaluation. The item id carries a hash of the report text and the prompt version carries
a hash of the prompt, so an edited report or prompt is a new request, never a stale cache hit.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from medscope import config as cfgmod
from medscope.io import storage
from medscope.benchgen.calls import jsonl_rows, text_call
from medscope.benchgen.extract import extraction_prompt
from medscope.benchgen.questions import REPORT_PROMPT, report_prompt
from medscope.benchgen.schema import Schema, resolve
from medscope.models.base import ChatModel, Decoding
from medscope.protocols.base import EpisodeResult, Item
from medscope.seeding import stable_hash

CONDITIONS = ("questions", "extract")


def study_item_id(case_id: str, findings: str, impression: str) -> str:
    """The generation sweep's item id of one study: its case id and a hash of its report text.

    Parameters
    ----------
    case_id : str
        The study's case id.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    str
        ``<case_id>#<10-character hash of findings and impression>``; an edited report gives a new id.
    """
    return f"{case_id}#{stable_hash(findings, impression, length=10)}"


def write_studies(studies: list[dict], uri: str, private: bool, allowlist: list[str]) -> None:
    """The generation sweep's item file: one JSON line per study (report text + privacy).

    Parameters
    ----------
    studies : list of dict
        The studies; each needs ``case_id``, ``findings`` and ``impression``.
    uri : str
        Path or storage URI of the item file written.
    private : bool
        Whether the cohort's reports are private (recorded on every line).
    allowlist : list of str
        The endpoints allowed to receive the reports (recorded on every line).
    """
    lines = [json.dumps({"case_id": s["case_id"], "findings": s["findings"], "impression": s["impression"],
                         "private": private, "endpoint_allowlist": list(allowlist)}) for s in studies]
    storage.write_text(uri, "\n".join(lines) + "\n")


class GenerationProtocol:
    """EvalProtocol whose episodes are generation calls (questions / extraction) on reports."""

    name = "benchgen_generate"

    def __init__(self, schema: str, report_prompt: str = REPORT_PROMPT):
        self.schema: Schema = cfgmod.load(Schema, resolve(schema))
        self.report_prompt = report_prompt
        self.prompt_version = "gen-" + stable_hash(report_prompt, self.schema.model_dump_json(), length=12)

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        """The studies of the JSON-lines file (``ids``: only those; no images either way)."""
        items = []
        for r in jsonl_rows(uri):
            item_id = study_item_id(r["case_id"], r["findings"], r["impression"])
            if ids is not None and item_id not in ids:
                continue
            items.append(Item(
                item_id=item_id, case_id=r["case_id"],
                question="", truth="", private=bool(r["private"]),
                endpoint_allowlist=tuple(r["endpoint_allowlist"]),
                meta={"findings": r["findings"], "impression": r["impression"]}))
        return items

    def conditions(self) -> tuple[str, ...]:
        return CONDITIONS

    def prompt(self, item: Item, condition: str) -> str:
        f, i = item.meta["findings"], item.meta["impression"]
        if condition == "questions":
            return report_prompt(f, i, self.report_prompt)
        if condition == "extract":
            return extraction_prompt(self.schema, f, i)
        raise ValueError(f"unknown generation condition {condition!r}")

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        return text_call(model, self.prompt(item, condition), decoding)

    def score(self, *args, **kwargs):
        raise NotImplementedError("generation episodes are read by `medscope benchgen build`, not scored")

    def report_sections(self, *args, **kwargs):
        return []
