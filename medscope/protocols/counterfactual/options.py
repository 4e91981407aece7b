"""The counterfactual protocol's options (counterfactual paper), one model for ``eval run``, ``score`` and
``report``: which views are evaluated and how an episode runs (set by the eval run, recorded in
its sweep.json), how episodes are scored (set at score, recorded in run.json), and what the
report shows. Flags and YAML keys of the three verbs come from it (docs/evaluation.md)."""

from __future__ import annotations

from typing import Literal

from medscope.protocols.base import ProtocolOptions, option
from medscope.protocols.counterfactual import costs
from medscope.analysis import testsets
from medscope.protocols.counterfactual.rewards import BOX_UNITS
from medscope.protocols.counterfactual.viewing_tools import MAX_TOOL_CALLS


class CounterfactualOptions(ProtocolOptions):
    """Options of the counterfactual-views protocol (counterfactual paper §3.1-3.10, Tables 3-4)."""

    # -- eval: the views evaluated (the named test set, medscope.analysis.testsets)
    test_set: str = option(testsets.DEFAULT_TEST_SET, verb="eval", description=(
        "named test set: main, heldout_tools, fresh_external, fresh_internal, external_centres, "
        "heldout_wordings, validation (the name the scores carry)"))
    splits: list[str] | None = option(None, verb="eval",
                                      description="split(s) evaluated (default: the test set's; main -> test)")
    tools: list[str] | None = option(None, verb="eval", description=(
        "edited views of these tools only (default: the test set's; heldout_tools: telea, diffusion)"))
    training_recipe: str | None = option(None, verb="eval", description=(
        "a training recipe YAML: refuse a held-out tool it trains on"))
    # -- eval: the episode (medscope.protocols.counterfactual.agent_episode.EpisodeSettings)
    max_turns: int = option(5, verb="eval", ge=1, description="model replies per episode (3 tools + final + 1 spare)")
    max_tool_calls: int = option(MAX_TOOL_CALLS, verb="eval", ge=0, description="tool calls per episode")
    resize_long_side: int = option(768, verb="eval", ge=16, description="long side of every image sent, pixels")
    blank_gray: int = option(128, verb="eval", ge=0, le=255, description="grey level of the blank condition's image")
    templates: str | None = option(None, verb="eval", description="prompt template YAML (default: the shipped one)")
    # -- score
    cost_matrix: str = option(costs.DEFAULT, verb="score", description=(
        "cost matrix: a shipped one (configs/cost_matrices/: table2, ...) or a YAML path"))
    cluster: Literal["case_id", "group_id", "patient_id"] = option(
        "case_id", verb="score", description="bootstrap unit: cases, near-copy groups or patients")
    plan: str | None = option(None, verb="score", description=(
        "pre-registered plan (configs/plans/*.yaml): its hash is locked into the run (plan.lock.json) "
        "and the report adjusts and prints its families (Table 6)"))
    panel: list[str] | None = option(None, verb="score", description=(
        "consensus panel of models: also report metrics without the lesion-free cases it disputes"))
    min_votes: int | None = option(None, verb="score", ge=1,
                                   description="panel votes that make a lesion-free label disputed (default 7/9)")
    box_units: Literal[BOX_UNITS] = option("pixels", verb="score", description=(
        "units of episode boxes: pixels (the table contract) or per_mille (raw 0-1000 replies)"))
    # -- report
    reference: str | None = option(None, verb="report", description=(
        "model the paired differences are taken against (default: highest ESG)"))
    gallery_cases: int = option(4, verb="report", ge=0, description="cases shown in the gallery")
