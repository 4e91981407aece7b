"""Image and mask bytes -> uint8 arrays for the cohort loaders (split out of common.py).

Pillow, through ``guarded.open_image``: the header is checked against the ``limits`` budgets
before anything is decoded, the EXIF orientation is applied to images and masks alike, and a
broken file is a ``InputRejected`` (``unreadable image`` / ``unreadable mask``), never an exception
that stops an import (docs/cohorts-bad-input.md). 16-bit and float images are stretched to 8
bits by their own range, a band of rows at a time; NaN / inf pixels are refused first.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from medscope.io import guarded
from medscope.io.bounded import InputRejected
from medscope.io.guarded import DEFAULT_LIMITS, Limits

_pil_error = guarded.pil_error


def decode_image(data: bytes, limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """Image bytes -> uint8 (H, W) gray or (H, W, 3) RGB, turned upright by its EXIF tag.

    Pillow rather than OpenCV, because OpenCV decodes a truncated JPEG with a warning and
    grey fill where Pillow raises. The header is checked against ``limits`` before decoding.
    16-bit and 32-bit images are scaled to 8 bits (see :func:`to_uint8`); alpha is dropped;
    RGB with three equal channels becomes gray.

    Parameters
    ----------
    data : bytes
        The encoded image file (PNG, JPEG, BMP, TIFF ...).
    limits : Limits, optional
        Budgets checked on the header before decoding (``max_image_pixels``, ``max_decoded_bytes``).

    Returns
    -------
    numpy.ndarray of uint8
        (H, W) for gray images, (H, W, 3) for colour ones.

    Raises
    ------
    InputRejected
        ``unreadable image`` for a file Pillow cannot decode, a budget exceeded, or
        ``non-finite pixels`` in a float image.
    """
    with guarded.open_image(data, limits, "image") as img:
        try:
            img.load()
            upright = guarded.exif_upright(img, "image")
            return _pil_to_array(upright)
        except InputRejected:
            raise
        except Exception as err:  # Pillow raises many types for broken files
            raise InputRejected("unreadable image", _pil_error(err)) from None


def _pil_to_array(img: Image.Image) -> np.ndarray:
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        return to_uint8(np.asarray(img))
    if mode in ("1", "L", "P", "LA", "PA"):
        if mode in ("P", "PA") and _palette_is_colour(img):
            return _collapse_gray(np.asarray(img.convert("RGB")))
        return np.asarray(img.convert("L"))
    return _collapse_gray(np.asarray(img.convert("RGB")))


def _palette_is_colour(img: Image.Image) -> bool:
    rgb = np.asarray(img.convert("RGB"))
    return not (np.array_equal(rgb[..., 0], rgb[..., 1]) and np.array_equal(rgb[..., 1], rgb[..., 2]))


def _collapse_gray(rgb: np.ndarray) -> np.ndarray:
    if np.array_equal(rgb[..., 0], rgb[..., 1]) and np.array_equal(rgb[..., 1], rgb[..., 2]):
        return np.ascontiguousarray(rgb[..., 0])
    return np.ascontiguousarray(rgb)


def to_uint8(array: np.ndarray) -> np.ndarray:
    """Scale any integer / float image to uint8 by its own min..max (never wrap modulo 256).

    Medical 16-bit files rarely use the full 0..65535 range (12-bit detectors store 0..4095),
    so a fixed ``/257`` would leave them nearly black; a per-image linear stretch keeps the
    ordering of every pixel and the full contrast.

    Parameters
    ----------
    array : array_like
        Image of any integer or float dtype, (H, W) or (H, W, C); channels past the third are
        dropped.

    Returns
    -------
    numpy.ndarray of uint8
        Same (H, W[, C]) shape, linearly stretched so the minimum maps to 0 and the maximum to
        255; all zeros for a constant image; a uint8 input is returned as is.

    Raises
    ------
    InputRejected
        ``non-finite pixels`` when a float image holds NaN or infinity.
    """
    a = np.asarray(array)
    if a.dtype == np.uint8:
        return a
    if a.ndim == 3:
        a = a[..., :3]
    if a.dtype.kind == "f":  # NaN / inf would stretch to garbage or an all-black case
        bad = sum(int(np.count_nonzero(~np.isfinite(a[r : r + 512]))) for r in range(0, a.shape[0], 512))
        if bad:
            raise InputRejected("non-finite pixels", f"{bad} NaN or infinite pixel(s)")
    lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
    out = np.zeros(a.shape, dtype=np.uint8)
    if hi <= lo:
        return out
    # float64 a band of rows at a time: a whole-image float copy would be 8x the input
    step = max(1, (1 << 18) // max(1, a[0].size))  # ~2 MB of float64 per temporary
    for r in range(0, a.shape[0], step):
        band = a[r : r + step].astype(np.float64)
        out[r : r + step] = np.clip(np.rint((band - lo) * (255.0 / (hi - lo))), 0, 255)
    return out


def decode_mask_array(data: bytes, limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """Mask bytes -> uint8 (H, W) of its raw values (colour masks reduced to their max channel).

    The header is checked against ``limits`` first (Pillow's bomb guard only warns for masks).

    Parameters
    ----------
    data : bytes
        The encoded mask file.
    limits : Limits, optional
        Budgets checked on the header before decoding.

    Returns
    -------
    numpy.ndarray of uint8
        (H, W) raw mask values: gray level, palette index, or the largest of R, G, B; 16-bit and
        float masks with values above 255 are stretched (:func:`to_uint8`).

    Raises
    ------
    InputRejected
        ``unreadable mask`` for a file Pillow cannot decode, or a budget exceeded.
    """
    with guarded.open_image(data, limits, "mask") as opened:
        try:
            opened.load()
            img = guarded.exif_upright(opened, "mask")
            if img.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
                raw = np.asarray(img)
                return to_uint8(raw) if raw.max() > 255 else raw.astype(np.uint8)
            if img.mode in ("P", "PA"):
                return np.asarray(img)  # palette index = label value
            if img.mode in ("1", "L", "LA"):
                return np.asarray(img.convert("L"))
            return np.asarray(img.convert("RGB")).max(axis=2)
        except InputRejected:
            raise
        except Exception as err:
            raise InputRejected("unreadable mask", _pil_error(err)) from None
