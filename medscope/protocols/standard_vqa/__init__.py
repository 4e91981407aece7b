"""Standard medical VQA (counterfactual paper §5.6, Table 16): VQA-RAD, SLAKE and PathVQA questions through the
shared harness, closed questions scored by yes/no or exact match, open ones by answer-token recall."""

from medscope.protocols.standard_vqa import tables  # noqa: F401 - registers the protocol's own tables first
from medscope.protocols.standard_vqa.protocol import StandardVQAProtocol as PROTOCOL

__all__ = ["PROTOCOL"]
