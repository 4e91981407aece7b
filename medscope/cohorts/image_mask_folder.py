"""The generic 2D layout of a new institution: ``images/`` with ``masks/`` beside it.

A mask is matched by file stem plus the config's ``mask_suffix`` (``a.png`` ->
``masks/a_mask.png`` with ``mask_suffix: _mask``), any image extension. An image without a
mask file is lesion-free only when the dataset config says ``missing_mask_means_lesion_free``;
otherwise it is a ``missing mask`` reject, because silently calling it healthy would plant
false negatives in every benchmark built on it. Subfolders of ``images/`` are kept in the
relative path and matched to the same subfolder of ``masks/``. A mask no image claims is a
``mask without image`` reject; other files are listed as ignored.
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
from medscope.io.safe_text import nfc
from medscope.errors import MedScopeError


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """``images/`` + ``masks/`` folder at ``path`` -> (cases table, rejects rows).

    Parameters
    ----------
    path : str
        The dataset folder: images under ``cfg.images_dir``, masks under ``cfg.masks_dir``, matched by
        relative folder and stem plus ``cfg.mask_suffix``.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``image-mask-folder`` defaults.
    on_item : callable, optional
        Called with no argument after each image (progress).

    Returns
    -------
    cases : pyarrow.Table
        One case per readable image (lesion-free without a mask when ``missing_mask_means_lesion_free``).
    rejects : list of dict
        Rejects rows for bad images and masks, masks no image claims, and ignored files.

    Raises
    ------
    MedScopeError
        When the images folder holds no image.
    """
    cfg = cfg or dataset_config("image-mask-folder")
    images, ignored_images = scan_tree(storage.join(path, cfg.images_dir))
    if not images:
        raise MedScopeError(f"{path}: no images under {cfg.images_dir}/")
    masks: dict[str, list[str]] = {}
    mask_files, ignored_masks = scan_tree(storage.join(path, cfg.masks_dir))
    for m in mask_files:
        masks.setdefault(posixpath.join(nfc(posixpath.dirname(m)), stem(m)), []).append(m)
    on_missing = "lesion-free" if cfg.missing_mask_means_lesion_free else "reject"
    rows, rejects, used = [], [], set()
    for name in images:
        rel = posixpath.join(cfg.images_dir, name)
        key = posixpath.join(nfc(posixpath.dirname(name)), stem(name) + cfg.mask_suffix)
        found = masks.get(key, [])
        used.update(found)
        try:
            if len(found) > 1:
                raise InputRejected("ambiguous mask", f"several mask files for {rel}: {', '.join(found)}")
            mask_rels = [posixpath.join(cfg.masks_dir, m) for m in found]
            rows.append(image_and_mask_case(cfg, path, rel, mask_rels, on_missing=on_missing))
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, rel, err))
        if on_item:
            on_item()
    rejects += leftovers(cfg, cfg.images_dir, ignored_images)
    rejects += leftovers(cfg, cfg.masks_dir, ignored_masks, [m for m in mask_files if m not in used])
    return finish(rows, rejects)
