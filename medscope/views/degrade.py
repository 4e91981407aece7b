"""Degraded views (counterfactual paper, §3.2): images a careful reader should refuse to judge.

Each is a pure function of an RGB uint8 image (and a generator where it draws). Expected
answer for all of them: clarify.
"""

from __future__ import annotations

import cv2
import numpy as np

DEGRADATIONS = ("blur", "noise", "downup", "jpeg", "motion", "other_type")


def gaussian_blur(image: np.ndarray, divisor: float = 40.0) -> np.ndarray:
    """Gaussian blur with σ = max(h, w) / ``divisor``.

    Parameters
    ----------
    image : numpy.ndarray
        RGB image, uint8, shape (h, w, 3).
    divisor : float, optional
        σ is the image's longer side divided by this, in pixels.

    Returns
    -------
    numpy.ndarray
        The blurred image, same shape and dtype (reflected border).
    """
    sigma = max(image.shape[:2]) / divisor
    return cv2.GaussianBlur(image, (0, 0), sigmaX=sigma, sigmaY=sigma, borderType=cv2.BORDER_REFLECT)


def gaussian_noise(image: np.ndarray, rng: np.random.Generator, sigma: float = 60.0) -> np.ndarray:
    """Additive Gaussian noise of σ grey levels, clipped to [0, 255] (never wrapped in uint8).

    Parameters
    ----------
    image : numpy.ndarray
        RGB image, uint8, shape (h, w, 3).
    rng : numpy.random.Generator
        Source of the noise.
    sigma : float, optional
        Standard deviation of the noise, in grey levels.

    Returns
    -------
    numpy.ndarray
        The noisy image, uint8, same shape.
    """
    noisy = image.astype(np.float64) + rng.normal(0.0, sigma, size=image.shape)
    return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)


def down_up(image: np.ndarray, factor: int = 8) -> np.ndarray:
    """Down-sample by ``factor`` (area) and back up (nearest) to the original size.

    Parameters
    ----------
    image : numpy.ndarray
        RGB image, uint8, shape (h, w, 3).
    factor : int, optional
        Down-sampling factor per side (the small image is at least 1 x 1 px).

    Returns
    -------
    numpy.ndarray
        The blocky image at the original size (h, w).
    """
    h, w = image.shape[:2]
    small = cv2.resize(image, (max(1, w // factor), max(1, h // factor)), interpolation=cv2.INTER_AREA)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)


def jpeg(image: np.ndarray, quality: int = 5) -> np.ndarray:
    """A round trip through JPEG at ``quality``.

    Parameters
    ----------
    image : numpy.ndarray
        RGB image, uint8, shape (h, w, 3).
    quality : int, optional
        JPEG quality, 0-100 (OpenCV's scale; low is coarse).

    Returns
    -------
    numpy.ndarray
        The decoded RGB image, uint8, same shape.
    """
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def motion_blur(image: np.ndarray, rng: np.random.Generator, length_frac: float = 1 / 15) -> np.ndarray:
    """Linear motion blur: a line kernel of max(h, w)·``length_frac`` px at a random angle.

    Parameters
    ----------
    image : numpy.ndarray
        RGB image, uint8, shape (h, w, 3).
    rng : numpy.random.Generator
        Draws the blur angle, uniform in [0, 180) degrees.
    length_frac : float, optional
        Kernel length as a fraction of the longer side (odd, at least 3 px).

    Returns
    -------
    numpy.ndarray
        The blurred image, same shape and dtype (reflected border).
    """
    length = max(3, int(round(max(image.shape[:2]) * length_frac)) | 1)
    kernel = np.zeros((length, length), np.float32)
    kernel[length // 2, :] = 1.0
    angle = float(rng.uniform(0, 180))
    rot = cv2.getRotationMatrix2D((length / 2 - 0.5, length / 2 - 0.5), angle, 1.0)
    kernel = cv2.warpAffine(kernel, rot, (length, length))
    kernel /= kernel.sum()
    return cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REFLECT)


def other_type(image: np.ndarray, donor: np.ndarray) -> np.ndarray:
    """An image of another imaging type, at this image's size (the question no longer fits).

    Parameters
    ----------
    image : numpy.ndarray
        The image being replaced; only its size (h, w) is used.
    donor : numpy.ndarray
        RGB image of another imaging type, any size.

    Returns
    -------
    numpy.ndarray
        The donor resized (area interpolation) to (h, w).
    """
    h, w = image.shape[:2]
    return cv2.resize(donor, (w, h), interpolation=cv2.INTER_AREA)


def degrade(image: np.ndarray, kind: str, rng: np.random.Generator, *, donor: np.ndarray | None = None,
            blur_divisor: float = 40.0, noise_sigma: float = 60.0, downup_factor: int = 8,
            jpeg_quality: int = 5, motion_length_frac: float = 1 / 15) -> np.ndarray:
    """Apply degradation ``kind`` (one of DEGRADATIONS).

    Parameters
    ----------
    image : numpy.ndarray
        RGB image, uint8, shape (h, w, 3).
    kind : str
        One of ``DEGRADATIONS``: "blur", "noise", "downup", "jpeg", "motion", "other_type".
    rng : numpy.random.Generator
        Source of randomness for "noise" and "motion".
    donor : numpy.ndarray or None, optional
        Image of another imaging type; required for "other_type".
    blur_divisor : float, optional
        See `gaussian_blur`.
    noise_sigma : float, optional
        See `gaussian_noise`, in grey levels.
    downup_factor : int, optional
        See `down_up`.
    jpeg_quality : int, optional
        See `jpeg`, 0-100.
    motion_length_frac : float, optional
        See `motion_blur`.

    Returns
    -------
    numpy.ndarray
        The degraded RGB image, same size as ``image``.

    Raises
    ------
    ValueError
        If ``kind`` is unknown, or is "other_type" without a ``donor``.

    References
    ----------
    .. [1] Counterfactual paper, §3.2.
    """
    if kind == "blur":
        return gaussian_blur(image, blur_divisor)
    if kind == "noise":
        return gaussian_noise(image, rng, noise_sigma)
    if kind == "downup":
        return down_up(image, downup_factor)
    if kind == "jpeg":
        return jpeg(image, jpeg_quality)
    if kind == "motion":
        return motion_blur(image, rng, motion_length_frac)
    if kind == "other_type":
        if donor is None:
            raise ValueError("other_type needs a donor image of another imaging type")
        return other_type(image, donor)
    raise ValueError(f"unknown degradation {kind!r}")
