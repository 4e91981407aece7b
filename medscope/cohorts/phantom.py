"""The phantom cohort: a seeded, generated stand-in for the real datasets, so the whole
pipeline runs anywhere (item 4).

2D cases of three imaging types that look different -- ultrasound-like (speckled gray in a
fan), endoscopy-like (colour mucosa with folds and a dark lumen), radiograph-like (gray
chest with lungs, ribs and mediastinum) -- with lesions of varied size (log-uniform area,
about a third under 2 % of the image), shape (ellipses, lobulated blobs) and contrast (some
subtle), about a third lesion-free, patients with several images, a few near-duplicate
images (another case's image shifted, rescaled and re-noised, under another patient id: the
leak the QC crosswalk must find; the pairs are listed in ``near_copies.json``) and critical
findings (radiograph pneumothorax). Plus CT-like NIfTI volumes with organ label maps
(``phantom_ct``). Every random choice is seeded from (seed, case index), so one seed gives
byte-identical tables.
"""

from __future__ import annotations

import json

import cv2
import numpy as np

from medscope.io import layout, records, storage
from medscope.cohorts import nifti_labels, phantom_ct
from medscope.cohorts.common import DatasetConfig, case_id, case_row
from medscope.images import decode_mask, decode_png
from medscope.seeding import rng_for

SOURCE = "phantom"
KINDS = {
    "ultrasound": DatasetConfig(
        source=SOURCE, imaging_type="breast ultrasound", finding="breast lesion",
        question="Is there a lesion in this breast ultrasound image?",
    ),
    "endoscopy": DatasetConfig(
        source=SOURCE, imaging_type="colonoscopy", finding="polyp", question="Is there a polyp in this image?",
    ),
    "radiograph": DatasetConfig(
        source=SOURCE, imaging_type="chest x-ray", finding="lung nodule",
        question="Is there a lung nodule in this chest radiograph?",
    ),
}
PNEUMOTHORAX = {"finding": "pneumothorax", "question": "Is there a pneumothorax in this chest radiograph?", "critical": True}
SIZES = ((192, 192), (224, 224), (256, 256), (224, 256))
AREA_RANGE = (0.006, 0.15)  # log-uniform lesion area fraction


def _smooth_noise(rng, shape, sigma):
    n = rng.standard_normal(shape).astype(np.float32)
    n = cv2.GaussianBlur(n, (0, 0), sigma)
    return n / (n.std() + 1e-6)


def _grid(h, w):
    return np.mgrid[0:h, 0:w].astype(np.float32)


def lesion_shape(rng, h, w, centre, area_frac):
    """Boolean lesion mask: an ellipse or a lobulated blob of about ``area_frac`` of the image.

    Parameters
    ----------
    rng : numpy.random.Generator
        Chooses ellipse or blob, its orientation, elongation or lobes.
    h, w : int
        Image height and width in pixels.
    centre : tuple of float
        ``(row, column)`` of the lesion centre in pixels.
    area_frac : float
        Target lesion area as a fraction of ``h * w`` (approximate for blobs).

    Returns
    -------
    numpy.ndarray of bool
        (h, w) lesion mask.
    """
    yy, xx = _grid(h, w)
    cy, cx = centre
    radius = np.sqrt(area_frac * h * w / np.pi)
    dy, dx = yy - cy, xx - cx
    theta = rng.uniform(0, np.pi)
    if rng.random() < 0.5:
        ratio = rng.uniform(1.0, 2.0)
        a, b = radius * np.sqrt(ratio), radius / np.sqrt(ratio)
        u = dx * np.cos(theta) + dy * np.sin(theta)
        v = -dx * np.sin(theta) + dy * np.cos(theta)
        return (u / a) ** 2 + (v / b) ** 2 <= 1.0
    phi = np.arctan2(dy, dx)
    r = np.ones_like(phi)
    for k in (2, 3, 5):
        r += rng.uniform(0.0, 0.18) * np.cos(k * phi + rng.uniform(0, 2 * np.pi))
    return np.hypot(dx, dy) <= radius * r


def _soft(mask, sigma=1.2):
    return cv2.GaussianBlur(mask.astype(np.float32), (0, 0), sigma)


def ultrasound(rng, h, w, lesion, contrast):
    """Fan-shaped speckled gray; a lesion is hypoechoic (darker) with a brighter shadow below.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the tissue texture, speckle and fan angle.
    h, w : int
        Image height and width in pixels.
    lesion : numpy.ndarray of bool or None
        (h, w) lesion mask to draw, or None for a lesion-free image.
    contrast : float
        Lesion conspicuity, about 0.15 (subtle) to 1.0.

    Returns
    -------
    numpy.ndarray of uint8
        (h, w) gray image.
    """
    yy, xx = _grid(h, w)
    slope = rng.uniform(-0.3, 0.3)  # tissue layers, slightly oblique
    layers = np.sin((yy + slope * xx) / h * rng.uniform(8, 14) + rng.uniform(0, 6))
    # broad echogenicity changes (sigma ~ a sixth of the image), not lesion-sized dark spots
    tissue = 0.45 + 0.14 * _smooth_noise(rng, (h, w), h / 6) + 0.1 * layers
    tissue += 0.25 * np.exp(-yy / (0.06 * h))  # bright skin line
    if lesion is not None:
        soft = _soft(lesion, 1.5)
        tissue = tissue * (1.0 - 0.65 * contrast * soft)
        below = np.roll(soft, int(0.15 * h), axis=0) * (1 - soft)
        tissue += 0.15 * contrast * below
    speckle = rng.rayleigh(1.0, (h, w)).astype(np.float32)
    speckle = cv2.GaussianBlur(speckle, (0, 0), 0.7)
    img = tissue * speckle * np.exp(-yy / (2.2 * h))
    angle = np.arctan2(xx - w / 2, yy + 0.15 * h)
    fan = (np.abs(angle) < np.deg2rad(rng.uniform(34, 42))) & (yy > 0.02 * h)
    img = np.where(fan, img, 0.0)
    return np.clip(img * 220, 0, 255).astype(np.uint8)


def endoscopy(rng, h, w, lesion, contrast):
    """Colour mucosa with folds, a dark lumen, highlights; a polyp is a raised, shaded bump.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the lumen position, folds, tint and highlights.
    h, w : int
        Image height and width in pixels.
    lesion : numpy.ndarray of bool or None
        (h, w) polyp mask to draw, or None.
    contrast : float
        Polyp conspicuity, about 0.15 to 1.0.

    Returns
    -------
    numpy.ndarray of uint8
        (h, w, 3) RGB image.
    """
    yy, xx = _grid(h, w)
    ly, lx = rng.uniform(0.3, 0.7) * h, rng.uniform(0.3, 0.7) * w
    dist = np.hypot(yy - ly, xx - lx) / max(h, w)
    folds = 0.5 + 0.5 * np.sin(dist * rng.uniform(25, 40) + _smooth_noise(rng, (h, w), 12))
    shade = np.clip(0.25 + 1.6 * dist, 0, 1) * (0.85 + 0.15 * folds)
    tint = rng.uniform(-0.05, 0.05)
    rgb = np.stack([np.full_like(folds, 0.85 + tint), 0.42 + 0.06 * folds, 0.36 + 0.04 * folds], axis=-1) * shade[..., None]
    if lesion is not None:
        soft = _soft(lesion, 2.0)
        light = np.clip(1.0 - (yy - yy[lesion].mean()) / (3 * np.sqrt(lesion.sum() + 1)), 0.6, 1.4)
        bump = np.stack([0.10, 0.16, 0.08]) * contrast
        rgb = rgb * (1 + (soft * (light - 0.8) * contrast)[..., None]) + soft[..., None] * bump
    rgb += 0.02 * _smooth_noise(rng, (h, w), 1.0)[..., None]
    for _ in range(rng.integers(2, 6)):  # specular highlights
        sy, sx = rng.uniform(0, h), rng.uniform(0, w)
        rgb += 0.8 * np.exp(-((yy - sy) ** 2 + (xx - sx) ** 2) / rng.uniform(2, 8))[..., None]
    corner = np.hypot((yy - h / 2) / (h / 2), (xx - w / 2) / (w / 2)) > 1.25  # scope's black corners
    rgb[corner] = 0.0
    return np.clip(rgb * 255, 0, 255).astype(np.uint8)


def radiograph(rng, h, w, lesion, contrast, pneumothorax=None):
    """Gray chest: dark lungs with vessel markings, bright mediastinum and ribs, domes below.

    A nodule is a brighter blob; a pneumothorax is a dark rim without lung markings.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the lungs' placement, texture, ribs and noise.
    h, w : int
        Image height and width in pixels.
    lesion : numpy.ndarray of bool or None
        (h, w) nodule mask to draw, or None.
    contrast : float
        Conspicuity of the nodule and pneumothorax, about 0.15 to 1.0.
    pneumothorax : numpy.ndarray of bool, optional
        (h, w) pneumothorax rim to draw, or None.

    Returns
    -------
    image : numpy.ndarray of uint8
        (h, w) gray image.
    lungs : numpy.ndarray of bool
        (h, w) mask of the two lung fields.
    """
    yy, xx = _grid(h, w)
    tilt = rng.uniform(0, 2 * np.pi)
    gradient = ((xx / w - 0.5) * np.cos(tilt) + (yy / h - 0.5) * np.sin(tilt)) * rng.uniform(0.1, 0.35)
    img = 0.62 + gradient + 0.12 * _smooth_noise(rng, (h, w), 24)
    lung_mask = np.zeros((h, w), bool)
    for side in (-1, 1):
        cx = w / 2 + side * rng.uniform(0.19, 0.27) * w
        cy = rng.uniform(0.38, 0.55) * h
        ax, ay = rng.uniform(0.13, 0.21) * w, rng.uniform(0.24, 0.36) * h
        lung_mask |= ((xx - cx) / ax) ** 2 + ((yy - cy) / ay) ** 2 <= 1.0
    lungs = _soft(lung_mask, 4.0)
    markings = 0.06 * np.clip(_smooth_noise(rng, (h, w), 1.5), 0, None) * lungs
    img = img - 0.38 * lungs + markings
    phase = rng.uniform(0, 2 * np.pi)
    ribs = 0.5 + 0.5 * np.sin((yy + 0.15 * np.abs(xx - w / 2)) / h * 2 * np.pi * 6 + phase)
    img += 0.09 * (ribs > 0.75) * lungs
    img += 0.25 * np.exp(-(((xx - w / 2) / (0.07 * w)) ** 2)) * (yy > 0.15 * h)  # mediastinum
    if pneumothorax is not None:
        img = img - 0.25 * contrast * _soft(pneumothorax, 1.5) - markings * pneumothorax
    if lesion is not None:
        img += 0.3 * contrast * _soft(lesion, 1.5)
    img += 0.015 * rng.standard_normal((h, w)).astype(np.float32)
    return np.clip(img * 255, 0, 255).astype(np.uint8), lung_mask


def _pneumothorax_rim(rng, lung_mask, area_frac):
    """A crescent along the outer (lateral) side of one lung covering about ``area_frac``."""
    h, w = lung_mask.shape
    side = lung_mask.copy()
    if rng.random() < 0.5:
        side[:, w // 2 :] = False
    else:
        side[:, : w // 2] = False
    dist = cv2.distanceTransform(side.astype(np.uint8), cv2.DIST_L2, 5)
    xs = np.nonzero(side)[1]
    lateral = (np.abs(np.arange(w) - w / 2) >= np.abs(xs - w / 2).mean())[None, :]
    target = area_frac * h * w
    for depth in range(1, 60):
        rim = side & (dist <= depth) & lateral
        if rim.sum() >= target:
            return rim
    return rim


def _case_plan(n_cases: int, seed: int):
    """Which case is which: imaging kind, lesion or not, patient id, near-copy source."""
    n_copies = max(1, n_cases // 16) if n_cases >= 6 else 0
    base = n_cases - n_copies
    kinds = list(KINDS)
    plan = []
    rng = rng_for(seed, "phantom-plan")
    patient_no, left_in_patient, patient_of_kind = 0, {k: 0 for k in kinds}, {}
    for i in range(base):
        kind = kinds[i % 3]
        if left_in_patient[kind] == 0:
            patient_no += 1
            patient_of_kind[kind] = f"P{patient_no:03d}"
            left_in_patient[kind] = int(rng.choice([1, 2, 2, 3]))
        left_in_patient[kind] -= 1
        lesion = (i + i // 3) % 3 != 2  # one lesion-free case of each kind in every nine
        plan.append({"index": i, "kind": kind, "lesion": lesion, "patient": patient_of_kind[kind], "copy_of": None})
    ptx = [p for p in plan if p["kind"] == "radiograph" and p["lesion"]][:2]
    for p in ptx:
        p["pneumothorax"] = True
    sources = [p for p in plan if p["lesion"] and not p.get("pneumothorax")]
    picks = rng.choice(len(sources), size=min(n_copies, len(sources)), replace=False) if sources else []
    for j, k in enumerate(sorted(int(x) for x in picks)):
        patient_no += 1
        src = sources[k]
        plan.append({**src, "index": base + j, "patient": f"P{patient_no:03d}", "copy_of": src["index"]})
    return plan


def _draw(seed: int, entry: dict):
    """(image, mask or None, extra case fields) of one planned case."""
    rng = rng_for(seed, "phantom-case", entry["index"])
    h, w = SIZES[int(rng.integers(len(SIZES)))]
    area = float(np.exp(rng.uniform(np.log(AREA_RANGE[0]), np.log(AREA_RANGE[1]))))
    contrast = float(rng.choice([rng.uniform(0.15, 0.35), rng.uniform(0.5, 1.0)], p=[0.3, 0.7]))
    kind, extra = entry["kind"], {}
    mask = None
    if kind == "radiograph":
        centre = (rng.uniform(0.35, 0.55) * h, (0.5 + rng.choice([-1, 1]) * rng.uniform(0.17, 0.25)) * w)
        if entry.get("pneumothorax"):
            _, lungs = radiograph(rng_for(seed, "phantom-lungs", entry["index"]), h, w, None, 0)
            mask = _pneumothorax_rim(rng, lungs, min(area * 2, 0.08))
            image, _ = radiograph(rng_for(seed, "phantom-lungs", entry["index"]), h, w, None, contrast, mask)
            extra = dict(PNEUMOTHORAX)
        else:
            mask = lesion_shape(rng, h, w, centre, min(area, 0.04)) if entry["lesion"] else None
            image, _ = radiograph(rng, h, w, mask, contrast)
    else:
        centre = (rng.uniform(0.3, 0.7) * h, rng.uniform(0.3, 0.7) * w)
        mask = lesion_shape(rng, h, w, centre, area) if entry["lesion"] else None
        image = (ultrasound if kind == "ultrasound" else endoscopy)(rng, h, w, mask, contrast)
    return image, mask, extra


def near_copy(rng, image, mask):
    """The same picture re-acquired: shifted a few pixels, rescaled by a few percent, re-noised.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the shift (up to 1.5 px), scale (within 1.5 %) and noise.
    image : numpy.ndarray of uint8
        The original image, (H, W) or (H, W, 3).
    mask : numpy.ndarray of bool or None
        Its lesion mask, warped alike; None for a lesion-free case.

    Returns
    -------
    image : numpy.ndarray of uint8
        The warped, re-noised image, same shape.
    mask : numpy.ndarray of bool or None
        The warped mask (nearest neighbour), or None.
    """
    h, w = image.shape[:2]
    scale = rng.uniform(0.985, 1.015)
    dx, dy = rng.uniform(-1.5, 1.5, 2)
    m = cv2.getRotationMatrix2D((w / 2, h / 2), 0.0, scale)
    m[:, 2] += (dx, dy)
    out = cv2.warpAffine(image, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    noise = rng.normal(0, 2.0, out.shape)
    out = np.clip(out.astype(np.float64) + noise, 0, 255).astype(np.uint8)
    new_mask = None
    if mask is not None:
        new_mask = cv2.warpAffine(mask.astype(np.uint8), m, (w, h), flags=cv2.INTER_NEAREST) > 0
    return out, new_mask


def phantom_cases(n_cases: int = 48, seed: int = 0) -> tuple[list[dict], list[tuple[str, str]]]:
    """Cases rows and the (original case_id, near-copy case_id) pairs.

    Parameters
    ----------
    n_cases : int, optional
        Number of cases, near-copies included (one in 16, at least one from 6 cases on).
    seed : int, optional
        Seed; the same seed gives identical rows.

    Returns
    -------
    rows : list of dict
        Cases rows in plan order.
    pairs : list of tuple of (str, str)
        ``(original case_id, near-copy case_id)`` for each planted near-copy.
    """
    rows, by_index, pairs = [], {}, []
    for entry in _case_plan(n_cases, seed):
        if entry["copy_of"] is None:
            image, mask, extra = _draw(seed, entry)
            by_index[entry["index"]] = (image, mask, extra)
        else:
            src_image, src_mask, extra = by_index[entry["copy_of"]]
            image, mask = near_copy(rng_for(seed, "phantom-copy", entry["index"]), src_image, src_mask)
        rel = f"{entry['kind']}/{entry['index']:04d}.png"
        rows.append(case_row(KINDS[entry["kind"]], rel, image, mask, patient=entry["patient"], **extra))
        if entry["copy_of"] is not None:
            src_rel = f"{entry['kind']}/{entry['copy_of']:04d}.png"
            pairs.append((next(r["case_id"] for r in rows if r["source_file"] == src_rel), rows[-1]["case_id"]))
    return rows, pairs


def phantom_batch(n_cases: int, seed: int, batch: int, copies_of: list[dict] = ()) -> list[dict]:
    """Cases of a later batch of a growing phantom cohort (batch 2, 3, ...): new files under
    ``batch<b>/`` with their own patients, plus a re-acquired near-copy (new patient id) of
    each case in ``copies_of`` (rows of earlier batches) -- the leak a grown cohort must catch.
    Earlier batches' rows are untouched: their ids come from their unchanged file names.

    Parameters
    ----------
    n_cases : int
        Number of new cases of this batch (drawn with seed ``seed + 1000 * batch``).
    seed : int
        The cohort's seed.
    batch : int
        Batch number (2, 3, ...); prefixes the file names and patient ids.
    copies_of : list of dict, optional
        Cases rows of earlier batches, each to be re-acquired as a near-copy.

    Returns
    -------
    list of dict
        The batch's cases rows, sorted by ``case_id``.
    """
    rows, _ = phantom_cases(n_cases, seed=seed + 1000 * batch)
    cfg_of = {c.imaging_type: c for c in KINDS.values()}
    out = []
    for r in rows:
        rel = f"batch{batch}/{r['source_file']}"
        out.append({**r, "case_id": case_id(SOURCE, rel), "source_file": rel,
                    "patient_id": f"B{batch}-{r['patient_id']}"})
    for j, src in enumerate(copies_of):
        image, mask = near_copy(rng_for(seed, "phantom-batch-copy", batch, j), decode_png(src["image"]),
                                decode_mask(src["mask"]) if src["mask"] is not None else None)
        kind = next(k for k, c in KINDS.items() if c.imaging_type == src["imaging_type"])
        extra = {k: src[k] for k in ("finding", "question", "critical")}
        out.append(case_row(cfg_of[src["imaging_type"]], f"batch{batch}/{kind}/copy{j:03d}.png", image, mask,
                            patient=f"B{batch}-C{j:03d}", **extra))
    return sorted(out, key=lambda r: r["case_id"])


def write_volumes(out_uri: str, n_volumes: int = 4, seed: int = 0, shape=(96, 96, 40)) -> str:
    """Write the CT phantoms in Decathlon layout under ``<out>/volumes`` and the volumes table.

    Parameters
    ----------
    out_uri : str
        The cohort folder.
    n_volumes : int, optional
        Number of CT phantoms; 0 writes an empty volumes table.
    seed : int, optional
        Seed of the phantoms.
    shape : tuple of int, optional
        ``(nx, ny, nz)`` voxels per volume.

    Returns
    -------
    str
        URI of the written volumes table.
    """
    root = layout.Cohort(out_uri).nifti
    for v in range(n_volumes):
        rng = rng_for(seed, "phantom-ct", v)
        hu, labels = phantom_ct.ct_phantom(rng, shape, drop=phantom_ct.MISSING.get(v, ()))
        spacing = phantom_ct.SPACINGS[v % len(phantom_ct.SPACINGS)]
        lps = v in phantom_ct.LPS_VOLUMES
        name = f"ct{v + 1:03d}.nii.gz"
        storage.write_bytes(storage.join(root, "imagesTr", name), phantom_ct.nifti_bytes(hu, spacing, lps))
        storage.write_bytes(storage.join(root, "labelsTr", name), phantom_ct.nifti_bytes(labels, spacing, lps))
    cfg = DatasetConfig(
        source="phantom-ct", imaging_type="abdominal CT", finding="organ", images_dir="imagesTr",
        labels_dir="labelsTr", patient_id_regex=r"^(ct\d+)", organ_map=phantom_ct.BTCV_ORGANS,
    )
    table = nifti_labels.load(root, cfg)[0] if n_volumes else records.empty("volumes")
    uri = layout.Cohort(out_uri).volumes
    records.write_table("volumes", table, uri)
    return uri


def generate(out_uri: str, n_cases: int = 48, seed: int = 0, n_volumes: int = 4) -> dict:
    """Write the phantom cohort under ``out_uri``; returns the URIs of its tables.

    ``<out>/cases.parquet``, ``<out>/rejects.parquet`` (empty: the phantom has no bad files),
    ``<out>/volumes/{imagesTr,labelsTr}/*.nii.gz`` with ``<out>/volumes.parquet``, and
    ``<out>/near_copies.json`` (the planted near-duplicate pairs, ground truth for QC).

    Parameters
    ----------
    out_uri : str
        The cohort folder to write.
    n_cases : int, optional
        Number of 2D cases (:func:`phantom_cases`).
    seed : int, optional
        Seed; one seed gives byte-identical tables.
    n_volumes : int, optional
        Number of CT volumes (:func:`write_volumes`).

    Returns
    -------
    dict of str to str
        URIs under keys ``cases``, ``cohort_rejects`` and ``volumes``.
    """
    rows, pairs = phantom_cases(n_cases, seed)
    cases_uri = layout.Cohort(out_uri).cases
    records.write_table("cases", sorted(rows, key=lambda r: r["case_id"]), cases_uri)
    rejects_uri = layout.Cohort(out_uri).rejects
    records.write_table("rejects", [], rejects_uri)
    storage.write_text(layout.Cohort(out_uri).near_copies, json.dumps(sorted(pairs), indent=1))
    volumes_uri = write_volumes(out_uri, n_volumes, seed)
    return {"cases": cases_uri, "cohort_rejects": rejects_uri, "volumes": volumes_uri}
