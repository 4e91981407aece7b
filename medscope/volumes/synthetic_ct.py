"""Small CT-like volumes with ellipsoid organs, for the probe's benchmark and smoke runs.

The cohort phantom (``medscope.cohorts``) is the demo's source; this generator only gives the
benchmark volumes of a chosen size without depending on it. Organs sit at BTCV-like positions
along z, so some slices lack some organs and a few vessels run the whole length.
"""

from __future__ import annotations

import json
import os

import nibabel as nib
import numpy as np

from medscope.io import records, storage
from medscope.seeding import rng_for

# name: (label, centre as fractions across the displayed image (left->right, top->bottom) and z
# (inferior->superior); semi-axes as fractions; HU). Display has the patient's right on the left
# and anterior at the top, so the liver sits left and the vessels low (posterior).
ORGANS = {
    "liver": (1, (0.30, 0.45, 0.70), (0.18, 0.20, 0.18), 60.0),
    "spleen": (2, (0.75, 0.55, 0.72), (0.08, 0.10, 0.10), 50.0),
    "right kidney": (3, (0.32, 0.70, 0.45), (0.07, 0.08, 0.12), 30.0),
    "left kidney": (4, (0.68, 0.70, 0.48), (0.07, 0.08, 0.12), 30.0),
    "gallbladder": (5, (0.38, 0.35, 0.58), (0.04, 0.05, 0.06), 10.0),
    "stomach": (6, (0.62, 0.40, 0.75), (0.10, 0.10, 0.10), 20.0),
    "pancreas": (7, (0.52, 0.55, 0.55), (0.12, 0.04, 0.05), 45.0),
    "aorta": (8, (0.52, 0.68, 0.50), (0.05, 0.05, 0.60), 150.0),
    "inferior vena cava": (9, (0.40, 0.62, 0.50), (0.05, 0.05, 0.60), 120.0),
}


def synthetic_ct(shape=(96, 96, 48), seed: int = 0, case: str = "s0") -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """(HU float32, labels int16, organ map) of one synthetic abdomen in RAS+ voxel order.

    Parameters
    ----------
    shape : tuple of int, optional
        ``(nx, ny, nz)`` voxels.
    seed : int, optional
        Seed; with ``case`` it fixes the organs' jitter and the noise.
    case : str, optional
        Case name mixed into the seed.

    Returns
    -------
    hu : numpy.ndarray of float32
        HU-like intensities, shape ``shape``.
    labels : numpy.ndarray of int16
        Organ labels (0 background, 1-9 as in ``ORGANS``), shape ``shape``.
    organ_map : dict of int to str
        Label -> organ name.
    """
    rng = rng_for(seed, case, "synthetic_ct")
    x, y, z = (np.arange(n, dtype=np.float32)[:, None, None] for n in shape)
    x, y, z = x / shape[0], y.reshape(1, -1, 1) / shape[1], z.reshape(1, 1, -1) / shape[2]
    hu = np.where((x - 0.5) ** 2 / 0.2 + (y - 0.5) ** 2 / 0.16 <= 1.0, -80.0, -1000.0).astype(np.float32)
    hu = np.broadcast_to(hu, shape).copy()
    labels = np.zeros(shape, dtype=np.int16)
    for name, (lab, c, r, value) in ORGANS.items():
        jit = rng.normal(0, 0.02, 3)
        c = (1.0 - c[0], 1.0 - c[1], c[2])  # display fractions -> RAS+ voxel fractions
        d = sum(((g - (cc + j)) / rr) ** 2 for g, cc, rr, j in zip((x, y, z), c, r, jit))
        m = np.broadcast_to(d <= 1.0, shape)
        labels[m] = lab
        hu[m] = value
    hu += rng.normal(0, 8, shape).astype(np.float32)
    return hu, labels, {lab: name for name, (lab, *_rest) in ORGANS.items()}


def write_synthetic_volumes(out_uri: str, n: int, shape=(96, 96, 48), seed: int = 0) -> str:
    """Write n synthetic image/label NIfTI pairs and their volumes table; return the table URI.

    Parameters
    ----------
    out_uri : str
        Output folder; the NIfTI files go to ``<out>/nifti/``.
    n : int
        Number of volumes (cases ``syn-0000`` ...).
    shape : tuple of int, optional
        ``(nx, ny, nz)`` voxels per volume (spacing 1.5 x 1.5 x 5 mm).
    seed : int, optional
        Seed of the volumes.

    Returns
    -------
    str
        URI of the volumes table, ``<out>/volumes.parquet``.
    """
    rows = []
    affine = np.diag([1.5, 1.5, 5.0, 1.0])
    for i in range(n):
        case = f"syn-{i:04d}"
        hu, labels, omap = synthetic_ct(shape, seed, case)
        uris = {}
        for kind, arr in (("ct", hu), ("seg", labels)):
            uri = storage.join(out_uri, "nifti", f"{case}_{kind}.nii.gz")
            storage.write_bytes(uri, _nifti_bytes(nib.Nifti1Image(arr, affine)))
            uris[kind] = uri
        rows.append(
            {
                "case_id": case,
                "source": "synthetic",
                "patient_id": case,
                "split": "test",
                "image_uri": uris["ct"],
                "label_uri": uris["seg"],
                "shape": list(shape),
                "spacing": [1.5, 1.5, 5.0],
                "orientation": "RAS",
                "organ_map": json.dumps({str(k): v for k, v in omap.items()}),
                "private": False,
                "endpoint_allowlist": None,
            }
        )
    table_uri = storage.join(out_uri, "volumes.parquet")
    records.write_table("volumes", rows, table_uri)
    return table_uri


def _nifti_bytes(img: nib.Nifti1Image) -> bytes:
    import gzip

    return gzip.compress(img.to_bytes(), compresslevel=1)


if __name__ == "__main__":  # pragma: no cover
    print(write_synthetic_volumes(os.environ.get("OUT", "synthetic-volumes"), 2))
