"""2D cases from a stack of axial slices, chosen by rule (counterfactual paper §4.1: TCGA-LGG, BraTS).

One rule for every brain-MRI source, so the LGG ``.tif`` stacks and the BraTS NIfTI volumes
give alike cases: per patient, the lesion slices with the largest tumour area and the
lesion-free slices with the most tissue, never two chosen slices closer than
``min_slice_gap``, and never a slice whose brain covers less than ``min_tissue_frac`` of the
image ("brain slices with little tissue are excluded").
"""

from __future__ import annotations

import numpy as np


def tissue_fraction(image: np.ndarray, threshold: float) -> float:
    """Share of pixels brighter than ``threshold`` x the image's own maximum (skull-stripped
    MRI has a zero background, so this is the brain's share of the slice)."""
    a = np.asarray(image, dtype=np.float64)
    if a.ndim == 3:
        a = a.max(axis=2)
    top = float(a.max()) if a.size else 0.0
    if top <= 0:
        return 0.0
    return float(np.count_nonzero(a > threshold * top)) / float(a.size)


def _greedy(order: list[int], n: int, gap: int, taken: list[int]) -> list[int]:
    chosen: list[int] = []
    for k in order:
        if len(chosen) >= n:
            break
        if all(abs(k - j) >= gap for j in chosen + taken):
            chosen.append(k)
    return chosen


def choose_slices(
    lesion_frac: np.ndarray,
    tissue_frac: np.ndarray,
    *,
    n_lesion: int,
    n_free: int,
    gap: int,
    min_tissue: float,
    min_lesion: float,
) -> tuple[list[int], list[int]]:
    """(lesion slice indices, lesion-free slice indices) of one stack.

    ``lesion_frac[k]`` / ``tissue_frac[k]``: tumour and tissue share of slice k. Lesion slices:
    tumour share >= ``min_lesion`` and tissue >= ``min_tissue``, largest tumour first. Lesion-free
    slices: no tumour pixel, tissue >= ``min_tissue``, at least ``gap`` from every chosen lesion
    slice (a neighbour of a tumour slice may hold tumour the annotator left out), most tissue
    first. Ties go to the lower index, so the choice never depends on file order.
    """
    lesion_frac = np.asarray(lesion_frac, dtype=float)
    tissue_frac = np.asarray(tissue_frac, dtype=float)
    idx = np.arange(lesion_frac.size)
    ok = tissue_frac >= min_tissue
    lesion_c = [int(k) for k in idx[ok & (lesion_frac >= min_lesion) & (lesion_frac > 0)]]
    lesion_c.sort(key=lambda k: (-lesion_frac[k], k))
    lesion = _greedy(lesion_c, n_lesion, gap, [])
    any_tumour = [int(k) for k in idx[lesion_frac > 0]]
    free_c = [int(k) for k in idx[ok & (lesion_frac == 0)] if all(abs(k - j) >= gap for j in any_tumour)]
    free_c.sort(key=lambda k: (-tissue_frac[k], k))
    free = _greedy(free_c, n_free, gap, lesion)
    return sorted(lesion), sorted(free)
