"""BTCV / Medical-Decathlon volumes: ``imagesTr/*.nii.gz`` with ``labelsTr/*.nii.gz``.

The label file of an image has the same name, or the name the config's
``label_name_regex`` (pattern, replacement) makes of it (BTCV: ``img0001`` -> ``label0001``).
The organ-name map (integer label -> organ) comes from the dataset config (``organ_map``),
which may be a separate YAML file given with ``--config``.

The output is a ``volumes`` table: the NIfTI files stay where they are and are referenced
by URI (docs/design.md). Rejects: ``corrupt NIfTI`` (image or label unreadable), ``missing label
map``, ``label shape differs``, ``label affine differs`` (the label map would sit on other
anatomy), ``non-integer label map`` (a soft / probability map, or an RGB one, is not a label
map), ``invalid affine`` (an all-zero or singular sform / qform places the voxels nowhere),
``label map without image`` (a label file no image claims), ``not a 3-D volume``,
``non-finite voxels`` (NaN / inf in a float image), ``label out of range`` (beyond int32,
which the probe casts to), ``file name not UTF-8`` (the
row keeps the file's URI, which must stay readable), and the budgets of
``guarded.Limits``: the header's shape x dtype is checked, and a ``.nii.gz`` inflated only
as far as the header says it needs, before any voxel is read.
"""

from __future__ import annotations

import json
import posixpath
import re

import numpy as np
import pyarrow as pa

from medscope.io import guarded, storage
from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    InputRejected,
    as_reject,
    case_id,
    dataset_config,
    finish,
    leftovers,
    patient_id,
    read_file,
    file_reject_row,
    scan_tree,
)
from medscope.io.guarded import DEFAULT_LIMITS, Limits
from medscope.errors import MedScopeError

NIFTI_EXTS = (".nii.gz", ".nii")
AFFINE_TOL_MM = 1e-3


def read_nifti(data: bytes, what: str = "image", limits: Limits = DEFAULT_LIMITS):
    """NIfTI bytes -> nibabel image within ``limits`` (:func:`medscope.volumes.nifti.nifti_from_bytes`);
    imported here, not at the top, so the phantom cohort imports without nibabel (the GPU check).

    Parameters
    ----------
    data : bytes
        A ``.nii`` or ``.nii.gz`` file's bytes.
    what : str, optional
        What the file is (``"image"``, ``"label map"``), named in reject details.
    limits : Limits, optional
        Budgets checked on the header before the voxels are inflated.

    Returns
    -------
    nibabel.Nifti1Image
        The image, its voxel data complete.

    Raises
    ------
    InputRejected
        ``corrupt NIfTI``, ``over max_decoded_bytes``, ``invalid affine`` and the other refusals of
        :func:`medscope.volumes.nifti.nifti_from_bytes`.
    """
    from medscope.volumes.nifti import nifti_from_bytes

    return nifti_from_bytes(data, what, limits)


def check_finite(img, what: str = "image") -> None:
    """Reject a float volume holding NaN or inf voxels (checked a slab at a time).

    Parameters
    ----------
    img : nibabel.Nifti1Image
        The volume; only a float on-disk dtype is checked.
    what : str, optional
        What the volume is, named in the reject detail.

    Raises
    ------
    InputRejected
        ``non-finite voxels`` when any voxel is NaN or infinite.
    """
    if img.get_data_dtype().kind != "f":
        return
    # slab by slab through the proxy: only one slab is ever decoded, never the whole volume
    bad = sum(int(np.count_nonzero(~np.isfinite(slab))) for slab in _slabs(img))
    if bad:
        raise InputRejected("non-finite voxels", f"{what}: {bad} NaN or infinite voxel(s)")


def header_only(img):
    """The same image (class, shape, affine, header) over a zero-byte broadcast array.

    Parameters
    ----------
    img : nibabel.Nifti1Image or nibabel.Nifti2Image
        A read volume.

    Returns
    -------
    nibabel image
        Shape, affine, header and zooms of ``img``; its voxels (all zero) take no memory.
    """
    empty = np.broadcast_to(np.zeros((), img.get_data_dtype()), img.shape)
    return type(img)(empty, img.affine, img.header)


def label_name(cfg: DatasetConfig, image_name: str) -> str:
    """The label file name of an image file name: ``label_name_regex`` applied, else the same name.

    Parameters
    ----------
    cfg : DatasetConfig
        Supplies ``label_name_regex``, a ``(pattern, replacement)`` pair for ``re.sub``, or None.
    image_name : str
        The image's path relative to the images folder.

    Returns
    -------
    str
        The label map's path relative to the labels folder.
    """
    if cfg.label_name_regex:
        pattern, repl = cfg.label_name_regex
        return re.sub(pattern, repl, image_name)
    return image_name


def check_pair(image, label, limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """Validate a label map against its image; returns the integer label array.

    A scaled label map (scl_slope / scl_inter set) reads as float64: that size is checked too.

    Parameters
    ----------
    image : nibabel.Nifti1Image
        The image volume.
    label : nibabel.Nifti1Image
        Its label map.
    limits : Limits, optional
        Budget for the decoded label array.

    Returns
    -------
    tuple of int
        The smallest and largest label, read slab by slab (the map is never decoded whole);
        ``(0, 0)`` for an empty map.

    Raises
    ------
    InputRejected
        ``label shape differs``, ``label affine differs`` (over ``AFFINE_TOL_MM``), ``non-integer
        label map`` (structured, non-numeric, fractional, non-finite or negative values), ``label out
        of range`` or a decoded-size budget exceeded.
    """
    if tuple(label.shape) != tuple(image.shape):
        raise InputRejected("label shape differs", f"label {tuple(label.shape)}, image {tuple(image.shape)}")
    if not np.allclose(label.affine, image.affine, atol=AFFINE_TOL_MM):
        raise InputRejected("label affine differs", f"label spacing {_zooms(label)}, image {_zooms(image)}")
    dtype = label.get_data_dtype()
    if dtype.fields is not None or dtype.kind not in "biuf":
        raise InputRejected("non-integer label map", f"dtype {dtype}")
    slope, inter = label.header.get_slope_inter()
    scaled = (slope not in (None, 1.0)) or (inter not in (None, 0.0))
    guarded.check_decoded(label.shape, 8 if scaled else dtype.itemsize, limits, "NIfTI label map")
    # checked slab by slab: a label map is never decoded whole here (the import keeps only its URI)
    low, high = None, None
    for slab in _slabs(label):
        if slab.size == 0:
            continue
        if not np.issubdtype(slab.dtype, np.integer):
            if not np.all(np.isfinite(slab)) or not np.array_equal(slab, np.rint(slab)):
                raise InputRejected("non-integer label map", f"dtype {slab.dtype} with fractional values")
        lo, hi = slab.min(), slab.max()
        low = lo if low is None else min(low, lo)
        high = hi if high is None else max(high, hi)
    if low is not None and low < 0:
        raise InputRejected("non-integer label map", f"negative label {int(low)}")
    if high is not None and high > np.iinfo(np.int32).max:  # the probe casts to int32: 2**32 + 2 would wrap to 2
        raise InputRejected("label out of range", f"label {int(high)} does not fit int32")
    return (int(low), int(high)) if low is not None else (0, 0)


def _slabs(img, depth: int = 8):
    """The volume's voxels, ``depth`` planes of the last axis at a time, read through its proxy."""
    shape = tuple(img.shape)
    if not shape:
        yield np.asanyarray(img.dataobj)
        return
    for k in range(0, shape[-1], depth):
        yield np.asanyarray(img.dataobj[..., k:k + depth])


def _zooms(img) -> str:
    return "x".join(f"{float(z):g}" for z in img.header.get_zooms()[:3])


def volume_row(cfg: DatasetConfig, image_uri: str, label_uri: str, rel: str, image, organ_map: dict) -> dict:
    """One ``volumes`` row: the image and label files by URI, with shape, spacing and orientation.

    Parameters
    ----------
    cfg : DatasetConfig
        Supplies source, patient rule, ``private`` and ``endpoint_allowlist``.
    image_uri : str
        Where the image file is (a local path when local).
    label_uri : str
        Where its label map is.
    rel : str
        The image's path relative to the dataset folder (hashed into ``case_id``).
    image : nibabel.Nifti1Image
        The image, read for its shape, voxel spacing (mm) and axis codes.
    organ_map : dict of int to str
        Label value -> organ name, stored as JSON.

    Returns
    -------
    dict
        One row of the ``volumes`` table (``split`` None).
    """
    import nibabel as nib

    return {
        "case_id": case_id(cfg.source, rel),
        "source": cfg.source,
        "patient_id": patient_id(cfg, rel),
        "split": None,
        "image_uri": image_uri,
        "label_uri": label_uri,
        "shape": [int(s) for s in image.shape[:3]],
        "spacing": [float(z) for z in image.header.get_zooms()[:3]],
        "orientation": "".join(nib.aff2axcodes(image.affine)),
        "organ_map": json.dumps({str(k): v for k, v in sorted(organ_map.items())}),
        "private": cfg.private,
        "endpoint_allowlist": list(cfg.endpoint_allowlist),
    }


def _uri(root: str, rel: str) -> str:
    uri = storage.join(root, *rel.split("/"))
    local = storage.local_path(uri)
    return local if local is not None else uri


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """Decathlon-layout folder at ``path`` -> (volumes table, rejects rows).

    Parameters
    ----------
    path : str
        The Decathlon-layout folder (``cfg.images_dir`` and ``cfg.labels_dir``, default ``imagesTr`` /
        ``labelsTr``).
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``nifti-labels`` defaults.
    on_item : callable, optional
        Called with no argument after each image (progress).

    Returns
    -------
    volumes : pyarrow.Table
        One row per readable image with a matching label map (the files referenced by URI, not copied).
    rejects : list of dict
        Rejects rows (table ``volumes``) for bad images and label maps, label maps no image claims, and
        ignored files.

    Raises
    ------
    MedScopeError
        When the config has no ``organ_map``, or the images folder holds no NIfTI file.
    """
    cfg = cfg or dataset_config("nifti-labels")
    if not cfg.organ_map:
        raise MedScopeError(f"{path}: the dataset config has no organ_map (label -> organ name)")
    images, ignored_images = scan_tree(storage.join(path, cfg.images_dir), NIFTI_EXTS)
    if not images:
        raise MedScopeError(f"{path}: no NIfTI images under {cfg.images_dir}/")
    label_files, ignored_labels = scan_tree(storage.join(path, cfg.labels_dir), NIFTI_EXTS)
    labels, used = set(label_files), set()
    rows, rejects = [], []
    for name in images:
        rel = posixpath.join(cfg.images_dir, name)
        lname = label_name(cfg, name)
        lrel = posixpath.join(cfg.labels_dir, lname)
        used.add(lname)
        try:
            for file_rel in (rel, lrel):
                if guarded.display_name(file_rel) != file_rel:  # the row keeps a URI that must round-trip
                    raise InputRejected("file name not UTF-8", f"{guarded.display_name(file_rel)} cannot be stored as a URI")
            image = read_nifti(read_file(path, rel, cfg.limits), "image", cfg.limits)
            check_finite(image)
            # only its header matters from here: its voxels go before the label map's arrive, so
            # one volume's bytes at a time are held, not two
            image = header_only(image)
            if lname not in labels:
                raise InputRejected("missing label map", f"no {lrel}")
            label = read_nifti(read_file(path, lrel, cfg.limits), "label map", cfg.limits)
            check_pair(image, label, cfg.limits)
            rows.append(volume_row(cfg, _uri(path, rel), _uri(path, lrel), rel, image, cfg.organ_map))
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, rel, err, table="volumes"))
        if on_item:
            on_item()
    rejects += leftovers(cfg, cfg.images_dir, ignored_images, table="volumes")
    rejects += leftovers(cfg, cfg.labels_dir, ignored_labels, sorted(labels - used), "label map without image", "volumes")
    return finish(rows, rejects, table="volumes")
