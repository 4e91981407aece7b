"""Rendering CT slices for a VLM: windowing, triple-window false colour, 12x12 montage.

Single-window grayscale replicated to three channels is the probe's render (organ-presence paper,
W400/L40); the triple-window false colour is MedGemma's native CT encoding, kept as an
alternative so renders can be compared; the montage is the benchmark-MCQ paper's one-composite-per-sequence
input for 2D models.
"""

from __future__ import annotations

import numpy as np

from medscope.images import resize_long_side
from medscope.volumes.nifti import axial_slice

# Organ-appropriate presets (width, level) in HU for montages (benchmark-MCQ paper, "organ-appropriate windowing").
WINDOW_PRESETS: dict[str, tuple[float, float]] = {
    "soft_tissue": (400.0, 40.0),
    "abdomen": (400.0, 40.0),
    "liver": (150.0, 60.0),
    "lung": (1500.0, -600.0),
    "mediastinum": (350.0, 40.0),
    "bone": (1800.0, 400.0),
    "brain": (80.0, 40.0),
}


def apply_window(hu: np.ndarray, width: float, level: float) -> np.ndarray:
    """HU -> uint8: level - width/2 maps to 0, level + width/2 to 255, linear and clipped between.

    Parameters
    ----------
    hu : array_like
        Intensities in Hounsfield units, any shape.
    width : float
        Window width in HU, > 0.
    level : float
        Window centre in HU.

    Returns
    -------
    numpy.ndarray of uint8
        Same shape, rounded to the nearest grey level.
    """
    lo = level - width / 2.0
    scaled = (np.asarray(hu, dtype=np.float64) - lo) / float(width)
    return np.floor(np.clip(scaled, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def render_gray(hu_slice: np.ndarray, width: float = 400.0, level: float = 40.0) -> np.ndarray:
    """One window as grayscale replicated to (H, W, 3) uint8 (organ-presence paper: soft tissue W400/L40).

    Parameters
    ----------
    hu_slice : numpy.ndarray
        (H, W) slice in HU.
    width : float, optional
        Window width in HU.
    level : float, optional
        Window centre in HU.

    Returns
    -------
    numpy.ndarray of uint8
        (H, W, 3), three equal channels.

    References
    ----------
    .. [1] organ-presence paper
    """
    g = apply_window(hu_slice, width, level)
    return np.repeat(g[:, :, None], 3, axis=2)


def render_triple(hu_slice: np.ndarray, windows: list[tuple[float, float]]) -> np.ndarray:
    """Three windows as the R, G and B channels (MedGemma's native CT false colour).

    Parameters
    ----------
    hu_slice : numpy.ndarray
        (H, W) slice in HU.
    windows : list of tuple of (float, float)
        Exactly three ``(width, level)`` windows, for R, G and B.

    Returns
    -------
    numpy.ndarray of uint8
        (H, W, 3).

    Raises
    ------
    ValueError
        When ``windows`` does not hold three windows.
    """
    if len(windows) != 3:
        raise ValueError("render_triple needs three (width, level) windows")
    return np.stack([apply_window(hu_slice, w, lv) for w, lv in windows], axis=2)


def montage_indices(n_slices: int, n_tiles: int = 144) -> np.ndarray:
    """``n_tiles`` slice indices sampled uniformly from 0..n_slices-1 (repeats when the volume is short).

    Parameters
    ----------
    n_slices : int
        Number of axial slices in the volume.
    n_tiles : int, optional
        Number of indices wanted.

    Returns
    -------
    numpy.ndarray of int
        (n_tiles,) non-decreasing indices from 0 to ``n_slices - 1``, evenly spaced and rounded.

    References
    ----------
    .. [1] benchmark-MCQ paper
    """
    return np.round(np.linspace(0, n_slices - 1, n_tiles)).astype(int)


def render_montage(
    volume_hu: np.ndarray,
    window: str | tuple[float, float] = "soft_tissue",
    grid: int = 12,
    max_side: int = 1536,
) -> np.ndarray:
    """The benchmark-MCQ paper montage: grid**2 uniformly sampled axial slices tiled row-major, long side <= max_side.

    ``volume_hu`` is a canonical (X, Y, Z) HU array; ``window`` a preset name or (width, level).
    Returns (H, W, 3) uint8, one composite per sequence.

    Parameters
    ----------
    volume_hu : numpy.ndarray
        Canonical (X, Y, Z) volume in HU.
    window : str or tuple of (float, float), optional
        A ``WINDOW_PRESETS`` name, or ``(width, level)`` in HU.
    grid : int, optional
        Tiles per row and per column.
    max_side : int, optional
        Longest side of the result in pixels.

    Returns
    -------
    numpy.ndarray of uint8
        (H, W, 3) montage, three equal channels.

    References
    ----------
    .. [1] benchmark-MCQ paper
    """
    width, level = WINDOW_PRESETS[window] if isinstance(window, str) else window
    idx = montage_indices(volume_hu.shape[2], grid * grid)
    tiles = [apply_window(axial_slice(volume_hu, int(k)), width, level) for k in idx]
    h, w = tiles[0].shape
    canvas = np.zeros((grid * h, grid * w), dtype=np.uint8)
    for n, tile in enumerate(tiles):
        r, c = divmod(n, grid)
        canvas[r * h : (r + 1) * h, c * w : (c + 1) * w] = tile
    canvas = resize_long_side(canvas, max_side)
    return np.repeat(canvas[:, :, None], 3, axis=2)
