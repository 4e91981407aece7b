"""Near-copies of images across sets, splits and cohorts (counterfactual paper §4.1; §3.3 (iii)).

The paper's check, quoted: "every unedited image of every split and cohort is hashed (64-bit
difference hash) and every pair within 8 bits is confirmed by pixel correlation at 64 px, so
that the same image, or the same study re-sized or cropped, is found wherever it occurs";
"the crosswalk hashes files"; "the looser tier (within 8 bits, correlation 0.90–0.97) ...
reflects shared anatomy rather than shared studies". Method: a difference hash (dHash, Krawetz
2013, via ``imagehash``) picks candidate pairs by Hamming distance, found by multi-index hashing
(:mod:`medscope.qc.hamming_search`: the same pairs as comparing every pair, without its n² cost);
the Pearson correlation of 64 × 64 grey thumbnails (area interpolation) confirms them.

One tier vocabulary, used by ``medscope crosswalk``, ``views build``'s near-copy groups and
stage 3's replay exclusions. A pair is two distinct image files whose hashes are within
``MAX_BITS`` bits; its tier, from its correlation ``r`` at 64 px:

- ``near_copy``: ``r >= 0.97`` -- the paper's strict tier, "the same image, or the same study
  re-sized or cropped". Near-copies are what splits and test protection act on.
- ``identical``: the part of ``near_copy`` that is the same picture at 64 px: hash distance 0
  and ``r >= 0.999`` (the paper's one recurring image: "hash distance 0, correlation 1.000").
  ``identical`` pairs are near-copies too (``COPY_TIERS``).
- ``shared_anatomy``: ``0.90 <= r < 0.97`` -- the paper's looser tier; at 64 px it is reached
  by pairs that cannot share a patient, so it is reported and never treated as a copy.
- ``hash_only``: close hashes, ``r < 0.90``; counted only.

Values the paper does not give are marked ``addition:`` where they are set (and listed in
docs/counterfactual.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import cv2
import numpy as np
from PIL import Image
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from medscope.images import decode_png, to_gray
from medscope.qc import hamming_search

THUMB = 64  # §4.1: "confirmed by pixel correlation at 64 px"
HASH_SIZE = 8  # §4.1: "64-bit difference hash" (8 × 8 bits)
MAX_BITS = 8  # §4.1: "every pair within 8 bits"
NEAR_COPY_CORR = 0.97  # §4.1: the same image or study at r >= 0.97 (the looser tier ends at 0.97)
SHARED_ANATOMY_CORR = 0.90  # §4.1: the looser tier, 0.90-0.97, "reflects shared anatomy"
# addition: the paper names no threshold for "the same picture"; its one recurring image had
# distance 0 and correlation 1.000, and 0.999 leaves room for re-encoding noise.
IDENTICAL_CORR = 0.999

# addition: §4.1 confirms every hash-close pair by pixel correlation. A hash-close group (images
# joined by chains of pairs within MAX_BITS) of k images holds up to k(k-1)/2 pairs: 20,000 blank
# or templated images of one hash give 2·10⁸, 2.6 GB as arrays and hours of correlations. A group
# of more than this many images is not paired: it is reported (its size, its members with their
# correlation to a representative) and treated whole as one near-copy group, so a protected
# image in it moves the whole group (conservative: never a leak, possibly more moved). At the cap
# a group costs at most ~500,000 correlations (~20 s).
LARGE_GROUP = 1000

TIERS = ("identical", "near_copy", "shared_anatomy", "hash_only")
COPY_TIERS = ("identical", "near_copy")  # the tiers that are the same image or study


def file_key(png: bytes) -> str:
    """The identity of an image file: SHA-256 of its bytes. Identical bytes are one file, hashed
    once ("the crosswalk hashes files", §4.1). addition: the paper does not say which content
    hash; SHA-256 is the one every other MedScope file identity uses.

    Parameters
    ----------
    png : bytes
        The image file's bytes.

    Returns
    -------
    str
        64 lower-case hex digits.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    return hashlib.sha256(png).hexdigest()


def dhash64(image: np.ndarray) -> int:
    """The 64-bit difference hash of an image as an unsigned int (imagehash, hash_size 8).

    Parameters
    ----------
    image : array_like
        (H, W) gray or (H, W, 3) colour image, uint8; colour is converted to gray.

    Returns
    -------
    int
        The hash in [0, 2**64), the first bit of the 8 x 8 hash most significant.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    .. [2] N. Krawetz, difference hash (dHash), 2013.
    """
    # imported here: the view recipes read this module's thresholds on machines that never hash
    # (the GPU check's bare machine has no imagehash)
    import imagehash

    bits = imagehash.dhash(Image.fromarray(to_gray(np.asarray(image))), hash_size=HASH_SIZE).hash.flatten()
    return int("".join("1" if b else "0" for b in bits), 2)


def thumbnail(image: np.ndarray, size: int = THUMB) -> np.ndarray:
    """A size × size float32 grey thumbnail (area interpolation) for pixel correlation.

    Parameters
    ----------
    image : array_like
        (H, W) gray or (H, W, 3) colour image; colour is converted to gray.
    size : int, optional
        Thumbnail side in pixels.

    Returns
    -------
    numpy.ndarray of float32
        (size, size) grey levels.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    return cv2.resize(to_gray(np.asarray(image)), (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)


def hamming(a: int, b: int) -> int:
    """Hamming distance of two hashes: the number of bits in which they differ.

    Parameters
    ----------
    a, b : int
        Hashes (:func:`dhash64`).

    Returns
    -------
    int
        Differing bits, 0 to 64 for 64-bit hashes.
    """
    return (int(a) ^ int(b)).bit_count()


def pixel_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two thumbnails; two flat thumbnails correlate 1 when equal.

    Parameters
    ----------
    a, b : numpy.ndarray
        Thumbnails of equal size (:func:`thumbnail`).

    Returns
    -------
    float
        Pearson r in [-1, 1]; for a flat thumbnail, 1.0 when both are equal, else 0.0.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    if a.std() == 0 or b.std() == 0:  # addition: Pearson is undefined here; equal flat images are copies
        return 1.0 if np.array_equal(a, b) else 0.0
    return float(np.corrcoef(a, b)[0, 1])


def tier_of(distance: int, correlation: float, near_copy_corr: float = NEAR_COPY_CORR) -> str:
    """The tier of a hash-close pair (see the module docstring). ``near_copy_corr`` is the
    paper's 0.97 unless a views recipe sets its own ``near_copy_corr``.

    Parameters
    ----------
    distance : int
        Hamming distance of the pair's hashes.
    correlation : float
        Pixel correlation of the pair's thumbnails.
    near_copy_corr : float, optional
        Lower bound of the ``near_copy`` tier.

    Returns
    -------
    str
        One of ``TIERS``: ``identical``, ``near_copy``, ``shared_anatomy`` or ``hash_only``.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    if distance == 0 and correlation >= IDENTICAL_CORR:
        return "identical"
    if correlation >= near_copy_corr:
        return "near_copy"
    if correlation >= SHARED_ANATOMY_CORR:
        return "shared_anatomy"
    return "hash_only"


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    distance: int
    correlation: float
    tier: str


# how many hash comparisons one block holds at once (8 bytes each while XORed): 32 MB. Memory
# only: the pairs found, and their order, do not depend on it
COMPARE_BUDGET = 1 << 22


def candidate_arrays(hashes: np.ndarray, max_bits: int = MAX_BITS, block: int | None = None,
                     budget: int = COMPARE_BUDGET) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, distance) arrays, sorted by (i, j), of every i < j with Hamming distance ≤ ``max_bits``,
    by comparing every pair: the reference the crosswalk's search (:func:`close_pairs`,
    multi-index hashing) is tested and benchmarked against (``medscope bench crosswalk``). Its
    time grows with the square of the cohort: 80,000 hashes took 12.6 s, a million would take
    about half an hour.

    Blockwise over the upper triangle: a block of rows against the hashes from its first row
    on, ``block`` rows at a time (default: as many as keep one block within ``budget``
    comparisons). A fixed 2,048-row block against every hash held 2,048 × n uint64s, 105 MB at
    6,400 cases and 16 GB at a million: the views-build driver's largest transient.
    The pairs are kept as integer arrays (13 bytes a pair), not Python tuples (~150 bytes): the
    phantom's alike images give tens of thousands of hash-close pairs at 6,400 cases.

    Parameters
    ----------
    hashes : array_like of uint64
        One hash per image, shape (n,).
    max_bits : int, optional
        Largest Hamming distance kept.
    block : int, optional
        Rows compared per block; None sizes blocks by ``budget``.
    budget : int, optional
        Comparisons per block when ``block`` is None (memory only).

    Returns
    -------
    i : numpy.ndarray of int64
        First index of each pair.
    j : numpy.ndarray of int64
        Second index, ``j > i``.
    distance : numpy.ndarray of uint8
        Hamming distance of each pair.
    """
    h = np.asarray(hashes, dtype=np.uint64)
    n = len(h)
    found_i, found_j, found_d = [], [], []
    start = 0
    while start < n:
        rows_n = block or max(1, min(2048, budget // max(1, n - start)))
        rows, cols = h[start : start + rows_n], h[start:]
        dist = np.bitwise_count(rows[:, None] ^ cols[None, :])
        ii, jj = np.nonzero(dist <= max_bits)
        keep = jj > ii  # the upper triangle: each pair once, no self-pairs
        ii, jj = ii[keep], jj[keep]
        found_d.append(dist[ii, jj].astype(np.uint8))
        found_i.append(ii.astype(np.int64) + start)
        found_j.append(jj.astype(np.int64) + start)
        start += rows_n
    if not found_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8)
    i, j, d = np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_d)
    order = np.lexsort((j, i))
    return i[order], j[order], d[order]


def close_pairs(hashes: np.ndarray, max_bits: int = MAX_BITS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, distance) arrays, sorted by (i, j), of every i < j with Hamming distance ≤ ``max_bits``:
    the same pairs as :func:`candidate_arrays`, found by multi-index hashing
    (:mod:`medscope.qc.hamming_search`), in time near-linear in the cohort for hashes that are not
    close (a million random hashes: ~10 s instead of ~30 min; docs/scaling.md).

    Parameters
    ----------
    hashes : array_like of uint64
        One hash per image, shape (n,).
    max_bits : int, optional
        Largest Hamming distance kept.

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
    return hamming_search.pairs(np.asarray(hashes, dtype=np.uint64), max_bits)


def candidate_pairs(hashes: np.ndarray, max_bits: int = MAX_BITS, block: int | None = None,
                    budget: int = COMPARE_BUDGET) -> list[tuple[int, int, int]]:
    """:func:`candidate_arrays` as a sorted list of (i, j, distance) tuples.

    Parameters
    ----------
    hashes : array_like of uint64
        One hash per image, shape (n,).
    max_bits : int, optional
        Largest Hamming distance kept.
    block : int, optional
        Rows compared per block; None sizes blocks by ``budget``.
    budget : int, optional
        Comparisons per block when ``block`` is None.

    Returns
    -------
    list of tuple of (int, int, int)
        ``(i, j, distance)`` with ``i < j``, sorted.
    """
    i, j, d = candidate_arrays(hashes, max_bits, block, budget)
    return list(zip(i.tolist(), j.tolist(), d.tolist()))


@dataclass
class LargeGroups:
    """Hash-close groups of more than ``LARGE_GROUP`` images, found without making their pairs
    (``hamming_search.hash_groups``). Per member (indices into the ids searched, sorted by group,
    then by id): its ``group`` (0, 1, ... in order of the groups' representatives), and its hash
    ``distance`` and thumbnail ``correlation`` to the group's ``representative`` (its smallest
    id; distance 0 and correlation 1 for the representative itself)."""

    member: np.ndarray  # int64, index into ids
    group: np.ndarray  # int64, per member
    distance: np.ndarray  # uint8, per member: bits from the representative's hash
    correlation: np.ndarray  # float64, per member: to the representative's thumbnail
    representative: np.ndarray  # int64, per group: index into ids

    @classmethod
    def none(cls) -> LargeGroups:
        """No large group."""
        z = np.zeros(0, np.int64)
        return cls(z, z.copy(), np.zeros(0, np.uint8), np.zeros(0, np.float64), z.copy())

    def __len__(self) -> int:
        return len(self.representative)

    def sizes(self) -> np.ndarray:
        """Members per group, in group order."""
        return np.bincount(self.group, minlength=len(self)).astype(np.int64)

    def spans(self) -> list[slice]:
        """Per group, the slice of the member arrays that holds it (members are sorted by group)."""
        ends = np.cumsum(self.sizes()).tolist()
        return [slice(e - k, e) for e, k in zip(ends, self.sizes().tolist())]

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(member, representative) index arrays, one per member other than the representative:
        a star that joins each group into one near-copy group with as many edges as members."""
        rep = self.representative[self.group]
        keep = self.member != rep
        return self.member[keep], rep[keep]


@dataclass
class PairArrays:
    """Hash-close pairs as columns: ``a``, ``b`` index the ids they were found among (the
    smaller id first), sorted by (id a, id b); ``tier`` indexes ``TIERS``. A pair costs 21
    bytes here instead of a :class:`Pair` (~300 bytes with its float and tuple), so the
    views-build driver can hold every pair of a large cohort. ``large`` holds the hash-close
    groups too large to pair (:class:`LargeGroups`); no pair has a side in one of them."""

    a: np.ndarray  # int64
    b: np.ndarray  # int64
    distance: np.ndarray  # uint8
    correlation: np.ndarray  # float64
    tier: np.ndarray  # int8, index into TIERS
    large: LargeGroups = field(default_factory=LargeGroups.none)

    def __len__(self) -> int:
        return len(self.a)

    def copies(self) -> np.ndarray:
        """Mask of the pairs that are copies (``COPY_TIERS``)."""
        return np.isin(self.tier, [TIERS.index(t) for t in COPY_TIERS])

    def copy_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) index arrays of what joins near-copy groups: the copy pairs, and a star per
        large group (:meth:`LargeGroups.edges`)."""
        mask = self.copies()
        ga, gb = self.large.edges()
        return np.concatenate([self.a[mask], ga]), np.concatenate([self.b[mask], gb])

    def counts_by_tier(self) -> dict[str, int]:
        """Pairs per tier, the tiers that occur only, in ``TIERS`` order."""
        n = np.bincount(self.tier, minlength=len(TIERS)) if len(self) else np.zeros(len(TIERS), int)
        return {t: int(n[k]) for k, t in enumerate(TIERS) if n[k]}


def large_groups(ids: list[str], hashes: np.ndarray, thumbs, *, max_bits: int = MAX_BITS,
                 large_group: int | None = None) -> LargeGroups:
    """The hash-close groups of more than ``large_group`` images, each with a representative (its
    smallest id) and every member's hash distance and thumbnail correlation to it; no pair of
    members is made (``hamming_search.hash_groups``: memory is the cohort plus one block).

    Parameters
    ----------
    ids : list of str
        One id per image.
    hashes : numpy.ndarray of uint64
        ``hashes[i]`` is the hash of ``ids[i]``.
    thumbs : sequence of numpy.ndarray
        ``thumbs[i]`` is the thumbnail of ``ids[i]``; read only for the large groups' members.
    max_bits : int, optional
        Largest Hamming distance joining two images.
    large_group : int or None, optional
        A group of more images than this is large; None: ``LARGE_GROUP`` (an addition).

    Returns
    -------
    LargeGroups
        The large groups; none when the cohort holds ``large_group`` images or fewer.

    References
    ----------
    .. [1] counterfactual paper, §4.1 (near-copy groups)
    """
    h = np.asarray(hashes, dtype=np.uint64)
    large_group = LARGE_GROUP if large_group is None else large_group
    if len(h) <= large_group:  # no group can be larger than the cohort: the search is skipped
        return LargeGroups.none()
    label = hamming_search.hash_groups(h, max_bits)
    sizes = np.bincount(label)
    big = np.flatnonzero(sizes > large_group)
    if not len(big):
        return LargeGroups.none()
    rank = np.empty(len(ids), np.int64)
    rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    member = np.flatnonzero(np.isin(label, big))
    first_rank = np.full(len(sizes), len(ids), np.int64)  # per group: the rank of its smallest id
    np.minimum.at(first_rank, label[member], rank[member])
    key = first_rank[label[member]]
    member = member[np.lexsort((rank[member], key))]  # by group (its smallest id), then by id
    _, starts, group = np.unique(first_rank[label[member]], return_index=True, return_inverse=True)
    representative = member[starts]
    rep = representative[group]
    distance = np.bitwise_count(h[member] ^ h[rep]).astype(np.uint8)
    correlation = np.array([pixel_correlation(thumbs[m], thumbs[r]) for m, r in zip(member.tolist(), rep.tolist())],
                           dtype=np.float64)
    return LargeGroups(member.astype(np.int64), group.astype(np.int64), distance, correlation,
                       representative.astype(np.int64))


def near_copy_arrays(ids: list[str], hashes: list[int] | np.ndarray, thumbs, *, max_bits: int = MAX_BITS,
                     min_corr: float = NEAR_COPY_CORR, large_group: int | None = None) -> PairArrays:
    """Every hash-close pair with its correlation and tier, as :class:`PairArrays` sorted by
    ids, except the pairs inside a hash-close group of more than ``large_group`` images: such a
    group is found without its pairs and reported whole (:func:`large_groups`, in ``large``).
    ``thumbs[i]`` is the thumbnail of ``ids[i]`` (a list, or one n × 64 × 64 array).

    Parameters
    ----------
    ids : list of str
        One id per image.
    hashes : list of int or numpy.ndarray
        ``hashes[i]`` is the hash of ``ids[i]``.
    thumbs : list of numpy.ndarray or numpy.ndarray
        ``thumbs[i]`` is the thumbnail of ``ids[i]``.
    max_bits : int, optional
        Largest Hamming distance of a candidate pair.
    min_corr : float, optional
        Lower bound of the ``near_copy`` tier (:func:`tier_of`).
    large_group : int or None, optional
        A hash-close group of more images than this is not paired; None: ``LARGE_GROUP`` (an addition).

    Returns
    -------
    PairArrays
        Every candidate pair outside the large groups, indices into ``ids``, the smaller id first,
        sorted by ids; the large groups in ``large``.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    h = np.asarray(hashes, dtype=np.uint64)
    large = large_groups(ids, h, thumbs, max_bits=max_bits, large_group=large_group)
    # a pair is always within one hash-close group, so leaving the large groups' members out of
    # the search leaves out exactly their pairs
    searched = np.arange(len(h), dtype=np.int64)
    if len(large):
        searched = np.setdiff1d(searched, large.member, assume_unique=True)
    # candidates come a block at a time from the multi-index search and are confirmed as they
    # come: only the tiered pairs (21 bytes each) are kept, never a second list of candidates
    found: list[tuple[np.ndarray, ...]] = []
    for bi, bj, bd in hamming_search.pair_blocks(h[searched], max_bits):
        bi, bj = searched[bi], searched[bj]
        corr = np.array([pixel_correlation(thumbs[x], thumbs[y]) for x, y in zip(bi.tolist(), bj.tolist())],
                        dtype=np.float64)
        tier = np.array([TIERS.index(tier_of(dd, c, min_corr)) for dd, c in zip(bd.tolist(), corr.tolist())],
                        dtype=np.int8)
        found.append((bi, bj, bd, corr, tier))
    if found:
        i, j, d, corr, tier = (np.concatenate(c) for c in zip(*found))
    else:
        i, j, d, corr, tier = (np.zeros(0, t) for t in (np.int64, np.int64, np.uint8, np.float64, np.int8))
    # the smaller id first, then sorted by (a, b) as ids sort
    rank = np.empty(len(ids), np.int64)
    rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    swap = rank[i] > rank[j]
    a, b = np.where(swap, j, i), np.where(swap, i, j)
    order = np.lexsort((rank[b], rank[a]))
    return PairArrays(a[order], b[order], d[order], corr[order], tier[order], large)


def find_near_copies(ids: list[str], hashes: list[int], thumbs: list[np.ndarray], *, max_bits: int = MAX_BITS,
                     min_corr: float = NEAR_COPY_CORR) -> list[Pair]:
    """Every hash-close pair with its correlation and tier, sorted by ids: every pair, large
    groups included (one Python object a pair: for small sets; the verbs use
    :func:`near_copy_arrays`).

    Parameters
    ----------
    ids : list of str
        One id per image.
    hashes : list of int
        ``hashes[i]`` is the hash of ``ids[i]``.
    thumbs : list of numpy.ndarray
        ``thumbs[i]`` is the thumbnail of ``ids[i]``.
    max_bits : int, optional
        Largest Hamming distance of a candidate pair.
    min_corr : float, optional
        Lower bound of the ``near_copy`` tier.

    Returns
    -------
    list of Pair
        One per candidate pair (``hash_only`` included), the smaller id as ``a``.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    p = near_copy_arrays(ids, hashes, thumbs, max_bits=max_bits, min_corr=min_corr, large_group=len(ids))
    return [Pair(ids[a], ids[b], d, c, TIERS[t])
            for a, b, d, c, t in zip(p.a.tolist(), p.b.tolist(), p.distance.tolist(), p.correlation.tolist(),
                                     p.tier.tolist())]


def confirmed(pairs: list[Pair]) -> list[Pair]:
    """The pairs that are copies (identical or near_copy).

    Parameters
    ----------
    pairs : list of Pair
        Tiered pairs (:func:`find_near_copies`).

    Returns
    -------
    list of Pair
        Those whose tier is in ``COPY_TIERS``, in their order.
    """
    return [p for p in pairs if p.tier in COPY_TIERS]


def cross_cohort_pairs(pairs: list[Pair], source_of: dict[str, str]) -> list[Pair]:
    """Confirmed pairs whose two images come from different sources (the §4.1 report).

    Parameters
    ----------
    pairs : list of Pair
        Tiered pairs over case ids.
    source_of : dict of str to str
        case id -> source name.

    Returns
    -------
    list of Pair
        The confirmed pairs whose two ids have different sources.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    return [p for p in confirmed(pairs) if source_of.get(p.a) != source_of.get(p.b)]


def _label(set_name: str, case_id: str) -> str:
    return f"{set_name}:{case_id}"


class _Thumbnails:
    """file key -> (hash, thumbnail) in memory: what :class:`CrosswalkFiles` keeps by default
    (a ``views.stream.HashStore`` keeps the thumbnails in a scratch file instead)."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[int, np.ndarray]] = {}

    def add(self, key: str, dhash: int, thumb: np.ndarray) -> None:
        self._items[key] = (dhash, thumb)

    def __getitem__(self, key: str) -> tuple[int, np.ndarray]:
        return self._items[key]

    def hash_array(self, keys: list[str]) -> np.ndarray:
        return np.array([self._items[k][0] for k in keys], np.uint64)


class CrosswalkFiles:
    """The crosswalk's distinct files, filled one image at a time (:meth:`add`) and reported once
    (:meth:`report`): per file its hash, its thumbnail (in ``store``) and its cases; no image's
    bytes are kept, so a caller that reads its tables in batches holds one batch of pixels.

    Parameters
    ----------
    store : object, optional
        Where hashes and thumbnails are kept: ``add(key, dhash, thumb)``, ``[key] -> (dhash,
        thumb)`` and ``hash_array(keys)``; default in memory (16 KB a file).
    """

    def __init__(self, store=None) -> None:
        self.store = store if store is not None else _Thumbnails()
        self.cases_of: dict[str, list[dict]] = {}  # file key -> its cases {label, set, split, source_file}
        self.images: dict[str, int] = {}
        self.unreadable: list[str] = []

    def add_set(self, name: str) -> None:
        """Name a set, so that it is counted (0 images) even when none of its rows has an image."""
        self.images.setdefault(name, 0)

    def add(self, name: str, row: dict) -> None:
        """One row ``{case_id, image (PNG bytes), split (optional), source_file (optional)}`` of
        set ``name``: a file seen before only gains a case; a new file is decoded, hashed and
        thumbnailed; a file that cannot be decoded is named in ``unreadable``, never dropped
        silently; a row without an image is not counted."""
        self.add_set(name)
        if not row.get("image"):
            return
        self.images[name] += 1
        key = file_key(row["image"])
        case = {"label": _label(name, row["case_id"]), "set": name, "split": row.get("split"),
                "source_file": (row.get("source_file") or "").split("#")[0] or None}
        if key not in self.cases_of:
            try:
                image = decode_png(row["image"])
            except Exception:
                self.unreadable.append(case["label"])
                return
            self.store.add(key, dhash64(image), thumbnail(image))
            self.cases_of[key] = []
        self.cases_of[key].append(case)

    def report(self, protect: tuple[str, ...] | list[str] = ("test",), max_bits: int = MAX_BITS,
               large_group: int | None = None) -> dict:
        """The crosswalk report of the files added (:func:`crosswalk` describes it)."""
        return _report(self, tuple(protect), max_bits, LARGE_GROUP if large_group is None else large_group)


def crosswalk(sets: dict[str, list[dict]], protect: tuple[str, ...] | list[str] = ("test",),
              max_bits: int = MAX_BITS, large_group: int | None = None) -> dict:
    """§4.1 over named sets of unedited images: every file hashed once, every hash-close pair of
    files tiered, and the cases to move off the protected images' near-copy groups.

    ``sets`` maps a set name (a cohort, a split, a test set) to rows ``{case_id, image (PNG
    bytes), split (optional), source_file (optional)}``. A case is protected when its split or
    its set's name is in ``protect``. The paper's test protection (§4.1: "every existing test
    image, with its near-copies ... every patient or near-copy group holding one was removed
    from all v4 splits"): files linked by ``COPY_TIERS`` pairs form near-copy groups (connected
    components; one file holds every case stored with its bytes), and every unprotected case in
    a group holding a protected case is listed in ``to_move``. Patients are not grouped here:
    identifiers do not cross datasets (§4.1); ``views build`` groups them within a cohort.
    A hash-close group of more than ``large_group`` files is not paired: it is listed in
    ``large_groups`` and is one near-copy group (:func:`near_copy_arrays`).
    Rows are taken from lists here; :class:`CrosswalkFiles` takes them one at a time.

    Parameters
    ----------
    sets : dict of str to list of dict
        Set name -> rows as described above.
    protect : tuple or list of str, optional
        Split or set names whose cases are protected.
    max_bits : int, optional
        Largest Hamming distance of a candidate pair.
    large_group : int or None, optional
        A hash-close group of more files than this is reported whole, not paired; None: ``LARGE_GROUP``.

    Returns
    -------
    dict
        ``images`` (per set), ``files``, ``files_by_set``, ``pairs_by_tier``, ``cross_set_by_tier``,
        ``same_file_in_several_sets``, ``pairs`` (every pair above ``hash_only``, both sides' cases,
        sets and source files, distance, correlation, tier, ``cross_set``), ``large_groups`` (per
        group: ``representative``, ``files``, ``images``, ``sets``, ``protected``, ``members`` with
        each file's cases, distance and correlation to the representative), ``to_move``
        (:func:`cases_to_move`), ``unreadable`` (case labels ``<set>:<case_id>``), ``protect`` and
        ``thresholds``.

    References
    ----------
    .. [1] counterfactual paper, §4.1; §3.3 (iii)
    """
    files = CrosswalkFiles()
    for name in sorted(sets):
        files.add_set(name)
        for row in sets[name]:
            files.add(name, row)
    return files.report(protect, max_bits, large_group)


def _report(files: CrosswalkFiles, protect: tuple[str, ...], max_bits: int, large_group: int) -> dict:
    cases_of = files.cases_of
    for cs in cases_of.values():  # the same order whatever order the rows came in
        cs.sort(key=lambda c: (c["set"], c["label"]))
    names = sorted(files.images)
    # distinct files in the order of their first case (sets sorted, then labels)
    keys = sorted(cases_of, key=lambda k: (cases_of[k][0]["set"], cases_of[k][0]["label"]))
    ids = sorted(keys, key=lambda k: cases_of[k][0]["label"])
    # searched by each file's first case label, so that a large group's representative is its
    # first case, not the file whose SHA-256 sorts first
    found = near_copy_arrays([cases_of[k][0]["label"] for k in ids], files.store.hash_array(ids),
                             _StoreThumbs(files.store, ids), max_bits=max_bits, large_group=large_group)
    sets_of = {k: sorted({c["set"] for c in cs}) for k, cs in cases_of.items()}

    def side(key: str) -> dict:
        cs = cases_of[key]
        return {"cases": [c["label"] for c in cs], "sets": sets_of[key], "source_file": cs[0]["source_file"]}

    reported = []
    for a_i, b_i, d, r, t in zip(found.a.tolist(), found.b.tolist(), found.distance.tolist(),
                                 found.correlation.tolist(), found.tier.tolist()):
        if TIERS[t] == "hash_only":
            continue
        a, b = side(ids[a_i]), side(ids[b_i])
        if a["cases"][0] > b["cases"][0]:
            a, b = b, a
        reported.append({"a": a["cases"][0], "b": b["cases"][0], "cases_a": a["cases"], "cases_b": b["cases"],
                         "sets_a": a["sets"], "sets_b": b["sets"], "source_file_a": a["source_file"],
                         "source_file_b": b["source_file"], "distance": d,
                         "correlation": round(r, 4), "tier": TIERS[t],
                         "cross_set": a["sets"] != b["sets"] or len(a["sets"]) > 1})
    reported.sort(key=lambda r: (TIERS.index(r["tier"]), r["a"], r["b"]))
    by_tier = found.counts_by_tier()
    files_list = [cases_of[k] for k in ids]
    ea, eb = found.copy_edges()
    large = found.large
    groups = []
    for g, at in enumerate(large.spans()):
        members = [{"cases": side(ids[m])["cases"], "distance": int(d), "correlation": round(float(r), 4)}
                   for m, d, r in zip(large.member[at].tolist(), large.distance[at].tolist(),
                                      large.correlation[at].tolist())]
        member_cases = [c for m in large.member[at].tolist() for c in cases_of[ids[m]]]
        groups.append({"representative": side(ids[int(large.representative[g])])["cases"][0],
                       "files": at.stop - at.start,
                       "images": len(member_cases), "sets": sorted({c["set"] for c in member_cases}),
                       "protected": sum(_protected(c, protect) for c in member_cases),
                       "members": sorted(members, key=lambda m: m["cases"][0])})
    groups.sort(key=lambda g: g["representative"])
    rep_label = [side(ids[r])["cases"][0] for r in large.representative.tolist()]
    in_large = {m: rep_label[g] for m, g in zip(large.member.tolist(), large.group.tolist())}
    return {
        "images": {n: files.images[n] for n in names},
        "files": len(keys),
        "files_by_set": {n: sum(1 for k in keys if n in sets_of[k]) for n in names},
        "pairs_by_tier": {t: by_tier.get(t, 0) for t in TIERS},
        "cross_set_by_tier": {t: sum(1 for r in reported if r["cross_set"] and r["tier"] == t) for t in TIERS[:3]},
        "same_file_in_several_sets": [{"file": k[:16], "cases": [c["label"] for c in cases_of[k]], "sets": sets_of[k]}
                                      for k in sorted(keys, key=lambda k: cases_of[k][0]["label"])
                                      if len(sets_of[k]) > 1],
        "pairs": reported,
        "large_groups": groups,
        "to_move": cases_to_move(files_list, list(zip(ea.tolist(), eb.tolist())), protect, in_large),
        "unreadable": sorted(files.unreadable),
        "protect": sorted(protect),
        "thresholds": {"hash_bits": HASH_SIZE * HASH_SIZE, "max_bits": max_bits, "thumbnail_px": THUMB,
                       "near_copy_corr": NEAR_COPY_CORR, "shared_anatomy_corr": SHARED_ANATOMY_CORR,
                       "identical_corr": IDENTICAL_CORR, "large_group": large_group},
    }


class _StoreThumbs:
    """``thumbs[i]``: the thumbnail of ``ids[i]`` from a store, read when asked for."""

    def __init__(self, store, ids: list[str]) -> None:
        self.store, self.ids = store, ids

    def __getitem__(self, i: int) -> np.ndarray:
        return self.store[self.ids[i]][1]


def _protected(case: dict, protect: tuple[str, ...]) -> bool:
    return case["split"] in protect or case["set"] in protect


# a moving case of a large group names this many of its group's protected cases (the group may
# hold thousands); the count is beside them
BECAUSE_OF_SHOWN = 10


def cases_to_move(files: list[list[dict]], copies: list[tuple[int, int]], protect: tuple[str, ...],
                  large_group_of: dict[int, str] | None = None) -> list[dict]:
    """Every unprotected case in a near-copy group (connected files) that holds a protected case,
    with the protected cases that make it move (§4.1's test protection).

    Parameters
    ----------
    files : list of list of dict
        Per distinct file, its cases ``{label, set, split, source_file}``.
    copies : list of tuple of (int, int)
        Index pairs into ``files`` linked by a copy tier (and the stars of large groups,
        :meth:`PairArrays.copy_edges`).
    protect : tuple of str
        Split or set names whose cases are protected.
    large_group_of : dict of int to str, optional
        File index -> its large hash-close group's representative, for the files of groups too
        large to pair (:func:`large_groups`).

    Returns
    -------
    list of dict
        ``{case, split, because_of}`` per unprotected case to move, sorted by case label;
        ``because_of`` lists the group's protected case labels. A case of a large group also
        carries ``large_group`` (its representative) and ``protected_in_group`` (how many), and
        ``because_of`` names the first ``BECAUSE_OF_SHOWN`` of them only.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    if not files:
        return []
    n = len(files)
    large_group_of = large_group_of or {}
    rows, cols = zip(*copies) if copies else ((), ())
    _, group = connected_components(coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)), directed=False)
    members: dict[int, list[dict]] = {}
    large_rep: dict[int, str] = {}
    for i, cs in enumerate(files):
        members.setdefault(int(group[i]), []).extend(cs)
        if i in large_group_of:
            large_rep[int(group[i])] = large_group_of[i]
    out = []
    for g, cs in members.items():
        keep = sorted(c["label"] for c in cs if _protected(c, protect))
        if not keep:
            continue
        moving = [c for c in cs if not _protected(c, protect)]
        if g in large_rep:
            extra = {"large_group": large_rep[g], "protected_in_group": len(keep)}
            out += [{"case": c["label"], "split": c["split"], "because_of": keep[:BECAUSE_OF_SHOWN], **extra}
                    for c in moving]
        else:
            out += [{"case": c["label"], "split": c["split"], "because_of": keep} for c in moving]
    return sorted(out, key=lambda r: r["case"])
