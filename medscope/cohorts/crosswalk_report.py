"""The cross-cohort crosswalk of seed 000 §4.1, over image files rather than cases.

"Every unedited image of every split and cohort is hashed (64-bit difference hash) and every
pair within 8 bits is confirmed by pixel correlation at 64 px"; "the crosswalk hashes files".
Several cases can rest on one file (two SLAKE question-cases, one ChestX-Det film with two
findings): cases whose stored image bytes are identical within a source are one file here, hashed
once. Pairs are put in the paper's two tiers:

- ``same_image``: correlation >= 0.97 -- the same image, or the same study re-sized or cropped;
- ``shared_anatomy``: 0.90 <= correlation < 0.97 -- at 64 px this reflects shared anatomy, not a
  shared study (the paper: ChestX-Det films of different patients reach 0.946);

and lower-correlation hash neighbours are counted only. Test protection: a ``same_image`` pair
one of whose files holds a test case puts every case of the other file that sits in another split
on the ``must_leave`` list (``views build`` applies the same rule through its near-copy groups).
Hashing and correlation are ``medscope.qc.crosswalk``'s, so both reports agree on every number.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np

from medscope.images import decode_png
from medscope.qc import crosswalk as cw

SAME_IMAGE, SHARED_ANATOMY = 0.97, 0.90
MAX_BITS = 8


def tier_of(correlation: float) -> str | None:
    """The paper's tier of a confirmed hash neighbour, None below both."""
    if correlation >= SAME_IMAGE:
        return "same_image"
    if correlation >= SHARED_ANATOMY:
        return "shared_anatomy"
    return None


def image_files(cases: list[dict]) -> list[dict]:
    """One entry per distinct image file: {key, source, source_file, image, case_ids, splits}."""
    files: dict[tuple[str, str], dict] = {}
    for c in sorted(cases, key=lambda c: c["case_id"]):
        key = (c["source"], hashlib.sha1(c["image"]).hexdigest())
        f = files.setdefault(key, {"key": f"{c['source']}:{key[1][:16]}", "source": c["source"],
                                   "source_file": (c.get("source_file") or "").split("#")[0],
                                   "image": c["image"], "case_ids": [], "splits": {}})
        f["case_ids"].append(c["case_id"])
        f["splits"][c["case_id"]] = c.get("split")
    return sorted(files.values(), key=lambda f: f["key"])


def crosswalk(cases: list[dict], max_bits: int = MAX_BITS) -> dict:
    """The §4.1 report of a multi-cohort cases list (rows with ``image`` bytes)."""
    files = image_files(cases)
    hashes, thumbs = [], []
    for f in files:
        img = decode_png(f["image"])
        hashes.append(cw.dhash64(img))
        thumbs.append(cw.thumbnail(img))
    pairs, below = [], 0
    for i, j, d in cw.candidate_pairs(np.array(hashes, dtype=np.uint64), max_bits):
        corr = cw.pixel_correlation(thumbs[i], thumbs[j])
        tier = tier_of(corr)
        if tier is None:
            below += 1
            continue
        a, b = files[i], files[j]
        pairs.append({"a": a["key"], "b": b["key"], "source_a": a["source"], "source_b": b["source"],
                      "file_a": a["source_file"], "file_b": b["source_file"], "distance": d,
                      "correlation": round(corr, 4), "tier": tier, "cross_cohort": a["source"] != b["source"]})
    by_key = {f["key"]: f for f in files}
    must_leave = set()
    for p in pairs:
        if p["tier"] != "same_image":
            continue
        for x, y in ((p["a"], p["b"]), (p["b"], p["a"])):
            if "test" in by_key[x]["splits"].values():
                must_leave |= {cid for cid, s in by_key[y]["splits"].items() if s != "test"}
    tiers = Counter(p["tier"] for p in pairs)
    return {
        "n_cases": len(cases),
        "n_files": len(files),
        "files_by_source": dict(sorted(Counter(f["source"] for f in files).items())),
        "pairs_by_tier": {t: tiers.get(t, 0) for t in ("same_image", "shared_anatomy")},
        "hash_neighbours_below_tiers": below,
        "cross_cohort_by_tier": {t: sum(1 for p in pairs if p["cross_cohort"] and p["tier"] == t)
                                 for t in ("same_image", "shared_anatomy")},
        "pairs": sorted(pairs, key=lambda p: (p["tier"], p["a"], p["b"])),
        "must_leave": sorted(must_leave),
    }
