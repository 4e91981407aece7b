"""The one guarded path by which every cohort loader reaches its files.

Bad input must never stop an import, hang it or flood memory. Every guard here turns a bad
file into ``InputRejected(reason, detail)`` with a short countable reason, and checks sizes from
*headers* before anything is decoded:

- :func:`walk` lists a folder tree: symlinked folders are followed once (a loop or a second
  link to the same folder becomes an ``ignored`` entry, never an endless walk); FIFOs and
  devices are listed so that reading them becomes a reject rather than a silent skip.
- :func:`read_bounded` reads regular files only (``not a regular file`` for FIFOs, sockets,
  devices, also behind a symlink such as one to ``/dev/zero``), opened non-blocking so a
  FIFO cannot hang the import, and never more than ``max_file_bytes``.
- :func:`open_image` / :func:`check_decoded` reject an image or mask whose header promises
  more than ``max_image_pixels`` pixels or ``max_decoded_bytes`` bytes, before Pillow
  decodes it (Pillow's own bomb guard covers only what the caller turns into an error).
- :func:`exif_upright` applies the EXIF orientation, so a mask drawn on the displayed image
  lines up with it.
- :func:`inflate_bounded` inflates zlib / gzip / raw-deflate data up to a limit (deflated
  DICOM, ``.nii.gz``), so a small file cannot decode to gigabytes.
- :func:`csv_rows` parses a CSV line by line: a non-UTF-8 byte, an unclosed quote or a huge
  field makes one bad row, never a failed or swallowed file; CR, LF and CRLF all end a line.
- :func:`scan_tree` splits a listing into candidate files and ignored ones (hidden, wrong
  extension); :func:`leftovers` turns what a loader did not use into rejects (``mask without
  image``) or ``ignored`` rows, so every file on disk is accounted for.
- :func:`display_name` makes a file name that is not valid UTF-8 printable (Arrow strings
  must be UTF-8) while the real name is still used to read the file.

The limits live in the dataset config (``limits:``); the reason names the limit and the
detail gives the numbers. docs/cohorts-bad-input.md lists every reason.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import posixpath
import warnings
import zlib
from collections.abc import Iterator

import pydantic
from PIL import Image, ImageOps

from medscope import config as cfgmod
from medscope.io import records, safe_text, storage
from medscope.io.bounded import _CHUNK, InputRejected, error_class, read_bounded  # noqa: F401  (the cohort readers' one layer)




def as_reject(err: Exception) -> InputRejected:
    """Any exception met while reading one file, as that file's InputRejected (per-file isolation).

    An InputRejected passes through; a text guard's error keeps its reason; anything else (a library's
    ValueError, RecursionError, MemoryError, ...) becomes ``unexpected error`` with the
    exception's class in the detail, so one bad file is one rejects row, never a stopped run.

    Parameters
    ----------
    err : Exception
        The exception.

    Returns
    -------
    InputRejected
        ``err`` itself when it is an InputRejected; for a ``BadText``, an InputRejected with its reason and the class
        and detail (500 characters at most); else ``unexpected error`` with class and message (500
        characters at most). ``error_class`` as :func:`error_class` gives it.
    """
    if isinstance(err, InputRejected):
        return err
    reason = getattr(err, "reason", None)
    if isinstance(reason, str) and type(err).__name__ == "BadText":
        return InputRejected(reason, f"{type(err).__name__}: {getattr(err, 'detail', '')}"[:500], error_class(err))
    return InputRejected("unexpected error", f"{type(err).__name__}: {err}"[:500], error_class(err))


class Limits(cfgmod.StrictModel):
    """Per-file budgets, checked before reading or decoding (``limits:`` in a dataset config).

    ``max_file_bytes`` bounds the bytes read from one file (CSV included);
    ``max_image_pixels`` the width x height of one 2D image, mask or DICOM frame;
    ``max_decoded_bytes`` the decoded array of one image, mask, DICOM or NIfTI volume, and the
    inflated size of a deflated DICOM or gzipped NIfTI.
    """

    max_file_bytes: int = pydantic.Field(1 << 30, gt=0)
    max_image_pixels: int = pydantic.Field(50_000_000, gt=0)
    max_decoded_bytes: int = pydantic.Field(1 << 30, gt=0)


DEFAULT_LIMITS = Limits()


# --------------------------------------------------------------------------- names


def display_name(name: str) -> str:
    """A file name as valid UTF-8 text: undecodable bytes become ``\\xNN`` escapes.

    Python hands non-UTF-8 names over as lone surrogates (PEP 383), which Arrow refuses; the
    escaped form is stable, so the case id stays the same across imports.

    Parameters
    ----------
    name : str
        A file name as Python hands it over (possibly with lone surrogates).

    Returns
    -------
    str
        ``name`` itself when it encodes as UTF-8; else the name with each undecodable byte as ``\\xNN``.
    """
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# --------------------------------------------------------------------------- listing


def walk(root: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(files, ignored) below ``root``: relative paths of every non-folder entry (sorted), and
    ``(relative path, reason)`` for folders not walked (symlink loop or repeat).

    Local folders are walked with ``os.scandir``, following symlinked folders once each;
    other schemes (s3://, memory://) through fsspec, which has no symlinks or FIFOs.

    Parameters
    ----------
    root : str
        The folder (path or URI); a missing folder gives two empty lists.

    Returns
    -------
    files : list of str
        Sorted ``/``-separated paths relative to ``root`` of every entry that is not a folder (FIFOs
        and devices included).
    ignored : list of tuple of (str, str)
        Sorted ``(relative path, reason)`` for folders not walked: already listed (symlink loop or
        repeat) or unreadable. Always empty for non-local schemes.
    """
    local = storage.local_path(root)
    if local is None:
        fs, base = storage.filesystem(root)
        base = fs._strip_protocol(base).rstrip("/")
        if not fs.isdir(base):
            return [], []
        rels = [posixpath.relpath(p.replace("\\", "/"), base.replace("\\", "/")) for p in fs.find(base)]
        return sorted(rels), []
    if not os.path.isdir(local):
        return [], []
    files: list[str] = []
    ignored: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()
    stack = [(local, "")]
    while stack:
        path, rel = stack.pop()
        try:
            try:
                key, listing = _list_folder(path)
            except OSError as err:
                if err.errno != errno.ENAMETOOLONG:
                    raise
                # deeper than the system's path limit: listed one folder at a time by descriptor,
                # so its files still get rows of their own (issue 51: an image there left none,
                # and its mask became "mask without image")
                key, listing = _list_folder_by_parts(local, rel)
            if key in seen:
                ignored.append((rel, "folder already listed (symlink loop or repeat)"))
                continue
            seen.add(key)
        except OSError as err:
            ignored.append((rel or ".", f"unreadable folder: {err.strerror}"))
            continue
        for name, is_dir in listing:
            sub = posixpath.join(rel, name) if rel else name
            if is_dir:
                stack.append((os.path.join(path, name), sub))
            else:
                files.append(sub)
    return sorted(files), sorted(ignored)


def _entries(it) -> list[tuple[str, bool]]:
    out = []
    for entry in sorted(it, key=lambda e: e.name):
        try:
            is_dir = entry.is_dir(follow_symlinks=True)
        except OSError:
            is_dir = False
        out.append((entry.name, is_dir))
    return out


def _list_folder(path: str) -> tuple[tuple[int, int], list[tuple[str, bool]]]:
    """((device, inode), [(name, is folder)]) of one local folder."""
    st = os.stat(path)
    with os.scandir(path) as it:
        return (st.st_dev, st.st_ino), _entries(it)


def _list_folder_by_parts(root: str, rel: str) -> tuple[tuple[int, int], list[tuple[str, bool]]]:
    """:func:`_list_folder` for a folder whose path is longer than the system allows: opened one
    component at a time, each relative to the descriptor of the one above."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in rel.split("/"):
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        st = os.fstat(fd)
        with os.scandir(fd) as it:
            return (st.st_dev, st.st_ino), _entries(it)
    finally:
        os.close(fd)


def require_inside(root: str, rel: str) -> None:
    """Reject (``path leaves the input root``) a file whose real path -- symlinks resolved --
    lies outside ``root``: a link to ``/etc/...`` or another patient folder is never read into a
    cohort. Only local paths have symlinks; the link target is not echoed.

    Parameters
    ----------
    root : str
        The input root (path or URI); non-local roots are not checked.
    rel : str
        The file's ``/``-separated path relative to ``root``.

    Raises
    ------
    InputRejected
        ``path leaves the input root`` when the resolved path is outside the resolved root.
    """
    local_root = storage.local_path(root)
    if local_root is None:
        return
    real_root = os.path.realpath(local_root)
    real = os.path.realpath(os.path.join(local_root, *rel.split("/")))
    if os.path.commonpath([real_root, real]) != real_root:
        raise InputRejected("path leaves the input root", f"{display_name(rel)} is a symlink (or under one) that resolves "
                     "outside --path; copy the file into the dataset folder to import it")


def scan_tree(root: str, suffixes: tuple[str, ...]) -> tuple[list[str], list[tuple[str, str]]]:
    """(files ending with a suffix, [(other entry, why it is ignored)]) below ``root``.

    Symlinked folders are followed once (:func:`walk`); FIFOs and devices named like an
    image are listed, so reading them becomes a ``not a regular file`` reject.

    Parameters
    ----------
    root : str
        The folder (path or URI).
    suffixes : tuple of str
        Wanted file endings, e.g. ``(".png", ".jpg")``, compared case-insensitively.

    Returns
    -------
    files : list of str
        Relative paths of the non-hidden files ending with a suffix, sorted.
    ignored : list of tuple of (str, str)
        Sorted ``(relative path, reason)``: hidden files, files with another ending (``not a png/jpg
        file``) and the folders :func:`walk` did not walk.
    """
    files, ignored = walk(root)
    out = []
    for rel in files:
        name = posixpath.basename(rel)
        if name.startswith("."):
            ignored.append((rel, "hidden file"))
        elif not name.lower().endswith(suffixes):
            ignored.append((rel, "not a " + "/".join(s.lstrip(".") for s in suffixes) + " file"))
        else:
            out.append(rel)
    return out, sorted(ignored)


def leftovers(
    cfg,
    folder: str,
    ignored: list[tuple[str, str]],
    unused: list[str] = (),
    unused_reason: str = "mask without image",
    table: str = "cases",
) -> list[dict]:
    """Rows for every file under a layout folder that became neither case nor reject
    (``cfg``: the dataset config; only its ``source`` is used).

    ``unused`` (e.g. masks no image claims) become rejects with ``unused_reason``; entries
    of ``ignored`` (from :func:`scan_tree`) become rows of stage ``ignored``, so every file
    on disk is accounted for and ``cohort show`` can count them.

    Parameters
    ----------
    cfg : object
        The dataset config; its ``source`` names the rows' source.
    folder : str
        The layout folder the relative paths are under (joined with ``/`` into the item name).
    ignored : list of tuple of (str, str)
        ``(relative path, reason)`` from :func:`scan_tree`.
    unused : list of str, optional
        Relative paths of candidate files no case used.
    unused_reason : str, optional
        Reason of their rejects. Default ``"mask without image"``.
    table : str, optional
        The table the rows are rejects of. Default ``"cases"``.

    Returns
    -------
    list of dict
        :func:`medscope.io.records.reject_row` rows: stage ``load`` for ``unused`` (detail ``no image
        claims this file``), then stage ``ignored`` with the reason for each of ``ignored``.
    """
    rows = [records.reject_row(table, cfg.source, display_name(posixpath.join(folder, rel)), "load", unused_reason,
                           "no image claims this file") for rel in unused]
    for rel, why in ignored:
        item = display_name(posixpath.join(folder, rel))
        rows.append(records.reject_row(table, cfg.source, item, "ignored", why, ""))
    return rows


# --------------------------------------------------------------------------- bytes


def inflate_bounded(
    data: bytes, max_out: int, wbits: int, *, what: str = "data", strict: bool = True, keep: bool = True
) -> bytes:
    """Inflate ``data`` (zlib ``wbits``: 31 gzip, -15 raw deflate) to at most ``max_out`` bytes.

    With ``strict`` more output than ``max_out`` is a ``over max_decoded_bytes`` reject; without,
    the first ``max_out`` bytes are returned (a caller that knows from a header how much it
    needs). ``keep=False`` only measures (returns b""), holding one 1 MiB piece at a time.
    A broken stream is an InputRejected with reason ``corrupt <what>``.

    Parameters
    ----------
    data : bytes
        The compressed stream; concatenated gzip members are all inflated.
    max_out : int
        Most output bytes (``limits.max_decoded_bytes``).
    wbits : int
        zlib's ``wbits``: 31 for gzip, -15 for raw deflate, 15 for zlib.
    what : str, optional
        What the data is, for the reasons and details. Default ``"data"``.
    strict : bool, optional
        Refuse output over ``max_out`` (True) or truncate it (False). Default True.
    keep : bool, optional
        Keep the output (True) or only measure it (False). Default True.

    Returns
    -------
    bytes
        The inflated bytes (at most ``max_out``); ``b""`` when ``keep`` is False.

    Raises
    ------
    InputRejected
        ``corrupt <what>`` for a broken stream; ``over max_decoded_bytes`` when ``strict`` and the
        output exceeds ``max_out``.
    """
    out, total = [], 0
    try:
        d = zlib.decompressobj(wbits)
        buf = data
        while total <= max_out:  # until the stream ends: output may be pending after all input
            piece = d.decompress(buf, min(_CHUNK, max_out + 1 - total))
            if keep:
                out.append(piece)
            total += len(piece)
            buf = d.unconsumed_tail
            if d.eof:
                if wbits == 31 and d.unused_data[:2] == b"\x1f\x8b":  # gzip members concatenated
                    buf, d = d.unused_data, zlib.decompressobj(wbits)
                    continue
                break
            if not buf and not piece:
                break
    except zlib.error as err:
        raise InputRejected(f"corrupt {what}", f"zlib: {err}") from None
    if total > max_out:
        if strict:
            raise InputRejected("over max_decoded_bytes", f"{what} inflates past {max_out} bytes (limits.max_decoded_bytes)")
        return b"".join(out)[:max_out]
    return b"".join(out)


# --------------------------------------------------------------------------- pixels

_BYTES_PER_BAND = {"1": 1, "I;16": 2, "I;16B": 2, "I;16L": 2, "I;16N": 2, "I": 4, "F": 4}


def check_decoded(shape: tuple[int, ...], itemsize: int, limits: Limits, what: str, *, planar: int | None = None) -> None:
    """Reject an array of ``shape`` x ``itemsize`` bytes over the budget, before it exists.

    ``planar`` (for 2D images) is the width x height checked against ``max_image_pixels``.

    Parameters
    ----------
    shape : tuple of int
        Shape of the array to be decoded.
    itemsize : int
        Bytes per element.
    limits : Limits
        The budgets.
    what : str
        What the array is (``image``, ``mask``, ...), named in the detail.
    planar : int or None, optional
        Width x height of a 2D image, checked against ``limits.max_image_pixels``; None skips that.

    Raises
    ------
    InputRejected
        ``zero-size dimension``, ``over max_image_pixels`` or ``over max_decoded_bytes``.
    """
    if any(int(s) <= 0 for s in shape):
        raise InputRejected("zero-size dimension", f"{what} shape {'x'.join(str(int(s)) for s in shape)}")
    n = 1
    for s in shape:
        n *= int(s)
    if planar is not None and planar > limits.max_image_pixels:
        dims = "x".join(str(int(s)) for s in shape[:2][::-1])
        raise InputRejected("over max_image_pixels", f"{what} {dims} = {planar} pixels > {limits.max_image_pixels}")
    if n * itemsize > limits.max_decoded_bytes:
        raise InputRejected(
            "over max_decoded_bytes",
            f"{what} {'x'.join(str(int(s)) for s in shape)} x {itemsize} B = {n * itemsize} B > "
            f"{limits.max_decoded_bytes} (limits.max_decoded_bytes)",
        )


def open_image(data: bytes, limits: Limits, what: str = "image") -> Image.Image:
    """Pillow image from bytes, its header checked against ``limits``; not yet decoded.

    Rejects ``over max_image_pixels`` / ``over max_decoded_bytes`` (Pillow's
    DecompressionBombError too), or ``unreadable <what>``.

    Parameters
    ----------
    data : bytes
        The image file's bytes.
    limits : Limits
        The budgets its header is checked against (:func:`check_decoded`).
    what : str, optional
        What the image is, in reasons and details. Default ``"image"``.

    Returns
    -------
    PIL.Image.Image
        The opened, not yet decoded image.

    Raises
    ------
    InputRejected
        ``over max_image_pixels`` / ``over max_decoded_bytes`` / ``zero-size dimension``,
        ``unreadable <what>``, or ``multi-page image`` for more than one frame.
    """
    try:
        with warnings.catch_warnings():  # our own budget below decides, not Pillow's warning
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as err:
        raise InputRejected("over max_image_pixels", str(err)) from None
    except Exception as err:  # Pillow raises many types for broken files
        raise InputRejected(f"unreadable {what}", pil_error(err)) from None
    w, h = img.size
    bands = len(img.getbands())
    check_decoded((h, w, bands), _BYTES_PER_BAND.get(img.mode, 1), limits, what, planar=w * h)
    try:
        pages = int(getattr(img, "n_frames", 1) or 1)
    except Exception as err:  # a broken page chain in a TIFF
        raise InputRejected(f"unreadable {what}", pil_error(err)) from None
    if pages > 1:  # keeping page 0 would drop the rest silently (a multi-page TIFF, an animation)
        raise InputRejected("multi-page image", f"{what} has {pages} pages; give one image per file")
    return img


def exif_upright(img: Image.Image, what: str = "image") -> Image.Image:
    """The loaded image turned the way its EXIF orientation says it is displayed.

    Masks are drawn on the displayed image, so both image and mask are turned by their own tag.
    An orientation outside 1..8 is a ``bad EXIF orientation`` reject: which way is up is unknown.

    Parameters
    ----------
    img : PIL.Image.Image
        An opened image.
    what : str, optional
        What the image is, in the detail. Default ``"image"``.

    Returns
    -------
    PIL.Image.Image
        ``img`` itself when the orientation is 1, missing or the EXIF block is unreadable; else a
        transposed copy (``ImageOps.exif_transpose``).

    Raises
    ------
    InputRejected
        ``bad EXIF orientation`` for an orientation outside 1..8.
    """
    try:
        orientation = img.getexif().get(0x0112, 1)
    except Exception:  # a broken EXIF block: Pillow could still decode the pixels
        return img
    if orientation in (None, 1):
        return img
    if orientation not in range(2, 9):
        raise InputRejected("bad EXIF orientation", f"{what} EXIF orientation {orientation!r} is not 1..8")
    return ImageOps.exif_transpose(img)


def pil_error(err: Exception) -> str:
    """A Pillow exception as a reject's detail.

    Parameters
    ----------
    err : Exception
        What Pillow raised.

    Returns
    -------
    str
        ``"not an image file Pillow can identify"`` for ``UnidentifiedImageError``, else
        ``"<class>: <message>"``.
    """
    if type(err).__name__ == "UnidentifiedImageError":
        return "not an image file Pillow can identify"
    return f"{type(err).__name__}: {err}"


# --------------------------------------------------------------------------- CSV


def csv_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes) of each non-blank line; CRLF, LF and CR all end a line.

    A UTF-16 / UTF-32 file (Excel's "Unicode text") is transcoded to UTF-8 first; UTF-8 and
    other bytes stay per-row, so one stray byte is one ``CSV row not UTF-8`` reject.

    Parameters
    ----------
    data : bytes
        The whole CSV file; a UTF-8 BOM is dropped.

    Yields
    ------
    tuple of (int, bytes)
        Line number (counting blank lines) and the line's bytes without its line ending.
    """
    from medscope.io.safe_text import decode_text, detect_encoding

    if detect_encoding(data).startswith(("utf-16", "utf-32")):
        data = decode_text(data, "CSV").encode("utf-8")
    text = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    for no, line in enumerate(text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"), start=1):
        if line.strip():
            yield no, line


def csv_fields(line: bytes) -> list[str]:
    """One CSV line -> its stripped fields; InputRejected for a non-UTF-8 byte or a broken quote.

    A line without quotes is split on commas (no field-size limit to trip on: RLE strings
    can be long); a quoted one goes through ``csv`` in strict mode, so an unclosed quote
    is this row's error instead of swallowing every later row.

    Parameters
    ----------
    line : bytes
        One line without its line ending.

    Returns
    -------
    list of str
        The fields, each stripped.

    Raises
    ------
    InputRejected
        ``CSV row not UTF-8`` (naming the byte and column) or ``malformed CSV row``.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputRejected("CSV row not UTF-8", f"byte {line[err.start]:#04x} at column {err.start + 1}") from None
    if '"' not in text:
        return [f.strip() for f in text.split(",")]
    safe_text.lift_csv_field_limit()
    try:
        rows = list(csv.reader([text], strict=True, skipinitialspace=True))
    except csv.Error as err:
        raise InputRejected("malformed CSV row", str(err)) from None
    if len(rows) != 1:
        raise InputRejected("malformed CSV row", "quoted field runs past the end of the line")
    return [f.strip() for f in rows[0]]


def csv_rows(data: bytes) -> Iterator[tuple[int, list[str] | InputRejected, bytes]]:
    """(line number, fields or the InputRejected of that line, raw line) for each non-blank line.

    Parameters
    ----------
    data : bytes
        The whole CSV file.

    Yields
    ------
    tuple of (int, list of str or InputRejected, bytes)
        Line number, the fields (:func:`csv_fields`) or the line's InputRejected, and the raw line.
    """
    for no, line in csv_lines(data):
        try:
            yield no, csv_fields(line), line
        except InputRejected as err:
            yield no, err, line
