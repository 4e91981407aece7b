"""Gallery panels: a case's original, erased and control views with their masks outlined
(counterfactual paper Figure 2 style: yellow the lesion, dashed cyan the edited region), in the
colours of ``medscope.render.palette``, which ``views export`` draws with too."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from medscope import images
from medscope.render.palette import EDIT, LESION


def outline(image: np.ndarray, mask: np.ndarray, color: np.ndarray, dashed: bool = False) -> np.ndarray:
    """Draw the boundary of ``mask`` on an RGB copy of ``image`` (dashed: every other 4 pixels).

    Parameters
    ----------
    image : numpy.ndarray
        A grey (H, W) or RGB (H, W, 3) image.
    mask : numpy.ndarray of bool or None
        (H, W) region to outline; None, an empty mask or one of another size outlines nothing.
    color : numpy.ndarray
        RGB uint8 colour of the boundary.
    dashed : bool
        Keep every other run of 4 boundary pixels (along diagonals).

    Returns
    -------
    numpy.ndarray
        (H, W, 3) uint8 RGB copy with the boundary drawn; ``image`` is not changed.
    """
    rgb = images.to_rgb(image).copy()
    if mask is None or mask.shape != rgb.shape[:2] or not mask.any():
        return rgb
    edge = mask & ~ndimage.binary_erosion(mask, iterations=1)
    edge = ndimage.binary_dilation(edge, iterations=1) & ~ndimage.binary_erosion(mask, iterations=2)
    if dashed:
        yy, xx = np.indices(edge.shape)
        edge &= ((yy + xx) // 4) % 2 == 0
    rgb[edge] = color
    return rgb


def box_mask(shape, bbox) -> np.ndarray | None:
    """A boolean mask of a lesion box, for views whose lesion mask is missing.

    Parameters
    ----------
    shape : tuple of int
        The image shape; its first two entries (H, W) size the mask.
    bbox : sequence of float or None
        [x1, y1, x2, y2] in pixels; negative coordinates are clipped to 0.

    Returns
    -------
    numpy.ndarray of bool or None
        (H, W), True inside the box; None when ``bbox`` is None.
    """
    if bbox is None:
        return None
    m = np.zeros(shape[:2], bool)
    x1, y1, x2, y2 = (int(v) for v in bbox)
    m[max(y1, 0):max(y2, 0), max(x1, 0):max(x2, 0)] = True
    return m


def panel(view: dict, lesion_mask: np.ndarray | None, max_side: int | None = 256) -> bytes | None:
    """PNG of one view with the lesion (yellow) and edit mask (dashed cyan) outlined; None if no pixels.

    Parameters
    ----------
    view : dict
        A views row: ``image`` (PNG bytes), ``kind``, optional ``lesion_bbox`` and ``edit_mask`` (PNG).
    lesion_mask : numpy.ndarray of bool or None
        The case's lesion mask; None or a size other than the image's: the ``lesion_bbox`` box instead.
        Not drawn on a target-removal view.
    max_side : int or None
        The panel's long side is downscaled to at most this many pixels (never upscaled); None keeps
        the view's own size.

    Returns
    -------
    bytes or None
        PNG bytes; None when the view has no pixels.
    """
    if not view.get("image"):
        return None
    img = images.decode_png(view["image"])
    lesion = lesion_mask
    if lesion is None or lesion.shape != img.shape[:2]:
        lesion = box_mask(img.shape, view.get("lesion_bbox"))
    if view["kind"] != "target_removal":  # the lesion is gone from an erased view
        img = outline(img, lesion, LESION)
    if view.get("edit_mask"):
        edit = images.decode_mask(view["edit_mask"])
        img = outline(img, edit, EDIT, dashed=True)
    return images.encode_png(img if max_side is None else images.resize_long_side(img, max_side))
