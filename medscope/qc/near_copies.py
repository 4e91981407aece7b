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
from dataclasses import dataclass

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
class PairArrays:
    """Hash-close pairs as columns: ``a``, ``b`` index the ids they were found among (the
    smaller id first), sorted by (id a, id b); ``tier`` indexes ``TIERS``. A pair costs 21
    bytes here instead of a :class:`Pair` (~300 bytes with its float and tuple), so the
    views-build driver can hold every pair of a large cohort."""

    a: np.ndarray  # int64
    b: np.ndarray  # int64
    distance: np.ndarray  # uint8
    correlation: np.ndarray  # float64
    tier: np.ndarray  # int8, index into TIERS

    def __len__(self) -> int:
        return len(self.a)

    def copies(self) -> np.ndarray:
        """Mask of the pairs that are copies (``COPY_TIERS``)."""
        return np.isin(self.tier, [TIERS.index(t) for t in COPY_TIERS])

    def counts_by_tier(self) -> dict[str, int]:
        """Pairs per tier, the tiers that occur only, in ``TIERS`` order."""
        n = np.bincount(self.tier, minlength=len(TIERS)) if len(self) else np.zeros(len(TIERS), int)
        return {t: int(n[k]) for k, t in enumerate(TIERS) if n[k]}


def near_copy_arrays(ids: list[str], hashes: list[int] | np.ndarray, thumbs, *, max_bits: int = MAX_BITS,
                     min_corr: float = NEAR_COPY_CORR) -> PairArrays:
    """Every hash-close pair with its correlation and tier, as :class:`PairArrays` sorted by
    ids. ``thumbs[i]`` is the thumbnail of ``ids[i]`` (a list, or one n × 64 × 64 array).

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

    Returns
    -------
    PairArrays
        Every candidate pair, indices into ``ids``, the smaller id first, sorted by ids.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    # candidates come a block at a time from the multi-index search and are confirmed as they
    # come: only the tiered pairs (21 bytes each) are kept, never a second list of candidates
    found: list[tuple[np.ndarray, ...]] = []
    for bi, bj, bd in hamming_search.pair_blocks(np.asarray(hashes, dtype=np.uint64), max_bits):
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
    return PairArrays(a[order], b[order], d[order], corr[order], tier[order])


def find_near_copies(ids: list[str], hashes: list[int], thumbs: list[np.ndarray], *, max_bits: int = MAX_BITS,
                     min_corr: float = NEAR_COPY_CORR) -> list[Pair]:
    """Every hash-close pair with its correlation and tier, sorted by ids.

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
    p = near_copy_arrays(ids, hashes, thumbs, max_bits=max_bits, min_corr=min_corr)
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


def crosswalk(sets: dict[str, list[dict]], protect: tuple[str, ...] | list[str] = ("test",),
              max_bits: int = MAX_BITS) -> dict:
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

    Parameters
    ----------
    sets : dict of str to list of dict
        Set name -> rows as described above.
    protect : tuple or list of str, optional
        Split or set names whose cases are protected.
    max_bits : int, optional
        Largest Hamming distance of a candidate pair.

    Returns
    -------
    dict
        ``images`` (per set), ``files``, ``files_by_set``, ``pairs_by_tier``, ``cross_set_by_tier``,
        ``same_file_in_several_sets``, ``pairs`` (every pair above ``hash_only``, both sides' cases,
        sets and source files, distance, correlation, tier, ``cross_set``), ``to_move``
        (:func:`cases_to_move`), ``unreadable`` (case labels ``<set>:<case_id>``), ``protect`` and
        ``thresholds``.

    References
    ----------
    .. [1] counterfactual paper, §4.1; §3.3 (iii)
    """
    keys: list[str] = []  # distinct files, in first-seen order over sorted sets
    cases_of: dict[str, list[dict]] = {}  # file key -> its cases {label, set, split, source_file}
    hashes, thumbs, unreadable = [], [], []
    images = {}
    for name in sorted(sets):
        images[name] = 0
        for row in sorted(sets[name], key=lambda r: str(r["case_id"])):
            if not row.get("image"):
                continue
            images[name] += 1
            key = file_key(row["image"])
            case = {"label": _label(name, row["case_id"]), "set": name, "split": row.get("split"),
                    "source_file": (row.get("source_file") or "").split("#")[0] or None}
            if key not in cases_of:
                try:
                    image = decode_png(row["image"])
                except Exception:  # a file that cannot be decoded is named, never dropped silently
                    unreadable.append(case["label"])
                    continue
                keys.append(key)
                cases_of[key] = []
                hashes.append(dhash64(image))
                thumbs.append(thumbnail(image))
            cases_of[key].append(case)
    pairs = find_near_copies(keys, hashes, thumbs, max_bits=max_bits)
    index = {k: i for i, k in enumerate(keys)}
    sets_of = {k: sorted({c["set"] for c in cs}) for k, cs in cases_of.items()}

    def side(key: str) -> dict:
        cs = cases_of[key]
        return {"cases": [c["label"] for c in cs], "sets": sets_of[key], "source_file": cs[0]["source_file"]}

    reported = []
    for p in pairs:
        if p.tier == "hash_only":
            continue
        a, b = side(p.a), side(p.b)
        if a["cases"][0] > b["cases"][0]:
            a, b = b, a
        reported.append({"a": a["cases"][0], "b": b["cases"][0], "cases_a": a["cases"], "cases_b": b["cases"],
                         "sets_a": a["sets"], "sets_b": b["sets"], "source_file_a": a["source_file"],
                         "source_file_b": b["source_file"], "distance": p.distance,
                         "correlation": round(p.correlation, 4), "tier": p.tier,
                         "cross_set": a["sets"] != b["sets"] or len(a["sets"]) > 1})
    reported.sort(key=lambda r: (TIERS.index(r["tier"]), r["a"], r["b"]))
    copies = [(index[p.a], index[p.b]) for p in confirmed(pairs)]
    return {
        "images": images,
        "files": len(keys),
        "files_by_set": {n: sum(1 for k in keys if n in sets_of[k]) for n in sorted(sets)},
        "pairs_by_tier": {t: sum(1 for p in pairs if p.tier == t) for t in TIERS},
        "cross_set_by_tier": {t: sum(1 for r in reported if r["cross_set"] and r["tier"] == t) for t in TIERS[:3]},
        "same_file_in_several_sets": [{"file": k[:16], "cases": [c["label"] for c in cases_of[k]], "sets": sets_of[k]}
                                      for k in sorted(keys, key=lambda k: cases_of[k][0]["label"])
                                      if len(sets_of[k]) > 1],
        "pairs": reported,
        "to_move": cases_to_move([cases_of[k] for k in keys], copies, tuple(protect)),
        "unreadable": sorted(unreadable),
        "protect": sorted(protect),
        "thresholds": {"hash_bits": HASH_SIZE * HASH_SIZE, "max_bits": max_bits, "thumbnail_px": THUMB,
                       "near_copy_corr": NEAR_COPY_CORR, "shared_anatomy_corr": SHARED_ANATOMY_CORR,
                       "identical_corr": IDENTICAL_CORR},
    }


def cases_to_move(files: list[list[dict]], copies: list[tuple[int, int]], protect: tuple[str, ...]) -> list[dict]:
    """Every unprotected case in a near-copy group (connected files) that holds a protected case,
    with the protected cases that make it move (§4.1's test protection).

    Parameters
    ----------
    files : list of list of dict
        Per distinct file, its cases ``{label, set, split, source_file}``.
    copies : list of tuple of (int, int)
        Index pairs into ``files`` linked by a copy tier.
    protect : tuple of str
        Split or set names whose cases are protected.

    Returns
    -------
    list of dict
        ``{case, split, because_of}`` per unprotected case to move, sorted by case label;
        ``because_of`` lists the group's protected case labels.

    References
    ----------
    .. [1] counterfactual paper, §4.1
    """
    if not files:
        return []
    n = len(files)
    rows, cols = zip(*copies) if copies else ((), ())
    _, group = connected_components(coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)), directed=False)

    def protected(c: dict) -> bool:
        return c["split"] in protect or c["set"] in protect

    members: dict[int, list[dict]] = {}
    for i, cs in enumerate(files):
        members.setdefault(int(group[i]), []).extend(cs)
    out = []
    for cs in members.values():
        keep = sorted(c["label"] for c in cs if protected(c))
        if keep:
            out += [{"case": c["label"], "split": c["split"], "because_of": keep} for c in cs if not protected(c)]
    return sorted(out, key=lambda r: r["case"])
