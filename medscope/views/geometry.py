"""Masks and placements for the counterfactual views (counterfactual paper, §3.2 and §3.7 C1).

Every function is pure: arrays in, arrays out, randomness only from the ``rng`` it is given
(``medscope.seeding.rng_for(run_seed, case_id, view_kind)``), so a view depends on its case and
seed alone, never on which worker built it.
"""

from __future__ import annotations

import numpy as np
import cv2
from scipy import ndimage

from medscope.images import to_gray


def dilate_mask(mask: np.ndarray, radius: int = 5) -> np.ndarray:
    """The mask grown by a Euclidean disk of ``radius`` pixels (§3.2: "dilated by 5 pixels").

    A pixel joins the mask when its Euclidean distance to the nearest mask pixel is at most
    ``radius``; a single pixel therefore becomes the lattice disk x² + y² ≤ r².

    Parameters
    ----------
    mask : numpy.ndarray
        Boolean mask, shape (h, w) (cast to bool).
    radius : int, optional
        Dilation radius in pixels; 0 or less returns a copy.

    Returns
    -------
    numpy.ndarray
        Boolean mask, shape (h, w).

    References
    ----------
    .. [1] Counterfactual paper, §3.2.
    """
    mask = np.asarray(mask, dtype=bool)
    if radius <= 0 or not mask.any():
        return mask.copy()
    return ndimage.distance_transform_edt(~mask) <= radius


def foreground_mask(image: np.ndarray, frac: float = 0.1, floor: int = 8) -> np.ndarray:
    """Tissue pixels: grey level above ``frac`` of the 99th percentile (at least ``floor``).

    Medical images sit on a dark background (air, the endoscope's vignette, the ultrasound
    sector), so a fraction of the bright end separates tissue robustly without a model.

    Parameters
    ----------
    image : numpy.ndarray
        Grey (h, w) or RGB (h, w, 3) image.
    frac : float, optional
        Fraction of the 99th-percentile grey level used as the threshold.
    floor : int, optional
        Lowest threshold, in grey levels.

    Returns
    -------
    numpy.ndarray
        Boolean tissue mask, shape (h, w), after a 3 x 3 opening.
    """
    gray = to_gray(np.asarray(image)).astype(np.float32)
    threshold = max(float(floor), frac * float(np.percentile(gray, 99)))
    fg = gray > threshold
    # a morphological opening drops speckle that would otherwise host a placement
    return ndimage.binary_opening(fg, structure=np.ones((3, 3), bool))


def touch_zone(mask: np.ndarray, margin: int = 1) -> np.ndarray:
    """Pixels within ``margin`` px (8-connected for 1) of the mask: a shape here touches it.

    Parameters
    ----------
    mask : numpy.ndarray
        Boolean mask, shape (h, w).
    margin : int, optional
        Width of the zone in pixels (3 x 3 dilations); 0 or less returns a copy of the mask.

    Returns
    -------
    numpy.ndarray
        Boolean mask, shape (h, w): the mask and every pixel within ``margin``.
    """
    mask = np.asarray(mask, dtype=bool)
    if margin <= 0:
        return mask.copy()
    return ndimage.binary_dilation(mask, structure=np.ones((3, 3), bool), iterations=margin)


def crop_to_shape(mask: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
    """The mask's bounding-box crop and the crop's top-left (row, col).

    Parameters
    ----------
    mask : numpy.ndarray
        Boolean mask with at least one pixel set.

    Returns
    -------
    crop : numpy.ndarray
        The mask cut to its bounding box.
    origin : tuple of int
        (row, col) of the crop's top-left corner in ``mask``.
    """
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    return mask[r0:r1, c0:c1].copy(), (int(r0), int(c0))


def valid_offsets(shape: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Top-left offsets (row, col) at which every pixel of ``shape`` lands on ``allowed``.

    Computed as one correlation of the allowed map with the shape (``cv2.matchTemplate``,
    which switches to the DFT for large shapes), not a loop over candidate positions.

    Parameters
    ----------
    shape : numpy.ndarray
        Boolean mask of the shape, cropped to its bounding box.
    allowed : numpy.ndarray
        Boolean map of where shape pixels may land, shape (h, w).

    Returns
    -------
    numpy.ndarray
        int64 array of shape (n, 2), one (row, col) offset per row; (0, 2) when the shape is larger than
        ``allowed`` or fits nowhere.
    """
    shape = np.asarray(shape, dtype=bool)
    allowed = np.asarray(allowed, dtype=bool)
    sh, sw = shape.shape
    if sh > allowed.shape[0] or sw > allowed.shape[1]:
        return np.zeros((0, 2), dtype=np.int64)
    hits = cv2.matchTemplate(allowed.astype(np.float32), shape.astype(np.float32), cv2.TM_CCORR)
    return np.argwhere(hits >= shape.sum() - 0.5)


def place_shape(shape: np.ndarray, allowed: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """``shape`` (a cropped boolean mask) translated to a uniformly random position inside
    ``allowed``; None when there is no room. The result has exactly the shape's pixels.

    Parameters
    ----------
    shape : numpy.ndarray
        Boolean mask cropped to its bounding box.
    allowed : numpy.ndarray
        Boolean map of where shape pixels may land, shape (h, w).
    rng : numpy.random.Generator
        Draws the position among the valid offsets.

    Returns
    -------
    numpy.ndarray or None
        Boolean mask of shape (h, w) holding the placed shape, or None when it fits nowhere.
    """
    offsets = valid_offsets(shape, allowed)
    if len(offsets) == 0:
        return None
    r, c = offsets[int(rng.integers(len(offsets)))]
    out = np.zeros(allowed.shape, dtype=bool)
    out[r : r + shape.shape[0], c : c + shape.shape[1]] = shape
    return out


def random_removal_region(
    dilated_lesion: np.ndarray, foreground: np.ndarray, rng: np.random.Generator
) -> np.ndarray | None:
    """§3.2 control: the same dilated shape moved to a random foreground position that does
    not touch the dilated lesion (not overlapping, not 8-adjacent). None when no room.

    Parameters
    ----------
    dilated_lesion : numpy.ndarray
        Boolean mask of the dilated lesion, shape (h, w), not empty.
    foreground : numpy.ndarray
        Boolean tissue mask, shape (h, w) (see `foreground_mask`).
    rng : numpy.random.Generator
        Draws the position.

    Returns
    -------
    numpy.ndarray or None
        Boolean mask of shape (h, w) with the moved shape, or None when there is no room.

    References
    ----------
    .. [1] Counterfactual paper, §3.2.
    """
    shape, _ = crop_to_shape(dilated_lesion)
    allowed = foreground & ~touch_zone(dilated_lesion, 1)
    return place_shape(shape, allowed, rng)


def ellipse_mask(area: float, aspect: float, angle_deg: float) -> np.ndarray:
    """A filled ellipse of about ``area`` pixels, axis ratio ``aspect`` ≥ 1, rotated by
    ``angle_deg``, cropped to its bounding box.

    Parameters
    ----------
    area : float
        Target area in pixels.
    aspect : float
        Ratio of major to minor axis, at least 1.
    angle_deg : float
        Rotation in degrees.

    Returns
    -------
    numpy.ndarray
        Boolean mask of the ellipse, cropped to its bounding box.
    """
    a = np.sqrt(area * aspect / np.pi)
    b = np.sqrt(area / (np.pi * aspect))
    half = int(np.ceil(a)) + 1
    yy, xx = np.mgrid[-half : half + 1, -half : half + 1].astype(np.float64)
    t = np.deg2rad(angle_deg)
    u = xx * np.cos(t) + yy * np.sin(t)
    v = -xx * np.sin(t) + yy * np.cos(t)
    inside = (u / a) ** 2 + (v / b) ** 2 <= 1.0
    return crop_to_shape(inside)[0]


def unmatched_control_region(
    dilated_lesion: np.ndarray,
    foreground: np.ndarray,
    rng: np.random.Generator,
    *,
    away_px: int = 5,
    max_aspect: float = 3.0,  # addition: §3.7 gives "random aspect ratio" without a range
) -> tuple[np.ndarray | None, dict]:
    """§3.7 C1: an ellipse of half or twice the erased area, random aspect ratio and
    orientation, on tissue at least ``away_px`` from the dilated lesion.

    Returns (region or None, the drawn parameters) so the choice can be reported.

    Parameters
    ----------
    dilated_lesion : numpy.ndarray
        Boolean mask of the dilated lesion, shape (h, w); its pixel count sets the ellipse's area.
    foreground : numpy.ndarray
        Boolean tissue mask, shape (h, w).
    rng : numpy.random.Generator
        Draws the area factor, aspect, angle and position.
    away_px : int, optional
        Least distance from the dilated lesion, in pixels.
    max_aspect : float, optional
        Upper end of the uniform aspect-ratio draw (lower end 1).

    Returns
    -------
    region : numpy.ndarray or None
        Boolean mask of shape (h, w), or None when neither size fits.
    params : dict
        ``{"area_factor", "aspect", "angle"}``; ``area_factor`` is the one placed (0.5 or 2.0), the drawn one
        when nothing fits.

    References
    ----------
    .. [1] Counterfactual paper, §3.7 (control C1).
    """
    factor = float(rng.choice([0.5, 2.0]))
    aspect = float(rng.uniform(1.0, max_aspect))
    angle = float(rng.uniform(0.0, 180.0))
    allowed = foreground & ~touch_zone(dilated_lesion, away_px)
    params = {"area_factor": factor, "aspect": aspect, "angle": angle}
    # the drawn size first; the other size only when the drawn one does not fit
    for f in (factor, 2.5 - factor):
        shape = ellipse_mask(f * float(dilated_lesion.sum()), aspect, angle)
        region = place_shape(shape, allowed, rng)
        if region is not None:
            return region, dict(params, area_factor=f)
    return None, params




def bbox(mask: np.ndarray) -> list[int] | None:
    """[x1, y1, x2, y2] (inclusive-exclusive pixel box) of a mask, None when empty.

    Parameters
    ----------
    mask : numpy.ndarray
        Boolean mask, shape (h, w).

    Returns
    -------
    list of int or None
        [x1, y1, x2, y2] in pixels, x2 and y2 exclusive; None when the mask is empty.
    """
    if not mask.any():
        return None
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    return [int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1]
