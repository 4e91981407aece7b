"""A views build's QC features held as columns on the driver (counterfactual paper §3.3's edit detector and
adversarial filter read them).

Each edited region has a small texture vector (``detector.region_features``). Read as Python
rows (a dict with five strings and a list of floats each) they cost about 1 KB a region, six or
so regions a case: the views-build driver's QC-features phase grew 51 MB at 6,400 cases.
Here the vectors are one float64 matrix (one row per region), the kind / tool / role
columns small integer codes, the case ids one string per case and the view ids one Arrow
string array; rows are made only while a caller iterates.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from medscope.io import records, storage
from medscope.errors import MedScopeError


class FeatureRow:
    """One region's features, read like the dict rows of a features part
    (``row["x"]``, ``row["role"]``, ...): ``x`` is a read-only row of the table's matrix."""

    __slots__ = ("_t", "_i")

    def __init__(self, table: FeatureTable, i: int):
        self._t, self._i = table, i

    def __getitem__(self, key: str):
        return self._t.value(key, self._i)

    def get(self, key: str, default=None):
        return self[key] if key in FeatureTable.KEYS else default

    def keys(self) -> tuple[str, ...]:
        return FeatureTable.KEYS

    def __repr__(self) -> str:
        return f"FeatureRow({ {k: self[k] for k in FeatureTable.KEYS} })"


class FeatureTable:
    """Every QC feature row of a build as columns; iterating yields :class:`FeatureRow` s in
    row order, so ``detector``'s functions take it where they took a list of dicts."""

    KEYS = ("view_id", "case_id", "kind", "tool", "role", "x")
    CODED = ("case_id", "kind", "tool", "role")

    def __init__(self, table: pa.Table):
        """``table``: the features parts' schema (``worker.FEATURE_SCHEMA``), in final row order."""
        self.view_id = table.column("view_id").combine_chunks()
        self.codes: dict[str, np.ndarray] = {}
        self.values: dict[str, list] = {}
        for name in self.CODED:
            enc = table.column(name).combine_chunks().dictionary_encode()
            self.codes[name] = enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)
            self.values[name] = enc.dictionary.to_pylist()
        self.x = feature_matrix(table.column("x"))
        self.x.flags.writeable = False

    def __len__(self) -> int:
        return len(self.view_id)

    def __iter__(self) -> Iterator[FeatureRow]:
        return (FeatureRow(self, i) for i in range(len(self)))

    def __getitem__(self, i: int) -> FeatureRow:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return FeatureRow(self, i % len(self))

    def value(self, key: str, i: int):
        if key == "x":
            return self.x[i]
        if key == "view_id":
            return self.view_id[i].as_py()
        if key in self.codes:
            return self.values[key][self.codes[key][i]]
        raise KeyError(key)


def feature_matrix(column: pa.ChunkedArray) -> np.ndarray:
    """A list<float64> column of equal-length vectors -> an n × d float64 matrix.

    Parameters
    ----------
    column : pyarrow.ChunkedArray
        A list<float64> column, one feature vector per row, all of one length d.

    Returns
    -------
    numpy.ndarray
        float64 matrix of shape (n, d), a copy; (0, 0) for an empty column.

    Raises
    ------
    MedScopeError
        If a row has no vector, or the vectors differ in length.
    """
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if len(arr) == 0:
        return np.zeros((0, 0), np.float64)
    if arr.null_count:
        raise MedScopeError("a QC features part has a row without a feature vector")
    lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
    d = int(lengths[0])
    if not (lengths == d).all():
        raise MedScopeError(f"QC feature vectors of different lengths ({sorted(set(lengths.tolist()))})")
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False), np.float64).reshape(len(arr), d).copy()


def merged(tables, merge_every: int = 256) -> list[pa.Table]:
    """Small tables (one per part file) concatenated every ``merge_every`` into one contiguous
    table each: thousands of one-case tables alive at once cost the driver their Arrow buffers
    and objects, ~10 KB a case for the views' QC columns (measured).

    Parameters
    ----------
    tables : iterable of pyarrow.Table
        Tables of one schema, consumed in order.
    merge_every : int, optional
        How many tables go into each merged table.

    Returns
    -------
    list of pyarrow.Table
        The merged tables, in order, each combined into one chunk per column.
    """
    out: list[pa.Table] = []
    pending: list[pa.Table] = []
    for t in tables:
        pending.append(t)
        if len(pending) >= merge_every:
            out.append(pa.concat_tables(pending).combine_chunks())
            pending = []
    if pending:
        out.append(pa.concat_tables(pending).combine_chunks())
    return out


def read_parts(name: str, folder: str, columns: list[str] | None = None, merge_every: int = 256) -> pa.Table:
    """``records.read_table(name, folder, columns)`` of a folder of part files (the same files,
    in the same order), read one part at a time and merged as it goes (:func:`merged`).

    Parameters
    ----------
    name : str
        The table's name in ``medscope.io.records`` (its schema).
    folder : str
        URI of the part folder; a missing folder reads as an empty table.
    columns : list of str or None, optional
        Columns to read; None for all.
    merge_every : int, optional
        Parts merged at a time, see :func:`merged`.

    Returns
    -------
    pyarrow.Table
        The table (empty, with the schema, when the folder has no parts).
    """
    from medscope.io import parts

    if not storage.is_dir(folder):
        table = records.schema(name).empty_table()
        return table.select(list(columns)) if columns else table
    pieces = merged((records.read_table(name, uri, columns) for uri in parts.visible_files(folder)), merge_every)
    if not pieces:
        table = records.schema(name).empty_table()
        return table.select(list(columns)) if columns else table
    return pa.concat_tables(pieces)


def read_features(folder: str, merge_every: int = 256) -> FeatureTable:
    """Every QC feature row of a build (no pixels), sorted by (view_id, role), read one part at
    a time and merged as it goes (:func:`merged`).

    Parameters
    ----------
    folder : str
        URI of the folder of features Parquet files.
    merge_every : int, optional
        Files merged at a time, see :func:`merged`.

    Returns
    -------
    FeatureTable
        Every feature row of the build, cast to ``worker.FEATURE_SCHEMA``.
    """
    from medscope.views.worker import FEATURE_SCHEMA

    pieces = merged((records.read_parquet(uri).cast(FEATURE_SCHEMA)
                     for uri in storage.list_files(folder, suffix=".parquet")), merge_every)
    table = pa.concat_tables(pieces) if pieces else FEATURE_SCHEMA.empty_table()
    del pieces
    table = table.take(pc.sort_indices(table, [("view_id", "ascending"), ("role", "ascending")]))
    return FeatureTable(table)
