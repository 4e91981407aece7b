"""Stage 3, general-VQA replay (counterfactual paper §3.5): the mix of MedScope views and ordinary questions.

"5,000 views mixing MedScope views with ordinary questions from the *training* splits of
VQA-RAD, SLAKE and PathVQA (any image near-identical to an evaluation image excluded), with
"absent" views at no less than 35% of the mix and "Is X healthy?" replay questions balanced
between yes and no."

- The question sets are ``vqa_items`` tables as ``medscope cohort import --format vqa-rad |
  slake-vqa | pathvqa`` writes them; only their ``train`` split is drawn from.
- Evaluation images: every image of every evaluation views table named in the recipe, and the
  test split of each question set (the standard-VQA test, Table 4 / Table 16). A candidate is a
  near-copy of one when its 64-bit difference hash is within the crosswalk's 8 bits and its 64 px
  pixel correlation reaches the crosswalk's near-copy threshold (0.97, §4.1) -- the
  functions and thresholds of :mod:`medscope.qc.near_copies`, so this and ``medscope crosswalk``
  agree on every pair. Each excluded question becomes a rejects row naming the evaluation image
  it copies, the hash distance and the correlation.
- The VQA part of the mix is split between the sets by ``shares`` (largest remainder); within a
  set, health questions enter in yes/no pairs, so they are balanced in the draw itself.
"""

from __future__ import annotations

import math

import numpy as np

from medscope import images
from medscope.io import records
from medscope.errors import MedScopeError
from medscope.qc import near_copies as nc
from medscope.seeding import derive_seed, rng_for

ABSENT_ANSWERS = {"no", "none", "no abnormality", "normal", "absent"}
EXCLUDED_REASON = "near_copy_of_evaluation_image"


# ---------------------------------------------------------------- questions

def vqa_expected(question: str, answer: str) -> str:
    """Whether a VQA item's target is an "absent" answer (for the ≥ 35% share): a "yes" to a
    health question, or a no-finding answer.

    Parameters
    ----------
    question : str
        The VQA question.
    answer : str
        Its answer (case, surrounding space and a final full stop ignored).

    Returns
    -------
    str
        'absent' or 'present'.
    """
    a, q = answer.strip().lower().rstrip("."), question.strip().lower()
    if is_health(question) and a == "yes":
        return "absent"
    return "absent" if a in ABSENT_ANSWERS else "present"


def is_health(question: str) -> bool:
    """An "Is X healthy?" / "Is X normal?" question.

    Parameters
    ----------
    question : str
        The question.

    Returns
    -------
    bool
        True when it starts with 'is', 'are' or 'does' and mentions 'healthy' or 'normal' (any case).
    """
    q = question.strip().lower()
    return q.startswith(("is", "are", "does")) and ("healthy" in q or "normal" in q)


def health_answer(row: dict) -> str | None:
    """"yes" / "no" for a health question answered yes or no; None for any other question.

    Parameters
    ----------
    row : dict
        A ``vqa_items`` row with ``question`` and ``answer``.

    Returns
    -------
    str or None
        'yes' or 'no'.
    """
    if not is_health(row["question"]):
        return None
    a = row["answer"].strip().lower().rstrip(".")
    return a if a in ("yes", "no") else None


# ---------------------------------------------------------------- near-copies (§4.1)

def _signatures(pngs: list[bytes]):
    hashes, thumbs = [], []
    for png in pngs:
        img = images.decode_png(png)
        hashes.append(nc.dhash64(img))
        thumbs.append(nc.thumbnail(img))
    return np.array(hashes, dtype=np.uint64), thumbs


def near_copy_matches(candidates: list[tuple[str, bytes]], references: list[tuple[str, bytes]],
                      max_bits: int = nc.MAX_BITS, min_corr: float = nc.NEAR_COPY_CORR) -> dict[str, dict]:
    """For each candidate (id, PNG) near-identical to some reference (id, PNG): the closest
    reference ``{"reference", "distance", "correlation"}`` (counterfactual paper §4.1: dhash within
    ``max_bits`` bits, confirmed by 64 px pixel correlation ≥ ``min_corr``). Each distinct file
    (by bytes) is hashed once on either side.

    Parameters
    ----------
    candidates : list of tuple of (str, bytes)
        (id, PNG) of the images that may be excluded.
    references : list of tuple of (str, bytes)
        (id, PNG) of the evaluation images.
    max_bits : int, optional
        Largest difference-hash distance, in bits.
    min_corr : float, optional
        Least 64 px pixel correlation.

    Returns
    -------
    dict of str to dict
        Candidate id -> its closest reference (smallest distance, then highest correlation); only
        candidates with a match.

    References
    ----------
    .. [1] counterfactual paper, §4.1.
    """
    if not candidates or not references:
        return {}

    def distinct(items):
        keys, files = [], {}
        for item_id, png in items:
            k = nc.file_key(png)
            keys.append(k)
            files.setdefault(k, (item_id, png))
        return keys, files

    ref_keys, ref_files = distinct(references)
    ref_order = sorted(ref_files)
    ref_h, ref_t = _signatures([ref_files[k][1] for k in ref_order])
    cand_keys, cand_files = distinct(candidates)
    found: dict[str, dict] = {}
    for k in sorted(cand_files):
        h, t = _signatures([cand_files[k][1]])
        dist = np.bitwise_count(ref_h ^ h[0])
        best = None
        for j in np.nonzero(dist <= max_bits)[0]:
            corr = nc.pixel_correlation(t[0], ref_t[j])
            if corr >= min_corr and (best is None or (dist[j], -corr) < (best["distance"], -best["correlation"])):
                best = {"reference": ref_files[ref_order[j]][0], "distance": int(dist[j]), "correlation": round(float(corr), 4)}
        if best:
            found[k] = best
    return {item_id: found[k] for (item_id, _), k in zip(candidates, cand_keys) if k in found}


def evaluation_images(view_tables: dict[str, list[dict]], question_sets: dict[str, list[dict]]) -> list[tuple[str, bytes]]:
    """(id, PNG) of every evaluation image: each evaluation views table's images outside its
    ``train`` split (every kind: a copy of an edited test view is a copy of its test case) and
    each question set's test split.

    Parameters
    ----------
    view_tables : dict of str to list of dict
        Evaluation views table name -> its rows (``view_id``, ``image``, ``split``).
    question_sets : dict of str to list of dict
        Question set name -> its ``vqa_items`` rows.

    Returns
    -------
    list of tuple of (str, bytes)
        ('<table>:<view_id>' or '<set>:test:<item_id>', PNG), tables then sets in name order.
    """
    out = []
    for name in sorted(view_tables):
        out += [(f"{name}:{v['view_id']}", v["image"]) for v in view_tables[name] if v.get("image") and v.get("split") != "train"]
    for name in sorted(question_sets):
        out += [(f"{name}:test:{r['item_id']}", r["image"]) for r in question_sets[name] if r["split"] == "test"]
    return out


def exclude_near_copies(question_sets: dict[str, list[dict]], eval_images: list[tuple[str, bytes]],
                        max_bits: int = nc.MAX_BITS, min_corr: float = nc.NEAR_COPY_CORR) -> tuple[dict[str, list[dict]], list[dict]]:
    """Each set's *training* questions with near-copies of evaluation images removed, and one
    rejects row per removed question saying which evaluation image it copies and how closely.

    Parameters
    ----------
    question_sets : dict of str to list of dict
        Question set name -> its ``vqa_items`` rows (every split).
    eval_images : list of tuple of (str, bytes)
        (id, PNG) of the evaluation images (``evaluation_images``).
    max_bits : int, optional
        Largest difference-hash distance, in bits.
    min_corr : float, optional
        Least 64 px pixel correlation.

    Returns
    -------
    kept : dict of str to list of dict
        Set name -> its training questions without near-copies.
    rejects : list of dict
        Records rejects rows (table 'vqa_items', stage 'replay').
    """
    train = {name: [r for r in rows if r["split"] == "train"] for name, rows in question_sets.items()}
    cands = [(r["item_id"], r["image"]) for name in sorted(train) for r in train[name]]
    matches = near_copy_matches(cands, eval_images, max_bits, min_corr)
    kept, rejects = {}, []
    for name in sorted(train):
        kept[name] = [r for r in train[name] if r["item_id"] not in matches]
        for r in train[name]:
            m = matches.get(r["item_id"])
            if m:
                rejects.append(records.reject_row("vqa_items", name, r["item_id"], "replay", EXCLUDED_REASON,
                                              f"{r['image_file']} ~ {m['reference']}: dhash distance {m['distance']} "
                                              f"(<= {max_bits}), correlation {m['correlation']:.4f} (>= {min_corr})"))
    return kept, rejects


# ---------------------------------------------------------------- the draw

def quotas(n: int, shares: dict[str, float]) -> dict[str, int]:
    """``n`` split by ``shares`` (normalised) with the largest-remainder rule; ties by name.

    Parameters
    ----------
    n : int
        The total to split.
    shares : dict of str to float
        Name -> share, any positive scale.

    Returns
    -------
    dict of str to int
        Name -> count, summing to ``n``.

    Raises
    ------
    MedScopeError
        When the shares add up to zero or less.
    """
    total = sum(shares.values())
    if total <= 0:
        raise MedScopeError("replay question-set shares must add up to more than zero")
    exact = {k: n * s / total for k, s in shares.items()}
    out = {k: math.floor(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[: n - sum(out.values())]:
        out[k] += 1
    return out


def draw_questions(rows: list[dict], n: int, draw_seed: int) -> list[dict]:
    """``n`` questions of one set in a random order of ``draw_seed``; a health question is taken
    only together with one of the other answer, so yes and no are equal in the draw.

    Parameters
    ----------
    rows : list of dict
        One set's training questions (``item_id``, ``question``, ``answer``).
    n : int
        How many to draw.
    draw_seed : int
        The fixed draw's seed.

    Returns
    -------
    list of dict
        ``n`` rows.

    Raises
    ------
    MedScopeError
        When the set has too few questions once health questions are paired.
    """
    ranked = sorted(rows, key=lambda r: derive_seed(draw_seed, r["item_id"], "replay"))
    out: list[dict] = []
    waiting: dict[str, list[dict]] = {"yes": [], "no": []}
    for r in ranked:
        if len(out) == n:
            break
        h = health_answer(r)
        if h is None:
            out.append(r)
            continue
        other = "no" if h == "yes" else "yes"
        if waiting[other] and n - len(out) >= 2:
            out += [waiting[other].pop(0), r]
        else:
            waiting[h].append(r)
    if len(out) < n:
        raise MedScopeError(f"a question set has {len(rows)} usable training questions ({len(out)} once its health "
                            f"questions are paired yes with no): too few for its {n} replay items")
    return out


def draw_vqa(pools: dict[str, list[dict]], n_vqa: int, shares: dict[str, float], draw_seed: int) -> list[dict]:
    """The VQA part of the mix: each set's quota of ``n_vqa`` (by ``shares``), each row tagged
    with its set (``set``) and whether its target is "absent" (``expected``).

    Parameters
    ----------
    pools : dict of str to list of dict
        Set name -> its usable training questions.
    n_vqa : int
        VQA items in the mix.
    shares : dict of str to float
        Set name -> share of the VQA items.
    draw_seed : int
        The fixed draw's seed.

    Returns
    -------
    list of dict
        The drawn rows, sets in name order.

    Raises
    ------
    MedScopeError
        When a share names a set not in ``pools``, the shares add up to zero, or a set is too small.
    """
    missing = sorted(set(shares) - set(pools))
    if missing:
        raise MedScopeError(f"replay shares name question sets that were not given: {missing}")
    out = []
    for name, q in sorted(quotas(n_vqa, shares).items()):
        out += [dict(r, set=name, expected=vqa_expected(r["question"], r["answer"])) for r in draw_questions(pools[name], q, draw_seed)]
    return out


def replay_mix(views: list[dict], vqa: list[dict], n_items: int, absent_share_min: float, seed: int, draw_seed: int = 0) -> list[dict]:
    """Stage-3 mix of ``n_items``: the drawn VQA items ({"vqa": row}) and views ({"view": row}),
    "absent" targets at least ``absent_share_min`` of the whole (absent views drawn first, with
    repetition if the pool is small), in an order of the run ``seed``.

    Parameters
    ----------
    views : list of dict
        MedScope views to draw from (``view_id``, ``expected``).
    vqa : list of dict
        The drawn VQA items (``draw_vqa``).
    n_items : int
        Size of the mix.
    absent_share_min : float
        The least share of "absent" targets.
    seed : int
        The run seed (order of the mix).
    draw_seed : int, optional
        The fixed draw's seed (which views).

    Returns
    -------
    list of dict
        ``n_items`` entries, each {"vqa": row} or {"view": row}.

    Raises
    ------
    MedScopeError
        When the VQA items exceed ``n_items``, or the absent share cannot be reached.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    n_views = n_items - len(vqa)
    if n_views < 0:
        raise MedScopeError(f"{len(vqa)} VQA items do not fit in a mix of {n_items}")
    a_vqa = sum(r["expected"] == "absent" for r in vqa)
    absent_pool = [v for v in views if v["expected"] == "absent"]
    other_pool = [v for v in views if v["expected"] != "absent"]
    natural = round(n_views * len(absent_pool) / max(1, len(views)))
    n_absent = min(n_views, max(natural, math.ceil(absent_share_min * n_items - 1e-9) - a_vqa))
    if n_absent and not absent_pool:
        raise MedScopeError("replay mix needs absent views (target removal or natural negatives) to reach its absent share")
    if (a_vqa + n_absent) < absent_share_min * n_items - 1e-9:
        raise MedScopeError(f"replay mix cannot reach an absent share of {absent_share_min} with {n_views} views")
    pick = _cycle(_ranked(absent_pool, draw_seed, "absent"), n_absent) + _cycle(_ranked(other_pool or absent_pool, draw_seed, "other"), n_views - n_absent)
    mix = [{"vqa": r} for r in vqa] + [{"view": v} for v in pick]
    perm = rng_for(seed, "replay").permutation(len(mix))
    return [mix[i] for i in perm]


def _ranked(views: list[dict], draw_seed: int, salt: str) -> list[dict]:
    return sorted(views, key=lambda v: derive_seed(draw_seed, v["view_id"], salt))


def _cycle(pool: list, n: int) -> list:
    return [pool[i % len(pool)] for i in range(n)] if pool else []


def absent_share(mix: list[dict]) -> float:
    """The share of a mix's entries whose target is "absent".

    Parameters
    ----------
    mix : list of dict
        Entries of ``replay_mix``.

    Returns
    -------
    float
        In [0, 1]; 0 for an empty mix.
    """
    a = sum((m["vqa"]["expected"] if "vqa" in m else m["view"]["expected"]) == "absent" for m in mix)
    return a / max(1, len(mix))


def mix_counts(mix: list[dict]) -> dict:
    """What the mix holds, for the run summary: items per question set, views, the absent share
    and the health questions by answer.

    Parameters
    ----------
    mix : list of dict
        Entries of ``replay_mix``.

    Returns
    -------
    dict
        ``vqa_by_set`` (set -> items), ``views``, ``absent_share`` (4 decimals) and ``health_questions``
        ({"yes": n, "no": n}).
    """
    by_set: dict[str, int] = {}
    health = {"yes": 0, "no": 0}
    for m in mix:
        if "vqa" in m:
            by_set[m["vqa"]["set"]] = by_set.get(m["vqa"]["set"], 0) + 1
            h = health_answer(m["vqa"])
            if h:
                health[h] += 1
    return {"vqa_by_set": dict(sorted(by_set.items())), "views": sum("view" in m for m in mix),
            "absent_share": round(absent_share(mix), 4), "health_questions": health}
