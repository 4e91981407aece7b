"""Hand-built CT-like volumes for the probe tests (values worked out by hand in the tests)."""

from __future__ import annotations

import json
import os

import nibabel as nib
import numpy as np

# Voxels per organ per axial slice (Z = 10, 5 mm apart), filled in flat order on a 20x20 plane.
COUNTS = {
    1: [0, 10, 60, 60, 60, 60, 60, 3, 0, 0],  # liver: excluded at z1, absent (3) at z7
    2: [0, 0, 0, 0, 50, 50, 4, 0, 0, 0],  # spleen: exactly 50 at z4, z5; 4 at z6 -> absent
    3: [50] * 10,  # aorta everywhere
    4: [0, 0, 0, 0, 0, 55, 55, 55, 55, 0],  # kidney
    5: [0] * 10,  # pancreas: mapped, never present
}
ORGAN_MAP = {1: "liver", 2: "spleen", 3: "aorta", 4: "kidney", 5: "pancreas"}
SHAPE = (20, 20, 10)
AFFINE = np.diag([1.0, 1.0, 5.0, 1.0])


def hand_labels(counts: dict[int, list[int]] = COUNTS, shape=SHAPE) -> np.ndarray:
    lab = np.zeros(shape, dtype=np.int16)
    for k in range(shape[2]):
        flat = np.zeros(shape[0] * shape[1], dtype=np.int16)
        pos = 0
        for value in sorted(counts):
            n = counts[value][k]
            flat[pos : pos + n] = value
            pos += n
        lab[:, :, k] = flat.reshape(shape[0], shape[1])
    return lab


def hand_image(labels: np.ndarray, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    hu = np.full(labels.shape, -1000.0, dtype=np.float32)  # air
    hu[4:16, 4:16, :] = 0.0
    hu[labels > 0] = 60.0 + 10.0 * labels[labels > 0]
    return hu + rng.normal(0, 5, labels.shape).astype(np.float32)


def write_pair(folder: str, case_id: str, labels=None, image=None, affine=AFFINE, label_affine=None,
               organ_map=None, gz=True) -> dict:
    """Write image + label NIfTI files; return a volumes-table row."""
    os.makedirs(folder, exist_ok=True)
    labels = hand_labels() if labels is None else labels
    image = hand_image(labels) if image is None else image
    ext = ".nii.gz" if gz else ".nii"
    img_path = os.path.join(folder, f"{case_id}_ct{ext}")
    lab_path = os.path.join(folder, f"{case_id}_seg{ext}")
    nib.save(nib.Nifti1Image(np.asarray(image, dtype=np.float32), affine), img_path)
    nib.save(nib.Nifti1Image(labels, affine if label_affine is None else label_affine), lab_path)
    omap = ORGAN_MAP if organ_map is None else organ_map
    return {
        "case_id": case_id,
        "source": "hand",
        "patient_id": case_id,
        "split": "test",
        "image_uri": img_path,
        "label_uri": lab_path,
        "shape": list(labels.shape),
        "spacing": [1.0, 1.0, 5.0],
        "orientation": "RAS",
        "organ_map": json.dumps({str(k): v for k, v in omap.items()}),
        "private": False,
        "endpoint_allowlist": None,
    }
