"""Hysteretic slice presence, cohort statistics and POPE-style probe items (organ-presence paper).

- Presence per organ per slice from voxel counts: present at >= ``present`` voxels, absent
  below ``absent``, excluded in between, so every negative is an unambiguous absence.
- Cohort statistics from the label volumes: slice-level presence frequency per organ and the
  pairwise co-occurrence counts.
- Items: every organ present on a sampled slice is a positive; two absent organs per slice and
  strategy are negatives (random / popular / adversarial). Each absent item carries the
  z-distance to the organ's nearest presence slice, or the flag that the organ is absent from
  the whole volume.

References: random / popular / adversarial negatives are POPE's sampling strategies (Y. Li et al.,
"Evaluating object hallucination in large vision-language models", EMNLP 2023).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from medscope.seeding import rng_for, stable_hash

PRESENT, ABSENT, EXCLUDED = 1, 0, -1
STRATA = ("transition", "mid", "out_of_range")


def organ_voxel_counts(labels: np.ndarray, organ_map: dict[int, str]) -> tuple[list[str], np.ndarray]:
    """Voxels of each organ on each axial slice: (organ names by label value, int64 (Z, n_organs)).

    Parameters
    ----------
    labels : numpy.ndarray of int
        Canonical (X, Y, Z) label map; negative values count as background.
    organ_map : dict of int to str
        Label value -> organ name.

    Returns
    -------
    organs : list of str
        Organ names in ascending label order.
    counts : numpy.ndarray of int64
        (Z, n_organs) voxels of each organ on each axial slice.
    """
    values = sorted(organ_map)
    z = labels.shape[2]
    # One bincount per slice over the label values keeps this O(voxels), not O(voxels x organs).
    top = max(values + [int(labels.max()) if labels.size else 0]) + 1
    counts = np.zeros((z, len(values)), dtype=np.int64)
    cols = np.asarray(values)
    for k in range(z):
        hist = np.bincount(labels[:, :, k].ravel().clip(min=0), minlength=top)
        counts[k] = hist[cols]
    return [organ_map[v] for v in values], counts


def presence_states(counts: np.ndarray, present: int = 50, absent: int = 5) -> np.ndarray:
    """Hysteretic rule: 1 where count >= present, 0 where count < absent, -1 (excluded) between.

    Parameters
    ----------
    counts : numpy.ndarray
        (Z, n_organs) voxel counts (:func:`organ_voxel_counts`).
    present : int, optional
        Count at or above which the organ is present.
    absent : int, optional
        Count below which the organ is absent.

    Returns
    -------
    numpy.ndarray of int8
        Same shape: ``PRESENT`` (1), ``ABSENT`` (0) or ``EXCLUDED`` (-1).

    References
    ----------
    .. [1] organ-presence paper
    """
    states = np.full(counts.shape, EXCLUDED, dtype=np.int8)
    states[counts >= present] = PRESENT
    states[counts < absent] = ABSENT
    return states


@dataclass
class CohortStats:
    """Slice-level presence frequency and pairwise co-occurrence over every volume of a cohort.

    ``slices[o]``: slices of volumes that label organ o; ``joint[a][b]``: slices where both a and
    b are present (``joint[a][a]`` = slices where a is present).
    """

    slices: dict[str, int] = field(default_factory=dict)
    joint: dict[str, dict[str, int]] = field(default_factory=dict)

    def add_volume(self, organs: list[str], states: np.ndarray) -> None:
        pres = states == PRESENT
        for j, a in enumerate(organs):
            self.slices[a] = self.slices.get(a, 0) + states.shape[0]
            row = self.joint.setdefault(a, {})
            for i, b in enumerate(organs):
                row[b] = row.get(b, 0) + int(np.sum(pres[:, j] & pres[:, i]))

    def frequency(self, organ: str) -> float:
        n = self.slices.get(organ, 0)
        return self.joint.get(organ, {}).get(organ, 0) / n if n else 0.0

    def conditional(self, given: str, organ: str) -> float:
        """P(organ present | given present) over slices."""
        n = self.joint.get(given, {}).get(given, 0)
        return self.joint.get(given, {}).get(organ, 0) / n if n else 0.0

    @property
    def organs(self) -> list[str]:
        return sorted(self.slices)

    def matrix(self) -> tuple[list[str], np.ndarray]:
        """(organs, conditional co-occurrence matrix M[a, b] = P(b | a))."""
        names = self.organs
        m = np.array([[self.conditional(a, b) for b in names] for a in names], dtype=np.float64)
        return names, m

    def to_dict(self) -> dict:
        return {"slices": dict(self.slices), "joint": {a: dict(r) for a, r in self.joint.items()}}

    @staticmethod
    def from_dict(d: dict) -> "CohortStats":
        return CohortStats(dict(d["slices"]), {a: dict(r) for a, r in d["joint"].items()})


def normalise_name(name: str) -> str:
    """An organ name compared by words: lower case, ``_`` as space, runs of white space as one space.

    Parameters
    ----------
    name : str
        An organ name.

    Returns
    -------
    str
        The normalised name.
    """
    return " ".join(name.lower().replace("_", " ").split())


def presence_extent(column: np.ndarray) -> tuple[int, int] | None:
    """(first, last) slice index where the organ is present, or None if never present.

    Parameters
    ----------
    column : numpy.ndarray
        (Z,) presence states of one organ.

    Returns
    -------
    tuple of (int, int) or None
        First and last slice index with state ``PRESENT``.
    """
    idx = np.flatnonzero(column == PRESENT)
    return (int(idx[0]), int(idx[-1])) if idx.size else None


def z_distance_mm(z_mm: np.ndarray, column: np.ndarray, k: int) -> float | None:
    """Distance (mm) from slice k to the organ's nearest presence slice; None if never present.

    Parameters
    ----------
    z_mm : numpy.ndarray
        (Z,) world z of each slice, mm.
    column : numpy.ndarray
        (Z,) presence states of one organ.
    k : int
        Slice index.

    Returns
    -------
    float or None
        Smallest ``|z_mm[present slice] - z_mm[k]|``.

    References
    ----------
    .. [1] organ-presence paper
    """
    idx = np.flatnonzero(column == PRESENT)
    if not idx.size:
        return None
    return float(np.min(np.abs(z_mm[idx] - z_mm[k])))


def item_stratum(z_mm: np.ndarray, column: np.ndarray, k: int, transition_mm: float) -> str:
    """Where slice k lies relative to one organ's presence range.

    transition: within ``transition_mm`` of the range's first or last slice (inside or out);
    mid: inside the range, farther than that; out_of_range: outside and farther (or never present).

    Parameters
    ----------
    z_mm : numpy.ndarray
        (Z,) world z of each slice, mm.
    column : numpy.ndarray
        (Z,) presence states of one organ.
    k : int
        Slice index.
    transition_mm : float
        Half-width of the transition band around each end of the range, mm.

    Returns
    -------
    {"transition", "mid", "out_of_range"}
        The stratum.
    """
    ext = presence_extent(column)
    if ext is None:
        return "out_of_range"
    lo, hi = z_mm[ext[0]], z_mm[ext[1]]
    lo, hi = min(lo, hi), max(lo, hi)
    z = z_mm[k]
    to_boundary = min(abs(z - lo), abs(z - hi))
    if to_boundary <= transition_mm:
        return "transition"
    return "mid" if lo <= z <= hi else "out_of_range"


def slice_strata(
    z_mm: np.ndarray, states: np.ndarray, transition_mm: float, skip: list[int] | None = None
) -> list[str]:
    """Stratum of each slice for sampling: transition if near any organ's boundary, else mid if
    inside any organ's range, else out_of_range. Organ columns in ``skip`` (vessels, which span
    the whole abdomen and would make every end slice a transition) are ignored.

    Parameters
    ----------
    z_mm : numpy.ndarray
        (Z,) world z of each slice, mm.
    states : numpy.ndarray
        (Z, n_organs) presence states.
    transition_mm : float
        Half-width of the transition band, mm (:func:`item_stratum`).
    skip : list of int, optional
        Organ columns to ignore.

    Returns
    -------
    list of str
        (Z,) strata, each ``transition``, ``mid`` or ``out_of_range``.
    """
    cols = [j for j in range(states.shape[1]) if j not in set(skip or ())]
    out = []
    for k in range(states.shape[0]):
        per = {item_stratum(z_mm, states[:, j], k, transition_mm) for j in cols}
        out.append("transition" if "transition" in per else "mid" if "mid" in per else "out_of_range")
    return out


def sample_slices(strata: list[str], n: int, rng: np.random.Generator) -> list[int]:
    """Up to ``n`` slice indices, as even as possible over the three strata (quota a stratum cannot
    fill passes to the others), so axial position alone does not predict the answer.

    Parameters
    ----------
    strata : list of str
        Stratum of each slice (:func:`slice_strata`).
    n : int
        Slices wanted.
    rng : numpy.random.Generator
        Draws the slices within each stratum.

    Returns
    -------
    list of int
        ``min(n, len(strata))`` distinct slice indices, ascending.
    """
    pools = {s: [k for k, t in enumerate(strata) if t == s] for s in STRATA}
    quota = {s: 0 for s in STRATA}
    left = min(n, len(strata))
    while left:
        open_ = [s for s in STRATA if quota[s] < len(pools[s])]
        for s in open_:
            if left:
                quota[s] += 1
                left -= 1
    chosen: list[int] = []
    for s in STRATA:
        if quota[s]:
            chosen += rng.choice(pools[s], size=quota[s], replace=False).tolist()
    return sorted(int(k) for k in chosen)


def popular_negatives(absent: list[str], stats: CohortStats, n: int) -> list[str]:
    """The n absent organs with the highest overall slice frequency (ties by name).

    Parameters
    ----------
    absent : list of str
        Organs absent from the slice.
    stats : CohortStats
        Cohort presence frequencies.
    n : int
        Negatives wanted.

    Returns
    -------
    list of str
        Up to ``n`` organs, most frequent first.

    References
    ----------
    .. [1] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    return sorted(absent, key=lambda o: (-stats.frequency(o), o))[:n]


def adversarial_negatives(
    absent: list[str], present: list[str], stats: CohortStats, n: int, vessels: list[str]
) -> list[str]:
    """The n absent organs most co-occurring with the organs present on the slice (organ-presence paper,
    "Adversarial").

    Score = mean over conditioning organs a of P(organ | a). Co-occurrence is conditioned only on
    spatially localised organs: the near-ubiquitous ``vessels`` are left out of the conditioning
    set (they pull the score back to the marginal frequency and turn the setting into the
    popular one) and are never picked as adversarial negatives. A slice with no localised organ
    present has nothing to condition on and falls back to the popular ranking of the localised
    absent organs.

    Parameters
    ----------
    absent : list of str
        Organs absent from the slice.
    present : list of str
        Organs present on the slice.
    stats : CohortStats
        Cohort co-occurrence statistics.
    n : int
        Negatives wanted.
    vessels : list of str
        Organ names (compared by :func:`normalise_name`) left out of conditioning and picking.

    Returns
    -------
    list of str
        Up to ``n`` localised absent organs, highest score first (ties: higher frequency, then name).

    References
    ----------
    .. [1] organ-presence paper, "Adversarial"
    .. [2] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    skip = {normalise_name(v) for v in vessels}
    absent = [o for o in absent if normalise_name(o) not in skip]
    cond = [a for a in present if normalise_name(a) not in skip]
    if not cond:
        return popular_negatives(absent, stats, n)

    def score(o: str) -> float:
        return float(np.mean([stats.conditional(a, o) for a in cond]))

    return sorted(absent, key=lambda o: (-score(o), -stats.frequency(o), o))[:n]


def random_negatives(absent: list[str], n: int, rng: np.random.Generator) -> list[str]:
    """n absent organs drawn uniformly without replacement.

    Parameters
    ----------
    absent : list of str
        Organs absent from the slice.
    n : int
        Negatives wanted.
    rng : numpy.random.Generator
        Draws the organs.

    Returns
    -------
    list of str
        ``n`` organs sorted by name, or every absent organ when there are no more than ``n``.

    References
    ----------
    .. [1] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    pool = sorted(absent)
    if len(pool) <= n:
        return pool
    return sorted(rng.choice(pool, size=n, replace=False).tolist())


def random_positives(present: list[str], n: int | None, rng: np.random.Generator) -> list[str]:
    """The slice's positives: every present organ (``n`` None), or n of them drawn uniformly
    without replacement, as POPE draws a fixed number of ground-truth objects per image so that
    positives and negatives per image balance.

    Parameters
    ----------
    present : list of str
        Organs present on the slice.
    n : int or None
        Positives wanted; None takes every present organ.
    rng : numpy.random.Generator
        Draws the organs.

    Returns
    -------
    list of str
        The positives, sorted by name.

    References
    ----------
    .. [1] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    pool = sorted(present)
    if n is None or len(pool) <= n:
        return pool
    return sorted(rng.choice(pool, size=n, replace=False).tolist())


def probe_question(organ: str) -> str:
    """The probe's yes / no question about one organ on one axial CT slice.

    Parameters
    ----------
    organ : str
        Organ name; ``_`` is read as a space.

    Returns
    -------
    str
        ``"Is the <organ> visible in this axial CT slice?"``.
    """
    return f"Is the {organ.replace('_', ' ')} visible in this axial CT slice?"


def build_items(
    case_id: str,
    z_mm: np.ndarray,
    organs: list[str],
    states: np.ndarray,
    stats: CohortStats,
    *,
    seed: int = 0,
    slices_per_volume: int = 12,
    strategies: tuple[str, ...] = ("random", "popular", "adversarial"),
    negatives_per_slice: int = 2,
    positives_per_slice: int | None = None,
    vessels: tuple[str, ...] = (),
    transition_mm: float = 10.0,
) -> list[dict]:
    """Probe items of one volume (no images yet): positives (every present organ, or
    ``positives_per_slice`` of them) plus negatives per strategy.

    Returns dicts with case_id, z, z_mm, organ, truth, strategy, stratum, z_distance_mm,
    absent_from_volume and question. Seeds come from (seed, case_id, z, ...), never order.

    Parameters
    ----------
    case_id : str
        The volume's case id.
    z_mm : numpy.ndarray
        (Z,) world z of each slice, mm.
    organs : list of str
        Organ names, one per column of ``states``.
    states : numpy.ndarray
        (Z, n_organs) presence states (:func:`presence_states`).
    stats : CohortStats
        Cohort statistics for the popular and adversarial negatives.
    seed : int, optional
        Seed of the slice, positive and random-negative draws.
    slices_per_volume : int, optional
        Slices sampled (:func:`sample_slices`).
    strategies : tuple of str, optional
        Negative strategies, each ``random``, ``popular`` or ``adversarial``.
    negatives_per_slice : int, optional
        Negatives per slice and strategy.
    positives_per_slice : int or None, optional
        Positives per slice; None takes every present organ.
    vessels : tuple of str, optional
        Organs ignored for strata and left out of the adversarial setting.
    transition_mm : float, optional
        Half-width of the transition stratum, mm.

    Returns
    -------
    list of dict
        One item per (slice, organ, strategy); positives have strategy ``positive``, truth
        ``present`` and ``z_distance_mm`` None.

    References
    ----------
    .. [1] organ-presence paper
    .. [2] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    vessel_names = {normalise_name(v) for v in vessels}
    skip = [j for j, o in enumerate(organs) if normalise_name(o) in vessel_names]
    strata = slice_strata(z_mm, states, transition_mm, skip)
    chosen = sample_slices(strata, slices_per_volume, rng_for(seed, case_id, "slices"))
    items = []

    def item(k: int, j: int, truth: str, strategy: str) -> dict:
        col = states[:, j]
        # "absent from the entire volume" (organ-presence paper): below the absent threshold on every slice. An
        # organ that never reaches 50 voxels but has 5-49 on some slice is not absent from the
        # volume (those slices are excluded); it has no presence slice, so no z-distance either.
        never = bool((col == ABSENT).all())
        return {
            "case_id": case_id,
            "z": int(k),
            "z_mm": float(z_mm[k]),
            "organ": organs[j],
            "truth": truth,
            "strategy": strategy,
            "stratum": item_stratum(z_mm, col, k, transition_mm),
            "z_distance_mm": None if truth == "present" else z_distance_mm(z_mm, col, k),
            "absent_from_volume": bool(never),
            "question": probe_question(organs[j]),
        }

    index = {o: j for j, o in enumerate(organs)}
    for k in chosen:
        present = [o for j, o in enumerate(organs) if states[k, j] == PRESENT]
        absent = [o for j, o in enumerate(organs) if states[k, j] == ABSENT]
        positives = random_positives(present, positives_per_slice, rng_for(seed, case_id, k, "positives"))
        items += [item(k, index[o], "present", "positive") for o in positives]
        for strategy in strategies:
            if strategy == "random":
                picks = random_negatives(absent, negatives_per_slice, rng_for(seed, case_id, k, "random"))
            elif strategy == "popular":
                picks = popular_negatives(absent, stats, negatives_per_slice)
            else:
                picks = adversarial_negatives(absent, present, stats, negatives_per_slice, list(vessels))
            items += [item(k, index[o], "absent", strategy) for o in picks]
    return items


def item_id(case_id: str, z: int, organ: str, strategy: str, render: str) -> str:
    """Stable id of a probe item: a hash of volume, slice, organ, strategy and render.

    Parameters
    ----------
    case_id : str
        The volume's case id.
    z : int
        Slice index.
    organ : str
        Organ name.
    strategy : str
        ``positive``, ``random``, ``popular`` or ``adversarial``.
    render : str
        ``gray`` or ``triple``.

    Returns
    -------
    str
        ``"pi-"`` followed by the hash.
    """
    return "pi-" + stable_hash(case_id, z, organ, strategy, render)
