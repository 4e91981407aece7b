"""Small synthetic cases for tests and benchmarks when no cohort is at hand.

Each image is textured tissue (smoothed noise) on a dark background; a lesion case adds a
bright blob with its mask. Everything is drawn from ``rng_for(seed, "synthetic", i)``.
"""

from __future__ import annotations

import cv2
import numpy as np

from medscope.images import encode_png
from medscope.seeding import rng_for

TYPES = ("xray", "ultrasound", "mri")


def tissue(rng: np.random.Generator, size: int = 128, level: float = 120.0) -> np.ndarray:
    """A grey uint8 image: a textured disc of tissue on a black background.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the texture.
    size : int, optional
        Side of the square image, in pixels.
    level : float, optional
        Mean grey level of the tissue.

    Returns
    -------
    numpy.ndarray
        uint8 image of shape (size, size).
    """
    noise = cv2.GaussianBlur(rng.normal(0, 1, (size, size)).astype(np.float32), (0, 0), 2.0)
    img = level + 25.0 * noise / (noise.std() + 1e-6)
    yy, xx = np.mgrid[:size, :size]
    disc = (yy - size / 2) ** 2 + (xx - size / 2) ** 2 <= (0.47 * size) ** 2
    img[~disc] = 0
    return np.clip(img, 0, 255).astype(np.uint8)


def blob(size: int, center: tuple[int, int], radius: float) -> np.ndarray:
    """A filled disc mask.

    Parameters
    ----------
    size : int
        Side of the square mask, in pixels.
    center : tuple of int
        (row, col) of the centre.
    radius : float
        Radius in pixels.

    Returns
    -------
    numpy.ndarray
        Boolean mask of shape (size, size).
    """
    yy, xx = np.mgrid[:size, :size]
    return (yy - center[0]) ** 2 + (xx - center[1]) ** 2 <= radius**2


def case_row(case_id: str, image: np.ndarray, mask: np.ndarray | None, imaging_type: str = "xray",
             patient_id: str | None = None, source: str = "synthetic", split: str | None = None) -> dict:
    """A cases row for ``image`` (PNG-encoded) and its optional lesion ``mask``.

    Parameters
    ----------
    case_id : str
        The case's id.
    image : numpy.ndarray
        uint8 image, grey (h, w) or RGB (h, w, 3).
    mask : numpy.ndarray or None
        Boolean lesion mask, shape (h, w); None (or empty) for a lesion-free case.
    imaging_type : str, optional
        The imaging type, e.g. "xray".
    patient_id : str or None, optional
        The patient's id.
    source : str, optional
        The source (cohort) name.
    split : str or None, optional
        A fixed split, or None.

    Returns
    -------
    dict
        A row of the ``cases`` table (finding "nodule", presence question, lesion box and area fraction).
    """
    h, w = image.shape[:2]
    has = mask is not None and bool(mask.any())
    box = None
    if has:
        rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
        box = [int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1]
    return {
        "case_id": case_id, "source": source, "imaging_type": imaging_type, "patient_id": patient_id,
        "group_id": None, "split": split, "image": encode_png(image),
        "mask": encode_png(mask) if mask is not None else None, "width": w, "height": h,
        "finding": "nodule", "question": "Is there a nodule?", "question_kind": "presence",
        "has_lesion": has, "critical": False, "lesion_area_frac": float(mask.mean()) if has else 0.0,
        "lesion_bbox": box, "source_file": None, "private": False, "endpoint_allowlist": None,
    }


def synthetic_cases(n: int, seed: int = 0, size: int = 128, negative_every: int = 4) -> list[dict]:
    """``n`` cases: every ``negative_every``-th lesion-free, the rest with a bright blob.

    Parameters
    ----------
    n : int
        Number of cases.
    seed : int, optional
        Run seed for ``rng_for``.
    size : int, optional
        Image side in pixels.
    negative_every : int, optional
        Period of lesion-free cases.

    Returns
    -------
    list of dict
        Cases rows ``syn-0000`` on, imaging types cycling through ``TYPES``, two cases a patient.
    """
    rows = []
    for i in range(n):
        rng = rng_for(seed, "synthetic", i)
        image = tissue(rng, size)
        kind = TYPES[i % len(TYPES)]
        mask = None
        if i % negative_every != negative_every - 1:
            radius = float(rng.uniform(0.05, 0.09) * size)
            c = (int(rng.integers(size // 3, 2 * size // 3)), int(rng.integers(size // 3, 2 * size // 3)))
            mask = blob(size, c, radius)
            image = image.copy()
            image[mask] = np.clip(image[mask].astype(int) + 90, 0, 255).astype(np.uint8)
        rows.append(case_row(f"syn-{i:04d}", image, mask, kind, patient_id=f"p{i // 2:03d}"))
    return rows
