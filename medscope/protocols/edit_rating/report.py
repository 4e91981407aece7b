"""The edit-rating report section (counterfactual paper §5.4): each model's AUCs as the paper words them."""

from __future__ import annotations

from medscope.protocols.edit_rating.tables import read_ratings
from medscope.qc.visibility import format_ratings
from medscope.render.document import Raw, Section


def report_sections(scored_run: str) -> list[Section]:
    """The report's sections for one scored edit-rating run.

    Parameters
    ----------
    scored_run : str
        Folder (local path or ``s3://`` URI) of a run ``medscope score`` wrote for this protocol.

    Returns
    -------
    list of Section
        One section with each model's AUCs (R vs O, T vs O) and the split of its target-removal ratings.
    """
    return [Section("Zero-shot edit ratings (§5.4)", [Raw(format_ratings(read_ratings(scored_run)))])]
