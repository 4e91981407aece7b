"""HyperKvasir labelled images: normal colonoscopy landmarks as lesion-free cases (counterfactual paper §4.1).

Layout as downloaded (``hyper-kvasir-labeled-images.zip``)::

    labeled-images/
      image-labels.csv
      lower-gi-tract/anatomical-landmarks/{cecum,ileum,retroflex-rectum}/<uuid>.jpg
      lower-gi-tract/pathological-findings/{polyps,ulcerative-colitis-grade-1,...}/<uuid>.jpg
      lower-gi-tract/quality-of-mucosal-views/... lower-gi-tract/therapeutic-interventions/...
      upper-gi-tract/...

Only images of the class folders in ``lesion_free_classes`` (the lower-GI landmarks) become
cases, all lesion-free, asked the Kvasir-SEG polyp question; every other class folder is left
unread (pathological findings carry no masks here). The class folder is matched on its name, so
an extracted archive with an extra top folder reads alike. Rejects: ``unreadable image``.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa

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
    scan_tree,
    read_file,
    file_reject_row,
)
from medscope.errors import MedScopeError


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """HyperKvasir ``labeled-images`` folder (or one above it) -> (cases, rejects).

    Parameters
    ----------
    path : str
        The ``labeled-images`` folder, or a folder above it.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``hyperkvasir`` defaults.
    on_item : callable, optional
        Called with no argument after each image (progress).

    Returns
    -------
    cases : pyarrow.Table
        One lesion-free case (null mask) per readable image in a ``lesion_free_classes`` folder.
    rejects : list of dict
        Rejects rows for unreadable images, and ``ignored`` rows for every other file.

    Raises
    ------
    MedScopeError
        When the config names no ``lesion_free_classes``, or no image lies in such a folder.
    """
    cfg = cfg or dataset_config("hyperkvasir")
    keep = {c.lower() for c in cfg.lesion_free_classes}
    if not keep:
        raise MedScopeError("the hyperkvasir config names no lesion_free_classes")
    listed, ignored = scan_tree(path)
    files = [r for r in listed if posixpath.basename(posixpath.dirname(r)).lower() in keep]
    # every other image gets an ignored row: a lesion class, or outside any class folder
    kept = set(files)
    ignored += [(r, "not a lesion-free class folder (lesion_free_classes)") for r in listed if r not in kept]
    if not files:
        raise MedScopeError(f"{path}: no images under class folders {', '.join(sorted(keep))}")
    rows, rejects = [], []
    for rel in files:
        try:
            rows.append(case_row(cfg, rel, decode_image(read_file(path, rel)), None))
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, rel, err))
        if on_item:
            on_item()
    return finish(rows, rejects + leftovers(cfg, "", sorted(ignored)))
