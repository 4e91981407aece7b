"""The standard-VQA protocol's options (counterfactual paper §5.6, Table 16): one model for ``eval run``,
``score`` and ``report``; the verbs' flags and YAML keys come from it (docs/evaluation.md)."""

from __future__ import annotations

from medscope.protocols.base import ProtocolOptions, option


class StandardVQAOptions(ProtocolOptions):
    """Options of the standard-VQA check (counterfactual paper §5.6); the bootstrap: B = 2000, seed 42 unless
    ``n_boot`` / ``seed`` say otherwise."""

    splits: list[str] = option(["test"], verb="eval", description="released splits evaluated (empty: all)")
    sample: dict[str, int] | None = option(None, verb="eval", description=(
        "questions drawn per source, {source: n} (default Table 16's: slake 300, pathvqa 300; a source not "
        "named is taken whole)"))
    sample_seed: int = option(0, verb="eval", description="seed of the per-source draw")
