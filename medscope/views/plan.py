"""What each case's views need from the rest of the cohort, fixed before any view is built:
near-copy groups, group splits (counterfactual paper §3.3, §4.1), the lesion-free image an insertion
goes into and the other-type image a degraded view borrows. All choices are seeded by
case id, so the plan is the same whatever the order or partitioning of the cohort.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from medscope.images import decode_png
from medscope.qc import near_copies, splits
from medscope.seeding import rng_for
from medscope.views.recipe import Recipe


def hash_case(image_bytes: bytes) -> tuple[int | None, np.ndarray | None]:
    """(dhash, 64 px thumbnail) of an unedited image; (None, None) when it cannot be read.

    Parameters
    ----------
    image_bytes : bytes
        The case's PNG image.

    Returns
    -------
    dhash : int or None
        64-bit difference hash (``near_copies.dhash64``).
    thumbnail : numpy.ndarray or None
        float32 grey thumbnail (``near_copies.thumbnail``).
    """
    try:
        image = decode_png(image_bytes)
    except Exception:
        return None, None
    return near_copies.dhash64(image), near_copies.thumbnail(image)


class _Lazy:
    """``seq[k]`` computed when asked for."""

    def __init__(self, get):
        self.get = get

    def __getitem__(self, k: int):
        return self.get(k)


def make_plan(cases: list[dict], hashes: dict[str, tuple[int, np.ndarray]], recipe: Recipe,
              pinned: dict[str, dict] | None = None,
              large_group: int | None = None) -> tuple[dict, dict, pa.Table, pa.Table]:
    """(plan: case_id -> {split, group_id, recipient, donor}, crosswalk report, near-copy pairs,
    large hash-close groups).

    ``cases`` are case rows without pixels (ids, source, imaging type, patient, split,
    has_lesion); ``hashes`` holds the readable ones. ``pinned`` (case_id -> {split,
    group_id}) holds the splits of an earlier build of a cohort that has since grown: they
    never change, and new near-copies of earlier cases join their side (splits.pin_earlier).

    The pairs are a ``near_copy_pairs`` table (every hash-close pair, any tier, sorted by
    ``a``, ``b``), not a list in the report: alike images give a number of pairs that grows
    with the square of the cohort, too many for Python objects and JSON. A hash-close group of
    more than ``large_group`` cases is not paired (``near_copies.near_copy_arrays``): it is one
    near-copy group (so one split, the most protected of its members'), summarised in the
    report's ``large_hash_groups`` and listed member by member in the ``near_copy_groups`` table.

    Parameters
    ----------
    cases : list of dict
        Case rows without pixels: ``case_id``, ``source``, ``imaging_type``, ``patient_id``, ``split``,
        ``has_lesion``.
    hashes : dict of str to tuple
        case_id -> (dhash, thumbnail) of the readable cases, as from `hash_case`.
    recipe : Recipe
        Supplies the seed, split fractions, near-copy thresholds, ``insertion`` and ``degradations``.
    pinned : dict of str to dict or None, optional
        case_id -> {split, group_id} of an earlier build's cases, kept as they were.
    large_group : int or None, optional
        A hash-close group of more cases than this is not paired; None: ``near_copies.LARGE_GROUP``.

    Returns
    -------
    plan : dict
        case_id -> {"split", "group_id", "recipient", "donor"} (recipient and donor a case_id or None).
    report : dict
        Hash and near-copy counts, split counts, pinned-split conflicts and cross-cohort pairs.
    pairs : pyarrow.Table
        The ``near_copy_pairs`` table (see `pair_table`).
    groups : pyarrow.Table
        The ``near_copy_groups`` table (see `group_table`); empty when no group is that large.

    References
    ----------
    .. [1] Counterfactual paper, §3.3 and §4.1.
    """
    ids = sorted(hashes)
    large_group = near_copies.LARGE_GROUP if large_group is None else large_group
    # thumbnails are fetched per hash-close pair (a staged cohort keeps them on local disk)
    thumbs = _Lazy(lambda k: hashes[ids[k]][1])
    # a staged cohort's store hands out every hash without reading a thumbnail (4 GB at a million)
    hash_array = getattr(hashes, "hash_array", None)
    values = hash_array(ids) if hash_array else np.array([hashes[i][0] for i in ids], np.uint64)
    found = near_copies.near_copy_arrays(ids, values, thumbs, max_bits=recipe.near_copy_bits,
                                         min_corr=recipe.near_copy_corr, large_group=large_group)
    # the copies are few (the tiers splits act on): as Pair objects, for the shared helpers
    copies = [near_copies.Pair(ids[found.a[k]], ids[found.b[k]], int(found.distance[k]), float(found.correlation[k]),
                               near_copies.TIERS[found.tier[k]]) for k in np.flatnonzero(found.copies()).tolist()]
    # a large group joins as a star on its representative: as many links as members, not pairs
    star_a, star_b = found.large.edges()
    groups = splits.case_groups(cases, [(p.a, p.b) for p in copies] +
                                [(ids[x], ids[y]) for x, y in zip(star_a.tolist(), star_b.tolist())])
    split_of = splits.assign_splits(cases, groups, recipe.seed, recipe.split_fractions)
    conflicts: list[dict] = []
    if pinned:
        split_of, groups, conflicts = splits.pin_earlier(cases, groups, split_of, pinned)
    source_of = {c["case_id"]: c["source"] for c in cases}
    cross = near_copies.cross_cohort_pairs(copies, source_of)
    report = {
        "n_hashed": len(ids),
        "pairs_by_tier": found.counts_by_tier(),
        "n_groups": len(set(groups.values())),
        "earlier_cases": sum(1 for c in cases if c["case_id"] in (pinned or {})),
        "pinned_split_conflicts": conflicts,
        "split_counts": {s: sum(1 for v in split_of.values() if v == s) for s in splits.SPLITS},
        "cross_cohort_pairs": [
            {"a": p.a, "b": p.b, "source_a": source_of[p.a], "source_b": source_of[p.b], "distance": p.distance,
             "correlation": round(p.correlation, 4), "tier": p.tier}
            for p in cross
        ],
        "n_near_copy_pairs": len(found),
        "large_group_cap": large_group,
        "large_hash_groups": large_group_summary(ids, found.large, source_of, split_of),
    }
    del source_of
    pairs = pair_table(ids, found)
    large = group_table(ids, found.large)
    del found
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
    return plan, report, pairs, large


def large_group_summary(ids: list[str], large: near_copies.LargeGroups, source_of: dict[str, str],
                        split_of: dict[str, str]) -> list[dict]:
    """One line of the report per large hash-close group: its representative, size, sources,
    split, and how closely its members resemble the representative.

    Parameters
    ----------
    ids : list of str
        The hashed case ids, sorted; ``large`` indexes into it.
    large : near_copies.LargeGroups
        The groups too large to pair.
    source_of : dict of str to str
        case_id -> source.
    split_of : dict of str to str
        case_id -> the split the plan gave it.

    Returns
    -------
    list of dict
        ``{representative, cases, sources (cases per source), split, near_copies_of_representative
        (members at correlation >= the near-copy tier's bound, the representative included),
        min_correlation}`` per group, in group order.
    """
    out = []
    for g, at in enumerate(large.spans()):
        members = [ids[m] for m in large.member[at].tolist()]
        sources = Counter(source_of[m] for m in members)
        corr = large.correlation[at]
        out.append({"representative": ids[int(large.representative[g])], "cases": len(members),
                    "sources": dict(sorted(sources.items())), "split": split_of[members[0]],
                    "near_copies_of_representative": int((corr >= near_copies.NEAR_COPY_CORR).sum()),
                    "min_correlation": round(float(corr.min()), 4)})
    return out


def group_table(ids: list[str], large: near_copies.LargeGroups) -> pa.Table:
    """The ``near_copy_groups`` table: every member of each hash-close group too large to pair.

    Parameters
    ----------
    ids : list of str
        The hashed case ids, sorted; ``large`` indexes into it.
    large : near_copies.LargeGroups
        The groups too large to pair.

    Returns
    -------
    pyarrow.Table
        Columns ``case_id``, ``group`` (int32, 0, 1, ... in order of the representatives),
        ``group_size`` (int64, cases), ``representative`` (bool: this case is its group's),
        ``distance`` (int32, bits from the representative's hash) and ``correlation`` (to the
        representative's thumbnail); sorted by group, then case id.
    """
    id_array = pa.array(ids, pa.string())
    sizes = large.sizes()
    return pa.table({
        "case_id": id_array.take(pa.array(large.member)), "group": pa.array(large.group.astype(np.int32)),
        "group_size": pa.array(sizes[large.group].astype(np.int64)),
        "representative": pa.array(large.member == large.representative[large.group]),
        "distance": pa.array(large.distance.astype(np.int32)), "correlation": pa.array(large.correlation),
    })


def pair_table(ids: list[str], found: near_copies.PairArrays) -> pa.Table:
    """The ``near_copy_pairs`` table of ``found`` (indices into ``ids``): ids taken from one
    Arrow array, so no Python string is made per pair.

    Parameters
    ----------
    ids : list of str
        The hashed case ids, sorted; ``found`` indexes into it.
    found : near_copies.PairArrays
        Hash-close pairs as arrays (``a``, ``b``, ``distance``, ``correlation``, ``tier``).

    Returns
    -------
    pyarrow.Table
        Columns ``a``, ``b`` (case ids), ``distance`` (int32, bits), ``correlation`` and ``tier`` (str).
    """
    id_array = pa.array(ids, pa.string())
    return pa.table({
        "a": id_array.take(pa.array(found.a)), "b": id_array.take(pa.array(found.b)),
        "distance": pa.array(found.distance.astype(np.int32)), "correlation": pa.array(found.correlation),
        "tier": pa.array(near_copies.TIERS, pa.string()).take(pa.array(found.tier.astype(np.int64))),
    })
