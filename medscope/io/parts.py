"""Part folders and their compaction: many write-once parts -> a few large Parquet files.

A resumable job writes one ``part-<key>.parquet`` per unit of work (an episode, a probe item,
a question). At the scale of a real sweep that is 100,000+ objects, and listing or reading
them one by one on S3 is slow and costly (docs/scaling.md, "Objects and bytes written").
:func:`compact_folder` folds the parts into a few size-targeted files named
``part-compacted-<seq>-<digest>.parquet`` beside them, and records in the folder's manifest
(:data:`medscope.io.layout.COMPACTION`, JSON) which part keys each absorbed, its row count per
part and its SHA-256.

What a reader sees (:func:`visible_files`) is decided by the manifest, which is the commit
point: the compacted files it names, plus every plain part it does not name. Compaction runs
in this order, per output file:

1. write the compacted file (atomic: a local rename or one S3 PUT);
2. rewrite the manifest naming it and the keys it absorbed (atomic, the commit);
3. delete the absorbed parts.

A crash after 1 leaves a compacted file no manifest names: readers ignore it and the next
compaction deletes it. A crash after 2 leaves parts the manifest has absorbed: readers ignore
them and the next compaction deletes them. No row is ever lost or counted twice, and the set
of finished keys (:func:`part_keys`: absorbed keys plus plain parts) is the same at every
point, so a resumed job re-runs nothing. One compactor per folder at a time; job writers may
keep adding parts meanwhile (a part written after the listing is simply left for next time).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import time

import pyarrow as pa
import pyarrow.parquet as pq

from medscope.errors import MedScopeError
from medscope.io import layout, safe_text, storage
from medscope.io.parquet_bytes import parquet_file, read_parquet_bytes

PREFIX = "part-"
COMPACTED = "part-compacted-"
SUFFIX = ".parquet"
TARGET_BYTES = 128 * 2**20


def _name(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1]


def _key(name: str) -> str:
    return name[len(PREFIX):-len(SUFFIX)]


def is_compacted(name: str) -> bool:
    """Whether a file name is a compacted file's (not a unit's part).

    Parameters
    ----------
    name : str
        A file name or URI.

    Returns
    -------
    bool
        True when its last path component starts with ``part-compacted-``.
    """
    return _name(name).startswith(COMPACTED)


def manifest(folder: str) -> dict:
    """The folder's compaction manifest: ``{"version": 1, "files": [...]}`` (no files if none).

    Each file entry: ``name``, ``rows``, ``bytes``, ``sha256`` (of the file's bytes),
    ``compacted_at`` and ``parts``: ``[[key, rows], ...]`` in the order their rows sit in it.

    Parameters
    ----------
    folder : str
        The part folder.

    Returns
    -------
    dict
        The parsed manifest, or ``{"version": 1, "files": []}`` when the folder has none.
    """
    uri = storage.join(folder, layout.COMPACTION)
    if not storage.exists(uri):
        return {"version": 1, "files": []}
    return safe_text.read_json_object(uri)


def absorbed_keys(held: dict) -> set[str]:
    """The part keys every compacted file of a manifest absorbed.

    Parameters
    ----------
    held : dict
        A manifest (:func:`manifest`).

    Returns
    -------
    set of str
        The keys of every entry's ``parts``.
    """
    return {key for entry in held["files"] for key, _ in entry["parts"]}


def _listing(folder: str) -> list[tuple[str, int]]:
    """(URI, size in bytes) of the Parquet files directly under ``folder``: one listing."""
    fs, path = storage.filesystem(folder)
    storage._invalidate(fs, path)
    try:
        infos = fs.ls(path, detail=True)
    except FileNotFoundError:
        return []
    out = []
    for info in infos:
        base = _name(info["name"])
        if info.get("type") == "directory" or base.startswith(".tmp-") or not base.endswith(SUFFIX):
            continue
        out.append((storage.join(folder, base), int(info.get("size") or 0)))
    return sorted(out)


def _classify(folder: str) -> tuple[dict, list, list, list, list]:
    """(manifest, committed compacted files, orphan compacted files, live parts, absorbed parts)."""
    held = manifest(folder)
    named = {e["name"] for e in held["files"]}
    absorbed = absorbed_keys(held)
    committed, orphans, live, stale = [], [], [], []
    listing = _listing(folder)
    gone = sorted(named - {_name(uri) for uri, _ in listing})
    if gone:
        # its parts were deleted when it was committed: reading on (or resuming) without it would
        # silently lose those rows, or skip their units as finished (issue 51)
        rows = sum(e["rows"] for e in held["files"] if e["name"] in gone)
        raise MedScopeError(
            f"{folder}: compacted file {', '.join(gone)} named in {layout.COMPACTION} is missing ({rows} rows); "
            f"restore it from a copy of the run, or delete its entry from {layout.COMPACTION} and rerun the "
            f"verb that wrote the folder to redo those units")
    for uri, size in listing:
        base = _name(uri)
        if is_compacted(base):
            (committed if base in named else orphans).append((uri, size))
        elif base.startswith(PREFIX):
            (stale if _key(base) in absorbed else live).append((uri, size))
    return held, committed, orphans, live, stale


def visible_files(folder: str) -> list[str]:
    """The Parquet files a reader of this part folder reads (sorted): committed compacted files
    and plain parts no compaction absorbed. One listing and one manifest read.

    Parameters
    ----------
    folder : str
        The part folder.

    Returns
    -------
    list of str
        Sorted URIs; empty when the folder does not exist.
    """
    _, committed, _, live, _ = _classify(folder)
    return sorted(uri for uri, _ in committed + live)


def part_keys(folder: str) -> set[str]:
    """Keys of the finished units under ``folder``: the keys absorbed by compaction plus those of
    the plain parts. What a resumed job skips; the same before, during and after compaction.

    Parameters
    ----------
    folder : str
        The part folder.

    Returns
    -------
    set of str
        The finished keys.
    """
    held, _, _, live, _ = _classify(folder)
    return absorbed_keys(held) | {_key(_name(uri)) for uri, _ in live}


def has_part(folder: str, key: str) -> bool:
    """Whether unit ``key`` is finished under ``folder`` (its part, or absorbed by compaction).

    Parameters
    ----------
    folder : str
        The part folder.
    key : str
        The unit's key.

    Returns
    -------
    bool
        True when ``part-<key>.parquet`` exists or the manifest lists ``key`` as absorbed.
    """
    if storage.exists(storage.join(folder, f"{PREFIX}{key}{SUFFIX}")):
        return True
    return storage.exists(storage.join(folder, layout.COMPACTION)) and key in absorbed_keys(manifest(folder))


def _write_manifest(folder: str, held: dict) -> None:
    storage.write_text(storage.join(folder, layout.COMPACTION), json.dumps(held, indent=1, sort_keys=True))


def _delete(uris: list[str]) -> None:
    """Delete files in bulk (one DeleteObjects request per 1,000 keys on S3)."""
    if not uris:
        return
    fs, _ = storage.filesystem(uris[0])
    paths = [storage.filesystem(u)[1] for u in uris]
    fs.rm(paths)
    for p in paths:
        storage._invalidate(fs, p)


def _fetch(uris: list[str], in_flight: int = 64) -> list[bytes]:
    """The bytes of ``uris``, in order. On S3 (an async filesystem) up to ``in_flight`` GETs at
    once, one request each (``fs.cat`` on a list would first send a HEAD per object)."""
    fs, _ = storage.filesystem(uris[0])
    paths = [storage.filesystem(u)[1] for u in uris]
    if not getattr(fs, "async_impl", False):
        return [fs.cat_file(p) for p in paths]
    from fsspec.asyn import sync

    async def fetch_all():
        gate = asyncio.Semaphore(in_flight)

        async def one(p):
            async with gate:
                return await fs._cat_file(p, max_concurrency=1)  # small parts: no HEAD for the size first

        return await asyncio.gather(*(one(p) for p in paths))

    return list(sync(fs.loop, fetch_all))


def _read_parts(uris: list[str]) -> list[pa.Table]:
    return [read_parquet_bytes(b) for b in _fetch(uris)]


def write_compacted(folder: str, batch: list[str], tables: list[pa.Table], seq: int) -> dict:
    """Step 1: concatenate ``tables`` (the parts ``batch`` names, in order) into one new
    compacted file; returns its manifest entry. Parts written under older schemas are unified
    (missing nullable columns become nulls; readers cast to the current schema as for parts).

    Parameters
    ----------
    folder : str
        The part folder.
    batch : list of str
        URIs of the parts, in order.
    tables : list of pyarrow.Table
        Their contents, in the same order.
    seq : int
        Sequence number of the new file (zero-padded to six digits in its name).

    Returns
    -------
    dict
        The manifest entry: ``name`` (``part-compacted-<seq>-<12 hex of sha256>.parquet``), ``rows``,
        ``bytes``, ``sha256``, ``compacted_at`` (UTC, ISO 8601) and ``parts`` (``[[key, rows], ...]``).
    """
    # every column nullable first: parts from before a column's rename hold the old one, parts
    # after it the new one, and each reads as nulls in the other's rows (records.conform joins them)
    tables = [t.cast(pa.schema([f.with_nullable(True) for f in t.schema], metadata=t.schema.metadata)) for t in tables]
    table = pa.concat_tables(tables, promote_options="permissive")
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    data = sink.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    name = f"{COMPACTED}{seq:06d}-{digest[:12]}{SUFFIX}"
    storage.write_bytes(storage.join(folder, name), data)
    return {"name": name, "rows": table.num_rows, "bytes": len(data), "sha256": digest,
            "compacted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "parts": [[_key(_name(u)), t.num_rows] for u, t in zip(batch, tables)]}


def commit(folder: str, held: dict, entry: dict) -> dict:
    """Step 2: the manifest names the new file and the keys it absorbed (the commit point).

    Parameters
    ----------
    folder : str
        The part folder.
    held : dict
        The current manifest.
    entry : dict
        The new file's entry (:func:`write_compacted`).

    Returns
    -------
    dict
        The manifest written: ``held``'s files plus ``entry``.
    """
    held = {"version": 1, "files": [*held["files"], entry]}
    _write_manifest(folder, held)
    return held


def delete_absorbed(batch: list[str]) -> None:
    """Step 3: delete the parts a committed compacted file absorbed.

    Parameters
    ----------
    batch : list of str
        URIs of the absorbed parts (all on one filesystem).
    """
    _delete(batch)


def _batches(uris: list[str], target_bytes: int, max_parts: int | None, chunk: int = 64):
    """(part URIs, their tables) per compacted file: parts are read ``chunk`` at a time until
    their rows hold ``target_bytes`` (Arrow, uncompressed) or ``max_parts`` parts."""
    i = 0
    while i < len(uris):
        batch: list[str] = []
        tables: list[pa.Table] = []
        size = 0
        while i < len(uris) and size < target_bytes and not (max_parts and len(batch) >= max_parts):
            step = min(chunk, max_parts - len(batch)) if max_parts else chunk
            got = _read_parts(uris[i:i + step])
            batch += uris[i:i + step]
            tables += got
            size += sum(t.nbytes for t in got)
            i += step
        yield batch, tables


def compact_folder(folder: str, target_bytes: int = TARGET_BYTES, max_parts: int | None = None) -> dict:
    """Compact one part folder; returns counts. Idempotent: a folder with no plain parts left
    (and no leftovers of an interrupted compaction) is not touched.

    Parameters
    ----------
    folder : str
        The part folder.
    target_bytes : int, optional
        Uncompressed Arrow size at which a compacted file is closed. Default :data:`TARGET_BYTES`
        (128 MiB).
    max_parts : int or None, optional
        Most parts per compacted file; None for no limit.

    Returns
    -------
    dict
        ``folder``, ``parts_compacted``, ``files_written``, ``compacted_files`` (in the manifest now),
        ``rows`` (in them) and ``leftovers_removed`` (orphan compacted files and absorbed parts deleted).
    """
    held, committed, orphans, live, stale = _classify(folder)
    # leftovers of an interrupted compaction: uncommitted files, parts already absorbed
    _delete([u for u, _ in orphans] + [u for u, _ in stale])
    seq = 1 + max((int(_name(u)[len(COMPACTED):].split("-")[0]) for u, _ in committed), default=-1)
    written = []
    for batch, tables in _batches([u for u, _ in live], target_bytes, max_parts):
        entry = write_compacted(folder, batch, tables, seq)
        held = commit(folder, held, entry)
        delete_absorbed(batch)
        written.append(entry["name"])
        seq += 1
    return {"folder": folder, "parts_compacted": len(live), "files_written": len(written),
            "compacted_files": len(held["files"]), "rows": sum(e["rows"] for e in held["files"]),
            "leftovers_removed": len(orphans) + len(stale)}


def part_folders(run_folder: str) -> list[str]:
    """The part-file tables of an output folder (episodes/, rejects/, probe_items/, items/,
    montages/ directly under it), or the folder itself when it is one.

    Parameters
    ----------
    run_folder : str
        An output folder, or a part folder.

    Returns
    -------
    list of str
        ``[run_folder]`` when it has Parquet files directly under it and all are parts; else the existing
        part-table folders under it, sorted by name.
    """
    names = {m for t in layout.PART_TABLES for m in layout.TABLE_MEMBERS.get(t, ()) if not m.endswith(SUFFIX)}
    own = [_name(u) for u, _ in _listing(run_folder)]
    if own and all(n.startswith(PREFIX) for n in own):
        return [run_folder]
    return [storage.join(run_folder, n) for n in sorted(names) if storage.is_dir(storage.join(run_folder, n))]


def compact(run_folder: str, target_bytes: int = TARGET_BYTES, max_parts: int | None = None) -> list[dict]:
    """Compact every part folder of an output folder (:func:`part_folders`).

    Parameters
    ----------
    run_folder : str
        An output folder, or a part folder.
    target_bytes : int, optional
        As for :func:`compact_folder`.
    max_parts : int or None, optional
        As for :func:`compact_folder`.

    Returns
    -------
    list of dict
        One :func:`compact_folder` summary per part folder.
    """
    return [compact_folder(f, target_bytes, max_parts) for f in part_folders(run_folder)]


def verify(folder: str) -> list[str]:
    """Problems with a folder's compacted files: a file missing, or whose bytes, row count or
    per-part rows differ from the manifest. Empty when all is well.

    Parameters
    ----------
    folder : str
        The part folder.

    Returns
    -------
    list of str
        One line per problem, ``"<file>: ..."``.
    """
    problems = []
    for entry in manifest(folder)["files"]:
        uri = storage.join(folder, entry["name"])
        if not storage.exists(uri):
            problems.append(f"{entry['name']}: missing")
            continue
        data = storage.read_bytes(uri)
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            problems.append(f"{entry['name']}: sha256 differs from the manifest (the file was changed)")
            continue  # its bytes may not parse at all; the hash already says it is not the file written
        rows = parquet_file(data).metadata.num_rows
        if rows != entry["rows"] or rows != sum(n for _, n in entry["parts"]):
            problems.append(f"{entry['name']}: {rows} rows, manifest says {entry['rows']}")
    return problems


def filter_compacted(uri: str, table: pa.Table, keep) -> bool:
    """Keep only rows ``keep`` (a boolean array) of committed compacted file ``uri`` (``table``
    is its content), updating the manifest: its rows, hash and the keys it absorbed (a key whose
    rows all went is forgotten, so a resumed job would run it again, as for a deleted part).
    Returns False (and does nothing) when ``uri`` is not a committed compacted file.

    Parameters
    ----------
    uri : str
        The compacted file.
    table : pyarrow.Table
        Its content.
    keep : array_like of bool
        One flag per row of ``table``.

    Returns
    -------
    bool
        True when the file was filtered (or deleted, when no row is kept); False when the manifest does
        not name it.
    """
    folder = uri.rstrip("/").rsplit("/", 1)[0]
    held = manifest(folder)
    entries = [e for e in held["files"] if e["name"] == _name(uri)]
    if not entries:
        return False
    entry = entries[0]
    flags = [bool(v) for v in pa.array(keep).to_pylist()]
    parts, start = [], 0
    for key, rows in entry["parts"]:
        kept = sum(flags[start:start + rows])
        start += rows
        if kept or not rows:
            parts.append([key, kept])
    kept_table = table.filter(pa.array(flags, pa.bool_()))
    if not parts:  # nothing of it left: forget it first (an unnamed file is ignored), then delete
        _write_manifest(folder, {"version": 1, "files": [e for e in held["files"] if e is not entry]})
        storage.delete(uri)
        return True
    sink = io.BytesIO()
    pq.write_table(kept_table, sink, compression="zstd")
    data = sink.getvalue()
    storage.write_bytes(uri, data)
    updated = {**entry, "rows": kept_table.num_rows, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
               "parts": parts}
    _write_manifest(folder, {"version": 1, "files": [updated if e is entry else e for e in held["files"]]})
    return True
