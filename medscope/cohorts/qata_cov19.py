"""QaTa-COV19 (Tampere / Qatar University; v2): COVID-19 chest X-rays with infection masks.

Layout as downloaded (``QaTa-COV19-v2``)::

    QaTa-COV19-v2/
      Train Set/Images/covid_1.png          Train Set/Ground-truths/mask_covid_1.png
      Test Set/Images/sub-S09393_ses-E16849_run-1_bp-chest_vp-ap_cr.png
      Test Set/Ground-truths/mask_sub-S09393_ses-E16849_run-1_bp-chest_vp-ap_cr.png

The mask of ``Images/X`` is ``Ground-truths/mask_X`` (any image extension). The counterfactual paper uses it in
§8 as the diffuse-finding stress test, so its opacities are cases although diffuse. Every image
is expected to hold a finding: ``missing mask``, ``empty mask`` (unless the config says empty
means lesion-free), ``mask size differs``, ``non-binary mask``, ``whole-image mask``,
``unreadable image`` / ``unreadable mask`` are rejects. With ``use_released_split`` the
``Train Set`` / ``Test Set`` folder becomes the cases' ``split``.
"""

from __future__ import annotations

import posixpath

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
    scan_tree,
    file_reject_row,
    stem,
)
from medscope.errors import MedScopeError


def released_split(rel: str) -> str | None:
    """``train`` / ``test`` from the release's ``Train Set`` / ``Test Set`` folder, else None.

    Parameters
    ----------
    rel : str
        An image's ``/``-separated path relative to the dataset folder.

    Returns
    -------
    str or None
        ``"test"`` under a ``Test Set`` folder, ``"train"`` under a ``Train Set`` folder (any letter case),
        else None.
    """
    parts = [p.lower() for p in rel.split("/")]
    return "test" if "test set" in parts else ("train" if "train set" in parts else None)


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """QaTa-COV19 folder (holding ``Train Set`` / ``Test Set``, or an ``Images`` folder) -> (cases, rejects).

    Parameters
    ----------
    path : str
        The QaTa-COV19 folder, holding ``Train Set`` / ``Test Set`` or an images folder directly.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``qata-cov19`` defaults.
    on_item : callable, optional
        Called with no argument after each image (progress).

    Returns
    -------
    cases : pyarrow.Table
        One case per readable image with a valid mask; ``split`` from its folder when ``use_released_split``.
    rejects : list of dict
        Rejects rows for bad images and masks, masks no image claims, and ignored files.

    Raises
    ------
    MedScopeError
        When no image lies in a ``cfg.images_dir`` folder.
    """
    cfg = cfg or dataset_config("qata-cov19")
    files, ignored = scan_tree(path)
    image_rels = [r for r in files if posixpath.basename(posixpath.dirname(r)) == cfg.images_dir]
    if not image_rels:
        raise MedScopeError(f"{path}: no images under a {cfg.images_dir}/ folder")
    masks = {}
    for r in files:
        parent = posixpath.dirname(r)
        if posixpath.basename(parent) == cfg.masks_dir and stem(r).startswith("mask_"):
            masks[(posixpath.dirname(parent), stem(r)[len("mask_"):])] = r
        elif posixpath.basename(parent) == cfg.masks_dir:  # every file gets a row
            ignored.append((r, f"in {cfg.masks_dir}/ but not named mask_<image>"))
        elif posixpath.basename(parent) != cfg.images_dir:
            ignored.append((r, f"outside the {cfg.images_dir}/ and {cfg.masks_dir}/ folders"))
    used: set[str] = set()
    rows, rejects = [], []
    for rel in image_rels:
        key = (posixpath.dirname(posixpath.dirname(rel)), stem(rel))
        if key in masks:
            used.add(masks[key])
        try:
            row = image_and_mask_case(cfg, path, rel, [masks[key]] if key in masks else [])
            if cfg.use_released_split:
                row["split"] = released_split(rel)
            rows.append(row)
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, rel, err))
        if on_item:
            on_item()
    rejects += leftovers(cfg, "", sorted(ignored), sorted(set(masks.values()) - used))
    return finish(rows, rejects)
