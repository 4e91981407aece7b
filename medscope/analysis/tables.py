"""The scores table of a view run (counterfactual paper): one scored episode per row, with its reward
under a cost matrix and what rescoring, the metric breakdowns and the group bootstrap need.
Written by the counterfactual protocol's ``score`` (``scores.parquet`` of a scored run), by
training's validation (``medscope train``) and pooled by ``medscope sweep``; read by this package's
metrics, paired differences and tests, which sit below the protocols, so the table is declared here.
Its items are the shared ``views`` table (``medscope views build``).

Registered with ``medscope.io.records`` when ``medscope.analysis`` is imported (docs/design.md, "Tables").
"""

from __future__ import annotations

import pyarrow as pa

from medscope.io import records

SCORES = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("condition", pa.string(), nullable=False),
        pa.field("view_id", pa.string(), nullable=False),
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("expected", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("claims_finding", pa.bool_()),
        pa.field("correct", pa.bool_(), nullable=False),
        pa.field("iou", pa.float64()),
        pa.field("grounded", pa.bool_(), nullable=False),
        pa.field("tool_calls", pa.int32(), nullable=False),
        pa.field("reward", pa.float64(), nullable=False),
        pa.field("cost_matrix", pa.string(), nullable=False),
        # Added by scoring (nullable): what rescoring under another matrix, the metric
        # breakdowns and the group bootstrap need, so a scores table stands on its own.
        pa.field("test_set", pa.string()),
        pa.field("lesion_present", pa.bool_()),  # the finding is visible in this view
        pa.field("critical", pa.bool_()),
        pa.field("oversized_box", pa.bool_()),  # box over half the image: no bonus
        pa.field("confidence", pa.float64()),
        pa.field("imaging_type", pa.string()),
        pa.field("finding", pa.string()),
        pa.field("lesion_area_frac", pa.float64()),
        pa.field("patient_id", pa.string()),
        pa.field("group_id", pa.string()),
        # per-tool (Table 12) and per-source (Table 15, §5.6) breakdowns
        pa.field("tool", pa.string()),
        pa.field("source", pa.string()),
        # a trained run's arm and seed (model id <arm>@seed<k>, medscope.analysis.training_seeds): runs of
        # different seeds are distinct models, pooled by arm where the counterfactual paper pools (§3.7, §3.9)
        pa.field("arm", pa.string()),
        pa.field("seed", pa.int32()),
    ]
)

records.register_table("scores", SCORES, declared_by=__name__,
                       enums={"action": ("answer", "refer", "clarify", "unparseable")})
