"""The tests of the counterfactual paper §3.9 (with the benchmark-MCQ paper's TOST and chance test and the paired-modality paper's exact McNemar)
on a scores table, for ``medscope stats``.

Every proportion metric of §3.8 with a single term (CCR, sensitivity, erased- and healthy-image
claims, clarify rate, control denial, grounded accuracy, referral rate) is a per-view success
over a per-view denominator (``metrics.view_terms``); these functions read the same indicators,
so a test is always about exactly the views its metric counts:

- ``mcnemar``: exact McNemar on the views both models answered (paired by view id).
- ``fisher``: Fisher's exact test of two proportions ("proportions on small subsets"), e.g.
  erased-lesion claims of two models on one source.
- ``tost``: two one-sided tests of model - reference against +-margin on the paired bootstrap
  (90% interval inside the margins).
- ``chance``: accuracy on a metric's views against chance 1/k (one-sided, case-clustered).
- ``seeds``: mean +- sd over seeds of every metric (Table 11's three-seed rows).
- ``family``: Bonferroni or Benjamini-Hochberg over a family a plan file names (the 27
  primary comparisons: ESG, erased-lesion claims and net utility against nine frontier models).

References: Q. McNemar, Psychometrika 12(2), 1947; R. A. Fisher, J. R. Stat. Soc. 85(1), 1922;
TOST: D. J. Schuirmann, J. Pharmacokinet. Biopharm. 15(6), 1987; Bonferroni: O. J. Dunn,
JASA 56, 1961; Y. Benjamini, Y. Hochberg, J. R. Stat. Soc. B 57(1), 1995 (``medscope.stats``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from medscope.errors import MedScopeError
from medscope.analysis import paired_differences as cmp
from medscope.analysis import view_metrics as mt
from medscope.stats import bootstrap as bs
from medscope.stats import inference

# proportion metrics: the single term whose indicators the exact tests read
PROPORTIONS = {name: spec[0][1] for name, spec in mt.METRICS.items()
               if len(spec) == 1 and spec[0][0] == 1 and spec[0][1] not in ("reward_all", "reward_noD")}


def _frame(scores) -> pd.DataFrame:
    df = scores.to_pandas(use_threads=False) if hasattr(scores, "to_pandas") else scores.copy()
    df["test_set"] = df["test_set"].fillna("main")
    return df


def select(scores, test_set: str, model: str, condition: str | None = None, subset: str | None = None) -> pd.DataFrame:
    """One model's scores on one test set; ``subset`` = ``column=value`` (e.g. ``source=siim``).

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table; rows without a ``test_set`` are read as ``"main"``.
    test_set : str
        The test set.
    model : str
        The model.
    condition : str, optional
        The evaluation condition; needed when the model has several on ``test_set``.
    subset : str, optional
        ``"column=value"``: only rows whose column, as text, equals value.

    Returns
    -------
    pandas.DataFrame
        The matching rows (never empty).

    Raises
    ------
    MedScopeError
        When the condition is ambiguous, the subset's column is not a scores column, or no row matches.
    """
    df = _frame(scores)
    part = df[(df["test_set"] == test_set) & (df["model"] == model)]
    if condition is not None:
        part = part[part["condition"] == condition]
    elif part["condition"].nunique() > 1:
        raise MedScopeError(f"{model} has several conditions on {test_set}: name one ({sorted(part['condition'].unique())})")
    if subset:
        col, _, value = subset.partition("=")
        if col not in part.columns:
            raise MedScopeError(f"subset {subset!r}: scores have no column {col!r}")
        part = part[part[col].astype(str) == value]
    if part.empty:
        raise MedScopeError(f"no scores for {model} on {test_set}" + (f" ({subset})" if subset else ""))
    return part


def side(scores, test_set: str, spec: str, condition: str | None = None,
         subset: str | None = None) -> tuple[pd.DataFrame, str]:
    """One side of a test named as ``medscope compare`` names it: ``"MODEL"`` or
    ``"MODEL:CONDITION"`` (its own condition wins over the shared ``condition``), with the label
    every test prints, ``MODEL:CONDITION``.

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    test_set : str
        The test set.
    spec : str
        ``"MODEL"`` or ``"MODEL:CONDITION"``.
    condition : str, optional
        The condition of a side that names none (needed when the model has several).
    subset : str, optional
        ``"column=value"`` (``select``).

    Returns
    -------
    part : pandas.DataFrame
        The side's rows (``select``).
    label : str
        ``"MODEL:CONDITION"``.

    Raises
    ------
    MedScopeError
        As ``select``.
    """
    model, own = cmp.parse_reference(spec)
    part = select(scores, test_set, model, own or condition, subset)
    return part, f"{model}:{part['condition'].iloc[0]}"


def view_outcomes(part: pd.DataFrame, metric: str) -> pd.DataFrame:
    """(view_id, case_id, success) on the views in ``metric``'s denominator.

    Parameters
    ----------
    part : pandas.DataFrame
        One model's scores (``select``).
    metric : str
        A single-term proportion metric, a key of ``PROPORTIONS`` (e.g. ``ccr``, ``erased_claims``).

    Returns
    -------
    pandas.DataFrame
        Columns ``view_id``, ``case_id`` and ``success`` (bool), one row per view in the metric's
        denominator.

    Raises
    ------
    MedScopeError
        When ``metric`` is not a proportion.
    """
    if metric not in PROPORTIONS:
        raise MedScopeError(f"{metric!r} is not a proportion; exact tests take one of {', '.join(PROPORTIONS)}")
    num, den = mt.view_terms(part.reset_index(drop=True))
    t = mt.TERMS.index(PROPORTIONS[metric])
    keep = den[:, t] > 0
    return pd.DataFrame({"view_id": part["view_id"].to_numpy()[keep], "case_id": part["case_id"].to_numpy()[keep],
                         "success": num[keep, t] > 0})


def mcnemar(scores, a: str, b: str, metric: str, test_set: str = "main", condition: str | None = None,
            subset: str | None = None) -> dict:
    """Exact McNemar of ``a`` vs ``b`` on ``metric``'s views that both were scored on.

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    a, b : str
        The two models, ``"MODEL"`` or ``"MODEL:CONDITION"`` (``m:agent`` against ``m:blind``).
    metric : str
        A proportion metric (``PROPORTIONS``).
    test_set : str
        The test set.
    condition : str, optional
        The evaluation condition of both (needed when a model has several).
    subset : str, optional
        ``"column=value"`` restricting both (e.g. ``source=siim``).

    Returns
    -------
    dict
        ``test``, ``metric``, ``test_set``, ``a``, ``b``, ``subset``, ``n_pairs`` (views paired by
        ``view_id``), ``rate_a``, ``rate_b``, ``a_only`` and ``b_only`` (discordant counts) and ``p``.

    Raises
    ------
    MedScopeError
        When the two share no view of the metric, or ``select`` / ``view_outcomes`` refuses.

    References
    ----------
    .. [1] paired-modality paper, §5.
    """
    (part_a, a), (part_b, b) = side(scores, test_set, a, condition, subset), side(scores, test_set, b, condition, subset)
    oa, ob = view_outcomes(part_a, metric), view_outcomes(part_b, metric)
    both = oa.merge(ob, on="view_id", suffixes=("_a", "_b"))
    if both.empty:
        raise MedScopeError(f"{a} and {b} share no {metric} views on {test_set}")
    only_a, only_b, p = inference.mcnemar_exact(both["success_a"].to_numpy(), both["success_b"].to_numpy())
    return {"test": "exact McNemar", "metric": metric, "test_set": test_set, "a": a, "b": b, "subset": subset,
            "n_pairs": len(both), "rate_a": float(both["success_a"].mean()), "rate_b": float(both["success_b"].mean()),
            "a_only": only_a, "b_only": only_b, "p": p}


def fisher(scores, a: str, b: str, metric: str, test_set: str = "main", condition: str | None = None,
           subset: str | None = None, subset_b: str | None = None) -> dict:
    """Fisher's exact test of ``metric`` for ``a`` vs ``b`` (or one model on two subsets).

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    a, b : str
        The two models, ``"MODEL"`` or ``"MODEL:CONDITION"`` (the same model twice to compare two
        subsets, or two conditions).
    metric : str
        A proportion metric (``PROPORTIONS``).
    test_set : str
        The test set.
    condition : str, optional
        The evaluation condition of both (needed when a model has several).
    subset : str, optional
        ``"column=value"`` restricting ``a`` (and ``b`` unless ``subset_b`` is given).
    subset_b : str, optional
        ``"column=value"`` restricting ``b``.

    Returns
    -------
    dict
        ``test``, ``metric``, ``test_set``, ``a``, ``b``, ``subset``, ``subset_b``, ``success_a``,
        ``n_a``, ``success_b``, ``n_b``, ``rate_a``, ``rate_b`` (NaN for no views), ``odds_ratio``, ``p``.

    Raises
    ------
    MedScopeError
        When ``select`` or ``view_outcomes`` refuses.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    (part_a, a), (part_b, b) = (side(scores, test_set, a, condition, subset),
                                side(scores, test_set, b, condition, subset_b or subset))
    oa, ob = view_outcomes(part_a, metric), view_outcomes(part_b, metric)
    sa, na, sb, nb = int(oa["success"].sum()), len(oa), int(ob["success"].sum()), len(ob)
    odds, p = inference.fisher_exact(sa, na, sb, nb)
    return {"test": "Fisher exact", "metric": metric, "test_set": test_set, "a": a, "b": b,
            "subset": subset, "subset_b": subset_b or subset, "success_a": sa, "n_a": na, "success_b": sb, "n_b": nb,
            "rate_a": sa / na if na else float("nan"), "rate_b": sb / nb if nb else float("nan"),
            "odds_ratio": odds, "p": p}


def tost(scores, a: str, b: str, metric: str, margin: float, test_set: str = "main", condition: str = "agent",
         n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED) -> dict:
    """TOST of a - b on ``metric`` against +-margin, on the paired case bootstrap.

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    a, b : str
        The model and the reference, ``"MODEL"`` or ``"MODEL:CONDITION"`` (``m:agent`` against
        ``m:blind``).
    metric : str
        A ``view_metrics.METRICS`` name.
    margin : float
        Equivalence margin, in the metric's units.
    test_set : str
        The test set.
    condition : str
        The evaluation condition of both.
    n_boot : int
        Resamples B.
    seed : int
        Seed of the resamples.

    Returns
    -------
    dict
        ``test``, ``metric``, ``test_set``, ``a``, ``b``, ``diff`` (a - b), ``ci90_low``,
        ``ci90_high``, ``margin``, ``equivalent``, ``p`` and ``n_boot``.

    Raises
    ------
    MedScopeError
        When the two share no case, or every resample is NaN.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    df = _frame(scores)
    (ma, ca), (mb, cb) = cmp.parse_reference(a), cmp.parse_reference(b)
    ca, cb = ca or condition, cb or condition
    res = cmp.equivalence(df[df["test_set"] == test_set], ma, mb, metric, margin, n_boot, seed, ca, cb)
    a, b = f"{ma}:{ca}", f"{mb}:{cb}"
    return {"test": "TOST", "metric": metric, "test_set": test_set, "a": a, "b": b, "diff": res.diff,
            "ci90_low": res.ci90_low, "ci90_high": res.ci90_high, "margin": margin, "equivalent": res.equivalent,
            "p": res.p, "n_boot": n_boot}


def chance(scores, model: str, metric: str = "ccr", k: int = 2, test_set: str = "main",
           condition: str | None = None, n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED) -> dict:
    """Accuracy on ``metric``'s views against chance 1/k (k = 2: a yes/no finding question).

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    model : str
        The model, ``"MODEL"`` or ``"MODEL:CONDITION"``.
    metric : str
        A proportion metric (``PROPORTIONS``).
    k : int
        Options per question; chance is 1/k.
    test_set : str
        The test set.
    condition : str, optional
        The evaluation condition (needed when the model has several).
    n_boot : int
        Resamples B of the case-clustered bootstrap.
    seed : int
        Seed of the resamples.

    Returns
    -------
    dict
        ``test``, ``metric``, ``test_set``, ``model``, ``n`` (views), ``accuracy``, ``chance``,
        ``excess``, ``p_bootstrap`` and ``p_binomial`` (both one-sided).

    Raises
    ------
    MedScopeError
        When ``select`` or ``view_outcomes`` refuses.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    part, model = side(scores, test_set, model, condition)
    o = view_outcomes(part, metric)
    res = inference.accuracy_vs_chance(o["success"].to_numpy(), np.full(len(o), k), o["case_id"].to_numpy(),
                                       n_boot, seed)
    return {"test": "accuracy vs chance", "metric": metric, "test_set": test_set, "model": model, "n": len(o),
            "accuracy": res.accuracy, "chance": res.baseline, "excess": res.excess,
            "p_bootstrap": res.p_bootstrap, "p_binomial": res.p_binomial}


def seeds(metrics_table, arms: dict[str, list[str]], metric_names=cmp.PRIMARY, test_set: str = "main",
          condition: str | None = None) -> pd.DataFrame:
    """Mean +- sd over seeds (§3.9) of each arm's metrics: ``arms`` = {arm: [model per seed]}.

    A run scored under several prompting conditions holds one row per condition; ``condition``
    names the one to summarise (a run with a single condition needs none).

    Parameters
    ----------
    metrics_table : pyarrow.Table or pandas.DataFrame
        A metrics table; its ``"all"`` rows without ``reference`` are read.
    arms : dict of str to list of str
        Arm -> its model per seed.
    metric_names : iterable of str
        The metrics summarised; default ``paired_differences.PRIMARY``.
    test_set : str
        The test set.
    condition : str, optional
        The evaluation condition (needed when a model has several).

    Returns
    -------
    pandas.DataFrame
        One row per arm and metric: ``arm``, ``metric``, ``mean``, ``sd`` (ddof 1; 0 for one seed),
        ``n_seeds`` and ``per_seed`` (list of float).

    Raises
    ------
    MedScopeError
        When ``condition`` has no rows, or a seed model has no row, or several, for a metric.

    References
    ----------
    .. [1] counterfactual paper, §3.9, Table 11.
    """
    df = metrics_table.to_pandas(use_threads=False) if hasattr(metrics_table, "to_pandas") else metrics_table
    df = df[(df["test_set"] == test_set) & (df["breakdown"] == "all") & df["reference"].isna()]
    if condition is not None:
        if condition not in set(df["condition"].astype(str)):
            raise MedScopeError(f"seeds: no rows of condition {condition!r} on {test_set}; conditions: "
                                f"{', '.join(sorted(set(df['condition'].astype(str))))}")
        df = df[df["condition"] == condition]
    rows = []
    for arm, models in arms.items():
        for metric in metric_names:
            vals = []
            for m in models:
                hit = df[(df["model"] == m) & (df["metric"] == metric)]
                if len(hit) != 1:
                    several = f"; name one with --condition ({', '.join(sorted(set(hit['condition'].astype(str))))})" \
                        if len(hit) > 1 and condition is None else ""
                    raise MedScopeError(f"seeds: {len(hit)} {metric} rows for {m} on {test_set} (need one){several}")
                vals.append(float(hit["value"].iloc[0]))
            mean, sd = inference.seeds_summary(vals)
            rows.append({"arm": arm, "metric": metric, "mean": mean, "sd": sd, "n_seeds": len(vals),
                         "per_seed": vals})
    return pd.DataFrame(rows)


def family(comparisons, fam) -> pd.DataFrame:
    """The rows of a plan's family (``rules.Family``) with the adjustment applied.

    Comparisons are ``medscope compare`` rows (model - reference); a member missing from them is
    an error, so the family is always the one the plan names, never "whatever was computed".

    Parameters
    ----------
    comparisons : pyarrow.Table or pandas.DataFrame
        ``medscope compare`` rows (metrics schema with ``reference`` set).
    fam : Family
        The plan's family (``decision_rules.Family``): test set, reference, models, metrics, method,
        alpha and optional condition.

    Returns
    -------
    pandas.DataFrame
        One row per model x metric of the family, the comparison's columns plus ``family``,
        ``significant`` (bool), ``threshold`` (Bonferroni) and ``q`` (Benjamini-Hochberg), NaN where
        the method gives none.

    Raises
    ------
    MedScopeError
        When a member has no single comparison row, or the method is unknown.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    df = comparisons.to_pandas(use_threads=False) if hasattr(comparisons, "to_pandas") else comparisons
    df = df[(df["test_set"] == fam.test_set) & (df["breakdown"] == "all") & df["reference"].notna()]
    df = df[df["reference"].str.split(":").str[0] == fam.reference]
    if fam.condition:
        df = df[df["condition"] == fam.condition]
    rows, missing = [], []
    for model in fam.models:
        for metric in fam.metrics:
            hit = df[(df["model"] == model) & (df["metric"] == metric)]
            if len(hit) != 1:
                missing.append(f"{model}/{metric}")
                continue
            rows.append(hit.iloc[0].to_dict() | {"family": fam.name})
    if missing:
        raise MedScopeError(f"family {fam.name}: no single comparison row for {', '.join(missing[:6])}"
                            f"{' ...' if len(missing) > 6 else ''} (run `medscope compare --reference {fam.reference}`)")
    adjusted = inference.adjust_families([{"family": fam.name, "p": r["p_value"]} for r in rows], fam.alpha, fam.method)
    out = pd.DataFrame(rows)
    out["significant"] = [a["significant"] for a in adjusted]
    out["threshold"] = [a.get("threshold", np.nan) for a in adjusted]
    out["q"] = [a.get("q", np.nan) for a in adjusted]
    return out


def format_family(fam, table: pd.DataFrame, direction: str = "model") -> str:
    """Table 6's layout: one line per compared model, a cell per metric, then the verdict.
    ``direction="paper"`` prints reference − model, Table 6's "MedScope-4B minus each model".

    Parameters
    ----------
    fam : Family
        The family (``decision_rules.Family``).
    table : pandas.DataFrame
        ``family``'s result.
    direction : {'model', 'paper'}
        'model': model − reference; 'paper': reference − model (``paired_differences.orient``).

    Returns
    -------
    str
        A heading line, a header row, one line per model (value, interval, p, ``*`` when significant)
        and the count of significant comparisons.

    Raises
    ------
    MedScopeError
        When ``direction`` is neither.

    References
    ----------
    .. [1] counterfactual paper, Table 6.
    """
    metrics = list(fam.metrics)
    table = cmp.orient(table, direction)
    head = [f"family {fam.name} ({fam.test_set}, {len(table)} comparisons, {fam.method} at alpha {fam.alpha}"
            + (f"; threshold {fam.alpha}/{len(table)} = {fam.alpha / len(table):.4f}" if fam.method == "bonferroni" else "")
            + ")" + (f"  [addition: {fam.addition}]" if fam.addition else "")
            + (f"  [paper: {fam.note}]" if getattr(fam, "note", None) else "")]
    pair = f"{fam.reference} - model" if direction == "paper" else f"model - {fam.reference}"
    head.append(f"{pair:<34}" + "".join(f"{m:<42}" for m in metrics))
    for model in fam.models:
        cells = []
        for m in metrics:
            r = table[(table["model"] == model) & (table["metric"] == m)].iloc[0]
            adj = f" q={r['q']:.3g}" if fam.method == "bh" else ""
            cells.append(f"{r['value']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] p {bs.format_p(r['p_value'], int(r['n_boot']))}"
                         f"{adj}{' *' if r['significant'] else ''}")
        head.append(f"{model:<34}" + "".join(f"{c:<42}" for c in cells))
    head.append(f"{int(table['significant'].sum())} of {len(table)} significant after {fam.method} (* = significant)")
    return "\n".join(head)


def format_result(res: dict) -> str:
    """One test result as a line, p in the paper's style.

    Parameters
    ----------
    res : dict
        A test's result (``mcnemar``, ``fisher``, ``tost``, ``chance``).

    Returns
    -------
    str
        ``"key value; ..."``, floats to 4 significant digits, None values left out.
    """
    def f(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    return "; ".join(f"{k} {f(v)}" for k, v in res.items() if v is not None)


# addition: McNemar, TOST and chance are not the counterfactual paper §3.9's tests (Fisher is);
# the benchmark-MCQ and paired-modality papers use them
def tests_against(scores, reference: str, test_set: str = "main", n_boot: int = bs.DEFAULT_B,
                  seed: int = bs.DEFAULT_SEED, margin: float = 0.05) -> pd.DataFrame:
    """One row per model: the exact and equivalence tests of §3.9 against ``reference`` (for the
    report): exact McNemar on CCR views, Fisher on erased- and healthy-image claims, TOST of CCR
    within +-margin, and each model's CCR against chance (1/2).

    Parameters
    ----------
    scores : pyarrow.Table or pandas.DataFrame
        A scores table.
    reference : str
        The reference model; each model's condition is paired with the reference's same condition
        when it has it, else the reference's first.
    test_set : str
        The test set.
    n_boot : int
        Resamples B (chance and TOST).
    seed : int
        Seed of the resamples.
    margin : float
        The TOST margin on CCR.

    Returns
    -------
    pandas.DataFrame
        One row per model and condition: ``chance_ccr_p`` (binomial), and against the reference
        ``mcnemar_ccr_p``, ``fisher_erased_p``, ``fisher_healthy_p`` and ``tost_ccr`` (text); NaN or
        None where a test could not be run.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    .. [2] benchmark-MCQ paper, Methods.
    .. [3] paired-modality paper, §5.
    """
    df = _frame(scores)
    df = df[df["test_set"] == test_set]
    ref_conds = sorted(set(df.loc[df["model"] == reference, "condition"]))
    rows = []
    for (model, cond), _ in df.groupby(["model", "condition"], sort=True):
        row = {"model": model, "condition": cond}
        try:
            row["chance_ccr_p"] = chance(df, model, "ccr", 2, test_set, cond, n_boot, seed)["p_binomial"]
        except MedScopeError:
            row["chance_ccr_p"] = np.nan
        if model != reference and ref_conds:
            rc = cond if cond in ref_conds else ref_conds[0]
            sub = pd.concat([df[(df["model"] == model) & (df["condition"] == cond)],
                             df[(df["model"] == reference) & (df["condition"] == rc)].assign(condition=cond)])
            for name, fn in (("mcnemar_ccr_p", lambda: mcnemar(sub, model, reference, "ccr", test_set, cond)["p"]),
                             ("fisher_erased_p", lambda: fisher(sub, model, reference, "erased_claims", test_set, cond)["p"]),
                             ("fisher_healthy_p", lambda: fisher(sub, model, reference, "healthy_claims", test_set, cond)["p"])):
                try:
                    row[name] = fn()
                except MedScopeError:
                    row[name] = np.nan
            try:
                t = tost(sub, model, reference, "ccr", margin, test_set, cond, n_boot, seed)
                row["tost_ccr"] = f"{t['diff']:+.3f} [{t['ci90_low']:+.3f}, {t['ci90_high']:+.3f}] " + \
                                  ("equivalent" if t["equivalent"] else "not shown")
            except MedScopeError:
                row["tost_ccr"] = None
        rows.append(row)
    return pd.DataFrame(rows)
