"""Group splits (counterfactual paper, §3.3 and §4.1): train / validation / test over patients, or over
near-copy groups where patient ids are missing — the union of both relations — seeded and
stable, with test-set protection.
"""

from __future__ import annotations

from collections.abc import Iterable

from medscope.seeding import derive_seed, stable_hash

SPLITS = ("train", "validation", "test")
PROTECT = {"test": 2, "validation": 1, "train": 0}


class UnionFind:
    """Disjoint sets over string keys (path halving, union by size)."""

    def __init__(self, keys: Iterable[str] = ()):
        self.parent: dict[str, str] = {}
        self.size: dict[str, int] = {}
        for k in keys:
            self.add(k)

    def add(self, k: str) -> None:
        if k not in self.parent:
            self.parent[k], self.size[k] = k, 1

    def find(self, k: str) -> str:
        self.add(k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]


def case_groups(cases: list[dict], near_copy_pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """case_id -> group id: cases joined when they share (source, patient_id) or are near-copies.

    Patient ids never cross sources (§4.1: identifiers do not cross datasets); near-copies do.
    The group id is a hash of the group's smallest case id, so it does not depend on order.

    Parameters
    ----------
    cases : list of dict
        Cases rows; ``case_id``, ``source`` and ``patient_id`` (may be None) are read.
    near_copy_pairs : iterable of tuple of (str, str)
        Pairs of case ids found to be near-copies; pairs naming an unknown case are ignored.

    Returns
    -------
    dict of str to str
        case_id -> group id (``g-`` + a 12-character hash).

    References
    ----------
    .. [1] counterfactual paper, §3.3 and §4.1
    """
    uf = UnionFind(c["case_id"] for c in cases)
    first_of_patient: dict[tuple[str, str], str] = {}
    for c in cases:
        pid = c.get("patient_id")
        if pid:
            key = (c["source"], pid)
            if key in first_of_patient:
                uf.union(first_of_patient[key], c["case_id"])
            else:
                first_of_patient[key] = c["case_id"]
    for a, b in near_copy_pairs:
        if a in uf.parent and b in uf.parent:
            uf.union(a, b)
    members: dict[str, list[str]] = {}
    for c in cases:
        members.setdefault(uf.find(c["case_id"]), []).append(c["case_id"])
    out = {}
    for ids in members.values():
        gid = "g-" + stable_hash(min(ids), length=12)
        for i in ids:
            out[i] = gid
    return out


def assign_splits(cases: list[dict], groups: dict[str, str], seed: int,
                  fractions: dict[str, float] | None = None) -> dict[str, str]:
    """case_id -> split, one split per group.

    A group holding a case that already carries a split (e.g. an official test set) takes the
    most protected of its members' splits (test > validation > train), so no test image, or
    near-copy of one, reaches training or validation. Other groups draw their split from
    ``derive_seed(seed, group id)``: stable whatever else is in the cohort.

    Parameters
    ----------
    cases : list of dict
        Cases rows; ``case_id`` and an optional released ``split`` are read.
    groups : dict of str to str
        case_id -> group id (:func:`case_groups`).
    seed : int
        Seed of the per-group draw.
    fractions : dict of str to float, optional
        Share of groups per split (``train``, ``validation``, ``test``); default 0.7 / 0.15 / 0.15.

    Returns
    -------
    dict of str to str
        case_id -> ``train``, ``validation`` or ``test``.

    References
    ----------
    .. [1] counterfactual paper, §3.3 and §4.1
    """
    fractions = fractions or {"train": 0.7, "validation": 0.15, "test": 0.15}
    given: dict[str, str] = {}
    for c in cases:
        s = c.get("split")
        g = groups[c["case_id"]]
        if s in PROTECT and PROTECT[s] >= PROTECT.get(given.get(g, "train"), 0):
            given[g] = s
    out = {}
    for c in cases:
        g = groups[c["case_id"]]
        out[c["case_id"]] = given.get(g) or _draw(seed, g, fractions)
    return out


def pin_earlier(cases: list[dict], groups: dict[str, str], split_of: dict[str, str],
                pinned: dict[str, dict]) -> tuple[dict[str, str], dict[str, str], list[dict]]:
    """A growing cohort: earlier cases keep the split and group they were given; new cases
    that joined a group holding earlier cases take its most protected earlier split (a
    near-copy of a test image goes to test) and its earlier group id.

    ``pinned``: case_id -> {"split", "group_id"} of the earlier build. Returns (split_of,
    groups, conflicts): a conflict is a group in which the new cases bridged earlier cases of
    different splits; those earlier cases cannot move (their views and scores exist), so the
    conflict is reported for a person to look at, and the new cases take the most protected.

    Parameters
    ----------
    cases : list of dict
        The grown cohort's cases rows (``case_id`` is read).
    groups : dict of str to str
        case_id -> group id, computed over the grown cohort.
    split_of : dict of str to str
        case_id -> split, drawn over the grown cohort (:func:`assign_splits`).
    pinned : dict of str to dict
        case_id -> ``{"split", "group_id"}`` of the earlier build.

    Returns
    -------
    split_of : dict of str to str
        case_id -> split, earlier cases and their new group-mates pinned.
    groups : dict of str to str
        case_id -> group id, likewise.
    conflicts : list of dict
        Per bridged group: ``group``, ``earlier`` (case_id -> split), ``new`` (case ids) and
        ``new_split``.
    """
    members: dict[str, list[str]] = {}
    for c in cases:
        members.setdefault(groups[c["case_id"]], []).append(c["case_id"])
    split_out, group_out, conflicts = dict(split_of), dict(groups), []
    for gid, ids in sorted(members.items()):
        old = [i for i in ids if i in pinned]
        if not old:
            continue
        old_splits = {pinned[i]["split"] for i in old}
        top = max(old_splits, key=lambda s: PROTECT.get(s, 0))
        top_group = min(pinned[i]["group_id"] for i in old if pinned[i]["split"] == top)
        for i in ids:
            if i in pinned:
                split_out[i], group_out[i] = pinned[i]["split"], pinned[i]["group_id"]
            else:
                split_out[i], group_out[i] = top, top_group
        if len(old_splits) > 1:
            conflicts.append({"group": gid, "earlier": {i: pinned[i]["split"] for i in sorted(old)},
                              "new": sorted(i for i in ids if i not in pinned), "new_split": top})
    return split_out, group_out, conflicts


def _draw(seed: int, group: str, fractions: dict[str, float]) -> str:
    u = derive_seed(seed, "split", group) / 2.0**63
    acc = 0.0
    for name in SPLITS:
        acc += fractions[name]
        if u < acc:
            return name
    return SPLITS[-1]
