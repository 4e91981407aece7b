"""``medscope compact RUN_FOLDER``: fold an output folder's write-once part files into a few
large Parquet files with a manifest (medscope.io.parts; docs/layout.md, "Compaction").

Safe to run on a finished run, on one a later ``eval run`` will resume (finished keys are read
from the manifest, so nothing is re-run), and again (a second run changes nothing). Run one
compaction per folder at a time; a job may keep writing parts meanwhile.
"""

from __future__ import annotations

import sys

from pydantic import Field as F

from medscope import protocols
from medscope.io import parts
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from pipelines.support.flags import add_config_flags, cli, config_from_args


def run(args) -> list[dict]:
    """Compact (or with ``verify``, check) every part folder of a run folder, one line per folder.

    Parameters
    ----------
    args : CompactConfig
        The ``medscope compact`` settings the verb validates: ``run_folder``, ``target_mb`` (MB of uncompressed
        rows per compacted file), ``max_parts`` (parts per compacted file, or None) and ``verify``.

    Returns
    -------
    list of dict
        One result of :func:`medscope.io.parts.compact_folder` per part folder (``parts_compacted``,
        ``files_written``, ``compacted_files``, ``rows``, ``leftovers_removed``, ...); empty with ``verify``.

    Raises
    ------
    MedScopeError
        When ``run_folder`` holds no part folders, or with ``verify`` when a compacted file differs from its
        manifest.
    """
    protocols.import_all()  # the shipped protocols' part-file tables (probe_items/, items/, montages/)
    folders = parts.part_folders(args.run_folder)
    if not folders:
        raise MedScopeError(f"{args.run_folder}: no part folders (episodes/, rejects/, probe_items/, items/, "
                            "montages/) and not a folder of part files")
    if args.verify:
        bad = {f: parts.verify(f) for f in folders}
        for f in folders:
            print(f"{f}: {'; '.join(bad[f]) if bad[f] else 'ok'} ({len(parts.manifest(f)['files'])} compacted files)")
        if any(bad.values()):
            raise MedScopeError("compacted files differ from their manifests (see above)")
        return []
    results = []
    for folder in folders:
        res = parts.compact_folder(folder, int(args.target_mb * 2**20), args.max_parts)
        results.append(res)
        print(f"{folder}: {res['parts_compacted']} parts -> {res['files_written']} new files "
              f"({res['compacted_files']} compacted files, {res['rows']} rows; "
              f"{res['leftovers_removed']} leftovers of an interrupted compaction removed)", flush=True)
    return results


class CompactConfig(StrictModel):
    """``medscope compact``: a run's write-once part files folded into a few large Parquet files."""

    run_folder: str = F(description="an output folder (eval run, probe build, benchgen build) or one part folder",
                        json_schema_extra=cli(positional=True))
    target_mb: float = F(parts.TARGET_BYTES / 2**20, gt=0, description="rows per compacted file, in MB of uncompressed "
                         "(Arrow) rows (the file itself is smaller, zstd-compressed)")
    max_parts: int | None = F(None, ge=1, description="at most this many parts per compacted file")
    verify: bool = F(False, description="check every compacted file's hash and row counts against the manifest; "
                                        "change nothing")


def register(sub) -> None:
    """Add the ``compact`` verb.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``compact`` is added to them.
    """
    p = sub.add_parser("compact", help="fold a run's write-once part files into a few large Parquet files "
                       "(with a manifest; resume stays exact)", description=CompactConfig.__doc__)
    add_config_flags(p, CompactConfig)
    p.set_defaults(func=lambda a: run(config_from_args(a, source="medscope compact")))


if __name__ == "__main__":  # pragma: no cover
    from pipelines.cli import main

    sys.exit(main(["compact", *sys.argv[1:]]))
