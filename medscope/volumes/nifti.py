"""NIfTI image + label volumes, reoriented to the closest canonical (RAS+) orientation (organ-presence paper).

A volume that cannot be trusted raises :class:`VolumeError` with a short countable ``reason``
(``corrupt_nifti``, ``shape_mismatch``, ``affine_mismatch``, ``non_integer_labels``,
``unmapped_label``, ``nan_voxels``, ``label_out_of_range``) so the pipeline writes a rejects row and goes on.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import nibabel as nib
import numpy as np

from medscope.io import bounded, guarded
from medscope.errors import MedScopeError


class VolumeError(MedScopeError):
    """A volume that cannot be used; ``reason`` is the short label of the rejects row."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


@dataclass
class Volume:
    """One canonical (RAS+) CT volume with its integer label map; axis 2 is axial (inferior->superior)."""

    case_id: str
    image: np.ndarray  # float32 HU, (X, Y, Z)
    labels: np.ndarray  # int32, (X, Y, Z)
    affine: np.ndarray  # 4x4, canonical
    organ_map: dict[int, str]  # label value -> organ name

    @property
    def spacing(self) -> tuple[float, float, float]:
        return tuple(float(v) for v in np.sqrt((self.affine[:3, :3] ** 2).sum(axis=0)))

    @property
    def z_mm(self) -> np.ndarray:
        """World z (mm) of each axial slice."""
        return slice_z_mm(self.affine, self.image.shape[2])


def slice_z_mm(affine: np.ndarray, n_slices: int) -> np.ndarray:
    """World z coordinate (mm) of voxel (0, 0, k) for k in 0..n_slices-1.

    Parameters
    ----------
    affine : numpy.ndarray
        4 x 4 voxel-to-world matrix of a canonical volume.
    n_slices : int
        Number of axial slices.

    Returns
    -------
    numpy.ndarray of float64
        (n_slices,) world z in mm.
    """
    k = np.arange(n_slices, dtype=np.float64)
    return affine[2, 2] * k + affine[2, 3]


class BufferFile(io.RawIOBase):
    """A read-only, seekable file over a buffer, without copying it (``io.BytesIO`` copies a
    bytearray). nibabel reads a header and voxel slabs through it."""

    def __init__(self, buffer):
        super().__init__()
        self._view = memoryview(buffer).cast("B")
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), max(0, len(self._view) - self._pos))
        memoryview(b).cast("B")[:n] = self._view[self._pos:self._pos + n]
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos


def inflate_into(data: bytes, need: int, what: str = "image") -> memoryview:
    """The first ``need`` inflated bytes of a gzip stream, inflated into one preallocated buffer.

    The cap is checked while inflating, never after: ``need`` comes from the header (and was
    checked against ``limits.max_decoded_bytes``) and the reader asks for no more, one 1 MiB
    piece at a time, so a stream that goes on past it is never inflated. Peak memory is ``need``
    plus one piece.

    Parameters
    ----------
    data : bytes
        The ``.nii.gz`` bytes (concatenated gzip members are read through).
    need : int
        Header + extensions + voxel bytes the header promises.
    what : str, optional
        What the volume is, for the reject detail.

    Returns
    -------
    memoryview
        The inflated bytes; shorter than ``need`` when the stream ends early.

    Raises
    ------
    InputRejected
        ``corrupt NIfTI`` for a broken gzip stream.
    """
    import gzip
    import zlib

    out = bytearray(need)
    view = memoryview(out)
    got = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            while got < need:
                n = stream.readinto(view[got:got + min(need - got, 1 << 20)])
                if not n:
                    break
                got += n
    except (OSError, EOFError, zlib.error) as err:
        raise bounded.InputRejected("corrupt NIfTI", f"{what}: gzip: {err}") from None
    return view[:got]


def nifti_from_bytes(data: bytes, what: str = "image", limits: guarded.Limits = guarded.DEFAULT_LIMITS):
    """NIfTI bytes (gzip or plain) -> nibabel image over complete voxel bytes; InputRejected if corrupt.

    The header is read first (from at most 540 inflated bytes); its shape x dtype must fit
    ``limits.max_decoded_bytes``; then only header + voxels are inflated, so a small
    ``.nii.gz`` that would inflate to gigabytes is refused before it does. A file shorter
    than its header promises is ``corrupt NIfTI``.

    Parameters
    ----------
    data : bytes
        A ``.nii`` or ``.nii.gz`` file (NIfTI-1 or NIfTI-2).
    what : str, optional
        What the file is, named in reject details.
    limits : Limits, optional
        Budget ``max_decoded_bytes`` for the voxels.

    Returns
    -------
    nibabel.Nifti1Image or nibabel.Nifti2Image
        The image, over exactly header + voxel bytes.

    Raises
    ------
    InputRejected
        ``corrupt NIfTI``, ``over max_decoded_bytes`` (or the budget check's own reason),
        ``invalid affine`` (non-finite or singular) or ``not a 3-D volume``.
    """
    gz = data[:2] == b"\x1f\x8b"
    head = guarded.inflate_bounded(data, 540, 31, what="NIfTI", strict=False) if gz else data[:540]
    try:
        size = int.from_bytes(head[:4], "little")
        kind = nib.Nifti2Header if size == 540 or int.from_bytes(head[:4], "big") == 540 else nib.Nifti1Header
        hdr = kind.from_fileobj(io.BytesIO(head))
        shape, dtype = hdr.get_data_shape(), hdr.get_data_dtype()
        need = int(hdr.get_data_offset()) + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    except Exception as err:  # nibabel raises assorted types on garbage headers
        raise bounded.InputRejected("corrupt NIfTI", f"{what}: {type(err).__name__}: {err}") from None
    guarded.check_decoded(shape, dtype.itemsize, limits, f"NIfTI {what}")
    if need > limits.max_decoded_bytes + (1 << 20):  # header + extensions + voxels
        raise bounded.InputRejected("over max_decoded_bytes", f"NIfTI {what} needs {need} B (limits.max_decoded_bytes)")
    # inflated in place into one buffer of exactly the header's size: the stream can never give
    # more, and the voxels are never copied (list + join, a slice, a BytesIO each doubled the peak)
    raw = inflate_into(data, need, what) if gz else memoryview(data)
    if len(raw) < need:
        raise bounded.InputRejected("corrupt NIfTI", f"{what}: {len(raw)} bytes, header promises {need}")
    try:
        klass = nib.Nifti2Image if kind is nib.Nifti2Header else nib.Nifti1Image
        held = BufferFile(raw[:need])
        img = klass.from_file_map(klass.make_file_map({"image": held, "header": held}))
        affine = np.asarray(img.affine, dtype=float)
    except Exception as err:
        raise bounded.InputRejected("corrupt NIfTI", f"{what}: {type(err).__name__}: {err}") from None
    if not np.all(np.isfinite(affine)) or abs(float(np.linalg.det(affine[:3, :3]))) < 1e-12:
        raise bounded.InputRejected("invalid affine", f"{what}: voxel-to-world matrix is singular (e.g. an all-zero sform)")
    if int(hdr["sform_code"]) == 0:
        # Without an sform the matrix is built from pixdim (qform or none). nibabel's header check
        # turns a zero voxel size into 1 mm with a warning only, so the file's own matrix, singular,
        # would pass as 1 mm voxels it never stated (issue 51, ninth campaign): read pixdim unchecked.
        zooms = kind.from_fileobj(io.BytesIO(head), check=False)["pixdim"][1:1 + min(3, len(shape))]
        if not all(np.isfinite(z) and z != 0 for z in zooms.tolist()):
            raise bounded.InputRejected(
                "invalid affine", f"{what}: voxel size {tuple(float(z) for z in zooms)} in pixdim and no sform: "
                                  "the voxel-to-world matrix is singular")
    core = tuple(shape)
    while len(core) > 3 and core[-1] == 1:  # (X, Y, Z, 1) exports are common
        core = core[:-1]
    if len(core) != 3:  # a 4-D / 5-D series would be referenced as if it were one volume
        raise bounded.InputRejected("not a 3-D volume", f"{what}: shape {tuple(int(s) for s in shape)}")
    return img


def voxels(img) -> np.ndarray:
    """An image's voxels as an array, over the buffer :func:`nifti_from_bytes` inflated into where it can be.

    nibabel reads an in-memory file's voxels into a new array, so a volume that inflated to its
    header's size would be held twice (a 0.5 MB ``.nii.gz`` of 0.5 GB of zeros peaked at 1.1 GB).
    Unscaled voxels in a writable buffer are taken as they lie (Fortran order, the header's dtype
    and offset); scaled ones, and a read-only buffer (an uncompressed file's bytes), are read as
    nibabel reads them.

    Parameters
    ----------
    img : nibabel.Nifti1Image or nibabel.Nifti2Image
        As :func:`nifti_from_bytes` returns it.

    Returns
    -------
    numpy.ndarray
        The voxels, shape and dtype as nibabel gives them.
    """
    proxy = img.dataobj
    held = getattr(proxy, "file_like", None)
    view = getattr(held, "_view", None) if isinstance(held, BufferFile) else None
    unscaled = float(proxy.slope) == 1.0 and float(proxy.inter) == 0.0
    if view is None or view.readonly or not unscaled or getattr(proxy, "order", "F") != "F":
        return np.asanyarray(proxy)
    return np.ndarray(proxy.shape, proxy.dtype, buffer=view, offset=int(proxy.offset), order="F")


def read_nifti(uri: str) -> nib.Nifti1Image:
    """Read a .nii or .nii.gz from any storage URI; a corrupt, truncated or over-budget file -> VolumeError.

    Through the guarded reader of the cohort importer: at most
    ``max_file_bytes`` read, the header's shape x dtype checked against
    ``max_decoded_bytes`` and a ``.nii.gz`` inflated only as far as the header says
    (``guarded.Limits`` defaults), so two small gzipped files cannot inflate to gigabytes.
    Trailing singleton axes are dropped; anything else that is not 3-D is ``not_3d``.

    Parameters
    ----------
    uri : str
        Local path or storage URI of the file.

    Returns
    -------
    nibabel.Nifti1Image
        A 3-D image with its voxels in memory.

    Raises
    ------
    VolumeError
        ``corrupt_nifti``, ``not_3d``, ``unreadable``, or another reason of the guarded reader.
    """
    try:
        data = bounded.read_bounded(uri, guarded.DEFAULT_LIMITS.max_file_bytes)
        img = nifti_from_bytes(data, uri, guarded.DEFAULT_LIMITS)
        del data  # the compressed bytes: the voxels live in the inflated buffer now
        # Force the data to be read now: a truncated file fails here, not later in a worker.
        img = nib.Nifti1Image(voxels(img), img.affine, img.header)
    except bounded.InputRejected as err:
        reason = {"corrupt NIfTI": "corrupt_nifti", "not a 3-D volume": "not_3d",
                  "unreadable file": "unreadable"}.get(err.reason, err.reason)
        detail = err.detail[len(f"{uri}: "):] if err.detail.startswith(f"{uri}: ") else err.detail
        raise VolumeError(reason, f"{uri}: {detail}") from None
    except Exception as err:  # noqa: BLE001 - nibabel raises many types on corrupt headers/data
        raise VolumeError("corrupt_nifti", f"{uri}: {type(err).__name__}: {err}") from None
    if img.ndim > 3:
        img = nib.funcs.squeeze_image(img)  # (X, Y, Z, 1) exports are common; drop trailing singletons
    if img.ndim != 3:
        raise VolumeError("not_3d", f"{uri}: expected a 3-D volume, got shape {img.shape}")
    return img


def parse_organ_map(text: str | dict) -> dict[int, str]:
    """The volumes table's organ_map JSON ({label: organ}) -> {int label: organ}.

    Parameters
    ----------
    text : str or dict
        JSON text, or the already-parsed mapping.

    Returns
    -------
    dict of int to str
        Label value -> organ name.

    Raises
    ------
    VolumeError
        ``bad_organ_map`` when a key is not an integer or the value is not a mapping.
    """
    raw = json.loads(text) if isinstance(text, str) else text
    try:
        return {int(k): str(v) for k, v in raw.items()}
    except (TypeError, ValueError, AttributeError) as err:
        raise VolumeError("bad_organ_map", f"organ_map must map integer labels to names: {err}") from None


def canonical_pair(image: nib.Nifti1Image, labels: nib.Nifti1Image) -> tuple[nib.Nifti1Image, nib.Nifti1Image]:
    """Reorient both to the closest canonical orientation and check they share shape and affine.

    Parameters
    ----------
    image : nibabel.Nifti1Image
        The CT image.
    labels : nibabel.Nifti1Image
        Its label map.

    Returns
    -------
    image : nibabel.Nifti1Image
        The image in the closest canonical (RAS+) orientation.
    labels : nibabel.Nifti1Image
        The label map, likewise.

    Raises
    ------
    VolumeError
        ``shape_mismatch``, or ``affine_mismatch`` (beyond 1e-3) after reorientation.
    """
    image = nib.as_closest_canonical(image)
    labels = nib.as_closest_canonical(labels)
    if image.shape != labels.shape:
        raise VolumeError("shape_mismatch", f"image {image.shape} vs label {labels.shape}")
    if not np.allclose(image.affine, labels.affine, atol=1e-3):
        raise VolumeError("affine_mismatch", "image and label affines differ after reorientation")
    return image, labels


INT32 = np.iinfo(np.int32)


def integer_labels(data: np.ndarray) -> np.ndarray:
    """Label voxels as int32; a non-integer, non-finite or out-of-range label map -> VolumeError.

    The range is checked before the cast: an int64 label of 2**32 + 2 would otherwise wrap to
    2 (another structure) and 2**32 to 0 (the lesion vanishes), with no reject.

    Parameters
    ----------
    data : array_like
        Label voxels, integer or float.

    Returns
    -------
    numpy.ndarray of int32
        The labels, same shape.

    Raises
    ------
    VolumeError
        ``non_integer_labels`` (fractional or non-finite values) or ``label_out_of_range``.
    """
    data = np.asarray(data)
    if data.size and (np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.floating)):
        if np.issubdtype(data.dtype, np.floating) and not np.all(np.isfinite(data)):
            raise VolumeError("non_integer_labels", "label map holds non-integer or non-finite values")
        lo, hi = data.min(), data.max()
        if lo < INT32.min or hi > INT32.max:
            raise VolumeError("label_out_of_range", f"label values {lo}..{hi} do not fit int32")
    if np.issubdtype(data.dtype, np.integer):
        return data.astype(np.int32)
    if not np.all(np.isfinite(data)) or not np.all(data == np.round(data)):
        raise VolumeError("non_integer_labels", "label map holds non-integer or non-finite values")
    return data.astype(np.int32)


def load_volume(case_id: str, image_uri: str, label_uri: str, organ_map: str | dict) -> Volume:
    """Read, reorient and check one image/label pair (organ-presence paper, "Data and ground truth").

    Parameters
    ----------
    case_id : str
        The volume's case id.
    image_uri : str
        Where the CT image is.
    label_uri : str
        Where its label map is.
    organ_map : str or dict
        Label value -> organ name, as JSON text or a mapping.

    Returns
    -------
    Volume
        Canonical image (float32 HU), int32 labels, affine and organ map.

    Raises
    ------
    VolumeError
        For an unreadable or mismatched pair, bad labels, ``nan_voxels`` in the image, or a
        ``unmapped_label`` (a non-zero label missing from ``organ_map``).

    References
    ----------
    .. [1] organ-presence paper, "Data and ground truth"
    """
    omap = parse_organ_map(organ_map)
    image, labels = canonical_pair(read_nifti(image_uri), read_nifti(label_uri))
    lab = integer_labels(np.asanyarray(labels.dataobj))
    img = np.asarray(image.get_fdata(dtype=np.float32))
    if not np.isfinite(img).all():
        raise VolumeError("nan_voxels", f"{int((~np.isfinite(img)).sum())} NaN or infinite voxels in the image")
    present = label_values(lab) - {0}
    unmapped = sorted(present - set(omap))
    if unmapped:
        raise VolumeError("unmapped_label", f"label value(s) {unmapped} not in organ_map")
    return Volume(case_id, img, lab, image.affine.copy(), omap)


def label_values(lab: np.ndarray) -> set[int]:
    """The distinct values of an integer label map.

    A histogram is about 4x faster than ``np.unique`` (which sorts or hashes every voxel) for
    the small non-negative values label maps hold; other maps fall back to ``np.unique``.

    Parameters
    ----------
    lab : numpy.ndarray of int
        Label map, any shape.

    Returns
    -------
    set of int
        The values present (empty for an empty array).
    """
    if lab.size == 0:
        return set()
    lo, hi = int(lab.min()), int(lab.max())
    if lo >= 0 and hi < 1 << 16:
        return set(np.flatnonzero(np.bincount(lab.ravel(), minlength=hi + 1)).tolist())
    return set(np.unique(lab).tolist())


def axial_slice(volume: np.ndarray, k: int) -> np.ndarray:
    """Axial slice k of a canonical (RAS+) array in radiological display: anterior up, patient right on the left.

    Parameters
    ----------
    volume : numpy.ndarray
        Canonical (X, Y, Z) array.
    k : int
        Slice index along Z.

    Returns
    -------
    numpy.ndarray
        (Y, X) contiguous slice, rows anterior to posterior, columns patient right to left.
    """
    return np.ascontiguousarray(volume[:, :, k].T[::-1, ::-1])
