"""Schemas of visually assessable findings shipped with MedScope (benchmark-MCQ paper, "RADS-style questions").

Each YAML here is one cohort's schema: liver (LI-RADS-like), lung (Lung-RADS-like) and brain
(RANO-aligned). They are starting points for an institution's own schema, which a clinician
confirms (``medscope benchgen schema approve``) before any build may use it.
"""
