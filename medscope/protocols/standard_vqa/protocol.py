"""Standard medical VQA as an evaluation protocol (counterfactual paper §5.6, Table 16).

Items are ``vqa_items`` rows (``medscope cohort import --format vqa-rad | slake-vqa | pathvqa``):
by default the released test split, with a seeded sample per source (the paper: all 451 VQA-RAD
test questions, 300 sampled of SLAKE's English test and 300 of PathVQA's). One episode is one
turn: the image, the question and "answer with a word or short phrase"; the reply is read as the
final action's answer when the model answers in the agent format (constant policies, MedScope
adapters), else as its free text. Scoring: ``scoring``.

Not the paper's full setting: the paper runs "the same agent loop for every model"; this
protocol's one condition, ``plain``, is a single turn without tools.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from medscope.io import layout, records, storage, tablescan
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.protocols import denominators as den
from medscope.protocols.base import EpisodeResult, Item
from medscope.protocols.standard_vqa.options import StandardVQAOptions
from medscope.protocols.standard_vqa import report
from medscope.protocols.standard_vqa.scoring import read_answer, score_episodes, vqa_metrics
from medscope.seeding import stable_hash

INSTRUCTION = "Answer the question about the image with a single word or a short phrase."
DEFAULT_SAMPLE = {"slake": 300, "pathvqa": 300}  # Table 16; sources not named are taken whole


OUTSIDE_TEST_SET = "outside_test_set"
EXCLUSION_RULES = {OUTSIDE_TEST_SET: "a question of the tables outside the chosen splits or the seeded sample",
                   den.NOT_IN_ITEMS: "question in no vqa_items table given",
                   den.UNKNOWN_CONDITION: "not the protocol's condition, plain",
                   den.FAILED_CALL: "no reply; its question stays missing",
                   den.DUPLICATE: den.DUPLICATE_MEANING}


class StandardVQAProtocol:
    """EvalProtocol of the standard-VQA check."""

    name = "standard_vqa"
    multi_items = True  # several vqa_items tables (VQA-RAD, SLAKE, PathVQA) in one sweep
    prompt_version = "svqa-v1"
    Options = StandardVQAOptions

    def __init__(self, options: StandardVQAOptions | None = None):
        self.options = o = options or StandardVQAOptions()
        self.splits = tuple(o.splits)
        self.sample = dict(DEFAULT_SAMPLE if o.sample is None else o.sample)
        self.seed = o.sample_seed

    # ------------------------------------------------------------------ items

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        """Items of one or more vqa_items tables (comma-separated URIs; a folder means its
        ``vqa_items.parquet``): the chosen splits, then a seeded sample per source. The sample
        is drawn on every row's id without pixels; only the chosen items' images are read."""
        uris = [u.strip() for u in uri.split(",") if u.strip()]
        columns = tablescan.columns_without("vqa_items", "image")
        rows = []
        for one in uris:
            rows.extend(r for r in tablescan.iter_rows("vqa_items", one, columns)
                        if not self.splits or r["split"] in self.splits)
        chosen = []
        for source in sorted({r["source"] for r in rows}):
            mine = sorted((r for r in rows if r["source"] == source), key=lambda r: stable_hash(self.seed, r["item_id"]))
            n = self.sample.get(source)
            chosen.extend(mine[:n] if n is not None else mine)
        if ids is not None:
            ids = set(ids)
            chosen = [r for r in chosen if r["item_id"] in ids]
        pixels: dict[str, bytes] = {}
        if images and chosen:
            wanted = {r["item_id"] for r in chosen}
            for one in uris:
                pixels.update((r["item_id"], r["image"]) for r in
                              tablescan.iter_rows("vqa_items", one, ["item_id", "image"], where=("item_id", wanted)))
        return [self._item(r, pixels.get(r["item_id"]) if images else None)
                for r in sorted(chosen, key=lambda r: r["item_id"])]

    @staticmethod
    def _item(r: dict, image: bytes | None) -> Item:
        return Item(
            item_id=r["item_id"],
            case_id=stable_hash(r["source"], r["image_file"]),  # questions on one image are one cluster
            question=r["question"],
            truth=r["answer"],
            images=(image,) if image is not None else (),
            private=bool(r["private"]),
            endpoint_allowlist=tuple(r["endpoint_allowlist"] or ()),
            meta={"source": r["source"], "answer_type": r["answer_type"], "split": r["split"]},
        )

    def conditions(self) -> tuple[str, ...]:
        return ("plain",)

    # ------------------------------------------------------------------ episodes

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        if condition not in self.conditions():
            raise ValueError(f"unknown standard_vqa condition {condition!r}; known: {', '.join(self.conditions())}")
        prompt = f"{item.question}\n{INSTRUCTION}"
        completion = model.complete([Message("user", (Part(png=item.images[0]), Part(text=prompt)))], decoding)
        answer = read_answer(completion.text)
        return EpisodeResult(
            turns=[{"role": "user", "text": prompt, "image_ref": item.item_id},
                   {"role": "assistant", "text": completion.text, "image_ref": None}],
            raw_text=completion.text,
            action="answer" if answer else "unparseable",
            answer=answer,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            model_turns=1,
        )

    # ------------------------------------------------------------------ scoring

    def score(self, episodes_uri: str, items_uri: str, out: str) -> dict:
        """Write ``vqa_scores.parquet``, ``metrics.parquet`` and ``run.json`` under ``out``."""
        n_boot = 2000 if self.options.n_boot is None else self.options.n_boot
        seed = 42 if self.options.seed is None else self.options.seed
        items = {i.item_id: i for i in self.load_items(items_uri)}  # the test set, recomputed every time
        episodes, duplicates = den.split_duplicates(
            [e for e in records.read_table("episodes", episodes_uri).to_pylist() if e.get("protocol") in (None, self.name)],
            lambda e: self.scorable(e, items))
        ours = [e for e in episodes if e["condition"] in self.conditions()]
        scores, skipped = score_episodes(ours, items)
        skipped += len(episodes) - len(ours) + len(duplicates)
        cov = self.coverage(items, episodes, scores, items_uri, den.eval_run_pairs(episodes_uri), duplicates)
        den.report(cov, EXCLUSION_RULES)
        metrics = vqa_metrics(scores, n_boot=n_boot, seed=seed)
        run = layout.ScoredRun(out)
        records.write_table("vqa_scores", scores, run.table("vqa_scores"))
        records.write_table("metrics", metrics, run.metrics)
        rejects = den.duplicate_rejects(duplicates, "vqa_scores") + den.missing_rejects(cov, "vqa_scores")
        if rejects:
            records.write_table("rejects", rejects, run.rejects)
        summary = {"protocol": self.name, "prompt_version": self.prompt_version, "episodes": episodes_uri,
                   "items": items_uri, "n_items": len(items), "scored": len(scores), "skipped": skipped,
                   "n_boot": n_boot, "seed": seed, "metrics": run.metrics}
        storage.write_bytes(run.manifest, json.dumps({**summary, "coverage": cov}, indent=2).encode())
        return {**summary, "coverage": den.summary(cov)}

    def scorable(self, episode: dict, items: dict[str, Item]) -> bool:
        """Whether an episode is excluded by no rule but ``duplicate_episode`` (a test-set question,
        the protocol's condition, a reply): the episodes a duplicate is looked for among.

        Parameters
        ----------
        episode : dict
            An episode (``item_id``, ``condition``, ``raw_text``).
        items : dict of str to Item
            The test set's items by id.

        Returns
        -------
        bool
            True when :meth:`coverage` would score it.
        """
        return (episode["item_id"] in items and episode["condition"] in self.conditions()
                and episode.get("raw_text") is not None)

    def coverage(self, items: dict[str, Item], episodes: list[dict], scores: list[dict], items_uri: str,
                 pairs: list[tuple[str, str]] = (), duplicates: list[dict] = ()) -> dict:
        """Every model x condition against the test set ``load_items`` draws (the chosen splits,
        then the seeded sample per source): the fixed denominator. A question without a scored
        episode (none, or a failed call) is a failed unit; an episode of a question outside the
        test set is excluded as ``outside_test_set`` (in the tables, not drawn) or ``not_in_items``.

        Parameters
        ----------
        items : dict of str to Item
            The test set's items by id.
        episodes : list of dict
            This protocol's episodes (``model``, ``condition``, ``item_id``, ``raw_text``).
        scores : list of dict
            The vqa_scores rows.
        items_uri : str
            The vqa_items tables (comma-separated), to tell a question outside the test set from
            one in no table.
        pairs : list of tuple of (str, str), optional
            (model, condition) pairs the eval run accounted for.
        duplicates : list of dict, optional
            Episodes ``denominators.split_duplicates`` left out (excluded as ``duplicate_episode``).

        Returns
        -------
        dict
            ``denominators.coverage``'s result, unit ``questions``, test set ``standard_vqa``.
        """
        stray = {e["item_id"] for e in episodes} - set(items)
        in_tables = set()
        for one in (u.strip() for u in items_uri.split(",") if u.strip() and stray):
            in_tables |= {r["item_id"] for r in tablescan.iter_rows("vqa_items", one, ["item_id"], where=("item_id", stray))}
        excluded = []
        for e in episodes:
            if e["item_id"] not in items:
                rule = OUTSIDE_TEST_SET if e["item_id"] in in_tables else den.NOT_IN_ITEMS
            elif e["condition"] not in self.conditions():
                rule = den.UNKNOWN_CONDITION
            elif e.get("raw_text") is None:
                rule = den.FAILED_CALL
            else:
                continue
            excluded.append((e["model"], e["condition"], rule))
        excluded += [(e["model"], e["condition"], den.DUPLICATE) for e in duplicates]
        return den.coverage(sorted(items), [(e["model"], e["condition"]) for e in episodes
                                            if e["condition"] in self.conditions()],
                            [(r["model"], r["condition"], r["item_id"]) for r in scores], excluded, (), pairs,
                            unit="questions", test_set=self.name)

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        return report.report_sections(scored_run), {}


__all__ = ["StandardVQAProtocol"]
