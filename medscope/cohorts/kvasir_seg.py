"""Kvasir-SEG: ``images/<name>.jpg`` with ``masks/<name>.jpg`` of the same file name.

Every Kvasir-SEG image shows a polyp, so an image without its mask is a ``missing mask``
reject, and an empty mask is an ``empty mask`` reject. Masks are JPEG, hence carry
compression ringing; the default config thresholds them at > 127 (see ``common``).
Two mask files of one stem (``a.jpg`` and ``a.png``) are an ``ambiguous mask``; a mask no
image claims is a ``mask without image`` reject; other files are listed as ignored.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa

from medscope.io import storage
from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    InputRejected,
    as_reject,
    dataset_config,
    finish,
    image_and_mask_case,
    leftovers,
    file_reject_row,
    scan_tree,
    stem,
)
from medscope.errors import MedScopeError


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """Kvasir-SEG folder at ``path`` -> (cases table, rejects rows).

    Parameters
    ----------
    path : str
        The Kvasir-SEG folder (``images/`` and ``masks/``, names from the config).
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``kvasir-seg`` defaults.
    on_item : callable, optional
        Called with no argument after each image (progress).

    Returns
    -------
    cases : pyarrow.Table
        One case per readable image with exactly one valid mask.
    rejects : list of dict
        Rejects rows for bad images and masks, masks no image claims, and ignored files.

    Raises
    ------
    MedScopeError
        When the images folder holds no image.
    """
    cfg = cfg or dataset_config("kvasir-seg")
    image_root = storage.join(path, cfg.images_dir)
    images, ignored_images = scan_tree(image_root)
    if not images:
        raise MedScopeError(f"{path}: no images under {cfg.images_dir}/ (is this a Kvasir-SEG folder?)")
    mask_files, ignored_masks = scan_tree(storage.join(path, cfg.masks_dir))
    masks: dict[str, list[str]] = {}
    for m in mask_files:
        masks.setdefault(stem(m), []).append(m)
    rows, rejects, used = [], [], set()
    for name in images:
        rel = posixpath.join(cfg.images_dir, name)
        found = masks.get(stem(name), [])
        used.update(found)
        try:
            if len(found) > 1:
                raise InputRejected("ambiguous mask", f"several mask files for {rel}: {', '.join(found)}")
            rows.append(image_and_mask_case(cfg, path, rel, [posixpath.join(cfg.masks_dir, m) for m in found]))
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, rel, err))
        if on_item:
            on_item()
    rejects += leftovers(cfg, cfg.images_dir, ignored_images)
    rejects += leftovers(cfg, cfg.masks_dir, ignored_masks, [m for m in mask_files if m not in used])
    return finish(rows, rejects)
