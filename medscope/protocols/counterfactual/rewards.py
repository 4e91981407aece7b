"""Per-view rewards (counterfactual paper §3.4, Table 2): episodes x views -> the scores table.

Which row of the cost matrix a view uses, and what the correct answer is:

- original, random_removal: the answerable row; the finding is present.
- unmatched_control, insertion: training-only kinds (C1's arm, §3.7; insertions, §3.2). The
  training reward (stage-2 rejection sampling) scores them like random removal (the lesion is
  there); ``score_episodes`` (evaluation) never does: an episode of such a view becomes a reject
  (``not_an_evaluation_view``), so no test-set metric can count it.
- target_removal, natural_negative: the absent row; the finding is absent.
- degraded: the degraded row; the finding is present when the view comes from a lesion case
  (a lesion box or area on the view), else absent. The lesion-present answer is the "correct"
  answer on a degraded lesion view.

"Correct" means an answer whose claim about the asked finding matches the view. An ``answer``
episode without a parsed claim cannot be scored as an answer and is treated as unparseable.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.protocols import denominators as den
from medscope.protocols.counterfactual.costs import CostMatrix
from medscope.analysis.training_seeds import arm_seed_columns
from medscope.analysis import testsets

ROW_OF_KIND = {
    "original": "answerable",
    "random_removal": "answerable",
    "unmatched_control": "answerable",
    "insertion": "answerable",
    "target_removal": "absent",
    "natural_negative": "absent",
    "degraded": "degraded",
}
PRESENT_KINDS = ("original", "random_removal", "unmatched_control", "insertion")


def lesion_present(kind: np.ndarray, lesion_area_frac: np.ndarray, has_bbox: np.ndarray) -> np.ndarray:
    """Whether the asked finding is visible in each view (the truth a correct answer states).

    Parameters
    ----------
    kind : numpy.ndarray
        ``(n,)`` view kinds.
    lesion_area_frac : numpy.ndarray
        ``(n,)`` lesion area as a share of the image; NaN reads as 0.
    has_bbox : numpy.ndarray
        ``(n,)`` bool, whether the view has a lesion box.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` bool: True for the :data:`PRESENT_KINDS`, and for degraded views of a lesion case (an
        area above 0 or a box).

    References
    ----------
    .. [1] counterfactual paper, §3.4, Table 2.
    """
    kind = np.asarray(kind, dtype=object)
    present = np.isin(kind, PRESENT_KINDS)
    lesion_case = (np.nan_to_num(np.asarray(lesion_area_frac, dtype=float)) > 0) | np.asarray(has_bbox, bool)
    return present | ((kind == "degraded") & lesion_case)


def per_mille_to_pixels(box_1000: np.ndarray, width: np.ndarray, height: np.ndarray) -> np.ndarray:
    """Boxes in 0-1000 image coordinates (model replies) -> pixels; NaN rows stay NaN.

    Parameters
    ----------
    box_1000 : numpy.ndarray
        ``(n, 4)`` boxes (x1, y1, x2, y2) in 0-1000 of the image.
    width : numpy.ndarray
        ``(n,)`` image widths in pixels.
    height : numpy.ndarray
        ``(n,)`` image heights in pixels.

    Returns
    -------
    numpy.ndarray
        ``(n, 4)`` float boxes in pixels.
    """
    w = np.asarray(width, dtype=float)[:, None]
    h = np.asarray(height, dtype=float)[:, None]
    return np.asarray(box_1000, dtype=float) / 1000.0 * np.concatenate([w, h, w, h], axis=1)


def box_iou(box_px: np.ndarray, lesion_bbox: np.ndarray, width: np.ndarray, height: np.ndarray):
    """IoU of model boxes with lesion boxes (both pixels, as tables hold them: records.BOX), and
    each model box's share of the image area.

    Arrays of shape (n, 4) with NaN rows where a box is missing; returns (iou, area_frac), NaN
    where either box is missing. Inverted corners are normalised to (min, max).

    Parameters
    ----------
    box_px : numpy.ndarray
        ``(n, 4)`` model boxes (x1, y1, x2, y2) in pixels, NaN rows where missing.
    lesion_bbox : numpy.ndarray
        ``(n, 4)`` lesion boxes in pixels, NaN rows where missing.
    width : numpy.ndarray
        ``(n,)`` image widths in pixels.
    height : numpy.ndarray
        ``(n,)`` image heights in pixels.

    Returns
    -------
    iou : numpy.ndarray
        ``(n,)`` IoU in [0, 1] (0 when the union is empty); NaN where either box is missing.
    area_frac : numpy.ndarray
        ``(n,)`` the model box's share of the image area; NaN where the model box is missing.
    """
    bp = np.asarray(box_px, dtype=float)
    lp = np.asarray(lesion_bbox, dtype=float)
    img_area = np.asarray(width, dtype=float) * np.asarray(height, dtype=float)
    bx1, bx2 = np.minimum(bp[:, 0], bp[:, 2]), np.maximum(bp[:, 0], bp[:, 2])
    by1, by2 = np.minimum(bp[:, 1], bp[:, 3]), np.maximum(bp[:, 1], bp[:, 3])
    ix = np.clip(np.minimum(bx2, lp[:, 2]) - np.maximum(bx1, lp[:, 0]), 0, None)
    iy = np.clip(np.minimum(by2, lp[:, 3]) - np.maximum(by1, lp[:, 1]), 0, None)
    inter = ix * iy
    area_b = (bx2 - bx1) * (by2 - by1)
    area_l = np.abs(lp[:, 2] - lp[:, 0]) * np.abs(lp[:, 3] - lp[:, 1])
    union = area_b + area_l - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.where(union > 0, inter / union, 0.0)
        area_frac = area_b / img_area
    missing = np.isnan(bp).any(axis=1) | np.isnan(lp).any(axis=1)
    iou[missing] = np.nan
    area_frac[np.isnan(bp).any(axis=1)] = np.nan
    return iou, area_frac


def view_rewards(
    kind: np.ndarray,
    action: np.ndarray,
    claims: np.ndarray,
    present: np.ndarray,
    critical: np.ndarray,
    iou: np.ndarray,
    box_area_frac: np.ndarray,
    tool_calls: np.ndarray,
    matrix: CostMatrix,
):
    """Reward per view under ``matrix`` (Table 2 + §3.4 rules), vectorised.

    ``claims`` is the parsed claim (True: the finding is there), meaningful where action is
    ``answer``. Returns (reward, correct, grounded, oversized).

    Parameters
    ----------
    kind : numpy.ndarray
        ``(n,)`` view kinds (keys of :data:`ROW_OF_KIND`).
    action : numpy.ndarray
        ``(n,)`` ``answer``, ``refer``, ``clarify`` or ``unparseable``.
    claims : numpy.ndarray
        ``(n,)`` bool, the parsed claim that the finding is there.
    present : numpy.ndarray
        ``(n,)`` bool, whether it is (:func:`lesion_present`).
    critical : numpy.ndarray
        ``(n,)`` bool, a critical finding (a wrong answer on an answerable view takes ``wrong_critical``).
    iou : numpy.ndarray
        ``(n,)`` IoU of the model box with the lesion box, NaN when missing.
    box_area_frac : numpy.ndarray
        ``(n,)`` the model box's share of the image, NaN when missing.
    tool_calls : numpy.ndarray
        ``(n,)`` tool calls of each episode; those beyond ``free_tool_calls`` cost ``tool_call_cost``.
    matrix : CostMatrix
        The cost matrix.

    Returns
    -------
    reward : numpy.ndarray
        ``(n,)`` float rewards.
    correct : numpy.ndarray
        ``(n,)`` bool, answered with the right claim.
    grounded : numpy.ndarray
        ``(n,)`` bool, correct on an answerable view with IoU >= ``iou_threshold`` and a box not oversized
        (earns ``box_bonus``).
    oversized : numpy.ndarray
        ``(n,)`` bool, the box covers more than ``max_box_area_frac`` of the image.

    References
    ----------
    .. [1] counterfactual paper, §3.4, Table 2.
    """
    kind = np.asarray(kind, dtype=object)
    action = np.asarray(action, dtype=object)
    claims = np.asarray(claims, dtype=bool)
    present = np.asarray(present, dtype=bool)
    critical = np.asarray(critical, dtype=bool)
    iou = np.asarray(iou, dtype=float)
    area = np.asarray(box_area_frac, dtype=float)
    row = np.array([ROW_OF_KIND[k] for k in kind], dtype=object)
    answered = action == "answer"
    correct = answered & (claims == present)
    wrong = answered & ~correct
    reward = np.zeros(len(kind))
    for name in ("answerable", "absent", "degraded"):
        r = getattr(matrix, name)
        m = row == name
        reward[m & correct] = r.correct
        reward[m & wrong] = r.wrong
        reward[m & (action == "refer")] = r.refer
        reward[m & (action == "clarify")] = r.clarify
    crit = (row == "answerable") & wrong & critical
    reward[crit] = matrix.answerable.wrong_critical
    reward[action == "unparseable"] = matrix.unparseable
    oversized = np.nan_to_num(area, nan=0.0) > matrix.max_box_area_frac
    grounded = (
        (row == "answerable") & correct & (np.nan_to_num(iou, nan=-1.0) >= matrix.iou_threshold) & ~oversized
    )
    reward[grounded] += matrix.box_bonus
    extra = np.clip(np.asarray(tool_calls, dtype=float) - matrix.free_tool_calls, 0, None)
    reward -= matrix.tool_call_cost * extra
    return reward, correct, grounded, oversized


def _boxes(values) -> np.ndarray:
    out = np.full((len(values), 4), np.nan)
    for i, v in enumerate(values):
        if v is not None and len(v) == 4:
            out[i] = v
    return out


BOX_UNITS = ("pixels", "per_mille")


def score_episodes(
    episodes: pa.Table, views: pa.Table, matrix: CostMatrix, test_set: str = "main", box_units: str = "pixels",
    splits: tuple[str, ...] | None = None, tools: tuple[str, ...] | None = None,
) -> tuple[pa.Table, list[dict]]:
    """Score every episode of a view in the test set. Returns (scores table, rejects rows).

    Episode boxes are pixels of the view, as tables hold them (records.BOX; the agent converts
    the model's 0-1000 box when it records the episode); ``box_units="per_mille"`` reads
    episodes that kept the model's 0-1000 coordinates. The test set is recomputed from
    ``views`` whatever the episodes hold (``testsets.outside_reason``, the rule ``eval run``
    selects its items by): an episode whose view is not in ``views`` becomes a reject
    (``view_missing``), and so does one whose view is outside the test set, under the rule that
    puts it there (``not_an_evaluation_view``, ``failed_qc``, ``outside_split``,
    ``outside_tools``); the rest are scored and carry ``test_set``.

    Parameters
    ----------
    episodes : pyarrow.Table
        The episodes table (``item_id`` is the view id).
    views : pyarrow.Table
        The views table.
    matrix : CostMatrix
        The cost matrix.
    test_set : str, optional
        The test set name the scores carry.
    box_units : {'pixels', 'per_mille'}, optional
        The units of the episodes' boxes.
    splits : tuple of str, optional
        The splits the test set reads (default ``testsets.splits_of(test_set)``).
    tools : tuple of str, optional
        The tools whose edits it reads (default ``testsets.tools_of(test_set)``; None: every tool).

    Returns
    -------
    scores : pyarrow.Table
        The ``scores`` table, one row per scored episode, with ``arm`` and ``seed`` from the model name;
        episodes read as ``unclear`` are left out (:func:`unclear_counts` counts them).
    rejects : list of dict
        ``rejects`` rows: ``view_missing``, ``duplicate_episode`` (a second episode of a model x
        condition x view; the first is scored) and, with the rule's text, the
        ``testsets.OUTSIDE_RULES`` codes.

    Raises
    ------
    MedScopeError
        When ``box_units`` is not one of :data:`BOX_UNITS`.

    References
    ----------
    .. [1] counterfactual paper, §3.4, Table 2.
    """
    if box_units not in BOX_UNITS:
        raise MedScopeError(f"box_units must be one of {BOX_UNITS}, not {box_units!r}")
    ep = episodes.select(
        ["run_id", "model", "condition", "item_id", "case_id", "action", "claims_finding", "box",
         "confidence", "tool_calls"]
    ).to_pandas(use_threads=False).rename(columns={"item_id": "view_id"})  # this protocol's items are views
    splits = testsets.splits_of(test_set) if splits is None else tuple(splits)
    tools = testsets.tools_of(test_set) if tools is None else tuple(tools)
    vw = views.select(
        ["view_id", "kind", "expected", "critical", "lesion_area_frac", "lesion_bbox", "width", "height",
         "imaging_type", "finding", "patient_id", "group_id", "tool", "source", "split", "passed", "reject_reason"]
    ).to_pandas(use_threads=False).drop_duplicates("view_id")
    merged = ep.merge(vw, on="view_id", how="left", indicator=True)
    lost = (merged["_merge"] != "both").to_numpy()
    # the test set from the views table, by the rule eval run selects its items with: an
    # episode outside it is excluded under that rule, whatever the eval run (or --items) held
    why_out = {r["view_id"]: testsets.outside_reason(r, test_set, splits, tools)
               for r in vw[["view_id", "kind", "passed", "split", "tool", "reject_reason"]].to_dict("records")}
    why_out = {v: why for v, why in why_out.items() if why is not None}  # per view, mapped onto episodes below
    out_mask = ~lost & merged["view_id"].isin(why_out.keys()).to_numpy()
    # one decision per model x condition x view: a second episode would count the view twice
    inside = ~lost & ~out_mask
    dup = np.zeros(len(merged), dtype=bool)
    dup[inside] = merged[inside].duplicated(["model", "condition", "view_id"], keep="first").to_numpy()
    rejects = [
        records.reject_row("scores", "episodes", f"{r.model}/{r.condition}/{r.view_id}", "score", "view_missing",
                       f"view {r.view_id} is not in the views table")
        for r in merged[lost].itertuples()
    ] + [
        records.reject_row("scores", "episodes", f"{r.model}/{r.condition}/{r.view_id}", "score", den.DUPLICATE,
                       f"a second episode of this view in run {r.run_id}; the first is scored "
                       "(runs of different seeds must be distinct models: <arm>@seed<k>)")
        for r in merged[dup].itertuples()
    ] + [
        records.reject_row("scores", "episodes", f"{r.model}/{r.condition}/{r.view_id}", "score", *why_out[r.view_id])
        for r in merged[out_mask].itertuples()
    ]
    # a reply the reader could not read with certainty is no decision: it lowers n (counted by
    # unclear_counts, shown by score, eval show and the report), never a wrong answer
    unclear = inside & ~dup & (merged["action"] == "unclear").to_numpy()
    df = merged[inside & ~dup & ~unclear].reset_index(drop=True)
    action = df["action"].to_numpy(dtype=object).copy()
    claims_raw = df["claims_finding"]
    no_claim = (action == "answer") & claims_raw.isna().to_numpy()
    action[no_claim] = "unparseable"  # an answer with no readable claim cannot be scored as one
    claims = claims_raw.fillna(False).to_numpy(dtype=bool)
    kind = df["kind"].to_numpy(dtype=object)
    lbox = _boxes(df["lesion_bbox"].tolist())
    present = lesion_present(kind, df["lesion_area_frac"].to_numpy(dtype=float), ~np.isnan(lbox).any(axis=1))
    boxes = _boxes(df["box"].tolist())
    if box_units == "per_mille":
        boxes = per_mille_to_pixels(boxes, df["width"].to_numpy(), df["height"].to_numpy())
    iou, area = box_iou(boxes, lbox, df["width"].to_numpy(), df["height"].to_numpy())
    reward, correct, grounded, oversized = view_rewards(
        kind, action, claims, present, df["critical"].to_numpy(dtype=bool), iou, area,
        df["tool_calls"].to_numpy(), matrix,
    )
    out = pd.DataFrame(
        {
            "run_id": df["run_id"], "model": df["model"], "condition": df["condition"],
            "view_id": df["view_id"], "case_id": df["case_id"], "kind": kind, "expected": df["expected"],
            "action": action, "claims_finding": df["claims_finding"].where(action == "answer", None),
            "correct": correct, "iou": pd.Series(iou).where(~np.isnan(iou), None),
            "grounded": grounded, "tool_calls": df["tool_calls"], "reward": reward,
            "cost_matrix": matrix.name, "test_set": test_set, "lesion_present": present,
            "critical": df["critical"], "oversized_box": oversized & ~np.isnan(area),
            "confidence": df["confidence"], "imaging_type": df["imaging_type"], "finding": df["finding"],
            "lesion_area_frac": df["lesion_area_frac"], "patient_id": df["patient_id"], "group_id": df["group_id"],
            "tool": df["tool"], "source": df["source"],
        }
    )
    # one model per seed run (<arm>@seed<k>): its arm and seed as columns (scoring.seeds)
    arm, seed = arm_seed_columns(out["model"])
    out["arm"] = pd.Series(arm, dtype=object)
    out["seed"] = pd.array(seed, dtype="Int32")
    table = pa.Table.from_pandas(out, preserve_index=False)
    return records.to_table("scores", table), rejects


def rescore(scores: pa.Table, matrix: CostMatrix) -> np.ndarray:
    """Rewards of an existing scores table under another matrix (for rankings under §5.5).

    Parameters
    ----------
    scores : pyarrow.Table
        A ``scores`` table.
    matrix : CostMatrix
        The other cost matrix.

    Returns
    -------
    numpy.ndarray
        Each row's reward under ``matrix``; the stored ``oversized_box`` stands for the box's area.

    References
    ----------
    .. [1] counterfactual paper, §5.5.
    """
    df = scores.select(["kind", "action", "claims_finding", "lesion_present", "critical", "iou",
                        "oversized_box", "tool_calls"]).to_pandas(use_threads=False)
    area = np.where(df["oversized_box"].fillna(False).to_numpy(dtype=bool), 1.0, 0.0)
    reward, *_ = view_rewards(
        df["kind"].to_numpy(dtype=object), df["action"].to_numpy(dtype=object),
        df["claims_finding"].fillna(False).to_numpy(dtype=bool), df["lesion_present"].fillna(False).to_numpy(dtype=bool),
        df["critical"].fillna(False).to_numpy(dtype=bool), df["iou"].astype(float).to_numpy(),
        area, df["tool_calls"].to_numpy(), matrix,
    )
    return reward


def unclear_counts(episodes: pa.Table, view_ids: set | None = None) -> dict[str, int]:
    """Episodes whose reply the reader could not read with certainty (action ``unclear``), per
    ``model/condition``: left out of every n of the scores, and shown beside them.

    Parameters
    ----------
    episodes : pyarrow.Table
        An episodes table.
    view_ids : set, optional
        Count only episodes of these views (the test set's); default every episode.

    Returns
    -------
    dict
        ``{"<model>/<condition>": count}`` for every pair with at least one unclear reading, sorted.
    """
    from collections import Counter

    rows = episodes.select(["model", "condition", "action", "item_id"]).to_pylist()
    got = Counter(f"{r['model']}/{r['condition']}" for r in rows
                  if r["action"] == "unclear" and (view_ids is None or r["item_id"] in view_ids))
    return dict(sorted(got.items()))
