"""Whether an eval run's episodes are all there before they are scored.

An eval run folder copied in part, or one whose parts were deleted, would otherwise be scored
on what is left while its ``sweep.json`` says every unit was done: cases lost without a word.
``sweep.json`` records how many episodes the sweep found written (``skipped_finished``: by an
earlier run; ``done`` and ``already_written``: by this one); fewer part keys than that under
``episodes/`` is refused with one line naming the folder and the fix.
"""

from __future__ import annotations

import json

from medscope.io import layout, parts, safe_text, storage
from medscope.errors import MedScopeError


def written_episodes(summary: dict) -> int:
    """How many episode parts the sweep that wrote ``summary`` (its sweep.json) left behind.

    Parameters
    ----------
    summary : dict
        The eval run's sweep.json.

    Returns
    -------
    int
        ``done`` + ``already_written`` + ``skipped_finished`` (missing counts as 0).
    """
    return sum(int(summary.get(k) or 0) for k in ("done", "already_written", "skipped_finished"))


def removed_episodes(folder: str) -> tuple[int, str | None]:
    """How many episode rows ``medscope cohort remove`` took out of the eval run ``folder``, by
    its ``removals.jsonl``, and when it last did.

    Parameters
    ----------
    folder : str
        The eval run folder.

    Returns
    -------
    removed : int
        Rows removed from tables under ``episodes/``, summed over every record (0 without the file).
    last_at : str or None
        The ``at`` time of the last record that removed any; None when none did.
    """
    uri = storage.join(folder, layout.REMOVALS)
    if not storage.exists(uri):
        return 0, None
    removed, last_at = 0, None
    for line in storage.read_utf8(uri).splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the record is a log for people; a damaged line does not hide the others
        rows = ((record.get("removed") or {}).get("rows") or {}) if isinstance(record, dict) else {}
        n = sum(int(v) for k, v in rows.items() if str(k).startswith("episodes/") and isinstance(v, int))
        if n:
            removed, last_at = removed + n, str(record.get("at", "?"))
    return removed, last_at


def require_complete(episodes_uri: str) -> None:
    """Raise MedScopeError when ``episodes_uri`` (a part folder) holds fewer episodes than its
    run's sweep.json says were written. A run without sweep.json, or a single table file, is
    not checked: there is nothing to compare with.

    Parameters
    ----------
    episodes_uri : str
        The eval run's episodes (a part folder, or a table file: not checked).

    Raises
    ------
    MedScopeError
        When fewer part keys are present than ``written_episodes`` of the run's sweep.json.
    """
    if not storage.is_dir(episodes_uri):
        return
    folder = layout.folder_of("episodes", episodes_uri)
    summary_uri = layout.EvalRun(folder).summary
    if not storage.exists(summary_uri):
        return
    summary = safe_text.expect_mapping(safe_text.read_json(summary_uri), summary_uri)
    expected = written_episodes(summary)
    present = len(parts.part_keys(episodes_uri))
    removed, removed_at = removed_episodes(folder)
    if present < expected and removed:
        # `cohort remove` took episodes out after sweep.json was written: blaming a partial copy
        # sent the user looking for a fault that is not there
        unexplained = expected - present - removed
        raise MedScopeError(
            f"{episodes_uri}: {summary_uri} says {expected} episodes were written, {present} are there: "
            f"`medscope cohort remove` took {removed} out ({storage.join(folder, layout.REMOVALS)}, last at "
            f"{removed_at}); rerun `medscope eval run` with the same config and --out (it records the run without "
            "the removed cases and sends nothing already answered), then score again"
            + (f"; {unexplained} more are missing than were removed: copy the whole run folder" if unexplained > 0 else ""))
    if present < expected:
        raise MedScopeError(
            f"{episodes_uri}: {summary_uri} says {expected} episodes were written, but only {present} are there "
            f"({expected - present} missing: a partial copy or deleted parts?); copy the whole run folder, or rerun "
            "`medscope eval run` with the same config and --out, which re-runs only the missing units, then score again")
