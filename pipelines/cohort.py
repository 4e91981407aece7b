"""``medscope cohort import | phantom | show`` and the job ``python -m pipelines.cohort --config F``.

Import reads one dataset layout (``medscope.cohorts``) and writes ``<out>/cases.parquet``
(or ``<out>/volumes.parquet`` for NIfTI) with ``<out>/rejects.parquet`` beside it. Phantom
writes the generated cohort. Show counts what a cohort holds.

An import's outputs are one unit: ``<out>/import.json`` says ``writing`` before the first
table is touched (tables of an earlier import are removed then) and ``complete`` with the
list of this run's files after the last, so a failed import never leaves new cases beside
stale rejects; ``show`` refuses a folder whose import did not finish. Rejects rows of stage
``ignored`` (files that are neither image nor mask) are counted apart from true rejects.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Literal

from pydantic import Field as F

from medscope import cohorts
from medscope.io import folder_lock, layout, records, safe_text, storage
from medscope.cohorts import phantom
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.io.parquet_bytes import parquet_schema
from pipelines.support.flags import add_action, cli
from pipelines.support.jobs import Progress, job_main, print_summary

# Output file names of an import folder (to move to medscope/io/layout.py when it lands).
TABLE_FILES = layout.Cohort.FILES
IGNORED_STAGE = "ignored"


class CohortImportConfig(StrictModel):
    """``medscope cohort import``: one dataset layout read into a cases (or volumes) table."""

    format: Literal[cohorts.FORMATS] = F(description="the dataset's layout")  # type: ignore[valid-type]
    path: str = F(description="dataset folder (path or URI)")
    out: str = F(description="output folder URI")
    dataset_config: str | None = F(None, description="dataset YAML overlaid on configs/datasets/<format>.yaml")
    dataset: dict = F({}, description="inline dataset overrides (YAML mapping), applied last")


# addition: the most phantom cases and volumes one command generates (no paper sets one). The
# phantom is built in memory before it is written; --cases 1000000000 grew to 5 GB in a minute and
# ran until killed (issue 51). Ten thousand cases and a thousand volumes are far past any demo or
# bench; a larger cohort is grown in batches (--batch).
MAX_PHANTOM_CASES = 10_000
MAX_PHANTOM_VOLUMES = 1_000


class CohortPhantomConfig(StrictModel):
    """``medscope cohort phantom``: the seeded phantom cohort (2D cases + CT volumes)."""

    format: Literal["phantom"] = F("phantom", description="phantom (so a job file of cohort import's keys may "
                                                          "name it: python -m pipelines.cohort)")
    out: str = F(description="output folder URI")
    cases: int = F(48, ge=1, le=MAX_PHANTOM_CASES,
                   description=f"2D cases to generate (at most {MAX_PHANTOM_CASES:,})")
    seed: int = F(0, description="generator seed")
    volumes: int = F(4, ge=0, le=MAX_PHANTOM_VOLUMES,
                     description=f"CT volumes to generate (at most {MAX_PHANTOM_VOLUMES:,})")
    batch: int = F(1, ge=1, description="2, 3, ...: add a later batch of `cases` new cases (and a near-copy of an "
                                        "earlier case) to the phantom cohort already in --out: a growing cohort")


class CohortRemoveConfig(StrictModel):
    """``medscope cohort remove``: withdrawn cases out of every table of the given folders."""

    cases: str = F(description="case ids, comma-separated, or @FILE with one id a line")
    folders: list[str] = F(description="output folders: cohort, views builds, eval runs, scored runs",
                           json_schema_extra=cli(nargs="+", aliases=("--from",), metavar="FOLDER"))
    reason: str = F("withdrawn consent", description="kept in each folder's removals.jsonl")


class CohortShowConfig(StrictModel):
    """``medscope cohort show``: counts of a cohort."""

    uri: str = F(description="a cases / volumes file or a cohort folder", json_schema_extra=cli(positional=True))


class CohortJobConfig(StrictModel):
    """``python -m pipelines.cohort --config F``: one import (or the phantom) per job; the keys of
    ``cohort import`` (or, with ``format: phantom``, of ``cohort phantom``), so either verb's
    ``--config`` takes the same file."""

    format: Literal[cohorts.FORMATS + ("phantom",)] = F(  # type: ignore[valid-type]
        description="the dataset's layout, or phantom")
    out: str = F(description="output folder URI")
    path: str | None = F(None, description="dataset folder (path or URI; not for phantom)")
    dataset_config: str | None = F(None, description="dataset YAML overlaid on configs/datasets/<format>.yaml")
    dataset: dict = F({}, description="inline dataset overrides (YAML mapping), applied last")
    cases: int = F(48, ge=1, le=MAX_PHANTOM_CASES, description="phantom only: 2D cases to generate")
    seed: int = F(0, description="phantom only: generator seed")
    volumes: int = F(4, ge=0, le=MAX_PHANTOM_VOLUMES, description="phantom only: CT volumes to generate")
    batch: int = F(1, ge=1, description="phantom only: a later batch added to the cohort already in out")


def import_cohort(fmt: str, path: str, out: str, dataset_config: str | None = None, overrides: dict | None = None) -> dict:
    """Load dataset ``path`` in format ``fmt`` and write its table and rejects under ``out``.

    Holds the folder's writer lock for the whole import (one writer per ``out``).

    Parameters
    ----------
    fmt : str
        The dataset's layout, one of ``medscope.cohorts.FORMATS``.
    path : str
        The dataset folder (path or URI).
    out : str
        The output folder URI.
    dataset_config : str or None, optional
        Dataset YAML overlaid on ``configs/datasets/<fmt>.yaml``.
    overrides : dict or None, optional
        Inline dataset overrides, applied last.

    Returns
    -------
    dict
        ``format``, ``source``, the table's row count under its name (``cases`` or ``volumes``, ...),
        ``rejects`` and ``ignored`` with their counts by reason (rejects also by error class), the
        table's and the rejects' URIs (``<table>_uri``, ``rejects_uri``), and for a cases table
        ``lesion`` and ``lesion_free`` counts.

    Raises
    ------
    MedScopeError
        When ``path`` or ``out`` is empty, the folder is locked by another writer, or another writer
        took the folder over during the import.
    """
    if not (path or "").strip():
        raise MedScopeError("--path is empty: give the dataset folder")
    if not (out or "").strip():
        raise MedScopeError("--out is empty: give the output folder")
    cfg = cohorts.dataset_config(fmt, dataset_config, overrides)
    with folder_lock.writer_lock(out, "cohort import") as writer:  # one writer per --out
        return _import(fmt, path, out, cfg, writer)


def _import(fmt: str, path: str, out: str, cfg, writer: str) -> dict:
    table_name = cohorts.TABLE_OF[fmt]
    progress = Progress(f"import {fmt}")
    table, rejects = cohorts.load(fmt, path, cfg, on_item=progress.update)
    # validate everything before the first byte is written: a failure here leaves --out as it was
    table = records.to_table(table_name, table)
    rejects_table = records.to_table("rejects", rejects)
    table_uri = layout.Cohort(out).table(table_name)
    rejects_uri = layout.Cohort(out).rejects
    true_rejects = [r for r in rejects if r["stage"] != IGNORED_STAGE]
    ignored = [r for r in rejects if r["stage"] == IGNORED_STAGE]
    summary = {
        "format": fmt,
        "source": cfg.source,
        table_name: table.num_rows,
        "rejects": len(true_rejects),
        "rejects_by_reason": dict(sorted(Counter(r["reason"] for r in true_rejects).items())),
        "rejects_by_error_class": dict(sorted(Counter(r.get("error_class") or "" for r in true_rejects).items())),
        "ignored": len(ignored),
        "ignored_by_reason": dict(sorted(Counter(r["reason"] for r in ignored).items())),
        table_name + "_uri": table_uri,
        "rejects_uri": rejects_uri,
    }
    write_import(out, {table_name: table, "rejects": rejects_table}, {k: v for k, v in summary.items() if not k.endswith("_uri")},
                 writer)
    if table_name == "cases":
        summary["lesion"] = sum(table.column("has_lesion").to_pylist())
        summary["lesion_free"] = table.num_rows - summary["lesion"]
    return summary


def write_import(out: str, tables: dict, summary: dict, writer: str = "") -> None:
    """Write an import's tables under ``out`` as one unit (see the module docstring).

    ``writer`` (the folder lock's token) is recorded while writing and checked again before
    ``complete`` is written: a folder another writer took over is never marked complete.

    Parameters
    ----------
    out : str
        The import folder.
    tables : dict
        ``{table name: table}`` to write (e.g. ``cases`` and ``rejects``); each goes to the layout's
        file of that name.
    summary : dict
        The import's summary, kept in ``import.json`` once complete.
    writer : str, optional
        The folder lock's token.

    Raises
    ------
    MedScopeError
        When another writer took the folder over while the tables were written (``import.json`` is
        then left ``writing``).
    """
    manifest = layout.Cohort(out).manifest
    storage.write_text(manifest, json.dumps({"status": "writing", "writer": writer}))
    for name in TABLE_FILES.values():
        storage.delete(storage.join(out, name))  # the layout's file names (TABLE_FILES)
    for name, table in tables.items():
        records.write_table(name, table, layout.Cohort(out).table(name))
    if not folder_lock.still_ours(manifest, writer):
        raise MedScopeError(f"{out}: another import wrote into this folder meanwhile; its import.json is left "
                            "unfinished, run one import again")
    done = {"status": "complete", "writer": writer, "files": {n: TABLE_FILES[n] for n in tables}, "summary": summary}
    storage.write_text(manifest, json.dumps(done, indent=1, sort_keys=True))


def _manifest_files(folder: str) -> dict | None:
    """{table: uri} named by a finished import's manifest; None where there is no manifest."""
    uri = layout.Cohort(folder).manifest
    if not storage.exists(uri):
        return None
    try:
        manifest = safe_text.expect_mapping(safe_text.read_json(uri), uri)
    except (ValueError, UnicodeDecodeError) as err:
        raise MedScopeError(f"{uri} is not readable JSON: {err}") from None
    if manifest.get("status") != "complete":
        raise MedScopeError(f"{folder}: the import into this folder did not finish; run it again")
    return {n: storage.join(folder, f) for n, f in manifest.get("files", {}).items()}


def _kind_of(uri: str) -> str:
    """'cases', 'volumes' or 'rejects' for a Parquet file, from its columns."""
    try:
        names = set(parquet_schema(storage.read_bytes(uri)).names)
    except Exception as err:
        raise MedScopeError(f"{uri} is not a readable Parquet file: {err}") from None
    for name in ("cases", "volumes", "vqa_items", "rejects"):
        if set(records.schema(name).names) <= names:
            return name
    raise MedScopeError(f"{uri} holds neither a cases, a volumes nor a rejects table")


def _counts(values) -> dict:
    return dict(sorted(Counter("(none)" if v is None else str(v) for v in values).items()))


def show_summary(uri: str) -> dict:
    """Counts of a cohort: a cases or volumes file, or a cohort folder holding them.

    By source, imaging type, split, lesion / lesion-free, and rejects by reason (from the
    ``rejects.parquet`` beside the table, when there is one).

    Parameters
    ----------
    uri : str
        A cases / volumes (or vqa_items) Parquet file, or a cohort folder.

    Returns
    -------
    dict
        ``uri`` and, for each table present, its counts: ``cases`` (``n``, by source, imaging type,
        split and finding, ``lesion``, ``lesion_free``, ``critical``, ``patients``,
        ``patients_with_several_images``), ``volumes`` (``n``, by source and split, ``organs``),
        ``vqa_items`` (``n``, by source, split and answer type, ``images``), ``rejects`` (``n``,
        ``by_reason``) and, when any, ``ignored`` (``n``, ``by_reason``).

    Raises
    ------
    MedScopeError
        When ``uri`` does not exist or holds no cases, volumes or vqa_items table, a file is not a
        readable table of a known kind, or the folder's import did not finish.
    """
    if storage.is_dir(uri):
        files = _manifest_files(uri)
        if files is None:  # a folder written without a manifest (the phantom)
            files = {n: layout.Cohort(uri).table(n) for n in TABLE_FILES}
            files = {n: f for n, f in files.items() if storage.exists(f)}
        if not ({"cases", "volumes", "vqa_items"} & set(files)):
            raise MedScopeError(f"{uri}: no cases.parquet, volumes.parquet or vqa_items.parquet here")
    else:
        if not storage.exists(uri):
            raise MedScopeError(f"no cohort at {uri}")
        folder = uri.rsplit("/", 1)[0] if "/" in uri else "."
        named = _manifest_files(folder)
        files = {_kind_of(uri): uri}
        beside = layout.Cohort(folder).rejects
        if "rejects" not in files and (named is None or "rejects" in named) and storage.exists(beside):
            files["rejects"] = beside
    summary: dict = {"uri": uri}
    if "cases" in files:
        cols = ["source", "imaging_type", "split", "has_lesion", "critical", "patient_id", "finding"]
        t = records.read_table("cases", files["cases"], columns=cols).to_pydict()
        n = len(t["source"])
        lesion = sum(t["has_lesion"])
        patients = Counter(p for p in t["patient_id"] if p is not None)
        summary["cases"] = {
            "n": n,
            "by_source": _counts(t["source"]),
            "by_imaging_type": _counts(t["imaging_type"]),
            "by_split": _counts(t["split"]),
            "by_finding": _counts(t["finding"]),
            "lesion": lesion,
            "lesion_free": n - lesion,
            "critical": sum(t["critical"]),
            "patients": len(patients),
            "patients_with_several_images": sum(1 for c in patients.values() if c > 1),
        }
    if "volumes" in files:
        t = records.read_table("volumes", files["volumes"], columns=["source", "split", "shape", "organ_map"]).to_pydict()
        organs = sorted({o for m in t["organ_map"] for o in json.loads(m).values()})
        summary["volumes"] = {
            "n": len(t["source"]),
            "by_source": _counts(t["source"]),
            "by_split": _counts(t["split"]),
            "organs": organs,
        }
    if "vqa_items" in files:
        t = records.read_table("vqa_items", files["vqa_items"], columns=["source", "split", "answer_type", "image_file"]).to_pydict()
        summary["vqa_items"] = {
            "n": len(t["source"]),
            "by_source": _counts(t["source"]),
            "by_split": _counts(t["split"]),
            "by_answer_type": _counts(t["answer_type"]),
            "images": len(set(t["image_file"])),
        }
    if "rejects" in files:
        r = records.read_table("rejects", files["rejects"], columns=["reason", "stage"]).to_pydict()
        kept = [reason for reason, stage in zip(r["reason"], r["stage"]) if stage != IGNORED_STAGE]
        skipped = [reason for reason, stage in zip(r["reason"], r["stage"]) if stage == IGNORED_STAGE]
        summary["rejects"] = {"n": len(kept), "by_reason": _counts(kept)}
        if skipped:
            summary["ignored"] = {"n": len(skipped), "by_reason": _counts(skipped)}
    return summary


def _generate_phantom(out: str, **kw) -> dict:
    storage.delete(layout.Cohort(out).manifest)  # the phantom writes no manifest; an old one would mislead show
    return phantom.generate(out, **kw)


def _add_phantom_batch(out: str, n_cases: int, seed: int, batch: int) -> dict:
    """A later batch of the phantom appended to the cohort in ``out`` (earlier rows untouched)."""
    uri = layout.Cohort(out).cases
    if not storage.exists(uri):
        raise MedScopeError(f"no phantom cohort in {out}: generate batch 1 first (without --batch)")
    earlier = records.read_table("cases", uri).to_pylist()
    prefix = f"batch{batch}/"
    if any(r["source_file"].startswith(prefix) for r in earlier):
        raise MedScopeError(f"{out} already holds batch {batch}")
    added = phantom.phantom_batch(n_cases, seed, batch, copies_of=earlier[:1])
    records.write_table("cases", sorted(earlier + added, key=lambda r: r["case_id"]), uri)
    return {"cases": uri, "earlier": len(earlier), "added": len(added),
            "near_copy_of": {added_row["case_id"]: earlier[0]["case_id"] for added_row in added
                             if "/copy" in added_row["source_file"]}}


def remove(cases: str, folders: list[str], reason: str) -> dict:
    """``cohort remove``: the withdrawn cases out of every folder, with a record in each.

    Prints to stderr which views builds to rebuild and which runs to rescore.

    Parameters
    ----------
    cases : str
        Case ids, comma-separated, or ``@FILE`` naming a file with one id a line (or a CSV
        with a ``case_id`` column); read by :func:`medscope.io.id_lists.read_id_list`.
    folders : list of str
        Output folders to remove them from: cohort, views builds, eval runs, scored runs.
    reason : str
        Why they are removed, kept in each folder's ``removals.jsonl``.

    Returns
    -------
    dict
        The summary of :func:`medscope.cohorts.removal.remove_cases`: the cases, reason, rows
        removed per folder and file, and the folders to ``rescore`` and to ``rebuild``.

    Raises
    ------
    MedScopeError
        When no case id is given, a folder does not exist, or an id matches no case in any
        folder (then nothing is removed).
    """
    from medscope.cohorts.removal import remove_cases, unmatched_case_ids, unmatched_message
    from medscope.io.id_lists import read_id_list

    ids = read_id_list(cases, "--cases")
    missing = [f for f in folders if not storage.is_dir(f)]
    if missing:
        raise MedScopeError(f"not a folder: {', '.join(missing)}")
    # all or nothing: an id that names no case (a typo, a stray mark) stops the withdrawal
    # before any table changes, so no patient is silently left in
    unknown = unmatched_case_ids(ids, folders)
    if unknown:
        raise MedScopeError(unmatched_message(unknown, len(ids), folders))
    summary = remove_cases(ids, folders, reason)
    tables = ", ".join(f"{n} from {t}" for t, n in summary["rows_by_table"].items())
    print(f"medscope: removed {len(ids)} case(s): {summary['rows_removed']} row(s) ({tables})", file=sys.stderr)
    if summary["rebuild"]:
        print(f"medscope: rerun views build into {', '.join(summary['rebuild'])} (it builds nothing; "
              "it rewrites the QC report without the removed cases)", file=sys.stderr)
    if summary["rescore"]:
        print(f"medscope: rescore {', '.join(summary['rescore'])} (their metrics held the removed cases)",
              file=sys.stderr)
    return summary


def run_job(cfg: CohortJobConfig) -> dict:
    """One job of ``python -m pipelines.cohort``: an import, the phantom cohort, or a later phantom batch.

    Parameters
    ----------
    cfg : CohortJobConfig
        The job's settings; ``format`` picks the import or (``phantom``) the generator.

    Returns
    -------
    dict
        The import's summary (:func:`import_cohort`); for the phantom, the generated tables' URIs, or
        for a later batch (``batch`` > 1) the batch's counts with the cohort's ``summary``
        (:func:`show_summary`).

    Raises
    ------
    MedScopeError
        When an import has no ``path``, or as :func:`import_cohort`; for a later phantom batch, when
        ``out`` holds no phantom cohort or already holds that batch.
    """
    if cfg.format == "phantom":
        if cfg.batch > 1:
            return {**_add_phantom_batch(cfg.out, cfg.cases, cfg.seed, cfg.batch), "summary": show_summary(cfg.out)}
        return _generate_phantom(cfg.out, n_cases=cfg.cases, seed=cfg.seed, n_volumes=cfg.volumes)
    if not cfg.path:
        raise MedScopeError(f"format {cfg.format} needs path: the dataset folder")
    return import_cohort(cfg.format, cfg.path, cfg.out, cfg.dataset_config, cfg.dataset)


def _print(summary: dict) -> None:
    print_summary(summary)


def register(sub) -> None:
    """Add the ``cohort`` verb and its actions (import, phantom, remove, show).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``cohort`` is added to them.
    """
    p = sub.add_parser("cohort", help="import a dataset, generate the phantom cohort, or show a cohort")
    verbs = p.add_subparsers(dest="cohort_verb", metavar="ACTION")
    verbs.required = True

    add_action(verbs, "import", CohortImportConfig, lambda c: _print(import_cohort(
        c.format, c.path, c.out, c.dataset_config, c.dataset)),
        "read a dataset layout into a cases (or volumes) table + rejects")
    phantom_action = add_action(verbs, "phantom", CohortPhantomConfig, _phantom,
                                "generate the seeded phantom cohort (2D cases + CT volumes)")
    phantom_action.set_defaults(appends_to_out=_grows_existing_cohort)

    add_action(verbs, "remove", CohortRemoveConfig, lambda c: _print(remove(c.cases, c.folders, c.reason)),
               "remove cases (withdrawn consent) from every table of the given folders")
    add_action(verbs, "show", CohortShowConfig, lambda c: _print(show_summary(c.uri)),
               "counts of a cohort (cases / volumes file or cohort folder)")


def _grows_existing_cohort(settings: dict) -> bool:
    """``--batch N`` with N > 1 adds to the cohort already in --out, so the CLI treats it as an
    append without ``--append``; batch 1 writes a new cohort and is guarded like any run."""
    batch = str(settings.get("batch") or 1)  # not a number: the model's validation says so
    return batch.isdigit() and int(batch) > 1


def _phantom(c: CohortPhantomConfig) -> None:
    if c.batch > 1:
        _print({**_add_phantom_batch(c.out, c.cases, c.seed, c.batch), "summary": show_summary(c.out)})
        return
    print("generating phantom cohort ...", file=sys.stderr, flush=True)
    result = _generate_phantom(c.out, n_cases=c.cases, seed=c.seed, n_volumes=c.volumes)
    _print({**result, "summary": show_summary(c.out)})


def main(argv: list[str] | None = None) -> int:
    """``python -m pipelines.cohort --config F``: one import (or the phantom) as a job.

    Parameters
    ----------
    argv : list of str or None, optional
        The arguments (``--config F``, optionally ``--out``, ``--append``, ``--overwrite``); None reads
        ``sys.argv``.

    Returns
    -------
    int
        The exit status: 0; on an error (printed as one line on stderr), its exit code, 2 unless the
        error names another; 130 when interrupted.
    """
    return job_main("cohort", CohortJobConfig, run_job, argv)


if __name__ == "__main__":
    sys.exit(main())
