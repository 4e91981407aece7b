"""Remove cases everywhere (a patient who withdrew consent), with a record of what was removed.

Every Parquet table under the given output folders (cohort tables, views builds with their
per-case parts, eval runs' episode parts, scored runs) loses the rows of the withdrawn cases:
rows whose ``case_id`` is one of them, and rows whose ``view_id`` / ``item_id`` names one of
their views or items (views, episodes, scores, rejects, QC features). Part files that held
only withdrawn rows are deleted, so a resumed job never counts them as done work of a case
that is still there. A views build's split ledger forgets them; its near-copy groups table
(groups too large to pair) says each group's size as the members left, while each member's
distance and correlation stay those to the group's representative, which may be withdrawn
itself (then no row is marked representative) until ``views build`` is rerun. Aggregates computed from the
withdrawn rows (a scored run's metrics and comparisons) cannot be edited row by row: they are
deleted and the record says to rescore; a views build's QC report is rewritten by rerunning
``views build`` (it builds nothing), which the record says too. Each changed folder gets one line appended to its
``removals.jsonl`` (:data:`medscope.io.layout.REMOVALS`).
"""

from __future__ import annotations

import io
import json
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from medscope.io import layout, parts, records, safe_text, storage
from medscope.io.parquet_bytes import parquet_schema
from medscope.seeding import stable_hash

# Columns that name a case, or one of its views / items, in the project's tables.
CASE_COLUMN = "case_id"
DERIVED_COLUMNS = ("view_id", "item_id")
# A views build's near-copy pairs table names its two cases in ``a`` and ``b``.
PAIR_COLUMNS = {layout.ViewsBuild("_").near_copy_pairs.rsplit("/", 1)[-1]: ("a", "b")}
# A views build's near-copy groups table counts each group's cases in every member's row: the
# count is redone from the rows left (file name -> (group column, count column)).
RECOUNT_COLUMNS = {layout.ViewsBuild("_").near_copy_groups.rsplit("/", 1)[-1]: ("group", "group_size")}
# Tables of a scored run that aggregate over cases: removed, to be recomputed by `score`.
AGGREGATES = tuple(uri.rsplit("/", 1)[-1] for uri in (layout.ScoredRun("_").metrics, layout.ScoredRun("_").comparisons))


def _parquet_files(folder: str) -> list[str]:
    """Every Parquet file under ``folder``, at any depth (URIs, sorted)."""
    fs, path = storage.filesystem(folder)
    if not fs.exists(path):
        return []
    prefix = folder.rstrip("/")
    found = [p for p in fs.find(path) if p.endswith(".parquet") and "/.tmp-" not in p]
    return sorted(prefix + p[len(path.rstrip("/")):] for p in found)


def _read(uri: str) -> pa.Table:
    return records.read_parquet(uri)


def derived_ids(folders: list[str], cases: set[str]) -> set[str]:
    """Ids of the withdrawn cases' views and items, from every table that pairs them with a case.

    Parameters
    ----------
    folders : list of str
        Output folders (local paths or URIs) searched for Parquet tables at any depth.
    cases : set of str
        The withdrawn ``case_id`` values.

    Returns
    -------
    set of str
        Non-empty ``view_id`` / ``item_id`` values of rows whose ``case_id`` is withdrawn.
    """
    out: set[str] = set()
    for folder in folders:
        for uri in _parquet_files(folder):
            names = set(parquet_schema(storage.read_bytes(uri)).names)
            cols = [c for c in DERIVED_COLUMNS if c in names]
            if CASE_COLUMN not in names or not cols:
                continue
            t = _read(uri).select([CASE_COLUMN, *cols])
            hit = t.filter(pc.is_in(t[CASE_COLUMN], value_set=pa.array(sorted(cases), pa.string())))
            for c in cols:
                out.update(v for v in hit[c].to_pylist() if v)
    return out


def unmatched_case_ids(case_ids: list[str], folders: list[str]) -> list[str]:
    """The ids among ``case_ids`` that no ``case_id`` column under ``folders`` holds.

    Parameters
    ----------
    case_ids : list of str
        The ids asked to be removed.
    folders : list of str
        Output folders searched for Parquet tables at any depth.

    Returns
    -------
    list of str
        The ids no table names, in the order given (empty when every id names a case).
    """
    wanted = pa.array(sorted(set(case_ids)), pa.string())
    found: set[str] = set()
    for folder in folders:
        for uri in _parquet_files(folder):
            if CASE_COLUMN not in parquet_schema(storage.read_bytes(uri)).names:
                continue
            column = records.read_parquet(uri).column(CASE_COLUMN)
            found.update(v for v in column.filter(pc.fill_null(pc.is_in(column, value_set=wanted), False)).to_pylist())
    return [i for i in case_ids if i not in found]


def _earlier_removals(folders: list[str]) -> dict[str, str]:
    """Case id -> the time of the first ``removals.jsonl`` record that removed it."""
    when: dict[str, str] = {}
    for folder in folders:
        uri = storage.join(folder, layout.REMOVALS)
        if not storage.exists(uri):
            continue
        for line in storage.read_utf8(uri).splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # the record is a log for people; a damaged line does not hide the others
            for case in record.get("cases") or [] if isinstance(record, dict) else []:
                when.setdefault(str(case), str(record.get("at", "?")))
    return when


def unmatched_message(unknown: list[str], asked: int, folders: list[str]) -> str:
    """The one-line error for ids that match no case, each shown as written (``repr``).

    Parameters
    ----------
    unknown : list of str
        The ids no table holds (:func:`unmatched_case_ids`).
    asked : int
        How many ids were given.
    folders : list of str
        The folders searched, named in the message.

    Returns
    -------
    str
        The message: how many of how many ids match no case, the first 20 of them (an id removed
        by an earlier ``cohort remove`` says when), and that nothing was removed.
    """
    earlier = _earlier_removals(folders)
    shown = ", ".join(repr(i) + (f" (removed {earlier[i]})" if i in earlier else "") for i in unknown[:20])
    more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
    return (f"{len(unknown)} of {asked} case id(s) match no case in {', '.join(folders)}: {shown}{more}; "
            "nothing was removed (fix or drop those ids and run again)")


def _table_name(rel: str) -> str:
    """The table a file belongs to: ``episodes/part-1.parquet`` -> ``episodes``, ``cases.parquet``
    -> ``cases``, ``splits.json`` -> ``splits.json``."""
    parts_of = rel.split("/")
    if len(parts_of) > 1 and parts_of[-1].startswith(("part-", "compacted-")):
        return "/".join(parts_of[:-1])
    return parts_of[-1][: -len(".parquet")] if parts_of[-1].endswith(".parquet") else parts_of[-1]


def _drop_mask(t: pa.Table, cases: set[str], derived: set[str], case_columns: tuple[str, ...] = ()):
    """Boolean array: rows that belong to a withdrawn case (``case_columns``: more columns that
    hold case ids)."""
    mask = pa.array([False] * t.num_rows, pa.bool_())
    ids = cases | derived
    for col, values in ((CASE_COLUMN, cases), *((c, cases) for c in case_columns), *((c, ids) for c in DERIVED_COLUMNS)):
        if col in t.column_names and values:
            hit = pc.fill_null(pc.is_in(t[col], value_set=pa.array(sorted(values), pa.string())), False)
            mask = pc.or_(mask, hit)
    return mask


def recount_groups(t: pa.Table, group: str, count: str) -> pa.Table:
    """``t`` with ``count`` redone as the number of rows of each row's ``group`` (the members a
    group has left once withdrawn cases' rows are gone), its type kept.

    Parameters
    ----------
    t : pyarrow.Table
        The rows left, holding the ``group`` and ``count`` columns.
    group : str
        The column naming each row's group.
    count : str
        The column holding the group's size, replaced.

    Returns
    -------
    pyarrow.Table
        ``t`` with the same columns, rows and order; ``count`` recounted.
    """
    sizes = t.group_by(group, use_threads=False).aggregate([([], "count_all")])
    at = pc.index_in(t[group], value_set=sizes[group])
    recount = pc.take(sizes["count_all"], at).cast(t.schema.field(count).type)
    return t.set_column(t.schema.get_field_index(count), t.schema.field(count), recount)


def remove_cases(case_ids: list[str], folders: list[str], reason: str = "withdrawn consent") -> dict:
    """Remove ``case_ids`` from every table under ``folders``; returns (and records) what went.

    Parameters
    ----------
    case_ids : list of str
        The ``case_id`` values to remove.
    folders : list of str
        Output folders (cohorts, views builds, eval and scored runs) whose tables are edited.
    reason : str, optional
        Why the cases go; written into each folder's ``removals.jsonl`` record.

    Returns
    -------
    dict
        ``cases`` (sorted ids), ``reason``, ``folders`` (per folder: ``rows`` removed per file,
        ``deleted_files``, ``rescore``, ``rebuild``), ``views_and_items`` (how many derived ids),
        ``rows_by_table`` (rows removed per table, e.g. ``{"cases": 1, "views": 4}``), ``rows_removed``
        (total), and the sorted folders to ``rescore`` and to ``rebuild``.
    """
    cases = set(case_ids)
    derived = derived_ids(folders, cases)
    summary: dict = {"cases": sorted(cases), "reason": reason, "folders": {}}
    part_names = {f"part-{stable_hash(c)}.parquet" for c in cases}  # per-case parts (views builds)
    for folder in folders:
        changed: dict = {"rows": {}, "deleted_files": [], "rescore": False, "rebuild": False}
        for uri in _parquet_files(folder):
            rel = uri[len(folder.rstrip("/")) + 1:]
            t = _read(uri)
            base = rel.rsplit("/", 1)[-1]
            drop = _drop_mask(t, cases, derived, PAIR_COLUMNS.get(base, ()))
            n = pc.sum(drop).as_py() or 0
            # a compacted file keeps its manifest true: rows, hash, and the keys it absorbed
            if n and parts.is_compacted(base) and parts.filter_compacted(uri, t, pc.invert(drop)):
                changed["rows"][rel] = n
                if n == t.num_rows:
                    changed["deleted_files"].append(rel)
                continue
            if base in part_names or (n and n == t.num_rows and base.startswith("part-")):
                storage.delete(uri)
                changed["deleted_files"].append(rel)
                changed["rows"][rel] = t.num_rows
            elif base in AGGREGATES:
                continue  # summaries over cases, whatever their columns: decided below
            elif n:
                left = t.filter(pc.invert(drop))
                if base in RECOUNT_COLUMNS:  # a group's size counts its members still there
                    left = recount_groups(left, *RECOUNT_COLUMNS[base])
                sink = io.BytesIO()
                pq.write_table(left, sink, compression="zstd")
                storage.write_bytes(uri, sink.getvalue())
                changed["rows"][rel] = n
        if changed["rows"]:  # a folder whose rows changed: its summaries held the withdrawn cases
            for name in AGGREGATES:
                uri = storage.join(folder, name)
                if storage.exists(uri):
                    storage.delete(uri)
                    changed["deleted_files"].append(name)
                    changed["rescore"] = True
        # a views build's QC report names near-copy pairs and thresholds over all cases: a rerun
        # of `views build` (which builds nothing) rewrites it, and its tables, from what is left
        changed["rebuild"] = bool(changed["rows"]) and storage.exists(layout.ViewsBuild(folder).qc_report)
        ledger = layout.ViewsBuild(folder).splits
        if storage.exists(ledger):
            held = safe_text.read_json_object(ledger)
            gone = sorted(cases & set(held))
            if gone:
                storage.write_text(ledger, json.dumps({k: v for k, v in held.items() if k not in cases},
                                                      indent=0, sort_keys=True))
                changed["rows"][ledger.rsplit("/", 1)[-1]] = len(gone)
        if changed["rows"] or changed["deleted_files"]:
            record = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **summary, "folders": None,
                      "removed": changed, "views_and_items": sorted(derived)}
            record.pop("folders")
            uri = storage.join(folder, layout.REMOVALS)
            held = storage.read_utf8(uri) if storage.exists(uri) else ""
            storage.write_text(uri, held + json.dumps(record, sort_keys=True) + "\n")
        summary["folders"][folder] = changed
    summary["views_and_items"] = len(derived)
    by_table: dict[str, int] = {}
    for changed in summary["folders"].values():
        for rel, n in changed["rows"].items():
            name = _table_name(rel)
            by_table[name] = by_table.get(name, 0) + n
    summary["rows_by_table"] = dict(sorted(by_table.items()))
    summary["rows_removed"] = sum(sum(c["rows"].values()) for c in summary["folders"].values())
    summary["rescore"] = sorted(f for f, c in summary["folders"].items() if c["rescore"])
    summary["rebuild"] = sorted(f for f, c in summary["folders"].items() if c["rebuild"])
    return summary
