"""What the counterfactual protocol writes: the scores table of a view run (``SCORES``), declared in
``medscope.analysis.tables`` beside the analysis that reads it, and the shared ``metrics`` table."""

from __future__ import annotations

from medscope.analysis.tables import SCORES

__all__ = ["SCORES"]
