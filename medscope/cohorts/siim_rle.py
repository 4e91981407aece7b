"""SIIM-ACR pneumothorax: chest radiographs (DICOM or PNG) plus a CSV of run-length masks.

Layout: image files anywhere below ``images_dir`` (Kaggle nests them as
``dicom-images-train/<study>/<series>/<ImageId>.dcm``), matched by file stem to the
``ImageId`` column of ``rle_csv`` (``ImageId, EncodedPixels``; the Kaggle header carries a
space, so names and values are stripped). ``-1`` means no pneumothorax. One image may have
several rows (one per region): they are merged. A DICOM ``PatientID`` becomes the case's
patient id; otherwise the config's file-name rule applies.

Rejects: unreadable image, ``malformed RLE`` (odd count, not integers, negative, running
past the image), ``missing mask`` (an image with no CSV row), ``missing RLE`` (a row with an
ImageId but no EncodedPixels: never read as "no pneumothorax"), ``missing image`` (a CSV row
whose ImageId has no file), ``duplicate ImageId`` (two files, e.g. in two study folders, share
one ImageId: the row cannot say which file it was drawn on), and the common mask rules.

The CSV is parsed line by line (``guarded.csv_rows``): a row that is not UTF-8 or has a
broken quote is one ``CSV row not UTF-8`` / ``malformed CSV row`` reject. When the ImageId of
such a row can still be read, its image is rejected with that reason (its mask would be
missing a region); otherwise the line itself is the reject (``train-rle.csv:line N``).
DICOM files are read through :func:`read_dicom`, which bounds a deflated transfer syntax's
inflation and checks Rows x Columns x frames before decoding pixels.
"""

from __future__ import annotations

import io
import posixpath
from collections import Counter

import numpy as np
import pyarrow as pa

from medscope.io import bounded, guarded, records, storage
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
    lesion_area_frac,
    read_file,
    file_reject_row,
    scan_tree,
    stem,
    to_uint8,
)
from medscope.io.guarded import DEFAULT_LIMITS, Limits
from medscope.errors import MedScopeError

NO_FINDING = "-1"


def rle_decode(rle: str, height: int, width: int) -> np.ndarray:
    """Decode one SIIM-ACR run-length string to a boolean (height, width) mask.

    The SIIM-ACR convention (Kaggle ``mask_functions.rle2mask``): pixels are numbered down
    the columns (column-major, 0-based) and each pair is (gap since the end of the previous
    run, run length) -- *relative* starts, unlike the absolute 1-based starts of most other
    Kaggle RLE. Written here because no maintained library speaks this variant. ``-1`` or an
    empty string is an empty mask. Raises InputRejected("malformed RLE") on anything else broken.

    Parameters
    ----------
    rle : str
        Space-separated (gap, length) pairs, ``-1`` or empty for no finding.
    height, width : int
        Image size in pixels.

    Returns
    -------
    numpy.ndarray of bool
        (height, width) mask.

    Raises
    ------
    InputRejected
        ``malformed RLE``: not integers, an odd count, a negative gap or non-positive length, or a
        run past the last pixel.
    """
    text = (rle or "").strip()
    if text in ("", NO_FINDING):
        return np.zeros((height, width), dtype=bool)
    try:
        values = [int(v) for v in text.split()]
    except ValueError:
        raise InputRejected("malformed RLE", f"not integers: {text[:40]!r}") from None
    if len(values) % 2:
        raise InputRejected("malformed RLE", f"odd number of values ({len(values)})")
    flat = np.zeros(height * width, dtype=bool)
    pos = 0
    for gap, length in zip(values[0::2], values[1::2]):
        if gap < 0 or length <= 0:
            raise InputRejected("malformed RLE", f"negative gap or non-positive length ({gap} {length})")
        pos += gap
        if pos + length > flat.size:
            raise InputRejected("malformed RLE", f"run ends at pixel {pos + length}, image has {flat.size}")
        flat[pos : pos + length] = True
        pos += length
    return flat.reshape(width, height).T


def rle_encode(mask: np.ndarray) -> str:
    """Inverse of :func:`rle_decode` (``-1`` for an empty mask).

    Parameters
    ----------
    mask : array_like of bool
        (height, width) mask.

    Returns
    -------
    str
        Space-separated (gap, length) pairs in column-major order, or ``-1`` when empty.
    """
    flat = np.asarray(mask, dtype=bool).T.reshape(-1)
    padded = np.concatenate([[False], flat, [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    starts, ends = edges[0::2], edges[1::2]
    if starts.size == 0:
        return NO_FINDING
    prev_ends = np.concatenate([[0], ends[:-1]])
    pairs = np.stack([starts - prev_ends, ends - starts], axis=1).reshape(-1)
    return " ".join(str(int(v)) for v in pairs)


def read_rle_csv(data: bytes, name: str = "RLE CSV") -> tuple[dict[str, list[str]], list[tuple[int, str, bounded.InputRejected]]]:
    """CSV bytes -> ({ImageId: [EncodedPixels, ...]} in file order, bad rows).

    Each bad row is ``(line number, ImageId as far as readable or "", InputRejected)``. An unusable
    header is a one-line MedScopeError: then no row can be read.

    Parameters
    ----------
    data : bytes
        The whole CSV file with an ``ImageId`` and an ``EncodedPixels`` column.
    name : str, optional
        What the errors call the file (its path, where the caller has one).

    Returns
    -------
    rles : dict of str to list of str
        ImageId -> its EncodedPixels strings, in file order (empty string for a missing value).
    bad : list of tuple of (int, str, InputRejected)
        ``(line number, ImageId or "", reason)`` per row that could not be read.

    Raises
    ------
    MedScopeError
        When the file is empty or its header is unreadable or lacks a needed column.
    """
    rows = guarded.csv_rows(data)
    first = next(rows, None)
    if first is None or isinstance(first[1], bounded.InputRejected):
        why = "empty file" if first is None else f"{first[1].reason}: {first[1].detail}"
        raise MedScopeError(f"{name} is not readable: header line: {why}")
    header = first[1]
    try:
        id_col, rle_col = header.index("ImageId"), header.index("EncodedPixels")
    except ValueError:
        raise MedScopeError(f"{name} needs columns ImageId, EncodedPixels; has {header}") from None
    out: dict[str, list[str]] = {}
    bad: list[tuple[int, str, bounded.InputRejected]] = []
    for no, fields, raw in rows:
        if isinstance(fields, bounded.InputRejected):
            guess = raw.split(b",")[id_col].strip().strip(b'"') if raw.count(b",") >= id_col else b""
            image_id = guess.decode("utf-8", "backslashreplace") if b'"' not in guess else ""
            bad.append((no, image_id, fields))
            continue
        image_id = fields[id_col] if len(fields) > id_col else ""
        if not image_id:
            bad.append((no, "", bounded.InputRejected("CSV row without ImageId", f"fields {fields[:3]}")))
            continue
        out.setdefault(image_id, []).append(fields[rle_col] if len(fields) > rle_col else "")
    return out, bad


def read_dicom(data: bytes, limits: Limits = DEFAULT_LIMITS):
    """DICOM bytes -> (pydicom dataset, pixel array), within ``limits``; InputRejected otherwise.

    pydicom inflates a deflated transfer syntax whole, before any header can be checked, so
    the inflation is first tried here with a bound. Rows x Columns x frames x samples x bits
    are checked before ``pixel_array`` decodes (a compressed frame can be tiny on disk).

    Parameters
    ----------
    data : bytes
        The DICOM file.
    limits : Limits, optional
        Budgets for the inflated file and the decoded pixel array.

    Returns
    -------
    ds : pydicom.dataset.FileDataset
        The parsed dataset.
    pixels : numpy.ndarray
        Its ``pixel_array``.

    Raises
    ------
    InputRejected
        ``unreadable image`` for a broken file or pixel data, or a budget exceeded.
    """
    import pydicom  # imported here: only SIIM needs it
    from pydicom.filereader import _read_file_meta_info, read_preamble

    try:
        fp = io.BytesIO(data)
        read_preamble(fp, True)
        syntax = str(_read_file_meta_info(fp).get("TransferSyntaxUID", ""))
    except Exception:
        syntax, fp = "", None  # no file meta: dcmread below says what is wrong
    if fp is not None and syntax == pydicom.uid.DeflatedExplicitVRLittleEndian:
        guarded.inflate_bounded(fp.read(), limits.max_decoded_bytes, -15, what="DICOM", keep=False)
    try:
        ds = pydicom.dcmread(io.BytesIO(data))
        rows, cols = int(ds.Rows), int(ds.Columns)
        frames = int(getattr(ds, "NumberOfFrames", 1) or 1)
        samples = int(getattr(ds, "SamplesPerPixel", 1) or 1)
        itemsize = max(1, (int(ds.BitsAllocated) + 7) // 8)
    except Exception as err:
        raise InputRejected("unreadable image", f"DICOM: {type(err).__name__}: {err}") from None
    guarded.check_decoded((frames, rows, cols, samples), itemsize, limits, "DICOM", planar=rows * cols)
    try:
        return ds, ds.pixel_array
    except Exception as err:
        raise InputRejected("unreadable image", f"DICOM: {type(err).__name__}: {err}") from None


def load_radiograph(data: bytes, name: str, limits: Limits = DEFAULT_LIMITS) -> tuple[np.ndarray, str | None]:
    """DICOM or PNG/JPEG bytes -> (uint8 gray image, DICOM PatientID or None).

    Parameters
    ----------
    data : bytes
        The image file.
    name : str
        Its file name; a ``.dcm`` ending (any case) means DICOM, anything else Pillow.
    limits : Limits, optional
        Per-file budgets.

    Returns
    -------
    image : numpy.ndarray of uint8
        The image; one gray frame for DICOM, stretched to 8 bits and shown MONOCHROME2.
    patient : str or None
        The DICOM ``PatientID``; None for a non-DICOM file or an empty tag.

    Raises
    ------
    InputRejected
        ``unreadable image`` for a broken file or a DICOM that is not one gray frame.
    """
    if not name.lower().endswith(".dcm"):
        return decode_image(data, limits), None
    ds, pixels = read_dicom(data, limits)
    if pixels.ndim != 2:
        raise InputRejected("unreadable image", f"DICOM pixel array of shape {pixels.shape}; expected one gray frame")
    image = to_uint8(pixels)
    if str(getattr(ds, "PhotometricInterpretation", "")).upper() == "MONOCHROME1":
        image = 255 - image  # MONOCHROME1 stores air bright; show it as MONOCHROME2
    pid = str(ds.PatientID) if getattr(ds, "PatientID", None) else None
    return image, pid


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """SIIM-ACR folder at ``path`` -> (cases table, rejects rows).

    Parameters
    ----------
    path : str
        The SIIM-ACR folder: images below ``cfg.images_dir`` and the run-length CSV ``cfg.rle_csv``.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``siim-rle`` defaults.
    on_item : callable, optional
        Called with no argument after each image (progress).

    Returns
    -------
    cases : pyarrow.Table
        One case per readable image with its CSV rows merged into one mask (lesion-free for ``-1``).
    rejects : list of dict
        Rejects rows for bad images, bad or missing CSV rows, CSV rows without an image, and ignored files.

    Raises
    ------
    MedScopeError
        When the CSV is missing or unreadable (header included), or no image is found.
    """
    cfg = cfg or dataset_config("siim-rle")
    csv_uri = storage.join(path, cfg.rle_csv)
    if not storage.exists(csv_uri):
        raise MedScopeError(f"{path}: no {cfg.rle_csv} (set rle_csv in the dataset config)")
    try:
        rles, bad_rows = read_rle_csv(bounded.read_bounded(csv_uri, cfg.limits.max_file_bytes), name=csv_uri)
    except bounded.InputRejected as err:
        raise MedScopeError(f"{csv_uri}: {err.reason}: {err.detail}") from None
    tainted = {image_id: (no, err) for no, image_id, err in bad_rows if image_id}
    images, ignored = scan_tree(storage.join(path, cfg.images_dir), (".dcm", ".png", ".jpg", ".jpeg"))
    if not images:
        raise MedScopeError(f"{path}: no DICOM or PNG images under {cfg.images_dir}/")
    rows, rejects, seen = [], [], set()
    copies = Counter(stem(name) for name in images)
    for name in images:
        rel = posixpath.join(cfg.images_dir, name)
        image_id = stem(name)
        seen.add(image_id)
        try:
            if copies[image_id] > 1:  # one RLE row cannot say which study folder's file it was drawn on
                raise InputRejected("duplicate ImageId", f"{copies[image_id]} files are named {image_id}")
            if image_id in tainted:
                no, err = tainted[image_id]
                raise InputRejected(err.reason, f"{cfg.rle_csv} line {no}: {err.detail}")
            if image_id not in rles:
                raise InputRejected("missing mask", f"no row for ImageId {image_id} in {cfg.rle_csv}")
            if any(not rle for rle in rles[image_id]):
                raise InputRejected("missing RLE", f"a row for ImageId {image_id} has no EncodedPixels (-1 means none)")
            image, pid = load_radiograph(read_file(path, rel, cfg.limits), name, cfg.limits)
            h, w = image.shape[:2]
            mask = np.zeros((h, w), dtype=bool)
            for rle in rles[image_id]:
                mask |= rle_decode(rle, h, w)
            if lesion_area_frac(mask) >= cfg.whole_mask_frac:
                raise InputRejected("whole-image mask", f"mask covers {lesion_area_frac(mask):.1%} of the image")
            rows.append(case_row(cfg, rel, image, mask if mask.any() else None, patient=pid))
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(file_reject_row(cfg, rel, err))
        if on_item:
            on_item()
    for image_id in sorted(set(rles) - seen):
        rejects.append(
            records.reject_row("cases", cfg.source, f"{cfg.rle_csv}:{image_id}", "load", "missing image",
                           f"ImageId {image_id} has no file under {cfg.images_dir}/")
        )
    for no, image_id, err in bad_rows:
        if not image_id or image_id not in seen:
            rejects.append(file_reject_row(cfg, f"{cfg.rle_csv}:line {no}", err))
    rejects += leftovers(cfg, cfg.images_dir, ignored)
    return finish(rows, rejects)
