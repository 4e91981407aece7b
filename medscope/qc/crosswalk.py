"""Near-copy crosswalk (seed 000, §3.3 (iii) and §4.1).

Every unedited image gets a 64-bit difference hash (``imagehash.dhash``); every pair within
``max_bits`` bits is confirmed by the Pearson correlation of 64 × 64 grey thumbnails, so the
same image, or the same study re-sized or re-compressed, is found wherever it occurs.

Tiers of a pair (§4.1): ``identical`` (distance 0, correlation ≥ 0.999), ``near_copy``
(confirmed, the same image or study: correlation ≥ ``min_corr``, 0.97 by default),
``shared_anatomy`` (the paper's looser tier, correlation 0.90 to 0.97: at 64 px this is reached
by pairs that cannot share a patient, so it is reported, never treated as a copy) and
``hash_only`` (close hashes, pixels disagree).

References: perceptual hashing: C. Zauner, "Implementation and benchmarking of perceptual image
hash functions", Master's thesis, Upper Austria University of Applied Sciences, 2010; the
difference hash: N. Krawetz, "Kind of like that", The Hacker Factor Blog, 2013 (as ``imagehash``
implements it).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import imagehash
import numpy as np
from PIL import Image

from medscope.images import to_gray

THUMB = 64
SAME_IMAGE_CORR = 0.97  # §4.1: "same image" at >= 0.97
SHARED_ANATOMY_CORR = 0.90  # §4.1: the looser tier, 0.90-0.97, reflects shared anatomy


def dhash64(image: np.ndarray) -> int:
    """The 64-bit difference hash of an image as an unsigned int (imagehash, hash_size 8)."""
    bits = imagehash.dhash(Image.fromarray(to_gray(np.asarray(image))), hash_size=8).hash.flatten()
    return int("".join("1" if b else "0" for b in bits), 2)


def thumbnail(image: np.ndarray, size: int = THUMB) -> np.ndarray:
    """A size × size float32 grey thumbnail (area interpolation) for pixel correlation."""
    return cv2.resize(to_gray(np.asarray(image)), (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)


def hamming(a: int, b: int) -> int:
    return (int(a) ^ int(b)).bit_count()


def pixel_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two thumbnails; two flat thumbnails correlate 1 when equal."""
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    sa, sb = a.std(), b.std()
    if sa == 0 or sb == 0:
        return 1.0 if np.array_equal(a, b) else 0.0
    return float(np.corrcoef(a, b)[0, 1])


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    distance: int
    correlation: float
    tier: str


def candidate_pairs(hashes: np.ndarray, max_bits: int = 8, block: int = 2048) -> list[tuple[int, int, int]]:
    """(i, j, distance) for i < j with Hamming distance ≤ ``max_bits``, blockwise over uint64."""
    h = np.asarray(hashes, dtype=np.uint64)
    out = []
    for start in range(0, len(h), block):
        rows = h[start : start + block]
        dist = np.bitwise_count(rows[:, None] ^ h[None, :])
        ii, jj = np.nonzero(dist <= max_bits)
        for i, j in zip(ii + start, jj):
            if i < j:
                out.append((int(i), int(j), int(dist[i - start, j])))
    return out


def find_near_copies(ids: list[str], hashes: list[int], thumbs: list[np.ndarray], *, max_bits: int = 8,
                     min_corr: float = SAME_IMAGE_CORR, loose_corr: float = SHARED_ANATOMY_CORR) -> list[Pair]:
    """Every hash-close pair with its correlation and tier, sorted by ids."""
    pairs = []
    for i, j, d in candidate_pairs(np.array(hashes, dtype=np.uint64), max_bits):
        corr = pixel_correlation(thumbs[i], thumbs[j])
        if d == 0 and corr >= 0.999:
            tier = "identical"
        elif corr >= min_corr:
            tier = "near_copy"
        elif corr >= loose_corr:
            tier = "shared_anatomy"
        else:
            tier = "hash_only"
        a, b = sorted((ids[i], ids[j]))
        pairs.append(Pair(a, b, d, corr, tier))
    return sorted(pairs, key=lambda p: (p.a, p.b))


def confirmed(pairs: list[Pair]) -> list[Pair]:
    """The pairs that are copies (identical or near_copy)."""
    return [p for p in pairs if p.tier in ("identical", "near_copy")]


def cross_cohort_pairs(pairs: list[Pair], source_of: dict[str, str]) -> list[Pair]:
    """Confirmed pairs whose two images come from different sources (the §4.1 report)."""
    return [p for p in confirmed(pairs) if source_of.get(p.a) != source_of.get(p.b)]


def crosswalk_sets(sets: dict[str, list[tuple[str, bytes]]], max_bits: int = 8,
                   min_corr: float = SAME_IMAGE_CORR, loose_corr: float = SHARED_ANATOMY_CORR) -> dict:
    """§4.1 across cohorts and splits: every unedited image of every named set, hashed once per
    file (identical bytes are one file), every hash-close pair tiered by pixel correlation.

    ``sets`` maps a set name (a cohort, a split, a test set) to its (image id, PNG bytes).
    Returns counts per set and per tier, and every confirmed or shared-anatomy pair that joins
    two different sets (the pairs that would leak across them).
    """
    import hashlib

    from medscope.images import decode_png

    ids, hashes, thumbs, where = [], [], [], {}
    unreadable: list[str] = []
    for name in sorted(sets):
        for item_id, data in sets[name]:
            key = hashlib.sha256(data).hexdigest()
            if key in where:  # the same file again (e.g. two question-cases on one image)
                where[key][1].add(name)
                continue
            try:
                image = decode_png(data)
            except Exception:
                unreadable.append(f"{name}:{item_id}")
                continue
            where[key] = (f"{name}:{item_id}", {name})
            ids.append(key)
            hashes.append(dhash64(image))
            thumbs.append(thumbnail(image))
    pairs = find_near_copies(ids, hashes, thumbs, max_bits=max_bits, min_corr=min_corr, loose_corr=loose_corr)
    tiers: dict[str, int] = {}
    for p in pairs:
        tiers[p.tier] = tiers.get(p.tier, 0) + 1
    joins = []
    for p in pairs:
        sa, sb = where[p.a][1], where[p.b][1]
        if p.tier != "hash_only" and (sa != sb or len(sa) > 1):
            joins.append({"a": where[p.a][0], "b": where[p.b][0], "sets_a": sorted(sa), "sets_b": sorted(sb),
                          "distance": p.distance, "correlation": round(p.correlation, 4), "tier": p.tier})
    shared_files = [{"file": v[0], "sets": sorted(v[1])} for v in where.values() if len(v[1]) > 1]
    return {"images": {n: len(v) for n, v in sets.items()}, "files": len(ids), "pairs_by_tier": tiers,
            "same_file_in_several_sets": shared_files,
            "cross_set_copies": [j for j in joins if j["tier"] in ("identical", "near_copy")],
            "cross_set_shared_anatomy": [j for j in joins if j["tier"] == "shared_anatomy"],
            "unreadable": unreadable, "thresholds": {"max_bits": max_bits, "same_image_corr": min_corr,
                                                     "shared_anatomy_corr": loose_corr}}
