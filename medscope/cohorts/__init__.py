"""Cohort loaders: a real dataset's on-disk layout -> a cases (or volumes) table + rejects.

``load(fmt, path, cfg)`` dispatches to one module per format; ``phantom.generate`` writes
the seeded stand-in cohort. See ``common`` for the dataset config and the bad-input rules.
"""

from __future__ import annotations

import importlib

from medscope.cohorts.common import FORMATS, VQA_FORMATS, DatasetConfig, OnItem, dataset_config
from medscope.errors import MedScopeError

_MODULES = {
    "kvasir-seg": "medscope.cohorts.kvasir_seg",
    "busi": "medscope.cohorts.busi",
    "image-mask-folder": "medscope.cohorts.image_mask_folder",
    "siim-rle": "medscope.cohorts.siim_rle",
    "nifti-labels": "medscope.cohorts.nifti_labels",
    "slake": "medscope.cohorts.slake",
    "chestx-det": "medscope.cohorts.chestx_det",
    "hyperkvasir": "medscope.cohorts.hyperkvasir",
    "lgg-mri": "medscope.cohorts.lgg_mri",
    "brats": "medscope.cohorts.brats",
    "qata-cov19": "medscope.cohorts.qata_cov19",
    "slake-vqa": "medscope.cohorts.slake_vqa",
    "vqa-rad": "medscope.cohorts.vqa_rad",
    "pathvqa": "medscope.cohorts.pathvqa",
}

TABLE_OF = {fmt: ("volumes" if fmt == "nifti-labels" else "cases") for fmt in FORMATS}
TABLE_OF.update({fmt: "vqa_items" for fmt in VQA_FORMATS})


def load(fmt: str, path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None):
    """(table, rejects rows) for dataset ``path`` in format ``fmt``; table is cases or volumes.

    Parameters
    ----------
    fmt : str
        Cohort format, one of ``FORMATS``.
    path : str
        The dataset folder, laid out as the format's release.
    cfg : DatasetConfig, optional
        Dataset config; None takes the format's shipped defaults.
    on_item : callable, optional
        Called with no argument after each item the loader reads (progress).

    Returns
    -------
    table : pyarrow.Table
        The ``cases``, ``volumes`` or ``vqa_items`` table (``TABLE_OF[fmt]``).
    rejects : list of dict
        Rejects rows.

    Raises
    ------
    MedScopeError
        For an unknown format, or a dataset the format's loader cannot read at all.
    """
    if fmt not in _MODULES:
        raise MedScopeError(f"unknown cohort format {fmt!r}; choose from: {', '.join(FORMATS)}")
    module = importlib.import_module(_MODULES[fmt])
    return module.load(path, cfg or dataset_config(fmt), on_item=on_item)


__all__ = ["FORMATS", "TABLE_OF", "DatasetConfig", "dataset_config", "load"]
