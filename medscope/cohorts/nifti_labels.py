"""BTCV / Medical-Decathlon volumes: ``imagesTr/*.nii.gz`` with ``labelsTr/*.nii.gz``.

The label file of an image has the same name, or the name the config's
``label_name_regex`` (pattern, replacement) makes of it (BTCV: ``img0001`` -> ``label0001``).
The organ-name map (integer label -> organ) comes from the dataset config (``organ_map``),
which may be a separate YAML file given with ``--config``.

The output is a ``volumes`` table: the NIfTI files stay where they are and are referenced
by URI (DESIGN.md). Rejects: ``corrupt NIfTI`` (image or label unreadable), ``missing label
map``, ``label shape differs``, ``label affine differs`` (the label map would sit on other
anatomy), ``non-integer label map`` (a soft / probability map is not a label map).
"""

from __future__ import annotations

import gzip
import json
import posixpath
import re
import zlib

import numpy as np
import pyarrow as pa

from medscope import storage
from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    Reject,
    case_id,
    dataset_config,
    finish,
    list_tree,
    patient_id,
    read_file,
    reject_row,
)
from medscope.errors import MedScopeError

NIFTI_EXTS = (".nii.gz", ".nii")
AFFINE_TOL_MM = 1e-3


def read_nifti(data: bytes, what: str = "image"):
    """NIfTI bytes (gzip or plain) -> nibabel image with its data loaded; Reject if corrupt."""
    import nibabel as nib

    try:
        raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        img = nib.Nifti1Image.from_bytes(raw) if raw[344:348] in (b"n+1\0", b"ni1\0") else nib.Nifti2Image.from_bytes(raw)
        np.asanyarray(img.dataobj)  # forces a full read: a short file fails here
        return img
    except (EOFError, OSError, zlib.error, ValueError, nib.filebasedimages.ImageFileError) as err:
        raise Reject("corrupt NIfTI", f"{what}: {type(err).__name__}: {err}") from None
    except Exception as err:  # nibabel raises assorted types on garbage headers
        raise Reject("corrupt NIfTI", f"{what}: {type(err).__name__}: {err}") from None


def label_name(cfg: DatasetConfig, image_name: str) -> str:
    if cfg.label_name_regex:
        pattern, repl = cfg.label_name_regex
        return re.sub(pattern, repl, image_name)
    return image_name


def check_pair(image, label) -> np.ndarray:
    """Validate a label map against its image; returns the integer label array."""
    if tuple(label.shape) != tuple(image.shape):
        raise Reject("label shape differs", f"label {tuple(label.shape)}, image {tuple(image.shape)}")
    if not np.allclose(label.affine, image.affine, atol=AFFINE_TOL_MM):
        raise Reject("label affine differs", f"label spacing {_zooms(label)}, image {_zooms(image)}")
    data = np.asanyarray(label.dataobj)
    if not np.issubdtype(data.dtype, np.integer):
        if not np.all(np.isfinite(data)) or not np.array_equal(data, np.rint(data)):
            raise Reject("non-integer label map", f"dtype {data.dtype} with fractional values")
        data = np.rint(data).astype(np.int32)
    if data.min() < 0:
        raise Reject("non-integer label map", f"negative label {int(data.min())}")
    return data


def _zooms(img) -> str:
    return "x".join(f"{float(z):g}" for z in img.header.get_zooms()[:3])


def volume_row(cfg: DatasetConfig, image_uri: str, label_uri: str, rel: str, image, organ_map: dict) -> dict:
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
    """Decathlon-layout folder at ``path`` -> (volumes table, rejects rows)."""
    cfg = cfg or dataset_config("nifti-labels")
    if not cfg.organ_map:
        raise MedScopeError(f"{path}: the dataset config has no organ_map (label -> organ name)")
    images = list_tree(storage.join(path, cfg.images_dir), NIFTI_EXTS)
    if not images:
        raise MedScopeError(f"{path}: no NIfTI images under {cfg.images_dir}/")
    labels = set(list_tree(storage.join(path, cfg.labels_dir), NIFTI_EXTS))
    rows, rejects = [], []
    for name in images:
        rel = posixpath.join(cfg.images_dir, name)
        lname = label_name(cfg, name)
        lrel = posixpath.join(cfg.labels_dir, lname)
        try:
            image = read_nifti(read_file(path, rel), "image")
            if lname not in labels:
                raise Reject("missing label map", f"no {lrel}")
            label = read_nifti(read_file(path, lrel), "label map")
            check_pair(image, label)
            rows.append(volume_row(cfg, _uri(path, rel), _uri(path, lrel), rel, image, cfg.organ_map))
        except Reject as err:
            rejects.append(reject_row(cfg, rel, err, table="volumes"))
        if on_item:
            on_item()
    return finish(rows, rejects, table="volumes")
