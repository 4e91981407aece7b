"""Pixel filters of the classical reader: foreground, noise, detail, blockiness and blob
responses on a grey image. Shared by the reader (medscope.models.classical) and its fitting
(medscope.models.classical_fit), so neither imports the other's internals."""

from __future__ import annotations

import cv2
import numpy as np

_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)
SCALES = (3.0, 5.0, 8.0, 12.0)


def foreground(gray: np.ndarray, level: float = 10.0, margin: int = 9) -> np.ndarray:
    """Pixels inside the imaged region: smoothed level above ``level``, eroded by ``margin``
    so that the border of an ultrasound fan or an endoscope's black corners is not read.

    Parameters
    ----------
    gray : numpy.ndarray
        Grey image, shape (h, w).
    level : float, optional
        Threshold on the Gaussian-smoothed (sigma 3 px) grey level.
    margin : int, optional
        Side of the square erosion kernel, in pixels.

    Returns
    -------
    numpy.ndarray
        Boolean mask of shape (h, w); all True when fewer than 64 pixels remain.
    """
    g = gray.astype(np.float32)
    mask = (cv2.GaussianBlur(g, (0, 0), 3) > level).astype(np.uint8)
    inner = cv2.erode(mask, np.ones((margin, margin), np.uint8)) > 0
    return inner if inner.sum() >= 64 else np.ones_like(inner)


def noise_sigma(gray: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Immerkær (1996) fast noise standard deviation of a grey image (grey levels).

    Parameters
    ----------
    gray : numpy.ndarray
        Grey image, shape (h, w).
    mask : numpy.ndarray or None, optional
        Boolean mask of the pixels to average over; None: all but the 1-px border.

    Returns
    -------
    float
        Noise standard deviation in grey levels; 0 for an image under 3 px on a side.
    """
    g = gray.astype(np.float32)
    if min(g.shape) < 3:
        return 0.0
    r = np.abs(cv2.filter2D(g, -1, _IMMERKAER))
    r = r[mask] if mask is not None else r[1:-1, 1:-1]
    return float(np.sqrt(np.pi / 2.0) * r.mean() / 6.0)


def detail_peak(gray: np.ndarray, mask: np.ndarray | None = None) -> float:
    """99.9th percentile of |I - G_1 * I| (grey levels): what survives of the finest detail.

    Parameters
    ----------
    gray : numpy.ndarray
        Grey image, shape (h, w).
    mask : numpy.ndarray or None, optional
        Boolean mask of the pixels read; None for all.

    Returns
    -------
    float
        The percentile, in grey levels.
    """
    g = gray.astype(np.float32)
    band = np.abs(g - cv2.GaussianBlur(g, (0, 0), 1.0))
    return float(np.percentile(band[mask] if mask is not None else band, 99.9))


def blockiness(gray: np.ndarray, block: int = 8) -> float:
    """Mean absolute jump across ``block``-px borders over the mean jump elsewhere (both axes);
    about 1 for natural images, well above for JPEG or nearest-neighbour up-sampling.

    Parameters
    ----------
    gray : numpy.ndarray
        Grey image at its stored resolution, shape (h, w).
    block : int, optional
        Block size in pixels (8 for JPEG).

    Returns
    -------
    float
        The larger ratio of the two axes; 1.0 when the image is under two blocks on both sides.
    """
    g = gray.astype(np.float32)
    ratios = []
    for d in (np.abs(np.diff(g, axis=1)), np.abs(np.diff(g, axis=0)).T):
        if d.shape[1] < 2 * block:
            continue
        on = (np.arange(d.shape[1]) % block) == block - 1
        ratios.append(d[:, on].mean() / (d[:, ~on].mean() + 1e-3))
    return float(max(ratios)) if ratios else 1.0


def _masked_blur(g: np.ndarray, m: np.ndarray, sigma: float) -> np.ndarray:
    """Normalised convolution: a Gaussian blur that only averages pixels inside ``m``, so the
    black outside of a fan or scope does not darken the inside near its border."""
    num = cv2.GaussianBlur(g * m, (0, 0), sigma)
    den = cv2.GaussianBlur(m, (0, 0), sigma)
    return num / np.maximum(den, 1e-3)


def dog(g: np.ndarray, s: float, m: np.ndarray | None = None) -> np.ndarray:
    """Difference of Gaussians at scale ``s`` (surround 2.5 s), inside ``m`` if given.

    Parameters
    ----------
    g : numpy.ndarray
        float32 grey image, shape (h, w).
    s : float
        Centre scale (Gaussian sigma) in pixels.
    m : numpy.ndarray or None, optional
        Boolean mask; when given, blurs average only inside it and the response is 0 outside.

    Returns
    -------
    numpy.ndarray
        float32 response of shape (h, w), in grey levels.
    """
    if m is None:
        return cv2.GaussianBlur(g, (0, 0), s) - cv2.GaussianBlur(g, (0, 0), 2.5 * s)
    mf = m.astype(np.float32)
    return (_masked_blur(g, mf, s) - _masked_blur(g, mf, 2.5 * s)) * mf


def strongest_blob(gray: np.ndarray, mask: np.ndarray | None = None) -> tuple[float, tuple[float, float, float]]:
    """(z, (x, y, scale)): the largest |DoG| response inside ``mask`` in robust-z units.

    Parameters
    ----------
    gray : numpy.ndarray
        Grey image, shape (h, w).
    mask : numpy.ndarray or None, optional
        Boolean mask of the pixels read; None for all.

    Returns
    -------
    z : float
        |DoG| peak over 1.4826 x MAD of the response, the best over ``SCALES``; 0 when every response
        is flat.
    peak : tuple of float
        (x, y, scale) of the peak, in pixels; the image centre at the first scale when z is 0.
    """
    g = gray.astype(np.float32)
    best_z, best = 0.0, (g.shape[1] / 2, g.shape[0] / 2, SCALES[0])
    for s in SCALES:
        d = dog(g, s, mask)
        vals = d[mask] if mask is not None else d
        spread = 1.4826 * float(np.median(np.abs(vals - np.median(vals))))
        if spread < 1e-3:  # flat response: a featureless image has no blob, whatever the max
            continue
        idx = int(np.argmax(np.abs(d)))
        z = float(np.abs(d).flat[idx]) / spread
        if z > best_z:
            y, x = divmod(idx, g.shape[1])
            best_z, best = z, (float(x), float(y), s)
    return best_z, best


def _blob_box(g: np.ndarray, x: float, y: float, s: float, mask: np.ndarray | None = None) -> tuple[int, int, int, int]:
    """Box (0-1000) of the connected region around the peak where the DoG keeps at least
    half the peak's value and sign (the peak of a small scale can sit on the blob's rim)."""
    d = dog(g, s, mask)
    peak = d[int(y), int(x)]
    region = (d * np.sign(peak) >= 0.5 * abs(peak)).astype(np.uint8)
    _, labels = cv2.connectedComponents(region)
    ys, xs = np.nonzero(labels == labels[int(y), int(x)])
    gh, gw = g.shape
    return (int(1000 * xs.min() / gw), int(1000 * ys.min() / gh),
            int(1000 * (xs.max() + 1) / gw), int(1000 * (ys.max() + 1) / gh))
