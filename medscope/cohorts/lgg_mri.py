"""TCGA-LGG, the "LGG MRI segmentation" release (Buda et al.; Kaggle ``lgg-mri-segmentation``).

Layout as downloaded::

    kaggle_3m/
      data.csv  README.md
      TCGA_CS_4941_19960909/
        TCGA_CS_4941_19960909_1.tif         256x256 RGB: pre-contrast, FLAIR, post-contrast
        TCGA_CS_4941_19960909_1_mask.tif    0/255 FLAIR abnormality mask
        ...

The Kaggle archive holds the tree twice (``kaggle_3m/`` and ``lgg-mri-segmentation/kaggle_3m/``):
a slice seen again under a deeper path, same name and same bytes, is a ``duplicate copy``
reject, the shallowest copy is read. Two different files that claim one slice (``_5.tif`` and a
zero-padded re-export ``_05.tif``) are ``conflicting slice files``: the slice is left out and
every claimant is a reject naming the others. Slices are numbered ``_1.._N`` (numeric order, not text order). Per patient the rule in
:mod:`medscope.cohorts.slices` picks lesion and lesion-free slices; the patient id
(``TCGA_CS_4941``) is also the group, so one patient never spans two splits.
Rejects per slice file: ``unreadable image``, ``missing mask``, ``mask size differs``,
``non-binary mask``, ``whole-image mask``, ``unexpected file name``, ``slice number out of range``
(over ``MAX_SLICE_NUMBER``: the number sizes arrays); per patient:
``no eligible slice`` (no slice with enough tissue).
"""

from __future__ import annotations

import posixpath
import re

import numpy as np
import pyarrow as pa

from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    InputRejected,
    as_reject,
    binarize_mask,
    case_row,
    dataset_config,
    decode_image,
    decode_mask_array,
    finish,
    lesion_area_frac,
    list_tree,
    read_file,
    file_reject_row,
)
from medscope.cohorts.slices import choose_slices, tissue_fraction
from medscope.errors import MedScopeError

# addition: slice numbers size per-patient arrays; LGG volumes have 20..88 slices
MAX_SLICE_NUMBER = 10_000
SLICE = re.compile(
    r"^(?P<folder>(?P<patient>TCGA_[A-Z0-9]{2}_[A-Z0-9]{4})_\d{8})_(?P<n>\d+)(?P<mask>_mask)?\.tiff?$", re.I
)


def _index(path: str) -> tuple[dict, dict, list]:
    """{(folder, n): image rel}, {(folder, n): mask rel}, rejects for odd names, copies and conflicts.

    Two files that claim one slice are told apart by name and bytes: the same name with the
    same bytes under another folder is the archive's second tree (``duplicate copy``, the
    shallowest is read); anything else (``_5.tif`` beside a zero-padded re-export ``_05.tif``,
    or the same name with other pixels) is a ``conflicting slice files`` reject of every file of
    that slice, image and mask, each naming the others: which one is right cannot be known.
    """
    claims: dict[tuple, list[str]] = {}
    rejects: list = []
    for rel in sorted(list_tree(path, (".tif", ".tiff")), key=lambda r: (r.count("/"), r)):
        name = posixpath.basename(rel)
        m = SLICE.match(name)
        if not m:
            rejects.append(("unexpected file name", rel, "not <TCGA patient>_<date>_<n>[_mask].tif"))
            continue
        if len(m.group("n")) > 5 or int(m.group("n")) > MAX_SLICE_NUMBER:  # it sizes arrays below
            rejects.append(("slice number out of range", rel, f"slice {m.group('n')[:30]} > {MAX_SLICE_NUMBER}"))
            continue
        claims.setdefault((m.group("folder"), int(m.group("n")), bool(m.group("mask"))), []).append(rel)
    kept: dict[tuple, list[str]] = {}
    conflicted: set[tuple] = set()
    for key, rels in claims.items():
        first, distinct = rels[0], [rels[0]]
        for other in rels[1:]:
            try:
                same = (posixpath.basename(other) == posixpath.basename(first)
                        and read_file(path, other) == read_file(path, first))
            except Exception as err:  # noqa: BLE001 - an unreadable copy is that file's reject
                err = as_reject(err)
                rejects.append((err.reason, other, err.detail))
                continue
            if same:
                rejects.append(("duplicate copy", other, f"same file as {first}"))
            else:
                distinct.append(other)
        kept[key] = distinct
        if len(distinct) > 1:
            conflicted.add(key[:2])
    images, masks = {}, {}
    for (folder, n, is_mask), rels in kept.items():
        if (folder, n) in conflicted:
            claimants = [r for mask in (False, True) for r in kept.get((folder, n, mask), [])]
            for rel in rels:
                others = ", ".join(r for r in claimants if r != rel)
                rejects.append(("conflicting slice files", rel,
                                f"slice {n} of {folder} is also claimed by {others}; none is picked"))
            continue
        (masks if is_mask else images)[(folder, n)] = rels[0]
    return images, masks, rejects


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """LGG MRI segmentation folder (or any folder above ``kaggle_3m``) -> (cases, rejects).

    Parameters
    ----------
    path : str
        The LGG MRI segmentation folder (``kaggle_3m``), or any folder above it.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``lgg-mri`` defaults.
    on_item : callable, optional
        Called with no argument after each slice file (progress).

    Returns
    -------
    cases : pyarrow.Table
        Cases chosen per patient by the slice rule (:mod:`medscope.cohorts.slices`), ``group_id`` the patient.
    rejects : list of dict
        Rejects rows per bad slice file, duplicate copy or odd file name, and per patient with no eligible
        slice.

    Raises
    ------
    MedScopeError
        When no ``TCGA_<site>_<id>_<date>_<n>.tif`` slice is found.
    """
    cfg = cfg or dataset_config("lgg-mri")
    images, masks, odd = _index(path)
    if not images:
        raise MedScopeError(f"{path}: no TCGA_<site>_<id>_<date>_<n>.tif slices found")
    rows, rejects = [], [file_reject_row(cfg, rel, InputRejected(reason, detail)) for reason, rel, detail in odd]
    by_folder: dict[str, list[int]] = {}
    for folder, n in images:
        by_folder.setdefault(folder, []).append(n)
    for folder in sorted(by_folder):
        slices = []  # (n, rel, image, mask)
        for n in sorted(by_folder[folder]):
            rel = images[(folder, n)]
            try:
                image = decode_image(read_file(path, rel))
                if (folder, n) not in masks:
                    raise InputRejected("missing mask", f"no {folder}_{n}_mask.tif")
                raw = decode_mask_array(read_file(path, masks[(folder, n)]))
                slices.append((n, rel, image, binarize_mask(raw, image.shape, cfg)))
            except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
                err = as_reject(err)
                rejects.append(file_reject_row(cfg, rel, err))
            if on_item:
                on_item()
        patient = SLICE.match(posixpath.basename(images[(folder, by_folder[folder][0])])).group("patient")
        rows_before = len(rows)
        rows.extend(_patient_cases(cfg, slices, patient))
        if len(rows) == rows_before and slices:
            where = posixpath.dirname(images[(folder, by_folder[folder][0])])
            rejects.append(file_reject_row(cfg, where, InputRejected("no eligible slice", f"tissue < {cfg.min_tissue_frac}")))
    return finish(rows, rejects)


def _patient_cases(cfg: DatasetConfig, slices: list, patient: str) -> list[dict]:
    """Cases of one patient's readable slices; arrays run over slice numbers, so a rejected
    slice in the middle is a gap (never eligible) and ``min_slice_gap`` counts real slices."""
    if not slices:
        return []
    size = max(n for n, _, _, _ in slices) + 1
    lesion, tissue = np.zeros(size), np.zeros(size)
    by_n = {}
    for n, rel, image, mask in slices:
        lesion[n], tissue[n] = lesion_area_frac(mask), tissue_fraction(image, cfg.tissue_threshold)
        by_n[n] = (rel, image, mask)
    pick_l, pick_f = choose_slices(
        lesion, tissue, n_lesion=cfg.lesion_slices_per_patient, n_free=cfg.free_slices_per_patient,
        gap=cfg.min_slice_gap, min_tissue=cfg.min_tissue_frac, min_lesion=cfg.min_lesion_area_frac,
    )
    out = []
    for n in pick_l + pick_f:
        rel, image, mask = by_n[n]
        row = case_row(cfg, rel, image, mask if n in pick_l else None, patient=patient)
        row["group_id"] = patient
        out.append(row)
    return out
