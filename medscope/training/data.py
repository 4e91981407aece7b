"""What each stage trains on: the fixed draw of views, repeats, preference pairs, paired-view
triplets and the replay mix (seed 000 §3.5, §3.7, §4.2).

Every draw is deterministic: the stage-1 draw depends on ``draw_seed`` only (shared by the
seeds of an arm, Appendix B); data order and trajectory sampling on the run ``seed``.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pyarrow as pa

from medscope import images, records
from medscope.errors import MedScopeError
from medscope.seeding import derive_seed, rng_for
from medscope.training import trajectories as tj

ABSENT_ANSWERS = {"no", "none", "no abnormality", "normal", "absent"}


def training_views(table: pa.Table, allowed_kinds, split: str = "train") -> list[dict]:
    """QC-passed views of ``split`` whose kind the arm allows (each arm draws only from these)."""
    rows = [r for r in table.to_pylist() if r["passed"] and (r["split"] in (None, split)) and r["kind"] in set(allowed_kinds)]
    if not rows:
        raise MedScopeError(f"no passed {split} views of kinds {sorted(allowed_kinds)} in the views table")
    return rows


def fixed_draw(views: list[dict], n: int | None, draw_seed: int) -> list[dict]:
    """``n`` views drawn once at random: a function of (draw_seed, view ids) only."""
    ranked = sorted(views, key=lambda v: derive_seed(draw_seed, v["view_id"], "draw"))
    return ranked if n is None else ranked[:n]


def with_repeats(views: list[dict], small_frac: float, small_repeat: int) -> list[dict]:
    """Views whose lesion covers under ``small_frac`` of the image appear ``small_repeat`` times."""
    out = []
    for v in views:
        small = v.get("lesion_bbox") is not None and 0 < v["lesion_area_frac"] < small_frac
        out += [v] * (small_repeat if small else 1)
    return out


def absent_fraction(views: list[dict]) -> float:
    return sum(v["expected"] == "absent" for v in views) / max(1, len(views))


def match_absent_share(views: list[dict], target: float) -> list[dict]:
    """The "absent"-share matched arm of seed 000 §4.2: lesion-free views (natural negatives)
    repeated until "absent" targets are at least ``target`` of the draw, *at the same draw
    size* (so the arm keeps the reference arm's size and steps): the last non-absent views of
    the random draw are replaced, one repeated negative each, the fewest that reach the share."""
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
    """A seed-dependent data order."""
    perm = rng_for(seed, salt).permutation(len(items))
    return [items[i] for i in perm]


def sft_draw(views: list[dict], recipe) -> list[dict]:
    """Stage 1's views in draw order: ``n_views`` drawn once (by ``draw_seed``), the absent
    share matched if the arm asks, then small lesions repeated (§3.5)."""
    drawn = fixed_draw(views, recipe.n_views, recipe.draw_seed)
    if recipe.match_absent_share is not None:
        drawn = match_absent_share(drawn, recipe.match_absent_share)
    return with_repeats(drawn, recipe.trajectory.small_frac, recipe.trajectory.small_repeat)


def one_pass_steps(n_examples: int, recipe, world: int = 1) -> int:
    """Optimiser steps of one pass over ``n_examples``: ceil(n / (batch × accumulation ×
    workers)). Seed 000 §3.5's 3,706 stage-1 steps are this for its draw and batch."""
    return math.ceil(n_examples / (recipe.batch_size * recipe.grad_accum * world))


def sft_trajectories(views: list[dict], recipe, rank: int = 0, world: int = 1) -> list[tj.Trajectory]:
    """Stage-1 examples: the fixed draw, small lesions repeated, trajectories sampled per seed,
    in the seed's order. With ``world`` > 1, only this ``rank``'s shard (:func:`shard`) is built,
    so Ray Train workers split the work instead of each building every example.

    A repeated view gets a different trajectory per copy (the copy index is part of its key).
    """
    drawn = sft_draw(views, recipe)
    counts: dict[str, int] = defaultdict(int)
    keyed = []
    for v in drawn:
        keyed.append((v, counts[v["view_id"]]))
        counts[v["view_id"]] += 1
    t = recipe.trajectory
    return [tj.build_trajectory(v, derive_seed(recipe.seed, copy), small_frac=t.small_frac,
                                p_zoom=t.p_zoom, p_window=t.p_window, p_paraphrase=t.p_paraphrase,
                                system=tj.PROMPTS[t.prompt], via_agent_loop=t.prompt == "agent")
            for v, copy in shard(shuffled(keyed, recipe.seed), rank, world)]


def shard(items: list, rank: int, world: int) -> list:
    """This worker's share of ``items``: equal shards (DDP steps in lock step), every
    ``world``-th item from ``rank``; the remainder is dropped (all items if fewer than ``world``)."""
    usable = (len(items) // world) * world or len(items)
    return items[:usable][rank::world]


def dpo_pairs(views: list[dict]) -> list[dict]:
    """C2's pairs (seed 000 §3.7): erased -> "absent" over the finding with its former box;
    unedited lesion -> the reverse; lesion-free -> "No" over "Yes". Open questions on lesion-free
    images have no pair. C3 uses the same pass on the recipe's pools "insertions included": an
    inserted lesion is a lesion, so "present" (with its box) over "absent". Which kinds take
    part is the recipe's ``allowed_kinds``. Returns {view, chosen, rejected}."""
    pairs = []
    for v in views:
        present, absent = tj.reply_texts(v)
        if v["kind"] == "target_removal":
            pairs.append({"view": v, "chosen": absent, "rejected": present})
        elif v["kind"] in ("original", "insertion") and v["expected"] == "present":
            pairs.append({"view": v, "chosen": present, "rejected": absent})
        elif v["kind"] == "natural_negative" and v["question_kind"] != "open":
            pairs.append({"view": v, "chosen": absent, "rejected": present})
    return pairs


def paired_triplets(views: list[dict]) -> list[dict]:
    """C4's triplets: per case, its original O, random-removal control C and target removal E."""
    by_case: dict[str, dict[str, dict]] = defaultdict(dict)
    for v in sorted(views, key=lambda r: r["view_id"]):
        by_case[v["case_id"]].setdefault(v["kind"], v)
    return [
        {"O": k["original"], "C": k["random_removal"], "E": k["target_removal"]}
        for _, k in sorted(by_case.items())
        if {"original", "random_removal", "target_removal"} <= set(k)
    ]


# ---------------------------------------------------------------- stage 3 replay

def vqa_expected(question: str, answer: str) -> str:
    """Whether a VQA item's target is an "absent" answer (for the ≥ 35% share)."""
    a, q = answer.strip().lower().rstrip("."), question.strip().lower()
    if ("healthy" in q or "normal" in q) and a == "yes":
        return "absent"
    return "absent" if a in ABSENT_ANSWERS else "present"


def is_health(question: str) -> bool:
    q = question.strip().lower()
    return q.startswith(("is", "are", "does")) and ("healthy" in q or "normal" in q)


def near_copy_mask(candidates: list[bytes], references: list[bytes], hash_bits: int = 8, min_corr: float = 0.97) -> np.ndarray:
    """True for each candidate image near-identical to some reference (seed 000 §4.1), through
    the QC crosswalk: dhash within ``hash_bits`` bits, confirmed by 64 px pixel correlation
    ≥ ``min_corr``."""
    from medscope.qc import crosswalk as cw

    def prep(png):
        img = images.decode_png(png)
        return cw.dhash64(img), cw.thumbnail(img)

    refs = [prep(r) for r in references]
    out = np.zeros(len(candidates), dtype=bool)
    for i, c in enumerate(candidates):
        h, t = prep(c)
        out[i] = any(cw.hamming(h, rh) <= hash_bits and cw.pixel_correlation(t, rt) >= min_corr for rh, rt in refs)
    return out


def vqa_items(table: pa.Table, eval_images: list[bytes], settings, seed: int) -> tuple[list[dict], list[dict]]:
    """VQA rows usable for replay (near-copies of evaluation images dropped, health questions
    balanced between yes and no), and rejects rows for what was dropped."""
    need = {"image", "question", "answer"}
    if not need <= set(table.column_names):
        raise MedScopeError(f"VQA table needs columns {sorted(need)}; has {table.column_names}")
    rows = table.to_pylist()
    dup = near_copy_mask([r["image"] for r in rows], eval_images, settings.hash_bits, settings.min_corr) if eval_images else np.zeros(len(rows), bool)
    rejects = [records.reject("vqa", "replay", r.get("item_id") or str(i), "replay", "near_copy_of_eval_image") for i, r in enumerate(rows) if dup[i]]
    kept = [dict(r, expected=vqa_expected(r["question"], r["answer"])) for r, d in zip(rows, dup) if not d]
    health = [r for r in kept if is_health(r["question"])]
    yes = [r for r in health if r["answer"].strip().lower().startswith("yes")]
    no = [r for r in health if not r["answer"].strip().lower().startswith("yes")]
    m = min(len(yes), len(no))
    keep_health = shuffled(yes, seed, "health-yes")[:m] + shuffled(no, seed, "health-no")[:m]
    kept = [r for r in kept if not is_health(r["question"])] + keep_health
    return shuffled(kept, seed, "vqa"), rejects


def replay_mix(views: list[dict], vqa: list[dict], settings, seed: int) -> list[dict]:
    """Stage-3 mix of ``settings.n_items``: VQA items ({"vqa": row}) and views ({"view": row}),
    with "absent" targets at least ``absent_share_min`` of the whole (absent views are drawn
    first, with repetition if the pool is small)."""
    n = settings.n_items
    n_vqa = min(len(vqa), round(settings.vqa_share * n))
    chosen_vqa = vqa[:n_vqa]
    a_vqa = sum(r["expected"] == "absent" for r in chosen_vqa)
    n_views = n - n_vqa
    absent_pool = [v for v in views if v["expected"] == "absent"]
    other_pool = [v for v in views if v["expected"] != "absent"]
    natural = round(n_views * len(absent_pool) / max(1, len(views)))
    n_absent = min(n_views, max(natural, math.ceil(settings.absent_share_min * n) - a_vqa))
    if n_absent and not absent_pool:
        raise MedScopeError("replay mix needs absent views (target removal or natural negatives) to reach its absent share")
    pick = _cycle(shuffled(absent_pool, seed, "absent"), n_absent) + _cycle(shuffled(other_pool or absent_pool, seed, "other"), n_views - n_absent)
    mix = [{"vqa": r} for r in chosen_vqa] + [{"view": v} for v in pick]
    return shuffled(mix, seed, "replay")


def _cycle(pool: list, n: int) -> list:
    return [pool[i % len(pool)] for i in range(n)] if pool else []


def absent_share(mix: list[dict]) -> float:
    a = sum((m["vqa"]["expected"] if "vqa" in m else m["view"]["expected"]) == "absent" for m in mix)
    return a / max(1, len(mix))
