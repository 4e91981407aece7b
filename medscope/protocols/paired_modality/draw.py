"""Procedurally drawn, photo-like patches of skin, nail and face regions, with and without a sign.

Not medical images: a generated stand-in so the paired-modality protocol runs end to end with no
image model and no external service. Each subject (skin tone, texture, lighting) is drawn from
a seed, and the two photographs of a condition share it ("same person, other finding", the paired-modality paper
§3.3): the base is drawn once, then either the disease sign or its look-alike is painted on.

Signs and look-alikes (paired-modality paper §3.3 examples):
- skin: ``vesicles`` (clustered pale vesicles on red halos, some crusted; chickenpox) vs
  ``acne`` (scattered small red papules, a few white-headed);
- nail: ``cyanosis`` (blue-grey nail beds and fingertip) vs ``nail_polish`` (opaque glossy
  purple on the nail plate only);
- face: ``ecchymosis`` (irregular purple-blue bruise fading to yellow-green at the rim) vs
  ``port_wine`` (sharply bordered, uniform pink-red patch);
- ``none``: the base alone.
"""

from __future__ import annotations

import cv2
import numpy as np

from medscope.seeding import rng_for

REGIONS = ("skin", "nail", "face")
MARKS = {"skin": ("vesicles", "acne"), "nail": ("cyanosis", "nail_polish"), "face": ("ecchymosis", "port_wine")}
# Fitzpatrick-like range of skin tones (RGB, 0-1)
TONES = np.array([[0.96, 0.80, 0.69], [0.90, 0.72, 0.58], [0.80, 0.60, 0.45], [0.65, 0.46, 0.32],
                  [0.50, 0.34, 0.22], [0.36, 0.24, 0.16]])


def _noise(rng, shape, sigma):
    n = rng.standard_normal(shape).astype(np.float32)
    n = cv2.GaussianBlur(n, (0, 0), sigma)
    return n / (n.std() + 1e-6)


def _blend(img, mask, color, alpha=1.0):
    m = np.clip(mask, 0, 1)[..., None] * alpha
    return img * (1 - m) + np.asarray(color, np.float32) * m


def _disc(h, w, cy, cx, r, soft=1.0):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    d = np.hypot(yy - cy, xx - cx)
    return np.clip((r - d) / soft + 0.5, 0, 1)


def base(region: str, seed: int, size: int = 256) -> tuple[np.ndarray, dict]:
    """The subject without any finding: float RGB (H, W, 3) in 0..1 and its geometry.

    Parameters
    ----------
    region : str
        'skin', 'nail' or 'face'; a nail gets a finger and nail plate on a plain background, a face lips
        and a cheek position.
    seed : int
        The subject's seed (skin tone, lighting, texture, geometry).
    size : int, optional
        Height and width in pixels (default 256).

    Returns
    -------
    img : numpy.ndarray
        float ``(size, size, 3)`` RGB, about 0..1.
    geo : dict
        ``tone`` (RGB list), and per region the ``nail`` and ``finger`` masks or the ``cheek`` centre
        (y, x), for :func:`paint`.

    References
    ----------
    .. [1] paired-modality paper, §3.3.
    """
    rng = rng_for(seed, "subject")
    h = w = size
    tone = TONES[rng.integers(len(TONES))] * rng.uniform(0.95, 1.05, 3)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    light = 0.85 + 0.2 * ((xx / w) * np.cos(rng.uniform(0, 6.3)) + (yy / h) * np.sin(rng.uniform(0, 6.3)))
    img = np.ones((h, w, 3), np.float32) * tone * light[..., None]
    img *= (1 + 0.04 * _noise(rng, (h, w), 6))[..., None]
    img *= (1 + 0.02 * _noise(rng, (h, w), 1))[..., None]  # pores / fine texture
    geo: dict = {"tone": tone.tolist()}
    if region == "nail":
        bg = np.array([0.85, 0.86, 0.88]) * rng.uniform(0.8, 1.0)
        finger = ((xx - w / 2) / (0.28 * w)) ** 2 + (np.clip(yy - 0.35 * h, 0, None) / (0.9 * h)) ** 2 <= 1
        finger &= yy > 0.12 * h
        finger = cv2.GaussianBlur(finger.astype(np.float32), (0, 0), 2)
        img = _blend(np.ones_like(img) * bg, finger, 0) + img * finger[..., None]
        nail = (((xx - w / 2) / (0.17 * w)) ** 2 + ((yy - 0.4 * h) / (0.22 * h)) ** 2 <= 1).astype(np.float32)
        nail = cv2.GaussianBlur(nail, (0, 0), 1.5)
        img = _blend(img, nail, tone * np.array([1.02, 0.88, 0.88]) + 0.08, 0.7)
        geo.update(nail=nail, finger=finger)
    elif region == "face":
        lips = (((xx - w / 2) / (0.2 * w)) ** 2 + ((yy - 0.82 * h) / (0.06 * h)) ** 2 <= 1).astype(np.float32)
        img = _blend(img, cv2.GaussianBlur(lips, (0, 0), 2), tone * np.array([0.95, 0.6, 0.62]), 0.8)
        geo.update(cheek=(0.42 * h + rng.uniform(-12, 12), (0.3 if rng.random() < 0.5 else 0.7) * w))
    return img, geo


def paint(img: np.ndarray, geo: dict, region: str, mark: str, seed: int) -> np.ndarray:
    """``img`` with the finding ``mark`` painted on (see the module docstring).

    Parameters
    ----------
    img : numpy.ndarray
        float ``(H, W, 3)`` RGB base (:func:`base`); not modified.
    geo : dict
        The base's geometry (:func:`base`); cyanosis and nail polish need the nail, ecchymosis and
        port-wine stain the cheek.
    region : str
        The base's region.
    mark : str
        'vesicles', 'acne', 'cyanosis', 'nail_polish', 'ecchymosis', 'port_wine' or 'none'.
    seed : int
        Seed of the mark's placement.

    Returns
    -------
    numpy.ndarray
        float ``(H, W, 3)`` RGB with the mark painted on (a copy of ``img`` for 'none').

    Raises
    ------
    ValueError
        When ``mark`` is not known.

    References
    ----------
    .. [1] paired-modality paper, §3.3.
    """
    rng = rng_for(seed, "mark", mark)
    h, w = img.shape[:2]
    out = img.copy()
    if mark == "vesicles":
        cy, cx = rng.uniform(0.35, 0.65, 2) * (h, w)
        for _ in range(rng.integers(14, 22)):
            y, x = cy + rng.normal(0, 0.14 * h), cx + rng.normal(0, 0.14 * w)
            r = rng.uniform(3.5, 6.5)
            out = _blend(out, _disc(h, w, y, x, 1.9 * r, 2.5), (0.85, 0.3, 0.3), 0.7)  # red halo
            if rng.random() < 0.4:
                out = _blend(out, _disc(h, w, y, x, r, 1.0), (0.55, 0.38, 0.15), 0.95)  # crust
            else:
                out = _blend(out, _disc(h, w, y, x, r, 1.0), (0.97, 0.93, 0.82), 0.85)  # clear vesicle
                out = _blend(out, _disc(h, w, y - r / 3, x - r / 3, r / 3, 0.8), (1, 1, 1), 0.8)  # glint
    elif mark == "acne":
        for _ in range(rng.integers(6, 11)):
            y, x = rng.uniform(0.15, 0.85, 2) * (h, w)
            r = rng.uniform(2.5, 4.5)
            out = _blend(out, _disc(h, w, y, x, 1.5 * r, 2.0), (0.8, 0.35, 0.32), 0.55)
            if rng.random() < 0.35:
                out = _blend(out, _disc(h, w, y, x, r / 2.5, 0.8), (0.98, 0.96, 0.85), 0.9)
    elif mark == "cyanosis":
        tip = cv2.GaussianBlur((np.mgrid[0:h, 0:w][0] < 0.62 * h).astype(np.float32), (0, 0), 8)
        bed = np.clip(geo["nail"] + 0.35 * geo["finger"] * tip, 0, 1)
        out = _blend(out, bed, (0.42, 0.45, 0.68), 0.55)
    elif mark == "nail_polish":
        plate = cv2.erode(geo["nail"], np.ones((3, 3), np.uint8))
        out = _blend(out, plate, (0.45, 0.12, 0.45), 0.95)
        out = _blend(out, _disc(h, w, 0.33 * h, 0.45 * w, 0.03 * w, 2), (0.95, 0.85, 0.95), 0.7)  # gloss
    elif mark in ("ecchymosis", "port_wine"):
        cy, cx = geo["cheek"]
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        ang = np.arctan2(yy - cy, xx - cx)
        if mark == "ecchymosis":
            wob = 1 + 0.25 * np.sin(3 * ang + rng.uniform(0, 6.3)) + 0.1 * np.sin(7 * ang)
            d = np.hypot(yy - cy, xx - cx) / (0.16 * w * wob)
            out = _blend(out, np.clip(1.4 - d, 0, 1), (0.55, 0.62, 0.28), 0.45)  # yellow-green rim
            out = _blend(out, np.clip(1.0 - d, 0, 1) ** 0.7, (0.35, 0.2, 0.42), 0.75)  # purple core
        else:
            d = np.hypot(yy - cy, (xx - cx) * 0.8) / (0.2 * w)
            out = _blend(out, np.clip((1 - d) * 12, 0, 1), (0.78, 0.25, 0.38), 0.6)  # sharp border
    elif mark != "none":
        raise ValueError(f"unknown mark {mark!r}; known: {sorted({m for v in MARKS.values() for m in v})} or none")
    return out


def to_uint8(img: np.ndarray) -> np.ndarray:
    """A float image in 0..1 as uint8 (clipped to 0..255).

    Parameters
    ----------
    img : numpy.ndarray
        float image, about 0..1.

    Returns
    -------
    numpy.ndarray of uint8
        ``img`` x 255, clipped, same shape.
    """
    return np.clip(img * 255, 0, 255).astype(np.uint8)


def photo(region: str, mark: str, seed: int, size: int = 256, mark_seed: int | None = None) -> np.ndarray:
    """uint8 RGB photograph of ``region`` (subject from ``seed``) with ``mark`` painted on (its
    placement from ``mark_seed``, default ``seed``).

    Parameters
    ----------
    region : str
        'skin', 'nail' or 'face'.
    mark : str
        The finding painted on ('none' for the base alone; see :func:`paint`).
    seed : int
        The subject's seed.
    size : int, optional
        Height and width in pixels (default 256).
    mark_seed : int or None, optional
        Seed of the mark's placement; None for ``seed``.

    Returns
    -------
    numpy.ndarray of uint8
        ``(size, size, 3)`` RGB photograph.

    Raises
    ------
    ValueError
        When ``region`` or ``mark`` is not known.

    References
    ----------
    .. [1] paired-modality paper, §3.3.
    """
    if region not in REGIONS:
        raise ValueError(f"unknown region {region!r}; known: {REGIONS}")
    img, geo = base(region, seed, size)
    return to_uint8(paint(img, geo, region, mark, seed if mark_seed is None else mark_seed))


def radiograph(seed: int, size: int = 320, pattern: str = "nodular") -> np.ndarray:
    """A phantom chest radiograph (medscope.cohorts.phantom) with diffuse opacities of a
    ``pattern`` (nodular, patchy, none): the radiograph every photograph of a condition shares.

    Parameters
    ----------
    seed : int
        Seed of the radiograph (opacities and chest).
    size : int, optional
        Height and width in pixels (default 320).
    pattern : str, optional
        'nodular' (18 small opacities), 'patchy' (5 larger ones) or 'none'; any other value draws
        patchy opacities.

    Returns
    -------
    numpy.ndarray of uint8
        ``(size, size)`` gray radiograph.
    """
    from medscope.cohorts.phantom import radiograph as chest

    rng = rng_for(seed, "radiograph")
    lesion = None
    if pattern != "none":
        lesion = np.zeros((size, size), bool)
        yy, xx = np.mgrid[0:size, 0:size]
        n, r = (18, (2, 5)) if pattern == "nodular" else (5, (10, 20))
        for _ in range(n):
            cy, cx = rng.uniform(0.3, 0.7) * size, size / 2 + rng.choice([-1, 1]) * rng.uniform(0.12, 0.3) * size
            lesion |= np.hypot(yy - cy, xx - cx) <= rng.uniform(*r)
    img, _ = chest(rng, size, size, lesion, 0.8)
    return img
