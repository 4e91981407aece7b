"""Label-noise sensitivity (counterfactual paper §5.5): a consensus panel of models flags disputed labels.

A lesion-free image (natural-negative view) that at least ``min_votes`` panel models call
abnormal (claim the asked finding) is a disputed label. The panel is a set of comparator
models, not a clinical reference, and the model under study does not vote. Every comparison
can be rerun on scores without the disputed cases.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

from medscope.errors import MedScopeError


def disputed_cases(scores: pa.Table, panel: list[str], min_votes: int | None = None) -> list[str]:
    """Case ids of lesion-free views claimed abnormal by >= ``min_votes`` panel models.

    ``min_votes`` defaults to the paper's share, seven of nine (rounded up).

    Parameters
    ----------
    scores : pyarrow.Table
        Scores with columns ``model``, ``case_id``, ``kind``, ``action`` and ``claims_finding``.
    panel : list of str
        The panel's model names.
    min_votes : int or None, optional
        Votes needed to dispute a label; ``None`` for ``ceil(7 / 9 * len(panel))``.

    Returns
    -------
    list of str
        Sorted case ids of ``natural_negative`` views where at least ``min_votes`` distinct panel models
        answered (action ``answer``) and claimed the finding.

    Raises
    ------
    MedScopeError
        When the panel is empty or names a model absent from ``scores``.

    References
    ----------
    .. [1] Counterfactual paper, §5.5.
    """
    if not panel:
        raise MedScopeError("label-noise panel is empty")
    votes_needed = min_votes if min_votes is not None else math.ceil(len(panel) * 7 / 9)
    df = scores.select(["model", "case_id", "kind", "action", "claims_finding"]).to_pandas(use_threads=False)
    missing = sorted(set(panel) - set(df["model"]))
    if missing:
        raise MedScopeError(f"panel model(s) not in the scores: {', '.join(missing)}")
    neg = df[(df["kind"] == "natural_negative") & df["model"].isin(panel)]
    claims = neg[(neg["action"] == "answer") & neg["claims_finding"].fillna(False).astype(bool)]
    votes = claims.groupby("case_id")["model"].nunique()
    return sorted(votes[votes >= votes_needed].index.astype(str))


def without_cases(scores: pa.Table, case_ids: list[str]) -> pa.Table:
    """The scores without the given cases (all their views, for every model).

    Parameters
    ----------
    scores : pyarrow.Table
        Scores with a ``case_id`` column.
    case_ids : list of str
        Cases to drop.

    Returns
    -------
    pyarrow.Table
        The rows whose ``case_id`` is not listed; ``scores`` itself when ``case_ids`` is empty.

    References
    ----------
    .. [1] Counterfactual paper, §5.5.
    """
    if not case_ids:
        return scores
    return scores.filter(pc.invert(pc.is_in(scores.column("case_id"), value_set=pa.array(case_ids))))
