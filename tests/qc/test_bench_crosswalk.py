"""``medscope bench crosswalk``'s figures at a small size, in this process: the search's pairs are
every-pair's, the planted near-copies come out as copies, an equal-hash block is counted in
bounded blocks, and every-pair beyond the measured sizes is extrapolated by n² and labelled so."""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from medscope.qc import near_copies
from pipelines.bench import crosswalk as bench


def test_one_size_measures_the_same_pairs_and_the_plan_finds_the_planted_copies():
    row = bench.measure(3000, all_pairs=True)
    assert row["all_pairs"]["same_pairs"] is True and row["all_pairs"]["pairs"] == row["search"]["pairs"]
    cases, store, planted = bench.synthetic_cohort(3000)
    assert planted == row["plan"]["planted_copies"] == 6  # 0.2 % of 3,000
    tiers = row["plan"]["pairs_by_tier"]
    # each planted copy shows its original's picture (correlation 1.0) within 6 bits: a copy pair
    # with it; copies of one original are copies of each other too, so at least as many pairs
    assert tiers.get("identical", 0) + tiers.get("near_copy", 0) >= planted
    assert sum(row["plan"]["split_counts"].values()) == 3000 and row["tables"]["pair_rows"] == sum(tiers.values())
    assert set(row["tables"]["bytes"]) == {"near_copy_pairs.parquet", "splits.parquet", "to_move.json"}
    assert row["driver_peak_rss_mb"] >= row["memory"]["start"]["rss"]


def test_the_synthetic_store_hands_out_hashes_without_thumbnails_and_copies_share_a_picture():
    cases, store, planted = bench.synthetic_cohort(2000, seed=4)
    ids = [c["case_id"] for c in cases]
    h = store.hash_array(ids)
    assert h.dtype == np.uint64 and [int(x) for x in h[:5]] == [store[i][0] for i in ids[:5]]
    i, j, d = near_copies.candidate_arrays(h, 8)
    corr = [near_copies.pixel_correlation(store[ids[a]][1], store[ids[b]][1]) for a, b in zip(i.tolist(), j.tolist())]
    # the hash-close pairs here are the planted ones (random 64-bit hashes are ~never within 8 bits)
    assert len(corr) >= planted and all(c > 0.9999 for c in corr)
    assert sum(c["split"] == "test" for c in cases) in range(20, 60)  # 2 % of 2,000 released as test


def test_an_equal_block_is_counted_in_bounded_blocks_and_grouped(monkeypatch):
    monkeypatch.setattr(near_copies, "LARGE_GROUP", 100)  # the plan's 300 equal cases: a large group
    row = bench.measure_equal_block(2000, 300, 1000)
    h = np.random.default_rng(2).integers(0, 2**64, 2000, dtype=np.uint64)
    h[:300] = h[0]
    assert row["pairs"] == len(near_copies.candidate_arrays(h, 8)[0]) >= 300 * 299 // 2
    assert row["largest_block"] <= 1000 and row["largest_group"] == 300
    # the plan's cohort (its own hashes): its largest hash-close group, by every pair and scipy
    cases, store, _ = bench.synthetic_cohort(2000, equal=300)
    i, j, _ = near_copies.candidate_arrays(store.hash_array([c["case_id"] for c in cases]), 8)
    _, label = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(2000, 2000)), directed=False)
    largest = int(np.bincount(label).max())
    assert largest >= 300 and row["plan"]["large_groups"] == [largest] and row["plan"]["group_rows"] == largest
    assert row["plan"]["pair_rows"] < largest  # its ~45,000 pairs are not made


def test_every_pair_is_extrapolated_by_the_square_beyond_the_largest_measured_size():
    rows = [{"cases": 10, "all_pairs": {"cpu_s": 1.0}}, {"cases": 20, "all_pairs": {"cpu_s": 3.0}}, {"cases": 200}]
    assert bench._all_pairs_cpu(rows[1], rows) == (3.0, "measured")
    assert bench._all_pairs_cpu(rows[2], rows) == (300.0, "extrapolated (n² from 20)")
    assert bench._all_pairs_cpu(rows[2], rows[2:]) == (None, "not run")
