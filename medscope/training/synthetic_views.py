"""Synthetic views in the views-table layout: a grey disc "lesion" on a noisy background and
its counterfactuals. Used by the smoke recipe and the tests when no views table is at hand;
the real views come from the views issue's pipeline.
"""

from __future__ import annotations

import cv2
import numpy as np

from medscope import images
from medscope.seeding import rng_for

KINDS_PER_LESION_CASE = ("original", "target_removal", "random_removal", "unmatched_control", "degraded", "insertion")


def synthetic_views(n_cases: int, seed: int = 0, size: int = 64, split: str = "train") -> list[dict]:
    """Views rows: two thirds of cases carry a lesion (with all its edits), the rest are
    lesion-free (natural negatives). Deterministic in (seed, case index).

    Parameters
    ----------
    n_cases : int
        Cases; every third (index 2, 5, ...) is lesion-free.
    seed : int, optional
        Seed of the images and lesion positions.
    size : int, optional
        Image side in pixels (square, grey).
    split : str, optional
        The split written on every row (and part of the case ids).

    Returns
    -------
    list of dict
        Views rows: six per lesion case (original, target_removal, random_removal, unmatched_control,
        degraded, insertion), one natural negative per lesion-free case; images PNG-encoded.
    """
    rows = []
    for i in range(n_cases):
        rng = rng_for(seed, "synthetic", i)
        case = f"{split}-syn-{i:04d}"
        base = rng.normal(90, 12, (size, size)).clip(0, 255)
        base = cv2.GaussianBlur(base, (5, 5), 1.5).astype(np.uint8)
        common = dict(case_id=case, source="synthetic", imaging_type="synthetic", patient_id=case, group_id=case, split=split,
                      finding="nodule", question="Is there a nodule?", question_kind="presence", critical=False,
                      width=size, height=size, contrast_before=None, contrast_after=None, edit_score=None,
                      lesion_untouched=None, passed=True, reject_reason=None, recipe_hash="synthetic", private=False,
                      endpoint_allowlist=None, degradation=None, edit_mask=None)
        if i % 3 == 2:
            rows.append(dict(common, view_id=f"{case}-natural_negative", kind="natural_negative", tool="none",
                             image=images.encode_png(base), expected="absent", lesion_area_frac=0.0, lesion_bbox=None))
            continue
        r = int(rng.integers(2, 9))  # radii 2..8 px: some under 2% of the image
        cx, cy = (int(v) for v in rng.integers(r + 2, size - r - 2, 2))
        lesion = base.copy()
        cv2.circle(lesion, (cx, cy), r, 200, -1)
        frac = float(np.pi * r * r / (size * size))
        bbox = [cx - r, cy - r, cx + r + 1, cy + r + 1]
        ox, oy = (size - 1 - cx, size - 1 - cy)
        control = lesion.copy()
        cv2.circle(control, (ox, oy), r, 90, -1)
        unmatched = lesion.copy()
        cv2.ellipse(unmatched, (ox, oy), (r * 2, r), 30, 0, 360, 90, -1)
        degraded = cv2.GaussianBlur(lesion, (0, 0), 6)
        inserted = base.copy()
        cv2.circle(inserted, (ox, oy), r, 200, -1)
        views = {
            "original": (lesion, "present", "none", bbox),
            "target_removal": (base, "absent", "synthetic", bbox),
            "random_removal": (control, "present", "synthetic", bbox),
            "unmatched_control": (unmatched, "present", "synthetic", bbox),
            "degraded": (degraded, "clarify", "none", bbox),
            "insertion": (inserted, "present", "synthetic", [ox - r, oy - r, ox + r + 1, oy + r + 1]),
        }
        for kind, (img, expected, tool, box) in views.items():
            rows.append(dict(common, view_id=f"{case}-{kind}", kind=kind, tool=tool, image=images.encode_png(img),
                             expected=expected, lesion_area_frac=frac if kind != "target_removal" else frac, lesion_bbox=box,
                             degradation="blur" if kind == "degraded" else None))
    return rows
