"""The benchmark-MCQ protocol's options (benchmark-MCQ paper, Methods): one model for ``eval run``,
``score`` and ``report``; the verbs' flags and YAML keys come from it (docs/evaluation.md)."""

from __future__ import annotations

from medscope.protocols.base import ProtocolOptions, option


class BenchmarkMCQOptions(ProtocolOptions):
    """Options of the benchmark-MCQ paper's benchmark: B = 2000 resamples for intervals and seed 42 unless
    ``n_boot`` / ``seed`` say otherwise."""

    n_boot_tests: int = option(10_000, verb="score", ge=1, description="bootstrap resamples of the tests (benchmark-MCQ paper: 10,000)")
    margin: float = option(0.05, verb="score", gt=0, description="TOST equivalence margin of Δ sighted − blind")
    plan: str | None = option(None, verb="score", description=(
        "a plan declaring the BH families (configs/plans/*.yaml); default: one family per test kind"))
