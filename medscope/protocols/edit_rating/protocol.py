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

from medscope.io import layout, records, storage, tablescan
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.protocols.base import EpisodeResult, Item
from medscope.protocols.edit_rating.options import EditRatingOptions
from medscope.analysis import testsets
from medscope.protocols.edit_rating import report, tables
from medscope.protocols.edit_rating.scoring import KINDS, rating_aucs, read_rating

PROMPT = ("Was this medical image digitally edited (for example, a region inpainted or copied from elsewhere)? "
          "Reply with only the probability that it was edited, a number between 0 and 1.")


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
        result = rating_aucs(records.read_table("episodes", episodes_uri), records.read_table("views", items_uri),
                             n_boot, seed)
        run = layout.ScoredRun(out)
        tables.write_ratings(out, result)
        storage.write_text(run.manifest, json.dumps({"protocol": self.name, "episodes": episodes_uri,
                                                     "items": items_uri, "n_boot": n_boot, "seed": seed}, indent=2))
        return result

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        return report.report_sections(scored_run), {}


