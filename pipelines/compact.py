"""``medscope compact RUN_FOLDER``: fold an output folder's write-once part files into a few
large Parquet files with a manifest (medscope.parts; docs/layout.md, "Compaction").

Safe to run on a finished run, on one a later ``eval run`` will resume (finished keys are read
from the manifest, so nothing is re-run), and again (a second run changes nothing). Run one
compaction per folder at a time; a job may keep writing parts meanwhile.
"""

from __future__ import annotations

import sys

from medscope import parts, protocols
from medscope.errors import MedScopeError


def run(args) -> list[dict]:
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


def register(sub) -> None:
    p = sub.add_parser("compact", help="fold a run's write-once part files into a few large Parquet files "
                       "(with a manifest; resume stays exact)")
    p.add_argument("run_folder", help="an output folder (eval run, probe build, benchgen build) or one part folder")
    p.add_argument("--target-mb", type=float, default=parts.TARGET_BYTES / 2**20,
                   help="rows per compacted file, in MB of uncompressed (Arrow) rows (default 128; "
                   "the file itself is smaller, zstd-compressed)")
    p.add_argument("--max-parts", type=int, default=None, help="at most this many parts per compacted file")
    p.add_argument("--verify", action="store_true",
                   help="check every compacted file's hash and row counts against the manifest; change nothing")
    p.set_defaults(func=run)


if __name__ == "__main__":  # pragma: no cover
    from pipelines.cli import main

    sys.exit(main(["compact", *sys.argv[1:]]))
