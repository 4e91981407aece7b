"""PNG bytes <-> numpy arrays. Images travel as PNG bytes inside Parquet (docs/design.md)."""

from __future__ import annotations

import functools
import io
import warnings

import cv2
import numpy as np

from medscope.errors import MedScopeError


def encode_png(array: np.ndarray) -> bytes:
    """Lossless, deterministic PNG of a uint8 (H, W) or RGB (H, W, 3) array.

    Parameters
    ----------
    array : numpy.ndarray
        uint8 (H, W) gray or (H, W, 3) RGB pixels; a bool array is written as 0 / 255.

    Returns
    -------
    bytes
        The PNG file (compression level 3).

    Raises
    ------
    MedScopeError
        When the pixels are not uint8 (or bool), the shape is neither (H, W) nor (H, W, 3), or encoding fails.
    """
    array = np.asarray(array)
    if array.dtype == bool:
        array = array.astype(np.uint8) * 255
    if array.dtype != np.uint8:
        raise MedScopeError(f"encode_png needs uint8 pixels, got {array.dtype}")
    if array.ndim == 3 and array.shape[2] == 3:
        array = cv2.cvtColor(array, cv2.COLOR_RGB2BGR)
    elif array.ndim != 2:
        raise MedScopeError(f"encode_png needs (H, W) or (H, W, 3), got shape {array.shape}")
    ok, buf = cv2.imencode(".png", array, [cv2.IMWRITE_PNG_COMPRESSION, 3])
    if not ok:
        raise MedScopeError("PNG encoding failed")
    return buf.tobytes()


@functools.lru_cache(maxsize=64)
def blank_png(height: int, width: int, value: int = 128) -> bytes:
    """PNG of a uniform gray RGB image: the blind conditions' stand-in for an image of that size
    (benchmark-MCQ paper blind arm, organ-presence blind). Cached by size: a blind sweep sends one per
    episode, and encoding a 144-slice montage's blank took ~50 ms, most of an episode's time.

    Parameters
    ----------
    height : int
        Image height in pixels.
    width : int
        Image width in pixels.
    value : int, optional
        Gray level of every channel, 0-255. Default 128.

    Returns
    -------
    bytes
        PNG of a (height, width, 3) uint8 image filled with ``value``.

    References
    ----------
    .. [1] Benchmark-MCQ paper, blind arm.
    .. [2] Organ-presence paper, blind condition.
    """
    return encode_png(np.full((int(height), int(width), 3), int(value), dtype=np.uint8))


# addition: pixel budget of every decode of image bytes held in a table or manifest: the
# same default as the importer's ``limits.max_image_pixels`` (docs/cohorts-bad-input.md).
MAX_DECODE_PIXELS = 50_000_000


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the header alone; MedScopeError when no header can be read.

    Parameters
    ----------
    data : bytes
        Image file bytes in any format Pillow reads.

    Returns
    -------
    tuple of int
        ``(width, height)`` in pixels.

    Raises
    ------
    MedScopeError
        When Pillow refuses the image as a decompression bomb, or the bytes cannot be read as an image.
    """
    from PIL import Image

    try:
        with warnings.catch_warnings():  # the caller's budget decides, not Pillow's warning
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:  # lazy: reads the header, decodes nothing
                return img.size
    except Image.DecompressionBombError as err:
        raise MedScopeError(f"image is over the decode budget ({err})") from None
    except Exception as err:  # noqa: BLE001 - Pillow raises many types for broken files
        raise MedScopeError(f"image bytes could not be decoded (corrupt or not an image: {type(err).__name__})") from None


def decode_png(data: bytes, *, gray: bool = False, max_pixels: int | None = None) -> np.ndarray:
    """Decode image bytes (PNG, JPEG, ...) to uint8 RGB (H, W, 3), or (H, W) with ``gray``.

    The header's width x height is checked against ``max_pixels`` (default
    :data:`MAX_DECODE_PIXELS`) before OpenCV allocates: a 250 KB PNG in a table may claim
    gigabytes of pixels.

    Parameters
    ----------
    data : bytes
        Image file bytes (any format OpenCV decodes).
    gray : bool, optional
        Decode to one luminance channel. Default False.
    max_pixels : int or None, optional
        Pixel budget (width x height) checked on the header; ``None`` for :data:`MAX_DECODE_PIXELS`.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3) RGB, or (H, W) with ``gray``.

    Raises
    ------
    MedScopeError
        When ``data`` is None, the header cannot be read, the image is over the pixel budget, or it
        cannot be decoded.
    """
    if data is None:
        raise MedScopeError("no image bytes to decode")
    w, h = image_size(bytes(data))
    limit = MAX_DECODE_PIXELS if max_pixels is None else max_pixels
    if w * h > limit:
        raise MedScopeError(f"image of {w}x{h} = {w * h} pixels is over the {limit}-pixel decode budget")
    buf = np.frombuffer(data, dtype=np.uint8)
    flag = cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR
    img = cv2.imdecode(buf, flag)
    if img is None:
        raise MedScopeError("image bytes could not be decoded (corrupt or not an image)")
    if not gray:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return img


def decode_mask(data: bytes) -> np.ndarray:
    """Decode a mask PNG to a boolean (H, W) array.

    Parameters
    ----------
    data : bytes
        Mask image bytes, decoded as gray within :data:`MAX_DECODE_PIXELS`.

    Returns
    -------
    numpy.ndarray
        bool (H, W), True where the gray value is above 0.

    Raises
    ------
    MedScopeError
        As :func:`decode_png`.
    """
    return decode_png(data, gray=True) > 0


def to_gray(image: np.ndarray) -> np.ndarray:
    """uint8 (H, W) luminance of an RGB or gray image.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 (H, W) gray or (H, W, 3) RGB.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W): the input itself when already 2-D, else OpenCV's RGB-to-gray conversion.
    """
    if image.ndim == 2:
        return image
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)


def to_rgb(image: np.ndarray) -> np.ndarray:
    """uint8 (H, W, 3) of an RGB or gray image.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 (H, W) gray or (H, W, 3) RGB.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3): the input itself when already 3-D, else the gray channel repeated three times.
    """
    if image.ndim == 3:
        return image
    return np.repeat(image[:, :, None], 3, axis=2)


def resize_long_side(image: np.ndarray, max_side: int) -> np.ndarray:
    """Downscale (never upscale) so the long side is at most ``max_side`` pixels.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W) or (H, W, C) image.
    max_side : int
        Largest allowed long side, in pixels.

    Returns
    -------
    numpy.ndarray
        The input itself when its long side is already at most ``max_side``; else a copy resized with
        area interpolation, each side rounded and at least 1 pixel.
    """
    h, w = image.shape[:2]
    scale = max_side / max(h, w)
    if scale >= 1.0:
        return image
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)
