"""What each stage trains on: the fixed draw of views, repeats, preference pairs, paired-view
triplets (counterfactual paper §3.5, §3.7, §4.2); the stage-3 mix is :mod:`medscope.training.replay`.

Every draw is deterministic: the stage-1 draw depends on ``draw_seed`` only (shared by the
seeds of an arm, Appendix B); data order and trajectory sampling on the run ``seed``.
"""

from __future__ import annotations

import math
from collections import defaultdict

import pyarrow as pa

from medscope.errors import MedScopeError
from medscope.seeding import derive_seed, rng_for
from medscope.training import trajectories as tj


def training_views(table: pa.Table, allowed_kinds, split: str = "train") -> list[dict]:
    """QC-passed views of ``split`` whose kind the arm allows (each arm draws only from these).

    Parameters
    ----------
    table : pyarrow.Table
        A views table.
    allowed_kinds : iterable of str
        The view kinds the arm trains on.
    split : str, optional
        The split drawn from; rows without a split are taken too.

    Returns
    -------
    list of dict
        The rows, in table order.

    Raises
    ------
    MedScopeError
        When no row qualifies.
    """
    rows = [r for r in table.to_pylist() if r["passed"] and (r["split"] in (None, split)) and r["kind"] in set(allowed_kinds)]
    if not rows:
        raise MedScopeError(f"no passed {split} views of kinds {sorted(allowed_kinds)} in the views table")
    return rows


def fixed_draw(views: list[dict], n: int | None, draw_seed: int) -> list[dict]:
    """``n`` views drawn once at random: a function of (draw_seed, view ids) only.

    Parameters
    ----------
    views : list of dict
        Candidate views, each with ``view_id``.
    n : int or None
        How many to draw; None: all of them, in the draw's order.
    draw_seed : int
        The draw's seed (shared by every seed of an arm).

    Returns
    -------
    list of dict
        The first ``n`` views ranked by a hash of (draw_seed, view id).
    """
    ranked = sorted(views, key=lambda v: derive_seed(draw_seed, v["view_id"], "draw"))
    return ranked if n is None else ranked[:n]


def with_repeats(views: list[dict], small_frac: float, small_repeat: int) -> list[dict]:
    """Views whose lesion covers under ``small_frac`` of the image appear ``small_repeat`` times.

    Parameters
    ----------
    views : list of dict
        Views with ``lesion_bbox`` and ``lesion_area_frac``.
    small_frac : float
        Lesion area, as a fraction of the image, under which a lesion is small.
    small_repeat : int
        How many times a small-lesion view appears.

    Returns
    -------
    list of dict
        The views in order, each small-lesion view repeated in place.
    """
    out = []
    for v in views:
        small = v.get("lesion_bbox") is not None and 0 < v["lesion_area_frac"] < small_frac
        out += [v] * (small_repeat if small else 1)
    return out


def absent_fraction(views: list[dict]) -> float:
    """The share of views whose expected answer is "absent".

    Parameters
    ----------
    views : list of dict
        Views with ``expected``.

    Returns
    -------
    float
        In [0, 1]; 0 for no views.
    """
    return sum(v["expected"] == "absent" for v in views) / max(1, len(views))


def match_absent_share(views: list[dict], target: float) -> list[dict]:
    """The "absent"-share matched arm of the counterfactual paper §4.2: lesion-free views (natural negatives)
    repeated until "absent" targets are at least ``target`` of the draw, *at the same draw
    size* (so the arm keeps the reference arm's size and steps): the last non-absent views of
    the random draw are replaced, one repeated negative each, the fewest that reach the share.

    Parameters
    ----------
    views : list of dict
        The random draw, in order.
    target : float
        The least share of "absent" targets, in [0, 1).

    Returns
    -------
    list of dict
        A draw of the same size with the fewest replacements that reach the share; the natural negatives
        of the draw are cycled as replacements.

    Raises
    ------
    MedScopeError
        When the draw has no natural negatives or too few other views to replace.

    References
    ----------
    .. [1] counterfactual paper, §4.2.
    """
    negatives = [v for v in views if v["kind"] == "natural_negative"]
    if not negatives:
        raise MedScopeError("matching the absent share needs natural-negative views")
    n, absent = len(views), sum(v["expected"] == "absent" for v in views)
    k = max(0, math.ceil(target * n - absent - 1e-9))  # each replacement adds one absent target
    others = [i for i, v in enumerate(views) if v["expected"] != "absent"]
    if k > len(others):
        raise MedScopeError(f"cannot reach an absent share of {target:.3f} in a draw of {n}")
    out = list(views)
    for j, i in enumerate(reversed(others[len(others) - k :])):
        out[i] = negatives[j % len(negatives)]
    return out


def shuffled(items: list, seed: int, salt: str = "order") -> list:
    """A seed-dependent data order.

    Parameters
    ----------
    items : list
        Anything.
    seed : int
        The run seed.
    salt : str, optional
        Names the order, so different orders from one seed are independent.

    Returns
    -------
    list
        A permutation of ``items`` fixed by (seed, salt).
    """
    perm = rng_for(seed, salt).permutation(len(items))
    return [items[i] for i in perm]


def sft_draw(views: list[dict], recipe) -> list[dict]:
    """Stage 1's views in draw order: ``n_views`` drawn once (by ``draw_seed``), the absent
    share matched if the arm asks, then small lesions repeated (§3.5).

    Parameters
    ----------
    views : list of dict
        The arm's training views (``training_views``).
    recipe : TrainRecipe
        Reads ``n_views``, ``draw_seed``, ``match_absent_share`` and ``trajectory.small_frac`` /
        ``small_repeat``.

    Returns
    -------
    list of dict
        The drawn views, small lesions repeated.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    drawn = fixed_draw(views, recipe.n_views, recipe.draw_seed)
    if recipe.match_absent_share is not None:
        drawn = match_absent_share(drawn, recipe.match_absent_share)
    return with_repeats(drawn, recipe.trajectory.small_frac, recipe.trajectory.small_repeat)


def one_pass_steps(n_examples: int, recipe, world: int = 1) -> int:
    """Optimiser steps of one pass over ``n_examples``: ceil(n / (batch × accumulation ×
    workers)). The counterfactual paper §3.5's 3,706 stage-1 steps are this for its draw and batch.

    Parameters
    ----------
    n_examples : int
        Examples in one pass.
    recipe : TrainRecipe
        Reads ``batch_size`` and ``grad_accum``.
    world : int, optional
        Data-parallel workers.

    Returns
    -------
    int
        Optimiser steps.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    return math.ceil(n_examples / (recipe.batch_size * recipe.grad_accum * world))


def effective_batches_for(n_views: int, steps: int, small_repeat: int, max_small_share: float = 1.0) -> dict[int, tuple[int, int]]:
    """The effective batches B = batch × accumulation under which one pass over ``n_views``
    drawn views, each small-lesion view appearing ``small_repeat`` times, takes exactly
    ``steps`` optimiser steps, with the range of small-lesion views s that needs:
    ceil((n + (r − 1)·s) / B) = steps  ⇔  (steps − 1)·B < n + (r − 1)·s ≤ steps·B.
    Only B whose range holds an s ≤ ``max_small_share``·n are returned, as {B: (s_min, s_max)}.
    The counterfactual paper §3.5 gives n, steps and the repeat but not the batch: this recovers it.

    Parameters
    ----------
    n_views : int
        Views drawn (n).
    steps : int
        Optimiser steps of one pass.
    small_repeat : int
        Appearances of each small-lesion view (r), at least 2.
    max_small_share : float, optional
        The largest share of small-lesion views considered plausible.

    Returns
    -------
    dict of int to tuple of (int, int)
        Effective batch B -> (s_min, s_max), for every B that fits.

    Raises
    ------
    MedScopeError
        When ``small_repeat`` < 2.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    if small_repeat < 2:
        raise MedScopeError("small_repeat must be at least 2 for the steps to say anything about the batch")
    extra = small_repeat - 1
    out = {}
    for b in range(1, math.ceil(n_views * small_repeat / max(1, steps - 1)) + 1):
        lo = max(0, ((steps - 1) * b - n_views) // extra + 1)  # smallest s with n + extra·s > (steps−1)·b
        hi = min(n_views, (steps * b - n_views) // extra) if steps * b >= n_views else -1
        if lo <= hi and lo <= max_small_share * n_views:
            out[b] = (lo, min(hi, math.floor(max_small_share * n_views)))
    return out


def sft_plan(views: list[dict], recipe) -> list[tuple[dict, int]]:
    """Stage 1's examples before any is built: (view, copy index) for the fixed draw with small
    lesions repeated, in the seed's order. A repeated view gets a different trajectory per copy
    (the copy index is part of its key).

    Parameters
    ----------
    views : list of dict
        The arm's training views.
    recipe : TrainRecipe
        The stage-1 recipe (draw as ``sft_draw``; order by ``seed``).

    Returns
    -------
    list of tuple of (dict, int)
        (view, copy index) pairs in the seed's order.
    """
    counts: dict[str, int] = defaultdict(int)
    keyed = []
    for v in sft_draw(views, recipe):
        keyed.append((v, counts[v["view_id"]]))
        counts[v["view_id"]] += 1
    return shuffled(keyed, recipe.seed)


def sft_build(item: tuple[dict, int], recipe) -> tj.Trajectory:
    """The trajectory of one planned example (:func:`sft_plan`).

    Parameters
    ----------
    item : tuple of (dict, int)
        A (view, copy index) pair of ``sft_plan``.
    recipe : TrainRecipe
        Reads ``seed`` and the ``trajectory`` settings.

    Returns
    -------
    Trajectory
        Built with seed derived from (recipe seed, copy index); through the agent loop when the prompt
        is 'agent'.
    """
    v, copy = item
    t = recipe.trajectory
    return tj.build_trajectory(v, derive_seed(recipe.seed, copy), small_frac=t.small_frac,
                               p_zoom=t.p_zoom, p_window=t.p_window, p_paraphrase=t.p_paraphrase,
                               system=tj.PROMPTS[t.prompt], via_agent_loop=t.prompt == "agent")


def sft_trajectories(views: list[dict], recipe, rank: int = 0, world: int = 1) -> list[tj.Trajectory]:
    """Stage-1 examples: the fixed draw, small lesions repeated, trajectories sampled per seed,
    in the seed's order. With ``world`` > 1, only this ``rank``'s shard (:func:`shard`) is built,
    so Ray Train workers split the work instead of each building every example.

    Parameters
    ----------
    views : list of dict
        The arm's training views.
    recipe : TrainRecipe
        The stage-1 recipe.
    rank : int, optional
        This worker's rank.
    world : int, optional
        Number of workers.

    Returns
    -------
    list of Trajectory
        This rank's share of the stage-1 examples, in the seed's order.
    """
    return [sft_build(item, recipe) for item in shard(sft_plan(views, recipe), rank, world)]


def shard(items: list, rank: int, world: int) -> list:
    """This worker's share of ``items``: equal shards (DDP steps in lock step), every
    ``world``-th item from ``rank``; the remainder is dropped (all items if fewer than ``world``).

    Parameters
    ----------
    items : list
        Anything, in order.
    rank : int
        This worker's rank, 0 to ``world`` - 1.
    world : int
        Number of workers.

    Returns
    -------
    list
        ``items[rank::world]`` of the largest multiple of ``world`` items.
    """
    usable = (len(items) // world) * world or len(items)
    return items[:usable][rank::world]


def has_dpo_pair(v: dict) -> bool:
    """Whether a view gives a C2 / C3 preference pair (see :func:`dpo_pairs`).

    Parameters
    ----------
    v : dict
        A view with ``kind``, ``expected`` and ``question_kind``.

    Returns
    -------
    bool
        True for a target removal, an original or insertion expected "present", or a natural negative
        with a non-open question.
    """
    return (v["kind"] == "target_removal"
            or (v["kind"] in ("original", "insertion") and v["expected"] == "present")
            or (v["kind"] == "natural_negative" and v["question_kind"] != "open"))


def dpo_pair_views(views: list[dict]) -> list[dict]:
    """The views that give a pair, in order: one pair each, so a draw, order or shard of these is
    the same draw, order or shard of the pairs, chosen without building any pair.

    Parameters
    ----------
    views : list of dict
        Views.

    Returns
    -------
    list of dict
        Those for which ``has_dpo_pair`` holds, in order.
    """
    return [v for v in views if has_dpo_pair(v)]


def dpo_pairs(views: list[dict]) -> list[dict]:
    """C2's pairs (counterfactual paper §3.7): erased -> "absent" over the finding with its former box;
    unedited lesion -> the reverse; lesion-free -> "No" over "Yes". Open questions on lesion-free
    images have no pair. C3 uses the same pass on the recipe's pools "insertions included": an
    inserted lesion is a lesion, so "present" (with its box) over "absent". Which kinds take
    part is the recipe's ``allowed_kinds``. Returns {view, chosen, rejected}.

    Parameters
    ----------
    views : list of dict
        Views (with the fields ``trajectories.reply_texts`` reads).

    Returns
    -------
    list of dict
        One {view, chosen, rejected} per view with a pair, in order; chosen / rejected are single-turn
        final replies.

    References
    ----------
    .. [1] counterfactual paper, §3.7.
    """
    pairs = []
    for v in dpo_pair_views(views):
        present, absent = tj.reply_texts(v)
        if v["kind"] == "target_removal" or v["kind"] == "natural_negative":
            pairs.append({"view": v, "chosen": absent, "rejected": present})
        else:
            pairs.append({"view": v, "chosen": present, "rejected": absent})
    return pairs


def paired_triplets(views: list[dict]) -> list[dict]:
    """C4's triplets: per case, its original O, random-removal control C and target removal E.

    Parameters
    ----------
    views : list of dict
        Views with ``view_id``, ``case_id`` and ``kind``.

    Returns
    -------
    list of dict
        {"O": original, "C": random removal, "E": target removal} per case holding all three, in case-id
        order (the first view of each kind by view id).
    """
    by_case: dict[str, dict[str, dict]] = defaultdict(dict)
    for v in sorted(views, key=lambda r: r["view_id"]):
        by_case[v["case_id"]].setdefault(v["kind"], v)
    return [
        {"O": k["original"], "C": k["random_removal"], "E": k["target_removal"]}
        for _, k in sorted(by_case.items())
        if {"original", "random_removal", "target_removal"} <= set(k)
    ]
