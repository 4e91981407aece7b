"""SLAKE (Liu et al. 2021) segmentation cases: ``imgs/xmlab<N>/`` with ``source.jpg``,
``mask.png`` and ``detection.json`` (counterfactual paper §4.1: SLAKE CT/MRI).

``detection.json`` lists the image's objects as ``[{"<name>": [x, y, w, h]}, ...]`` (organs and
lesions alike); ``mask.png`` holds every object as its own gray value or colour
(:func:`label_image`). A lesion object is one
whose name is in ``lesion_objects`` (case-insensitive). Its mask is read from ``mask.png`` by
geometry, never by a guessed colour table: the mask values whose pixels have a bounding box
matching the lesion's box (IoU >= 0.5) are that lesion. One case per (image, lesion name),
``source_file`` ``imgs/xmlab12/source.jpg#Brain Tumor``; an image with objects but no lesion
object is one lesion-free case. Modality comes from the split files (``train.json``...) or
the image's own ``question.json``; images outside ``modalities`` are ``excluded modality``
rejects (counted, not silent). Rejects: ``corrupt JSON``, ``missing mask``, ``unreadable
image`` / ``unreadable mask``, ``mask size differs``, ``box outside image``, ``lesion not in
mask`` (no mask region fits the box), ``not a label mask`` (over 64 distinct values),
``whole-image mask``, ``excluded modality``.
"""

from __future__ import annotations

import io
import posixpath

import numpy as np
import pyarrow as pa
from PIL import Image

from medscope.io import bounded, guarded, safe_text, storage
from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    InputRejected,
    as_reject,
    case_row,
    dataset_config,
    decode_image,
    finish,
    read_file,
    file_reject_row,
)
from medscope.cohorts.slake_vqa import IMAGES_DIR, split_records
from medscope.errors import MedScopeError

BOX_IOU = 0.5
MAX_LABELS = 64  # a SLAKE image holds at most a few dozen objects
IMAGING_TYPE = {"ct": "ct", "mri": "mri", "x-ray": "chest x-ray"}


def box_iou(a: list[float], b: list[float]) -> float:
    """IoU of two inclusive pixel boxes [x1, y1, x2, y2].

    Parameters
    ----------
    a, b : list of float
        Boxes ``[x1, y1, x2, y2]`` in pixels, corners inclusive.

    Returns
    -------
    float
        Intersection over union, in [0, 1].
    """
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]) + 1)
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]) + 1)
    inter = ix * iy
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def box_readings(box: list[float], width: int, height: int) -> list[list[float]]:
    """Inclusive [x1, y1, x2, y2] readings of a detection box that fit the image: first as
    [x, y, w, h] (SLAKE's convention), then as [x1, y1, x2, y2] in case a copy was re-exported
    in corner form; the mask geometry decides which reading holds (:func:`lesion_mask`).

    Parameters
    ----------
    box : list of float
        The four numbers of a ``detection.json`` box.
    width, height : int
        Image size in pixels.

    Returns
    -------
    list of list of float
        Zero, one or two inclusive ``[x1, y1, x2, y2]`` boxes: the ``[x, y, w, h]`` reading first,
        then the corner reading, each only if it fits the image.
    """
    x, y, a, b = (float(v) for v in box)
    out = []
    if x >= 0 and y >= 0 and a > 0 and b > 0 and x + a <= width and y + b <= height:
        out.append([x, y, x + a - 1, y + b - 1])
    if x >= 0 and y >= 0 and x < a <= width - 1 and y < b <= height - 1:
        out.append([x, y, a, b])
    return out


def lesion_mask(raw: np.ndarray, box: list[float]) -> np.ndarray:
    """The pixels of ``raw`` (label map) whose value's bounding box matches the inclusive
    ``[x1, y1, x2, y2]`` box with IoU >= 0.5.

    Parameters
    ----------
    raw : numpy.ndarray of int
        (H, W) label map, one value per object, 0 background (:func:`label_image`).
    box : list of float
        Inclusive ``[x1, y1, x2, y2]`` box of the lesion.

    Returns
    -------
    numpy.ndarray of bool
        (H, W) union of the objects whose bounding box has IoU >= ``BOX_IOU`` with ``box``; all
        False when none does.
    """
    out = np.zeros(raw.shape, bool)
    for v in np.unique(raw):
        if v == 0:
            continue
        ys, xs = np.nonzero(raw == v)
        if box_iou([xs.min(), ys.min(), xs.max(), ys.max()], box) >= BOX_IOU:
            out |= raw == v
    return out


def label_image(data: bytes) -> np.ndarray:
    """mask.png bytes -> int32 (H, W) with one integer per object: gray / palette values as they
    are, colour masks by distinct colour (never by max channel, which would merge a red and a
    green object of equal brightness).

    Parameters
    ----------
    data : bytes
        The ``mask.png`` file.

    Returns
    -------
    numpy.ndarray of int32
        (H, W) object labels: ``R << 16 | G << 8 | B`` for colour masks, the palette index or gray
        value otherwise.

    Raises
    ------
    InputRejected
        ``unreadable mask`` when Pillow cannot decode the file.
    """
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            if img.mode in ("RGB", "RGBA", "CMYK", "YCbCr"):
                rgb = np.asarray(img.convert("RGB")).astype(np.int32)
                return (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
            if img.mode == "P":
                return np.asarray(img).astype(np.int32)
            return np.asarray(img.convert("I")).astype(np.int32)
    except Exception as err:  # Pillow raises many types for broken files
        raise InputRejected("unreadable mask", f"{type(err).__name__}: {err}") from None


def _modalities(path: str, cfg: DatasetConfig) -> dict[str, str]:
    files, _ = split_records(path, cfg)  # broken split files are reported by slake-vqa, not here
    found = {}
    for _, _, data in files:
        for q in data:
            if isinstance(q, dict) and q.get("img_name") and q.get("modality"):
                found.setdefault(posixpath.dirname(str(q["img_name"])), str(q["modality"]))
    return found


def _objects(path: str, rel: str) -> list[tuple[str, list]]:
    try:
        data = safe_text.loads_json(read_file(path, rel), rel)
        out = [(str(k), v) for obj in data for k, v in obj.items()]
        for name, box in out:
            if len(box) != 4 or not all(isinstance(c, (int, float)) for c in box):
                raise ValueError(f"box of {name} is not [x, y, w, h]")
        return out
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as err:
        raise InputRejected("corrupt JSON", f"{rel}: {err}") from None


def _modality_of(path: str, folder: str, known: dict[str, str]) -> str | None:
    if folder in known:
        return known[folder]
    uri = storage.join(path, IMAGES_DIR, folder, "question.json")
    if storage.exists(uri):
        try:
            for q in safe_text.loads_json(bounded.read_bounded(uri, guarded.DEFAULT_LIMITS.max_file_bytes), uri):
                if q.get("modality"):
                    return str(q["modality"])
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError, bounded.InputRejected):
            return None
    return None


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """SLAKE folder (holding ``imgs/``) -> (cases table, rejects rows).

    Parameters
    ----------
    path : str
        The SLAKE folder holding ``imgs/`` (and the split files).
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``slake`` defaults.
    on_item : callable, optional
        Called with no argument after each image folder (progress).

    Returns
    -------
    cases : pyarrow.Table
        One case per (image, lesion name), or one lesion-free case for an image without a lesion object;
        ``imaging_type`` from the modality.
    rejects : list of dict
        One rejects row per image folder that gave no case, ``excluded modality`` included.

    Raises
    ------
    MedScopeError
        When ``path`` has no ``imgs/`` folder.
    """
    cfg = cfg or dataset_config("slake")
    base = storage.join(path, IMAGES_DIR)
    if not storage.is_dir(base):
        raise MedScopeError(f"{path}: no {IMAGES_DIR}/ folder")
    fs, root = storage.filesystem(base)
    folders = sorted(posixpath.basename(p.rstrip("/")) for p in fs.ls(root, detail=False) if fs.isdir(p))
    folders = [f for f in folders if f.startswith("xmlab")]
    known, keep = _modalities(path, cfg), {m.lower() for m in cfg.modalities}
    lesions = {n.lower() for n in cfg.lesion_objects}
    rows, rejects = [], []
    for folder in folders:
        rel = posixpath.join(IMAGES_DIR, folder, "source.jpg")
        try:
            modality = _modality_of(path, folder, known)
            if keep and (modality or "").lower() not in keep:
                raise InputRejected("excluded modality", f"modality {modality!r}")
            rows.extend(_image_cases(cfg, path, folder, rel, modality, lesions))
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, rel, err))
        if on_item:
            on_item()
    return finish(rows, rejects)


def _image_cases(cfg, path, folder, rel, modality, lesions) -> list[dict]:
    objects = _objects(path, posixpath.join(IMAGES_DIR, folder, "detection.json"))
    image = decode_image(read_file(path, rel))
    h, w = image.shape[:2]
    imaging = IMAGING_TYPE.get((modality or "").lower(), cfg.imaging_type)
    found = [(n, b) for n, b in objects if n.lower() in lesions]
    if not found:
        question = cfg.question.replace("{finding}", cfg.finding)
        return [case_row(cfg, rel, image, None, question=question) | {"imaging_type": imaging}]
    mask_rel = posixpath.join(IMAGES_DIR, folder, "mask.png")
    if not storage.exists(storage.join(path, *mask_rel.split("/"))):
        raise InputRejected("missing mask", f"no {mask_rel}")
    raw = label_image(read_file(path, mask_rel))
    n_labels = len(np.unique(raw))
    if n_labels > MAX_LABELS:  # smoothed or photographic, not one value per object
        raise InputRejected("not a label mask", f"{n_labels} distinct values")
    if raw.shape[:2] != (h, w):
        raise InputRejected("mask size differs", f"mask {raw.shape[1]}x{raw.shape[0]}, image {w}x{h}")
    by_name: dict[str, np.ndarray] = {}
    for name, box in found:
        readings = box_readings(box, w, h)
        if not readings:
            raise InputRejected("box outside image", f"{name} {box} on {w}x{h}")
        m = np.zeros((h, w), bool)
        for reading in readings:
            m = lesion_mask(raw, reading)
            if m.any():
                break
        if not m.any():
            raise InputRejected("lesion not in mask", f"no mask region fits the {name} box")
        by_name[name] = by_name.get(name, np.zeros((h, w), bool)) | m
    out = []
    for name, m in sorted(by_name.items()):
        if m.mean() >= cfg.whole_mask_frac:
            raise InputRejected("whole-image mask", f"{name} covers {m.mean():.1%}")
        finding = name.lower()
        row = case_row(cfg, f"{rel}#{name}", image, m, finding=finding,
                       question=cfg.question.replace("{finding}", finding))
        out.append(row | {"imaging_type": imaging})
    return out
