"""The builds an items argument names (benchmark-MCQ paper): their folders, their cohorts' build records,
and their mcq_items as one table. Read by the protocol, its report and ``benchgen build``."""

from __future__ import annotations


import pandas as pd

from medscope.io import layout, records, safe_text, storage


def build_folder(uri: str) -> str:
    """A build folder from the folder itself or its items table / folder.

    Parameters
    ----------
    uri : str
        A build folder, its mcq_items table file or its part folder.

    Returns
    -------
    str
        The build folder.
    """
    return layout.folder_of("mcq_items", uri)


def build_folders(uri: str) -> list[str]:
    """The build folders of an items argument: one, or several joined by commas
    (``medscope eval run --items A --items B``; each may hold several cohorts).

    Parameters
    ----------
    uri : str
        The items argument: one build (folder or items table), or several joined by commas.

    Returns
    -------
    list of str
        The build folders, in the order named, each once.
    """
    folders = [build_folder(u.strip()) for u in str(uri).split(",") if u.strip()]
    return list(dict.fromkeys(folders))


def build_cohorts(out: str) -> dict[str, dict]:
    """``{cohort: its build record}`` of a build folder's ``build.json`` (empty when nothing is
    built there). A build of several cohorts (``benchgen build --append``) records each.

    Parameters
    ----------
    out : str
        A build folder.

    Returns
    -------
    dict of str to dict
        Each cohort's build record: the manifest's ``cohorts`` mapping, or, for a single-cohort
        manifest, ``{manifest["cohort"]: manifest}``; empty when there is no ``build.json``.

    References
    ----------
    .. [1] benchmark-MCQ paper.
    """
    uri = layout.BenchgenBuild(out).manifest
    if not storage.exists(uri):
        return {}
    manifest = safe_text.read_json_object(uri)
    return manifest.get("cohorts") or ({manifest["cohort"]: manifest} if "cohort" in manifest else {})


def read_items_table(uri: str, columns=None):
    """The mcq_items of every build the items argument names, as one table.

    Parameters
    ----------
    uri : str
        The items argument (see :func:`build_folders`).
    columns : sequence of str or None, optional
        Columns to read; None for every column of mcq_items.

    Returns
    -------
    pyarrow.Table
        The mcq_items of the builds, concatenated in the order named.
    """
    import pyarrow as pa

    tables = [records.read_table("mcq_items", layout.BenchgenBuild(f).items, columns) for f in build_folders(uri)]
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def read_items(uri: str) -> pd.DataFrame:
    """The mcq_items of every build the items argument names, as a DataFrame.

    Parameters
    ----------
    uri : str
        The items argument (see :func:`build_folders`).

    Returns
    -------
    pandas.DataFrame
        One row per question (:func:`read_items_table`, every column).
    """
    return read_items_table(uri).to_pandas(use_threads=False)
