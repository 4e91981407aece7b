"""The views build's driver-side passes, each holding one batch or one case at a time, so the
driver's memory does not grow with the cohort's pixels:

- :func:`stage_cases` reads the cases table once in batches: ids and plan columns kept (small),
  each readable image hashed for the near-copy crosswalk (a 64-bit dHash in memory, a 64 × 64
  uint8 thumbnail in a local scratch file: :class:`HashStore`), and the cases copied to a
  staging table in row groups of one block each (files of ``ROW_GROUPS_PER_FILE`` row groups),
  which workers read by range;
- :func:`read_block` / :func:`StagedImages` are the workers' side of that table;
- :func:`write_views` streams the per-case views parts into the final ``views.parquet`` with a
  ``pyarrow.parquet.ParquetWriter``, a few parts at a time, setting the QC fields that the
  cross-case QC computed from features and ids alone.

Row order of the final table is by ``view_id`` (as a whole-table sort gives), whatever order
the parts were written in, so its bytes do not depend on workers or scheduling.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from medscope.io import records, storage, tablescan
from medscope.errors import MedScopeError
from medscope.qc.near_copies import THUMB
from medscope.views.plan import hash_case

PLAN_COLUMNS = ["case_id", "source", "imaging_type", "patient_id", "split", "has_lesion"]
# the columns of the views table the cross-case QC and the build summary read: no pixels
QC_COLUMNS = ["view_id", "case_id", "kind", "tool", "imaging_type", "split", "source", "passed",
              "reject_reason", "edit_score"]
# addition (memory only): a staging file holds this many row groups (blocks of cases). A Parquet
# writer keeps every row group's metadata until it closes, ~18 KB a row group of the cases table
# (20 columns): 4.6 KB a case at 4 cases a block in one file (measured); a new file
# every 64 row groups keeps it near 1 MB whatever the cohort
ROW_GROUPS_PER_FILE = 64
# a row group of the final table holds about this much (one part at least): the driver holds
# it twice over while writing (the rows, and their encoded pages until the row group closes)
FLUSH_BYTES = 8 << 20


class HashStore(Mapping):
    """case_id -> (dHash, thumbnail) of every readable case, for the near-copy crosswalk, with
    the thumbnails in a local scratch file rather than in memory: 4 KB a case (16 KB where a
    thumbnail is not exact in uint8), read back only for the hash-close pairs. In memory: the
    ids, one uint64 hash and one offset per case. At a million cases the thumbnails alone would
    be 4 GB of the driver's 16; in the page cache they are not the driver's."""

    def __init__(self) -> None:
        self._fh = tempfile.TemporaryFile(prefix="medscope-thumbs-")  # removed when closed
        self._index: dict[str, int] = {}
        self._hash, self._offset, self._float = [], [0], []  # lists while staging, arrays after
        self._sealed = False

    def add(self, case_id: str, dhash: int, thumb: np.ndarray) -> None:
        if thumb.shape != (THUMB, THUMB):
            raise MedScopeError(f"{case_id}: a crosswalk thumbnail is {THUMB} × {THUMB}, not {thumb.shape}")
        thumb = compact_thumbnail(thumb)
        data = np.ascontiguousarray(thumb, np.uint8 if thumb.dtype == np.uint8 else np.float32)
        self._fh.write(data.tobytes())
        self._index[case_id] = len(self._hash)
        self._hash.append(dhash)
        self._offset.append(self._offset[-1] + data.nbytes)
        self._float.append(data.dtype != np.uint8)

    def seal(self) -> None:
        """Done adding: the per-case lists become arrays (8 + 8 + 1 bytes a case)."""
        if not self._sealed:
            self._fh.flush()
            self._hash = np.array(self._hash, np.uint64)
            self._offset = np.array(self._offset, np.int64)
            self._float = np.array(self._float, bool)
            self._sealed = True

    def __getitem__(self, case_id: str) -> tuple[int, np.ndarray]:
        i = self._index[case_id]
        self.seal()
        start, end = int(self._offset[i]), int(self._offset[i + 1])
        raw = os.pread(self._fh.fileno(), end - start, start)
        thumb = np.frombuffer(raw, np.float32 if self._float[i] else np.uint8).reshape(THUMB, THUMB)
        return int(self._hash[i]), thumb

    def hash_array(self, case_ids: list[str]) -> np.ndarray:
        """The dHashes of ``case_ids`` as uint64, without reading a thumbnail (the crosswalk's
        search needs every hash; a thumbnail only per hash-close pair).

        Parameters
        ----------
        case_ids : list of str
            Hashed case ids.

        Returns
        -------
        numpy.ndarray of uint64
            One hash per id, in their order.
        """
        self.seal()
        return self._hash[np.array([self._index[c] for c in case_ids], np.int64)]

    def __contains__(self, case_id) -> bool:
        return case_id in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def close(self) -> None:
        self._fh.close()


@dataclass
class StagedCohort:
    """What the plan needs of every case (ids, plan columns, hashes) and where each case sits in
    the staging table; no pixels."""

    meta: list[dict] = field(default_factory=list)
    hashes: Mapping[str, tuple[int, np.ndarray]] = field(default_factory=HashStore)
    where: dict[str, tuple[int, int]] = field(default_factory=dict)  # case_id -> (row group, row)
    blocks: list[tuple[int, list[str]]] = field(default_factory=list)  # (row group, case ids to build)
    rejects: list[dict] = field(default_factory=list)
    staged: bool = False


def compact_thumbnail(thumb: np.ndarray) -> np.ndarray:
    """The crosswalk thumbnail as uint8 when that is exact (an 8-bit image: cv2's area resize
    of uint8 gives whole numbers), a quarter of float32's memory; unchanged otherwise.

    Parameters
    ----------
    thumb : numpy.ndarray
        float32 grey thumbnail, THUMB x THUMB.

    Returns
    -------
    numpy.ndarray
        The thumbnail as uint8 when every value is a whole number in 0-255, else ``thumb`` itself.
    """
    small = thumb.astype(np.uint8)
    return small if np.array_equal(small, thumb) else thumb


def stage_cases(cases_uri: str, staged_uri: str, done: set[str], case_key, batch_rows: int = 4) -> StagedCohort:
    """One pass over the cases table, one batch of ``batch_rows`` cases in memory at a time.

    A repeated case id is rejected (``duplicate_case_id``; its first row is kept). Cases whose
    key (``case_key(case_id)``) is in ``done`` already have views; when every case is done no
    staging table is written. Every staged batch is its own row group, so row group ``i`` is
    one block of work.

    Parameters
    ----------
    cases_uri : str
        URI of the cases table (a file or a part folder).
    staged_uri : str
        URI of the staging table; files are named by `staged_file`.
    done : set of str
        Case keys whose views are already built.
    case_key : callable
        case_id -> its part key (str).
    batch_rows : int, optional
        Cases per staged batch, hence per row group (block of work).

    Returns
    -------
    StagedCohort
        Plan columns, hashes, each case's (row group, row), the blocks to build, the rejects, and
        whether a staging table was written.
    """
    out = StagedCohort()
    first: set[str] = set()
    for t in tablescan.iter_tables("cases", cases_uri, columns=PLAN_COLUMNS, batch_rows=4096):
        for row in t.to_pylist():
            if row["case_id"] in first:
                out.rejects.append(records.reject_row("views", row["source"], row["case_id"], "load", "duplicate_case_id"))
            else:
                first.add(row["case_id"])
                out.meta.append(row)
    out.staged = any(case_key(c) not in done for c in first)
    seen: set[str] = set()
    sch = records.schema("cases")
    with contextlib.ExitStack() as stack:
        writer = None
        rg = 0
        for t in tablescan.iter_tables("cases", cases_uri, batch_rows=batch_rows):
            ids = t.column("case_id").to_pylist()
            keep = [i for i, c in enumerate(ids) if c not in seen]
            seen.update(ids)
            if not keep:
                continue
            t = t.take(keep) if len(keep) < len(ids) else t
            todo = []
            for j, (cid, img) in enumerate(zip(t.column("case_id").to_pylist(), t.column("image").to_pylist())):
                h, thumb = hash_case(img)
                if h is not None:
                    out.hashes.add(cid, h, thumb)
                out.where[cid] = (rg, j)
                if case_key(cid) not in done:
                    todo.append(cid)
            if out.staged:
                if rg % ROW_GROUPS_PER_FILE == 0:  # a new staging file: the last one's metadata goes
                    stack.close()
                    fh = stack.enter_context(storage.open_write(staged_file(staged_uri, rg)[0]))
                    writer = stack.enter_context(pq.ParquetWriter(fh, sch, **records.parquet_options(sch)))
                writer.write_table(t, row_group_size=len(t))
                if todo:
                    out.blocks.append((rg, todo))
            rg += 1
    out.hashes.seal()
    return out


def staged_file(staged_uri: str, row_group: int) -> tuple[str, int]:
    """(file, row group in it) of staging row group ``row_group``: the staging table is written
    as files of ``ROW_GROUPS_PER_FILE`` row groups, ``<staged_uri stem>-00000.parquet`` on.

    Parameters
    ----------
    staged_uri : str
        URI of the staging table (``.parquet`` suffix optional).
    row_group : int
        Index of the staging row group, counted over all files.

    Returns
    -------
    file : str
        URI of the staging file holding it.
    row_group : int
        Its index within that file.
    """
    stem = staged_uri[: -len(".parquet")] if staged_uri.endswith(".parquet") else staged_uri
    return f"{stem}-{row_group // ROW_GROUPS_PER_FILE:05d}.parquet", row_group % ROW_GROUPS_PER_FILE


def read_block(pf: pq.ParquetFile, row_group: int, case_ids: list[str] | None = None,
               columns: list[str] | None = None) -> pa.Table:
    """Row group ``row_group`` of the staging table (only ``case_ids``, when given).

    Parameters
    ----------
    pf : pyarrow.parquet.ParquetFile
        An open staging file.
    row_group : int
        Row group within ``pf``.
    case_ids : list of str or None, optional
        Rows to keep, by case id; None keeps all.
    columns : list of str or None, optional
        Columns to read; None for all.

    Returns
    -------
    pyarrow.Table
        The row group's rows, in file order.
    """
    t = pf.read_row_group(row_group, columns=columns, use_threads=False)
    if case_ids is not None:
        want = set(case_ids)
        t = t.take([i for i, c in enumerate(t.column("case_id").to_pylist()) if c in want])
    return t


class StagedImages:
    """A worker's handle on the staging table: its blocks, and the images other cases borrow
    (insertion recipients, other-type donors), read by range and kept in a small cache; a few
    staging files open at a time."""

    def __init__(self, staged_uri: str, where: dict[str, tuple[int, int]], cache_size: int = 32,
                 open_files: int = 4):
        self.uri, self.where, self.cache_size, self.open_files = staged_uri, where, cache_size, open_files
        self._files: dict[str, tuple] = {}  # uri -> (handle, ParquetFile), least recently used first
        self._cache: dict[str, bytes | None] = {}

    def _file(self, row_group: int) -> tuple[pq.ParquetFile, int]:
        uri, local = staged_file(self.uri, row_group)
        if uri in self._files:
            self._files[uri] = self._files.pop(uri)
        else:
            if len(self._files) >= self.open_files:
                self._files.pop(next(iter(self._files)))[0].close()
            fh = storage.open_read(uri)
            self._files[uri] = (fh, pq.ParquetFile(fh, pre_buffer=False))
        return self._files[uri][1], local

    def block(self, row_group: int, case_ids: list[str]) -> list[dict]:
        return read_block(*self._file(row_group), case_ids).to_pylist()

    def image(self, case_id: str | None) -> bytes | None:
        if case_id is None or case_id not in self.where:
            return None
        if case_id not in self._cache:
            if len(self._cache) >= self.cache_size:
                self._cache.pop(next(iter(self._cache)))
            rg, row = self.where[case_id]
            self._cache[case_id] = read_block(*self._file(rg), columns=["image"]).column("image")[row].as_py()
        return self._cache[case_id]

    def close(self) -> None:
        for fh, _ in self._files.values():
            fh.close()
        self._files = {}


def view_groups(case_ids: list[str]) -> list[list[str]]:
    """Cases in the order their views sort by ``view_id`` (``<case>/<kind>/<tool>``), grouped
    where one id extends another with "/" (their views could interleave, so they are sorted
    together): sorted by ``case_id + "/"``, a group is the run of ids under its first one.

    Parameters
    ----------
    case_ids : list of str
        Case ids, repeats allowed.

    Returns
    -------
    list of list of str
        The distinct ids, grouped, in the final table's order.
    """
    groups: list[list[str]] = []
    prefix = None
    for cid in sorted(set(case_ids), key=lambda c: c + "/"):
        if prefix is not None and (cid + "/").startswith(prefix):
            groups[-1].append(cid)
        else:
            prefix = cid + "/"
            groups.append([cid])
    return groups


def write_views(views_parts: str, qc: pa.Table, case_key, out_uri: str, flush_bytes: int = FLUSH_BYTES) -> int:
    """Stream the views parts into one table at ``out_uri``, sorted by ``view_id``.

    ``qc`` holds the final ``passed``, ``reject_reason`` and ``edit_score`` of every view,
    sorted by ``view_id`` (the QC columns only). Parts are read one group of cases at a time
    (a case's part is ``part-<case_key(case_id)>``); rows gather until ``flush_bytes`` and go
    out as one row group. Returns the number of rows written.

    Parameters
    ----------
    views_parts : str
        URI of the folder of per-case views parts.
    qc : pyarrow.Table
        The QC columns of every view, sorted by ``view_id``.
    case_key : callable
        case_id -> its part key (str).
    out_uri : str
        URI of the table to write.
    flush_bytes : int, optional
        Buffered Arrow bytes at which a row group is written.

    Returns
    -------
    int
        The number of rows written.

    Raises
    ------
    MedScopeError
        If the parts do not match ``qc`` view for view (they changed during the build).
    """
    sch = records.schema("views")
    pos, buffered, size = 0, [], 0
    with storage.open_write(out_uri) as fh:
        writer = pq.ParquetWriter(fh, sch, **records.parquet_options(sch))

        def flush():
            nonlocal buffered, size
            if buffered:
                writer.write_table(pa.concat_tables(buffered), row_group_size=1 << 30)
            buffered, size = [], 0
            # Arrow's allocator (mimalloc) keeps freed pages otherwise, and the row groups'
            # sizes differ, so the driver's resident memory crept up with the table (measured)
            pa.default_memory_pool().release_unused()

        for group in view_groups(qc.column("case_id").to_pylist()):
            t = pa.concat_tables([records.read_table("views", records.part_uri(views_parts, case_key(c)))
                                  for c in group])
            t = t.take(pa.compute.sort_indices(t, [("view_id", "ascending")]))
            final = qc.slice(pos, t.num_rows)
            if t.num_rows != final.num_rows or not t.column("view_id").equals(final.column("view_id")):
                raise MedScopeError(f"the views parts of {group[0]} changed while the build wrote its table")
            pos += t.num_rows
            for name in ("passed", "reject_reason", "edit_score"):
                t = t.set_column(t.schema.get_field_index(name), name, final.column(name))
            t = records.to_table("views", t)
            buffered.append(t)
            size += t.nbytes
            if size >= flush_bytes:
                flush()
        flush()
        writer.close()
    if pos != qc.num_rows:
        raise MedScopeError(f"wrote {pos} of {qc.num_rows} views: the views parts changed during the build")
    return pos
