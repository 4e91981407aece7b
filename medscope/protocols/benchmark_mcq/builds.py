"""The builds an items argument names (benchmark-MCQ paper): their folders, their cohorts' build records,
and their mcq_items as one table. Read by the protocol, its report and ``benchgen build``."""

from __future__ import annotations

import json

import pandas as pd

from medscope.io import layout, records, storage


def build_folder(uri: str) -> str:
    """A build folder from the folder itself or its items table / folder."""
    return layout.folder_of("mcq_items", uri)


def build_folders(uri: str) -> list[str]:
    """The build folders of an items argument: one, or several joined by commas
    (``medscope eval run --items A --items B``; each may hold several cohorts)."""
    folders = [build_folder(u.strip()) for u in str(uri).split(",") if u.strip()]
    return list(dict.fromkeys(folders))


def build_cohorts(out: str) -> dict[str, dict]:
    """``{cohort: its build record}`` of a build folder's ``build.json`` (empty when nothing is
    built there). A build of several cohorts (``benchgen build --append``) records each."""
    uri = layout.BenchgenBuild(out).manifest
    if not storage.exists(uri):
        return {}
    manifest = json.loads(storage.read_utf8(uri))
    return manifest.get("cohorts") or ({manifest["cohort"]: manifest} if "cohort" in manifest else {})


def read_items_table(uri: str, columns=None):
    """The mcq_items of every build the items argument names, as one table."""
    import pyarrow as pa

    tables = [records.read_table("mcq_items", layout.BenchgenBuild(f).items, columns) for f in build_folders(uri)]
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def read_items(uri: str) -> pd.DataFrame:
    return read_items_table(uri).to_pandas()
