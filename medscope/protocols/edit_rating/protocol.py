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
import re

import numpy as np

from collections.abc import Collection

from medscope.io import layout, records, storage, tablescan
from medscope.qc.visibility import format_ratings  # noqa: F401 - re-exported
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.protocols.base import EpisodeResult, Item, ProtocolOptions, option
from medscope.analysis import testsets

PROMPT = ("Was this medical image digitally edited (for example, a region inpainted or copied from elsewhere)? "
          "Reply with only the probability that it was edited, a number between 0 and 1.")
KINDS = ("original", "target_removal", "random_removal")
RESULT_FILE = "edit_ratings.json"
_NUMBER = re.compile(r"(\d*\.\d+|\d+)\s*(%?)")


def read_rating(text: str) -> float | None:
    """The first number of the reply as a probability: 0.7, .7 -> 0.7; 70% -> 0.7; None if none fits."""
    for m in _NUMBER.finditer((text or "").replace(",", ".")):
        value = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
        if 0.0 <= value <= 1.0:
            return value
    return None


class EditRatingOptions(ProtocolOptions):
    """Options of the zero-shot edit ratings (counterfactual paper §5.4); the bootstrap: B = 2000, seed 42
    unless ``n_boot`` / ``seed`` say otherwise."""

    test_set: str = option(testsets.DEFAULT_TEST_SET, verb="eval", description="named test set whose views are rated")
    splits: list[str] | None = option(None, verb="eval", description="split(s) rated (default: the test set's)")


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
        storage.write_text(storage.join(out, RESULT_FILE), json.dumps(result, indent=2) + "\n")
        storage.write_text(run.manifest, json.dumps({"protocol": self.name, "episodes": episodes_uri,
                                                     "items": items_uri, "n_boot": n_boot, "seed": seed}, indent=2))
        return result

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        from medscope.render.document import Raw, Section

        result = json.loads(storage.read_utf8(storage.join(scored_run, RESULT_FILE)))
        return [Section("Zero-shot edit ratings (§5.4)", [Raw(format_ratings(result))])], {}


def rating_aucs(episodes, views, n_boot: int = 2000, seed: int = 42) -> dict:
    """Per model: AUC [95% CI] of R vs O and T vs O ratings, unparseable share, T rating split."""
    from medscope.qc.visibility import auc_with_ci

    kind_of = dict(zip(views.column("view_id").to_pylist(), views.column("kind").to_pylist()))
    out: dict = {}
    rows = episodes.select(["model", "view_id", "case_id", "confidence", "action"]).to_pylist()
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model and kind_of.get(r["view_id"]) in KINDS]
        rated = [r for r in mine if r["action"] == "answer" and r["confidence"] is not None]
        entry = {"episodes": len(mine), "unparseable": len(mine) - len(rated)}
        for name, pos in (("R_vs_O", "random_removal"), ("T_vs_O", "target_removal")):
            sel = [r for r in rated if kind_of[r["view_id"]] in (pos, "original")]
            labels = np.array([kind_of[r["view_id"]] == pos for r in sel])
            if labels.any() and (~labels).any():
                entry[name] = auc_with_ci(np.array([r["confidence"] for r in sel]), labels,
                                          np.array([r["case_id"] for r in sel], dtype=object), n_boot, seed)
        t = np.array([r["confidence"] for r in rated if kind_of[r["view_id"]] == "target_removal"])
        if len(t):
            entry["target_rated_unedited"] = int((t <= 0.20).sum())
            entry["target_rated_edited"] = int((t >= 0.75).sum())
            entry["target_rated_between"] = int(len(t) - entry["target_rated_unedited"] - entry["target_rated_edited"])
        out[model] = entry
    return out
