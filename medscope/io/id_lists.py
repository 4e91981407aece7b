"""Id lists as people write them: ``a,b,c`` on the command line or ``@FILE`` with one id a line.

A list saved by Excel or Notepad carries a BOM and CRLF endings, blank lines, spaces around
ids and ``#`` notes; the ids in it must still be the ids (issue 51: a BOM glued to the first id
of a withdrawal list silently kept that patient in every table). Rules:

- the file is decoded by :func:`medscope.io.safe_text.read_text` (UTF-8 with or without BOM,
  UTF-16 / UTF-32, cp1252; CRLF and CR become LF; a binary file is refused);
- a ``.csv`` / ``.tsv`` file is read as a table: the column named ``column`` (``case_id``)
  when the header has it, else the only column;
- otherwise one id a line; commas also separate ids, as on the command line;
- ``#`` starts a note when it begins a line or follows whitespace (``abc  # withdrew 3 May``);
- ids are stripped of spaces (including no-break spaces and zero-width marks); blank entries
  are skipped; repeats are kept once, first place wins.

References
----------
.. [1] DESIGN.md, "Nothing lost, nothing silent" (no source paper covers id lists).
"""

from __future__ import annotations

import csv
import io
import re

from medscope.errors import MedScopeError
from medscope.io import safe_text

_COMMENT = re.compile(r"(^|\s)#.*$")
# spaces and invisible marks that editors leave around ids: BOM / zero-width no-break space,
# zero-width space and joiners, no-break space
_EDGE = "\ufeff\u200b\u200c\u200d\u2060\u00a0 \t\r\n\f\v"


def clean_id(raw: str) -> str:
    """One id with surrounding spaces and invisible marks removed.

    Parameters
    ----------
    raw : str
        An id as written.

    Returns
    -------
    str
        The id; empty when nothing but spaces and marks was written.
    """
    return raw.strip(_EDGE)


def _unique(ids) -> list[str]:
    seen: dict[str, None] = {}
    for i in ids:
        if i:
            seen.setdefault(i, None)
    return list(seen)


def parse_id_text(text: str) -> list[str]:
    """Ids from free text: one a line or comma-separated, ``#`` notes and blank lines skipped.

    Parameters
    ----------
    text : str
        Decoded text (any line endings).

    Returns
    -------
    list of str
        The ids in first-seen order, each once.
    """
    ids = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _COMMENT.sub("", clean_id(line))
        ids.extend(clean_id(part) for part in line.split(","))
    return _unique(ids)


def _table_ids(text: str, source: str, column: str) -> list[str]:
    delimiter = "\t" if source.lower().endswith(".tsv") else ","
    lines = [line for line in text.split("\n") if clean_id(line) and not clean_id(line).startswith("#")]
    safe_text.lift_csv_field_limit()
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
    if not rows:
        return []
    header = [clean_id(h) for h in rows[0]]
    if column in header:
        at = header.index(column)
        body = rows[1:]
    elif len(header) == 1:
        at, body = 0, rows  # a one-column file with no header row: every line is an id
    else:
        raise MedScopeError(f"{source}: no {column!r} column among {header}: name the id column {column}")
    return _unique(clean_id(r[at]) if at < len(r) else "" for r in body)


def read_id_list(value: str, what: str = "--cases", column: str = "case_id") -> list[str]:
    """The ids of a command-line id list: ``a,b,c`` or ``@FILE`` (see the module doc).

    Parameters
    ----------
    value : str
        The flag's value.
    what : str, optional
        The flag, named in errors. Default ``"--cases"``.
    column : str, optional
        The id column of a CSV / TSV file. Default ``"case_id"``.

    Returns
    -------
    list of str
        The ids, each once, in the order written.

    Raises
    ------
    MedScopeError
        One line naming the flag or the file: an unreadable, binary or empty list, or a CSV
        without the id column.
    """
    if value.startswith("@"):
        source = value[1:]
        if not source:
            raise MedScopeError(f"{what} @: name the file after the @")
        text = safe_text.read_text(source)
        low = source.lower()
        ids = _table_ids(text, source, column) if low.endswith((".csv", ".tsv")) else parse_id_text(text)
        if not ids:
            raise MedScopeError(f"{source}: no ids in the file (blank lines and # notes only) for {what}")
        return ids
    ids = parse_id_text(value)
    if not ids:
        raise MedScopeError(f"{what} is empty: give the ids, comma-separated, or @FILE with one a line")
    return ids
