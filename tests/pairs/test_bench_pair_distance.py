"""``medscope bench pair-distance`` at a small size: on the procedural drawings, every genuine pair
stands above ``NEAR_COPY_DISTANCE`` and every copy the distance sets aside falls at or below it."""

from __future__ import annotations

from pipelines.bench import pair_distance as bench


def test_the_threshold_separates_genuine_pairs_from_copies():
    row = bench.measure(seeds=2, copy_seeds=1, sizes=(128,))
    # 3 regions x 2 subjects x 3 mark pairs; 3 regions x 2 photographs x 15 copies (2 not set aside)
    assert (row["genuine"]["n"], row["copies"]["n"], row["not_set_aside"]["n"]) == (18, 90, 12)
    assert row["genuine"]["on_wrong_side"] == 0 and row["genuine"]["min"][0] > row["threshold"]
    assert row["copies"]["on_wrong_side"] == 0 and row["copies"]["max"][0] <= row["threshold"]
    # a whole-image hue rotation of purple polish moves it as far as a finding: not set aside
    assert row["not_set_aside"]["max"][0] > row["threshold"]
