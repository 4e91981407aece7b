"""The counterfactual paper §5.4's zero-shot edit ratings: each model, shown one view, states the probability
that the image was edited; AUCs of random removal vs original and target removal vs original."""

from medscope.protocols.edit_rating.protocol import EditRatingProtocol as PROTOCOL

__all__ = ["PROTOCOL"]
