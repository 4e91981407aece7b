"""Scoring of multiple-choice episodes into the benchmark-MCQ paper's tables (Tables 1-4, Fig. 2).

Cells are (cohort, question type, model). ``metrics_rows`` gives the interval estimates
(B = 2000): accuracy per condition, the random baseline of each pool, the paired sighted /
blind accuracies and Δ on the questions valid in both runs, and per-subcategory accuracy with
its own chance. ``test_rows`` gives the confirmatory tests at higher resolution (B = 10,000):
Family 1 (accuracy above chance, one-sided) and Family 2 (Δ != 0 two-sided, with TOST), each
with Benjamini-Hochberg q-values within its family.

References: see ``accuracy_tests`` (case bootstrap, Benjamini-Hochberg, TOST).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from medscope.protocols import denominators as den
from medscope.protocols.benchmark_mcq import accuracy_tests as stats  # accuracy, its intervals and tests
from medscope.protocols.benchmark_mcq.families import assign_families
from medscope.protocols.benchmark_mcq.replies import read_choice
from medscope.render import thin

SIGHTED, BLIND = "sighted", "blind"


EXCLUSION_RULES = {den.NOT_IN_ITEMS: "question not in the builds' mcq_items",
                   den.UNKNOWN_CONDITION: "not sighted or blind",
                   den.FAILED_CALL: "an error and no reply; its question stays missing",
                   den.DUPLICATE: den.DUPLICATE_MEANING}


def exclusion_rule(ep: dict, known) -> str | None:
    """The rule an episode is excluded under before any duplicate is looked for (None: scorable).

    Parameters
    ----------
    ep : dict
        An episode (``item_id``, ``condition``, ``raw_text``, ``error``).
    known : collection of str
        The builds' question ids.

    Returns
    -------
    str or None
        ``not_in_items``, ``unknown_condition``, ``failed_call``, or None.
    """
    if ep["item_id"] not in known:
        return den.NOT_IN_ITEMS
    if ep["condition"] not in (SIGHTED, BLIND):
        return den.UNKNOWN_CONDITION
    if ep.get("raw_text") is None and ep.get("error"):
        return den.FAILED_CALL
    return None


def coverage(item_ids: list[str], episodes: list[dict], rows: list[dict], pairs: list[tuple[str, str]] = (),
             duplicates: list[dict] = ()) -> dict:
    """Every model x condition (sighted, blind) against the builds' questions (the fixed
    denominator): questions answered (an invalid reply is an answer, in the invalid rate), missing
    (no episode, or only a failed call: a failed unit), and the episodes excluded by rule.

    Parameters
    ----------
    item_ids : list of str
        The questions of the builds scored.
    episodes : list of dict
        Every episode read (``model``, ``condition``, ``item_id``, ``raw_text``, ``error``).
    rows : list of dict
        :func:`score_rows`' rows.
    pairs : list of tuple of (str, str), optional
        (model, condition) pairs the eval run accounted for (``denominators.eval_run_pairs``).
    duplicates : list of dict, optional
        Episodes ``denominators.split_duplicates`` left out (excluded as ``duplicate_episode``).

    Returns
    -------
    dict
        ``denominators.coverage``'s result, unit ``questions``, test set ``mcq``.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods (every question, sighted and blind).
    """
    known = set(item_ids)
    excluded = [(ep["model"], ep["condition"], rule) for ep in episodes
                if (rule := exclusion_rule(ep, known)) is not None]
    excluded += [(ep["model"], ep["condition"], den.DUPLICATE) for ep in duplicates]
    return den.coverage(item_ids, [(e["model"], e["condition"]) for e in episodes if e["condition"] in (SIGHTED, BLIND)],
                        [(r["model"], r["condition"], r["item_id"]) for r in rows], excluded, (), pairs,
                        unit="questions", test_set="mcq")


def score_rows(episodes: list[dict], items: dict[str, dict]) -> tuple[list[dict], int]:
    """(mcq_scores rows, episodes skipped: unknown item, another protocol's condition, or a failed
    call with no reply -- a provider failure is not the model's invalid answer).

    Parameters
    ----------
    episodes : list of dict
        Episode rows, each with ``item_id``, ``model``, ``condition``, ``raw_text`` and ``error``.
    items : dict of str to dict
        The questions by ``item_id`` (mcq_items rows: ``options``, ``answer``, ``k``, ``case_id``, ...).

    Returns
    -------
    rows : list of dict
        One mcq_scores row per scored episode: the chosen letter (None for an invalid reply),
        ``valid`` and ``correct`` (None when invalid), with the question's case, cohort, type,
        subcategory, k, answer, imaging source and matched group.
    skipped : int
        Episodes left out.
    """
    rows, skipped = [], 0
    for ep in episodes:
        it = items.get(ep["item_id"])
        if it is None or ep["condition"] not in (SIGHTED, BLIND) or (ep.get("raw_text") is None and ep.get("error")):
            skipped += 1
            continue
        chosen = read_choice(ep.get("raw_text"), it["options"])
        rows.append({"model": ep["model"], "condition": ep["condition"], "item_id": it["item_id"],
                     "case_id": it["case_id"], "cohort": it["cohort"], "qtype": it["qtype"],
                     "subcategory": it["subcategory"], "k": int(it["k"]), "answer": it["answer"], "chosen": chosen,
                     "valid": chosen is not None, "correct": None if chosen is None else chosen == it["answer"],
                     "imaging_source": it.get("imaging_source"), "matched_group": it.get("matched_group")})
    return rows, skipped


def _row(model, condition, cohort, breakdown, metric, value, lo=None, hi=None, n=0, reference=None, p=None, b=None):
    f = lambda v: None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)  # noqa: E731
    return {"model": model, "condition": condition, "test_set": cohort, "breakdown": breakdown, "metric": metric,
            "value": f(value), "ci_low": f(lo), "ci_high": f(hi), "n_cases": int(n), "reference": reference,
            "p_value": f(p), "n_boot": b}


def paired_frame(g: pd.DataFrame) -> pd.DataFrame:
    """One row per question valid in both the sighted and the blind run of one model.

    Parameters
    ----------
    g : pandas.DataFrame
        mcq_scores rows of one model (one cohort and question type), both conditions.

    Returns
    -------
    pandas.DataFrame
        Columns ``item_id``, ``case_id``, ``correct_sighted`` and ``correct_blind``; one row per
        question with a valid reply in both conditions.
    """
    s = g[(g["condition"] == SIGHTED) & g["valid"]].set_index("item_id")
    bl = g[(g["condition"] == BLIND) & g["valid"]].set_index("item_id")
    both = s[["case_id", "correct"]].join(bl[["correct"]], how="inner", rsuffix="_blind")
    return both.rename(columns={"correct": "correct_sighted"}).reset_index()


def metrics_rows(df: pd.DataFrame, items: pd.DataFrame, b: int = 2000, seed: int = 42) -> list[dict]:
    """The metrics rows of multiple-choice scores, intervals at B = ``b`` (the paper's Tables 1-3, Fig. 2).

    Per (cohort, question type): the ``random_baseline`` of the item pool (model 'random'). Per
    (cohort, question type, model, condition): ``accuracy`` with its case-clustered interval, the
    counts ``valid`` and ``invalid``, ``chance_valid_pool``, and the same accuracy and chance per
    subcategory. Per (cohort, question type, model) with questions valid in both conditions:
    ``accuracy_paired`` of each condition with its case-clustered interval and ``delta`` (sighted -
    blind) with its interval and two-sided p.

    Parameters
    ----------
    df : pandas.DataFrame
        mcq_scores rows (:func:`score_rows`).
    items : pandas.DataFrame
        The mcq_items the run asked (``cohort``, ``qtype``, ``k``, ``case_id``).
    b : int, optional
        Bootstrap resamples of the intervals (default 2000).
    seed : int, optional
        Seed of the resampling (default 42).

    Returns
    -------
    list of dict
        metrics rows: ``model``, ``condition``, ``test_set`` (the cohort), ``breakdown``
        (``qtype=...`` or ``qtype=...;subcategory=...``), ``metric``, ``value``, ``ci_low``,
        ``ci_high``, ``n_cases``, ``reference``, ``p_value`` and ``n_boot``; NaN figures become None.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility"; Tables 1-3 and Fig. 2.
    """
    out = []
    for (cohort, qtype), pool in items.groupby(["cohort", "qtype"], sort=True):
        out.append(_row("random", "-", cohort, f"qtype={qtype}", "random_baseline", stats.random_baseline(pool["k"]),
                        n=pool["case_id"].nunique()))
    for (cohort, qtype, model, cond), g in df.groupby(["cohort", "qtype", "model", "condition"], sort=True):
        bd = f"qtype={qtype}"
        est = stats.accuracy(g["case_id"], g["correct"].fillna(False), g["valid"], b, seed)
        out.append(_row(model, cond, cohort, bd, "accuracy", est.value, est.ci_low, est.ci_high, est.n_cases, b=b))
        out.append(_row(model, cond, cohort, bd, "valid", float(g["valid"].sum()), n=g["case_id"].nunique()))
        out.append(_row(model, cond, cohort, bd, "invalid", float((~g["valid"]).sum()), n=g["case_id"].nunique()))
        valid = g[g["valid"]]
        out.append(_row(model, cond, cohort, bd, "chance_valid_pool", stats.random_baseline(valid["k"]),
                        n=valid["case_id"].nunique()))
        for sub, gs in g.groupby("subcategory", sort=True):
            e = stats.accuracy(gs["case_id"], gs["correct"].fillna(False), gs["valid"], b, seed)
            v = gs[gs["valid"]]
            sbd = f"{bd};subcategory={sub}"
            out.append(_row(model, cond, cohort, sbd, "accuracy", e.value, e.ci_low, e.ci_high, e.n_cases, b=b))
            out.append(_row(model, cond, cohort, sbd, "chance_valid_pool", stats.random_baseline(v["k"]),
                            n=v["case_id"].nunique()))
    for (cohort, qtype, model), g in df.groupby(["cohort", "qtype", "model"], sort=True):
        pf = paired_frame(g)
        if pf.empty:
            continue
        d = stats.paired_delta(pf["case_id"], pf["correct_sighted"], pf["correct_blind"], b, seed)
        bd, n = f"qtype={qtype}", pf["case_id"].nunique()
        every = np.ones(len(pf), bool)  # the paired frame holds only questions valid in both runs
        for cond, column in ((SIGHTED, "correct_sighted"), (BLIND, "correct_blind")):
            # each condition's accuracy on the paired questions, with its own case-clustered interval
            e = stats.accuracy(pf["case_id"], pf[column], every, b, seed)
            out.append(_row(model, cond, cohort, bd, "accuracy_paired", e.value, e.ci_low, e.ci_high, n, b=b))
        out.append(_row(model, SIGHTED, cohort, bd, "delta", d.delta.value, d.delta.ci_low, d.delta.ci_high, n,
                        reference=BLIND, p=d.p, b=b))
    return out


def test_rows(df: pd.DataFrame, b: int = 10_000, seed: int = 42, margin: float = 0.05, plan=None) -> list[dict]:
    """Family 1 and Family 2 tests; Benjamini-Hochberg within the families the plan declares
    (``medscope.protocols.benchmark_mcq.families``; without a plan, each test kind in the run).

    Family 1 (sighted accuracy above chance, per cohort, question type and model, over the valid
    replies) and Family 2 (Δ = sighted - blind, on the questions valid in both conditions) carry
    their p and Benjamini-Hochberg q, Family 2 also TOST p and q and the 90 % interval; the
    verdict is withheld for a thin cell (``medscope.render.thin.claim``), which is not tested at
    all: its p is None and it is in no BH family (``families.THIN``), so it does not change the
    family size nor the other members' q.

    Parameters
    ----------
    df : pandas.DataFrame
        mcq_scores rows (:func:`score_rows`).
    b : int, optional
        Bootstrap resamples of the tests (default 10,000).
    seed : int, optional
        Seed of the resampling (default 42).
    margin : float, optional
        TOST equivalence margin of Δ (default 0.05).
    plan : FamilyPlan or None, optional
        The declared BH families (``families.load_plan``); None for one family per test kind.

    Returns
    -------
    list of dict
        mcq_tests rows: ``family`` ('above_chance' or 'image_effect'), cohort, qtype, model,
        ``estimate``, ``ci_low``, ``ci_high``, ``p_value``, ``q_value`` (None outside a declared
        family), ``tost_p``, ``tost_q``, ``ci90_low``, ``ci90_high`` (image effect only), ``verdict``,
        ``n_cases``, ``n_items``, ``n_boot``, ``bh_family`` and ``family_size``.

    Raises
    ------
    MedScopeError
        When the plan's families do not fit the run (``families.assign_families``).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility"; Table 4.
    """
    fam1, fam2 = [], []
    for (cohort, qtype, model), g in df[df["condition"] == SIGHTED].groupby(["cohort", "qtype", "model"], sort=True):
        v = g[g["valid"]]
        if v.empty:
            continue
        est, p = stats.above_chance(v["case_id"], v["correct"].astype(bool), v["k"], b, seed)
        fam1.append({"family": "above_chance", "cohort": cohort, "qtype": qtype, "model": model,
                     "estimate": est.value, "ci_low": est.ci_low, "ci_high": est.ci_high, "p_value": p,
                     "n_cases": est.n_cases, "n_items": est.n_items, "n_boot": b})
    for (cohort, qtype, model), g in df.groupby(["cohort", "qtype", "model"], sort=True):
        pf = paired_frame(g)
        if pf.empty:
            continue
        d = stats.paired_delta(pf["case_id"], pf["correct_sighted"], pf["correct_blind"], b, seed, margin)
        fam2.append({"family": "image_effect", "cohort": cohort, "qtype": qtype, "model": model,
                     "estimate": d.delta.value, "ci_low": d.delta.ci_low, "ci_high": d.delta.ci_high,
                     "p_value": d.p, "tost_p": d.tost_p, "ci90_low": d.ci90_low, "ci90_high": d.ci90_high,
                     "n_cases": d.delta.n_cases, "n_items": d.delta.n_items, "n_boot": b})
    rows = fam1 + fam2
    for r in rows:  # a thin cell is not tested: no p, and no seat in a BH family (families.THIN)
        r["tested"] = not thin.is_thin(r["n_items"], r["n_cases"])
        if not r["tested"]:
            r["p_value"] = None
            if r["family"] == "image_effect":
                r["tost_p"] = None
    for idx in assign_families(rows, plan).values():
        for i, q in zip(idx, stats.bh([rows[i]["p_value"] for i in idx])):
            rows[i]["q_value"] = float(q)
        if rows and idx and rows[idx[0]]["family"] == "image_effect":
            for i, q in zip(idx, stats.bh([rows[i]["tost_p"] for i in idx])):
                rows[i]["tost_q"] = float(q)
    for r in rows:
        r.setdefault("q_value", None)
        if r["family"] == "image_effect":
            r.setdefault("tost_q", None)
        q = r["q_value"]
        if r["family"] == "image_effect":
            r["verdict"] = None if q is None else stats.verdict(q, r["tost_q"])
        else:
            r["verdict"] = None if q is None else "Above chance" if q < 0.05 else "Not above chance"
        # a thin cell is never called above chance / effect / equivalent (medscope.render.thin)
        r["verdict"] = thin.claim(r["verdict"], r["n_items"], r["n_cases"])
        del r["tested"]
    return rows
