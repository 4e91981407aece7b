"""``graft``: an offline erasure that leaves the edit detector little to see (counterfactual paper §3.2, §3.3).

addition: the tool is ours, an offline stand-in for LaMa (no GPU, no weights). It is the
paper's tissue transplant (§3.2, ref. [20]) made to leave fewer traces:

1. the source is chosen by structure, not at random: of every position whose patch touches
   neither the region nor ``avoid`` (the lesion), one of the ``top_k`` whose ring of ``ring_px``
   pixels best matches the region's ring, computed for all positions at once by template matching
   (exemplar matching as in A. Efros, W. Freeman, "Image quilting for texture synthesis and
   transfer", SIGGRAPH 2001; A. Criminisi, P. Pérez, K. Toyama, "Region filling and object removal
   by exemplar-based image inpainting", IEEE TIP 13(9), 2004). The cost is the mean squared
   difference of the rings blurred by ``match_sigma`` (structure: rib edges, lung borders, folds),
   over the target ring's variance plus ``spread_floor``; plus ``texture_weight`` times the squared
   difference of the rings' mean log gradient magnitude (else a smooth source wins, since its own
   fine texture adds nothing to the squared difference); plus ``bg_penalty`` times the share of the
   patch on background;
2. the blend is Poisson's (P. Pérez, M. Gangnet, A. Blake, "Poisson image editing", SIGGRAPH
   2003) in its membrane form (Z. Farbman et al., "Coordinates for instant image cloning",
   SIGGRAPH 2009): fill = source + the harmonic function that equals target − source on the
   region's outer boundary, solved exactly (scipy.sparse) instead of OpenCV's seamlessClone,
   whose boundary handling leaves a gradient ring. The exact boundary difference carries the
   boundary pixels' noise a pixel or two into the fill, which keeps the pixel-to-pixel
   correlation of correlated noise (speckle, smooth mucosa noise) across the seam; a difference
   of Gaussian-smoothed images, tried first, left a jump of independent noise samples there that
   the edit detector's noise residual found on the ultrasound and colonoscopy phantoms;
3. noise re-injection: the source's high-frequency residual (source minus its Gaussian blur of
   ``sigma``) is scaled so that the mean absolute 3×3-median residual of the source's ring
   equals the target ring's (the gain clipped to ``gain_range``), since speckle scales with the
   local brightness and a source of other brightness brings other noise.

Only the region's pixels change (the fill is composited over the input).
"""

from __future__ import annotations

import cv2
import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve

from medscope.errors import MedScopeError
from medscope.images import to_gray
from medscope.views import geometry


def ring_box(region: np.ndarray, ring_px: int) -> tuple[np.ndarray, tuple[int, int]]:
    """The ring of ``ring_px`` pixels around ``region``, cropped to its box, and the box's top-left.

    Parameters
    ----------
    region : numpy.ndarray
        Boolean region mask, shape (h, w), not empty.
    ring_px : int
        Ring width in pixels (Euclidean dilation).

    Returns
    -------
    ring : numpy.ndarray
        float32 0/1 ring mask cropped to the dilated region's box.
    top_left : tuple of int
        (row, col) of the box in the image.
    """
    grown = geometry.dilate_mask(region, ring_px)
    box, (g0, h0) = geometry.crop_to_shape(grown)
    return (grown & ~region)[g0:g0 + box.shape[0], h0:h0 + box.shape[1]].astype(np.float32), (g0, h0)


def ring_match_costs(img: np.ndarray, ring: np.ndarray, top_left: tuple[int, int]) -> np.ndarray:
    """Mean squared difference between ``img``'s pixels on ``ring`` (a box at ``top_left``) and
    the same ring shape at every position of ``img`` (``cv2.matchTemplate`` in valid mode, one
    correlation per term of the expanded square).

    Parameters
    ----------
    img : numpy.ndarray
        Grey image, shape (H, W).
    ring : numpy.ndarray
        float32 0/1 ring mask of shape (rh, rw), as from `ring_box`.
    top_left : tuple of int
        (row, col) of the ring's box in ``img``: the target ring.

    Returns
    -------
    numpy.ndarray
        float32 costs of shape (H - rh + 1, W - rw + 1), indexed by the box's top-left; at least 0.
    """
    img = img.astype(np.float32) - float(img.mean())  # centred: float32 sums stay exact enough
    g0, h0 = top_left
    target = img[g0:g0 + ring.shape[0], h0:h0 + ring.shape[1]] * ring
    cost = (cv2.matchTemplate(img * img, ring, cv2.TM_CCORR) - 2 * cv2.matchTemplate(img, target, cv2.TM_CCORR)
            + float((target * target).sum()))
    return np.maximum(cost, 0) / float(ring.sum())


def ring_means(img: np.ndarray, ring: np.ndarray) -> np.ndarray:
    """Mean of ``img`` over the ring shape at every position (valid mode).

    Parameters
    ----------
    img : numpy.ndarray
        Grey image, shape (H, W).
    ring : numpy.ndarray
        float32 0/1 ring mask of shape (rh, rw).

    Returns
    -------
    numpy.ndarray
        float32 means of shape (H - rh + 1, W - rw + 1), indexed by the box's top-left.
    """
    return cv2.matchTemplate(img.astype(np.float32), ring, cv2.TM_CCORR) / float(ring.sum())


def harmonic_membrane(region: np.ndarray, boundary: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Solve ΔM = 0 on ``region`` (4-neighbour Laplacian) with M = ``boundary`` (H×W×C) on the
    pixels outside it and a zero normal derivative at the image edge; M at the region's pixels
    (n×C) and their (rows, cols).

    Parameters
    ----------
    region : numpy.ndarray
        Boolean mask of the pixels to solve for, shape (H, W).
    boundary : numpy.ndarray
        Values of shape (H, W, C); only those of pixels outside ``region`` next to it are read.

    Returns
    -------
    values : numpy.ndarray
        M at the region's pixels, shape (n, C).
    pixels : tuple of numpy.ndarray
        The region's (rows, cols), in ``np.nonzero`` order.
    """
    h, w = region.shape
    rr, cc = np.nonzero(region)
    n = len(rr)
    index = np.full((h, w), -1, np.int64)
    index[rr, cc] = np.arange(n)
    diag, rhs = np.zeros(n), np.zeros((n, boundary.shape[-1]))
    rows, cols = [], []
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        r2, c2 = rr + dr, cc + dc
        inside = (r2 >= 0) & (r2 < h) & (c2 >= 0) & (c2 < w)
        diag += inside
        r2, c2 = np.where(inside, r2, 0), np.where(inside, c2, 0)
        nb = np.where(inside, index[r2, c2], -1)
        rows.append(np.flatnonzero(nb >= 0))
        cols.append(nb[nb >= 0])
        outer = inside & (nb < 0)
        rhs[outer] += boundary[r2[outer], c2[outer]]
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    a = sparse.csc_matrix((np.concatenate([diag, -np.ones(len(r_all))]),
                           (np.concatenate([np.arange(n), r_all]), np.concatenate([np.arange(n), c_all]))), shape=(n, n))
    return np.asarray(spsolve(a, rhs)).reshape(n, -1), (rr, cc)


def median_residual(img: np.ndarray) -> np.ndarray:
    """|grey − its 3×3 median| of an H×W×C image: a noise level that edges barely move.

    Parameters
    ----------
    img : numpy.ndarray
        Image of shape (H, W, C), C 1 or 3, float grey levels (rounded and clipped to uint8).

    Returns
    -------
    numpy.ndarray
        float32 residual of shape (H, W), in grey levels.
    """
    img = np.clip(img + 0.5, 0, 255).astype(np.uint8)
    gray = to_gray(img) if img.shape[-1] == 3 else img[..., 0]
    return np.abs(gray.astype(np.float32) - cv2.medianBlur(gray, 3).astype(np.float32))


class Graft:
    """Structure-matched tissue graft with an exact membrane blend and matched noise (module doc)."""

    name = "graft"

    # addition: ring_px 6 (the detector's ring), top_k 4, sigma 2 px, match_sigma 1.5 px,
    # spread_floor 25 grey², texture_weight 10, bg_penalty 10 per unit share of background,
    # gain_range (0.5, 2): the paper gives no such values (docs/counterfactual.md)
    def __init__(self, ring_px: int = 6, top_k: int = 4, sigma: float = 2.0, match_sigma: float = 1.5,
                 spread_floor: float = 25.0, texture_weight: float = 10.0, bg_penalty: float = 10.0,
                 gain_range: tuple[float, float] = (0.5, 2.0)):
        self.ring_px, self.top_k, self.sigma, self.gain_range = ring_px, top_k, sigma, gain_range
        self.match_sigma, self.spread_floor, self.texture_weight, self.bg_penalty = match_sigma, spread_floor, texture_weight, bg_penalty

    def choose_source(self, image: np.ndarray, region: np.ndarray, avoid: np.ndarray | None,
                      rng: np.random.Generator) -> tuple[tuple[int, int], tuple[int, int]]:
        """(region box's top-left, source box's top-left): one of the ``top_k`` best ring
        matches among positions whose patch touches neither the region nor ``avoid``."""
        forbidden = geometry.touch_zone(region, 3)
        if avoid is not None:
            forbidden |= geometry.touch_zone(avoid, 3)
        shape, (r0, c0) = geometry.crop_to_shape(region)
        offsets = geometry.valid_offsets(shape, ~forbidden)
        if len(offsets) == 0:
            raise MedScopeError("graft: no source tissue of the region's size")
        p = self.ring_px  # reflect-padded so positions near the image edge have a ring too
        gray = cv2.copyMakeBorder(to_gray(image), p, p, p, p, cv2.BORDER_REFLECT).astype(np.float32)
        ring, (g0, h0) = ring_box(np.pad(region, p), p)
        # the ring's box sits (r0 + p - g0, c0 + p - h0) above-left of the region's box in padded
        # coordinates, so a source region at (row, col) has its ring's box at (row + g0 - r0, ...)
        rows, cols = offsets[:, 0] + g0 - r0, offsets[:, 1] + h0 - c0
        smooth = cv2.GaussianBlur(gray, (0, 0), self.match_sigma)
        structure = ring_match_costs(smooth, ring, (g0, h0))[rows, cols]
        spread = float(smooth[g0:g0 + ring.shape[0], h0:h0 + ring.shape[1]][ring > 0].var())
        # texture: the ring's mean gradient magnitude (log), so a smooth source is not preferred
        # merely because its own fine texture adds nothing to the squared difference
        grad = np.log1p(np.hypot(cv2.Sobel(gray, cv2.CV_32F, 1, 0), cv2.Sobel(gray, cv2.CV_32F, 0, 1)))
        texture = ring_means(grad, ring)
        texture = (texture[rows, cols] - texture[g0, h0]) ** 2
        background = cv2.matchTemplate((~geometry.foreground_mask(image)).astype(np.float32),
                                       shape.astype(np.float32), cv2.TM_CCORR)[offsets[:, 0], offsets[:, 1]] / shape.sum()
        total = structure / (spread + self.spread_floor) + self.texture_weight * texture + self.bg_penalty * background
        best = np.argsort(total, kind="stable")[: self.top_k]
        sr, sc = offsets[best[int(rng.integers(len(best)))]]
        return (int(r0), int(c0)), (int(sr), int(sc))

    def fill(self, image, region, rng, avoid=None):
        h, w = region.shape
        (r0, c0), (sr, sc) = self.choose_source(image, region, avoid, rng)
        img = image.astype(np.float32).reshape(h, w, -1)
        warp = np.float32([[1, 0, c0 - sc], [0, 1, r0 - sr]])
        source = cv2.warpAffine(img, warp, (w, h), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REFLECT).reshape(img.shape)
        ring = geometry.dilate_mask(region, self.ring_px) & ~region
        detail = source - cv2.GaussianBlur(source, (0, 0), self.sigma).reshape(img.shape)
        gain = float(np.clip(median_residual(img)[ring].mean() / max(median_residual(source)[ring].mean(), 1e-3),
                             *self.gain_range))
        source = source + (gain - 1.0) * detail
        membrane, (rr, cc) = harmonic_membrane(region, img - source)
        out = image.copy().reshape(h, w, -1)
        out[rr, cc] = np.clip(source[rr, cc] + membrane + 0.5, 0, 255).astype(np.uint8)
        return out.reshape(image.shape)
