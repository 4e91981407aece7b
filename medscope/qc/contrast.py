"""Contrast-ring test (counterfactual paper, §3.3 (i)): does the lesion still stand out after erasure?"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from medscope.images import to_gray


def ring_mask(mask: np.ndarray, inner: float = 6.0, outer: float = 14.0) -> np.ndarray:
    """Pixels whose Euclidean distance to the mask lies in [inner, outer] (§3.3 ring).

    Parameters
    ----------
    mask : array_like of bool
        (H, W) lesion mask.
    inner, outer : float, optional
        Ring radii in pixels, both inclusive.

    Returns
    -------
    numpy.ndarray of bool
        (H, W) pixels at Euclidean distance in [``inner``, ``outer``] from the nearest mask pixel.

    References
    ----------
    .. [1] counterfactual paper, §3.3
    """
    mask = np.asarray(mask, dtype=bool)
    dist = ndimage.distance_transform_edt(~mask)
    return (dist >= inner) & (dist <= outer)


def ring_contrast(image: np.ndarray, mask: np.ndarray, inner: float = 6.0, outer: float = 14.0) -> float:
    """|mean grey inside ``mask`` − mean grey in the ring [inner, outer] px around it| divided
    by the ring's standard deviation (population, ddof = 0).

    A flat ring (σ = 0) gives 0 when the means agree and +inf otherwise; an empty ring (the
    mask fills the image) gives NaN.

    Parameters
    ----------
    image : array_like
        (H, W) gray or (H, W, 3) colour image; colour is converted to gray.
    mask : array_like of bool
        (H, W) lesion mask.
    inner, outer : float, optional
        Ring radii in pixels (:func:`ring_mask`).

    Returns
    -------
    float
        The contrast, >= 0; ``inf`` or ``nan`` as above (also ``nan`` for an empty mask).

    References
    ----------
    .. [1] counterfactual paper, §3.3 (i)
    """
    gray = to_gray(np.asarray(image)).astype(np.float64)
    mask = np.asarray(mask, dtype=bool)
    ring = ring_mask(mask, inner, outer)
    if not mask.any() or not ring.any():
        return float("nan")
    diff = abs(gray[mask].mean() - gray[ring].mean())
    sd = gray[ring].std()
    if sd == 0:
        return 0.0 if diff == 0 else float("inf")
    return float(diff / sd)


def contrast_passes(before: float, after: float, absolute: float = 1.0, relative: float = 0.35) -> bool:
    """§3.3: an erasure passes if contrast after ≤ max(``absolute``, ``relative`` × before).

    Parameters
    ----------
    before : float
        Ring contrast of the original image (:func:`ring_contrast`).
    after : float
        Ring contrast of the erased image; NaN or infinite fails.
    absolute : float, optional
        Contrast that always passes.
    relative : float, optional
        Passing fraction of ``before``.

    Returns
    -------
    bool
        Whether the erasure passes.

    References
    ----------
    .. [1] counterfactual paper, §3.3
    """
    if not np.isfinite(after):
        return False
    return bool(after <= max(absolute, relative * before))
