"""Probe scoring: per-episode readings and the probe's metrics with case-clustered intervals (organ-presence paper).

- sensitivity (positives), binary specificity (negatives, surface verdict), confident-answer
  specificity (hedged replies leave numerator and denominator), abstention (hedge rate over all
  negatives), not-addressed rate (reported apart, never counted as absent), clean resolution;
- per model x condition (format, image mode) x render x strategy, each with a 95% interval from
  resampling cases (volumes), not slices;
- a logistic regression of correct rejection on z-distance (log-odds per mm, cluster-robust by
  case), specificity far out of range and on organs absent from the whole volume.

References: the probe follows POPE (Y. Li et al., "Evaluating object hallucination in large
vision-language models", EMNLP 2023); cluster-robust logistic regression: K.-Y. Liang,
S. L. Zeger, Biometrika 73(1), 1986; the case bootstrap: ``medscope.stats.bootstrap``.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd

from medscope.io import layout, records, storage
from medscope.errors import MedScopeError
from medscope.stats import bootstrap as bs
from medscope.stats.inference import logistic_clustered
from medscope.volumes.config import FORMATS, IMAGE_MODES, ProbeConfig, split_condition
from medscope.protocols import denominators as den
from medscope.protocols.organ_presence.replies import read_reply

NEGATIVE_STRATEGIES = ("random", "popular", "adversarial")
ITEM_COLUMNS = ["item_id", "case_id", "z", "z_mm", "organ", "truth", "strategy", "stratum",
                "z_distance_mm", "absent_from_volume", "render"]


def score_episodes(episodes: list[dict], items: dict[str, dict], lexicon) -> tuple[list[dict], int]:
    """Read every episode against its item. Returns (probe_scores rows, episodes skipped: an error
    with no reply -- a failed call is not the model declining to answer -- or not a probe condition).

    Parameters
    ----------
    episodes : list of dict
        ``episodes`` rows; reads ``item_id``, ``condition``, ``raw_text``, ``error``, ``model`` and
        ``run_id``.
    items : dict of str to dict
        ``probe_items`` rows by ``item_id`` (:data:`ITEM_COLUMNS`, plus ``question`` when read).
    lexicon : sequence of str
        The hedge cues (:func:`replies.hedge_cues`).

    Returns
    -------
    rows : list of dict
        One ``probe_scores`` row per scored episode: the item's fields, the format and image mode of
        its condition, the reading (``verdict``, ``clean``, ``hedged``, ``hedge_cue``), ``correct``
        (None when not addressed) and ``pope_yes`` (:func:`pope_rule_yes`).
    skipped : int
        Episodes left out: no item, an error without a reply, or a condition that is not a probe format
        and image mode.

    References
    ----------
    .. [1] organ-presence paper.
    """
    rows, skipped = [], 0
    for ep in episodes:
        item = items.get(ep["item_id"])
        if item is None or (ep.get("raw_text") is None and ep.get("error")):
            skipped += 1
            continue
        fmt, mode = split_condition(ep["condition"])
        if fmt not in FORMATS or mode not in IMAGE_MODES:
            skipped += 1  # not a probe condition (another protocol's episode on the same ids)
            continue
        r = read_reply(ep.get("raw_text"), fmt, lexicon, organ=str(item.get("organ") or ""),
                       question=str(item.get("question") or ""))
        correct = None if r.verdict in ("not_addressed", "unclear") else r.verdict == item["truth"]
        rows.append(
            {
                "run_id": ep.get("run_id") or "",
                "model": ep["model"],
                "condition": ep["condition"],
                "format": fmt,
                "image_mode": mode,
                "item_id": item["item_id"],
                "case_id": item["case_id"],
                "z": int(item["z"]),
                "organ": item["organ"],
                "truth": item["truth"],
                "strategy": item["strategy"],
                "stratum": item["stratum"],
                "z_distance_mm": item["z_distance_mm"],
                "absent_from_volume": bool(item["absent_from_volume"]),
                "render": item["render"],
                "verdict": r.verdict,
                "clean": r.clean,
                "hedged": r.hedged,
                "hedge_cue": r.hedge_cue,
                "correct": correct,
                "pope_yes": pope_rule_yes(ep.get("raw_text") or ""),
            }
        )
    return rows, skipped


def pope_rule_yes(text: str) -> bool:
    """POPE's own reading of a reply (Li et al. 2023, the POPE repository's evaluation script):
    keep the text before the first '.', drop commas, split on spaces; the words "No", "no" or
    "not" make it "no", anything else is "yes" -- so "Absent.", "Not visible." (capital N),
    "I cannot tell" and a JSON reply all count as "yes". Kept exactly, so that numbers can be set
    beside published POPE tables; MedScope's own reading is the ``verdict`` column.

    Parameters
    ----------
    text : str
        The model's raw reply.

    Returns
    -------
    bool
        False when the first sentence holds the word "No", "no" or "not"; True otherwise.

    References
    ----------
    .. [1] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    if text.find(".") != -1:
        text = text.split(".")[0]
    words = text.replace(",", "").split(" ")
    return not ("No" in words or "not" in words or "no" in words)


def cluster_bootstrap_ratio(
    cases, num, den, *, b: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED, alpha: float = 0.05
) -> tuple[float | None, float | None, float | None, int]:
    """sum(num)/sum(den) with a percentile interval from resampling whole cases with replacement
    (the shared ``medscope.stats`` case bootstrap: B = 2000, seed 42 by default).

    Returns (value, low, high, number of cases with a non-zero denominator).

    Parameters
    ----------
    cases : sequence
        The case of each row; whole cases are resampled.
    num : array_like of float
        Each row's numerator (e.g. 1 for a correct rejection).
    den : array_like of float
        Each row's denominator (e.g. 1 for an addressed negative).
    b : int, optional
        Bootstrap replicates.
    seed : int, optional
        Seed of the resampling.
    alpha : float, optional
        One minus the interval's coverage.

    Returns
    -------
    value : float or None
        ``sum(num) / sum(den)``; None when the denominator sums to 0.
    low, high : float or None
        The percentile interval of the resampled ratios; None when the denominator sums to 0.
    n_cases : int
        Cases with a non-zero denominator.
    """
    uniq, codes = bs.codes_of(cases)
    n_sum = bs.cluster_sums(np.asarray(num, dtype=np.float64), codes, len(uniq))
    d_sum = bs.cluster_sums(np.asarray(den, dtype=np.float64), codes, len(uniq))
    n_cases = int(np.sum(d_sum[:, 0] > 0))
    if d_sum.sum() == 0:
        return None, None, None, 0
    value = float(n_sum.sum() / d_sum.sum())
    samples = bs.ratio_samples(n_sum, d_sum, bs.resample_counts(len(uniq), b, seed))
    lo, hi = bs.percentile_ci(samples, 1 - alpha)
    return value, float(lo[0]), float(hi[0]), n_cases


def zdistance_logit(y, z_mm, cases, alpha: float = 0.05) -> tuple[float | None, float | None, float | None]:
    """Slope (log-odds of correct rejection per mm) of a logistic regression on z-distance, with a
    cluster-robust (by case) interval (``medscope.stats.inference.logistic_clustered``). None when
    the outcome or the distance does not vary, there is one case, or the fit separates perfectly.

    Parameters
    ----------
    y : array_like
        ``[n]`` 1 for a correct rejection, 0 otherwise.
    z_mm : array_like
        ``[n]`` distance in mm from the slice to the absent organ.
    cases : sequence
        ``[n]`` case of each row (the clusters).
    alpha : float, optional
        One minus the interval's coverage.

    Returns
    -------
    slope : float or None
        Log-odds of correct rejection per mm.
    low, high : float or None
        Its cluster-robust interval. All three None with fewer than 3 rows or 2 cases, a constant
        outcome or distance, a failed fit, or a non-finite estimate.

    References
    ----------
    .. [1] K.-Y. Liang, S. L. Zeger, Biometrika 73(1), 1986.
    """
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(z_mm, dtype=np.float64)
    if len(y) < 3 or y.min() == y.max() or len(set(map(str, cases))) < 2 or x.min() == x.max():
        return None, None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = logistic_clustered(y, pd.DataFrame({"z_mm": x}), list(cases), alpha=alpha)
        except Exception:  # noqa: BLE001 - perfect separation / singular fits are a "no estimate"
            return None, None, None
    slope, lo, hi = (float(fit.loc["z_mm", k]) for k in ("coef", "ci_low", "ci_high"))
    if not np.isfinite([slope, lo, hi]).all():
        return None, None, None
    return slope, lo, hi


def probe_metrics(
    scored: list[dict] | pd.DataFrame, *, far_mm: float = 40.0, b: int = 2000, seed: int = 42
) -> list[dict]:
    """Metrics rows (records 'metrics' schema) of scored probe episodes.

    Parameters
    ----------
    scored : list of dict or pandas.DataFrame
        ``probe_scores`` rows (:func:`score_episodes`).
    far_mm : float, optional
        z-distance in mm at and beyond which a negative counts as far out of range.
    b : int, optional
        Bootstrap replicates.
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    list of dict
        ``metrics`` rows (test set ``probe``), per model x condition x render: the unclear rate (replies
        the reader did not commit on, where there are any; left out of every other n); clean resolution;
        sensitivity and not-addressed rate of the positives; specificity, confident specificity,
        abstention and not-addressed rate per negative strategy; over the pooled addressed negatives,
        specificity far out of range and on organs absent from the volume, and the z-distance slope;
        the hedge-cue shares; then :func:`render_concordance`'s rows. Empty for no scores.

    References
    ----------
    .. [1] organ-presence paper.
    """
    df = scored if isinstance(scored, pd.DataFrame) else pd.DataFrame(scored)
    if df.empty:
        return []
    out: list[dict] = []

    def add(model, condition, breakdown, metric, frame, num, den):
        v, lo, hi, n = cluster_bootstrap_ratio(frame["case_id"], num, den, b=b, seed=seed)
        out.append(_row(model, condition, breakdown, metric, v, lo, hi, n))

    # A reply the reader could not read with certainty is no verdict: its share is shown, and it
    # is left out of every other n (never read as absent, present or not addressed).
    for (model, condition, render), g in df.groupby(["model", "condition", "render"], sort=True):
        unclear = (g["verdict"] == "unclear").to_numpy()
        if unclear.any():
            add(model, condition, f"render={render}", "unclear_rate", g, unclear, np.ones(len(g)))
    df = df[df["verdict"] != "unclear"]
    if df.empty:
        return out

    for (model, condition, render), g in df.groupby(["model", "condition", "render"], sort=True):
        addressed = g["verdict"] != "not_addressed"
        add(model, condition, f"render={render}", "clean_resolution", g, g["clean"], np.ones(len(g)))
        pos = g[g["strategy"] == "positive"]
        if len(pos):
            pa_ = pos["verdict"] != "not_addressed"
            bd = f"strategy=positive;render={render}"
            add(model, condition, bd, "sensitivity", pos, (pos["verdict"] == "present") & pa_, pa_)
            add(model, condition, bd, "not_addressed_rate", pos, ~pa_, np.ones(len(pos)))
        for strategy in NEGATIVE_STRATEGIES:
            neg = g[g["strategy"] == strategy]
            if not len(neg):
                continue
            bd = f"strategy={strategy};render={render}"
            na = neg["verdict"] != "not_addressed"
            rej = neg["verdict"] == "absent"
            conf = na & ~neg["hedged"]
            add(model, condition, bd, "specificity", neg, rej & na, na)
            add(model, condition, bd, "confident_specificity", neg, rej & conf, conf)
            add(model, condition, bd, "abstention", neg, neg["hedged"], np.ones(len(neg)))
            add(model, condition, bd, "not_addressed_rate", neg, ~na, np.ones(len(neg)))
        # Pooled negatives: the same query chosen by two strategies counts once.
        neg = g[(g["truth"] == "absent") & addressed].drop_duplicates(["case_id", "z", "organ"])
        bd = f"strategy=all_negatives;render={render}"
        if len(neg):
            far = neg[neg["z_distance_mm"].fillna(-1) >= far_mm]
            if len(far):
                add(model, condition, f"{bd};z>={far_mm:g}mm", "specificity", far,
                    far["verdict"] == "absent", np.ones(len(far)))
            whole = neg[neg["absent_from_volume"]]
            if len(whole):
                add(model, condition, f"{bd};absent_from_volume", "specificity", whole,
                    whole["verdict"] == "absent", np.ones(len(whole)))
            fit = neg[neg["z_distance_mm"].notna()]
            slope, lo, hi = zdistance_logit(
                (fit["verdict"] == "absent").astype(float), fit["z_distance_mm"], fit["case_id"]
            )
            out.append(_row(model, condition, bd, "zdist_slope_per_mm", slope, lo, hi, int(fit["case_id"].nunique())))
        out += hedge_cue_shares(g, model, condition, render)
    out += render_concordance(df, b=b, seed=seed)
    return out


def hedge_cue_shares(g: pd.DataFrame, model: str, condition: str, render: str) -> list[dict]:
    """Share of hedged negatives flagged by each first-firing cue: shows whether one unambiguous
    cue (e.g. "not clearly") carries the abstention rather than the broad cue list.

    Parameters
    ----------
    g : pandas.DataFrame
        ``probe_scores`` rows of one model x condition x render.
    model : str
        The model, for the rows.
    condition : str
        The condition, for the rows.
    render : str
        The render, for the rows.

    Returns
    -------
    list of dict
        One ``hedge_cue_share`` metrics row per first-firing cue of the hedged negatives, most frequent
        first, without interval; empty when no negative is hedged.
    """
    hedged = g[(g["truth"] == "absent") & g["hedged"]]
    if not len(hedged):
        return []
    counts = hedged["hedge_cue"].value_counts()
    n_cases = int(hedged["case_id"].nunique())
    return [
        _row(model, condition, f"strategy=all_negatives;render={render};cue={cue}", "hedge_cue_share",
             float(n / len(hedged)), None, None, n_cases)
        for cue, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def render_concordance(df: pd.DataFrame, *, b: int = 2000, seed: int = 42) -> list[dict]:
    """Verdict agreement between renders on matched negative items (organ-presence paper, "Rendering").

    Renders are not byte-identical, so the claim is concordance, not identity: for each pair of
    renders, the share of matched negative items (same case, slice, organ, strategy) whose parsed
    verdicts agree, with a case-clustered interval; and how many of the disagreements flip toward
    "present" under the second render.

    Parameters
    ----------
    df : pandas.DataFrame
        ``probe_scores`` rows.
    b : int, optional
        Bootstrap replicates.
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    list of dict
        Per model x condition and pair of the first render with each other one: a ``render_concordance``
        metrics row and, when any verdict differs, a ``render_flips_to_present`` row (share of the
        disagreements that say "present" under the other render). Empty with fewer than two renders.

    References
    ----------
    .. [1] organ-presence paper, "Rendering".
    """
    out = []
    renders = sorted(df["render"].unique())
    if len(renders) < 2:
        return out
    keys = ["model", "condition", "case_id", "z", "organ", "strategy"]
    neg = df[df["truth"] == "absent"]
    base = neg[neg["render"] == renders[0]].set_index(keys)["verdict"]
    for other in renders[1:]:
        alt = neg[neg["render"] == other].set_index(keys)["verdict"]
        both = pd.concat([base.rename("a"), alt.rename("b")], axis=1, join="inner").reset_index()
        for (model, condition), g in both.groupby(["model", "condition"], sort=True):
            bd = f"renders={renders[0]}|{other};strategy=all_negatives"
            v, lo, hi, n = cluster_bootstrap_ratio(g["case_id"], g["a"] == g["b"], np.ones(len(g)), b=b, seed=seed)
            out.append(_row(model, condition, bd, "render_concordance", v, lo, hi, n))
            flips = g["a"] != g["b"]
            if flips.any():
                v, lo, hi, n = cluster_bootstrap_ratio(
                    g["case_id"], flips & (g["b"] == "present"), flips, b=b, seed=seed)
                out.append(_row(model, condition, bd, "render_flips_to_present", v, lo, hi, n))
    return out


def _row(model, condition, breakdown, metric, value, lo, hi, n) -> dict:
    return {
        "model": model,
        "condition": condition,
        "test_set": "probe",
        "breakdown": breakdown,
        "metric": metric,
        "value": value,
        "ci_low": lo,
        "ci_high": hi,
        "n_cases": int(n),
    }


def score_run(episodes_uri: str, items_uri: str, out_uri: str, cfg=None) -> dict:
    """Read episodes against probe items; write probe_scores.parquet and metrics.parquet under out.

    Parameters
    ----------
    episodes_uri : str
        The episodes table.
    items_uri : str
        The ``probe_items`` table.
    out_uri : str
        The scored-run folder written.
    cfg : ProbeConfig, optional
        Reads ``hedge_lexicon``, ``far_mm``, ``bootstrap_b`` and ``bootstrap_seed`` (default:
        ``ProbeConfig()``).

    Returns
    -------
    dict
        ``episodes`` (those of the probe items), ``scored``, ``skipped_errors``, ``metrics`` (the metrics
        table's URI) and ``specificity``: "model | condition | breakdown" -> specificity to three decimals
        per strategy and render.

    Raises
    ------
    MedScopeError
        When no episode is of a probe item.
    """
    cfg = cfg or ProbeConfig()
    items = {r["item_id"]: r for r in records.read_table("probe_items", items_uri, columns=ITEM_COLUMNS).to_pylist()}
    cols = ["run_id", "model", "condition", "item_id", "case_id", "raw_text", "error"]
    read, duplicates = den.split_duplicates(records.read_table("episodes", episodes_uri, columns=cols).to_pylist(),
                                            lambda e: exclusion_rule(e, items) is None)
    episodes = [e for e in read if e["item_id"] in items]
    if not episodes:
        raise MedScopeError(f"{episodes_uri}: no episodes of the probe items in {items_uri}")
    scored, skipped = score_episodes(episodes, items, cfg.hedge_lexicon)
    cov = coverage(list(items), read, scored, den.eval_run_pairs(episodes_uri), duplicates)
    den.report(cov, EXCLUSION_RULES)
    metrics = probe_metrics(scored, far_mm=cfg.far_mm, b=cfg.bootstrap_b, seed=cfg.bootstrap_seed)
    run = layout.ScoredRun(out_uri)
    records.write_table("probe_scores", scored, run.table("probe_scores"))
    records.write_table("metrics", metrics, run.metrics)
    rejects = den.duplicate_rejects(duplicates, "probe_scores") + den.missing_rejects(cov, "probe_scores")
    if rejects:
        records.write_table("rejects", rejects, run.rejects)
    manifest = {"protocol": "organ_presence", "episodes": episodes_uri, "items": items_uri,
                "n_boot": cfg.bootstrap_b, "seed": cfg.bootstrap_seed, "far_mm": cfg.far_mm, "coverage": cov}
    storage.write_text(run.manifest, json.dumps(manifest, indent=2) + "\n")
    headline = {
        f"{m['model']} | {m['condition']} | {m['breakdown']}": round(m["value"], 3)
        for m in metrics if m["metric"] == "specificity" and m["value"] is not None and "z>" not in m["breakdown"]
        and "absent_from_volume" not in m["breakdown"]
    }
    return {"episodes": len(episodes), "scored": len(scored), "skipped_errors": skipped,
            "metrics": run.metrics, "specificity": headline, "coverage": den.summary(cov)}


EXCLUSION_RULES = {den.NOT_IN_ITEMS: "item not in the probe_items table",
                   den.UNKNOWN_CONDITION: "not a probe format x image mode",
                   den.FAILED_CALL: "an error and no reply; its item stays missing",
                   den.DUPLICATE: den.DUPLICATE_MEANING}


def probe_condition(condition: str) -> bool:
    """Whether a condition is a probe format x image mode.

    Parameters
    ----------
    condition : str
        An episode's condition.

    Returns
    -------
    bool
        Its format is in ``FORMATS`` and its image mode in ``IMAGE_MODES``.
    """
    fmt, mode = split_condition(condition)
    return fmt in FORMATS and mode in IMAGE_MODES


def exclusion_rule(ep: dict, known) -> str | None:
    """The rule an episode is excluded under before any duplicate is looked for (None: read).

    Parameters
    ----------
    ep : dict
        An episode (``item_id``, ``condition``, ``raw_text``, ``error``).
    known : collection of str
        The probe items' ids.

    Returns
    -------
    str or None
        ``not_in_items``, ``unknown_condition``, ``failed_call``, or None.
    """
    if ep["item_id"] not in known:
        return den.NOT_IN_ITEMS
    if not probe_condition(ep["condition"]):
        return den.UNKNOWN_CONDITION
    if ep.get("raw_text") is None and ep.get("error"):
        return den.FAILED_CALL
    return None


def coverage(item_ids: list[str], episodes: list[dict], scored: list[dict],
             pairs: list[tuple[str, str]] = (), duplicates: list[dict] = ()) -> dict:
    """Every model x probe condition against the probe_items table (the fixed denominator): items
    read (a not-addressed reply is a reading), read as unclear (a done unit in no n), missing (no
    episode, or only a failed call: a failed unit), and the episodes excluded by rule.

    Parameters
    ----------
    item_ids : list of str
        The probe items.
    episodes : list of dict
        Every episode read (``model``, ``condition``, ``item_id``, ``raw_text``, ``error``).
    scored : list of dict
        :func:`score_episodes`' rows.
    pairs : list of tuple of (str, str), optional
        (model, condition) pairs the eval run accounted for (``denominators.eval_run_pairs``).
    duplicates : list of dict, optional
        Episodes ``denominators.split_duplicates`` left out (excluded as ``duplicate_episode``).

    Returns
    -------
    dict
        ``denominators.coverage``'s result, unit ``items``, test set ``probe``.

    References
    ----------
    .. [1] organ-presence paper (every item under every format and image mode).
    """
    known = set(item_ids)
    excluded = [(e["model"], e["condition"], rule) for e in episodes if (rule := exclusion_rule(e, known)) is not None]
    excluded += [(e["model"], e["condition"], den.DUPLICATE) for e in duplicates]
    return den.coverage(
        item_ids, [(e["model"], e["condition"]) for e in episodes if probe_condition(e["condition"])],
        [(r["model"], r["condition"], r["item_id"]) for r in scored if r["verdict"] != "unclear"], excluded,
        [(r["model"], r["condition"], r["item_id"]) for r in scored if r["verdict"] == "unclear"], pairs,
        unit="items", test_set="probe")
