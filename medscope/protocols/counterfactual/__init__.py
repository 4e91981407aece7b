"""The counterfactual paper's counterfactual-views protocol: items are QC-passed views, the episode is the
shared agent loop, scoring is the §3.4 reward with the §3.8 metrics."""

from medscope.protocols.counterfactual import tables  # noqa: F401 - registers the protocol's own tables first
from medscope.protocols.counterfactual.protocol import CounterfactualProtocol as PROTOCOL

__all__ = ["PROTOCOL"]
