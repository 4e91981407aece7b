"""The edit-rating protocol's options (counterfactual paper §5.4): one model for ``eval run``,
``score`` and ``report``; the verbs' flags and YAML keys come from it (docs/evaluation.md)."""

from __future__ import annotations

from medscope.analysis import testsets
from medscope.protocols.base import ProtocolOptions, option


class EditRatingOptions(ProtocolOptions):
    """Options of the zero-shot edit ratings (counterfactual paper §5.4); the bootstrap: B = 2000, seed 42
    unless ``n_boot`` / ``seed`` say otherwise."""

    test_set: str = option(testsets.DEFAULT_TEST_SET, verb="eval", description="named test set whose views are rated")
    splits: list[str] | None = option(None, verb="eval", description="split(s) rated (default: the test set's)")
