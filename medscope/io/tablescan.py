"""Rows of a table a batch at a time, or only the rows with given ids, without holding the file.

``records.read_table`` reads a whole file into memory and returns the whole table: right for a
scored run, wrong for an evaluation sweep's driver, which at 100,000 units would hold every
image of the cohort. Here a file is opened as a file handle (a local file or ranged
S3 reads), only the column chunks asked for are read, pages are decoded one batch at a time,
and a lookup by id reads the key column first and then only the row groups that hold a wanted
id. What a caller keeps is its own affair: a sweep's driver keeps ids and privacy flags, a
worker the few items it is about to run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from medscope.io import layout, parts, records, storage
from medscope.errors import MedScopeError

BATCH_ROWS = 64  # rows decoded at once: with 16 MB row groups a scan peaks at tens of MB
READ_BUFFER = 1 << 16  # buffered page reads: a column chunk is never read whole


def iter_rows(name: str, uri: str, columns: Sequence[str] | None = None,
              where: tuple[str, Collection[str]] | None = None, batch_rows: int = BATCH_ROWS) -> Iterator[dict]:
    """Rows (dicts) of table ``name`` at ``uri`` (a file, a folder of parts or the output folder
    holding it), in the table's order, with only ``columns`` (all when None).

    ``where=(column, values)``: only rows whose ``column`` is in ``values``; of each file, the
    key column is read first and then only the row groups holding a wanted value.

    Parameters
    ----------
    name : str
        The table's name in the registry (:func:`medscope.io.records.schema`).
    uri : str
        A Parquet file, a folder of parts, or the output folder holding the table.
    columns : sequence of str or None, optional
        Columns to return; None for every column of the schema.
    where : tuple of (str, collection of str) or None, optional
        ``(column, values)`` to keep only rows whose ``column`` (compared as strings) is in ``values``
        (:func:`id_filter`); None for every row. Empty ``values`` yield nothing.
    batch_rows : int, optional
        Rows decoded at once. Default :data:`BATCH_ROWS` (64).

    Yields
    ------
    dict
        One row, column name to Python value.

    Raises
    ------
    MedScopeError
        When there is no table at ``uri``, a file lacks the ``where`` column, or a file is not readable
        Parquet.
    """
    for table in iter_tables(name, uri, columns, where, batch_rows):
        yield from table.to_pylist()


def iter_tables(name: str, uri: str, columns: Sequence[str] | None = None,
                where: tuple[str, Collection[str]] | None = None, batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
    """As ``iter_rows``, as tables of at most ``batch_rows`` rows conformed to the table's schema,
    holding one batch at a time. The files are those ``records.read_table`` reads (compacted
    files and the parts they have not absorbed), in the same order.

    Parameters
    ----------
    name : str
        The table's name in the registry.
    uri : str
        A Parquet file, a folder of parts, or the output folder holding the table.
    columns : sequence of str or None, optional
        Columns to return; None for every column of the schema.
    where : tuple of (str, collection of str) or None, optional
        ``(column, values)`` row filter (see :func:`iter_rows`); None for every row.
    batch_rows : int, optional
        Most rows per table. Default :data:`BATCH_ROWS` (64).

    Yields
    ------
    pyarrow.Table
        Batches conformed to the schema (:func:`medscope.io.records.conform`); a batch without a wanted
        row is skipped.

    Raises
    ------
    MedScopeError
        When there is no table at ``uri``, a file lacks the ``where`` column, or a file is not readable
        Parquet.
    """
    sch = records.schema(name)
    uri = layout.require(name, uri)
    if storage.is_dir(uri):
        files = parts.visible_files(uri)
    elif storage.exists(uri):
        files = [uri]
    else:
        raise MedScopeError(f"no {name} table at {uri}")
    wanted = None
    if where is not None:
        wanted = pa.array(sorted({str(v) for v in where[1]}), pa.string())
        if not len(wanted):
            return
    for file in files:
        yield from _file_tables(file, sch, columns, where[0] if where else None, wanted, batch_rows)


def _file_tables(uri: str, sch: pa.Schema, columns: Sequence[str] | None, key: str | None,
                 wanted: pa.Array | None, batch_rows: int) -> Iterator[pa.Table]:
    fs, path = storage.filesystem(uri)
    try:
        with fs.open(path, "rb") as fh:
            pf = pq.ParquetFile(fh, buffer_size=READ_BUFFER, pre_buffer=False)
            present = set(pf.schema_arrow.names)
            names = records.file_columns(sch, present, columns or sch.names)
            groups = None
            if key is not None:
                if key not in present and records.old_column(sch, key) in present:
                    key = records.old_column(sch, key)  # a file written before the column's rename
                if key not in present:
                    raise MedScopeError(f"{uri} has no column {key!r} to look rows up by")
                if key not in names:
                    names.append(key)
                groups = [g for g in range(pf.num_row_groups)
                          if pc.any(pc.is_in(pf.read_row_group(g, columns=[key], use_threads=False).column(key),
                                             value_set=wanted)).as_py()]
                if not groups:
                    return
            # no thread pool: see records.read_parquet
            for batch in pf.iter_batches(batch_size=batch_rows, row_groups=groups, columns=names, use_threads=False):
                table = pa.Table.from_batches([batch])
                if key is not None:
                    table = table.filter(pc.is_in(table.column(key), value_set=wanted))
                    if not table.num_rows:
                        continue
                yield records.conform(table, sch, columns, uri)
    except (pa.ArrowInvalid, OSError) as err:
        raise MedScopeError(f"{uri} is not a readable Parquet file: {err}") from None


def columns_without(name: str, *drop: str) -> list[str]:
    """Every column of table ``name`` but ``drop`` (e.g. a driver's read without ``image``).

    Parameters
    ----------
    name : str
        The table's name in the registry.
    *drop : str
        Columns to leave out.

    Returns
    -------
    list of str
        The schema's column names in order, without ``drop``.
    """
    return [c for c in records.schema(name).names if c not in drop]


def id_filter(column: str, ids: Collection[str] | None) -> tuple[str, Collection[str]] | None:
    """``where`` for ``iter_rows``: rows whose ``column`` is in ``ids``; None (every row) for None.

    Parameters
    ----------
    column : str
        The id column (e.g. ``"view_id"``).
    ids : collection of str or None
        The wanted ids; None for every row.

    Returns
    -------
    tuple of (str, collection of str) or None
        ``(column, ids)``, or None when ``ids`` is None.
    """
    return None if ids is None else (column, ids)
