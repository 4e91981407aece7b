"""Hamming-radius search over 64-bit hashes that is not quadratic: multi-index hashing.

The near-copy crosswalk (counterfactual paper §4.1: "every pair within 8 bits") must see a
whole institutional cohort at once. Comparing every pair costs n²/2 comparisons: 20,000
hashes took 1.0 s and 80,000 took 12.6 s on the dev machine, so a million would take about
half an hour and ten million two days. This module finds exactly the same pairs from
exact-match tables on substrings of the hash (multi-index hashing, Norouzi, Punjani & Fleet
2012) with the generalized pigeonhole principle (Qin, Xiao, Wang & Zhang 2018):

- the 64 bits are cut into ``m`` substrings (3 here: 22, 21 and 21 bits);
- each substring ``k`` gets a radius ``r_k`` with ``sum(r_k) = max_bits - m + 1``; for 8 bits,
  (2, 2, 2). If two hashes differ in at most ``max_bits`` bits, some substring differs in at
  most ``r_k`` bits (otherwise the differences would add up to at least ``max_bits + 1``);
- for each substring, every hash looks up the table of that substring's values at every value
  within ``r_k`` bits of its own (254 or 232 look-ups for 22 or 21 bits at radius 2); every
  hash found is a candidate, verified on all 64 bits. A pair is reported by the first
  substring that finds it, so never twice.

On random hashes the work per hash is ~720 table look-ups plus the candidates, ~n / 7,000 per
hash (the share of hashes within 2 bits on some substring), instead of n comparisons.

Equal hashes are searched once (one entry per distinct hash); a distinct-hash pair stands for
every pair of their members. Pairs are handed out in blocks of bounded size
(:func:`pair_blocks`), so a cohort holding thousands of images with one hash (blank or
near-identical images) never holds all their pairs at once; :func:`hash_groups` gives the
connected components of the hash-close graph without making any member pair at all.

faiss (``IndexBinaryMultiHash``) does the same search in C++; it is not used: its range search
was 5-18x slower here (10**5 and 10**6 random hashes, one thread) and this module meets the aim
with numpy and scipy alone (docs/scaling.md, *Near-copy crosswalk*).

References
----------
.. [1] counterfactual paper, §4.1
.. [2] M. Norouzi, A. Punjani, D. J. Fleet, "Fast search in Hamming space with multi-index
   hashing", CVPR 2012.
.. [3] J. Qin, C. Xiao, Y. Wang, W. Zhang, "Generalizing the pigeonhole principle for
   similarity search in Hamming space", IEEE TKDE 2021 (arXiv 2018).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

HASH_BITS = 64
# three substrings: the widest whose tables stay small (2**22 counts and starts, ~70 MB) and whose
# radius-2 balls stay few (254 values); with two substrings of 32 bits at radii (4, 3) each hash
# would look up 47,000 values, with four of 16 bits at (2, 1, 1, 1) a million random hashes give
# ~1,400 candidates each: 24 against 10.7 CPU-s at 10**6 (docs/scaling.md)
SUBSTRING_BITS = (22, 21, 21)
# how many elements a step holds at once (probes, candidates or member pairs; 8-16 bytes each):
# memory only, the pairs found do not depend on it
BLOCK = 1 << 20
# a dense look-up table (2**22 counts, ~30 ms to build) once the cohort holds more hashes than
# 1/4096 of the key space (~1,000): a binary search costs ~100 ns a look-up, ~700 look-ups a hash
DENSE_FILL = 12
DENSE_MAX_BITS = 24  # never a dense table over wider keys (2**24 counts: 128 MB)


def substrings(max_bits: int, widths: tuple[int, ...] = SUBSTRING_BITS) -> list[tuple[int, int, int]]:
    """(shift, width, radius) of each substring: radii summing to ``max_bits - m + 1``.

    A radius of -1 means the substring is never searched: ``max_bits`` is small enough that
    the other substrings alone must hold a close pair.

    Parameters
    ----------
    max_bits : int
        Largest Hamming distance searched, 0 to 64.
    widths : tuple of int, optional
        Bits of each substring, from the most significant; they add up to 64.

    Returns
    -------
    list of tuple of (int, int, int)
        ``(shift, width, radius)`` per substring.

    References
    ----------
    .. [1] Qin et al. 2018, generalized pigeonhole principle (the module's references).
    """
    if sum(widths) != HASH_BITS:
        raise ValueError(f"substring widths {widths} do not add up to {HASH_BITS} bits")
    if not 0 <= max_bits <= HASH_BITS:
        raise ValueError(f"max_bits must be 0 to {HASH_BITS}, not {max_bits}")
    m = len(widths)
    total = max_bits - m + 1
    radii = [total // m + (1 if k < total % m else 0) for k in range(m)]  # floor division: -1 where total < 0
    out, shift = [], HASH_BITS
    for w, r in zip(widths, radii):
        shift -= w
        out.append((shift, w, min(r, w)))
    return out


def ball(width: int, radius: int) -> np.ndarray:
    """Every XOR mask of ``width`` bits with at most ``radius`` bits set (distance 0 first).

    Parameters
    ----------
    width : int
        Bits in the substring.
    radius : int
        Largest number of set bits.

    Returns
    -------
    numpy.ndarray of int64
        The masks, ``sum(C(width, k) for k <= radius)`` of them.
    """
    masks = [0]
    for k in range(1, radius + 1):
        masks += [sum(1 << b for b in bits) for bits in combinations(range(width), k)]
    return np.array(masks, dtype=np.int64)


def _runs(cnt: np.ndarray, budget: int) -> Iterator[tuple[int, int, int, int]]:
    """Split runs of lengths ``cnt`` into pieces of at most ``budget`` elements:
    (first run, end run, offset into the first run, elements); a run longer than the budget
    is cut into several pieces of itself."""
    cum = np.cumsum(cnt, dtype=np.int64)
    n, k, base = len(cnt), 0, 0
    while k < n:
        e = int(np.searchsorted(cum, base + budget, side="right"))
        if e > k:
            yield k, e, 0, int(cum[e - 1] - base)
            base, k = int(cum[e - 1]), e
            continue
        for start in range(0, int(cnt[k]), budget):  # one run alone exceeds the budget
            yield k, k + 1, start, min(budget, int(cnt[k]) - start)
        base, k = int(cum[k]), k + 1


def _expand(owner: np.ndarray, lo: np.ndarray, cnt: np.ndarray, budget: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """For runs ``[lo, lo + cnt)`` owned by ``owner``: (owner, position) per element, in
    pieces of at most ``budget``."""
    for k, e, start, total in _runs(cnt, budget):
        if e == k + 1 and (start or total < cnt[k]):
            yield np.full(total, owner[k]), lo[k] + start + np.arange(total, dtype=np.int64)
            continue
        c = cnt[k:e]
        run_start = np.cumsum(c) - c  # where each run starts in this piece
        yield np.repeat(owner[k:e], c), np.repeat(lo[k:e] - run_start, c) + np.arange(total, dtype=np.int64)


class _DenseTable:
    """Look-ups in a table indexed by every value of a ``width``-bit key: for large cohorts."""

    def __init__(self, key: np.ndarray, width: int) -> None:
        self.counts = np.bincount(key, minlength=1 << width)
        self.starts = np.cumsum(self.counts) - self.counts
        # the look-ups go to a byte per key (4 MB for 22 bits, mostly in cache) before the
        # 8-byte counts and starts, which only hits read
        self.occupied = self.counts > 0

    def __call__(self, probe: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found = np.flatnonzero(self.occupied[probe])
        return found, self.starts[probe[found]], self.counts[probe[found]]


class _SortedTable:
    """The same look-ups by binary search in the sorted keys: for cohorts far smaller than the
    key space, where a dense table would be mostly empty (and cost 2**width to build)."""

    def __init__(self, sorted_key: np.ndarray) -> None:
        self.keys, self.starts, self.counts = np.unique(sorted_key, return_index=True, return_counts=True)

    def __call__(self, probe: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        at = np.minimum(np.searchsorted(self.keys, probe), len(self.keys) - 1)
        found = np.flatnonzero(self.keys[at] == probe)
        return found, self.starts[at[found]], self.counts[at[found]]


def distinct_pair_blocks(values: np.ndarray, max_bits: int, block: int = BLOCK, dense: bool | None = None,
                         widths: tuple[int, ...] = SUBSTRING_BITS) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every pair of *distinct* hashes within ``max_bits`` bits, in blocks, by multi-index hashing.

    ``values`` holds distinct hashes (as from ``numpy.unique``); each pair ``(i, j)``, ``i < j``,
    comes out exactly once, in no particular order.

    Parameters
    ----------
    values : numpy.ndarray of uint64
        Distinct hashes.
    max_bits : int
        Largest Hamming distance reported.
    block : int, optional
        Most probes or candidates held at once (memory only).
    dense : bool or None, optional
        Look substrings up in a table of every key value (True) or by binary search in the
        sorted keys (False); None: dense from ~1,000 hashes on (``DENSE_FILL``).
        Speed only: the pairs found do not depend on it.
    widths : tuple of int, optional
        Bits of each substring (:func:`substrings`); speed only.

    Yields
    ------
    i, j : numpy.ndarray of int64
        Indices into ``values``, ``i < j``.
    distance : numpy.ndarray of uint8
        Their Hamming distance, at most ``max_bits``.

    References
    ----------
    .. [1] counterfactual paper, §4.1 ("every pair within 8 bits")
    .. [2] Norouzi et al. 2012; Qin et al. 2018 (the module's references).
    """
    v = np.asarray(values, dtype=np.uint64)
    n = len(v)
    if n < 2:
        return
    parts = substrings(max_bits, widths)
    keys = [((v >> np.uint64(s)) & np.uint64((1 << w) - 1)).astype(np.int64) for s, w, _ in parts]
    for k, (_, w, r) in enumerate(parts):
        if r < 0:
            continue
        key = keys[k]
        order = np.argsort(key)
        small = np.int32 if w <= 30 else np.int64  # half the bytes of every probe where the key fits
        sorted_key = key[order].astype(small)
        use_dense = dense if dense is not None else (w <= DENSE_MAX_BITS and n << DENSE_FILL > 1 << w)
        lookup = _DenseTable(key, w) if use_dense else _SortedTable(sorted_key)
        masks = ball(w, r).astype(small)
        rows = max(1, block // len(masks))
        sorted_v = v[order]  # candidates are read from runs of this, not scattered over v
        # queries in key order too: a mask's look-ups for neighbouring queries land near each other
        for q0 in range(0, n, rows):
            q_key = sorted_key[q0 : q0 + rows]
            probe = (q_key[:, None] ^ masks[None, :]).ravel()
            # a pair of different keys is looked up from both ends: from the smaller key only
            probe_hit = np.flatnonzero(probe >= np.repeat(q_key, len(masks)))
            probe_key = probe[probe_hit]
            found, lo, cnt = lookup(probe_key)
            if not len(found):
                continue
            for own, pos in _expand(q0 + probe_hit[found] // len(masks), lo, cnt, block):
                x = sorted_v[own] ^ sorted_v[pos]
                d = np.bitwise_count(x)
                keep = (d <= max_bits) & (d > 0)  # distance 0 is the query itself (values are distinct)
                if not keep.any():
                    continue
                own, pos, x, d = own[keep], pos[keep], x[keep], d[keep]
                keep = (sorted_key[own] != sorted_key[pos]) | (own < pos)  # an equal key is found from both ends
                for s2, w2, r2 in parts[:k]:  # found by an earlier substring already: not again
                    if r2 >= 0:
                        keep &= np.bitwise_count((x >> np.uint64(s2)) & np.uint64((1 << w2) - 1)) > r2
                if keep.any():
                    i, j = order[own[keep]], order[pos[keep]]
                    yield np.minimum(i, j), np.maximum(i, j), d[keep].astype(np.uint8)


def pair_blocks(hashes: np.ndarray, max_bits: int, block: int = BLOCK,
                dense: bool | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every pair ``i < j`` of ``hashes`` within ``max_bits`` bits, in blocks of at most ``block``
    pairs, in no particular order: the same pairs as comparing every pair.

    Equal hashes are searched once; their member pairs (and those of two close distinct
    hashes) are made a block at a time, so a group of k equal hashes costs k²/2 pairs handed
    out, never held at once.

    Parameters
    ----------
    hashes : array_like of uint64
        One hash per image, shape (n,).
    max_bits : int
        Largest Hamming distance reported.
    block : int, optional
        Most pairs (and probes) held at once (memory only).
    dense : bool or None, optional
        Look-up table kind (:func:`distinct_pair_blocks`; speed only).

    Yields
    ------
    i, j : numpy.ndarray of int64
        Indices into ``hashes``, ``i < j``.
    distance : numpy.ndarray of uint8
        Their Hamming distance.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    h = np.asarray(hashes, dtype=np.uint64)
    values, inverse, sizes = np.unique(h, return_inverse=True, return_counts=True)
    members = np.argsort(inverse, kind="stable")  # the indices holding each distinct hash, in a row
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # pairs within one distinct hash (distance 0): each of its k members with each, i < j kept
    dup = np.flatnonzero(sizes > 1)
    if len(dup):
        span = sizes[dup].astype(np.int64) ** 2
        for g, offset in _expand(dup, np.zeros(len(dup), np.int64), span, block):
            k = sizes[g]
            i, j = members[first[g] + offset // k], members[first[g] + offset % k]
            keep = i < j
            yield i[keep], j[keep], np.zeros(int(keep.sum()), np.uint8)
    # pairs across two close distinct hashes: every member of one with every member of the other
    for a, b, d in distinct_pair_blocks(values, max_bits, block, dense):
        span = sizes[a].astype(np.int64) * sizes[b]
        if (span == 1).all():
            i, j = members[first[a]], members[first[b]]
            yield np.minimum(i, j), np.maximum(i, j), d
            continue
        for p, offset in _expand(np.arange(len(a)), np.zeros(len(a), np.int64), span, block):
            kb = sizes[b[p]]
            i, j = members[first[a[p]] + offset // kb], members[first[b[p]] + offset % kb]
            yield np.minimum(i, j), np.maximum(i, j), d[p]


def pairs(hashes: np.ndarray, max_bits: int, block: int = BLOCK,
          dense: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, distance) arrays, sorted by (i, j), of every ``i < j`` within ``max_bits`` bits.

    The same result as comparing every pair (``near_copies.candidate_arrays``), found by
    :func:`pair_blocks`; it holds every pair (13 bytes each), so use :func:`pair_blocks` or
    :func:`hash_groups` where a cohort may hold large groups of equal hashes.

    Parameters
    ----------
    hashes : array_like of uint64
        One hash per image, shape (n,).
    max_bits : int
        Largest Hamming distance reported.
    block : int, optional
        Most pairs (and probes) held at once while searching (memory only).
    dense : bool or None, optional
        Look-up table kind (:func:`distinct_pair_blocks`; speed only).

    Returns
    -------
    i : numpy.ndarray of int64
        First index of each pair.
    j : numpy.ndarray of int64
        Second index, ``j > i``.
    distance : numpy.ndarray of uint8
        Hamming distance of each pair.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    found = list(pair_blocks(hashes, max_bits, block, dense))
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8)
    i, j, d = (np.concatenate(c) for c in zip(*found))
    order = np.lexsort((j, i))
    return i[order], j[order], d[order]


def hash_groups(hashes: np.ndarray, max_bits: int, block: int = BLOCK) -> np.ndarray:
    """The connected components of the hash-close graph (an edge per pair within ``max_bits``):
    a group label per hash, without making any pair of members.

    Equal hashes are one node; edges between distinct hashes are joined a block at a time, so
    memory is the cohort plus one block, however many pairs the groups hold.

    Parameters
    ----------
    hashes : array_like of uint64
        One hash per image, shape (n,).
    max_bits : int
        Largest Hamming distance of an edge.
    block : int, optional
        Most edges held before they are folded into the labels (memory only).

    Returns
    -------
    numpy.ndarray of int64
        ``label[i]``: equal for two hashes exactly when a chain of hash-close pairs joins them;
        labels are 0, 1, ... in order of each group's first hash.

    References
    ----------
    .. [1] counterfactual paper, §4.1 (near-copy groups)
    """
    h = np.asarray(hashes, dtype=np.uint64)
    if not len(h):
        return np.zeros(0, np.int64)
    values, inverse = np.unique(h, return_inverse=True)
    label = np.arange(len(values), dtype=np.int64)
    held_a: list[np.ndarray] = []
    held_b: list[np.ndarray] = []
    held = 0

    def fold(label: np.ndarray) -> np.ndarray:
        a, b = label[np.concatenate(held_a)], label[np.concatenate(held_b)]
        m = len(label)
        _, comp = connected_components(coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(m, m)), directed=False)
        return comp[label].astype(np.int64)

    for a, b, _ in distinct_pair_blocks(values, max_bits, block):
        held_a.append(a)
        held_b.append(b)
        held += len(a)
        if held >= block:
            label, held_a, held_b, held = fold(label), [], [], 0
    if held:
        label = fold(label)
    per_hash = label[inverse]
    _, first_seen, numbered = np.unique(per_hash, return_index=True, return_inverse=True)
    rank = np.empty(len(first_seen), np.int64)
    rank[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    return rank[numbered]
