"""The standard-VQA protocol's own table (counterfactual paper §5.6): one scored episode per row. Its items
are the shared ``vqa_items`` table, which ``medscope cohort import`` writes and training's replay
reads too.

Registered with ``medscope.io.records`` when this package is imported (docs/design.md, "Tables").
"""

from __future__ import annotations

import pyarrow as pa

from medscope.io import records

# One standard-VQA episode scored (medscope/protocols/standard_vqa).
VQA_SCORES = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("condition", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("case_id", pa.string(), nullable=False),  # the image file: the bootstrap cluster
        pa.field("source", pa.string(), nullable=False),
        pa.field("answer_type", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("reply", pa.string()),
        pa.field("correct", pa.bool_(), nullable=False),
        pa.field("token_recall", pa.float64()),
    ]
)

records.register_table("vqa_scores", VQA_SCORES, declared_by=__name__)
