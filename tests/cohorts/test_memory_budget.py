"""Issue 20: small files that decode to huge arrays stay within the configured budget.

The loads run in a child process so its peak resident memory (``VmHWM``; not ``ru_maxrss``,
which Linux carries over from pytest through fork and exec) measures only them. Budget here:
``max_decoded_bytes`` = 32 MiB. The bombs inflate to 192 MB (an RGB mask PNG), 200 MB (a
deflated DICOM) and 200 MB (a real .nii.gz whose header matches its data); a 16-bit
3000 x 3000 PNG (18 MB decoded, under budget) must still arrive: stretched to 8 bits in
float64 as one array it used to cost about 0.3 GB.
"""

import gzip
import io
import json
import os
import subprocess
import sys

import nibabel as nib
import numpy as np
import pytest
from PIL import Image

from tests.fixtures.cohort_bad_layouts import deflated_dicom, gzip_zeros, png_bomb, write_raw
from tests.fixtures.cohort_layouts import _save, expect, gray_image, rect_mask, rle_encode, write16

BUDGET = 32 << 20
LIMITS = {"max_decoded_bytes": BUDGET, "max_image_pixels": 100_000_000}
BIG = 200_000_000

PEAK = r"""
def peak():  # VmHWM: ru_maxrss would carry pytest's own size over from the fork
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
"""

CHILD = r"""
import json, resource, sys
import nibabel, pydicom, pydicom.pixels  # imported before the baseline: libraries are not data
from medscope import cohorts

""" + PEAK + r"""
limits, root = json.loads(sys.argv[1]), sys.argv[2]
base, out = peak(), {}
for fmt, sub, extra in (("image-mask-folder", "imf", {}), ("siim-rle", "siim", {}),
                        ("nifti-labels", "nii", {"organ_map": {1: "spleen"}})):
    cfg = cohorts.dataset_config(fmt, overrides={"limits": limits, **extra})
    table, rejects = cohorts.load(fmt, f"{root}/{sub}", cfg)
    key = "image_uri" if fmt == "nifti-labels" else "source_file"
    rows = table.select([c for c in (key, "lesion_bbox", "image") if c in table.column_names]).to_pylist()
    out[fmt + "_peak"] = (peak() - base) >> 20
    out[fmt] = {"rows": {r[key].rsplit(sub + "/", 1)[-1]: r.get("lesion_bbox") for r in rows},
                "rejects": {r["item_id"]: r["reason"] for r in rejects}}
out["peak_delta"] = peak() - base
print(json.dumps(out))
"""


def gz_nifti_of_zeros(path, shape):
    """A real .nii.gz: header and data agree, all zeros."""
    import nibabel as nib

    hdr = nib.Nifti1Header()
    hdr.set_data_shape(shape)
    hdr.set_data_dtype(np.int16)
    hdr.set_sform(np.eye(4), 1)
    hdr["vox_offset"] = 352
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(gzip_zeros(hdr.binaryblock + b"\0" * 4, int(np.prod(shape)) * 2))


@pytest.mark.timeout(180)
def test_bombs_stay_within_the_configured_budget(tmp_path):
    import nibabel as nib

    # 2D: a 16-bit 3000 x 3000 image (good) and an RGB mask bomb of 8000 x 8000 (192 MB decoded)
    h = w = 3000
    ramp = ((np.arange(w, dtype=np.uint32)[None, :] * 7 + np.arange(h, dtype=np.uint32)[:, None]) % 4096).astype(np.uint16)
    write16(f"{tmp_path}/imf/images/deep.png", ramp)
    m = rect_mask(h, w, 100, 200, 1999, 2899)
    _save(f"{tmp_path}/imf/masks/deep.png", m.astype(np.uint8) * 255)
    del ramp
    _save(f"{tmp_path}/imf/images/bomb.png", gray_image(40, 40, 1))
    write_raw(tmp_path, "imf/masks/bomb.png", png_bomb(8000, 8000, colour=True))
    # SIIM: a deflated DICOM that inflates to 200 MB, and a small deflated one that is fine
    d = f"{tmp_path}/siim/dicom-images-train"
    deflated_dicom(f"{d}/a/1.2.1.dcm", gray_image(32, 32, 2), "p1", pad_bytes=BIG)
    small = rect_mask(32, 32, 1, 2, 5, 9)
    deflated_dicom(f"{d}/a/1.2.2.dcm", gray_image(32, 32, 3), "p2")
    write_raw(tmp_path, "siim/train-rle.csv", f"ImageId,EncodedPixels\n1.2.1,-1\n1.2.2,{rle_encode(small)}\n".encode())
    # NIfTI: a real 200 MB volume of zeros (a few hundred KB gzipped) and a small good pair
    gz_nifti_of_zeros(f"{tmp_path}/nii/imagesTr/big.nii.gz", (1000, 1000, 100))
    gz_nifti_of_zeros(f"{tmp_path}/nii/labelsTr/big.nii.gz", (1000, 1000, 100))
    for sub in ("imagesTr", "labelsTr"):
        nib.save(nib.Nifti1Image(np.zeros((8, 8, 4), np.uint8), np.eye(4)), f"{tmp_path}/nii/{sub}/ok.nii.gz")
    assert os.path.getsize(f"{tmp_path}/nii/imagesTr/big.nii.gz") < 2_000_000
    assert os.path.getsize(f"{d}/a/1.2.1.dcm") < 2_000_000

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(LIMITS), str(tmp_path)],
                          capture_output=True, text=True, timeout=150, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)

    imf = got["image-mask-folder"]
    assert imf["rows"] == {"images/deep.png": expect(m)[1]}
    assert imf["rejects"] == {"images/bomb.png": "over max_decoded_bytes"}
    siim = got["siim-rle"]
    assert siim["rows"] == {"dicom-images-train/a/1.2.2.dcm": expect(small)[1]}
    assert siim["rejects"] == {"dicom-images-train/a/1.2.1.dcm": "over max_decoded_bytes"}
    nii = got["nifti-labels"]
    assert list(nii["rows"]) == ["imagesTr/ok.nii.gz"]
    assert nii["rejects"] == {"imagesTr/big.nii.gz": "over max_decoded_bytes"}
    # the largest thing held is the good 16-bit image: 18 MB raw + 9 MB 8-bit + its PNG + mask
    print({k: v for k, v in got.items() if k.endswith("_peak")}); print(f"peak grew by {got['peak_delta'] / 2**20:.0f} MiB")
    assert got["peak_delta"] < 3 * BUDGET, f"peak grew by {got['peak_delta'] / 2**20:.0f} MiB"


OUTSIDE_IMPORTER_CHILD = r"""
import json, resource, sys
import nibabel, cv2, PIL.Image  # libraries are not data
from medscope import images
from medscope.io import safe_text
from medscope.volumes import nifti

""" + PEAK + r"""
root, out = sys.argv[1], {}
base = peak()
img = nifti.read_nifti(root + "/small-header-long-tail.nii.gz")
out["nifti_shape"] = list(img.shape)
try:
    nifti.read_nifti(root + "/claims-2GB.nii.gz")
except nifti.VolumeError as err:
    out["claims"] = err.reason
try:
    images.decode_png(open(root + "/bomb.png", "rb").read())
except Exception as err:
    out["bomb"] = type(err).__name__ + ": " + str(err)
out["small_png"] = list(images.decode_png(open(root + "/small.png", "rb").read()).shape)
try:
    safe_text.read_json(root + "/sparse.json", max_bytes=32 << 20)
except safe_text.BadText as err:
    out["sparse"] = err.reason
out["peak_delta"] = peak() - base
print(json.dumps(out))
"""


@pytest.mark.timeout(120)
@pytest.mark.timeout(180)
def test_budgets_outside_the_importer_hold(tmp_path):
    """Gzipped NIfTI through the probe's reader, PNG bytes in tables, JSON files: sizes are
    checked before allocation. Budget: the importer's default ``max_decoded_bytes`` (1 GiB)
    must never be approached; the largest thing held here is a few MiB, so peak growth stays
    under 96 MiB (3 x the 32 MiB of the importer's memory test)."""
    hdr = nib.Nifti1Header()
    hdr.set_data_shape((8, 8, 4))
    hdr.set_data_dtype(np.int16)
    hdr.set_sform(np.eye(4), 1)
    hdr["vox_offset"] = 352
    # header + 512 voxel bytes, then 300 MB of zeros the header never asked for
    (tmp_path / "small-header-long-tail.nii.gz").write_bytes(gzip_zeros(hdr.binaryblock + b"\0" * 4, 300_000_000))
    big = nib.Nifti1Header()
    big.set_data_shape((1200, 1000, 900))  # 2.16 GB of int16, over the 1 GiB default
    big.set_data_dtype(np.int16)
    big.set_sform(np.eye(4), 1)
    (tmp_path / "claims-2GB.nii.gz").write_bytes(gzip.compress(big.binaryblock + b"\0" * 4))
    (tmp_path / "bomb.png").write_bytes(png_bomb(9000, 9000, colour=True))  # 243 MB once decoded
    buf = io.BytesIO()
    Image.fromarray(gray_image(20, 30, 1)).save(buf, format="PNG")
    (tmp_path / "small.png").write_bytes(buf.getvalue())
    with open(tmp_path / "sparse.json", "wb") as fh:
        fh.truncate(1_500_000_000)  # sparse: no disk used
    assert (tmp_path / "small-header-long-tail.nii.gz").stat().st_size < 2_000_000
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", OUTSIDE_IMPORTER_CHILD, str(tmp_path)], capture_output=True, text=True, timeout=150,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["nifti_shape"] == [8, 8, 4]
    assert got["claims"] == "over max_decoded_bytes"
    assert got["bomb"].startswith("MedScopeError") and "81000000 pixels" in got["bomb"]
    assert got["small_png"] == [20, 30, 3]
    assert got["sparse"] == "over max_file_bytes"
    print(f"peak grew by {got['peak_delta'] / 2**20:.0f} MiB")
    assert got["peak_delta"] < 96 << 20, f"peak grew by {got['peak_delta'] >> 20} MiB"


NIFTI_PAIR_CHILD = r"""
import json, resource, sys
import nibabel  # libraries are not data
from medscope import cohorts

""" + PEAK + r"""
limits, root = json.loads(sys.argv[1]), sys.argv[2]
cfg = cohorts.dataset_config("nifti-labels", overrides={"limits": limits, "organ_map": {1: "spleen"}})
cohorts.load("nifti-labels", root + "/warm", cfg)  # a tiny pair first: the modules a load imports are not data
base = peak()
table, rejects = cohorts.load("nifti-labels", root + "/big", cfg)
print(json.dumps({"rows": table.num_rows, "rejects": [r["reason"] for r in rejects], "peak_delta": peak() - base}))
"""


def gz_float_nifti_of_zeros(path, shape):
    """A real float32 .nii.gz of zeros (header and data agree): about 1000:1 under gzip."""
    hdr = nib.Nifti1Header()
    hdr.set_data_shape(shape)
    hdr.set_data_dtype(np.float32)
    hdr.set_sform(np.eye(4), 1)
    hdr["vox_offset"] = 352
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(gzip_zeros(hdr.binaryblock + b"\0" * 4, int(np.prod(shape)) * 4))


@pytest.mark.timeout(120)
def test_an_accepted_gzipped_pair_costs_about_one_volume(tmp_path):
    """Issue 51: a 294 KB .nii.gz inside the budget peaked at 3.7 GB, about five times its
    decoded size: the inflated pieces and their join, a slice, a BytesIO copy, the whole array
    for the NaN check, and image and label held together. Now the voxels are inflated into one
    buffer of the header's size, checked slab by slab, and the image's voxels are let go before
    the label map is read: the peak stays under 1.5 volumes (it was over 4)."""
    shape = (256, 256, 120)  # float32: 31.5 MB decoded each, inside the 32 MiB budget
    volume = int(np.prod(shape)) * 4
    for sub in ("imagesTr", "labelsTr"):
        gz_float_nifti_of_zeros(f"{tmp_path}/big/{sub}/a.nii.gz", shape)
        gz_float_nifti_of_zeros(f"{tmp_path}/warm/{sub}/a.nii.gz", (8, 8, 4))
    assert os.path.getsize(f"{tmp_path}/big/imagesTr/a.nii.gz") < 100_000
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", NIFTI_PAIR_CHILD, json.dumps(LIMITS), str(tmp_path)],
                          capture_output=True, text=True, timeout=100, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["rows"] == 1 and got["rejects"] == []
    print(f"peak grew by {got['peak_delta'] / 2**20:.0f} MiB for a {volume / 2**20:.0f} MiB volume pair")
    assert got["peak_delta"] < 1.5 * volume, f"peak grew by {got['peak_delta'] / 2**20:.0f} MiB"


SPARSE_CHILD = r"""
import json, resource, sys
from medscope.io.bounded import read_bounded

""" + PEAK + r"""
base = peak()
data = read_bounded(sys.argv[1], 1 << 30)
print(json.dumps({"size": len(data), "peak_delta": peak() - base}))
"""


@pytest.mark.timeout(60)
def test_a_large_file_under_the_limit_is_held_once(tmp_path):
    """Issue 51: a 1 GB sparse file (under max_file_bytes) peaked at 2.1 GB: read in 1 MiB
    pieces and joined, every byte was held twice. Now one read of the size fstat gives."""
    path = tmp_path / "sparse.png"
    size = 200_000_000
    with open(path, "wb") as fh:
        fh.truncate(size)  # sparse: no disk used, 200 MB of zeros when read
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", SPARSE_CHILD, str(path)], capture_output=True, text=True,
                          timeout=50, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["size"] == size
    assert got["peak_delta"] < 1.25 * size, f"peak grew by {got['peak_delta'] / 2**20:.0f} MiB for {size / 2**20:.0f} MiB"
