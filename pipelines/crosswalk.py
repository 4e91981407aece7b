"""``medscope crosswalk``: near-copies across cohorts, sets and splits (counterfactual paper §4.1).

    medscope crosswalk --sets cohorts/slake,cohorts/chestx-det,cohorts/siim --out crosswalk.json
    medscope crosswalk --sets main=views/main,fresh_external=views/fresh_external --by-split --out cw.json

Each entry of ``--sets`` is ``NAME=URI`` or a bare ``URI`` (named after its folder): a cases
table (every image is unedited), a views table (its original and natural-negative views), or
the cohort / views-build folder holding one. ``--by-split`` makes each split of each set its own
set. Cases whose split or set is in ``--protect`` (default: the ``test`` split) are protected:
every other case in their near-copy group is listed to move. The flags come from
:class:`CrosswalkConfig`; the logic is :func:`medscope.qc.near_copies.crosswalk`.
"""

from __future__ import annotations

import json
import posixpath
import sys
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pydantic

from medscope.io import storage, tablescan
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.qc import near_copies
from medscope.views.stream import HashStore
from pipelines.support.flags import add_config_flags, config_from_args
from pipelines.support.jobs import job_main

UNEDITED_KINDS = ("original", "natural_negative")


class CrosswalkConfig(StrictModel):
    """``medscope crosswalk`` and ``python -m pipelines.crosswalk --config F`` (the same keys)."""

    sets: list[str] = pydantic.Field(
        min_length=1, description="NAME=URI or URI of each set: a cases or views table, or the cohort / views-build "
        "folder holding one (a bare URI is named after its folder)")
    by_split: bool = pydantic.Field(False, description="treat each split of each set as its own set (NAME/split)")
    protect: list[str] = pydantic.Field(
        ["test"], description="splits or set names whose images are protected: every other case in their "
        "near-copy group is listed to move")
    out: str | None = pydantic.Field(None, description="write the full report (every pair) here as JSON")
    # addition: the paper pairs every hash-close image; the cap bounds driver time and memory
    # (medscope.qc.near_copies.LARGE_GROUP says why 1,000)
    large_group: int = pydantic.Field(
        near_copies.LARGE_GROUP, ge=1, description="a hash-close group of more files than this is not paired but "
        "reported whole, as one near-copy group")


def set_name(uri: str) -> str:
    """The name a bare URI gets: its folder's name (``cohorts/siim``, ``cohorts/siim/cases.parquet``
    -> ``siim``), or a table file's stem (``views/main.parquet`` -> ``main``).

    Parameters
    ----------
    uri : str
        A set's URI: a folder, or a ``.parquet`` table file.

    Returns
    -------
    str
        The set's name.
    """
    path = uri.rstrip("/")
    base = posixpath.basename(path)
    stem = base.removesuffix(".parquet")
    if stem in ("cases", "views") and base != stem:
        stem = posixpath.basename(posixpath.dirname(path)) or stem
    return stem


def named_sets(specs: list[str]) -> dict[str, str]:
    """{name: uri} of the ``--sets`` entries; a name given twice is an error.

    Parameters
    ----------
    specs : list of str
        The ``--sets`` entries, each ``NAME=URI`` or a bare ``URI`` (named by :func:`set_name`).

    Returns
    -------
    dict of str to str
        ``{name: uri}``, in the order given.

    Raises
    ------
    MedScopeError
        When an entry has an empty name or URI, or two entries have the same name.
    """
    out: dict[str, str] = {}
    for spec in specs:
        name, eq, uri = spec.partition("=")
        if not eq:  # a bare URI ("=" is not used in paths MedScope writes)
            name, uri = set_name(spec), spec
        if not name or not uri:
            raise MedScopeError(f"--sets entry {spec!r}: use NAME=URI or URI")
        if name in out:
            raise MedScopeError(f"--sets: two sets are named {name!r} ({out[name]}, {uri}); name them: NAME=URI")
        out[name] = uri
    return out


# rows decoded at once: a batch of images is all the pixels the verb holds
BATCH_ROWS = 16


def unedited_images(uri: str, batch_rows: int = BATCH_ROWS) -> Iterator[dict]:
    """Rows {case_id, split, source_file, image} of every unedited image of a cases or views
    table, read ``batch_rows`` at a time (``medscope.io.tablescan``): the caller holds one batch.

    A views table gives its ``original`` and ``natural_negative`` views (those rows carry ``kind``
    instead of ``source_file``); a cases table gives every row. Which table ``uri`` holds is
    settled before this returns, so a wrong input fails here, not part-way through.

    Parameters
    ----------
    uri : str
        A views or cases table, or the views-build / cohort folder holding one.
    batch_rows : int, optional
        Rows decoded at once.

    Returns
    -------
    iterator of dict
        One row per unedited image, in the table's order.

    Raises
    ------
    MedScopeError
        When ``uri`` is neither a views nor a cases table.
    """
    views_columns, cases_columns = ["case_id", "kind", "split", "image"], ["case_id", "split", "source_file", "image"]
    try:
        next(tablescan.iter_tables("views", uri, columns=views_columns, batch_rows=1), None)
        name, columns = "views", views_columns
    except MedScopeError:  # not a views table: a cases table, where every image is unedited
        try:
            next(tablescan.iter_tables("cases", uri, columns=cases_columns, batch_rows=1), None)
        except MedScopeError as err:
            raise MedScopeError(f"{uri}: neither a views nor a cases table ({err})") from None
        name, columns = "cases", cases_columns

    def rows() -> Iterator[dict]:
        for batch in tablescan.iter_tables(name, uri, columns=columns, batch_rows=batch_rows):
            if name == "views":  # edited views' images are never turned into Python bytes
                batch = batch.filter(pc.is_in(batch.column("kind"), value_set=pa.array(UNEDITED_KINDS)))
            yield from batch.to_pylist()

    return rows()


def run(cfg: CrosswalkConfig) -> dict:
    """Find near-copies across the configured sets and list the cases to move.

    The tables are read a batch at a time; of each image only what the crosswalk needs is kept
    (its file's hash, a 64 px thumbnail in a scratch file, its case), so the driver's memory
    grows with the cohort's files and cases, not with its pixels.

    Parameters
    ----------
    cfg : CrosswalkConfig
        Reads ``sets``, ``by_split`` (each split of each set is its own set, ``NAME/split``),
        ``protect``, ``large_group`` (the cap on a hash-close group that is paired) and ``out`` (when
        set, the full report is written there as JSON).

    Returns
    -------
    dict
        The report of :func:`medscope.qc.near_copies.crosswalk`: counts, every pair,
        ``large_groups``, ``to_move``, ``unreadable``, ``protect`` and ``thresholds``.

    Raises
    ------
    MedScopeError
        When a ``--sets`` entry is malformed or repeated, or names neither a views nor a cases table.

    References
    ----------
    .. [1] counterfactual paper, §4.1.
    """
    store = HashStore()  # thumbnails in a scratch file, removed when closed
    try:
        files = near_copies.CrosswalkFiles(store)
        for name, uri in named_sets(cfg.sets).items():
            rows = unedited_images(uri)
            if not cfg.by_split:
                files.add_set(name)
            for r in rows:
                files.add(f"{name}/{r.get('split') or 'none'}" if cfg.by_split else name, r)
        report = files.report(cfg.protect, large_group=cfg.large_group)
    finally:
        store.close()
    if cfg.out:
        storage.write_text(cfg.out, json.dumps(report, indent=2) + "\n")
    return report


def summary_lines(rep: dict) -> list[str]:
    """What the verb prints: counts with their n, the copies that join sets, the cases to move.

    Parameters
    ----------
    rep : dict
        A report of :func:`run`.

    Returns
    -------
    list of str
        The lines to print, without newlines.
    """
    t = rep["thresholds"]
    cross = [p for p in rep["pairs"] if p["cross_set"] and p["tier"] in near_copies.COPY_TIERS]
    lines = [f"{rep['files']} distinct image files ({sum(rep['images'].values())} images) in {len(rep['images'])} sets; "
             f"hash neighbours within {t['max_bits']} bits by tier: {rep['pairs_by_tier']}",
             f"{len(cross)} near-copy pairs across sets (correlation >= {t['near_copy_corr']} at {t['thumbnail_px']} px); "
             f"{rep['cross_set_by_tier']['shared_anatomy']} shared-anatomy pairs across sets "
             f"({t['shared_anatomy_corr']}-{t['near_copy_corr']}, not copies); "
             f"{len(rep['same_file_in_several_sets'])} files in several sets"]
    lines += [f"  {p['a']} ~ {p['b']}: {p['tier']}, distance {p['distance']}, correlation {p['correlation']:.3f}"
              for p in cross]
    for g in rep.get("large_groups", []):
        lines.append(f"hash-close group of {g['files']} files ({g['images']} images; over {t['large_group']}, so not "
                     f"paired, one near-copy group) represented by {g['representative']}: sets {', '.join(g['sets'])}; "
                     f"{g['protected']} protected")
    lines.append(f"{len(rep['to_move'])} cases to move (near-copy group holds a protected case; "
                 f"protected: {', '.join(rep['protect'])})")
    lines += [f"  {m['case']} ({m['split'] or 'no split'}): " + (
        f"in the hash-close group of {m['large_group']}, with {m['protected_in_group']} protected" if "large_group" in m
        else f"copy of {', '.join(m['because_of'])}") for m in rep["to_move"]]
    if rep["unreadable"]:
        lines.append(f"{len(rep['unreadable'])} images could not be decoded: {', '.join(rep['unreadable'][:10])}")
    return lines


def register(sub) -> None:
    """Add the ``crosswalk`` verb.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``crosswalk`` is added to them.
    """
    p = sub.add_parser("crosswalk", help="near-copies across cohorts, sets and splits, with the cases to move "
                       "(counterfactual paper §4.1)")
    add_config_flags(p, CrosswalkConfig)

    def go(a):
        print("\n".join(summary_lines(run(config_from_args(a, source="medscope crosswalk")))))

    p.set_defaults(func=go)


def main(argv: list[str] | None = None) -> int:
    """``python -m pipelines.crosswalk --config F``: the report's counts and cases to move
    printed, every pair in ``out:``.

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
    return job_main("crosswalk", CrosswalkConfig, lambda cfg: {k: v for k, v in run(cfg).items() if k != "pairs"}, argv)


if __name__ == "__main__":
    sys.exit(main())
