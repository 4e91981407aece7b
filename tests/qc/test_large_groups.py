"""Hash-close groups too large to pair (``near_copies.LARGE_GROUP``): found without their pairs,
reported whole, and treated as one near-copy group by the crosswalk and the views plan; checked
against groups and pairs worked out here by comparing every pair (numpy) and joining them with
scipy, and correlations from scipy's Pearson r."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.stats import pearsonr

from medscope.qc import near_copies
from medscope.views.plan import make_plan
from medscope.views.recipe import Recipe


def _components(hashes: np.ndarray, max_bits: int = 8) -> np.ndarray:
    """Group label per hash: connected components of every pair within ``max_bits``, by brute force."""
    h = np.asarray(hashes, np.uint64)
    dist = np.bitwise_count(h[:, None] ^ h[None, :])
    i, j = np.nonzero(np.triu(dist <= max_bits, 1))
    return connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(len(h), len(h))), directed=False)[1]


def _cohort(n: int, group: int, seed: int = 0):
    """``n`` images with random hashes and pictures; the first ``group`` are a template: hashes
    within 3 bits of one hash (so one hash-close group), pictures one picture plus small noise;
    the last is a copy of the one before it."""
    rng = np.random.default_rng(seed)
    hashes = rng.integers(0, 2**64, n, dtype=np.uint64)
    thumbs = rng.normal(128, 40, (n, 64, 64)).astype(np.float32)
    for k in range(1, group):
        flip = sum(1 << int(b) for b in rng.choice(64, int(rng.integers(0, 4)), replace=False))
        hashes[k] = hashes[0] ^ np.uint64(flip)
        thumbs[k] = thumbs[0] + rng.normal(0, 4, (64, 64)).astype(np.float32)
    # a copy outside the template: a pair the search must still make
    hashes[n - 1], thumbs[n - 1] = hashes[n - 2] ^ np.uint64(1 << 5), thumbs[n - 2]
    ids = [f"c{int(x):04d}" for x in rng.permutation(n)]  # ids not in index order: the representative is by id
    return ids, hashes, thumbs


def test_a_large_group_is_reported_whole_and_every_other_pair_is_the_brute_force_pairs():
    ids, hashes, thumbs = _cohort(400, 150)
    label = _components(hashes)
    members = set(np.flatnonzero(label == label[0]).tolist())
    assert len(members) >= 150  # the template's hashes are one group
    i, j, d = near_copies.candidate_arrays(hashes, 8)
    outside = {(min(ids[a], ids[b]), max(ids[a], ids[b])) for a, b in zip(i.tolist(), j.tolist())
               if a not in members}
    assert outside  # the copy planted outside the template: the check can fail

    found = near_copies.near_copy_arrays(ids, hashes, thumbs, large_group=100)
    large = found.large
    assert large.sizes().tolist() == [len(members)] and set(large.member.tolist()) == members
    rep = int(large.representative[0])
    assert ids[rep] == min(ids[m] for m in members)
    for m, dist, r in zip(large.member.tolist(), large.distance.tolist(), large.correlation.tolist()):
        assert dist == (int(hashes[m]) ^ int(hashes[rep])).bit_count()
        assert r == pytest.approx(1.0 if m == rep else pearsonr(thumbs[m].ravel().astype(float), thumbs[rep].ravel().astype(float))[0], abs=1e-9)
    # no pair inside the group (150 members: up to 11,175 pairs); the others exactly as by brute force
    assert {(ids[a], ids[b]) for a, b in zip(found.a.tolist(), found.b.tolist())} == outside
    # the group joins into one near-copy group by a star: one link per member, not its pairs
    ga, gb = large.edges()
    assert len(ga) == len(members) - 1 and set(gb.tolist()) == {rep}

    # under a cap the group fits: every pair is made, and there is no large group
    whole = near_copies.near_copy_arrays(ids, hashes, thumbs, large_group=len(members))
    assert len(whole.large) == 0 and len(whole) == len(i)


def test_memory_for_a_group_of_20000_equal_hashes_is_far_below_its_pairs():
    n, k = 40_000, 20_000
    rng = np.random.default_rng(5)
    hashes = rng.integers(0, 2**64, n, dtype=np.uint64)
    hashes[:k] = hashes[0]
    ids = [f"c{x:06d}" for x in range(n)]
    picture = np.arange(n)
    picture[:k] = 0

    class Thumbs:  # made when read, as a staged cohort reads them from disk
        def __getitem__(self, x):
            return np.random.default_rng(int(picture[x])).normal(128, 40, (64, 64)).astype(np.float32)

    listed = k * (k - 1) // 2 * 21  # what the group's pairs would take as PairArrays: 4.2 GB
    tracemalloc.start()
    try:
        found = near_copies.near_copy_arrays(ids, hashes, Thumbs())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found.large.sizes().tolist() == [k] and ids[int(found.large.representative[0])] == "c000000"
    assert np.all(found.large.correlation == 1.0)  # one picture
    assert len(found) < k  # not quadratic: the few random hash pairs at most
    assert peak < listed / 20, (peak, listed)


def test_the_views_plan_puts_a_large_group_in_one_split_and_lists_its_members():
    ids, hashes, thumbs = _cohort(300, 120, seed=3)
    label = _components(hashes)
    members = sorted(ids[m] for m in np.flatnonzero(label == label[0]).tolist())
    released_test = members[len(members) // 2]
    cases = [{"case_id": c, "source": "a" if x % 2 else "b", "imaging_type": "xray", "patient_id": None,
              "split": "test" if c == released_test else None, "has_lesion": False} for x, c in enumerate(ids)]
    store = {c: (int(hashes[x]), thumbs[x]) for x, c in enumerate(ids)}
    plan, report, pairs, groups = make_plan(cases, store, Recipe(seed=0), large_group=50)
    # one released test case sends its whole group to test
    assert {plan[c]["split"] for c in members} == {"test"} and len({plan[c]["group_id"] for c in members}) == 1
    (summary,) = report["large_hash_groups"]
    assert summary["cases"] == len(members) and summary["representative"] == members[0]
    assert summary["split"] == "test" and sum(summary["sources"].values()) == len(members)
    assert groups.column("case_id").to_pylist() == members
    assert set(groups.column("group_size").to_pylist()) == {len(members)}
    assert groups.column("representative").to_pylist() == [c == members[0] for c in members]
    in_group = set(members)
    assert not any(a in in_group or b in in_group for a, b in zip(pairs.column("a").to_pylist(),
                                                                  pairs.column("b").to_pylist()))
    # with no group over the cap, the plan is the plan of every pair
    plan_all, report_all, pairs_all, groups_all = make_plan(cases, store, Recipe(seed=0))
    assert groups_all.num_rows == 0 and report_all["large_hash_groups"] == []
    assert pairs_all.num_rows >= len(members) * (len(members) - 1) // 2
    assert {c: plan_all[c]["split"] for c in members} == {c: plan[c]["split"] for c in members}
