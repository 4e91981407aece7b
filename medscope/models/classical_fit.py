"""The fitted part of the classical pixel reader: a per-pixel logistic regression over
multi-scale blob responses (difference of Gaussians, determinant of Hessian), max-pooled into
one lesion score per image.

This is a radiomics-style baseline, NOT a medical model. It exists so that the demo report
can show a policy that follows the image (counterfactual paper §3.8: ESG > 0 needs answers that change
when the lesion is erased) beside constant policies that cannot.

What it reads: the pixels only. On a grey copy with long side ``SIZE`` px, inside the imaged
foreground, at scales ``SCALES`` (px): the DoG response and the polarity-signed square root of
the scale-normalised determinant of Hessian (blob-like, not edge- or ridge-like), both divided
by the DoG's robust spread (MAD) in the image, signed and absolute, clipped at +-20. Which of three pixel
families the image belongs to is read from the pixels as well (colour; grey with a dark
surround, like an ultrasound fan; grey filling the frame), and each family has its own weights.

How it is fitted (``fit_reader``): on views of the TRAIN split only, whatever their QC verdict,
labelled by their expected outcome (present | absent; degraded views are left to the quality
gates of ``classical.read_pixels``). Pixels of the ellipse inscribed in the lesion box of a
"present" view are positives, other foreground pixels are negatives (``per_image`` of each,
drawn with a fixed seed); an L2-penalised, class-balanced logistic regression is fitted with
L-BFGS (scipy; scikit-learn is not part of the environment); ``hard_rounds`` > 0 refits with
each image's highest-scoring background pixels added as hard negatives (off by default: on two
held-out phantom checks it helped one and hurt the other, within their noise). The image score is the maximum
of the Gaussian-smoothed logit map over its median; the decision threshold of each pixel family
is the one that maximises balanced accuracy (present vs absent views) on the same training
images. On the phantom it is a weak reader (it follows the image on some cases, not most). No mask, view kind or label
of an answered item is used at answer time.
"""

from __future__ import annotations

import json

import cv2
import numpy as np
from scipy.optimize import minimize

from medscope.io import records, safe_text, storage
from medscope.errors import MedScopeError
from medscope.images import decode_png

SIZE = 128
SCALES = (1.5, 2.5, 4.0, 6.0, 9.0, 13.0)
FAMILIES = ("colour", "grey_surround", "grey_full")
N_FEAT = 4 * len(SCALES)
FORMAT = "medscope-classical-reader/2"


def _to_gray(image: np.ndarray) -> tuple[np.ndarray, float]:
    gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    h, w = gray.shape
    scale = SIZE / max(h, w)
    g = cv2.resize(gray, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    return g.astype(np.float32), scale


def pixel_family(image: np.ndarray, fg: np.ndarray) -> int:
    """0 colour (red minus blue over 0.1 of full scale), 1 grey with a dark surround (under 80 %
    of the frame imaged), 2 grey filling the frame.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 grey (h, w) or RGB (h, w, 3) image.
    fg : numpy.ndarray
        Boolean foreground mask (any size; only its mean is read).

    Returns
    -------
    int
        Index into ``FAMILIES``: 0, 1 or 2.
    """
    if image.ndim == 3 and np.abs(image[..., 0].astype(np.float32) - image[..., 2]).mean() / 255 > 0.1:
        return 0
    return 1 if fg.mean() < 0.8 else 2


def hessian_blob(g: np.ndarray, s: float) -> np.ndarray:
    """Scale-normalised determinant-of-Hessian blob response at scale ``s``, signed by the
    blob's polarity (+ bright, - dark) and square-rooted back to intensity units. Unlike the
    DoG it is near zero on edges and ridges (ribs, folds, tissue layers), where one
    curvature vanishes.

    Parameters
    ----------
    g : numpy.ndarray
        float32 grey image, shape (H, W).
    s : float
        Gaussian scale in pixels.

    Returns
    -------
    numpy.ndarray
        float32 response of shape (H, W), in grey levels.
    """
    b = cv2.GaussianBlur(g, (0, 0), s)
    lxx = cv2.Sobel(b, cv2.CV_32F, 2, 0, ksize=3)
    lyy = cv2.Sobel(b, cv2.CV_32F, 0, 2, ksize=3)
    lxy = cv2.Sobel(b, cv2.CV_32F, 1, 1, ksize=3)
    det = np.maximum(lxx * lyy - lxy * lxy, 0.0) * s**4
    return -np.sign(lxx + lyy) * np.sqrt(det)


def pixel_features(image: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, float]:
    """(features H x W x N_FEAT, foreground mask, family, resize factor) of one image.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 grey (h, w) or RGB (h, w, 3) image.

    Returns
    -------
    features : numpy.ndarray
        float32 array of shape (H, W, N_FEAT) on the grey copy of long side ``SIZE``.
    foreground : numpy.ndarray
        Boolean mask of shape (H, W).
    family : int
        The pixel family (`pixel_family`).
    scale : float
        Resize factor from the image to the copy.
    """
    from medscope.models.pixel_filters import dog, foreground

    g, scale = _to_gray(image)
    fg = foreground(g, margin=5)
    maps, blobs = [], []
    for s in SCALES:
        d = dog(g, s, fg)
        v = d[fg]
        # both in units of the DoG's robust spread: the clipped DoH is zero over most pixels,
        # so its own spread is no scale
        spread = 1.4826 * float(np.median(np.abs(v - np.median(v)))) + 1e-3
        maps.append(d / spread)
        blobs.append(hessian_blob(g, s) / spread)
    f, b = np.stack(maps, -1), np.stack(blobs, -1)
    f = np.clip(np.concatenate([f, np.abs(f), b, np.abs(b)], -1), -20, 20) / 5.0
    return f.astype(np.float32), fg, pixel_family(image, fg), scale


def _design(f: np.ndarray, family: int) -> np.ndarray:
    """Features placed in the block of their family, plus that family's intercept."""
    k = f.shape[-1] + 1
    out = np.zeros(f.shape[:-1] + (len(FAMILIES) * k,), np.float32)
    out[..., family * k : family * k + k - 1] = f
    out[..., family * k + k - 1] = 1.0
    return out


def score_map(image: np.ndarray, weights: np.ndarray, smooth: float = 2.0) -> tuple[np.ndarray, np.ndarray, int]:
    """(smoothed logit map, foreground, pixel family): the per-pixel lesion evidence.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 grey (h, w) or RGB (h, w, 3) image.
    weights : numpy.ndarray
        The artifact's weights, length ``len(FAMILIES) * (N_FEAT + 1)``.
    smooth : float, optional
        Gaussian sigma in pixels of the copy.

    Returns
    -------
    z : numpy.ndarray
        float32 logit map of shape (H, W), the copy of long side ``SIZE``.
    foreground : numpy.ndarray
        Boolean mask of shape (H, W).
    family : int
        The pixel family.
    """
    f, fg, family, _ = pixel_features(image)
    z = _design(f, family) @ np.asarray(weights, np.float32)
    return cv2.GaussianBlur(z.astype(np.float32), (0, 0), smooth), fg, family


def pooled(z: np.ndarray, fg: np.ndarray) -> float:
    """Image score: the strongest evidence over the image's typical level (its median), so a
    busy background does not lift every pixel alike.

    Parameters
    ----------
    z : numpy.ndarray
        Logit map.
    fg : numpy.ndarray
        Boolean foreground mask of the same shape, not empty.

    Returns
    -------
    float
        max(z on fg) - median(z on fg).
    """
    v = z[fg]
    return float(v.max() - np.median(v))


def _lesion_region(shape, box, scale) -> np.ndarray:
    """The ellipse inscribed in the lesion box."""
    x1, y1, x2, y2 = (v * scale for v in box)
    cy, cx, ry, rx = (y1 + y2) / 2, (x1 + x2) / 2, max(1.0, (y2 - y1) / 2), max(1.0, (x2 - x1) / 2)
    yy, xx = np.mgrid[: shape[0], : shape[1]]
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0


def _logistic(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Class-balanced, L2-penalised logistic regression weights (deterministic L-BFGS)."""
    cw = np.where(y > 0.5, 0.5 / max(y.mean(), 1e-9), 0.5 / max(1 - y.mean(), 1e-9))

    def loss(w):
        z = x @ w
        p = 1.0 / (1.0 + np.exp(-z))
        return float(np.sum(cw * (np.logaddexp(0, z) - y * z)) + lam * w @ w / 2), x.T @ (cw * (p - y)) + lam * w

    return minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x


def best_threshold(scores: np.ndarray, present: np.ndarray) -> float:
    """The cut (midpoint between sorted scores) maximising balanced accuracy of score > cut.

    Parameters
    ----------
    scores : numpy.ndarray
        One score per image, not empty.
    present : numpy.ndarray
        Boolean, True for images with the finding.

    Returns
    -------
    float
        The cut; below every score when nothing separates better.
    """
    s = np.sort(np.unique(scores))
    cuts = np.r_[s[0] - 1, (s[:-1] + s[1:]) / 2] if len(s) > 1 else np.array([s[0] - 1])
    bal = [(np.mean(scores[present] > c) + np.mean(scores[~present] <= c)) / 2 for c in cuts]
    return float(cuts[int(np.argmax(bal))])


def _logit_map(f: np.ndarray, family: int, w: np.ndarray, smooth: float = 2.0) -> np.ndarray:
    """The smoothed per-pixel logit of features ``f`` under weights ``w`` (family block only)."""
    k = f.shape[-1] + 1
    block = np.asarray(w, np.float32)[family * k : family * k + k]
    z = f.astype(np.float32) @ block[:-1] + block[-1]
    return cv2.GaussianBlur(z, (0, 0), smooth)


def fit_reader(views_uri: str, *, split: str = "train", per_image: int = 60, lam: float = 1.0, seed: int = 0,
               hard_rounds: int = 0) -> dict:
    """Fit the reader on the ``split`` views of a views table; returns the JSON-able artifact.

    Parameters
    ----------
    views_uri : str
        URI of a views table.
    split : str, optional
        The split to fit on; views expected "clarify" or without an image are skipped.
    per_image : int, optional
        Positive and negative pixels drawn per image (each at most).
    lam : float, optional
        L2 penalty.
    seed : int, optional
        Seed of the pixel draws.
    hard_rounds : int, optional
        Refits with hard negatives added.

    Returns
    -------
    dict
        The artifact: ``format``, ``size``, ``scales``, ``families``, ``weights``, ``thresholds`` (one per
        family) and ``fitted_on`` (data, settings and training balanced accuracy).

    Raises
    ------
    MedScopeError
        If the split lacks views with or without the finding.
    """
    table = records.read_table("views", views_uri, columns=["view_id", "split", "expected", "image", "lesion_bbox"])
    rows = sorted((r for r in table.to_pylist() if r["split"] == split and r["expected"] != "clarify" and r["image"]),
                  key=lambda r: r["view_id"])
    if not any(r["expected"] == "present" for r in rows) or not any(r["expected"] == "absent" for r in rows):
        raise MedScopeError(f"{views_uri}: the {split} split needs views with and without the finding to fit the reader")
    rng = np.random.default_rng(seed)
    xs, ys, images = [], [], []
    for r in rows:
        f, fg, family, scale = pixel_features(decode_png(r["image"]))
        lesion = np.zeros_like(fg)
        if r["expected"] == "present" and r["lesion_bbox"] is not None:
            lesion = _lesion_region(fg.shape, r["lesion_bbox"], scale) & fg
        flat = f.reshape(-1, f.shape[-1])
        for where, label in ((lesion, 1.0), (fg & ~lesion, 0.0)):
            idx = np.flatnonzero(where)
            if len(idx):
                pick = rng.choice(idx, min(len(idx), per_image), replace=False)
                xs.append(_design(flat[pick], family))
                ys.append(np.full(len(pick), label))
        # features kept in half precision: a few hundred training images stay in memory
        images.append((f.astype(np.float16), fg, lesion, r["expected"] == "present", family))
    x, y = np.concatenate(xs).astype(np.float64), np.concatenate(ys)
    w = _logistic(x, y, lam)
    for _ in range(hard_rounds):
        # hard negatives (Dalal & Triggs 2005): the image score is a maximum, so what matters
        # is the background pixels that score highest; add each image's top ones and refit
        hard = []
        for f, fg, lesion, _, family in images:
            z = _logit_map(f, family, w)
            bg = np.flatnonzero(fg & ~lesion)
            if len(bg):
                top = bg[np.argsort(z.ravel()[bg])[-max(1, per_image // 4):]]
                hard.append(_design(f.reshape(-1, f.shape[-1])[top].astype(np.float32), family))
        x = np.concatenate([x, *hard]).astype(np.float64)
        y = np.concatenate([y, np.zeros(sum(len(h) for h in hard))])
        w = _logistic(x, y, lam)
    scores = np.array([pooled(_logit_map(f, family, w), fg) for f, fg, _, _, family in images])
    designs = [(None, None, p, family) for _, _, _, p, family in images]
    ys = [y]
    present = np.array([p for _, _, p, _ in designs])
    fams = np.array([f for _, _, _, f in designs])
    thr = best_threshold(scores, present)
    # max-pooled scores of different pixel families sit at different levels: one cut each
    # (the common cut where a family lacks images with or without the finding)
    thresholds = [best_threshold(scores[fams == k], present[fams == k])
                  if present[fams == k].any() and (~present[fams == k]).any() else thr for k in range(len(FAMILIES))]
    cut = np.array(thresholds)[fams]
    return {"format": FORMAT, "size": SIZE, "scales": list(SCALES), "families": list(FAMILIES),
            "weights": [round(float(v), 6) for v in w], "thresholds": [round(t, 6) for t in thresholds],
            "fitted_on": {"views": views_uri, "split": split, "images": len(rows), "present": int(present.sum()),
                          "pixels": int(sum(len(y) for y in ys)), "per_image": per_image, "lam": lam, "seed": seed,
                          "hard_rounds": hard_rounds,
                          "train_balanced_accuracy": round(float((np.mean(scores[present] > cut[present])
                                                                  + np.mean(scores[~present] <= cut[~present])) / 2), 4)}}


def save_artifact(artifact: dict, uri: str) -> None:
    """Write a fitted reader as JSON.

    Parameters
    ----------
    artifact : dict
        As returned by `fit_reader`.
    uri : str
        Where to write it.
    """
    storage.write_text(uri, json.dumps(artifact, indent=1, sort_keys=True))


def load_artifact(uri: str) -> dict:
    """A fitted reader; a clear error when missing or not one.

    Parameters
    ----------
    uri : str
        URI of the artifact's JSON.

    Returns
    -------
    dict
        The artifact.

    Raises
    ------
    MedScopeError
        If it is missing, not JSON, or not a ``FORMAT`` artifact with this reader's scales and weight count.
    """
    if not storage.exists(uri):
        raise MedScopeError(f"classical reader weights {uri} not found (fit them: medscope demo's fit step, "
                            "or medscope.models.classical_fit.fit_reader on a train split)")
    try:
        art = safe_text.read_json_object(uri)
    except json.JSONDecodeError as err:
        raise MedScopeError(f"classical reader weights {uri}: not JSON ({err})") from None
    if art.get("format") != FORMAT or art.get("scales") != list(SCALES) or len(art.get("weights", [])) != len(FAMILIES) * (N_FEAT + 1):
        raise MedScopeError(f"classical reader weights {uri}: not a {FORMAT} artifact of this reader version")
    return art
