"""SIIM-ACR pneumothorax: chest radiographs (DICOM or PNG) plus a CSV of run-length masks.

Layout: image files anywhere below ``images_dir`` (Kaggle nests them as
``dicom-images-train/<study>/<series>/<ImageId>.dcm``), matched by file stem to the
``ImageId`` column of ``rle_csv`` (``ImageId, EncodedPixels``; the Kaggle header carries a
space, so names and values are stripped). ``-1`` means no pneumothorax. One image may have
several rows (one per region): they are merged. A DICOM ``PatientID`` becomes the case's
patient id; otherwise the config's file-name rule applies.

Rejects: unreadable image, ``malformed RLE`` (odd count, not integers, negative, running
past the image), ``missing mask`` (an image with no CSV row), ``missing image`` (a CSV row
whose ImageId has no file), and the common mask rules (empty, whole-image).
"""

from __future__ import annotations

import csv
import io
import posixpath

import numpy as np
import pyarrow as pa

from medscope import records, storage
from medscope.cohorts.common import (
    DatasetConfig,
    OnItem,
    Reject,
    case_row,
    dataset_config,
    decode_image,
    finish,
    lesion_area_frac,
    list_tree,
    read_file,
    reject_row,
    stem,
    to_uint8,
)
from medscope.errors import MedScopeError

NO_FINDING = "-1"


def rle_decode(rle: str, height: int, width: int) -> np.ndarray:
    """Decode one SIIM-ACR run-length string to a boolean (height, width) mask.

    The SIIM-ACR convention (Kaggle ``mask_functions.rle2mask``): pixels are numbered down
    the columns (column-major, 0-based) and each pair is (gap since the end of the previous
    run, run length) -- *relative* starts, unlike the absolute 1-based starts of most other
    Kaggle RLE. Written here because no maintained library speaks this variant. ``-1`` or an
    empty string is an empty mask. Raises Reject("malformed RLE") on anything else broken.
    """
    text = (rle or "").strip()
    if text in ("", NO_FINDING):
        return np.zeros((height, width), dtype=bool)
    try:
        values = [int(v) for v in text.split()]
    except ValueError:
        raise Reject("malformed RLE", f"not integers: {text[:40]!r}") from None
    if len(values) % 2:
        raise Reject("malformed RLE", f"odd number of values ({len(values)})")
    flat = np.zeros(height * width, dtype=bool)
    pos = 0
    for gap, length in zip(values[0::2], values[1::2]):
        if gap < 0 or length <= 0:
            raise Reject("malformed RLE", f"negative gap or non-positive length ({gap} {length})")
        pos += gap
        if pos + length > flat.size:
            raise Reject("malformed RLE", f"run ends at pixel {pos + length}, image has {flat.size}")
        flat[pos : pos + length] = True
        pos += length
    return flat.reshape(width, height).T


def rle_encode(mask: np.ndarray) -> str:
    """Inverse of :func:`rle_decode` (``-1`` for an empty mask)."""
    flat = np.asarray(mask, dtype=bool).T.reshape(-1)
    padded = np.concatenate([[False], flat, [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    starts, ends = edges[0::2], edges[1::2]
    if starts.size == 0:
        return NO_FINDING
    prev_ends = np.concatenate([[0], ends[:-1]])
    pairs = np.stack([starts - prev_ends, ends - starts], axis=1).reshape(-1)
    return " ".join(str(int(v)) for v in pairs)


def read_rle_csv(data: bytes) -> dict[str, list[str]]:
    """CSV bytes -> {ImageId: [EncodedPixels, ...]} in file order."""
    try:
        reader = csv.reader(io.StringIO(data.decode("utf-8-sig")))
        header = [h.strip() for h in next(reader)]
    except (UnicodeDecodeError, StopIteration, csv.Error) as err:
        raise MedScopeError(f"RLE CSV is not readable: {err}") from None
    try:
        id_col, rle_col = header.index("ImageId"), header.index("EncodedPixels")
    except ValueError:
        raise MedScopeError(f"RLE CSV needs columns ImageId, EncodedPixels; has {header}") from None
    out: dict[str, list[str]] = {}
    for row in reader:
        if not row or not any(c.strip() for c in row):
            continue
        image_id = row[id_col].strip() if len(row) > id_col else ""
        rle = row[rle_col].strip() if len(row) > rle_col else ""
        out.setdefault(image_id, []).append(rle)
    return out


def load_radiograph(data: bytes, name: str) -> tuple[np.ndarray, str | None]:
    """DICOM or PNG/JPEG bytes -> (uint8 gray image, DICOM PatientID or None)."""
    if not name.lower().endswith(".dcm"):
        return decode_image(data), None
    import pydicom  # imported here: only SIIM needs it

    try:
        ds = pydicom.dcmread(io.BytesIO(data))
        pixels = ds.pixel_array
    except Exception as err:
        raise Reject("unreadable image", f"DICOM: {type(err).__name__}: {err}") from None
    if pixels.ndim != 2:
        raise Reject("unreadable image", f"DICOM pixel array of shape {pixels.shape}; expected one gray frame")
    image = to_uint8(pixels)
    if str(getattr(ds, "PhotometricInterpretation", "")).upper() == "MONOCHROME1":
        image = 255 - image  # MONOCHROME1 stores air bright; show it as MONOCHROME2
    pid = str(ds.PatientID) if getattr(ds, "PatientID", None) else None
    return image, pid


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None) -> tuple[pa.Table, list[dict]]:
    """SIIM-ACR folder at ``path`` -> (cases table, rejects rows)."""
    cfg = cfg or dataset_config("siim-rle")
    csv_uri = storage.join(path, cfg.rle_csv)
    if not storage.exists(csv_uri):
        raise MedScopeError(f"{path}: no {cfg.rle_csv} (set rle_csv in the dataset config)")
    rles = read_rle_csv(storage.read_bytes(csv_uri))
    images = list_tree(storage.join(path, cfg.images_dir), (".dcm", ".png", ".jpg", ".jpeg"))
    if not images:
        raise MedScopeError(f"{path}: no DICOM or PNG images under {cfg.images_dir}/")
    rows, rejects, seen = [], [], set()
    for name in images:
        rel = posixpath.join(cfg.images_dir, name)
        image_id = stem(name)
        seen.add(image_id)
        try:
            if image_id not in rles:
                raise Reject("missing mask", f"no row for ImageId {image_id} in {cfg.rle_csv}")
            image, pid = load_radiograph(read_file(path, rel), name)
            h, w = image.shape[:2]
            mask = np.zeros((h, w), dtype=bool)
            for rle in rles[image_id]:
                mask |= rle_decode(rle, h, w)
            if lesion_area_frac(mask) >= cfg.whole_mask_frac:
                raise Reject("whole-image mask", f"mask covers {lesion_area_frac(mask):.1%} of the image")
            rows.append(case_row(cfg, rel, image, mask if mask.any() else None, patient=pid))
        except Reject as err:
            rejects.append(reject_row(cfg, rel, err))
        if on_item:
            on_item()
    for image_id in sorted(set(rles) - seen):
        rejects.append(
            records.reject("cases", cfg.source, f"{cfg.rle_csv}:{image_id}", "load", "missing image",
                           f"ImageId {image_id} has no file under {cfg.images_dir}/")
        )
    return finish(rows, rejects)
