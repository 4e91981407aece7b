"""The benchmark-MCQ paper's contamination-controlled multiple-choice benchmark as an evaluation protocol.

Items are the questions of a ``medscope benchgen build`` with their montages (one composite
per required sequence, in order). Conditions: ``sighted`` (the montages, the question, the
options) and ``blind`` (a blank mid-gray image of each montage's size in its place, the same
text). The reply is read as one option letter; anything else is an invalid response, counted
and excluded from accuracy. Scoring writes mcq_scores, metrics (B = 2000) and tests (B = 10,000)
tables plus run.json; the report prints the paper's Tables 1-4 and the subcategory polar plot.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection


from medscope.io import layout, records, storage, tablescan
from medscope.images import blank_png
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.protocols.base import EpisodeResult, Item
from medscope.protocols.benchmark_mcq.options import BenchmarkMCQOptions
from medscope.protocols.benchmark_mcq import scoring
from medscope.protocols import denominators as den
from medscope.protocols.benchmark_mcq.builds import build_folders, read_items_table
from medscope.protocols.benchmark_mcq.families import describe, load_plan
from medscope.protocols.benchmark_mcq.replies import PROMPT_VERSION, mcq_prompt, read_choice

META = ("cohort", "qtype", "field", "subcategory", "level", "options", "k", "sequences", "imaging_source",
        "matched_group")


class BenchmarkMCQProtocol:
    """EvalProtocol of the benchmark-MCQ paper's multiple-choice benchmark."""

    name = "benchmark_mcq"
    prompt_version = PROMPT_VERSION
    Options = BenchmarkMCQOptions

    def __init__(self, options: BenchmarkMCQOptions | None = None):
        self.options = options or BenchmarkMCQOptions()
        self.margin = self.options.margin

    multi_items = True  # the items argument may name several builds (eval run --items A --items B)

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        out = []
        for folder in build_folders(uri):
            out += self._load_build(folder, ids, images)
        return out

    def _load_build(self, folder: str, ids: Collection[str] | None, images: bool) -> list[Item]:
        build = layout.BenchgenBuild(folder)
        items = list(tablescan.iter_rows("mcq_items", build.items, where=tablescan.id_filter("item_id", ids)))
        if not items:
            return []
        # only the montages of these items' cases; without their pixels when images=False
        columns = None if images else tablescan.columns_without("montages", "image")
        mont = tablescan.iter_rows("montages", build.montages, columns,
                                   where=("case_id", {r["case_id"] for r in items}))
        # keyed by cohort too: two cohorts of one build may share case ids (a build from before
        # montages carried their cohort has None there, and holds one cohort)
        montages = {(m.get("cohort"), m["case_id"], m["sequence"]): m for m in mont}
        out = []
        for r in items:
            shown = [montages.get((r["cohort"], r["case_id"], s), montages.get((None, r["case_id"], s)))
                     for s in r["sequences"]]
            if any(m is None for m in shown):
                continue  # a build never writes such an item; a hand-edited table may
            out.append(Item(
                item_id=r["item_id"], case_id=r["case_id"],
                question=mcq_prompt(r["question"], r["options"], r["sequences"]), truth=r["answer"],
                images=tuple(m["image"] for m in shown) if images else (), private=bool(r["private"]),
                endpoint_allowlist=tuple(r["endpoint_allowlist"] or ()),
                meta={**{k: r[k] for k in META}, "sizes": [(m["height"], m["width"]) for m in shown]}))
        return out

    def conditions(self) -> tuple[str, ...]:
        return (scoring.SIGHTED, scoring.BLIND)

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        if condition not in self.conditions():
            raise ValueError(f"unknown condition {condition!r}; known: {self.conditions()}")
        if condition == scoring.SIGHTED:
            pngs, refs = list(item.images), [f"{item.case_id}:{s}" for s in item.meta["sequences"]]
        else:  # same text, a blank of each montage's size in its place
            pngs = [blank_png(h, w) for h, w in item.meta["sizes"]]
            refs = [f"blank:{h}x{w}" for h, w in item.meta["sizes"]]
        parts = tuple([Part(png=p) for p in pngs] + [Part(text=item.question)])
        reply = model.complete([Message("user", parts)], decoding)
        letter = read_choice(reply.text, item.meta["options"])
        return EpisodeResult(
            turns=[{"role": "user", "text": item.question, "image_ref": ",".join(refs)},
                   {"role": "assistant", "text": reply.text, "image_ref": None}],
            raw_text=reply.text, action="answer" if letter else "unparseable", answer=letter,
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, model_turns=1)

    def score(self, episodes_uri: str, items_uri: str, out: str) -> dict:
        """Accuracy over valid replies, Δ sighted − blind, BH families and TOST (benchmark-MCQ paper Methods):
        B = 2000 resamples for intervals, 10,000 for the tests, seed 42 unless told otherwise."""
        o = self.options
        plan = load_plan(o.plan)  # BH families, declared
        n_boot, seed = o.n_boot or 2000, 42 if o.seed is None else o.seed
        b_tests = o.n_boot_tests
        run = layout.ScoredRun(out)
        table = read_items_table(items_uri)
        items = table.to_pandas(use_threads=False)
        by_id = {r["item_id"]: r for r in table.to_pylist()}
        episodes, duplicates = den.split_duplicates(records.read_table("episodes", episodes_uri).to_pylist(),
                                                    lambda e: scoring.exclusion_rule(e, by_id) is None)
        rows, skipped = scoring.score_rows(episodes, by_id)
        skipped += len(duplicates)
        cov = scoring.coverage(list(by_id), episodes, rows, den.eval_run_pairs(episodes_uri), duplicates)
        den.report(cov, scoring.EXCLUSION_RULES)
        scores = records.write_table("mcq_scores", rows, run.table("mcq_scores"))
        rejects = den.duplicate_rejects(duplicates, "mcq_scores") + den.missing_rejects(cov, "mcq_scores")
        if rejects:
            records.write_table("rejects", rejects, run.rejects)
        df = scores.to_pandas(use_threads=False)
        metrics = scoring.metrics_rows(df, items, n_boot, seed) if len(df) else []
        tests = scoring.test_rows(df, b_tests, seed, self.margin, plan) if len(df) else []
        families = {}
        for t in tests:
            families.setdefault(t["bh_family"], t["family_size"])
        for line in describe(tests):
            print(line)
        records.write_table("metrics", metrics, run.metrics)
        records.write_table("mcq_tests", tests, run.table("mcq_tests"))
        manifest = {"protocol": self.name, "prompt_version": self.prompt_version, "episodes": episodes_uri,
                    "items": ",".join(build_folders(items_uri)), "n_boot": n_boot, "n_boot_tests": b_tests,
                    "seed": seed, "margin": self.margin, "cluster": "case_id", "skipped": skipped,
                    "bh_families": families, "plan": o.plan, "coverage": cov,
                    "scored_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        storage.write_text(run.manifest, json.dumps(manifest, indent=2) + "\n")
        return {"scores": run.table("mcq_scores"), "metrics": run.metrics,
                "tests": run.table("mcq_tests"), "episodes": len(rows), "skipped": skipped,
                "coverage": den.summary(cov)}

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        from medscope.protocols.benchmark_mcq.report import sections
        from medscope.render.document import Section

        return [Section(title, blocks) for title, blocks in sections(scored_run, work_dir)], {}
