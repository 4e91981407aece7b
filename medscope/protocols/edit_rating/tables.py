"""What the edit-rating protocol writes: no Parquet table of its own (its episodes are the shared
episodes table), one JSON file beside a scored run's ``run.json`` holding each model's AUCs."""

from __future__ import annotations

import json

from medscope.io import safe_text, storage

RESULT_FILE = "edit_ratings.json"


def write_ratings(scored_run: str, result: dict) -> str:
    """Write the per-model rating summary of a scored run.

    Parameters
    ----------
    scored_run : str
        Folder (local path or ``s3://`` URI) of the scored run.
    result : dict
        ``rating_aucs``'s output: model -> AUCs with intervals and counts.

    Returns
    -------
    str
        The URI written.
    """
    uri = storage.join(scored_run, RESULT_FILE)
    storage.write_text(uri, json.dumps(result, indent=2) + "\n")
    return uri


def read_ratings(scored_run: str) -> dict:
    """The per-model rating summary ``write_ratings`` wrote.

    Parameters
    ----------
    scored_run : str
        Folder (local path or ``s3://`` URI) of the scored run.

    Returns
    -------
    dict
        Model -> AUCs with intervals and counts.
    """
    return safe_text.read_json_object(storage.join(scored_run, RESULT_FILE))
