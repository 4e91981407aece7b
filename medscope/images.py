"""PNG bytes <-> numpy arrays. Images travel as PNG bytes inside Parquet (docs/design.md)."""

from __future__ import annotations

import functools
import io
import warnings

import cv2
import numpy as np

from medscope.errors import MedScopeError


def encode_png(array: np.ndarray) -> bytes:
    """Lossless, deterministic PNG of a uint8 (H, W) or RGB (H, W, 3) array."""
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
    episode, and encoding a 144-slice montage's blank took ~50 ms, most of an episode's time."""
    return encode_png(np.full((int(height), int(width), 3), int(value), dtype=np.uint8))


# addition: pixel budget of every decode of image bytes held in a table or manifest: the
# same default as the importer's ``limits.max_image_pixels`` (docs/cohorts-bad-input.md).
MAX_DECODE_PIXELS = 50_000_000


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the header alone; MedScopeError when no header can be read."""
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
    """Decode a mask PNG to a boolean (H, W) array."""
    return decode_png(data, gray=True) > 0


def to_gray(image: np.ndarray) -> np.ndarray:
    """uint8 (H, W) luminance of an RGB or gray image."""
    if image.ndim == 2:
        return image
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)


def to_rgb(image: np.ndarray) -> np.ndarray:
    """uint8 (H, W, 3) of an RGB or gray image."""
    if image.ndim == 3:
        return image
    return np.repeat(image[:, :, None], 3, axis=2)


def resize_long_side(image: np.ndarray, max_side: int) -> np.ndarray:
    """Downscale (never upscale) so the long side is at most ``max_side`` pixels."""
    h, w = image.shape[:2]
    scale = max_side / max(h, w)
    if scale >= 1.0:
        return image
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)
