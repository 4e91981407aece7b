"""BUSI (breast ultrasound): class folders ``benign/``, ``malignant/``, ``normal/``.

Each folder holds ``benign (1).png`` with ``benign (1)_mask.png`` and sometimes further
masks ``benign (1)_mask_1.png``, ``_mask_2``..., one per lesion: they are merged into one
mask. Images of ``normal/`` are lesion-free cases (mask null) whatever mask files lie
beside them (BUSI ships empty ones). In ``benign/`` and ``malignant/`` an image without a
mask, or whose masks are all empty, is rejected. Class folders are matched whatever their
case (``Malignant/``); a mask whose image is missing is a ``mask without image`` reject, and
every other file (outside the class folders, not an image) is listed as ignored.
"""

from __future__ import annotations

import posixpath
import re

import pyarrow as pa

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

CLASSES = {"benign": True, "malignant": True, "normal": False}  # folder -> has lesion
_MASK = re.compile(r"^(?P<image>.+)_mask(?:_\d+)?$")


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """BUSI folder at ``path`` (holding the class folders) -> (cases table, rejects rows).

    Parameters
    ----------
    path : str
        The BUSI folder holding ``benign/``, ``malignant/`` and ``normal/``.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``busi`` defaults.
    on_item : callable, optional
        Called with no argument after each image (progress).

    Returns
    -------
    cases : pyarrow.Table
        One case per readable image.
    rejects : list of dict
        Rejects rows: bad images and masks, masks without an image, and ignored files.

    Raises
    ------
    MedScopeError
        When none of the class folders is found.
    """
    cfg = cfg or dataset_config("busi")
    files, ignored = scan_tree(path)
    ignored = [(rel, why if _in_class_folder(rel) else "outside the BUSI class folders") for rel, why in ignored]
    folders: dict[str, list[str]] = {}  # folder as found on disk -> files below it
    for rel in files:
        top, _, rest = rel.partition("/")
        if _in_class_folder(rel):
            folders.setdefault(top, []).append(rest)
        else:
            ignored.append((rel, "outside the BUSI class folders"))
    if not folders:
        raise MedScopeError(f"{path}: none of the BUSI class folders {', '.join(CLASSES)} found")
    rows, rejects = [], []
    for folder in sorted(folders):
        lesion_expected = CLASSES[folder.lower()]
        images, masks = [], {}
        for name in folders[folder]:
            m = _MASK.match(stem(name))
            if m:
                key = posixpath.join(posixpath.dirname(name), m.group("image"))
                masks.setdefault(key, []).append(posixpath.join(folder, name))
            else:
                images.append(name)
        claimed = set()
        for name in images:
            rel = posixpath.join(folder, name)
            key = posixpath.join(posixpath.dirname(name), stem(name))
            claimed.add(key)
            try:
                rows.append(
                    image_and_mask_case(cfg, path, rel, sorted(masks.get(key, [])), lesion_expected=lesion_expected)
                )
            except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
                err = as_reject(err)
                rejects.append(file_reject_row(cfg, rel, err))
            if on_item:
                on_item()
        orphans = sorted(m for key, ms in masks.items() if key not in claimed for m in ms)
        rejects += leftovers(cfg, "", [], orphans)
    rejects += leftovers(cfg, "", ignored)
    return finish(rows, rejects)


def _in_class_folder(rel: str) -> bool:
    top, _, rest = rel.partition("/")
    return bool(rest) and top.lower() in CLASSES
