"""The benchmark-MCQ paper's contamination-controlled multiple-choice benchmark: montages + question + options,
sighted and blind, scored as accuracy over valid letters with case-clustered statistics."""

from medscope.protocols.benchmark_mcq import tables  # noqa: F401 - registers the protocol's own tables first
from medscope.protocols.benchmark_mcq.protocol import BenchmarkMCQProtocol as PROTOCOL

__all__ = ["PROTOCOL"]
