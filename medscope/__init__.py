"""MedScope: measure and train evidence sensitivity in medical vision-language models.

The science lives here as plain functions on numpy / torch / pyarrow; the Ray jobs that
scale it live in ``pipelines``. Nothing in this package imports ray.
"""

__version__ = "0.1.0"
