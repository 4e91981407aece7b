"""The generated-benchmark protocol's own tables (benchmark-MCQ paper): questions and montages
(``medscope benchgen build``, folders of write-once parts), scored episodes and the
confirmatory tests (``medscope score``).

Registered with ``medscope.io.records`` when this package is imported (its ``__init__`` imports
this module), so they are read and written by name like the shared tables (docs/design.md, "Tables").
"""

from __future__ import annotations

import pyarrow as pa

from medscope.io import records
from medscope.io.records import PRIVACY

# The benchmark-MCQ paper: one multiple-choice question of a generated benchmark (medscope benchgen build).
MCQ_ITEMS = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("cohort", pa.string(), nullable=False),
        pa.field("qtype", pa.string(), nullable=False),  # rads | report
        pa.field("field", pa.string()),  # schema field (rads)
        pa.field("subcategory", pa.string(), nullable=False),
        pa.field("level", pa.string()),  # perception | characterization | diagnosis (report)
        pa.field("question", pa.string(), nullable=False),
        pa.field("options", pa.list_(pa.string()), nullable=False),
        pa.field("answer", pa.string(), nullable=False),  # letter
        pa.field("k", pa.int32(), nullable=False),
        pa.field("sequences", pa.list_(pa.string()), nullable=False),  # montages shown, in order
        pa.field("evidence", pa.string()),  # the report sentence that supports the answer
        pa.field("imaging_source", pa.string()),  # public | private (Table 3)
        pa.field("matched_group", pa.string()),  # cohorts generated identically, compared in Table 3
        *PRIVACY,
    ]
)

# The benchmark-MCQ paper: one composite image per (case, sequence).
MONTAGES = pa.schema(
    [
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("sequence", pa.string(), nullable=False),
        pa.field("image", pa.binary(), nullable=False),
        pa.field("height", pa.int32(), nullable=False),
        pa.field("width", pa.int32(), nullable=False),
        pa.field("slices", pa.int32(), nullable=False),  # slices in the source volume
        pa.field("cohort", pa.string()),  # builds holding several cohorts key montages by it too
    ]
)

# The benchmark-MCQ paper: one scored multiple-choice episode.
MCQ_SCORES = pa.schema(
    [
        pa.field("model", pa.string(), nullable=False),
        pa.field("condition", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("cohort", pa.string(), nullable=False),
        pa.field("qtype", pa.string(), nullable=False),
        pa.field("subcategory", pa.string(), nullable=False),
        pa.field("k", pa.int32(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("chosen", pa.string()),  # null: invalid (unparseable) reply
        pa.field("valid", pa.bool_(), nullable=False),
        pa.field("correct", pa.bool_()),
        pa.field("imaging_source", pa.string()),
        pa.field("matched_group", pa.string()),
    ]
)

# The benchmark-MCQ paper: the confirmatory tests (Family 1: accuracy above chance; Family 2: image effect).
MCQ_TESTS = pa.schema(
    [
        pa.field("family", pa.string(), nullable=False),  # above_chance | image_effect
        pa.field("cohort", pa.string(), nullable=False),
        pa.field("qtype", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("estimate", pa.float64()),  # acc - chance, or Δ = sighted - blind
        pa.field("ci_low", pa.float64()),
        pa.field("ci_high", pa.float64()),
        pa.field("p_value", pa.float64()),
        pa.field("q_value", pa.float64()),  # Benjamini-Hochberg within the family
        pa.field("tost_p", pa.float64()),
        pa.field("tost_q", pa.float64()),
        pa.field("ci90_low", pa.float64()),
        pa.field("ci90_high", pa.float64()),
        pa.field("verdict", pa.string()),
        pa.field("n_cases", pa.int64(), nullable=False),
        pa.field("n_items", pa.int64(), nullable=False),
        pa.field("n_boot", pa.int64(), nullable=False),
        pa.field("bh_family", pa.string()),  # the declared BH family (plan file), or run:<test> without one
        pa.field("family_size", pa.int64()),  # tests in that family (q depends on it)
    ]
)

QTYPES = ("rads", "report")
records.register_table("mcq_items", MCQ_ITEMS, declared_by=__name__, enums={"qtype": QTYPES}, files=("items",),
                       part_files=True)
records.register_table("montages", MONTAGES, declared_by=__name__, files=("montages",), part_files=True)
records.register_table("mcq_scores", MCQ_SCORES, declared_by=__name__, enums={"qtype": QTYPES})
records.register_table("mcq_tests", MCQ_TESTS, declared_by=__name__, files=("tests.parquet",))
