"""What every cohort loader shares: the dataset config, file reading, mask checks, lesion
statistics and the cases-row builder (image and mask decoding: ``pixels.py``, re-exported).

A loader walks one dataset layout and returns ``(cases table, rejects rows)``. Anything
wrong with one file becomes a rejects row (``records.reject_row``) with a short countable
reason; the loader goes on, so every good case still arrives (docs/design.md, "Nothing lost,
nothing silent"). Files are listed and read only through ``safe_io`` (regular files, bounded
reads, header-checked pixel budgets, EXIF orientation; docs/cohorts-bad-input.md), and
:func:`guarded.leftovers` accounts for every file a loader did not turn into a case or reject.

Mask rules (one place, so every format behaves alike):

- a mask must have its image's size, else ``mask size differs``;
- a *binary* mask holds at most two values, 0 and one foreground value (0/1 and 0/255 both
  count). Anything else is *non-binary*: with ``non_binary_mask: threshold`` (the default
  for JPEG datasets such as Kvasir-SEG, whose masks carry compression ringing) it is
  thresholded at ``> mask_threshold`` and kept; with ``non_binary_mask: reject`` (the
  default for PNG datasets, where grey levels mean a label map or a soft mask slipped in)
  it becomes a ``non-binary mask`` reject;
- an empty mask is a ``empty mask`` reject unless the config says empty means lesion-free;
- a mask covering at least ``whole_mask_frac`` of the image is a ``whole-image mask`` reject
  (it localises nothing; usually an inverted or placeholder mask).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import pydantic

from medscope import config as cfgmod
from medscope import images
from medscope.io import bounded, guarded, records, safe_text, storage
from medscope.io.guarded import DEFAULT_LIMITS, Limits, InputRejected, as_reject, display_name, leftovers  # noqa: F401
from medscope.errors import MedScopeError
from medscope.seeding import stable_hash

FORMATS = ("kvasir-seg", "busi", "image-mask-folder", "siim-rle", "nifti-labels")
# The paper's own cohorts in their released layouts; slake-vqa, vqa-rad and pathvqa
# write question items (records "vqa_items"), the others cases.
RELEASE_FORMATS = ("slake", "chestx-det", "hyperkvasir", "lgg-mri", "brats", "qata-cov19")
VQA_FORMATS = ("slake-vqa", "vqa-rad", "pathvqa")
FORMATS = FORMATS + RELEASE_FORMATS + VQA_FORMATS
IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
CONFIG_DIR = Path(cfgmod.shipped("datasets"))

OnItem = Callable[[], None] | None


class DatasetConfig(cfgmod.StrictModel):
    """How one dataset's files become cases (``configs/datasets/<format>.yaml``)."""

    source: str
    imaging_type: str = "unknown"
    finding: str = "lesion"
    question: str = "Is there a lesion in this image?"
    question_kind: Literal["presence", "health", "open"] = "presence"
    critical: bool = False  # every case of the source is critical (SIIM-ACR: every case asks about pneumothorax)
    # addition: the counterfactual paper charges -4.0 for a missed critical finding (Table 2) but does not list
    # which findings are critical; each format's config declares its own (configs/datasets/*.yaml, with why),
    # and a user's config overrides it. A case is critical when its finding is one of these (or `critical`).
    critical_findings: list[str] = []
    # Applied with re.search to the image file name; group "patient", else group 1, else the match.
    patient_id_regex: str | None = None
    images_dir: str = "images"
    masks_dir: str = "masks"
    mask_suffix: str = ""  # mask stem = image stem + suffix (image-mask-folder)
    missing_mask_means_lesion_free: bool = False
    empty_mask_means_lesion_free: bool = False
    non_binary_mask: Literal["threshold", "reject"] = "reject"
    mask_threshold: int = pydantic.Field(127, ge=0, le=254)
    whole_mask_frac: float = pydantic.Field(0.95, gt=0.0, le=1.0)
    private: bool = False
    endpoint_allowlist: list[str] = []
    # siim-rle
    rle_csv: str = "train-rle.csv"
    # nifti-labels
    labels_dir: str = "labelsTr"
    label_name_regex: tuple[str, str] | None = None  # (pattern, replacement) image name -> label name
    organ_map: dict[int, str] = {}
    # per-file budgets checked before reading / decoding (guarded.Limits, docs/cohorts-bad-input.md)
    limits: Limits = Limits()
    # --- release loaders; each field is read by the one loader named
    # chestx-det: the 13 categories it may hold, those left out (diffuse), annotation file -> image folder
    categories: list[str] = []
    exclude_categories: list[str] = []
    annotation_files: dict[str, str] = {}
    # slake: detection.json object names that are lesions; slake / slake-vqa: kept languages, modalities
    lesion_objects: list[str] = []
    languages: list[str] = []
    modalities: list[str] = []
    # hyperkvasir: labelled-images class folders whose images are lesion-free
    lesion_free_classes: list[str] = []
    # lgg-mri / brats: 2D slices chosen by rule from each patient's stack
    lesion_slices_per_patient: int = pydantic.Field(3, ge=0)
    free_slices_per_patient: int = pydantic.Field(2, ge=0)
    min_slice_gap: int = pydantic.Field(3, ge=1)
    min_tissue_frac: float = pydantic.Field(0.25, ge=0.0, le=1.0)
    tissue_threshold: float = pydantic.Field(0.05, ge=0.0, lt=1.0)
    min_lesion_area_frac: float = pydantic.Field(0.002, ge=0.0, lt=1.0)
    label_values: list[int] = []  # brats: the label values its release uses (others -> reject)
    # slake-vqa / vqa-rad / pathvqa: which released question files to read, file -> split
    question_files: dict[str, str] = {}
    # chestx-det / qata-cov19: carry the release's own train / test split into ``split`` (then
    # group splits keep its test images, and their near-copies, out of training)
    use_released_split: bool = False

    @pydantic.field_validator("patient_id_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as err:
                raise ValueError(f"not a valid regular expression: {err}") from None
        return value

    @pydantic.field_validator("label_name_regex")
    @classmethod
    def _pattern_compiles(cls, value: tuple[str, str] | None) -> tuple[str, str] | None:
        if value is not None:
            try:
                re.compile(value[0])
            except re.error as err:
                raise ValueError(f"pattern {value[0]!r} is not a valid regular expression: {err}") from None
        return value

    @pydantic.field_validator("organ_map")
    @classmethod
    def _positive_labels(cls, value: dict[int, str]) -> dict[int, str]:
        bad = [k for k in value if k <= 0]
        if bad:
            raise ValueError(f"organ labels must be positive integers (0 is background), got {bad}")
        return value


def dataset_config(fmt: str, uri: str | None = None, overrides: dict | None = None) -> DatasetConfig:
    """The format's default config (``configs/datasets/<fmt>.yaml``), overlaid by a user file.

    Parameters
    ----------
    fmt : str
        Cohort format, one of ``FORMATS`` (``"kvasir-seg"``, ``"busi"``, ``"slake"`` ...).
    uri : str, optional
        A user YAML file whose keys replace the format's defaults; None keeps the defaults.
    overrides : dict, optional
        Field values applied last, over both the defaults and ``uri``.

    Returns
    -------
    DatasetConfig
        The validated config.

    Raises
    ------
    MedScopeError
        For an unknown format, or a merged config that does not validate.
    """
    if fmt not in FORMATS:
        raise MedScopeError(f"unknown cohort format {fmt!r}; choose from: {', '.join(FORMATS)}")
    data = dict(_default_config_dict(fmt))
    source = str(CONFIG_DIR / f"{fmt}.yaml")
    if uri:
        data.update(cfgmod.load_yaml(uri))
        source = uri
    if not overrides:
        return cfgmod.parse(DatasetConfig, data, source=source)
    try:
        return cfgmod.parse(DatasetConfig, {**data, **overrides}, source=source)
    except MedScopeError:
        # the error names the layer at fault: blamed on the packaged file, an inline value the user
        # typed sent them looking in a file they never wrote
        cfgmod.parse(DatasetConfig, data, source=source)
        return cfgmod.parse(DatasetConfig, {**data, **overrides}, source="the inline dataset overrides (--dataset)")


@lru_cache(maxsize=None)
def _default_config_dict(fmt: str) -> dict:
    path = CONFIG_DIR / f"{fmt}.yaml"
    return cfgmod.load_yaml(str(path)) if path.exists() else {"source": fmt}


# --------------------------------------------------------------------------- files


def list_tree(root: str, suffixes: tuple[str, ...] = IMAGE_EXTS) -> list[str]:
    """Paths relative to ``root`` of every file below it whose name ends with a suffix (sorted).

    Hidden files (``.DS_Store``, macOS ``._x`` forks found in Decathlon archives) are skipped;
    :func:`scan_tree` also says what was skipped and why.

    Parameters
    ----------
    root : str
        Dataset folder (local path or storage URI).
    suffixes : tuple of str, optional
        File-name endings to keep, lower case; default the image extensions (``IMAGE_EXTS``).

    Returns
    -------
    list of str
        Sorted ``/``-separated paths relative to ``root``.
    """
    return scan_tree(root, suffixes)[0]


def scan_tree(root: str, suffixes: tuple[str, ...] = IMAGE_EXTS) -> tuple[list[str], list[tuple[str, str]]]:
    """(files ending with a suffix, [(other file, why it is ignored)]): ``guarded.scan_tree``.

    Parameters
    ----------
    root : str
        Dataset folder (local path or storage URI).
    suffixes : tuple of str, optional
        File-name endings to keep, lower case; default the image extensions (``IMAGE_EXTS``).

    Returns
    -------
    files : list of str
        Paths relative to ``root`` of the files that end with a suffix.
    ignored : list of tuple of (str, str)
        ``(relative path, reason)`` for every other entry (hidden file, other extension ...).
    """
    return guarded.scan_tree(root, suffixes)


def stem(name: str) -> str:
    """File name without folder and (double) extension: ``a/b (1).png`` -> ``b (1)``.

    In Unicode NFC, so an image and its mask match whether a macOS export wrote the name
    decomposed (NFD) or not.

    Parameters
    ----------
    name : str
        File name or ``/``-separated relative path.

    Returns
    -------
    str
        The base name without its extension (``.nii.gz`` counts as one), NFC-normalised.
    """
    name = safe_text.nfc(posixpath.basename(name))
    for ext in (".nii.gz",):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return posixpath.splitext(name)[0]


def read_file(root: str, rel: str, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """Bytes of a regular file, bounded by ``limits.max_file_bytes`` (``bounded.read_bounded``).

    ``rel`` may come from a dataset's own JSON: one that leaves ``root`` (``../../x.png``,
    an absolute path) is a ``path leaves the input root`` reject, never a read.

    Parameters
    ----------
    root : str
        Dataset folder (local path or storage URI).
    rel : str
        ``/``-separated path below ``root``.
    limits : Limits, optional
        Per-file budgets; only ``max_file_bytes`` is used here.

    Returns
    -------
    bytes
        The whole file.

    Raises
    ------
    InputRejected
        ``path leaves the input root`` (absolute, climbing or symlinked out), a file that is not
        regular, or one over ``limits.max_file_bytes``.
    """
    try:
        rel = safe_text.inside_root(rel)
    except safe_text.BadText as err:
        raise InputRejected(err.reason, err.detail) from None
    guarded.require_inside(root, rel)
    return bounded.read_bounded(storage.join(root, *rel.split("/")), limits.max_file_bytes)


# --------------------------------------------------------------------------- pixels
# decoding lives in pixels.py (Pillow, budgets, 8-bit stretch); re-exported for the loaders
from medscope.cohorts.pixels import (  # noqa: E402,F401
    _collapse_gray,
    _palette_is_colour,
    _pil_to_array,
    decode_image,
    decode_mask_array,
    to_uint8,
)


_pil_error = guarded.pil_error


def binarize_mask(raw: np.ndarray, image_shape: tuple[int, int], cfg: DatasetConfig) -> np.ndarray:
    """Apply the module's mask rules to raw mask values; returns a boolean (H, W) mask.

    Raises InputRejected for a size mismatch, a non-binary mask under ``non_binary_mask: reject``,
    or a whole-image mask. An empty mask is returned as all-False; the caller decides.

    Parameters
    ----------
    raw : numpy.ndarray
        Decoded mask values, shape (H, W) (or (H, W, ...); only the first two axes are compared).
    image_shape : tuple of int
        Shape of the image the mask belongs to; its first two entries are (H, W).
    cfg : DatasetConfig
        Supplies ``non_binary_mask``, ``mask_threshold`` and ``whole_mask_frac``.

    Returns
    -------
    numpy.ndarray of bool
        The foreground mask, shape of ``raw``; may be all False.

    Raises
    ------
    InputRejected
        ``mask size differs``, ``non-binary mask`` or ``whole-image mask``.
    """
    if raw.shape[:2] != tuple(image_shape[:2]):
        h, w = raw.shape[:2]
        raise InputRejected("mask size differs", f"mask {w}x{h}, image {image_shape[1]}x{image_shape[0]}")
    values = np.unique(raw)
    if values.size > 2 or (values.size == 2 and values[0] != 0):
        if cfg.non_binary_mask == "reject":
            shown = ", ".join(str(int(v)) for v in values[:6]) + (", ..." if values.size > 6 else "")
            raise InputRejected("non-binary mask", f"{values.size} distinct values ({shown})")
        mask = raw > cfg.mask_threshold
    else:
        mask = raw > 0
    frac = float(mask.mean())
    if frac >= cfg.whole_mask_frac:
        raise InputRejected("whole-image mask", f"mask covers {frac:.1%} of the image")
    return mask


def lesion_area_frac(mask: np.ndarray | None) -> float:
    """Fraction of image pixels inside the lesion mask (0.0 for no mask).

    Parameters
    ----------
    mask : numpy.ndarray or None
        Boolean lesion mask (non-zero = lesion), or None for a lesion-free case.

    Returns
    -------
    float
        Lesion pixels / all pixels, in [0, 1].
    """
    if mask is None:
        return 0.0
    return float(np.count_nonzero(mask)) / float(mask.size)


def lesion_bbox(mask: np.ndarray | None) -> list[int] | None:
    """Tight box ``[x1, y1, x2, y2]`` in pixels around the mask, inclusive corners; None if empty.

    Parameters
    ----------
    mask : numpy.ndarray or None
        Boolean (H, W) lesion mask, or None.

    Returns
    -------
    list of int or None
        ``[x1, y1, x2, y2]`` (column, row of the top-left and bottom-right lesion pixels), or None
        when there is no mask or it is empty.
    """
    if mask is None or not mask.any():
        return None
    ys = np.flatnonzero(mask.any(axis=1))
    xs = np.flatnonzero(mask.any(axis=0))
    return [int(xs[0]), int(ys[0]), int(xs[-1]), int(ys[-1])]


# --------------------------------------------------------------------------- rows


def patient_id(cfg: DatasetConfig, file_name: str) -> str | None:
    """Patient id from the config's file-name rule, or None where the dataset has none.

    Parameters
    ----------
    cfg : DatasetConfig
        Supplies ``patient_id_regex``.
    file_name : str
        Image file name or path; the regex is searched in its base name.

    Returns
    -------
    str or None
        Group ``patient`` of the match, else group 1, else the whole match; None without a rule
        or without a match.
    """
    if not cfg.patient_id_regex:
        return None
    m = re.search(cfg.patient_id_regex, posixpath.basename(file_name))
    if not m:
        return None
    if "patient" in m.re.groupindex:
        return m.group("patient")
    return m.group(1) if m.re.groups else m.group(0)


def case_id(source: str, rel_path: str) -> str:
    """Stable id of a case: the same file of the same source always gets the same id.

    Parameters
    ----------
    source : str
        Source (dataset) name.
    rel_path : str
        The file's path relative to the dataset folder.

    Returns
    -------
    str
        ``stable_hash(source, rel_path)``.
    """
    return stable_hash(source, rel_path)


def is_critical(cfg: DatasetConfig, finding: str) -> bool:
    """Whether a case asking about ``finding`` is critical under the dataset's declaration: every
    case when ``critical``, else a finding among ``critical_findings`` (case-insensitive).

    Parameters
    ----------
    cfg : DatasetConfig
        The dataset config.
    finding : str
        The case's asked finding.

    Returns
    -------
    bool
        True when a wrong answer on its answerable views costs Table 2's critical penalty.

    References
    ----------
    .. [1] counterfactual paper, Table 2 ("-4.0 critical"; the paper does not list the findings).
    """
    return bool(cfg.critical) or finding.strip().lower() in {f.strip().lower() for f in cfg.critical_findings}


def case_row(
    cfg: DatasetConfig,
    rel_path: str,
    image: np.ndarray,
    mask: np.ndarray | None,
    *,
    patient: str | None = None,
    finding: str | None = None,
    question: str | None = None,
    critical: bool | None = None,
    source: str | None = None,
) -> dict:
    """One cases row. ``mask`` None (or empty) means a lesion-free case with a null mask.

    Parameters
    ----------
    cfg : DatasetConfig
        The dataset config; supplies the defaults of the keyword arguments, ``imaging_type``,
        ``question_kind``, ``private`` and ``endpoint_allowlist``.
    rel_path : str
        The image's path relative to the dataset folder (``source_file``; hashed into ``case_id``).
    image : numpy.ndarray
        The decoded image, (H, W) or (H, W, C), stored as PNG.
    mask : numpy.ndarray or None
        Boolean (H, W) lesion mask; None or all False makes a lesion-free case.
    patient : str, optional
        Patient id; None derives it from ``rel_path`` with :func:`patient_id`.
    finding : str, optional
        Overrides ``cfg.finding``.
    question : str, optional
        Overrides ``cfg.question``.
    critical : bool, optional
        Overrides the config's declaration (``is_critical``).
    source : str, optional
        Overrides ``cfg.source``.

    Returns
    -------
    dict
        One row of the ``cases`` table (``group_id`` and ``split`` left None).
    """
    if mask is not None and not mask.any():
        mask = None
    h, w = image.shape[:2]
    src = source or cfg.source
    rel_path = display_name(rel_path)
    return {
        "case_id": case_id(src, rel_path),
        "source": src,
        "imaging_type": cfg.imaging_type,
        "patient_id": patient if patient is not None else patient_id(cfg, rel_path),
        "group_id": None,
        "split": None,
        "image": images.encode_png(image),
        "mask": images.encode_png(mask) if mask is not None else None,
        "width": int(w),
        "height": int(h),
        "finding": finding or cfg.finding,
        "question": question or cfg.question,
        "question_kind": cfg.question_kind,
        "has_lesion": mask is not None,
        "critical": is_critical(cfg, finding or cfg.finding) if critical is None else bool(critical),
        "lesion_area_frac": lesion_area_frac(mask),
        "lesion_bbox": lesion_bbox(mask),
        "source_file": rel_path,
        "private": cfg.private,
        "endpoint_allowlist": list(cfg.endpoint_allowlist),
    }


def file_reject_row(cfg: DatasetConfig, rel_path: str, err: InputRejected, table: str = "cases") -> dict:
    """One ``load``-stage rejects row for a file the loader could not turn into an item.

    Parameters
    ----------
    cfg : DatasetConfig
        Supplies the source name.
    rel_path : str
        The file's path relative to the dataset folder (the row's ``item_id``).
    err : InputRejected
        The refusal; gives ``reason``, ``detail`` and the ``error_class``.
    table : str, optional
        The table the item would have joined (``"cases"``, ``"volumes"``, ``"vqa_items"``).

    Returns
    -------
    dict
        A rejects row (``records.reject_row``).
    """
    return records.reject_row(table, cfg.source, display_name(rel_path), "load", err.reason, display_name(err.detail),
                          bounded.error_class(err))


def finish(rows: list[dict], rejects: list[dict], table: str = "cases"):
    """Validated table (sorted by case id, so file-system order never shows) and rejects.

    Parameters
    ----------
    rows : list of dict
        The loader's rows, each with a ``case_id``.
    rejects : list of dict
        The loader's rejects rows.
    table : str, optional
        Records schema the rows are validated against.

    Returns
    -------
    table : pyarrow.Table
        The rows sorted by ``case_id``, with exactly the schema's columns.
    rejects : list of dict
        The rejects sorted by (``item_id``, ``reason``).
    """
    rows = sorted(rows, key=lambda r: r["case_id"])
    rejects = sorted(rejects, key=lambda r: (r["item_id"], r["reason"]))
    return records.to_table(table, rows), rejects


def image_and_mask_case(
    cfg: DatasetConfig,
    root: str,
    image_rel: str,
    mask_rels: list[str],
    *,
    lesion_expected: bool = True,
    on_missing: str = "reject",
) -> dict:
    """The common path of 2D folder formats: read the image and its mask file(s), merge, check.

    ``mask_rels`` empty means no mask file: ``on_missing`` ``"lesion-free"`` makes a
    lesion-free case, ``"reject"`` a ``missing mask`` reject. ``lesion_expected`` False (e.g.
    BUSI ``normal``) ignores masks entirely.

    Parameters
    ----------
    cfg : DatasetConfig
        The dataset config (limits, mask rules, row fields).
    root : str
        Dataset folder.
    image_rel : str
        The image's path relative to ``root``.
    mask_rels : list of str
        Mask files of the image, relative to ``root``; their foregrounds are OR-ed.
    lesion_expected : bool, optional
        False reads no masks and makes a lesion-free case.
    on_missing : {"reject", "lesion-free"}, optional
        What an empty ``mask_rels`` means.

    Returns
    -------
    dict
        One cases row (:func:`case_row`).

    Raises
    ------
    InputRejected
        For an unreadable image or mask, a failed mask rule, ``missing mask``, a ``whole-image mask``
        after merging, or an ``empty mask`` unless ``empty_mask_means_lesion_free``.
    """
    image = decode_image(read_file(root, image_rel, cfg.limits), cfg.limits)
    if not lesion_expected:
        return case_row(cfg, image_rel, image, None)
    if not mask_rels:
        if on_missing == "lesion-free":
            return case_row(cfg, image_rel, image, None)
        raise InputRejected("missing mask", f"no mask file for {image_rel}")
    merged = np.zeros(image.shape[:2], dtype=bool)
    for rel in mask_rels:
        raw = decode_mask_array(read_file(root, rel, cfg.limits), cfg.limits)
        merged |= binarize_mask(raw, image.shape, cfg)
    if lesion_area_frac(merged) >= cfg.whole_mask_frac:
        raise InputRejected("whole-image mask", f"merged masks cover {lesion_area_frac(merged):.1%} of the image")
    if not merged.any():
        if cfg.empty_mask_means_lesion_free:
            return case_row(cfg, image_rel, image, None)
        raise InputRejected("empty mask", f"{', '.join(mask_rels)} has no foreground pixel")
    return case_row(cfg, image_rel, image, merged)


def __getattr__(name: str):
    # 0.1's name, for a cohort loader or protocol written outside the package against it
    if name == "Reject":
        import warnings

        warnings.warn("medscope.cohorts.common.Reject is now InputRejected; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return InputRejected
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
