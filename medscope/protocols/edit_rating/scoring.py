"""Edit-rating scoring (counterfactual paper §5.4): the reply read as a probability of editing, and per
model the AUC of the ratings for random removal vs original and target removal vs original, with
case-bootstrap intervals."""

from __future__ import annotations

import re

import numpy as np



KINDS = ("original", "target_removal", "random_removal")


_NUMBER = re.compile(r"(\d*\.\d+|\d+)\s*(%?)")


def read_rating(text: str) -> float | None:
    """The first number of the reply as a probability: 0.7, .7 -> 0.7; 70% -> 0.7; None if none fits.

    Parameters
    ----------
    text : str
        The model's reply; None or empty reads as no rating. Decimal commas are read as points.

    Returns
    -------
    float or None
        The first number in [0, 1] (a number followed by ``%`` divided by 100); None when no number fits.
    """
    for m in _NUMBER.finditer((text or "").replace(",", ".")):
        value = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
        if 0.0 <= value <= 1.0:
            return value
    return None


def rating_aucs(episodes, views, n_boot: int = 2000, seed: int = 42) -> dict:
    """Per model: AUC [95% CI] of R vs O and T vs O ratings, unparseable share, T rating split.

    Parameters
    ----------
    episodes : pyarrow.Table
        The episodes table; reads ``model``, ``item_id``, ``case_id``, ``confidence`` and ``action``.
    views : pyarrow.Table
        The views table; its ``view_id`` and ``kind`` give each episode's kind. Episodes of other kinds
        than :data:`KINDS` are left out.
    n_boot : int, optional
        Bootstrap replicates of the case-bootstrap intervals.
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    dict
        Model -> ``episodes``, ``unparseable`` (episodes without a rating); ``R_vs_O`` and ``T_vs_O``
        (:func:`medscope.qc.visibility.auc_with_ci`'s dict; only when both kinds are rated); and, when
        target-removal views were rated, ``target_rated_unedited`` (<= 0.20), ``target_rated_edited``
        (>= 0.75) and ``target_rated_between``.

    References
    ----------
    .. [1] counterfactual paper, §5.4.
    """
    from medscope.qc.visibility import auc_with_ci

    kind_of = dict(zip(views.column("view_id").to_pylist(), views.column("kind").to_pylist()))
    out: dict = {}
    rows = episodes.select(["model", "item_id", "case_id", "confidence", "action"]).to_pylist()
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model and kind_of.get(r["item_id"]) in KINDS]
        rated = [r for r in mine if r["action"] == "answer" and r["confidence"] is not None]
        entry = {"episodes": len(mine), "unparseable": len(mine) - len(rated)}
        for name, pos in (("R_vs_O", "random_removal"), ("T_vs_O", "target_removal")):
            sel = [r for r in rated if kind_of[r["item_id"]] in (pos, "original")]
            labels = np.array([kind_of[r["item_id"]] == pos for r in sel])
            if labels.any() and (~labels).any():
                entry[name] = auc_with_ci(np.array([r["confidence"] for r in sel]), labels,
                                          np.array([r["case_id"] for r in sel], dtype=object), n_boot, seed)
        t = np.array([r["confidence"] for r in rated if kind_of[r["item_id"]] == "target_removal"])
        if len(t):
            entry["target_rated_unedited"] = int((t <= 0.20).sum())
            entry["target_rated_edited"] = int((t >= 0.75).sum())
            entry["target_rated_between"] = int(len(t) - entry["target_rated_unedited"] - entry["target_rated_edited"])
        out[model] = entry
    return out
