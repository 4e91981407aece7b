"""ChestX-Det (Deepwise; 3,578 NIH ChestX-ray14 images, 13 categories, boxes + polygons).

Layout as downloaded (``ChestX-Det-Dataset`` repository + its image archives)::

    ChestX_Det_train.json   ChestX_Det_test.json
    train/36199.png ...     test/...           1024x1024 8-bit gray PNG

Each JSON is a list of ``{"file_name", "syms": [category, ...], "boxes": [[x1, y1, x2, y2], ...],
"polygons": [[[x, y], ...], ...]}`` with one box and one polygon per sym. Polygons are
rasterised (cv2.fillPoly, the polygon's own pixels included) and merged per category: one case
per (image, kept category), ``source_file`` ``train/36199.png#Nodule``. An image with no sym
is lesion-free (the "no finding" images). Categories in ``exclude_categories`` (the diffuse
ones) make no case; an image whose every sym is excluded is an ``excluded category`` reject,
never a lesion-free case (it has a finding). Rejects: ``corrupt JSON`` (the whole file),
``missing image``, ``unreadable image``, ``unknown category``, ``polygon outside image``,
``bad polygon`` (fewer than 3 points, not numbers, or count differs from syms),
``whole-image mask``, ``excluded category``. With ``use_released_split`` the annotation file's
folder (``train`` / ``test``) becomes the cases' ``split``.
"""

from __future__ import annotations

import posixpath

import cv2
import numpy as np
import pyarrow as pa

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
    leftovers,
    read_file,
    scan_tree,
    file_reject_row,
)
from medscope.errors import MedScopeError



def rasterise(polygons: list, shape: tuple[int, int]) -> np.ndarray:
    """Polygons ``[[[x, y], ...], ...]`` (pixels) -> boolean (H, W) mask, edges included.

    Raises InputRejected for a polygon with a vertex outside the image or under 3 points.

    Parameters
    ----------
    polygons : list
        Polygons, each a list of ``[x, y]`` vertices in pixels (column, row).
    shape : tuple of int
        ``(H, W)`` of the image.

    Returns
    -------
    numpy.ndarray of bool
        (H, W) union of the filled polygons.

    Raises
    ------
    InputRejected
        ``bad polygon`` (not points, under 3 points, non-finite) or ``polygon outside image``.
    """
    h, w = shape
    mask = np.zeros((h, w), np.uint8)
    for poly in polygons:
        try:
            pts = np.asarray(poly, dtype=np.float64).reshape(-1, 2)
        except (TypeError, ValueError):
            raise InputRejected("bad polygon", f"not a list of [x, y] points: {str(poly)[:60]}") from None
        if len(pts) < 3 or not np.all(np.isfinite(pts)):
            raise InputRejected("bad polygon", f"{len(pts)} points")
        if pts[:, 0].min() < 0 or pts[:, 1].min() < 0 or pts[:, 0].max() > w - 1 or pts[:, 1].max() > h - 1:
            raise InputRejected("polygon outside image", f"x {pts[:, 0].min():g}..{pts[:, 0].max():g}, "
                         f"y {pts[:, 1].min():g}..{pts[:, 1].max():g}, image {w}x{h}")
        cv2.fillPoly(mask, [np.rint(pts).astype(np.int32)], 1)
    return mask.astype(bool)


def _records(path: str, name: str) -> list:
    try:
        data = safe_text.loads_json(bounded.read_bounded(storage.join(path, name), guarded.DEFAULT_LIMITS.max_file_bytes), name)
    except (ValueError, UnicodeDecodeError) as err:
        raise InputRejected("corrupt JSON", f"{name}: {err}") from None
    if not isinstance(data, list):
        raise InputRejected("corrupt JSON", f"{name}: expected a list of image records")
    return data


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """ChestX-Det folder at ``path`` -> (cases table, rejects rows).

    Parameters
    ----------
    path : str
        The ChestX-Det folder holding the annotation JSON files and their image folders
        (``cfg.annotation_files``).
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``chestx-det`` defaults.
    on_item : callable, optional
        Called with no argument after each annotation record (progress).

    Returns
    -------
    cases : pyarrow.Table
        One case per (image, kept category), and one lesion-free case per image without a finding; ``split``
        from the image folder when ``use_released_split``.
    rejects : list of dict
        Rejects rows for corrupt JSON files, bad records and images, and every image-folder file no record
        names.

    Raises
    ------
    MedScopeError
        When none of the configured annotation files exists.
    """
    cfg = cfg or dataset_config("chestx-det")
    files = {a: d for a, d in cfg.annotation_files.items() if storage.exists(storage.join(path, a))}
    if not files:
        raise MedScopeError(f"{path}: none of {', '.join(cfg.annotation_files)} found")
    known = {c.lower(): c for c in cfg.categories}
    excluded = {c.lower() for c in cfg.exclude_categories}
    rows, rejects = [], []
    listed: set[str] = set()
    scans = {folder: scan_tree(storage.join(path, folder)) for folder in sorted(set(files.values()))}
    # names as the JSON writes them -> as on disk, matched in NFC (a macOS export writes NFD)
    on_disk = {safe_text.nfc(posixpath.join(f, r)): posixpath.join(f, r) for f, (imgs, _) in scans.items() for r in imgs}
    for ann, folder in sorted(files.items()):
        try:
            records = _records(path, ann)
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, ann, err))
            continue
        first: dict[str, object] = {}
        for i, rec in enumerate(records):
            rel = posixpath.join(folder, str(rec.get("file_name", ""))) if isinstance(rec, dict) else f"{ann}[{i}]"
            rel = on_disk.get(safe_text.nfc(rel), rel)
            listed.add(safe_text.nfc(rel))
            try:
                if rel in first:  # a record listed twice is one case, never two
                    same = first[rel] == rec
                    raise InputRejected("duplicate record" if same else "conflicting records",
                                 f"{ann}[{i}] lists {rel} again" + ("" if same else " with other findings; the first is kept"))
                first[rel] = rec
                got = _image_cases(cfg, path, rel, rec, known, excluded)
                if cfg.use_released_split and folder in ("train", "test"):
                    got = [r | {"split": folder} for r in got]
                rows.extend(got)
            except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
                err = as_reject(err)
                rejects.append(file_reject_row(cfg, rel if err.reason not in ("duplicate record", "conflicting records")
                                          else f"{ann}[{i}]", err))
            if on_item:
                on_item()
    rejects += _unlisted(cfg, scans, listed)
    return finish(rows, rejects)


def _unlisted(cfg, scans: dict, listed: set[str]) -> list[dict]:
    """Rows for the files of the image folders no annotation record names (every file gets
    a row): an image is a ``not in the annotations`` reject (it has no labels to trust),
    anything else an ``ignored`` row."""
    out = []
    for folder, (images, ignored) in scans.items():
        unlisted = [r for r in images if safe_text.nfc(posixpath.join(folder, r)) not in listed]
        out += leftovers(cfg, folder, ignored, unlisted, "not in the annotations")
    for row in out:
        if row["reason"] == "not in the annotations":
            row["detail"] = "no record of the annotation JSON names this image, so it has no labels to trust"
    return out


def _image_cases(cfg, path, rel, rec, known, excluded) -> list[dict]:
    if not isinstance(rec, dict) or not rec.get("file_name"):
        raise InputRejected("corrupt JSON", "record without file_name")
    syms = rec.get("syms") or []
    polygons = rec.get("polygons") or []
    unknown = sorted({s for s in syms if str(s).lower() not in known})
    if unknown:
        raise InputRejected("unknown category", ", ".join(map(str, unknown)))
    if len(polygons) != len(syms):
        raise InputRejected("bad polygon", f"{len(syms)} syms but {len(polygons)} polygons")
    if not storage.exists(storage.join(path, *rel.split("/"))):
        raise InputRejected("missing image", f"{rel} listed in the annotations but not on disk")
    image = decode_image(read_file(path, rel))
    if image.ndim == 3:  # NIH films are gray; an RGB export of one is read as its gray
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    if not syms:
        return [case_row(cfg, rel, image, None, question=cfg.question.replace("{finding}", cfg.finding))]
    by_cat: dict[str, list] = {}
    for sym, poly in zip(syms, polygons):
        by_cat.setdefault(known[str(sym).lower()], []).append(poly)
    masks = {cat: rasterise(polys, image.shape[:2]) for cat, polys in by_cat.items()}  # every polygon checked
    out = []
    for cat, mask in sorted(masks.items()):
        if cat.lower() in excluded:
            continue
        if mask.mean() >= cfg.whole_mask_frac:
            raise InputRejected("whole-image mask", f"{cat} covers {mask.mean():.1%}")
        finding = cat.lower()
        # critical or not: the config's declared list (critical_findings, an addition: the paper lists none)
        out.append(case_row(cfg, f"{rel}#{cat}", image, mask, finding=finding,
                            question=cfg.question.replace("{finding}", finding)))
    if not out:
        raise InputRejected("excluded category", ", ".join(sorted(by_cat)))
    return out
