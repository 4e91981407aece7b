"""The paired-modality protocol's options (paired-modality paper §3-§5): one model for ``eval run``,
``score`` and ``report``; the verbs' flags and YAML keys come from it (docs/evaluation.md)."""

from __future__ import annotations

import pydantic

from medscope.protocols.base import ProtocolOptions, option
from medscope.protocols.paired_modality.manifest import MAX_SIDE


class PairedModalityOptions(ProtocolOptions):
    """Options of the paired-modality paper's paired-modality evaluation."""

    max_side: int = option(MAX_SIDE, verb="eval", ge=16, description="long side of the photographs sent, pixels")
    judge: str | dict = option("rule", verb="score", description=(
        "rule | rule-named-only | a model entry (mapping) | an entry name in judge_models"))
    second_judge: str | dict | None = option(None, verb="score", description="a second judge (same forms): Cohen's kappa")
    judge_models: str | None = option(None, verb="score", description="models YAML the judges are named in")
    judge_cache: str | None = option(None, verb="score", description=(
        "judgement cache (default <out>/judge_cache; share it between runs to reuse judgements)"))
    judge_workers: int = option(4, verb="score", ge=1, description="judge requests in flight")
    alpha: float = option(0.05, verb="score", gt=0, lt=1, description="significance level of the McNemar tests")
    allow_unjudged: bool = option(False, verb="score", description=(
        "exit 0 although the judge left replies unlabelled (counted in run.json and the report either way; "
        "by default score exits 3, as the demo does)"))
    pooled_models: list[str] | None = option(None, verb="score", description=(
        "subject models the pooled McNemar rows pool (default: every evaluated model but constant policies; "
        "a judge never)"))

    @pydantic.field_validator("pooled_models", mode="before")
    @classmethod
    def _comma_list(cls, v):
        return [m.strip() for m in v.split(",") if m.strip()] if isinstance(v, str) else v
