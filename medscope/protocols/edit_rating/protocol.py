"""Zero-shot "was this image edited?" ratings (counterfactual paper §5.4) as an evaluation protocol.

Items are the passed original, target-removal and random-removal views of a test set's splits
(``medscope.analysis.testsets``). One episode is one turn: the view and a question asking for the
probability that the image was digitally edited; the reply's first number in [0, 1] (or a
percentage) is the rating, kept in the episode's ``confidence`` column. Scoring gives, per
model, the AUC of the ratings for random removal vs original (can it see the control edit?)
and target removal vs original (does an erased lesion look edited?), with case-bootstrap
intervals, and the split of the target-removal ratings into clearly unedited (<= 0.20) and
clearly edited (>= 0.75), as the paper reports for gemini-4-argon.
"""

from __future__ import annotations

import json
from collections.abc import Collection

import pyarrow as pa

from medscope.io import layout, records, storage, tablescan
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.protocols import denominators as den
from medscope.protocols.base import EpisodeResult, Item
from medscope.protocols.edit_rating.options import EditRatingOptions
from medscope.analysis import testsets
from medscope.protocols.edit_rating import report, tables
from medscope.protocols.edit_rating.scoring import KINDS, rating_aucs, read_rating

PROMPT = ("Was this medical image digitally edited (for example, a region inpainted or copied from elsewhere)? "
          "Reply with only the probability that it was edited, a number between 0 and 1.")


NOT_RATED_KIND = "not_a_rated_kind"
NO_IMAGE = "no_image"
EXCLUSION_RULES = {den.NOT_IN_ITEMS: "view not in the views table",
                   NOT_RATED_KIND: "not an original, target or random removal",
                   "failed_qc": "the view failed QC", "outside_split": "a split the test set does not read",
                   NO_IMAGE: "a view without an image",
                   den.UNKNOWN_CONDITION: "not the protocol's condition, zero_shot",
                   den.FAILED_CALL: "an error and no reply; its view stays missing",
                   den.DUPLICATE: den.DUPLICATE_MEANING}


class EditRatingProtocol:
    name = "edit_rating"
    prompt_version = "edit-rating-v1"
    Options = EditRatingOptions

    def __init__(self, options: EditRatingOptions | None = None):
        self.options = options or EditRatingOptions()
        self.test_set = self.options.test_set
        self.splits = testsets.splits_of(self.test_set, self.options.splits)

    def conditions(self) -> tuple[str, ...]:
        return ("zero_shot",)

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        items = []
        # the image column is read even without images: a view without one is not an item
        for row in tablescan.iter_rows("views", uri, where=tablescan.id_filter("view_id", ids)):
            if (row["passed"] and row["kind"] in KINDS and row.get("image")
                    and testsets.is_evaluation_view(row["kind"], row.get("split"), self.splits)):
                items.append(Item(item_id=row["view_id"], case_id=row["case_id"], question=PROMPT,
                                  truth="unedited" if row["kind"] == "original" else "edited",
                                  images=(row["image"],) if images else (), private=bool(row.get("private")),
                                  endpoint_allowlist=tuple(row.get("endpoint_allowlist") or ()),
                                  meta={"kind": row["kind"], "tool": row["tool"], "test_set": self.test_set}))
        return items

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        reply = model.complete([Message("user", (Part(png=item.images[0]), Part(text=PROMPT)))], decoding)
        rating = read_rating(reply.text)
        return EpisodeResult(
            turns=[{"role": "user", "text": PROMPT, "image_ref": item.item_id},
                   {"role": "assistant", "text": reply.text, "image_ref": None}],
            raw_text=reply.text, action="answer" if rating is not None else "unparseable",
            answer=None if rating is None else f"{rating:.3f}", confidence=rating,
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
            parse_error=None if rating is not None else "no probability in the reply", model_turns=1)

    def score(self, episodes_uri: str, items_uri: str, out: str) -> dict:
        """Per model, AUC [95% CI] of its edit ratings (R vs O, T vs O), written as
        ``edit_ratings.json`` beside the scored run's ``run.json``."""
        n_boot = self.options.n_boot or 2000
        seed = 42 if self.options.seed is None else self.options.seed
        episodes = records.read_table("episodes", episodes_uri)
        views = records.read_table("views", items_uri)
        expected = [i.item_id for i in self.load_items(items_uri, images=False)]  # the test set, recomputed
        cov, kept, duplicates = self.coverage(expected, views, episodes, den.eval_run_pairs(episodes_uri))
        den.report(cov, EXCLUSION_RULES)
        result = rating_aucs(episodes.filter(pa.array(kept, pa.bool_())), views, n_boot, seed)
        run = layout.ScoredRun(out)
        tables.write_ratings(out, result)
        rejects = den.duplicate_rejects(duplicates, "edit_ratings") + den.missing_rejects(cov, "edit_ratings")
        if rejects:
            records.write_table("rejects", rejects, run.rejects)
        storage.write_text(run.manifest, json.dumps({"protocol": self.name, "episodes": episodes_uri,
                                                     "items": items_uri, "test_set": self.test_set,
                                                     "splits": list(self.splits), "n_boot": n_boot, "seed": seed,
                                                     "coverage": cov}, indent=2))
        return {"models": result, "coverage": den.summary(cov)}

    def coverage(self, expected: list[str], views, episodes,
                 pairs: list[tuple[str, str]] = ()) -> tuple[dict, list[bool], list[dict]]:
        """Every model x condition against the test set's rated views (passed originals, target
        and random removals of its splits, with an image: ``load_items``), the fixed denominator:
        rated, unparseable (``unclear``: a done unit in no AUC), missing (no episode, or a failed
        call: a failed unit); an episode of any other view is excluded under its rule, and a
        second one of a view already rated by the model x condition as ``duplicate_episode``.

        Parameters
        ----------
        expected : list of str
            The test set's view ids.
        views : pyarrow.Table
            The views table.
        episodes : pyarrow.Table
            The episodes table.
        pairs : list of tuple of (str, str), optional
            (model, condition) pairs the eval run accounted for.

        Returns
        -------
        cov : dict
            ``denominators.coverage``'s result, unit ``views``.
        kept : list of bool
            Per episode row, whether it is scored (a test-set view, the protocol's condition, a reply,
            the first such episode of its model x condition x view).
        duplicates : list of dict
            The episodes excluded as ``duplicate_episode`` (``denominators.split_duplicates``).

        References
        ----------
        .. [1] counterfactual paper, §5.4.
        """
        ids = set(expected)
        rows = {r["view_id"]: r for r in views.select(
            [c for c in ("view_id", "kind", "passed", "split", "tool", "reject_reason") if c in views.column_names]
        ).to_pylist()}
        cols = ["model", "condition", "item_id", "raw_text", "error", "action", "confidence"]
        eps = episodes.select(cols + ["run_id"] * ("run_id" in episodes.column_names)).to_pylist()
        rules = [self._exclusion_rule(e, ids, rows) for e in eps]
        scorable = {id(e) for e, rule in zip(eps, rules) if rule is None}
        _, duplicates = den.split_duplicates(eps, lambda e: id(e) in scorable)
        repeated = {id(e) for e in duplicates}
        excluded, kept, rated, unparseable = [], [], [], []
        for e, rule in zip(eps, rules):
            if id(e) in repeated:
                rule = den.DUPLICATE
            kept.append(rule is None)
            if rule is not None:
                excluded.append((e["model"], e["condition"], rule))
            elif e["action"] == "answer" and e["confidence"] is not None:
                rated.append((e["model"], e["condition"], e["item_id"]))
            else:
                unparseable.append((e["model"], e["condition"], e["item_id"]))
        cov = den.coverage(expected, [(e["model"], e["condition"]) for e in eps if e["condition"] in self.conditions()],
                           rated, excluded, unparseable, pairs, unit="views", test_set=self.test_set)
        return cov, kept, duplicates

    def _exclusion_rule(self, e: dict, ids: set, rows: dict) -> str | None:
        """The rule an episode is excluded under before any duplicate is looked for.

        Parameters
        ----------
        e : dict
            An episode (``item_id``, ``condition``, ``raw_text``, ``error``).
        ids : set of str
            The test set's view ids.
        rows : dict of str to dict
            The views table's rows by view id.

        Returns
        -------
        str or None
            The rule, or None for an episode rated or read as unparseable.
        """
        if e["item_id"] not in ids:
            view = rows.get(e["item_id"])
            if view is None:
                return den.NOT_IN_ITEMS
            if view["kind"] not in KINDS:
                return NOT_RATED_KIND
            return (testsets.outside_reason(view, self.test_set, self.splits) or (NO_IMAGE, ""))[0]
        if e["condition"] not in self.conditions():
            return den.UNKNOWN_CONDITION
        if e["raw_text"] is None and e["error"]:
            return den.FAILED_CALL
        return None

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        return report.report_sections(scored_run), {}


