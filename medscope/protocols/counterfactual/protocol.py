"""The counterfactual-views protocol (seed 000 §3.1-3.2) behind protocol.EvalProtocol.

Items are the passed evaluation views (O, T, R, N, D) of the named test set's split(s) of a
views table (``medscope.protocols.counterfactual.testsets``; default: the main test, split ``test``). The
training-only kinds (C1's unmatched edits, insertions) are never items. The truth is the view's
expected outcome (present | absent | clarify); an episode is the shared agent episode under a
condition.
"""

from __future__ import annotations

from collections.abc import Collection

from medscope import records, tablescan
from medscope.protocols.counterfactual import prompts
from medscope.protocols.counterfactual.agent_episode import CONDITIONS, EpisodeSettings, run_episode
from medscope.protocols.base import EpisodeResult, Item, ScoreOptions
from medscope.errors import MedScopeError
from medscope.models.base import ChatModel, Decoding
from medscope.protocols.counterfactual import testsets

SCORE_OPTIONS = {"cost_matrix", "test_set", "cluster", "plan", "panel", "min_votes", "box_units"}
_META = ("kind", "finding", "question_kind", "lesion_bbox", "width", "height", "critical", "imaging_type",
         "source", "split", "tool", "degradation", "lesion_area_frac")


def episode_settings(options: dict) -> EpisodeSettings:
    """EpisodeSettings from a sweep's ``protocol_options`` (flat keys, or ``images:
    {resize_long_side: N}``); unknown keys are a clear error."""
    opts = dict(options)
    images = opts.pop("images", None) or {}
    if not isinstance(images, dict) or set(images) - {"resize_long_side"}:
        raise MedScopeError(f"protocol option images: only resize_long_side is known, got {images!r}")
    opts.update(images)
    known = set(EpisodeSettings.__dataclass_fields__)
    unknown = sorted(set(opts) - known)
    if unknown:
        raise MedScopeError(f"unknown counterfactual protocol option(s) {unknown}; known: {sorted(known)}")
    return EpisodeSettings(**opts)


class CounterfactualProtocol:
    """``load_items`` keeps passed evaluation views of the test set's splits; views without an
    image go to ``self.rejects``.

    Built as ``CounterfactualProtocol(**protocol_options)``, e.g. ``images: {resize_long_side:
    512}``, ``max_turns: 5``, ``templates: path/to/prompts.yaml``, ``test_set: fresh_external``,
    ``splits: [test]``, ``tools: [telea]`` (narrow a held-out set's tools), ``training_recipe:
    configs/views/training.yaml`` (refuse a held-out tool the training recipe uses).
    """

    name = "counterfactual"

    def __init__(self, settings: EpisodeSettings | None = None, test_set: str = testsets.DEFAULT_TEST_SET,
                 splits: list[str] | None = None, tools: list[str] | None = None,
                 training_recipe: str | None = None, **options):
        self.test_set = test_set
        self.splits = testsets.splits_of(test_set, splits)
        # edited views of these tools only (heldout_tools: Telea and diffusion, §5.4); None: all
        self.tools = testsets.tools_of(test_set, tools)
        if training_recipe:
            from medscope.views.recipe import check_heldout, load_recipe

            if self.tools is None:
                raise MedScopeError(f"training_recipe: test set {test_set!r} names no tools to hold out; "
                                    "name them (tools: [...]) or use heldout_tools")
            training = load_recipe(training_recipe)
            check_heldout(self.tools, training.all_tools(), test_set, f"{training.name} ({training_recipe})")
        self.settings = settings or episode_settings(options)
        self.prompt_version = prompts.prompt_version(self.settings.templates)
        self.rejects: list[dict] = []

    def conditions(self) -> tuple[str, ...]:
        return CONDITIONS

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        items: list[Item] = []
        self.rejects = []
        # the image column is read even without images: a view without one is not an item
        for row in tablescan.iter_rows("views", uri, where=tablescan.id_filter("view_id", ids)):
            if not row["passed"] or not testsets.is_evaluation_view(row["kind"], row.get("split"), self.splits,
                                                                    row.get("tool"), self.tools):
                continue
            if not row.get("image"):
                self.rejects.append(records.reject("views", row.get("source") or "", row["view_id"],
                                                   "evaluate", "no_image", "passed view without image bytes"))
                continue
            items.append(
                Item(
                    item_id=row["view_id"],
                    case_id=row["case_id"],
                    question=row["question"],
                    truth=row["expected"],
                    images=(row["image"],) if images else (),
                    private=bool(row.get("private")),
                    endpoint_allowlist=tuple(row.get("endpoint_allowlist") or ()),
                    meta={**{k: row.get(k) for k in _META}, "test_set": self.test_set},
                )
            )
        return items

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        return run_episode(item, model, condition, decoding, self.settings)

    def score(self, episodes_uri: str, items_uri: str, out: str, options: ScoreOptions) -> dict:
        """Rewards under a cost matrix and the §3.8 metrics; ``options.extra`` takes
        ``cost_matrix``, ``test_set``, ``cluster``, ``plan``, ``panel``, ``min_votes``, ``box_units``."""
        from medscope.protocols.counterfactual.scoring import score_run

        extra = dict(options.extra)
        unknown = sorted(set(extra) - SCORE_OPTIONS)
        if unknown:
            raise MedScopeError(f"unknown counterfactual score option(s) {unknown}; known: {sorted(SCORE_OPTIONS)}")
        if options.n_boot is not None:
            extra["n_boot"] = options.n_boot
        if options.seed is not None:
            extra["seed"] = options.seed
        return score_run(episodes_uri, items_uri, out, **extra)

    def report_sections(self, scored_run: str, work_dir: str, reference: str | None = None,
                        gallery_cases: int = 4, plan: str | None = None) -> tuple[list, dict]:
        from medscope.protocols.counterfactual.report import report_sections

        return report_sections(scored_run, work_dir, reference=reference, gallery_cases=gallery_cases, plan=plan)
