"""The crosswalk's Hamming-radius search (multi-index hashing, medscope.qc.hamming_search) finds exactly
the pairs that comparing every pair finds: on random, clustered, duplicated, all-equal and
adversarial hash sets, at every radius the crosswalk may be set to, in blocks of any size."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from medscope.qc import hamming_search, near_copies


def _by_definition(h: np.ndarray, max_bits: int) -> set[tuple[int, int, int]]:
    """Every pair i < j within max_bits, counted bit by bit in Python (independent of numpy's popcount)."""
    ints = [int(x) for x in h]
    out = set()
    for i, j in combinations(range(len(ints)), 2):
        d = bin(ints[i] ^ ints[j]).count("1")
        if d <= max_bits:
            out.add((i, j, d))
    return out


def _flip(rng, n_bits: int) -> np.uint64:
    return np.uint64(sum(1 << int(b) for b in rng.choice(64, n_bits, replace=False)))


def _sets(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    random = rng.integers(0, 2**64, 400, dtype=np.uint64)
    centres = rng.integers(0, 2**64, 6, dtype=np.uint64)
    clustered = np.array([centres[rng.integers(6)] ^ _flip(rng, int(rng.integers(0, 12))) for _ in range(300)], np.uint64)
    duplicates = np.repeat(rng.integers(0, 2**64, 15, dtype=np.uint64), rng.integers(1, 30, 15))
    # one substring's key shared by every hash (one huge bucket); the rest random
    same_key = (rng.integers(0, 2**42, 250, dtype=np.uint64)) | np.uint64(0x2AAAAA << 42)
    # pairs at the edge: 8 and 9 differing bits spread over the three substrings (22 | 21 | 21)
    # as evenly as possible, so no substring alone is within its radius-2 ball at 9 bits
    edge = []
    for base in rng.integers(0, 2**64, 20, dtype=np.uint64):
        for per_part in ((3, 3, 2), (3, 3, 3), (2, 3, 3), (0, 0, 8), (2, 2, 4), (3, 2, 3)):
            mask, lo = 0, 64
            for width, k in zip((22, 21, 21), per_part):
                lo -= width
                mask |= sum(1 << (lo + int(b)) for b in rng.choice(width, k, replace=False))
            edge += [base, base ^ np.uint64(mask)]
    mixed = np.concatenate([random[:100], clustered[:100], duplicates, np.array(edge[:60], np.uint64)])
    rng.shuffle(mixed)
    return {"random": random, "clustered": clustered, "duplicates": duplicates, "all_equal": np.full(120, centres[0]),
            "same_substring_key": same_key, "edge": np.array(edge, np.uint64), "mixed": mixed,
            "empty": np.zeros(0, np.uint64), "one": centres[:1], "extremes": np.array([0, 2**64 - 1, 0, 255, 2**64 - 256],
                                                                                      np.uint64)}


@pytest.mark.parametrize("seed", [0, 1])
def test_the_search_finds_exactly_the_pairs_of_comparing_every_pair(seed):
    for name, h in _sets(seed).items():
        for max_bits in (0, 1, 2, 3, 5, 8, 9, 12):
            want = near_copies.candidate_arrays(h, max_bits)
            got = hamming_search.pairs(h, max_bits)
            assert all(np.array_equal(w, g) for w, g in zip(want, got)), (name, max_bits, len(want[0]), len(got[0]))
            if max_bits in (2, 8, 9):  # the other look-up table (dense for large cohorts) finds the same
                dense = hamming_search.pairs(h, max_bits, dense=True)
                assert all(np.array_equal(w, g) for w, g in zip(want, dense)), (name, max_bits)
            assert got[0].dtype == np.int64 and got[2].dtype == np.uint8
            if max_bits == 8:  # the crosswalk's radius: checked against the definition too
                assert set(zip(*(x.tolist() for x in got))) == _by_definition(h, 8), name
    edge = _sets(seed)["edge"]
    found = {(i, j) for i, j, _ in zip(*hamming_search.pairs(edge, 8))}
    # each planted pair (2k, 2k+1): found at 8 differing bits, not at 9 ((3, 3, 3) is the 2nd of 6)
    planted = {k: (2 * k, 2 * k + 1) in found for k in range(len(edge) // 2)}
    assert all(planted[k] != (k % 6 == 1) for k in planted)


def test_other_substring_cuts_find_the_same_pairs():
    # the cut is speed only: four of 16 bits at radii (2, 1, 1, 1), two of 32 at (4, 3)
    for name, h in _sets(2).items():
        values = np.unique(h)
        want = set(zip(*(x.tolist() for x in near_copies.candidate_arrays(values, 8))))
        for widths in ((16, 16, 16, 16), (32, 32), (10, 10, 11, 11, 11, 11)):
            got = [p for b in hamming_search.distinct_pair_blocks(values, 8, widths=widths) for p in zip(*(x.tolist() for x in b))]
            assert len(got) == len(set(got)) and set(got) == want, (name, widths)


def test_pairs_come_once_in_bounded_blocks_whatever_the_block_size():
    h = _sets(3)["mixed"]
    want = set(zip(*(x.tolist() for x in near_copies.candidate_arrays(h, 8))))
    for block in (1, 7, 64, 1000):
        blocks = list(hamming_search.pair_blocks(h, 8, block=block))
        got = [p for b in blocks for p in zip(*(x.tolist() for x in b))]
        assert len(got) == len(set(got)) and set(got) == want
        # a block of member pairs never exceeds the budget (the distinct-hash search yields at most
        # one probe's worth of candidates, also bounded by it)
        assert max(len(b[0]) for b in blocks) <= block


def test_a_block_of_equal_hashes_is_handed_out_in_pieces_and_grouped_without_its_pairs():
    k = 3000  # 4,498,500 pairs at distance 0
    h = np.concatenate([np.full(k, np.uint64(12345)), np.array([12345 ^ 0b111, 0xFFFF_FFFF_FFFF_0000], np.uint64)])
    sizes, total = [], 0
    for i, j, d in hamming_search.pair_blocks(h, 8, block=1 << 16):
        sizes.append(len(i))
        total += len(i)
        assert (i < j).all() and ((d == 0) | ((d == 3) & ((i == k) | (j == k)))).all()
    assert total == k * (k - 1) // 2 + k and max(sizes) <= 1 << 16
    assert hamming_search.hash_groups(h, 8).tolist() == [0] * (k + 1) + [1]


@pytest.mark.parametrize("seed", [0, 1])
def test_hash_groups_are_the_connected_components_of_every_close_pair(seed):
    for name, h in _sets(seed).items():
        i, j, _ = near_copies.candidate_arrays(h, 8)
        n = len(h)
        got = hamming_search.hash_groups(h, 8, block=5)
        if not n:
            assert got.tolist() == []
            continue
        _, want = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)), directed=False)
        # the same partition (labels may differ): a one-to-one map between the two labellings
        assert len(set(zip(got.tolist(), want.tolist()))) == len(set(got.tolist())) == len(set(want.tolist())), name
        firsts = [int(np.flatnonzero(got == g)[0]) for g in range(got.max() + 1)]
        assert firsts == sorted(firsts)  # labels numbered in order of each group's first hash


def test_substring_radii_follow_the_generalized_pigeonhole():
    # radii add up to max_bits - m + 1 (m = 3 substrings), so 8 bits -> (2, 2, 2); -1: never searched
    assert [r for *_, r in hamming_search.substrings(8)] == [2, 2, 2]
    assert [r for *_, r in hamming_search.substrings(9)] == [3, 2, 2]
    assert [r for *_, r in hamming_search.substrings(0)] == [0, -1, -1]
    assert [(s, w) for s, w, _ in hamming_search.substrings(8)] == [(42, 22), (21, 21), (0, 21)]
    assert len(hamming_search.ball(22, 2)) == 1 + 22 + 231 and len(hamming_search.ball(21, 0)) == 1
    with pytest.raises(ValueError, match="0 to 64"):
        hamming_search.substrings(65)


def test_the_crosswalk_confirms_candidates_from_the_search_not_from_every_pair(monkeypatch):
    # near_copy_arrays is what `medscope crosswalk` and `views build` call: it must not compare every pair
    def every_pair(*a, **k):
        raise AssertionError("compared every pair")

    monkeypatch.setattr(near_copies, "candidate_arrays", every_pair)
    rng = np.random.default_rng(5)
    thumbs = [rng.normal(128, 40, (64, 64)).astype(np.float32) for _ in range(3)]
    thumbs.append(thumbs[0].copy())  # d's picture is a's
    hashes = np.array([7, 7 ^ 0b11, 0xFFFF_FFFF_0000_0000, 7 ^ 0b1], np.uint64)
    got = near_copies.near_copy_arrays(["a", "b", "c", "d"], hashes, thumbs)
    pairs = {(int(a), int(b)): near_copies.TIERS[t] for a, b, t in zip(got.a, got.b, got.tier)}
    # a-b (2 bits) and b-d (1 bit) are hash-close but unrelated pictures; a-d (1 bit) is a copy
    assert set(pairs) == {(0, 1), (0, 3), (1, 3)} and pairs[(0, 3)] == "near_copy"
    assert pairs[(0, 1)] == pairs[(1, 3)] == "hash_only"
