"""CT-like phantom volumes with BTCV-numbered organ label maps, for the volumetric probe.

Each volume is a small abdomen (default 96 x 96 x 40 voxels, spacing in the header) with
HU-like intensities (air -1000, fat -100 to -90, muscle ~40, liver ~60, kidney ~30, bile ~10,
bone ~700) and an integer label map using the BTCV numbering (organ-presence paper uses BTCV). Organs
are ellipsoids and tubes placed where they sit in a real abdomen (liver and gallbladder on
the patient's right, spleen and stomach on the left, kidneys posterior and low, aorta left
of the midline in front of the spine, IVC to its right), so their z-extents differ and
organs appear and disappear across slices. Positions and sizes jitter per volume; one
volume has no gallbladder (as after a cholecystectomy), and one is stored LPS rather than
RAS so that reorientation is exercised.
"""

from __future__ import annotations

import gzip

import numpy as np

BTCV_ORGANS = {
    1: "spleen",
    2: "right kidney",
    3: "left kidney",
    4: "gallbladder",
    5: "esophagus",
    6: "liver",
    7: "stomach",
    8: "aorta",
    9: "inferior vena cava",
    10: "portal vein and splenic vein",
    11: "pancreas",
    12: "right adrenal gland",
    13: "left adrenal gland",
}

# label: (centre (x, y, z), semi-axes (x, y, z), HU) in fractions of the field of view, RAS
# voxel axes: x grows to the patient's right, y to anterior, z to superior. Drawn in this
# order, so later (smaller) organs sit on top of earlier ones.
_ELLIPSOIDS = {
    6: ((0.68, 0.52, 0.74), (0.20, 0.22, 0.30), 60.0),
    1: ((0.24, 0.40, 0.72), (0.08, 0.11, 0.16), 50.0),
    7: ((0.36, 0.64, 0.76), (0.12, 0.09, 0.16), 25.0),
    2: ((0.70, 0.31, 0.34), (0.06, 0.075, 0.15), 30.0),
    3: ((0.30, 0.31, 0.40), (0.06, 0.075, 0.15), 30.0),
    11: ((0.46, 0.50, 0.55), (0.17, 0.045, 0.07), 45.0),
    10: ((0.55, 0.52, 0.62), (0.07, 0.02, 0.04), 55.0),
    4: ((0.62, 0.66, 0.50), (0.05, 0.06, 0.10), 10.0),
    12: ((0.62, 0.34, 0.56), (0.02, 0.03, 0.05), 30.0),
    13: ((0.38, 0.34, 0.60), (0.02, 0.03, 0.05), 30.0),
}
# label: (centre x, centre y, radius, z from, z to, HU) -- vertical tubes. The aorta and the IVC
# are drawn wider than life (radius 0.05 of the field: 3.3 cm across a 33 cm abdomen, against
# ~2.5 cm) so that on the demo's 96 x 96 slices each disc holds at least pi * (4.8 - sqrt(2)/2)^2
# = 52.6 > 50 voxels: the organ-presence paper's "present" threshold, which it applies to 512 x 512
# BTCV slices. Life-size at 96 x 96 they hold ~30 voxels, never present, and the probe's vessel
# exclusion (strata, adversarial conditioning: ``medscope.volumes.presence``) never acts. Their
# centres are 0.14 apart, so the +-0.01 jitter never lets one overwrite the other.
VESSEL_RADIUS = 0.05
_TUBES = {
    8: (0.44, 0.40, VESSEL_RADIUS, 0.00, 1.00, 45.0),
    9: (0.58, 0.42, VESSEL_RADIUS, 0.00, 0.90, 35.0),
    5: (0.45, 0.41, 0.020, 0.86, 1.00, 35.0),
}
SPACINGS = ((0.8, 0.8, 2.5), (0.7, 0.7, 2.5), (0.8, 0.8, 3.0))
MISSING = {1: (4,)}  # volume index -> labels left out (no gallbladder)
LPS_VOLUMES = {2}


def ct_phantom(rng: np.random.Generator, shape=(96, 96, 40), drop: tuple[int, ...] = ()):
    """One abdomen: (HU int16 array, label uint8 array), both in RAS voxel order.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the per-volume jitter, bowel loops and noise.
    shape : tuple of int, optional
        ``(nx, ny, nz)`` voxels.
    drop : tuple of int, optional
        BTCV labels left out of the volume.

    Returns
    -------
    hu : numpy.ndarray of int16
        HU-like intensities, shape ``shape``.
    labels : numpy.ndarray of uint8
        BTCV organ labels (0 background), shape ``shape``.
    """
    nx, ny, nz = shape
    x = (np.arange(nx) + 0.5)[:, None, None] / nx
    y = (np.arange(ny) + 0.5)[None, :, None] / ny
    z = (np.arange(nz) + 0.5)[None, None, :] / nz
    hu = np.full(shape, -1000.0, dtype=np.float32)
    labels = np.zeros(shape, dtype=np.uint8)

    body_r = ((x - 0.5) / 0.46) ** 2 + ((y - 0.5) / 0.36) ** 2
    body = np.broadcast_to(body_r <= 1.0, shape)
    hu[body] = -100.0  # subcutaneous fat
    wall = np.broadcast_to(body_r <= 0.86, shape)
    hu[wall] = 40.0  # abdominal wall muscle
    inner = np.broadcast_to(body_r <= 0.74, shape)
    hu[inner] = -90.0  # visceral fat, against which the organs stand out
    paraspinal = np.broadcast_to(((x - 0.5) / 0.16) ** 2 + ((y - 0.27) / 0.09) ** 2 <= 1.0, shape)
    hu[paraspinal] = 45.0
    for _ in range(int(rng.integers(6, 10))):  # bowel loops with gas: unlabelled distractors
        c = rng.uniform([0.3, 0.55, 0.0], [0.7, 0.75, 0.6])
        a = rng.uniform([0.04, 0.03, 0.08], [0.07, 0.05, 0.2])
        loop = ((x - c[0]) / a[0]) ** 2 + ((y - c[1]) / a[1]) ** 2 + ((z - c[2]) / a[2]) ** 2
        hu[(loop <= 1.0) & inner] = 30.0
        hu[(loop <= 0.2) & inner] = -900.0
    zshift = rng.uniform(-0.04, 0.04)
    for label, (centre, axes, value) in _ELLIPSOIDS.items():
        if label in drop:
            continue
        c = np.array(centre) + rng.uniform(-0.015, 0.015, 3) + np.array([0, 0, zshift])
        a = np.array(axes) * rng.uniform(0.9, 1.1, 3)
        inside = ((x - c[0]) / a[0]) ** 2 + ((y - c[1]) / a[1]) ** 2 + ((z - c[2]) / a[2]) ** 2 <= 1.0
        inside &= inner
        hu[inside] = value + rng.uniform(-5, 5)
        labels[inside] = label
    for label, (cx, cy, r, z0, z1, value) in _TUBES.items():
        if label in drop:
            continue
        cx, cy = cx + rng.uniform(-0.01, 0.01), cy + rng.uniform(-0.01, 0.01)
        inside = np.broadcast_to(((x - cx) ** 2 + (y - cy) ** 2) <= r**2, shape) & (z >= z0 + zshift) & (z <= z1 + zshift)
        hu[inside] = value
        labels[inside] = label
    # spine and, above the kidneys, the lower ribs: bone, unlabelled (BTCV does not label bone)
    spine = np.broadcast_to(((x - 0.5) / 0.065) ** 2 + ((y - 0.25) / 0.055) ** 2 <= 1.0, shape)
    hu[spine] = 700.0
    labels[spine] = 0
    canal = np.broadcast_to(((x - 0.5) / 0.022) ** 2 + ((y - 0.19) / 0.02) ** 2 <= 1.0, shape)
    hu[canal] = 10.0
    angle = np.arctan2(y - 0.5, x - 0.5)
    arcs = (body_r > 0.76) & (body_r <= 0.84) & (np.cos(angle * 5.0) > 0.2)
    ribs = np.broadcast_to(arcs, shape) & (z > 0.6) & (np.sin(z * 40.0) > 0.3)
    hu[ribs] = 700.0
    labels[ribs] = 0
    hu += rng.normal(0.0, 12.0, shape).astype(np.float32)
    hu[~body] = -1000.0
    return np.rint(hu).astype(np.int16), labels


def nifti_bytes(array: np.ndarray, spacing, lps: bool = False) -> bytes:
    """Gzipped NIfTI-1 bytes (mtime 0, so the same array gives the same bytes).

    Parameters
    ----------
    array : numpy.ndarray
        Voxels in RAS order, (nx, ny, nz).
    spacing : tuple of float
        Voxel size ``(sx, sy, sz)`` in mm.
    lps : bool, optional
        Store the volume LPS (x and y flipped, negative affine diagonal) instead of RAS.

    Returns
    -------
    bytes
        A gzipped ``.nii.gz`` file, byte-identical for equal inputs.
    """
    import nibabel as nib

    sx, sy, sz = spacing
    affine = np.diag([sx, sy, sz, 1.0])
    if lps:
        # same anatomy, stored with x and y running the other way (as many scanners write)
        array = array[::-1, ::-1, :]
        affine = np.diag([-sx, -sy, sz, 1.0])
        affine[0, 3] = sx * (array.shape[0] - 1)
        affine[1, 3] = sy * (array.shape[1] - 1)
    img = nib.Nifti1Image(np.ascontiguousarray(array), affine)
    img.header.set_xyzt_units("mm", "sec")
    img.set_qform(affine, code=1)
    img.set_sform(affine, code=1)
    return gzip.compress(img.to_bytes(), compresslevel=6, mtime=0)
