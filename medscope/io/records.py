"""Arrow schemas of the shared MedScope tables (docs/design.md, "Tables"), the registry a
protocol adds its own tables to (``register_table``, called from ``protocols/<name>/tables.py``
or a protocol's own module), and the readers / writers of both.

A table is stored either as one Parquet file or as a folder of write-once part files
(``part-<key>.parquet``) that a resumable job fills one unit at a time. Writers validate
against the schema (columns, types, non-null fields and enumerated values) before a byte
is written, so a bad row fails the writer, never a later reader.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from medscope.io import layout, parts, storage
from medscope.errors import MedScopeError
from medscope.io.parquet_bytes import parquet_file, read_parquet_bytes
from medscope.io.table_values import check_fractions

BOX = pa.list_(pa.int32())  # [x1, y1, x2, y2]; pixels in tables, 0-1000 in model replies
TURN = pa.struct([("role", pa.string()), ("text", pa.string()), ("image_ref", pa.string())])

VIEW_KINDS = (
    "original",
    "target_removal",
    "random_removal",
    "unmatched_control",
    "degraded",
    "natural_negative",
    "insertion",
)
ENUMS: dict[str, dict[str, tuple[str, ...]]] = {
    "cases": {
        "question_kind": ("presence", "health", "open"),
        "split": ("train", "validation", "test"),
    },
    "views": {
        "kind": VIEW_KINDS,
        "expected": ("present", "absent", "clarify"),
        "split": ("train", "validation", "test"),
    },
    "episodes": {"action": ("answer", "refer", "clarify", "unparseable", "unclear"),
                 "reading": ("format", "json", "rules", "judge")},
    "vqa_items": {"answer_type": ("closed", "open"), "split": ("train", "validation", "test")},
    # medscope.qc.near_copies.TIERS (not imported here: it pulls in the image libraries)
    "near_copy_pairs": {"tier": ("identical", "near_copy", "shared_anatomy", "hash_only")},
}

PRIVACY = [  # every item table carries its privacy (the sweep's allow-list check)
    pa.field("private", pa.bool_(), nullable=False),
    pa.field("endpoint_allowlist", pa.list_(pa.string())),
]

SCHEMAS: dict[str, pa.Schema] = {
    "cases": pa.schema(
        [
            pa.field("case_id", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("imaging_type", pa.string(), nullable=False),
            pa.field("patient_id", pa.string()),
            pa.field("group_id", pa.string()),
            pa.field("split", pa.string()),
            pa.field("image", pa.binary(), nullable=False),
            pa.field("mask", pa.binary()),
            pa.field("width", pa.int32(), nullable=False),
            pa.field("height", pa.int32(), nullable=False),
            pa.field("finding", pa.string(), nullable=False),
            pa.field("question", pa.string(), nullable=False),
            pa.field("question_kind", pa.string(), nullable=False),
            pa.field("has_lesion", pa.bool_(), nullable=False),
            pa.field("critical", pa.bool_(), nullable=False),
            pa.field("lesion_area_frac", pa.float64(), nullable=False),
            pa.field("lesion_bbox", BOX),
            pa.field("source_file", pa.string()),
            *PRIVACY,
        ]
    ),
    "views": pa.schema(
        [
            pa.field("view_id", pa.string(), nullable=False),
            pa.field("case_id", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("tool", pa.string(), nullable=False),
            pa.field("degradation", pa.string()),
            pa.field("image", pa.binary()),
            pa.field("edit_mask", pa.binary()),
            pa.field("expected", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("imaging_type", pa.string(), nullable=False),
            pa.field("patient_id", pa.string()),
            pa.field("group_id", pa.string()),
            pa.field("split", pa.string()),
            pa.field("finding", pa.string(), nullable=False),
            pa.field("question", pa.string(), nullable=False),
            pa.field("question_kind", pa.string(), nullable=False),
            pa.field("critical", pa.bool_(), nullable=False),
            pa.field("lesion_area_frac", pa.float64(), nullable=False),
            pa.field("lesion_bbox", BOX),
            pa.field("width", pa.int32(), nullable=False),
            pa.field("height", pa.int32(), nullable=False),
            pa.field("contrast_before", pa.float64()),
            pa.field("contrast_after", pa.float64()),
            pa.field("edit_score", pa.float64()),
            pa.field("lesion_untouched", pa.bool_()),
            pa.field("passed", pa.bool_(), nullable=False),
            pa.field("reject_reason", pa.string()),
            pa.field("recipe_hash", pa.string(), nullable=False),
            *PRIVACY,
        ]
    ),
    "episodes": pa.schema(
        [
            pa.field("run_id", pa.string(), nullable=False),
            pa.field("protocol", pa.string(), nullable=False),
            pa.field("model", pa.string(), nullable=False),
            pa.field("condition", pa.string(), nullable=False),
            pa.field("item_id", pa.string(), nullable=False),  # the protocol's item: a view, a question, a slice
            pa.field("case_id", pa.string(), nullable=False),
            pa.field("request_key", pa.string(), nullable=False),
            pa.field("prompt_version", pa.string(), nullable=False),
            pa.field("decoding", pa.string(), nullable=False),
            pa.field("turns", pa.list_(TURN)),
            pa.field("raw_text", pa.string()),
            pa.field("action", pa.string(), nullable=False),
            pa.field("answer", pa.string()),
            pa.field("claims_finding", pa.bool_()),
            pa.field("box", BOX),
            pa.field("confidence", pa.float64()),
            pa.field("tool_calls", pa.int32(), nullable=False),
            pa.field("input_tokens", pa.int64(), nullable=False),
            pa.field("output_tokens", pa.int64(), nullable=False),
            pa.field("cost_usd", pa.float64(), nullable=False),
            # seconds from each request sent to its reply, summed over the episode's requests and
            # attempts (tables written before queued_s also counted the wait for the rate limiter)
            pa.field("latency_s", pa.float64(), nullable=False),
            pa.field("attempts", pa.int32(), nullable=False),
            pa.field("error", pa.string()),
            # seconds waited for the provider's shared rate limiter before sending (null in tables
            # written before it, and for an episode that never went through a limiter's wrapper)
            pa.field("queued_s", pa.float64()),
            # nullable, so tables written before it read as null: how the decision was read --
            # format (<final> tag), json (bare JSON action), rules (free text), judge.
            pa.field("reading", pa.string()),
            # the reader's rule that decided (medscope.answers.matching.RULES) and the text that decided,
            # or why the reading is unclear (action "unclear": the reader did not commit; left out of every n)
            pa.field("reading_rule", pa.string()),
            pa.field("reading_note", pa.string()),
        ]
    ),
    # One free-text reply read by the rules and by a judge model (medscope judge-replies).
    "reply_judgements": pa.schema(
        [
            pa.field("model", pa.string(), nullable=False),
            pa.field("condition", pa.string(), nullable=False),
            pa.field("item_id", pa.string(), nullable=False),
            pa.field("judge", pa.string(), nullable=False),  # the judge model's name
            pa.field("rubric", pa.string(), nullable=False),  # rubric version
            pa.field("rules_decision", pa.string(), nullable=False),
            pa.field("judge_decision", pa.string()),  # null: the judge's reply was unreadable
            pa.field("evidence", pa.string()),
        ]
    ),
    "metrics": pa.schema(
        [
            pa.field("model", pa.string(), nullable=False),
            pa.field("condition", pa.string(), nullable=False),
            pa.field("test_set", pa.string(), nullable=False),
            pa.field("breakdown", pa.string(), nullable=False),  # "all" or "imaging_type=..."
            pa.field("metric", pa.string(), nullable=False),
            pa.field("value", pa.float64()),
            pa.field("ci_low", pa.float64()),
            pa.field("ci_high", pa.float64()),
            pa.field("n_cases", pa.int64(), nullable=False),
            # Added by stats (nullable): a row with ``reference`` set is a paired difference
            # model - reference over shared cases, with its bootstrap p (0.0 = no resample
            # crossed zero, reported as "< 2/B"); n_boot is B.
            pa.field("reference", pa.string()),
            pa.field("p_value", pa.float64()),
            pa.field("n_boot", pa.int64()),
            # the point value's ratios as text ("14/100", "30/100 - 10/100"; a difference: the
            # model's, then the reference's negated), read back exactly by
            # medscope.analysis.exact so decision rules are decided by the counts (nullable:
            # metrics that are not ratios, and tables written before it)
            pa.field("counts", pa.string()),
        ]
    ),
    "volumes": pa.schema(
        [
            pa.field("case_id", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("patient_id", pa.string()),
            pa.field("split", pa.string()),
            pa.field("image_uri", pa.string(), nullable=False),
            pa.field("label_uri", pa.string(), nullable=False),
            pa.field("shape", pa.list_(pa.int32()), nullable=False),
            pa.field("spacing", pa.list_(pa.float64()), nullable=False),
            pa.field("orientation", pa.string(), nullable=False),  # axis codes, e.g. "RAS"
            pa.field("organ_map", pa.string(), nullable=False),  # JSON {label: organ name}
            *PRIVACY,
        ]
    ),
    # Standard medical-VQA questions (VQA-RAD, SLAKE, PathVQA; the counterfactual paper §5.6): one row per
    # released question; several rows may share one image (same image_file, same image bytes).
    "vqa_items": pa.schema(
        [
            pa.field("item_id", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("split", pa.string()),
            pa.field("image_file", pa.string(), nullable=False),
            pa.field("image", pa.binary(), nullable=False),
            pa.field("question", pa.string(), nullable=False),
            pa.field("answer", pa.string(), nullable=False),
            pa.field("answer_type", pa.string(), nullable=False),  # closed | open
            pa.field("modality", pa.string()),
            pa.field("content_type", pa.string()),
            pa.field("released_id", pa.string()),
            *PRIVACY,
        ]
    ),
    "rejects": pa.schema(
        [
            pa.field("table", pa.string(), nullable=False),  # what the row would have become
            pa.field("source", pa.string(), nullable=False),
            pa.field("item_id", pa.string(), nullable=False),  # file, case or view id
            pa.field("stage", pa.string(), nullable=False),  # load, view, qc, eval, ...
            pa.field("reason", pa.string(), nullable=False),  # short, countable
            pa.field("detail", pa.string()),
            # the exception's class (or "InputRejected": a MedScope check), to group rows by cause
            pa.field("error_class", pa.string()),
        ]
    ),
    # a views build's near-copy crosswalk (medscope.views.plan): every hash-close pair of
    # cases, a < b, sorted by (a, b); too many for the QC report at scale
    "near_copy_pairs": pa.schema(
        [
            pa.field("a", pa.string(), nullable=False),  # case ids
            pa.field("b", pa.string(), nullable=False),
            pa.field("distance", pa.int32(), nullable=False),  # dHash bits apart
            pa.field("correlation", pa.float64(), nullable=False),  # of the 64 px thumbnails
            pa.field("tier", pa.string(), nullable=False),
        ]
    ),
    # a views build's hash-close groups too large to pair (medscope.views.plan): every member,
    # sorted by group, then case id; each group is one near-copy group
    "near_copy_groups": pa.schema(
        [
            pa.field("case_id", pa.string(), nullable=False),
            pa.field("group", pa.int32(), nullable=False),  # 0, 1, ... in order of the representatives
            pa.field("group_size", pa.int64(), nullable=False),  # cases in the group
            pa.field("representative", pa.bool_(), nullable=False),  # the group's smallest case id
            pa.field("distance", pa.int32(), nullable=False),  # dHash bits from the representative
            pa.field("correlation", pa.float64(), nullable=False),  # 64 px thumbnails, to the representative
        ]
    ),
}


# The tables above are shared: written or read by more than one protocol or verb. A protocol's
# own tables are registered from inside its folder (``register_table``), when its package is
# imported; this map only lets a lookup made too early name the package to import (a protocol
# missing from it still works: the error then says how to make its tables known).
SHARED = frozenset(SCHEMAS)
DECLARED_IN = {
    **dict.fromkeys(("probe_items", "probe_scores", "slices"), "medscope.protocols.organ_presence"),
    **dict.fromkeys(("mcq_items", "montages", "mcq_scores", "mcq_tests"), "medscope.protocols.benchmark_mcq"),
    "vqa_scores": "medscope.protocols.standard_vqa",
    "scores": "medscope.analysis",
}
_DECLARED_BY: dict[str, str] = {}  # registered table -> the module that registered it


def register_table(name: str, sch: pa.Schema, *, declared_by: str, enums: Mapping | None = None,
                   files: Sequence[str] | None = None, part_files: bool = False) -> pa.Schema:
    """Declare a protocol's own table: its schema, the enumerated values its writer checks
    (``{column: allowed values}``), and the names it has inside the output folders that hold it
    (``files``; default ``<name>.parquet``; ``part_files``: a folder of write-once parts).

    Called at import time from the protocol's folder (``tables.py``), so importing the protocol
    (as ``--protocol`` does) makes its tables readable and writable by name. ``declared_by`` is
    the registering module's ``__name__``. A shared table's name, or a name another module has
    registered with another schema, is refused; the same module registering it again (a reload)
    replaces its registration.

    Parameters
    ----------
    name : str
        The table's name.
    sch : pyarrow.Schema
        Its schema.
    declared_by : str
        The registering module's ``__name__``.
    enums : mapping of str to sequence of str or None, optional
        ``{column: allowed values}`` checked by :func:`validate`; None for none.
    files : sequence of str or None, optional
        Its names inside the output folders that hold it; None for ``("<name>.parquet",)``.
    part_files : bool, optional
        Whether it is written as a folder of write-once parts. Default False.

    Returns
    -------
    pyarrow.Schema
        ``sch``.

    Raises
    ------
    MedScopeError
        When ``name`` is a shared table, or another module registered it with another schema.
    """
    if name in SHARED:
        raise MedScopeError(f"table {name!r} is a shared table; {declared_by} cannot redeclare it")
    owner = _DECLARED_BY.get(name)
    if owner is not None and owner != declared_by and not SCHEMAS[name].equals(sch):
        raise MedScopeError(f"table {name!r} is already declared by {owner} with another schema; "
                            f"{declared_by} must name its table differently")
    SCHEMAS[name] = sch
    ENUMS[name] = {k: tuple(v) for k, v in (enums or {}).items()}
    _DECLARED_BY[name] = declared_by
    layout.register_table_files(name, tuple(files or (f"{name}.parquet",)), part_files)
    return sch


def declared_by(name: str) -> str | None:
    """The module that registered table ``name`` (None: a shared table, or not registered).

    Parameters
    ----------
    name : str
        A table's name.

    Returns
    -------
    str or None
        The registering module's name.
    """
    return _DECLARED_BY.get(name)


def schema(name: str) -> pa.Schema:
    """The Arrow schema of table ``name``.

    Parameters
    ----------
    name : str
        The table's name (a shared table or one a protocol registered).

    Returns
    -------
    pyarrow.Schema
        The registered schema.

    Raises
    ------
    MedScopeError
        For an unknown table: naming the protocol to import when the name is a known protocol table,
        else listing the shared and registered tables.
    """
    try:
        return SCHEMAS[name]
    except KeyError:
        home = DECLARED_IN.get(name)
        if home:
            owner = (f"the {home.rsplit('.', 1)[-1]} protocol's own table" if home.startswith("medscope.protocols.")
                     else f"declared in {home}")
            raise MedScopeError(f"table {name!r} is {owner}, registered when {home} is imported: import it first") from None
        registered = sorted(set(SCHEMAS) - SHARED)
        raise MedScopeError(
            f"unknown table {name!r}: not a shared table ({', '.join(sorted(SHARED))}) and no imported protocol "
            f"declares it (registered: {', '.join(registered) or 'none'}); a protocol's own tables are known once "
            "its module is imported (medscope.protocols.<name>, or the module of --protocol module:Class)") from None


def empty(name: str) -> pa.Table:
    """A zero-row table of ``name``.

    Parameters
    ----------
    name : str
        The table's name (a shared table or one a protocol registered).

    Returns
    -------
    pyarrow.Table
        No rows, the table's schema.

    Raises
    ------
    MedScopeError
        For an unknown table (:func:`schema`).
    """
    return schema(name).empty_table()


def to_table(name: str, rows: Iterable[Mapping] | pa.Table) -> pa.Table:
    """Rows (dicts) or a table -> a validated table with exactly the schema's columns.

    Parameters
    ----------
    name : str
        The table's name (a shared table or one a protocol registered).
    rows : iterable of mapping or pyarrow.Table
        Row dicts (keys a subset of the schema's columns; missing ones are null), or a table holding at
        least the schema's non-nullable columns (a missing nullable one is null; extra columns are dropped).

    Returns
    -------
    pyarrow.Table
        The rows cast to the schema, its columns in the schema's order, checked by :func:`validate`.

    Raises
    ------
    MedScopeError
        For missing columns, unknown row fields, values that do not fit the types, or a broken
        :func:`validate` rule.
    """
    sch = schema(name)
    if isinstance(rows, pa.Table):
        # a nullable column the table lacks is null, as it reads from a file (conform): a
        # column added to a schema later does not break the tables built before it
        for f in sch:
            if f.nullable and f.name not in rows.column_names:
                rows = rows.append_column(f.name, pa.nulls(rows.num_rows, f.type))
        missing = [f.name for f in sch if f.name not in rows.column_names]
        if missing:
            raise MedScopeError(f"{name} table lacks column(s): {', '.join(missing)}")
        table = rows.select(sch.names)
        try:
            table = table.cast(sch)
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as err:
            raise MedScopeError(f"{name} table has a column of the wrong type: {err}") from None
    else:
        rows = list(rows)
        for i, row in enumerate(rows):
            unknown = set(row) - set(sch.names)
            if unknown:
                raise MedScopeError(f"{name} row {i} has unknown field(s): {sorted(unknown)}")
        try:
            table = pa.Table.from_pylist(rows, schema=sch) if rows else sch.empty_table()
        except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
            raise MedScopeError(f"{name} rows do not fit the schema: {err}") from None
    validate(name, table)
    return table


def validate(name: str, table: pa.Table) -> None:
    """Raise MedScopeError if ``table`` breaks the schema's non-null, enum or fraction rules.

    Parameters
    ----------
    name : str
        The table's name (a shared table or one a protocol registered).
    table : pyarrow.Table
        A table with every column of the schema.

    Raises
    ------
    MedScopeError
        Naming the first broken rule: a bad fraction
        (:func:`medscope.io.table_values.check_fractions`), nulls in a non-nullable column, or a value
        outside a column's enumeration.
    """
    check_fractions(name, table)
    sch = schema(name)
    for field in sch:
        col = table.column(field.name)
        if not field.nullable and col.null_count:
            raise MedScopeError(f"{name}.{field.name} must not be null ({col.null_count} nulls)")
    for column, allowed in ENUMS.get(name, {}).items():
        values = {v for v in table.column(column).to_pylist() if v is not None}
        bad = sorted(values - set(allowed))
        if bad:
            raise MedScopeError(
                f"{name}.{column} has value(s) {bad}; allowed: {', '.join(allowed)}"
            )


ROW_GROUP_BYTES = 16 * 2**20

# Parquet compresses and decodes a column a data page at a time, and the writer closes a page
# only between mini-batches of ``write_batch_size`` rows (1,024 by default): a table of images
# under 1,024 rows would hold all of them in one page, which a reader must hold whole. Tables
# with a binary (pixel) column are written in mini-batches of this many rows, so that a
# reader streaming them (``tablescan.iter_tables``) holds about 1 MB or a few images at a time.
PIXEL_WRITE_BATCH_ROWS = 16


def parquet_options(sch: pa.Schema) -> dict:
    """Writer options of a MedScope table: zstd, and small pages where it holds pixels.

    Parameters
    ----------
    sch : pyarrow.Schema
        The table's schema.

    Returns
    -------
    dict
        Keyword arguments of ``pq.write_table``: ``compression="zstd"``, and for a schema with a binary
        column ``write_batch_size`` = :data:`PIXEL_WRITE_BATCH_ROWS` and dictionary encoding for the
        non-binary columns only.
    """
    options = {"compression": "zstd"}
    pixels = [f.name for f in sch if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
    if pixels:
        options["write_batch_size"] = PIXEL_WRITE_BATCH_ROWS
        # encoded images never repeat: a dictionary page of them is one more page held whole
        options["use_dictionary"] = [f.name for f in sch if f.name not in pixels]
    return options


def to_parquet_bytes(table: pa.Table) -> bytes:
    """Parquet bytes; a table over ROW_GROUP_BYTES in memory is cut into row groups of about
    that size, so a reader that wants a few rows by id (a sweep's worker fetching its items,
    ``medscope.io.tablescan``) reads a few groups, not the whole image column. A smaller table is
    one row group, as before.

    Parameters
    ----------
    table : pyarrow.Table
        The table to write.

    Returns
    -------
    bytes
        The Parquet file (:func:`parquet_options`).
    """
    sink = io.BytesIO()
    rows = table.num_rows
    per_group = max(1, int(rows * ROW_GROUP_BYTES / table.nbytes)) if table.nbytes > ROW_GROUP_BYTES else None
    pq.write_table(table, sink, row_group_size=per_group, **parquet_options(table.schema))
    return sink.getvalue()


def write_table(name: str, rows: Iterable[Mapping] | pa.Table, uri: str) -> pa.Table:
    """Validate and write a whole table to ``uri`` (one Parquet file), atomically.

    Parameters
    ----------
    name : str
        The table's name (a shared table or one a protocol registered).
    rows : iterable of mapping or pyarrow.Table
        Row dicts (keys a subset of the schema's columns; missing ones are null), or a table holding at
        least the schema's non-nullable columns (a missing nullable one is null; extra columns are dropped).
    uri : str
        The Parquet file to write (path or URI); replaced if it exists.

    Returns
    -------
    pyarrow.Table
        The validated table written.

    Raises
    ------
    MedScopeError
        When the rows do not make a valid table (:func:`to_table`).
    """
    table = to_table(name, rows)
    storage.write_bytes(uri, to_parquet_bytes(table))
    return table


def write_part(name: str, rows: Iterable[Mapping] | pa.Table, folder_uri: str, key: str) -> bool:
    """Write one write-once part file ``part-<key>.parquet`` under ``folder_uri``.

    Returns False (and writes nothing) when the part already exists: a resumed job never
    overwrites finished work.

    Parameters
    ----------
    name : str
        The table's name (a shared table or one a protocol registered).
    rows : iterable of mapping or pyarrow.Table
        Row dicts (keys a subset of the schema's columns; missing ones are null), or a table holding at
        least the schema's non-nullable columns (a missing nullable one is null; extra columns are dropped).
    folder_uri : str
        The part folder.
    key : str
        The unit's key.

    Returns
    -------
    bool
        True when this call wrote the part.

    Raises
    ------
    MedScopeError
        When the rows do not make a valid table (:func:`to_table`).
    """
    table = to_table(name, rows)
    return storage.write_once(part_uri(folder_uri, key), to_parquet_bytes(table))


def part_uri(folder_uri: str, key: str) -> str:
    """URI of the part file of unit ``key``.

    Parameters
    ----------
    folder_uri : str
        The part folder.
    key : str
        The unit's key.

    Returns
    -------
    str
        ``<folder_uri>/part-<key>.parquet``.
    """
    return storage.join(folder_uri, f"part-{key}.parquet")


def part_keys(folder_uri: str) -> set[str]:
    """Keys of the finished units under part folder ``folder_uri``: its part files and the keys
    compaction absorbed (``medscope.io.parts``). A resumed job skips exactly these.

    Parameters
    ----------
    folder_uri : str
        The part folder.

    Returns
    -------
    set of str
        The finished keys (:func:`medscope.io.parts.part_keys`).
    """
    return parts.part_keys(folder_uri)


def has_part(folder_uri: str, key: str) -> bool:
    """Whether unit ``key`` is finished under ``folder_uri`` (its part, or absorbed by compaction).

    Parameters
    ----------
    folder_uri : str
        The part folder.
    key : str
        The unit's key.

    Returns
    -------
    bool
        True when the unit is finished.
    """
    return parts.has_part(folder_uri, key)


def read_table(name: str, uri: str, columns: Sequence[str] | None = None) -> pa.Table:
    """Read table ``name`` from a Parquet file, a folder of part files (sorted by file name; the
    compacted files and remaining parts ``medscope.io.parts.visible_files`` names), or the output
    folder a verb wrote that holds it (``medscope.io.layout.table_uri``).

    Parameters
    ----------
    name : str
        The table's name (a shared table or one a protocol registered).
    uri : str
        A Parquet file, a folder of part files, or an output folder holding the table.
    columns : sequence of str or None, optional
        Columns to return; None for every column of the schema.

    Returns
    -------
    pyarrow.Table
        The table conformed to the schema (:func:`conform`); an empty part folder gives an empty table.

    Raises
    ------
    MedScopeError
        When there is no such table at ``uri`` or a file is not readable Parquet or not this table.
    """
    sch = schema(name)
    uri = layout.require(name, uri)
    if storage.is_dir(uri):
        files = parts.visible_files(uri)
        pieces = [_read_one(f, sch, columns) for f in files]
        if not pieces:
            table = sch.empty_table()
            return table.select(list(columns)) if columns else table
        return pa.concat_tables(pieces)
    if not storage.exists(uri):
        raise MedScopeError(f"no {name} table at {uri}")
    return _read_one(uri, sch, columns)


def read_parquet(uri: str, columns: Sequence[str] | None = None) -> pa.Table:
    """One Parquet file from any URI, read on this thread (no Arrow thread pool starts:
    ``medscope.io.parquet_bytes`` says why that matters).

    Parameters
    ----------
    uri : str
        The Parquet file (path or URI).
    columns : sequence of str or None, optional
        Columns to read; None for all.

    Returns
    -------
    pyarrow.Table
        The file's table, as stored (not conformed to a schema).

    Raises
    ------
    MedScopeError
        When there is no file.
    """
    return read_parquet_bytes(storage.read_bytes(uri), columns)


# Columns renamed after tables were written, {table: {new name: old name}}: a file written under
# the old name reads under the new one, so the runs of earlier releases still score, report and
# resume (docs/design.md "Renamed in 0.2").
RENAMED_COLUMNS: dict[str, dict[str, str]] = {
    "episodes": {"item_id": "view_id"},
    "reply_judgements": {"item_id": "view_id"},
}


def _renamed(sch: pa.Schema) -> dict[str, str]:
    return RENAMED_COLUMNS.get(next((n for n, s in SCHEMAS.items() if s is sch), ""), {})


def old_column(sch: pa.Schema, column: str) -> str | None:
    """The name ``column`` of schema ``sch`` had in files written before it was renamed, if any.

    Parameters
    ----------
    sch : pyarrow.Schema
        A registered table's schema.
    column : str
        A column of ``sch``.

    Returns
    -------
    str or None
        Its earlier name (``RENAMED_COLUMNS``), or None when it was never renamed.
    """
    return _renamed(sch).get(column)


def file_columns(sch: pa.Schema, present: Collection[str], columns: Sequence[str] | None) -> list[str] | None:
    """The columns to read from a file holding ``present`` for ``columns`` of ``sch``.

    Parameters
    ----------
    sch : pyarrow.Schema
        The table's schema.
    present : collection of str
        The columns the file holds.
    columns : sequence of str or None
        The columns wanted (None: all).

    Returns
    -------
    list of str or None
        Those of ``columns`` the file holds, plus the earlier name of a renamed one when the file
        holds that (``conform`` renames it); None (every column) when ``columns`` is None.
    """
    if not columns:
        return None
    out = [c for c in columns if c in present]
    for c in columns:
        old = old_column(sch, c)
        if old and old in present and old not in out:
            out.append(old)
    return out


def _read_one(uri: str, sch: pa.Schema, columns: Sequence[str] | None) -> pa.Table:
    try:
        pf = parquet_file(storage.read_bytes(uri))
        table = pf.read(columns=file_columns(sch, set(pf.schema_arrow.names), columns), use_threads=False)
    except (pa.ArrowInvalid, OSError) as err:
        raise MedScopeError(f"{uri} is not a readable Parquet file: {err}") from None
    return conform(table, sch, columns, uri)


def _cast_column(values: pa.ChunkedArray, field: pa.Field, uri: str) -> pa.ChunkedArray:
    """``values`` cast to ``field``'s type, or one MedScopeError naming the file and the column.
    A number or a bool where text belongs is refused rather than cast: Arrow would turn a
    question column of 1, 2, 3 into the questions "1", "2", "3" (issue 51, fresh campaign).
    Whole numbers in an id column (``*_id``: a hospital's numeric patient ids) read as their
    decimal text, which loses nothing.
    """
    text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
    numeric_id = pa.types.is_integer(values.type) and field.name.endswith("_id")
    if text and not numeric_id and (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
                                    or pa.types.is_boolean(values.type)):
        raise MedScopeError(f"{uri}: column {field.name!r} holds {values.type} values where text belongs; "
                            "write it as strings")
    try:
        return values.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as err:
        raise MedScopeError(f"{uri}: column {field.name!r} ({values.type}) cannot be read as {field.type}: "
                            f"{err}") from None


def conform(table: pa.Table, sch: pa.Schema, columns: Sequence[str] | None, uri: str) -> pa.Table:
    """``table`` (read from ``uri``) as exactly ``columns`` of schema ``sch`` (all when None).

    Parameters
    ----------
    table : pyarrow.Table
        A table as read.
    sch : pyarrow.Schema
        The table's schema.
    columns : sequence of str or None
        Wanted columns; None for the whole schema.
    uri : str
        Where it was read from, for the errors.

    Returns
    -------
    pyarrow.Table
        The wanted columns in order, cast to the schema's types; a nullable column the file lacks
        reads as nulls.

    Raises
    ------
    MedScopeError
        When a column is missing or cannot be cast, or a fraction column holds a bad value.
    """
    target = pa.schema([sch.field(c) for c in columns]) if columns else sch
    for new, old in _renamed(sch).items():
        if old in table.column_names:
            # a compacted file of old and new parts holds both: each row has one of them
            values = table.column(old)
            if new in table.column_names:
                values = pc.coalesce(table.column(new), values.cast(table.schema.field(new).type))
                table = table.drop_columns([new])
            table = table.drop_columns([old]).append_column(new, values)
    for field in target:
        # A nullable column added to a schema after a table was written reads as nulls, so
        # finished work from before the change stays readable (and resumable).
        if field.nullable and field.name not in table.column_names:
            table = table.append_column(field.name, pa.nulls(table.num_rows, field.type))
    missing = [name for name in target.names if name not in table.column_names]
    if missing:
        raise MedScopeError(f"{uri} does not hold the expected table: no column {', '.join(map(repr, missing))}")
    table = table.select(target.names)
    for field in target:
        table = table.set_column(table.schema.get_field_index(field.name), field,
                                 _cast_column(table.column(field.name), field, uri))
    check_fractions(next((n for n, s in SCHEMAS.items() if s is sch), ""), table, uri)
    return table


def reject_row(table: str, source: str, item_id: str, stage: str, reason: str, detail: str = "",
           error_class: str | None = None) -> dict:
    """One rejects row. ``reason`` is a short countable label; ``detail`` the particulars;
    ``error_class`` the exception's class (``bounded_io.error_class``).

    Parameters
    ----------
    table : str
        The table the item would have gone into.
    source : str
        The dataset's source name.
    item_id : str
        The rejected item (usually a file's relative path).
    stage : str
        Where it was refused (e.g. ``load``, ``ignored``).
    reason : str
        The short countable reason.
    detail : str, optional
        The particulars; ``""`` is stored as null.
    error_class : str or None, optional
        The exception's class, or ``InputRejected``.

    Returns
    -------
    dict
        A ``rejects`` row: ``table``, ``source``, ``item_id``, ``stage``, ``reason``, ``detail``,
        ``error_class``.
    """
    return {
        "table": table,
        "source": source,
        "item_id": item_id,
        "stage": stage,
        "reason": reason,
        "detail": detail or None,
        "error_class": error_class,
    }


def __getattr__(name: str):
    # 0.1's name, for a cohort loader or protocol written outside the package against it
    if name == "reject":
        import warnings

        warnings.warn("medscope.io.records.reject is now reject_row; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return reject_row
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
