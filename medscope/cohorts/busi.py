"""BUSI (breast ultrasound): class folders ``benign/``, ``malignant/``, ``normal/``.

Each folder holds ``benign (1).png`` with ``benign (1)_mask.png`` and sometimes further
masks ``benign (1)_mask_1.png``, ``_mask_2``..., one per lesion: they are merged into one
mask. Images of ``normal/`` are lesion-free cases (mask null) whatever mask files lie
beside them (BUSI ships empty ones). In ``benign/`` and ``malignant/`` an image without a
mask, or whose masks are all empty, is rejected.
"""

from __future__ import annotations

import posixpath
import re

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

CLASSES = {"benign": True, "malignant": True, "normal": False}  # folder -> has lesion
_MASK = re.compile(r"^(?P<image>.+)_mask(?:_\d+)?$")


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """BUSI folder at ``path`` (holding the class folders) -> (cases table, rejects rows)."""
    cfg = cfg or dataset_config("busi")
    present = [c for c in CLASSES if storage.is_dir(storage.join(path, c))]
    if not present:
        raise MedScopeError(f"{path}: none of the BUSI class folders {', '.join(CLASSES)} found")
    rows, rejects = [], []
    for cls in present:
        images, masks = [], {}
        for name in list_tree(storage.join(path, cls)):
            m = _MASK.match(stem(name))
            if m:
                key = posixpath.join(posixpath.dirname(name), m.group("image"))
                masks.setdefault(key, []).append(posixpath.join(cls, name))
            else:
                images.append(name)
        for name in images:
            rel = posixpath.join(cls, name)
            key = posixpath.join(posixpath.dirname(name), stem(name))
            try:
                rows.append(
                    image_and_mask_case(cfg, path, rel, sorted(masks.get(key, [])), lesion_expected=CLASSES[cls])
                )
            except Reject as err:
                rejects.append(reject_row(cfg, rel, err))
            if on_item:
                on_item()
    return finish(rows, rejects)
