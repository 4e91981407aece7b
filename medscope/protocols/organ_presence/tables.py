"""The organ-presence protocol's own tables (organ-presence paper): probe items and the slices they were
drawn from (``medscope probe build``), and the scored replies (``medscope score``).

Registered with ``medscope.io.records`` when this package is imported (its ``__init__`` imports
this module), so they are read and written by name like the shared tables (docs/design.md, "Tables").
"""

from __future__ import annotations

import pyarrow as pa

from medscope.io import records

ORGAN_COUNT = pa.struct([("organ", pa.string()), ("voxels", pa.int64())])

PROBE_ITEMS = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("z", pa.int32(), nullable=False),
        pa.field("z_mm", pa.float64(), nullable=False),
        pa.field("organ", pa.string(), nullable=False),
        pa.field("truth", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("stratum", pa.string(), nullable=False),
        pa.field("z_distance_mm", pa.float64()),
        pa.field("absent_from_volume", pa.bool_(), nullable=False),
        pa.field("render", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("image", pa.binary(), nullable=False),
        # the volume's privacy, so the sweep's allow-list check sees it (nullable: added by the probe)
        pa.field("private", pa.bool_()),
        pa.field("endpoint_allowlist", pa.list_(pa.string())),
    ]
)

SLICES = pa.schema(
    [
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("z", pa.int32(), nullable=False),
        pa.field("z_mm", pa.float64(), nullable=False),
        pa.field("organ_voxels", pa.list_(ORGAN_COUNT), nullable=False),
    ]
)

# One scored probe episode (organ-presence paper): the reply read as present / absent / not-addressed.
PROBE_SCORES = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("condition", pa.string(), nullable=False),
        pa.field("format", pa.string(), nullable=False),
        pa.field("image_mode", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("z", pa.int32(), nullable=False),
        pa.field("organ", pa.string(), nullable=False),
        pa.field("truth", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("stratum", pa.string(), nullable=False),
        pa.field("z_distance_mm", pa.float64()),
        pa.field("absent_from_volume", pa.bool_(), nullable=False),
        pa.field("render", pa.string(), nullable=False),
        pa.field("verdict", pa.string(), nullable=False),
        pa.field("clean", pa.bool_(), nullable=False),
        pa.field("hedged", pa.bool_(), nullable=False),
        pa.field("hedge_cue", pa.string()),
        pa.field("correct", pa.bool_()),
        pa.field("pope_yes", pa.bool_()),  # POPE's own rule on the raw reply (scoring.pope_rule_yes)
    ]
)

TRUTH = ("present", "absent")
records.register_table("probe_items", PROBE_ITEMS, declared_by=__name__, files=("probe_items",), part_files=True,
                       enums={"truth": TRUTH, "strategy": ("positive", "random", "popular", "adversarial"),
                              "stratum": ("transition", "mid", "out_of_range")})
records.register_table("slices", SLICES, declared_by=__name__)
records.register_table("probe_scores", PROBE_SCORES, declared_by=__name__,
                       enums={"truth": TRUTH, "verdict": ("present", "absent", "not_addressed", "unclear"),
                              "image_mode": ("image", "no_image", "blank"),
                              "format": ("free_text", "verdict_json", "reasoning_json")})
