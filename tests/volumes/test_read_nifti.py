"""read_nifti (medscope/volumes/nifti.py): the voxels of a ``.nii.gz`` are held once, in the buffer they were
inflated into, and are the voxels nibabel reads; scaled or uncompressed files are read as nibabel reads them."""

from __future__ import annotations

import gzip
import io
import tracemalloc

import nibabel as nib
import numpy as np
import pytest

from medscope.volumes.nifti import read_nifti


def _write(path, data: np.ndarray, *, gz: bool, slope: float | None = None, big_endian: bool = False):
    img = nib.Nifti1Image(data, np.diag([0.8, 0.8, 2.5, 1.0]))
    if big_endian:
        img = nib.Nifti1Image(data.astype(data.dtype.newbyteorder(">")), img.affine,
                              nib.Nifti1Header(endianness=">"))
    if slope is not None:
        img.header.set_slope_inter(slope, -10.0)
    bio = io.BytesIO()
    img.to_file_map({"image": nib.FileHolder(fileobj=bio), "header": nib.FileHolder(fileobj=bio)})
    raw = bio.getvalue()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


@pytest.mark.parametrize("gz, slope, big_endian", [
    (True, None, False), (True, None, True), (True, 0.5, False), (False, None, False)])
def test_voxels_are_nibabels(tmp_path, gz, slope, big_endian):
    rng = np.random.default_rng(5)
    data = rng.integers(-1000, 2000, size=(7, 5, 3)).astype(np.int16)
    path = _write(tmp_path / ("v.nii.gz" if gz else "v.nii"), data, gz=gz, slope=slope, big_endian=big_endian)
    got = np.asanyarray(read_nifti(str(path)).dataobj)
    expected = np.asanyarray(nib.load(str(path)).dataobj)
    assert got.shape == expected.shape == (7, 5, 3)
    assert np.array_equal(got, expected)
    if slope is not None:  # the scaling applied: 0.5 x stored - 10, by hand for one voxel
        assert got[1, 2, 0] == pytest.approx(0.5 * data[1, 2, 0] - 10.0)
    else:
        assert np.array_equal(got, data)


def test_a_gzip_volume_bomb_is_held_once(tmp_path):
    """A 0.5 MB .nii.gz of 256 MiB of zeros (inside the 1 GiB max_decoded_bytes): reading it costs about one
    volume, not two (nibabel's read of an in-memory file copies: 2.0 volumes before)."""
    shape = (256, 256, 2048)
    volume = 2 * int(np.prod(shape))  # int16
    header = nib.Nifti1Header()
    header.set_data_shape(shape)
    header.set_data_dtype(np.int16)
    header.set_sform(np.eye(4))
    bio = io.BytesIO()
    header.write_to(bio)
    head = bio.getvalue() + b"\0" * (352 - len(bio.getvalue()))
    path = tmp_path / "bomb.nii.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(head)
        zeros = b"\0" * (1 << 24)
        for _ in range(volume // len(zeros)):
            fh.write(zeros)
    assert path.stat().st_size < 600_000
    tracemalloc.start()  # numpy's and Python's allocations, whatever the interpreter held before
    try:
        img = read_nifti(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert img.shape == shape
    assert volume <= peak < volume * 1.5, f"peak {peak / volume:.2f} volumes"
