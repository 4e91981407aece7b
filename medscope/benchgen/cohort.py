"""Paired reports and volumes of a cohort, and one montage per sequence (benchmark-MCQ paper Methods).

Reports: CSV or JSONL with ``case_id``, ``findings``, ``impression`` and optionally ``study``
(free text as institutions export it) -- or, as many RIS exports give it, ``case_id`` and one
text field (``report`` / ``text`` / ``report_text`` / ``narrative``) that ``split_sections``
cuts at its headers (FINDINGS / IMPRESSION / CONCLUSION and their variants). Volumes: ``<root>/<case_id>/<sequence>.nii[.gz]`` or
``<root>/<case_id>/<sequence>/`` holding one DICOM series (read with pydicom). Bad input
(a report without a study, a study without a report, empty sections, a duplicate report, an
unreadable series) becomes a rejects row with its reason; everything good goes on.

Montage: 144 axial slices sampled uniformly, tiled 12 x 12, long side <= 1,536 px; CT with
the sequence's organ window, MRI scaled between intensity percentiles (1st-99th by default).
"""

from __future__ import annotations

import io
import re

import numpy as np

from medscope.errors import MedScopeError
from medscope.io import records, safe_text, storage
from medscope.benchgen.schema import SequenceSpec
from medscope.images import resize_long_side
from medscope.volumes.nifti import VolumeError, axial_slice, read_nifti
from medscope.volumes.render import apply_window, render_montage

NIFTI_SUFFIXES = (".nii.gz", ".nii")
REQUIRED = ("case_id", "findings", "impression")
TEXT_COLUMNS = ("report", "text", "report_text", "narrative")
# Section headers of one-field report exports (upper or mixed case, then ":" / "-" or a line end).
FINDINGS_HEADERS = ("findings", "finding", "report", "description", "observations", "body of report")
IMPRESSION_HEADERS = ("impressions", "impression", "conclusions", "conclusion", "summary", "opinion",
                      "assessment", "diagnosis", "interpretation", "impression and recommendations",
                      "conclusion and recommendations")
OTHER_HEADERS = ("clinical history", "history", "clinical information", "clinical indication", "indications",
                 "indication", "reason for exam", "technique", "procedure", "comparison", "comparisons",
                 "recommendations", "recommendation", "examination", "exam", "addendum", "signed by")
_HEADER = re.compile(
    r"(?:^|(?<=[.!?])[ \t]+|\n)[ \t]*(?:\d+[.)][ \t]*)?(?P<h>"
    + "|".join(sorted((re.escape(h).replace(r"\ ", r"\s+") for h in
                       FINDINGS_HEADERS + IMPRESSION_HEADERS + OTHER_HEADERS), key=len, reverse=True))
    + r")[ \t]*(?::|\s-\s|\s*\n|$)", re.IGNORECASE)


def split_sections(text: str) -> tuple[str, str, str | None]:
    """(findings, impression, reject reason or None) of a report exported as one text field.
    A section runs from its header to the next header; a repeated section is joined.

    Parameters
    ----------
    text : str
        The report's one text field (``report`` / ``text`` / ``report_text`` / ``narrative``).

    Returns
    -------
    findings : str
        The findings sections' text, joined by newlines; empty when there is none.
    impression : str
        The impression sections' text, joined by newlines; empty when there is none.
    reason : str or None
        ``no_sections_found``, ``no_findings_section`` or ``no_impression_section``; None when both
        sections were found.
    """
    found = list(_HEADER.finditer(text or ""))
    parts: dict[str, list[str]] = {"findings": [], "impression": []}
    for n, m in enumerate(found):
        head = re.sub(r"\s+", " ", m.group("h").lower())
        body = text[m.end(): found[n + 1].start() if n + 1 < len(found) else len(text)].strip()
        kind = "findings" if head in FINDINGS_HEADERS else "impression" if head in IMPRESSION_HEADERS else None
        if kind and body:
            parts[kind].append(body)
    findings, impression = ("\n".join(parts[k]).strip() for k in ("findings", "impression"))
    if not findings and not impression:
        return "", "", "no_sections_found"
    if not findings:
        return "", impression, "no_findings_section"
    if not impression:
        return findings, "", "no_impression_section"
    return findings, impression, None


def read_reports(uri: str) -> tuple[list[dict], list[dict]]:
    """(report rows, rejects rows) of a CSV or JSONL reports export.

    Parameters
    ----------
    uri : str
        Path or storage URI of the export: JSON lines when it ends in ``.jsonl`` / ``.ndjson``, CSV
        otherwise.

    Returns
    -------
    rows : list of dict
        One row per accepted report: ``case_id``, ``study`` (empty when absent), ``findings`` and
        ``impression``.
    rejects : list of dict
        One rejects row (stage ``load``) per line or row left out: ``not_json`` (the detail says why:
        truncated, nested too deeply), ``not_json_object``, ``no_case_id``,
        ``duplicate_report``, ``empty_findings``, ``empty_impression`` or a :func:`split_sections` reason.

    Raises
    ------
    medscope.io.safe_text.BadText
        One line naming the file: missing, binary, not valid UTF-16, not valid CSV (the line).
    """
    # decoded as people save exports: a BOM, UTF-16 from Excel, Latin-1; a binary file (a PNG
    # given by mistake) is one line naming the file, never a UnicodeDecodeError
    text = safe_text.read_text(uri)
    rejects: list[dict] = []
    if uri.endswith((".jsonl", ".ndjson")):
        raw = []
        for n, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                obj = safe_text.loads_json(line, f"{uri}:line {n}")
            except safe_text.BadText as err:  # truncated, nested too deeply, a duplicate key
                rejects.append(records.reject_row("reports", uri, f"line {n}", "load", "not_json",
                                                  f"{err.reason} ({err.detail})" if err.detail else err.reason))
                continue
            if not isinstance(obj, dict):
                rejects.append(records.reject_row("reports", uri, f"line {n}", "load", "not_json_object",
                                                  f"got {type(obj).__name__}"))
                continue
            raw.append(obj)
    else:
        raw = safe_text.loads_csv(text, uri)  # BOM-stripped header, fields of any length
    if not raw and not rejects:  # the build went on and failed on its own empty items table (issue 51)
        raise MedScopeError(f"{uri}: no reports in this file (it is empty, blank or a CSV header alone); "
                            "export the reports again")
    rows, seen = [], set()
    for n, r in enumerate(raw, 1):
        case = str(r.get("case_id") or "").strip()
        rid = case or f"row {n}"
        findings, impression = (str(r.get(k) or "").strip() for k in ("findings", "impression"))
        split = None
        one_field = next((str(r[c]) for c in TEXT_COLUMNS if str(r.get(c) or "").strip()), None)
        if not findings and not impression and one_field is not None:
            findings, impression, split = split_sections(one_field)
        reason = ("no_case_id" if not case else "duplicate_report" if case in seen else split
                  or ("empty_findings" if not findings else "empty_impression" if not impression else None))
        if reason:
            rejects.append(records.reject_row("reports", uri, rid, "load", reason))
            continue
        seen.add(case)
        rows.append({"case_id": case, "study": str(r.get("study") or "").strip(), "findings": findings,
                     "impression": impression})
    return rows, rejects


def _entries(uri: str) -> list[tuple[str, bool]]:
    """(name, is folder) of what lies directly under ``uri``."""
    fs, path = storage.filesystem(uri)
    if not fs.exists(path):
        return []
    out = []
    for info in fs.ls(path, detail=True):
        base = info["name"].rstrip("/").rsplit("/", 1)[-1]
        if not base.startswith("."):
            out.append((base, info.get("type") == "directory"))
    return sorted(out)


def index_volumes(root: str) -> dict[str, dict[str, str]]:
    """``{case_id: {sequence: uri}}``: NIfTI files and DICOM series folders under ``root/<case>/``.

    Parameters
    ----------
    root : str
        Path or storage URI of the volumes folder (``<root>/<case_id>/<sequence>.nii[.gz]`` or
        ``<root>/<case_id>/<sequence>/``).

    Returns
    -------
    dict of str to dict of str to str
        ``{case_id: {sequence: uri}}``; a case folder without any sequence is left out, hidden entries
        are skipped.
    """
    out: dict[str, dict[str, str]] = {}
    for case, is_dir in _entries(root):
        if not is_dir:
            continue
        seqs = {}
        for name, sub_dir in _entries(storage.join(root, case)):
            uri = storage.join(root, case, name)
            if sub_dir:
                seqs[name] = uri
            else:
                for suf in NIFTI_SUFFIXES:
                    if name.endswith(suf):
                        seqs[name[: -len(suf)]] = uri
        if seqs:
            out[case] = seqs
    return out


def pair_studies(reports: list[dict], volumes: dict[str, dict[str, str]], schema_sequences: set[str],
                 source: str) -> tuple[list[dict], list[dict]]:
    """Studies (report + the schema's sequences the case has) and rejects for the unpaired.

    Parameters
    ----------
    reports : list of dict
        Report rows (:func:`read_reports`).
    volumes : dict of str to dict of str to str
        ``{case_id: {sequence: uri}}`` (:func:`index_volumes`).
    schema_sequences : set of str
        The sequences the schema names; others are ignored.
    source : str
        The source name the rejects rows carry.

    Returns
    -------
    studies : list of dict
        One per case with a report and at least one schema sequence: the report row plus
        ``sequences`` (``{sequence: uri}``), in case order.
    rejects : list of dict
        Rejects rows (stage ``pair``): ``report_without_study`` / ``no_schema_sequence`` (table
        ``reports``) and ``study_without_report`` (table ``volumes``).
    """
    studies, rejects = [], []
    by_case = {r["case_id"]: r for r in reports}
    for case, r in sorted(by_case.items()):
        seqs = {s: u for s, u in volumes.get(case, {}).items() if s in schema_sequences}
        if not seqs:
            why = "report_without_study" if case not in volumes else "no_schema_sequence"
            rejects.append(records.reject_row("reports", source, case, "pair", why,
                                          f"sequences found: {sorted(volumes.get(case, {}))}"))
            continue
        studies.append({**r, "sequences": seqs})
    for case in sorted(set(volumes) - set(by_case)):
        rejects.append(records.reject_row("volumes", source, case, "pair", "study_without_report"))
    return studies, rejects


def read_dicom_series(uri: str) -> np.ndarray:
    """One axial DICOM series -> (X, Y, Z) array in RAS voxel order, rescaled (HU for CT).

    Parameters
    ----------
    uri : str
        Path or storage URI of the folder holding the series' files.

    Returns
    -------
    numpy.ndarray
        float32 (X, Y, Z) array in RAS voxel order, slices sorted by position, with each file's
        rescale slope and intercept applied.

    Raises
    ------
    VolumeError
        ``unreadable_dicom``, ``non_axial_series``, ``too_few_slices`` (fewer than two) or
        ``mixed_slice_shapes``.
    """
    import pydicom

    files = storage.list_files(uri)
    slices = []
    for f in files:
        try:
            ds = pydicom.dcmread(io.BytesIO(storage.read_bytes(f)))
            px = ds.pixel_array.astype(np.float32)
        except Exception as err:  # noqa: BLE001 - pydicom raises many types on bad files
            raise VolumeError("unreadable_dicom", f"{f}: {type(err).__name__}: {err}") from None
        cos = [float(v) for v in getattr(ds, "ImageOrientationPatient", [1, 0, 0, 0, 1, 0])]
        if not np.allclose(cos, [1, 0, 0, 0, 1, 0], atol=1e-3):
            raise VolumeError("non_axial_series", f"{f}: orientation {cos}")
        z = float(ds.ImagePositionPatient[2]) if "ImagePositionPatient" in ds else float(ds.InstanceNumber)
        hu = px * float(getattr(ds, "RescaleSlope", 1)) + float(getattr(ds, "RescaleIntercept", 0))
        slices.append((z, hu))
    if len(slices) < 2:
        raise VolumeError("too_few_slices", f"{uri}: {len(slices)} DICOM slice(s)")
    if len({s[1].shape for s in slices}) != 1:
        raise VolumeError("mixed_slice_shapes", uri)
    slices.sort(key=lambda s: s[0])
    # pixel rows run anterior->posterior and columns right->left (LPS); RAS reverses both
    return np.stack([s[1].T[::-1, ::-1] for s in slices], axis=2)


def read_sequence(uri: str) -> np.ndarray:
    """A sequence's canonical (X, Y, Z) array from a NIfTI file or a DICOM series folder.

    Parameters
    ----------
    uri : str
        Path or storage URI of a NIfTI file or of a DICOM series folder.

    Returns
    -------
    numpy.ndarray
        float32 (X, Y, Z) array in canonical (RAS) orientation.

    Raises
    ------
    VolumeError
        When the file or the series cannot be read (:func:`read_dicom_series`, ``read_nifti``).
    """
    if storage.is_dir(uri):
        return read_dicom_series(uri)
    import nibabel as nib

    img = nib.as_closest_canonical(read_nifti(uri))
    return np.asarray(img.get_fdata(dtype=np.float32))


def percentile_window(volume: np.ndarray, percentiles: tuple[float, float] = (1.0, 99.0)) -> tuple[float, float]:
    """(width, level) spanning the given intensity percentiles of the non-zero voxels (MRI scaling).

    Parameters
    ----------
    volume : numpy.ndarray
        The volume's intensities; all voxels are used when none is above zero.
    percentiles : tuple of (float, float), optional
        Lower and upper percentiles, in percent.

    Returns
    -------
    width : float
        Upper minus lower percentile value (at least 1e-6).
    level : float
        The midpoint of the two percentile values.
    """
    v = volume[volume > 0] if np.any(volume > 0) else volume.ravel()
    lo, hi = np.percentile(v, percentiles)
    return max(float(hi - lo), 1e-6), float(hi + lo) / 2.0


def sequence_montage(volume: np.ndarray, spec: SequenceSpec, grid: int = 12, max_side: int = 1536) -> np.ndarray:
    """The benchmark-MCQ paper's composite of one sequence: CT with its window, MRI with percentile scaling;
    a mammographic view (MG, a projection) is its one image, percentile-scaled, never tiled.

    Parameters
    ----------
    volume : numpy.ndarray
        Canonical (X, Y, Z) volume (HU for CT).
    spec : SequenceSpec
        How the sequence is rendered: ``modality``, ``window`` (CT; ``soft_tissue`` when unset) and
        ``percentiles`` (MR, US, MG).
    grid : int, optional
        Grid side: ``grid**2`` uniformly sampled axial slices.
    max_side : int, optional
        Longest side of the montage, in pixels.

    Returns
    -------
    numpy.ndarray
        (H, W, 3) uint8 montage.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.

    Raises
    ------
    VolumeError
        ``projection_with_slices``: an MG view stored with more than one slice (a tomosynthesis
        stack is not a mammographic view; rendering one slice of it would show a view nobody read).
    """
    if spec.modality == "MG":
        if volume.ndim == 3 and volume.shape[2] != 1:
            raise VolumeError("projection_with_slices",
                              f"an MG (mammography) view is one image; this one has {volume.shape[2]} slices")
        view = volume if volume.ndim == 3 else volume[:, :, None]
        width, level = percentile_window(view, spec.percentiles)
        canvas = resize_long_side(apply_window(axial_slice(view, 0), width, level), max_side)
        return np.repeat(canvas[:, :, None], 3, axis=2)
    if spec.modality == "CT":
        window = spec.window or "soft_tissue"
        window = tuple(window) if isinstance(window, (list, tuple)) else window
    else:
        window = percentile_window(volume, spec.percentiles)
    return render_montage(volume, window=window, grid=grid, max_side=max_side)
