"""What each case's views need from the rest of the cohort, fixed before any view is built:
near-copy groups, group splits (seed 000 §3.3, §4.1), the lesion-free image an insertion
goes into and the other-type image a degraded view borrows. All choices are seeded by
case id, so the plan is the same whatever the order or partitioning of the cohort.
"""

from __future__ import annotations

import numpy as np

from medscope.images import decode_png
from medscope.qc import near_copies, splits
from medscope.seeding import rng_for
from medscope.views.recipe import Recipe


def hash_case(image_bytes: bytes) -> tuple[int | None, np.ndarray | None]:
    """(dhash, 64 px thumbnail) of an unedited image; (None, None) when it cannot be read."""
    try:
        image = decode_png(image_bytes)
    except Exception:
        return None, None
    return near_copies.dhash64(image), near_copies.thumbnail(image)


def make_plan(cases: list[dict], hashes: dict[str, tuple[int, np.ndarray]], recipe: Recipe,
              pinned: dict[str, dict] | None = None) -> tuple[dict, dict]:
    """(plan: case_id -> {split, group_id, recipient, donor}, crosswalk report).

    ``cases`` are case rows without pixels (ids, source, imaging type, patient, split,
    has_lesion); ``hashes`` holds the readable ones. ``pinned`` (case_id -> {split,
    group_id}) holds the splits of an earlier build of a cohort that has since grown: they
    never change, and new near-copies of earlier cases join their side (splits.pin_earlier).
    """
    ids = sorted(hashes)
    pairs = near_copies.find_near_copies(ids, [hashes[i][0] for i in ids], [hashes[i][1] for i in ids],
                                       max_bits=recipe.near_copy_bits, min_corr=recipe.near_copy_corr)
    copies = near_copies.confirmed(pairs)
    groups = splits.case_groups(cases, [(p.a, p.b) for p in copies])
    split_of = splits.assign_splits(cases, groups, recipe.seed, recipe.split_fractions)
    conflicts: list[dict] = []
    if pinned:
        split_of, groups, conflicts = splits.pin_earlier(cases, groups, split_of, pinned)
    source_of = {c["case_id"]: c["source"] for c in cases}
    tiers: dict[str, int] = {}
    for p in pairs:
        tiers[p.tier] = tiers.get(p.tier, 0) + 1
    cross = near_copies.cross_cohort_pairs(pairs, source_of)
    report = {
        "n_hashed": len(ids),
        "pairs_by_tier": tiers,
        "n_groups": len(set(groups.values())),
        "earlier_cases": sum(1 for c in cases if c["case_id"] in (pinned or {})),
        "pinned_split_conflicts": conflicts,
        "split_counts": {s: sum(1 for v in split_of.values() if v == s) for s in splits.SPLITS},
        "cross_cohort_pairs": [
            {"a": p.a, "b": p.b, "source_a": source_of[p.a], "source_b": source_of[p.b], "distance": p.distance,
             "correlation": round(p.correlation, 4), "tier": p.tier}
            for p in cross
        ],
        "near_copy_pairs": [
            {"a": p.a, "b": p.b, "distance": p.distance, "correlation": round(p.correlation, 4), "tier": p.tier}
            for p in pairs
        ],
    }
    # insertion recipients: lesion-free training images of the same imaging type
    negatives: dict[str, list[str]] = {}
    for c in sorted(cases, key=lambda c: c["case_id"]):
        if not c["has_lesion"] and split_of[c["case_id"]] == "train" and c["case_id"] in hashes:
            negatives.setdefault(c["imaging_type"], []).append(c["case_id"])
    # other-type donors: the first readable case of each imaging type
    donors: dict[str, str] = {}
    for c in sorted(cases, key=lambda c: c["case_id"]):
        if c["case_id"] in hashes:
            donors.setdefault(c["imaging_type"], c["case_id"])
    plan = {}
    for c in cases:
        cid = c["case_id"]
        entry = {"split": split_of[cid], "group_id": groups[cid], "recipient": None, "donor": None}
        if c["has_lesion"]:
            pool = negatives.get(c["imaging_type"], [])
            if recipe.insertion and entry["split"] == "train" and pool:
                entry["recipient"] = pool[int(rng_for(recipe.seed, cid, "insertion", "recipient").integers(len(pool)))]
            others = sorted(d for t, d in donors.items() if t != c["imaging_type"])
            if "other_type" in recipe.degradations and others:
                entry["donor"] = others[int(rng_for(recipe.seed, cid, "degraded", "donor").integers(len(others)))]
        plan[cid] = entry
    return plan, report
