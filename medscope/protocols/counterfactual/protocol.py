"""The counterfactual-views protocol (counterfactual paper §3.1-3.2) behind protocol.EvalProtocol.

Items are the passed evaluation views (O, T, R, N, D) of the named test set's split(s) of a
views table (``medscope.analysis.testsets``; default: the main test, split ``test``). The
training-only kinds (C1's unmatched edits, insertions) are never items. The truth is the view's
expected outcome (present | absent | clarify); an episode is the shared agent episode under a
condition.
"""

from __future__ import annotations

from collections.abc import Collection

from medscope.io import records, tablescan
from medscope.protocols.counterfactual import prompts
from medscope.protocols.counterfactual.agent_episode import CONDITIONS, EpisodeSettings, run_episode
from medscope.protocols.base import EpisodeResult, Item
from medscope.errors import MedScopeError
from medscope.models.base import ChatModel, Decoding
from medscope.analysis import testsets
from medscope.protocols.counterfactual.options import CounterfactualOptions

_META = ("kind", "finding", "question_kind", "lesion_bbox", "width", "height", "critical", "imaging_type",
         "source", "split", "tool", "degradation", "lesion_area_frac")


def episode_settings(options: CounterfactualOptions) -> EpisodeSettings:
    """The shared agent episode's settings from the protocol's eval options.

    Parameters
    ----------
    options : CounterfactualOptions
        Reads ``max_turns``, ``max_tool_calls``, ``resize_long_side``, ``blank_gray`` and ``templates``.

    Returns
    -------
    EpisodeSettings
        The settings of every episode the protocol runs.

    Raises
    ------
    MedScopeError
        When ``resize_long_side`` is below 16 or ``max_turns`` below 1.
    """
    return EpisodeSettings(max_turns=options.max_turns, max_tool_calls=options.max_tool_calls,
                           resize_long_side=options.resize_long_side, blank_gray=options.blank_gray,
                           templates=options.templates)


class CounterfactualProtocol:
    """``load_items`` keeps passed evaluation views of the test set's splits; views without an
    image go to ``self.rejects``. Built as ``CounterfactualProtocol(CounterfactualOptions(...))``
    (``medscope.protocols.load("counterfactual", {...})`` from a mapping)."""

    name = "counterfactual"
    Options = CounterfactualOptions

    def __init__(self, options: CounterfactualOptions | None = None):
        self.options = options = options or CounterfactualOptions()
        self.test_set = options.test_set
        self.splits = testsets.splits_of(options.test_set, options.splits)
        # edited views of these tools only (heldout_tools: Telea and diffusion, §5.4); None: all
        self.tools = testsets.tools_of(options.test_set, options.tools)
        if options.training_recipe:
            from medscope.views.recipe import check_heldout, load_recipe

            if self.tools is None:
                raise MedScopeError(f"training_recipe: test set {options.test_set!r} names no tools to hold out; "
                                    "name them (tools: [...]) or use heldout_tools")
            training = load_recipe(options.training_recipe)
            check_heldout(self.tools, training.all_tools(), options.test_set,
                          f"{training.name} ({options.training_recipe})")
        self.settings = episode_settings(options)
        self.prompt_version = prompts.prompt_version(self.settings.templates)
        self.rejects: list[dict] = []

    def conditions(self) -> tuple[str, ...]:
        return CONDITIONS

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        items: list[Item] = []
        self.rejects = []
        # the image column is read even without images: a view without one is not an item
        for row in tablescan.iter_rows("views", uri, where=tablescan.id_filter("view_id", ids)):
            # the one definition of the test set: score recomputes it with the same function
            if testsets.outside_reason(row, self.test_set, self.splits, self.tools) is not None:
                continue
            if not row.get("image"):
                self.rejects.append(records.reject_row("views", row.get("source") or "", row["view_id"],
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

    def score(self, episodes_uri: str, items_uri: str, out: str) -> dict:
        """Rewards under the cost matrix and the §3.8 metrics (``self.options``' score options);
        the test set is recomputed from the views table (``testsets.outside_reason``, as
        ``load_items`` selects it): episodes outside it are excluded, views without an episode
        are missing units against its fixed denominator."""
        from medscope.protocols.counterfactual.scoring import score_run
        from medscope.stats import bootstrap as bs

        o = self.options
        return score_run(episodes_uri, items_uri, out, cost_matrix=o.cost_matrix, test_set=o.test_set,
                         splits=self.splits, tools=self.tools,
                         n_boot=bs.DEFAULT_B if o.n_boot is None else o.n_boot,
                         seed=bs.DEFAULT_SEED if o.seed is None else o.seed, cluster=o.cluster, plan=o.plan,
                         panel=o.panel, min_votes=o.min_votes, box_units=o.box_units)

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        from medscope.protocols.counterfactual.report import report_sections

        o = self.options
        return report_sections(scored_run, work_dir, reference=o.reference, gallery_cases=o.gallery_cases, plan=o.plan)
