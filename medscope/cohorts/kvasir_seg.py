"""Kvasir-SEG: ``images/<name>.jpg`` with ``masks/<name>.jpg`` of the same file name.

Every Kvasir-SEG image shows a polyp, so an image without its mask is a ``missing mask``
reject, and an empty mask is an ``empty mask`` reject. Masks are JPEG, hence carry
compression ringing; the default config thresholds them at > 127 (see ``common``).
"""

from __future__ import annotations

import posixpath

import pyarrow as pa

from medscope import storage
from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    Reject,
    dataset_config,
    finish,
    image_and_mask_case,
    list_tree,
    reject_row,
    stem,
)
from medscope.errors import MedScopeError


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """Kvasir-SEG folder at ``path`` -> (cases table, rejects rows)."""
    cfg = cfg or dataset_config("kvasir-seg")
    image_root = storage.join(path, cfg.images_dir)
    images = list_tree(image_root)
    if not images:
        raise MedScopeError(f"{path}: no images under {cfg.images_dir}/ (is this a Kvasir-SEG folder?)")
    masks = {stem(m): m for m in list_tree(storage.join(path, cfg.masks_dir))}
    rows, rejects = [], []
    for name in images:
        rel = posixpath.join(cfg.images_dir, name)
        mask = masks.get(stem(name))
        mask_rels = [posixpath.join(cfg.masks_dir, mask)] if mask else []
        try:
            rows.append(image_and_mask_case(cfg, path, rel, mask_rels))
        except Reject as err:
            rejects.append(reject_row(cfg, rel, err))
        if on_item:
            on_item()
    return finish(rows, rejects)
