"""Counterfactual views of the counterfactual paper §3.2-§3.3: for each case its original, target-removal,
random-removal, natural-negative and degraded views (and the training-only unmatched-control
and insertion views) with their per-view QC
(``build``, ``worker``), the masks and placements (``geometry``), the erasure tools
(``tools``), degradations (``degrade``), view recipes (``recipe``), what each case needs from the
cohort (``plan``), the driver's streaming passes (``stream``), the cross-case QC (``finalize``)
and synthetic cases for tests (``synthetic_cases``). The Ray job is ``pipelines/views.py``."""
