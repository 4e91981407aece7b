"""Phantom cohort for the benchmark-MCQ paper: CT-like abdomen volumes with liver lesions, and their reports.

The volumes are ``medscope.cohorts.phantom_ct`` abdomens with 0-3 hypoattenuating spherical
lesions placed inside the liver (label ``LESION_LABEL``). Each report is written from the label
map in a radiologist's style, so every size, count and location in it is measured, not made up:
lesions are connected components of the lesion label; a size is the largest extent along an
axis times the voxel spacing; the lobe is the side of the liver's midline (x) the lesion's
centre falls on; the gallbladder is described as absent when its label is.
"""

from __future__ import annotations

import json
import os

import numpy as np
from scipy import ndimage

from medscope.cohorts.phantom_ct import SPACINGS, ct_phantom, nifti_bytes
from medscope.seeding import rng_for

LESION_LABEL = 20
LESION_HU = 15.0
LIVER, GALLBLADDER, SPLEEN = 6, 4, 1
NUMBER_WORDS = {1: "A", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine"}
LESION_COUNTS = (0, 1, 2, 3, 1, 2)  # cycled over cases, so every count appears


def add_liver_lesions(hu: np.ndarray, labels: np.ndarray, spacing, n: int, rng: np.random.Generator) -> None:
    """Paint ``n`` non-touching hypoattenuating spheres (4-14 mm radius) inside the liver, in place.

    Parameters
    ----------
    hu : numpy.ndarray
        The (X, Y, Z) int16 HU volume, painted in place.
    labels : numpy.ndarray
        The (X, Y, Z) label map; lesion voxels become ``LESION_LABEL`` in place.
    spacing : sequence of float
        Voxel spacing (x, y, z), in mm.
    n : int
        Lesions wanted; fewer are placed when 200 draws do not fit them.
    rng : numpy.random.Generator
        Source of centres, radii and lesion HU.
    """
    liver = np.argwhere(labels == LIVER)
    if n == 0 or len(liver) == 0:
        return
    sp = np.asarray(spacing, dtype=float)
    grid = np.indices(labels.shape).reshape(3, -1).T * sp
    placed = []
    for _ in range(200):
        if len(placed) == n:
            break
        centre = liver[rng.integers(len(liver))] * sp
        radius = float(rng.uniform(4.0, 14.0))
        if any(np.linalg.norm(centre - c) < radius + r + 3.0 for c, r in placed):
            continue
        inside = (np.linalg.norm(grid - centre, axis=1) <= radius).reshape(labels.shape) & (labels == LIVER)
        if inside.sum() < 8:
            continue
        placed.append((centre, radius))
        labels[inside] = LESION_LABEL
        hu[inside] = np.int16(LESION_HU + rng.normal(0, 6))


def measure_lesions(labels: np.ndarray, spacing) -> list[dict]:
    """Lesions of a label map, largest first: size (mm, largest axis extent) and lobe.

    Parameters
    ----------
    labels : numpy.ndarray
        The (X, Y, Z) label map in RAS voxel order.
    spacing : sequence of float
        Voxel spacing (x, y, z), in mm.

    Returns
    -------
    list of dict
        One per connected lesion component, largest first: ``size_mm`` (float) and ``lobe``
        (``"right"`` or ``"left"``).
    """
    comps, n = ndimage.label(labels == LESION_LABEL)
    liver_x = np.argwhere((labels == LIVER) | (labels == LESION_LABEL))[:, 0]
    midline = float(np.median(liver_x)) if len(liver_x) else 0.0
    out = []
    for sl, k in zip(ndimage.find_objects(comps), range(1, n + 1)):
        extent = [(s.stop - s.start) * float(d) for s, d in zip(sl, spacing)]
        cx = float(np.argwhere(comps[sl] == k)[:, 0].mean() + sl[0].start)
        # RAS voxel order: x grows to the patient's right, so the lateral half is the right lobe
        out.append({"size_mm": max(extent), "lobe": "right" if cx >= midline else "left"})
    return sorted(out, key=lambda d: -d["size_mm"])


def write_report(lesions: list[dict], has_gallbladder: bool, spleen_cm: float) -> tuple[str, str]:
    """(findings, impression) describing the measured label map.

    Parameters
    ----------
    lesions : list of dict
        The measured lesions, largest first (:func:`measure_lesions`); at most nine.
    has_gallbladder : bool
        Whether the label map has a gallbladder; otherwise it is reported surgically absent.
    spleen_cm : float
        The spleen's craniocaudal length, in cm.

    Returns
    -------
    findings : str
        LIVER, GALLBLADDER, SPLEEN and KIDNEYS paragraphs, one per line.
    impression : str
        Numbered impression lines.
    """
    if lesions:
        lobes = sorted({d["lobe"] for d in lesions})
        where = "both hepatic lobes" if len(lobes) == 2 else f"the {lobes[0]} hepatic lobe"
        size = lesions[0]["size_mm"] / 10.0
        n = len(lesions)
        noun = "lesion" if n == 1 else "lesions"
        lead = f"{NUMBER_WORDS[n]} hypoattenuating {noun} {'is' if n == 1 else 'are'} seen in {where}"
        liver = (f"LIVER: {lead}, {'measuring' if n == 1 else 'the largest measuring'} {size:.1f} cm. "
                 "No washout. The portal and hepatic veins are patent. No intrahepatic biliary ductal dilatation.")
        impression = (f"1. {NUMBER_WORDS[n]} hypoattenuating hepatic {noun} in {where}, "
                      f"{'measuring' if n == 1 else 'largest'} {size:.1f} cm, suspicious for metastatic disease.")
    else:
        liver = ("LIVER: Normal in size and attenuation. No focal hepatic lesion. The portal and hepatic veins "
                 "are patent. No intrahepatic biliary ductal dilatation.")
        impression = "1. No focal hepatic lesion."
    gb = "GALLBLADDER: Unremarkable." if has_gallbladder else "GALLBLADDER: Surgically absent."
    spleen = f"SPLEEN: Normal in size, measuring {spleen_cm:.1f} cm in craniocaudal dimension."
    kidneys = "KIDNEYS: No hydronephrosis. No renal mass."
    findings = "\n".join([liver, gb, spleen, kidneys])
    if not has_gallbladder:
        impression += "\n2. Status post cholecystectomy."
    return findings, impression


def phantom_cohort(out_dir: str, n_cases: int = 6, seed: int = 0, shape=(96, 96, 40),
                   private: bool = True) -> dict:
    """Write ``volumes/<case>/ct.nii.gz``, ``labels/<case>.nii.gz`` and ``reports.jsonl``; returns paths.

    Parameters
    ----------
    out_dir : str
        Local folder written into.
    n_cases : int, optional
        Number of cases (``phantom-000``, ...).
    seed : int, optional
        Seed of the volumes and lesions.
    shape : tuple of int, optional
        Volume shape (X, Y, Z), in voxels.
    private : bool, optional
        The privacy flag returned with the paths.

    Returns
    -------
    dict
        ``reports`` (the JSONL path), ``volumes`` and ``labels`` (folders), ``cases`` and ``private``.
    """
    vol_dir, lab_dir = os.path.join(out_dir, "volumes"), os.path.join(out_dir, "labels")
    rows = []
    for i in range(n_cases):
        case = f"phantom-{i:03d}"
        rng = rng_for(seed, case, "benchgen-phantom")
        drop = (GALLBLADDER,) if i % 4 == 1 else ()
        hu, labels = ct_phantom(rng, shape=shape, drop=drop)
        spacing = SPACINGS[i % len(SPACINGS)]
        add_liver_lesions(hu, labels, spacing, LESION_COUNTS[i % len(LESION_COUNTS)], rng)
        os.makedirs(os.path.join(vol_dir, case), exist_ok=True)
        os.makedirs(lab_dir, exist_ok=True)
        with open(os.path.join(vol_dir, case, "ct.nii.gz"), "wb") as f:
            f.write(nifti_bytes(hu, spacing))
        with open(os.path.join(lab_dir, f"{case}.nii.gz"), "wb") as f:
            f.write(nifti_bytes(labels, spacing))
        zs = np.flatnonzero((labels == SPLEEN).any(axis=(0, 1)))
        spleen_cm = (len(zs) * spacing[2] / 10.0) if len(zs) else 0.0
        findings, impression = write_report(measure_lesions(labels, spacing), bool((labels == GALLBLADDER).any()),
                                            spleen_cm)
        rows.append({"case_id": case, "study": "CT abdomen with contrast", "findings": findings,
                     "impression": impression})
    reports = os.path.join(out_dir, "reports.jsonl")
    with open(reports, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return {"reports": reports, "volumes": vol_dir, "labels": lab_dir, "cases": n_cases, "private": private}
