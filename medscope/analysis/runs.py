"""Which scored runs this package's analysis reads: the view scores of the counterfactual protocol
and its side studies, never another protocol's tables read as if they were views."""

from __future__ import annotations


import pyarrow as pa

from medscope.errors import MedScopeError
from medscope.io import layout, records, safe_text, storage

VIEW_PROTOCOLS = ("counterfactual",)  # the protocols whose scored runs hold a ``scores`` table of views


def read_view_scores(uri: str, verb: str = "this analysis") -> pa.Table:
    """The ``scores`` table of a scored view run, refusing another protocol's run by name.

    Parameters
    ----------
    uri : str
        A scored-run folder or its ``scores.parquet`` (local path or ``s3://`` URI).
    verb : str, optional
        What reads it, for the error (``"medscope stats"``).

    Returns
    -------
    pyarrow.Table
        The scores, one row per model x condition x view.

    Raises
    ------
    MedScopeError
        When the run's ``run.json`` names a protocol without view scores (its own tests are in its own
        tables), or when no scores table is there.
    """
    folder = uri.rstrip("/")
    if not storage.is_dir(folder):
        folder = folder.rsplit("/", 1)[0]
    manifest = layout.ScoredRun(folder).manifest
    if storage.exists(manifest):
        try:
            protocol = safe_text.read_json_object(manifest).get("protocol")
        except (ValueError, AttributeError):
            protocol = None
        if protocol and protocol not in VIEW_PROTOCOLS:
            raise MedScopeError(f"{folder} is a {protocol} run: {verb} reads the view scores of "
                                f"{', '.join(VIEW_PROTOCOLS)} runs; a {protocol} run's own tests are in the tables "
                                f"`medscope score` wrote there (`medscope report --run {folder}` shows them)")
    return records.read_table("scores", uri)
