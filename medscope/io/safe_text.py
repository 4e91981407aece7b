"""Guarded readers for text inputs: CSV / JSON / JSON-lines bytes, URLs shown to people.

Every reader of a text file a person or another tool wrote goes through here, so one bad file
gives one clear line naming the file (a ``MedScopeError``; loaders turn it into a reject row):

- :func:`decode_text` reads UTF-8 with or without a BOM, UTF-16 / UTF-32 (BOM, or the NUL
  pattern of BOM-less UTF-16), and falls back to Windows-1252 (Excel's "CSV" on Windows);
  CRLF and CR line endings become LF. benchgen's report CSVs call it too.
- :func:`loads_json` / :func:`read_json`: a truncated file names the file, line and column;
  nesting deeper than ``MAX_JSON_DEPTH`` and duplicate keys (a second ``"models"`` would
  silently win) are errors; :func:`read_json` reads at most ``max_bytes``.
- :func:`redact_url` / :func:`redact_urls`: ``https://user:password@host`` -> ``https://***@host``
  in every URL printed or written.
- :func:`inside_root`: a relative path named inside a dataset file (``../../secret.png``)
  may not leave the dataset root.

Re-exported by :mod:`medscope.io.guarded`, the guarded layer of the cohort readers.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import posixpath
import re
import unicodedata

from medscope.io import storage
from medscope.io.bounded import InputRejected, read_bounded
from medscope.errors import MedScopeError

MAX_JSON_DEPTH = 200  # addition: far deeper than any file MedScope reads; below Python's recursion limit
MAX_TEXT_BYTES = 256 << 20  # addition: a key / sweep / answer / manifest file larger than this is not one


class BadText(MedScopeError, ValueError):
    """A text file that cannot be read; the message names the file (``source``).

    Also a ValueError, so every reader that already turned a JSON ValueError into a reject
    row catches a too-deep or duplicate-key file the same way."""

    def __init__(self, source: str, reason: str, detail: str = ""):
        super().__init__(f"{source}: {reason}" + (f" ({detail})" if detail else ""))
        self.source, self.reason, self.detail = source, reason, detail


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def detect_encoding(data: bytes) -> str:
    """The encoding of ``data``: from its BOM, BOM-less UTF-16 by its NULs, UTF-8, else cp1252.

    Parameters
    ----------
    data : bytes
        The file's bytes; the first 4096 are used for the UTF-16 test.

    Returns
    -------
    str
        ``"utf-32"``, ``"utf-8-sig"``, ``"utf-16"`` (by BOM), ``"utf-16-le"`` / ``"utf-16-be"`` (by the
        NUL pattern), ``"utf-8"`` when the bytes decode as such, else ``"cp1252"``.
    """
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc
    head = data[:4096]
    if len(head) >= 4 and len(head) % 2 == 0:  # BOM-less UTF-16: mostly-ASCII text has a NUL in every other byte
        even, odd = head[0::2].count(0) / (len(head) / 2), head[1::2].count(0) / (len(head) / 2)
        if odd > 0.4 and even < 0.1:
            return "utf-16-le"
        if even > 0.4 and odd < 0.1:
            return "utf-16-be"
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        return "cp1252"


def _cp1252_table() -> dict[int, str]:
    table = {}
    for b in range(0x80, 0xA0):
        try:
            table[b] = bytes([b]).decode("cp1252")
        except UnicodeDecodeError:
            pass  # undefined in cp1252: keep the Latin-1 control character
    return table


_CP1252 = _cp1252_table()


def decode_text(data: bytes, source: str = "text") -> str:
    """Bytes of a text file -> str with LF line endings, whatever its encoding (see module doc).

    cp1252 leaves five byte values undefined; those map to the same code points as Latin-1,
    so no byte is ever lost or raises.

    Parameters
    ----------
    data : bytes
        The file's bytes.
    source : str, optional
        The file's name for the error. Default ``"text"``.

    Returns
    -------
    str
        The text with LF line endings.

    Raises
    ------
    BadText
        ``not valid <encoding> text`` when a detected UTF-16 / UTF-32 encoding does not decode;
        ``binary file, not text`` when UTF-8 / cp1252 bytes hold a NUL in their first 64 KiB.
    """
    enc = detect_encoding(data)
    if enc in ("utf-8", "cp1252"):
        # a NUL never occurs in UTF-8 or cp1252 text (UTF-16 / -32 were told apart above): this
        # is an image, an archive or a database given where text belongs
        nul = data.find(b"\x00", 0, 1 << 16)
        if nul >= 0:
            raise BadText(source, "binary file, not text", f"NUL byte at offset {nul}")
    try:
        text = data.decode("latin-1").translate(_CP1252) if enc == "cp1252" else data.decode(enc)
    except UnicodeError as err:  # e.g. UTF-16 with an odd byte count or a lone surrogate
        raise BadText(source, f"not valid {enc} text", str(err)) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text(uri: str, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """A text file's content (:func:`decode_text`), refusing files over ``max_bytes``.

    Parameters
    ----------
    uri : str
        The file (path or URI).
    max_bytes : int, optional
        Most bytes read. Default :data:`MAX_TEXT_BYTES` (256 MiB).

    Returns
    -------
    str
        The decoded text with LF line endings.

    Raises
    ------
    BadText
        ``no such file``, a read refusal of :func:`medscope.io.bounded.read_bounded` (its reason), or
        a decoding error.
    """
    if not storage.exists(uri):
        raise BadText(uri, "no such file")
    try:
        data = read_bounded(uri, max_bytes)
    except InputRejected as err:
        raise BadText(uri, err.reason, err.detail) from None
    return decode_text(data, uri)


def _no_duplicates(source: str):
    def hook(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise BadText(source, "duplicate key", f"{key!r} appears twice in one object")
            seen[key] = value
        return seen

    return hook


def _bracket_bound(text: str, limit: int) -> bool:
    """True when brackets could nest deeper than ``limit`` (a vectorised upper bound: brackets
    inside strings count too, so it can only over-estimate)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    import numpy as np

    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    step = ((raw == 91) | (raw == 123)).astype(np.int32) - ((raw == 93) | (raw == 125)).astype(np.int32)
    return int(np.cumsum(step).max(initial=0)) > limit


def json_depth(obj, stop: int | None = None) -> int:
    """Nesting depth of a parsed JSON value (iterative: no recursion limit to trip on); stops
    early once past ``stop``. Only run when :func:`_bracket_bound` says it could matter.

    Parameters
    ----------
    obj : object
        A parsed JSON value.
    stop : int or None, optional
        Stop once the depth found exceeds it; None to walk everything.

    Returns
    -------
    int
        0 for a scalar, 1 for a flat object or array, and so on (with ``stop``, a value above ``stop``
        once exceeded).
    """
    best, stack = 0, [(obj, 1)] if isinstance(obj, (dict, list)) else []
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        if stop is not None and best > stop:
            break
        for v in node.values() if isinstance(node, dict) else node:
            if isinstance(v, (dict, list)):
                stack.append((v, d + 1))
    return best


def loads_json(text: str | bytes, source: str = "JSON", *, max_depth: int = MAX_JSON_DEPTH):
    """Parse JSON; a truncated / malformed / too-deep / duplicate-key document -> :class:`BadText`.

    Parameters
    ----------
    text : str or bytes
        The document; bytes are decoded with :func:`decode_text`.
    source : str, optional
        The file's name for errors. Default ``"JSON"``.
    max_depth : int, optional
        Deepest nesting allowed. Default :data:`MAX_JSON_DEPTH` (200).

    Returns
    -------
    object
        The parsed value.

    Raises
    ------
    BadText
        ``not valid JSON`` (line and column; truncation named), ``JSON nested too deeply`` or
        ``duplicate key``.
    """
    if isinstance(text, (bytes, bytearray)):
        text = decode_text(bytes(text), source)
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates(source))
    except json.JSONDecodeError as err:
        hint = "the file ends early (truncated?)" if err.pos >= len(text.rstrip()) else err.msg
        raise BadText(source, "not valid JSON", f"line {err.lineno} column {err.colno}: {hint}") from None
    except RecursionError:
        raise BadText(source, "JSON nested too deeply", "more than the interpreter's recursion limit") from None
    if _bracket_bound(text, max_depth) and json_depth(obj, max_depth) > max_depth:
        raise BadText(source, "JSON nested too deeply", f"more than {max_depth} levels")
    return obj


def read_json(uri: str, max_bytes: int = MAX_TEXT_BYTES, *, max_depth: int = MAX_JSON_DEPTH):
    """Parse the JSON file at ``uri`` (bounded read, any encoding); errors name the file.

    Parameters
    ----------
    uri : str
        The file (path or URI).
    max_bytes : int, optional
        Most bytes read. Default :data:`MAX_TEXT_BYTES`.
    max_depth : int, optional
        Deepest nesting allowed. Default :data:`MAX_JSON_DEPTH`.

    Returns
    -------
    object
        The parsed value.

    Raises
    ------
    BadText
        As :func:`read_text` and :func:`loads_json`.
    """
    return loads_json(read_text(uri, max_bytes), uri, max_depth=max_depth)


def expect_mapping(obj, source: str, fields: dict[str, type | tuple] | None = None) -> dict:
    """``obj`` if it is a JSON object whose ``fields`` have the given types; else :class:`BadText`.

    Parameters
    ----------
    obj : object
        A parsed JSON value.
    source : str
        The file's name for errors.
    fields : dict of str to type or tuple of type, optional
        Expected types of fields, checked only when present; None checks none.

    Returns
    -------
    dict
        ``obj`` itself.

    Raises
    ------
    BadText
        ``expected a JSON object`` or ``field '<name>' has the wrong type``.
    """
    if not isinstance(obj, dict):
        raise BadText(source, "expected a JSON object", f"got {type(obj).__name__}")
    for name, kind in (fields or {}).items():
        if name in obj and not isinstance(obj[name], kind):
            raise BadText(source, f"field {name!r} has the wrong type", f"got {type(obj[name]).__name__}")
    return obj


def read_json_object(uri: str, fields: dict[str, type | tuple] | None = None,
                     max_bytes: int = MAX_TEXT_BYTES) -> dict:
    """The JSON object in the file at ``uri`` (a manifest, a report, a summary); errors name the file.

    Parameters
    ----------
    uri : str
        The file (path or URI).
    fields : dict of str to type or tuple of type, optional
        Expected types of fields, checked when present (:func:`expect_mapping`).
    max_bytes : int, optional
        Most bytes read. Default :data:`MAX_TEXT_BYTES`.

    Returns
    -------
    dict
        The parsed object.

    Raises
    ------
    BadText
        As :func:`read_json`; ``expected a JSON object`` for a list, a number or a string.
    """
    return expect_mapping(read_json(uri, max_bytes), uri, fields)


def loads_jsonl(text: str | bytes, source: str = "JSONL", *, objects: bool = True,
                max_depth: int = MAX_JSON_DEPTH) -> list:
    """Parse JSON lines (blank lines skipped); an error names ``source:line N`` and why.

    Parameters
    ----------
    text : str or bytes
        The document; bytes are decoded with :func:`decode_text` (BOM, UTF-16, binary refused).
    source : str, optional
        The file's name for errors.
    objects : bool, optional
        Require every line to be a JSON object. Default True.
    max_depth : int, optional
        Deepest nesting allowed on one line. Default :data:`MAX_JSON_DEPTH`.

    Returns
    -------
    list
        The parsed lines in order.

    Raises
    ------
    BadText
        The first bad line: not valid JSON, nested too deeply, a duplicate key, or (``objects``)
        not an object.
    """
    if isinstance(text, (bytes, bytearray)):
        text = decode_text(bytes(text), source)
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        value = loads_json(line, f"{source}:line {n}", max_depth=max_depth)
        if objects and not isinstance(value, dict):
            raise BadText(f"{source}:line {n}", "expected a JSON object", f"got {type(value).__name__}")
        out.append(value)
    return out


def read_jsonl(uri: str, *, objects: bool = True, max_bytes: int = MAX_TEXT_BYTES) -> list:
    """The JSON lines of the file at ``uri`` (:func:`loads_jsonl` over :func:`read_text`).

    Parameters
    ----------
    uri : str
        The file (path or URI).
    objects : bool, optional
        Require every line to be a JSON object. Default True.
    max_bytes : int, optional
        Most bytes read. Default :data:`MAX_TEXT_BYTES`.

    Returns
    -------
    list
        The parsed lines.

    Raises
    ------
    BadText
        As :func:`read_text` and :func:`loads_jsonl`.
    """
    return loads_jsonl(read_text(uri, max_bytes), uri, objects=objects)


def lift_csv_field_limit() -> None:
    """Let Python's csv read fields up to :data:`MAX_TEXT_BYTES` (its default refuses one over 128 KiB).

    The limit is one setting for the whole process, so every CSV reader in MedScope calls this
    before it parses: a row reads the same whichever reader ran first. A report's findings text can
    be longer than 128 KiB, and every file is already bounded as a whole, so the per-field limit
    only surprised.
    """
    if csv.field_size_limit() < MAX_TEXT_BYTES:
        csv.field_size_limit(MAX_TEXT_BYTES)


def loads_csv(text: str | bytes, source: str = "CSV", *, required: tuple[str, ...] = ()) -> list[dict]:
    """CSV text -> one dict per row, keyed by the header (BOM, encodings, long fields handled).

    Parameters
    ----------
    text : str or bytes
        The document; bytes are decoded with :func:`decode_text`.
    source : str, optional
        The file's name for errors.
    required : tuple of str, optional
        Columns the header must have.

    Returns
    -------
    list of dict
        The rows; header names are stripped of spaces and a BOM; blank lines are skipped.

    Raises
    ------
    BadText
        ``not valid CSV`` (the line), ``no header row``, or ``missing column(s)``.
    """
    if isinstance(text, (bytes, bytearray)):
        text = decode_text(bytes(text), source)
    text = text.lstrip("\ufeff")  # a BOM left by a str already decoded elsewhere
    lift_csv_field_limit()
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        rows = [row for row in reader if any(cell.strip() for cell in row)]
    except csv.Error as err:
        raise BadText(source, "not valid CSV", f"line {reader.line_num}: {err}") from None
    if not rows:
        raise BadText(source, "no header row")
    header = [h.strip().lstrip("\ufeff") for h in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise BadText(source, f"missing column(s) {', '.join(missing)}", f"header is {header}")
    return [dict(zip(header, row + [""] * (len(header) - len(row)))) for row in rows[1:]]


def read_csv(uri: str, *, required: tuple[str, ...] = (), max_bytes: int = MAX_TEXT_BYTES) -> list[dict]:
    """The rows of the CSV file at ``uri`` (:func:`loads_csv` over :func:`read_text`).

    Parameters
    ----------
    uri : str
        The file (path or URI).
    required : tuple of str, optional
        Columns the header must have.
    max_bytes : int, optional
        Most bytes read. Default :data:`MAX_TEXT_BYTES`.

    Returns
    -------
    list of dict
        The rows.

    Raises
    ------
    BadText
        As :func:`read_text` and :func:`loads_csv`.
    """
    return loads_csv(read_text(uri, max_bytes), uri, required=required)


# --------------------------------------------------------------------------- URLs

_CRED = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^\s/@:]*)(?::(?P<pw>[^\s/@]*))?@")


def redact_url(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` replaced by ``***@`` (a token in the user part is a secret too).

    Parameters
    ----------
    url : str or None
        A URL.

    Returns
    -------
    str or None
        The redacted URL; ``url`` itself when it is empty or None.
    """
    if not url:
        return url
    return _CRED.sub(lambda m: m.group("scheme") + "***@", url)


def redact_urls(text: str) -> str:
    """Every URL in ``text`` redacted (:func:`redact_url`).

    Parameters
    ----------
    text : str
        Any text, e.g. a log line or an error message.

    Returns
    -------
    str
        The text with ``user[:password]@`` after every scheme replaced by ``***@``.
    """
    return _CRED.sub(lambda m: m.group("scheme") + "***@", text) if "@" in text else text


# --------------------------------------------------------------------------- paths


def nfc(name: str) -> str:
    """``name`` in Unicode NFC (macOS exports NFD: ``é`` as ``e`` + combining accent).

    Parameters
    ----------
    name : str
        A file name or other text.

    Returns
    -------
    str
        The NFC-normalised text.
    """
    return unicodedata.normalize("NFC", name)


def inside_root(rel: str) -> str:
    """A relative path named in a dataset file, normalised; BadText when it leaves the root.

    ``a/../b.png`` -> ``b.png``; ``../x``, ``/etc/x``, ``C:/x`` and ``a/../../x`` are refused.

    Parameters
    ----------
    rel : str
        The path as the file names it; backslashes are read as ``/``.

    Returns
    -------
    str
        The ``posixpath.normpath`` of the path.

    Raises
    ------
    BadText
        ``path leaves the input root`` for an empty, absolute, drive-letter, URL or NUL-holding path,
        or one that climbs above the root.
    """
    rel = rel.replace("\\", "/")
    if not rel or rel.startswith("/") or re.match(r"^[A-Za-z]:/", rel) or "://" in rel or "\x00" in rel:
        raise BadText(rel or "(empty)", "path leaves the input root", "absolute, URL or empty path")
    norm = posixpath.normpath(rel)
    if norm == ".." or norm.startswith("../"):
        raise BadText(rel, "path leaves the input root", "it climbs above the dataset folder")
    return norm
