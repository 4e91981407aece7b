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
    MRI has a zero background, so this is the brain's share of the slice).

    Parameters
    ----------
    image : array_like
        One slice, (H, W) or (H, W, C); colour is reduced to its brightest channel.
    threshold : float
        Fraction of the slice's maximum above which a pixel counts as tissue, in [0, 1).

    Returns
    -------
    float
        Tissue pixels / all pixels, in [0, 1]; 0.0 for an empty or all-dark slice.
    """
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

    Parameters
    ----------
    lesion_frac : array_like of float
        Per-slice tumour area fraction, shape (n_slices,).
    tissue_frac : array_like of float
        Per-slice tissue fraction (:func:`tissue_fraction`), shape (n_slices,).
    n_lesion : int
        At most this many lesion slices.
    n_free : int
        At most this many lesion-free slices.
    gap : int
        Minimum index distance between any two chosen slices, and between a lesion-free slice
        and any slice with tumour.
    min_tissue : float
        Minimum tissue fraction of a chosen slice.
    min_lesion : float
        Minimum tumour fraction of a lesion slice.

    Returns
    -------
    lesion : list of int
        Chosen lesion slice indices, ascending.
    free : list of int
        Chosen lesion-free slice indices, ascending.

    References
    ----------
    .. [1] counterfactual paper, §4.1
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
