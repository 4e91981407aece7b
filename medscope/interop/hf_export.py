"""A protocol's items table as a Hugging Face dataset (``medscope export hf``, docs/interop.md).

The dataset is written with the ``datasets`` library (``save_to_disk``), so
``datasets.load_from_disk(out)`` reads it and ``push_to_hub`` publishes it: pixel columns become
``Image`` features (a report-derived question's montages a list of them), the split column becomes
the splits, and every id (item, view, case, patient, group) stays a column, so a reader outside
MedScope can still resample by case as the papers' bootstraps do. Beside it, ``README.md`` is the
dataset card: a YAML header (licence, task, size) and what a user of the benchmark must know, read
from the build folder the items came from: the recipe, the QC pass rates, the crosswalk's
near-copy tiers, which values are MedScope's additions, and the seed paper.

Private items (``private`` set in the items table) never leave unless the caller says so.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa

from medscope.errors import MedScopeError
from medscope.io import layout, parts, records, storage
from medscope.io.parquet_bytes import parquet_file


@dataclass(frozen=True)
class ItemsKind:
    """What ``export hf`` knows of one protocol's items table."""

    table: str  # the records table name
    protocol_package: str  # importing it registers the table
    id_column: str
    seed_paper: str  # the seed paper and section the items come from (/work/shared/seeds index)
    additions_scope: tuple[str, ...]  # medscope.protocols.counterfactual.additions scopes that apply


ITEM_KINDS = (
    ItemsKind("views", "medscope.protocols.counterfactual", "view_id",
              "MedScope: counterfactual lesion erasure, §3.2 (views), §3.3 (QC), §4.1 (near-copy crosswalk)",
              ("views",)),
    ItemsKind("probe_items", "medscope.protocols.organ_presence", "item_id",
              "Priors Over Pixels: organ-presence probing of 3D CT (POPE-style random / popular / adversarial items)",
              ("probe",)),
    ItemsKind("mcq_items", "medscope.protocols.benchmark_mcq", "item_id",
              "Contamination-controlled VQA benchmark from reports and 3D oncology imaging (Methods: montages, "
              "RADS-style and report-derived multiple choice)", ()),
    ItemsKind("pairs", "medscope.protocols.paired_modality", "item_id",
              "Trick-or-Treat: adversarial paired-modality evaluation, §3 (matched / mismatched photographs "
              "sharing one radiograph)", ()),
    ItemsKind("vqa_items", "medscope.protocols.standard_vqa", "item_id",
              "MedScope: counterfactual lesion erasure, §5.6 (standard medical VQA sets: VQA-RAD, SLAKE, PathVQA)", ()),
)
# addition: a table without a split column (probe items, MCQs) is one split of this name; a row whose
# split is null goes to UNASSIGNED (Hugging Face split names must be words)
DEFAULT_SPLIT = "test"
UNASSIGNED = "unassigned"
IMAGE_COLUMNS = ("image", "edit_mask", "mask", "photo", "radiograph")


def _kind_named(table: str) -> ItemsKind:
    for kind in ITEM_KINDS:
        if kind.table == table:
            return kind
    raise MedScopeError(f"export hf: unknown items table {table!r}; known: {', '.join(k.table for k in ITEM_KINDS)}")


def _file_columns(uri: str) -> set[str] | None:
    """The columns of the Parquet table at ``uri`` (a file or the first visible part), or None."""
    if storage.is_dir(uri):
        files = parts.visible_files(uri)
        if not files:
            return None
        uri = files[0]
    if not storage.exists(uri):
        return None
    try:
        return set(parquet_file(storage.read_bytes(uri)).schema_arrow.names)
    except (pa.ArrowInvalid, OSError):
        return None


def detect_items(uri: str) -> tuple[ItemsKind, str]:
    """Which protocol's items table ``uri`` holds, and the table's own URI.

    Parameters
    ----------
    uri : str
        An items table (a Parquet file or part folder) or the build folder holding one.

    Returns
    -------
    kind : ItemsKind
        The first of :data:`ITEM_KINDS` whose required columns the table has.
    table_uri : str
        The table itself (``medscope.io.layout.table_uri``).

    Raises
    ------
    MedScopeError
        When ``uri`` holds none of the items tables.
    """
    import importlib

    for kind in ITEM_KINDS:
        if kind.table == "pairs":  # a manifest, not a table (is_pair_set)
            continue
        importlib.import_module(kind.protocol_package)  # registers its tables
        table_uri = layout.table_uri(kind.table, uri)
        columns = _file_columns(table_uri)
        if columns is None:
            continue
        required = {f.name for f in records.schema(kind.table) if not f.nullable}
        renamed = {records.old_column(records.schema(kind.table), c) or c for c in required}
        if required <= columns or renamed <= columns:
            return kind, table_uri
    raise MedScopeError(f"export hf: {uri} holds no items table MedScope exports "
                        f"({', '.join(k.table for k in ITEM_KINDS)})")


def is_pair_set(uri: str) -> bool:
    """Whether ``uri`` is a paired-modality pair set (a ``manifest.yaml`` or the folder holding one).

    Parameters
    ----------
    uri : str
        What ``--items`` named.

    Returns
    -------
    bool
        True when it names a YAML manifest that exists.
    """
    from medscope.protocols.paired_modality.manifest import manifest_uri

    manifest = manifest_uri(uri)
    return manifest.endswith((".yaml", ".yml")) and storage.exists(manifest)


def pair_set_table(uri: str) -> tuple[pa.Table, Counter]:
    """A pair set's photographs as rows (what ``eval run --protocol paired_modality`` evaluates).

    Parameters
    ----------
    uri : str
        The manifest or its folder.

    Returns
    -------
    table : pyarrow.Table
        One row per good photograph: ``item_id``, ``case_id`` (the condition: its two photographs share
        the radiograph), ``condition``, ``photo_type``, ``body_region``, ``caption``, ``findings``,
        ``radiograph_findings``, ``photo`` and ``radiograph`` (PNG), ``private``, ``endpoint_allowlist``.
    rejects : collections.Counter
        The manifest's refused entries by reason (``manifest.read_manifest``).

    References
    ----------
    .. [1] paired-modality paper, §3.
    """
    from medscope.protocols.paired_modality.manifest import read_manifest

    photos, rejects = read_manifest(uri)
    rows = [{"item_id": p.item_id, "case_id": p.condition, "condition": p.condition, "photo_type": p.photo_type,
             "body_region": p.body_region, "caption": p.caption, "findings": [f.name for f in p.findings],
             "radiograph_findings": p.radiograph_findings, "photo": p.photo_png, "radiograph": p.radiograph_png,
             "private": p.private, "endpoint_allowlist": list(p.endpoint_allowlist)} for p in photos]
    schema = pa.schema([("item_id", pa.string()), ("case_id", pa.string()), ("condition", pa.string()),
                        ("photo_type", pa.string()), ("body_region", pa.string()), ("caption", pa.string()),
                        ("findings", pa.list_(pa.string())), ("radiograph_findings", pa.string()),
                        ("photo", pa.binary()), ("radiograph", pa.binary()), ("private", pa.bool_()),
                        ("endpoint_allowlist", pa.list_(pa.string()))])
    return pa.Table.from_pylist(rows, schema=schema), Counter(r["reason"] for r in rejects)


def private_count(table: pa.Table) -> int:
    """How many rows of an items table are private (``private`` true).

    Parameters
    ----------
    table : pyarrow.Table
        An items table.

    Returns
    -------
    int
        Rows whose ``private`` is true (0 when the table has no such column).
    """
    if "private" not in table.column_names:
        return 0
    return sum(1 for v in table.column("private").to_pylist() if v)


def _with_montages(items: pa.Table, table_uri: str) -> pa.Table:
    """MCQ items with their montages' PNGs, in the order each question shows them (column ``images``)."""
    folder = layout.folder_of("mcq_items", table_uri)
    montages = records.read_table("montages", layout.table_uri("montages", folder))
    by_key: dict[tuple, bytes] = {}
    for row in montages.select(["case_id", "sequence", "cohort", "image"]).to_pylist():
        by_key[(row["cohort"], row["case_id"], row["sequence"])] = row["image"]
        by_key.setdefault((None, row["case_id"], row["sequence"]), row["image"])
    images = []
    for row in items.select(["item_id", "case_id", "cohort", "sequences"]).to_pylist():
        shown = []
        for seq in row["sequences"]:
            png = by_key.get((row["cohort"], row["case_id"], seq)) or by_key.get((None, row["case_id"], seq))
            if png is None:
                raise MedScopeError(f"export hf: item {row['item_id']} shows montage {row['case_id']}/{seq}, "
                                    f"which is not in {folder}'s montages")
            shown.append(png)
        images.append(shown)
    return items.append_column("images", pa.array(images, pa.list_(pa.binary())))


def to_dataset_dict(table: pa.Table, by_split: bool = True):
    """The items as a ``datasets.DatasetDict``: one split per value of the split column.

    Parameters
    ----------
    table : pyarrow.Table
        The items (conformed to their schema; MCQs with their ``images`` column).
    by_split : bool, optional
        One split per value of the split column (default); False: every row in :data:`DEFAULT_SPLIT`.

    Returns
    -------
    datasets.DatasetDict
        Split name -> dataset in table order; pixel columns as ``Image`` features (``images`` as a
        list of them). Rows with a null split go to :data:`UNASSIGNED`; a table without a split column
        is one :data:`DEFAULT_SPLIT` split.
    """
    import datasets
    from datasets.table import InMemoryTable

    datasets.disable_progress_bars()  # a verb prints its summary, not a bar per split saved

    if by_split and "split" in table.column_names:
        names = [s or UNASSIGNED for s in table.column("split").to_pylist()]
    else:
        names = [DEFAULT_SPLIT] * table.num_rows
    out = {}
    for split in dict.fromkeys(names):
        rows = pa.array([n == split for n in names])
        ds = datasets.Dataset(InMemoryTable(table.filter(rows)))
        for column in IMAGE_COLUMNS:
            if column in table.column_names:
                ds = ds.cast_column(column, datasets.Image())
        if "images" in table.column_names:
            ds = ds.cast_column("images", datasets.Sequence(datasets.Image()))
        out[split] = ds
    return datasets.DatasetDict(out)


def _json_at(uri: str) -> dict | None:
    if not storage.exists(uri):
        return None
    try:
        data = json.loads(storage.read_utf8(uri))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def recipe_lines(table: pa.Table, folder: str) -> list[str]:
    """The card's recipe section: the build folder's recorded recipe, and the recipe hashes rows carry.

    Parameters
    ----------
    table : pyarrow.Table
        The items (all rows the build wrote).
    folder : str
        The build folder the items came from.

    Returns
    -------
    list of str
        Markdown lines.
    """
    lines = []
    recorded = _json_at(layout.ViewsBuild(folder).recipe)
    if recorded:
        recipe = recorded.get("recipe", recorded)
        name = recipe.get("name") if isinstance(recipe, dict) else None
        lines.append(f"- recipe recorded by the build (`recipe.json`){': ' + str(name) if name else ''}"
                     + (f", hash `{recorded['recipe_hash']}`" if recorded.get("recipe_hash") else ""))
        lines.append("")
        lines.append("```json")
        lines.append(json.dumps(recipe, indent=2, sort_keys=True, default=str))
        lines.append("```")
    if "recipe_hash" in table.column_names:
        hashes = Counter(table.column("recipe_hash").to_pylist())
        lines.append("- recipe hash of the rows: " + ", ".join(f"`{h}` ({n} rows)" for h, n in sorted(hashes.items())))
    return lines or ["- the build folder records no recipe for this table"]


def qc_lines(table: pa.Table, folder: str, refused: Counter | None = None) -> list[str]:
    """The card's QC section: pass rates with their n (per view kind where the table has one), and the
    build's rejects by reason.

    Parameters
    ----------
    table : pyarrow.Table
        The items (all rows the build wrote, passed or not).
    folder : str
        The build folder the items came from.
    refused : collections.Counter or None, optional
        Entries the items' reader refused, by reason (a pair set's manifest); None: read the build's
        rejects table.

    Returns
    -------
    list of str
        Markdown lines.
    """
    lines = []
    if refused is not None:
        lines.append(f"- {table.num_rows} photographs kept, {sum(refused.values())} manifest entries refused"
                     + (": " + ", ".join(f"{r} {n}" for r, n in sorted(refused.items())) if refused else ""))
        return lines
    if "passed" in table.column_names:
        passed = table.column("passed").to_pylist()
        kinds = table.column("kind").to_pylist() if "kind" in table.column_names else ["all"] * len(passed)
        lines += ["| kind | passed | built | pass rate |", "|---|---:|---:|---:|"]
        for kind in sorted(set(kinds)):
            n = sum(1 for k in kinds if k == kind)
            p = sum(1 for k, ok in zip(kinds, passed) if k == kind and ok)
            lines.append(f"| {kind} | {p} | {n} | {p / n:.3f} |")
        n, p = len(passed), sum(1 for ok in passed if ok)
        if n:
            lines.append(f"| all | {p} | {n} | {p / n:.3f} |")
        lines += ["", "Only passed rows are in this dataset."]
    else:
        lines.append(f"- the table holds the {table.num_rows} items its build kept (no per-row QC column)")
    rejects_uri = layout.table_uri("rejects", folder)
    if storage.exists(rejects_uri) and rejects_uri != folder.rstrip("/"):
        try:
            reasons = Counter(records.read_table("rejects", rejects_uri, columns=["reason"]).column("reason").to_pylist())
        except MedScopeError:
            reasons = Counter()
        if reasons:
            lines.append("- rejected by the build, by reason: "
                         + ", ".join(f"{r} {n}" for r, n in sorted(reasons.items())))
    return lines


def near_copy_lines(folder: str) -> list[str]:
    """The card's crosswalk section: hash-close pairs of cases by near-copy tier, with n.

    Parameters
    ----------
    folder : str
        The build folder (its ``near_copy_pairs.parquet``, medscope.views.plan).

    Returns
    -------
    list of str
        Markdown lines.
    """
    uri = layout.ViewsBuild(folder).near_copy_pairs
    if not storage.exists(uri):
        return ["- the build folder records no near-copy crosswalk"]
    tiers = Counter(records.read_table("near_copy_pairs", uri, columns=["tier"]).column("tier").to_pylist())
    n = sum(tiers.values())
    lines = [f"{n} hash-close pairs of cases (counterfactual paper §4.1); cases of one pair share a `group_id`, "
             "so resample by `group_id` to keep near copies together:", "",
             "| tier | pairs |", "|---|---:|"]
    lines += [f"| {t} | {c} |" for t, c in sorted(tiers.items())]
    return lines


def additions_lines(kind: ItemsKind) -> list[str]:
    """The card's additions section: the values MedScope chose where the seed paper is silent.

    Parameters
    ----------
    kind : ItemsKind
        The items' kind (its ``additions_scope``).

    Returns
    -------
    list of str
        Markdown lines: the additions of its scopes (medscope.protocols.counterfactual.additions) and the
        export's own.
    """
    from medscope.protocols.counterfactual.additions import ADDITIONS

    mine = [a for a in ADDITIONS if a.scope in kind.additions_scope]
    lines = ["| value | set to | why |", "|---|---|---|"]
    lines += [f"| {a.id} | {a.value} | {a.why} |" for a in mine]
    lines.append(f"| export split names | a null split is `{UNASSIGNED}`; a table without splits is "
                 f"`{DEFAULT_SPLIT}` | Hugging Face splits must be named |")
    return lines


def dataset_card(table: pa.Table, exported: pa.Table, kind: ItemsKind, folder: str, licence: str,
                 splits: dict[str, int], private_note: str, refused: Counter | None = None) -> str:
    """The dataset card (``README.md``): YAML header, then what a user of the benchmark must know.

    Parameters
    ----------
    table : pyarrow.Table
        Every row of the items table (the QC section counts them all).
    exported : pyarrow.Table
        The rows exported.
    kind : ItemsKind
        The items' kind.
    folder : str
        The build folder the items came from.
    licence : str
        The licence identifier the user chose (Hugging Face's ``license`` field).
    splits : dict of str to int
        Rows per split exported.
    private_note : str
        What happened to private items.
    refused : collections.Counter or None, optional
        A pair set's refused manifest entries by reason (:func:`qc_lines`).

    Returns
    -------
    str
        The card's Markdown.
    """
    n = exported.num_rows
    size = next(s for limit, s in ((1e3, "n<1K"), (1e4, "1K<n<10K"), (1e5, "10K<n<100K"), (math.inf, "n>100K"))
                if n < limit)
    header = ["---", f"license: {licence}", f"pretty_name: MedScope {kind.table}", "task_categories:",
              "- visual-question-answering", "tags:", "- medical", "- medscope", f"- {kind.table}",
              "size_categories:", f"- {size}", "---"]
    ids = [c for c in exported.column_names if c.endswith("_id")]
    body = [
        f"# MedScope {kind.table}", "",
        f"Exported by `medscope export hf` from `{folder}`: {n} items; "
        + ", ".join(f"{s} {c}" for s, c in splits.items()) + ".", "",
        f"- seed paper: {kind.seed_paper}",
        f"- licence: {licence} (set by the exporter; the images keep their sources' terms)",
        f"- ids kept for clustering: {', '.join(ids)}; resample by `case_id` (or `group_id` / `patient_id`) as the "
        "papers' bootstraps do, never by row",
        f"- private items: {private_note}", "",
        "## Recipe", "", *recipe_lines(table, folder), "",
        "## QC pass rates", "", *qc_lines(table, folder, refused), "",
        "## Near-copy crosswalk", "", *near_copy_lines(folder), "",
        "## Additions", "",
        "Values MedScope set where the seed paper gives none (each marked `addition:` in MedScope's code):", "",
        *additions_lines(kind), "",
        "## Loading", "", "```python", "import datasets", "ds = datasets.load_from_disk(PATH)",
        "# or, once pushed: ds.push_to_hub(REPO) and datasets.load_dataset(REPO)", "```", "",
    ]
    return "\n".join(header + [""] + body)


def export_hf(items: str, out: str, licence: str, allow_private: bool = False, skip_private: bool = False) -> dict:
    """Write an items table as a Hugging Face dataset with its card.

    Parameters
    ----------
    items : str
        An items table (views, probe items, MCQ items, VQA items) or the build folder holding it, or a
        paired-modality pair set (its ``manifest.yaml`` or folder).
    out : str
        A local folder: the dataset (``save_to_disk``) and ``README.md``.
    licence : str
        The licence field of the card (e.g. ``cc-by-4.0``, ``other``).
    allow_private : bool, optional
        Export private items too (the user says they may leave).
    skip_private : bool, optional
        Leave private items out (counted in the card).

    Returns
    -------
    dict
        ``table``, ``out``, ``items`` (rows exported), ``splits`` (rows per split), ``private_left_out``.

    Raises
    ------
    MedScopeError
        When ``items`` holds no items table, ``out`` is not local, the licence is empty, or private
        items are present and neither flag is given.

    References
    ----------
    .. [1] counterfactual paper, §3.2-§3.3 (views, QC), §4.1 (near-copy crosswalk), §3.9 (case-clustered bootstrap).
    .. [2] paired-modality paper, §3 (pair sets).
    """
    if not licence or not licence.strip():
        raise MedScopeError("export hf: --license is required (the dataset card's licence field, e.g. cc-by-4.0)")
    local = storage.local_path(out)
    if local is None:
        raise MedScopeError(f"export hf: --out must be a local folder (got {out}); push_to_hub from there")
    refused = None
    if is_pair_set(items):
        from medscope.protocols.paired_modality.manifest import manifest_uri

        kind, folder = _kind_named("pairs"), posixpath.dirname(manifest_uri(items))
        table, refused = pair_set_table(items)
    else:
        kind, table_uri = detect_items(items)
        table = records.read_table(kind.table, table_uri)
        folder = layout.folder_of(kind.table, table_uri)
    exported = table
    if "passed" in table.column_names:
        exported = exported.filter(pa.array([bool(v) for v in exported.column("passed").to_pylist()]))
    n_private = private_count(exported)
    if n_private and not (allow_private or skip_private):
        raise MedScopeError(f"export hf: {n_private} of {exported.num_rows} items are private (their items table "
                            "says so); pass --allow-private if they may leave, or --skip-private to leave them out")
    note = "none in the table"
    if n_private and skip_private and not allow_private:
        exported = exported.filter(pa.array([not v for v in exported.column("private").to_pylist()]))
        note = f"{n_private} private items left out"
    elif n_private:
        note = f"{n_private} private items included (the exporter said they may leave)"
    if kind.table == "mcq_items":
        exported = _with_montages(exported, table_uri)
    dataset = to_dataset_dict(exported)
    splits = {name: ds.num_rows for name, ds in dataset.items()}
    dataset.save_to_disk(local)
    card = dataset_card(table, exported, kind, folder, licence.strip(), splits, note, refused)
    storage.write_text(storage.join(out, "README.md"), card)
    return {"table": kind.table, "out": out, "items": exported.num_rows, "splits": splits,
            "private_left_out": n_private if note.endswith("left out") else 0}
