"""BraTS (2020 / 2021 glioma, 2023 meningioma and BraTS-Africa) as 2D axial cases.

Layouts as downloaded (one folder per case, four modalities + segmentation, NIfTI)::

    MICCAI_BraTS2020_TrainingData/BraTS20_Training_001/BraTS20_Training_001_{flair,t1,t1ce,t2,seg}.nii.gz
    BraTS2021_Training_Data/BraTS2021_00000/BraTS2021_00000_{flair,t1,t1ce,t2,seg}.nii.gz
    BraTS2023-MEN-Train/BraTS-MEN-00000-000/BraTS-MEN-00000-000-{t1c,t1n,t2f,t2w,seg}.nii.gz

Labels: 2020/2021 use 0, 1 (necrotic core), 2 (oedema), 4 (enhancing); the 2023 challenges use
0, 1, 2, 3. The naming tells which (``_flair`` / ``-t2f``); ``label_values`` in the config
overrides it. The lesion is the whole tumour (every non-zero label) on the FLAIR image.
BraTS 2020 ships case 355 with its segmentation named ``W39_1998.09.19_Segm.nii``: a single
``*Segm.nii*`` file in a case folder without ``*_seg`` is read as the segmentation.

Each volume is reoriented to RAS+ (:mod:`medscope.volumes.nifti`), axial slices are taken in
radiological display, intensities scaled to 8 bits per volume (0.5-99.5th percentile of the
brain), and the slice rule of :mod:`medscope.cohorts.slices` picks the cases. The case folder
minus the 2023 time-point suffix is the patient and group. ``source_file`` is
``<flair file>#z=<k>``. Rejects: ``missing segmentation`` (validation folders ship none),
``missing FLAIR``, ``corrupt NIfTI``, ``segmentation shape differs`` / ``affine differs``,
``non-integer label map``, ``label out of range`` (beyond int32: checked before the cast),
``non-finite voxels`` (NaN / inf in the FLAIR), ``unexpected label value``, ``no eligible slice``.
"""

from __future__ import annotations

import posixpath
import re

import numpy as np
import pyarrow as pa

from medscope.io import guarded, storage
from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    InputRejected,
    as_reject,
    case_row,
    dataset_config,
    finish,
    list_tree,
    file_reject_row,
)
from medscope.cohorts.slices import choose_slices, tissue_fraction
from medscope.errors import MedScopeError
from medscope.volumes import nifti

NIFTI_EXTS = (".nii.gz", ".nii")
FLAIR = re.compile(r"[_-](flair|t2f)\.nii(\.gz)?$", re.I)
SEG = re.compile(r"[_-]seg\.nii(\.gz)?$", re.I)
SEG_QUIRK = re.compile(r"segm\.nii(\.gz)?$", re.I)
LABELS_2020 = (0, 1, 2, 4)
LABELS_2023 = (0, 1, 2, 3)
_REASONS = {
    "corrupt_nifti": "corrupt NIfTI",
    "not_3d": "corrupt NIfTI",
    "shape_mismatch": "segmentation shape differs",
    "affine_mismatch": "segmentation affine differs",
    "non_integer_labels": "non-integer label map",
    "label_out_of_range": "label out of range",
}


def patient_of(case_folder: str) -> str:
    """``BraTS-MEN-00012-001`` -> ``BraTS-MEN-00012`` (2023 names end in a time point).

    Parameters
    ----------
    case_folder : str
        A BraTS case folder path (a trailing ``/`` is ignored).

    Returns
    -------
    str
        The folder's base name, less a 2023 ``-NNN`` time-point suffix.
    """
    name = posixpath.basename(case_folder.rstrip("/"))
    m = re.match(r"^(BraTS-[A-Z]+-\d+)-\d{3}$", name)
    return m.group(1) if m else name


def scale_volume(image: np.ndarray) -> np.ndarray:
    """Float MRI volume -> uint8, 0 staying 0 and the 99.5th percentile of the brain (non-zero
    voxels) becoming 255: one scale per volume, so slices of one patient stay comparable and a
    few hot voxels do not wash the image out. MRI intensities are arbitrary positive units, so no
    lower cut is taken (it would black out the most common tissue value).

    Parameters
    ----------
    image : numpy.ndarray
        Float MRI volume, any shape; voxels <= 0 are background.

    Returns
    -------
    numpy.ndarray of uint8
        Same shape: ``image / p99.5(brain)`` clipped to [0, 1] and scaled to 0..255; all zeros
        for a volume without a positive voxel.
    """
    brain = image[image > 0]
    if brain.size == 0:
        return np.zeros(image.shape, np.uint8)
    hi = float(np.percentile(brain, 99.5))
    out = np.clip(image / hi, 0.0, 1.0) * 255.0
    return np.rint(out).astype(np.uint8)


def _case_files(path: str) -> dict[str, list[str]]:
    folders: dict[str, list[str]] = {}
    for rel in list_tree(path, NIFTI_EXTS):
        folders.setdefault(posixpath.dirname(rel), []).append(rel)
    return folders


def _pick(files: list[str], pattern: re.Pattern) -> str | None:
    hits = [f for f in files if pattern.search(posixpath.basename(f))]
    return hits[0] if len(hits) == 1 else None


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """BraTS training folder at ``path`` -> (cases table, rejects rows).

    Parameters
    ----------
    path : str
        The training folder holding one folder per case.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``brats`` defaults.
    on_item : callable, optional
        Called with no argument after each case folder (progress).

    Returns
    -------
    cases : pyarrow.Table
        Up to ``lesion_slices_per_patient + free_slices_per_patient`` 2D cases per case folder,
        ``group_id`` the patient.
    rejects : list of dict
        One rejects row per case folder that gave no case.

    Raises
    ------
    MedScopeError
        When ``path`` holds no NIfTI file.
    """
    cfg = cfg or dataset_config("brats")
    folders = _case_files(path)
    if not folders:
        raise MedScopeError(f"{path}: no NIfTI files found")
    rows, rejects = [], []
    for folder in sorted(folders):
        files = folders[folder]
        flair = _pick(files, FLAIR)
        seg = _pick(files, SEG) or _pick(files, SEG_QUIRK)
        item = flair or folder
        try:
            if flair is None:
                raise InputRejected("missing FLAIR", f"no single *_flair / *-t2f file in {folder}")
            if seg is None:
                raise InputRejected("missing segmentation", f"no *_seg file in {folder}")
            allowed = tuple(cfg.label_values) or (LABELS_2023 if "-t2f" in flair.lower() else LABELS_2020)
            got = _case_rows(cfg, path, folder, flair, seg, allowed)
            if not got:
                raise InputRejected("no eligible slice", f"no slice with tissue >= {cfg.min_tissue_frac}")
            rows.extend(got)
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, item, err))
        if on_item:
            on_item()
    return finish(rows, rejects)


def _read(path: str, rel: str):
    guarded.require_inside(path, rel)
    try:
        return nifti.read_nifti(storage.join(path, *rel.split("/")))
    except nifti.VolumeError as err:
        raise InputRejected(_REASONS.get(err.reason, err.reason), err.detail) from None
    except (MedScopeError, OSError) as err:
        raise InputRejected("unreadable file", str(err)) from None


def _case_rows(cfg: DatasetConfig, path: str, folder: str, flair: str, seg: str, allowed: tuple) -> list[dict]:
    try:
        image, labels = nifti.canonical_pair(_read(path, flair), _read(path, seg))
        lab = nifti.integer_labels(np.asanyarray(labels.dataobj))
    except nifti.VolumeError as err:
        raise InputRejected(_REASONS.get(err.reason, err.reason), err.detail) from None
    bad = sorted(nifti.label_values(lab) - set(allowed))
    if bad:
        raise InputRejected("unexpected label value", f"{bad}; this release uses {list(allowed)}")
    raw = np.asarray(image.get_fdata(dtype=np.float32))
    if not np.isfinite(raw).all():  # NaN would make the percentile NaN and the volume garbage
        raise InputRejected("non-finite voxels", f"{int((~np.isfinite(raw)).sum())} NaN or infinite voxels in {flair}")
    vol = scale_volume(raw)
    del raw
    tumour = lab > 0
    n = vol.shape[2]
    lesion = np.array([float(tumour[:, :, k].mean()) for k in range(n)])
    tissue = np.array([tissue_fraction(vol[:, :, k], cfg.tissue_threshold) for k in range(n)])
    pick_l, pick_f = choose_slices(
        lesion, tissue, n_lesion=cfg.lesion_slices_per_patient, n_free=cfg.free_slices_per_patient,
        gap=cfg.min_slice_gap, min_tissue=cfg.min_tissue_frac, min_lesion=cfg.min_lesion_area_frac,
    )
    patient = patient_of(folder)
    out = []
    for k in pick_l + pick_f:
        img2d = nifti.axial_slice(vol, k)
        mask = nifti.axial_slice(tumour, k) if k in pick_l else None
        if mask is not None and float(mask.mean()) >= cfg.whole_mask_frac:
            continue  # cannot happen for real tumours; a whole-slice label is no localisation
        row = case_row(cfg, f"{flair}#z={k}", img2d, mask, patient=patient)
        row["group_id"] = patient
        out.append(row)
    return out
