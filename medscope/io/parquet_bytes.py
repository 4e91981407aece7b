"""Parquet from bytes in memory, read on the calling thread.

pyarrow 26.0.1 aborts the interpreter at exit ("terminate called without an active exception",
exit 134) in a share of runs once any Parquet read has started a worker of Arrow's IO or CPU
thread pool: the worker is still joinable when static destructors run. Three things start one even
for a one-thread read of a small file: ``pq.read_table`` goes through the dataset scanner, whose
row-group generator spawns on the pools whatever ``use_threads`` says; ``pre_buffer=True`` (the
default of ``ParquetFile`` too) pre-reads column chunks through ``RandomAccessFile::ReadAsync`` on
the IO pool; a Python file object (``io.BytesIO``) makes that read asynchronous.
``ParquetFile(pa.BufferReader(data), pre_buffer=False).read(use_threads=False)`` starts no thread
at all (``tests/io/test_parquet_bytes.py`` counts the process's threads). Every Parquet
read of bytes in MedScope goes through here; a file read is small enough that the pools bought
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq


def parquet_file(data: bytes) -> pq.ParquetFile:
    """A ``ParquetFile`` over ``data`` that reads without Arrow's thread pools.

    Parameters
    ----------
    data : bytes
        A whole Parquet file.

    Returns
    -------
    pyarrow.parquet.ParquetFile
        Opened on a ``pa.BufferReader`` with ``pre_buffer=False``.
    """
    return pq.ParquetFile(pa.BufferReader(data), pre_buffer=False)


def read_parquet_bytes(data: bytes, columns: Sequence[str] | None = None) -> pa.Table:
    """The table in ``data`` (all columns, or ``columns``), read on this thread.

    Parameters
    ----------
    data : bytes
        A whole Parquet file.
    columns : sequence of str or None, optional
        Columns to read; None for all.

    Returns
    -------
    pyarrow.Table
        The table, read with ``use_threads=False``.
    """
    return parquet_file(data).read(columns=columns, use_threads=False)


def parquet_schema(data: bytes) -> pa.Schema:
    """The Arrow schema of the Parquet file in ``data`` (footer only).

    Parameters
    ----------
    data : bytes
        A whole Parquet file.

    Returns
    -------
    pyarrow.Schema
        The schema stored in the footer.
    """
    return parquet_file(data).schema_arrow
