"""Gallery panels: a case's original, erased and control views with their masks outlined
(counterfactual paper Figure 2 style: yellow the lesion, dashed cyan the edited region)."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from medscope import images

YELLOW = np.array([255, 220, 0], np.uint8)
CYAN = np.array([0, 220, 255], np.uint8)


def outline(image: np.ndarray, mask: np.ndarray, color: np.ndarray, dashed: bool = False) -> np.ndarray:
    """Draw the boundary of ``mask`` on an RGB copy of ``image`` (dashed: every other 4 pixels)."""
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
    if bbox is None:
        return None
    m = np.zeros(shape[:2], bool)
    x1, y1, x2, y2 = (int(v) for v in bbox)
    m[max(y1, 0):max(y2, 0), max(x1, 0):max(x2, 0)] = True
    return m


def panel(view: dict, lesion_mask: np.ndarray | None, max_side: int = 256) -> bytes | None:
    """PNG of one view with the lesion (yellow) and edit mask (dashed cyan) outlined; None if no pixels."""
    if not view.get("image"):
        return None
    img = images.decode_png(view["image"])
    lesion = lesion_mask
    if lesion is None or lesion.shape != img.shape[:2]:
        lesion = box_mask(img.shape, view.get("lesion_bbox"))
    if view["kind"] != "target_removal":  # the lesion is gone from an erased view
        img = outline(img, lesion, YELLOW)
    if view.get("edit_mask"):
        edit = images.decode_mask(view["edit_mask"])
        img = outline(img, edit, CYAN, dashed=True)
    return images.encode_png(images.resize_long_side(img, max_side))
