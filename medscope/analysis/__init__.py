"""Analysis of scored view runs that protocols and verbs share: the counterfactual paper's metrics on
a scores table with case-clustered bootstrap intervals (``view_metrics``, ``selective_risk``), the
named test sets (``testsets``), paired differences between models (``paired_differences``),
significance tests (``significance``), pre-registered decision rules (``decision_rules``) and
training-seed pairs (``training_seeds``). Below the protocols: a protocol calls it, it never calls
a protocol."""

from medscope.analysis import tables  # noqa: F401,E402 - registers the scores table whoever imports the analysis
