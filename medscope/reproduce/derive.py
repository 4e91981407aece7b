"""Derivations of the cells the papers' printed numbers determine, each through the code a
user's run goes through (never a second implementation):

- the counterfactual paper Table 2: ``rewards.view_rewards`` under the shipped ``table2`` cost matrix;
- the counterfactual paper Table 5's constant-policy rows and §5.5's always-refer figures: a views table with the
  main test's composition (219 / 219 / 219 / 288 / 170 views), the constant policies' episodes,
  scored by the counterfactual protocol (what ``medscope score`` runs) and rescored under the
  shipped alternative matrices (``rewards.rescore``, as the report's ranking table does);
- the paired-modality paper Table 1: ``paired_modality.rates_and_agreement.clopper_pearson`` at the printed counts of n = 40;
  §5.2: ``paired_modality.rates_and_agreement.mcnemar_exact`` on paired outcome vectors built from the counts;
- the benchmark-MCQ paper Table 4: ``benchmark_mcq.accuracy_tests.bh`` and ``verdict``; the counterfactual paper §3.9:
  ``stats.inference.bonferroni``;
- sums of printed counts, and differences of printed values as the interval their rounding allows.

A derivation returns a float, a (low, high) interval (the range the printed, rounded inputs
allow) or a string (a verdict).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable

import numpy as np

from medscope.errors import MedScopeError
from medscope.reproduce.registry import bound, printed

DERIVATIONS: dict[str, Callable] = {}
# the counterfactual paper Table 5's main test: lesion cases (each an original, a target removal and a random
# removal), natural negatives, degraded views (of lesion cases) -- Table 3 and §5.1
MAIN_TEST = {"lesion": 219, "negative": 288, "degraded": 170}
# addition: the paper does not print how many of the 219 lesion cases are critical; 59 is the
# only integer for which always-absent's net utility rounds to Table 5's -0.848
# (tests/protocols/counterfactual/test_table5.py works it out), so that one cell checks consistency, not a prediction
N_CRITICAL = 59
CONSTANT_POLICIES = {  # Table 5's image-blind rows: (action, claims the finding)
    "always_claims": ("answer", True),
    "always_absent": ("answer", False),
    "always_refers": ("refer", None),
}


def derivation(fn: Callable) -> Callable:
    """Register ``fn`` in ``DERIVATIONS`` under its own name, so a registry cell can name it in ``compute``.

    Parameters
    ----------
    fn : callable
        A derivation taking the ``Context`` first, then the cell's ``args`` as keywords.

    Returns
    -------
    callable
        ``fn`` itself (a decorator).
    """
    DERIVATIONS[fn.__name__] = fn
    return fn


class Context:
    """What several cells share, computed once per ``reproduce`` run (the scored constant policies)."""

    def __init__(self, work_dir: str | None = None):
        self._work_dir = work_dir
        self._tmp = None
        self._scored = None

    def work_dir(self) -> str:
        if self._work_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="medscope-reproduce-")
            self._work_dir = self._tmp.name
        return self._work_dir

    def constant_policy_scores(self):
        """(metrics, scores) of the constant policies on the main test's composition, scored by the
        counterfactual protocol exactly as ``medscope score`` scores an eval run."""
        if self._scored is None:
            self._scored = score_constant_policies(self.work_dir())
        return self._scored

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def compute(ctx: Context, name: str, args: dict):
    """The value of one cell: the named derivation called with the context and the cell's arguments.

    Parameters
    ----------
    ctx : Context
        What the run's cells share.
    name : str
        A key of ``DERIVATIONS`` (a registry cell's ``compute``).
    args : dict
        The cell's ``args``, passed as keywords.

    Returns
    -------
    float, tuple of float or str
        What the derivation returns: a value, a (low, high) interval or a verdict.

    Raises
    ------
    MedScopeError
        When ``name`` is no derivation (the message lists the known ones), or the derivation raises it.
    """
    fn = DERIVATIONS.get(name)
    if fn is None:
        raise MedScopeError(f"no derivation {name!r}; known: {', '.join(sorted(DERIVATIONS))}")
    return fn(ctx, **args)


# -- printed inputs as intervals ---------------------------------------------------------------------------


def _interval(text) -> tuple[float, float]:
    """A printed input -> the interval its rounding allows; '< 0.001' -> (0, 0.001)."""
    b = bound(str(text))
    if b:
        op, v = b
        if op in ("<", "<="):
            return 0.0, v
        return v, 1.0
    v, h = printed(str(text))
    return v - h, v + h


@derivation
def total(ctx: Context, values: list) -> float:
    """Sum of printed counts (cases, views, questions): exact, as counts are.

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    values : list
        Printed counts (numbers or strings as printed, '1,115' read as 1115).

    Returns
    -------
    float
        Their sum.

    Raises
    ------
    MedScopeError
        When a value is not a printed number or not a whole number.
    """
    out = 0
    for v in values:
        x, _ = printed(str(v))
        if x != int(x):
            raise MedScopeError(f"total adds counts; {v!r} is not one")
        out += int(x)
    return float(out)


@derivation
def difference(ctx: Context, a, b, unit: float = 1.0) -> tuple[float, float]:
    """a - b of two printed values, times ``unit`` (0.01: percentages to fractions).

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    a, b : str or float
        Printed values; a bound '< x' / '<= x' stands for [0, x], '> x' / '>= x' for [x, 1].
    unit : float, optional
        Factor applied to the difference (0.01: percentage points to a fraction).

    Returns
    -------
    low, high : float
        The range of a - b over every pair of unrounded values the printed ones allow, times ``unit``.
    """
    alo, ahi = _interval(a)
    blo, bhi = _interval(b)
    return (alo - bhi) * unit, (ahi - blo) * unit


# -- the counterfactual paper: the cost matrix and the constant policies ----------------------------------------------------


@derivation
def table2_reward(ctx: Context, kind: str, outcome: str, critical: bool = False, matrix: str = "table2") -> float:
    """Reward of one view of ``kind`` for ``outcome`` (correct, wrong, refer, clarify) under a
    shipped cost matrix, through ``rewards.view_rewards`` (counterfactual paper §3.4, Table 2).

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    kind : str
        The view kind ('original', 'target_removal', 'random_removal', 'natural_negative', 'degraded').
    outcome : str
        'correct' or 'wrong' (an answer that does or does not state the truth), 'refer' or 'clarify'.
    critical : bool, optional
        Whether the case's finding is critical.
    matrix : str, optional
        A shipped cost matrix by name (``costs.load``); default the paper's 'table2'.

    Returns
    -------
    float
        The view's reward.

    References
    ----------
    .. [1] counterfactual paper, §3.4 and Table 2.
    """
    from medscope.protocols.counterfactual import costs, rewards

    lesion_view = kind != "natural_negative"
    present = bool(rewards.lesion_present(np.array([kind], dtype=object), np.array([0.05 if lesion_view else 0.0]),
                                          np.array([lesion_view]))[0])
    action = "answer" if outcome in ("correct", "wrong") else outcome
    claims = present if outcome == "correct" else (not present)
    reward, *_ = rewards.view_rewards(
        np.array([kind], dtype=object), np.array([action], dtype=object), np.array([claims]), np.array([present]),
        np.array([critical]), np.array([np.nan]), np.array([np.nan]), np.array([0]), costs.load(matrix))
    return float(reward[0])


def main_test_views():
    """A views table with the main test's composition (counterfactual paper Tables 3 and 5) and 59 critical
    lesion cases (``N_CRITICAL``); no pixels: constant policies never look.

    Returns
    -------
    pyarrow.Table
        A 'views' records table (``synthetic_runs.views`` with seed 0: 219 lesion cases, each an original,
        a target removal and a random removal; 288 natural negatives; 170 degraded views), ``critical``
        set on the first 59 lesion cases by case id.

    References
    ----------
    .. [1] counterfactual paper, Tables 3 and 5.
    """
    from medscope.io import records
    from medscope.testing import synthetic_runs as synthetic

    views = synthetic.views(MAIN_TEST["lesion"], MAIN_TEST["negative"], MAIN_TEST["degraded"], seed=0).to_pylist()
    lesion_cases = sorted({v["case_id"] for v in views if v["kind"] == "original"})
    critical = set(lesion_cases[:N_CRITICAL])
    for v in views:
        v["critical"] = v["case_id"] in critical
    return records.to_table("views", views)


def constant_policy_episodes(views, policies=CONSTANT_POLICIES):
    """The episodes a sweep writes for image-blind policies: one decision per view per policy.

    Parameters
    ----------
    views : pyarrow.Table
        A views table with ``view_id`` and ``case_id`` columns.
    policies : dict of str to tuple, optional
        Policy name -> (action, claims_finding); default ``CONSTANT_POLICIES`` (always claims, always
        absent, always refers).

    Returns
    -------
    pyarrow.Table
        An 'episodes' records table: one greedy, error-free episode per policy per view, the policy's
        name as ``model``, condition 'agent', confidence 0.9 on answers.
    """
    from medscope.io import records

    rows = []
    for name, (action, claims) in policies.items():
        for v in views.select(["view_id", "case_id"]).to_pylist():
            rows.append({
                "run_id": "reproduce", "protocol": "counterfactual", "model": name, "condition": "agent",
                "item_id": v["view_id"], "case_id": v["case_id"], "request_key": f"{name}:{v['view_id']}",
                "prompt_version": "v1", "decoding": "greedy", "turns": None, "raw_text": "", "action": action,
                "answer": None, "claims_finding": claims, "box": None,
                "confidence": 0.9 if action == "answer" else None, "tool_calls": 0, "input_tokens": 0,
                "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1, "error": None,
            })
    return records.to_table("episodes", rows)


def score_constant_policies(work_dir: str):
    """Write the views and episodes tables and score them with the counterfactual protocol (the
    code ``medscope score`` runs; no bootstrap: the cells are point values).

    Parameters
    ----------
    work_dir : str
        A directory or storage URI to write ``views.parquet``, ``episodes.parquet`` and ``scored/`` in.

    Returns
    -------
    metrics : pandas.DataFrame
        The scored run's 'metrics' table.
    scores : pyarrow.Table
        Its per-view 'scores' table.
    """
    from medscope import protocols
    from medscope.io import layout, records, storage

    views = main_test_views()
    views_uri = storage.join(work_dir, "views.parquet")
    episodes_uri = storage.join(work_dir, "episodes.parquet")
    records.write_table("views", views, views_uri)
    records.write_table("episodes", constant_policy_episodes(views), episodes_uri)
    out = storage.join(work_dir, "scored")
    protocols.load("counterfactual", {"n_boot": 0}).score(episodes_uri, views_uri, out)
    run = layout.ScoredRun(out)
    return records.read_table("metrics", run.metrics).to_pandas(use_threads=False), records.read_table("scores", run.scores)


@derivation
def constant_policy(ctx: Context, policy: str, metric: str) -> float:
    """A §3.8 metric of a constant policy on the main test (counterfactual paper Table 5's trivial rows).

    Parameters
    ----------
    ctx : Context
        Holds the constant policies scored once per run.
    policy : str
        'always_claims', 'always_absent' or 'always_refers'.
    metric : str
        A metric name of the counterfactual protocol's metrics table (e.g. 'net_utility').

    Returns
    -------
    float
        The metric's value over all views (breakdown 'all', no reference).

    Raises
    ------
    MedScopeError
        When the metrics table has no single such row.

    References
    ----------
    .. [1] counterfactual paper, §3.8 and Table 5.
    """
    metrics, _ = ctx.constant_policy_scores()
    row = metrics[(metrics["model"] == policy) & (metrics["metric"] == metric) & (metrics["breakdown"] == "all")
                  & metrics["reference"].isna()]
    if len(row) != 1:
        raise MedScopeError(f"the scored constant policies have no single {metric!r} row for {policy!r}")
    return float(row["value"].iloc[0])


@derivation
def constant_policy_net_utility(ctx: Context, policy: str, matrix: str) -> float:
    """Net utility of a constant policy rescored under a shipped cost matrix (counterfactual paper §5.5), as
    the report's ranking-under-every-matrix table rescores.

    Parameters
    ----------
    ctx : Context
        Holds the constant policies scored once per run.
    policy : str
        'always_claims', 'always_absent' or 'always_refers'.
    matrix : str
        A shipped cost matrix by name (``costs.load``).

    Returns
    -------
    float
        The mean rescored reward over the policy's views.

    References
    ----------
    .. [1] counterfactual paper, §5.5.
    """
    from medscope.protocols.counterfactual import costs, rewards

    _, scores = ctx.constant_policy_scores()
    reward = rewards.rescore(scores, costs.load(matrix))
    models = np.asarray(scores.column("model").to_pylist(), dtype=object)
    return float(np.mean(reward[models == policy]))


@derivation
def bonferroni_threshold(ctx: Context, m: int, alpha: float = 0.05) -> float:
    """Bonferroni threshold of a family of ``m`` tests (counterfactual paper §3.9).

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    m : int
        The number of tests in the family.
    alpha : float, optional
        The family-wise error rate.

    Returns
    -------
    float
        The per-test threshold ``stats.inference.bonferroni`` gives (alpha / m).

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    from medscope.stats import inference

    return float(inference.bonferroni([1.0] * int(m), alpha)[0])


# -- the paired-modality paper: exact intervals and McNemar ------------------------------------------------------------------


@derivation
def proportion(ctx: Context, k: int, n: int) -> float:
    """k / n.

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    k : int
        Count of successes.
    n : int
        Number of trials.

    Returns
    -------
    float
        The proportion.
    """
    return k / n


@derivation
def clopper_pearson(ctx: Context, k: int, n: int, side: str) -> float:
    """One end of the exact 95% interval of k/n (paired-modality paper Table 1).

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    k : int
        Count of successes.
    n : int
        Number of trials.
    side : str
        'low' or 'high'.

    Returns
    -------
    float
        That end of ``rates_and_agreement.clopper_pearson(k, n)``.

    References
    ----------
    .. [1] paired-modality paper, Table 1.
    """
    from medscope.protocols.paired_modality import rates_and_agreement

    lo, hi = rates_and_agreement.clopper_pearson(int(k), int(n))
    return {"low": lo, "high": hi}[side]


def paired_outcomes(k_before: int, k_after: int, b: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-photograph errors in the two settings with ``k_before`` / ``k_after`` errors of ``n`` and
    ``b`` photographs wrong only before; the rest follows: a = k_before - b wrong in both,
    c = k_after - a wrong only after.

    Parameters
    ----------
    k_before : int
        Errors of the first setting (photo only).
    k_after : int
        Errors of the second setting (photo + radiograph).
    b : int
        Photographs wrong in the first setting only.
    n : int
        Photographs in all.

    Returns
    -------
    before, after : numpy.ndarray of bool
        Shape (n,): True where the photograph is wrong in that setting.

    Raises
    ------
    MedScopeError
        When the counts are inconsistent (a negative cell, or more than ``n`` photographs wrong).
    """
    a = k_before - b
    c = k_after - a
    if min(a, b, c) < 0 or a + b + c > n:
        raise MedScopeError(f"no {n} pairs have {k_before} errors before, {k_after} after and {b} wrong only before")
    before = np.array([True] * a + [True] * b + [False] * c + [False] * (n - a - b - c))
    after = np.array([True] * a + [False] * b + [True] * c + [False] * (n - a - b - c))
    return before, after


@derivation
def mcnemar_p(ctx: Context, k_before: list, k_after: list, b: list, n: int = 40) -> float:
    """Exact McNemar p of photo only vs photo + radiograph (paired-modality paper §5.2), one model or pooled
    over several (the lists: one entry per model, outcome vectors concatenated).

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    k_before, k_after, b : list of int
        Per model: errors photo only, errors photo + radiograph, and photographs wrong only photo only
        (see ``paired_outcomes``); equal lengths.
    n : int, optional
        Photographs per model (the paper's 40).

    Returns
    -------
    float
        The exact McNemar p-value of ``rates_and_agreement.mcnemar_exact``.

    Raises
    ------
    MedScopeError
        When a model's counts are inconsistent.

    References
    ----------
    .. [1] paired-modality paper, §5.2.
    """
    from medscope.protocols.paired_modality import rates_and_agreement

    pairs = [paired_outcomes(int(kb), int(ka), int(bb), int(n)) for kb, ka, bb in zip(k_before, k_after, b, strict=True)]
    before = np.concatenate([p[0] for p in pairs])
    after = np.concatenate([p[1] for p in pairs])
    return float(rates_and_agreement.mcnemar_exact(before, after)["p_value"])


# -- the benchmark-MCQ paper: multiplicity and verdicts ---------------------------------------------------------------------


@derivation
def bh_q(ctx: Context, p: list, index: int) -> tuple[float, float]:
    """The Benjamini-Hochberg q of test ``index`` of a family given its printed p-values (benchmark-MCQ paper
    Table 4): q is monotone in every p, so the q at the low and high ends of each p's rounding
    (``< 0.001``: 0 to 0.001) bound the q the unrounded p-values give.

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    p : list
        The family's printed p-values (numbers, strings, or bounds such as '< 0.001').
    index : int
        Position of the test in ``p``.

    Returns
    -------
    low, high : float
        The test's BH q at the low and at the high ends of every p's rounding.

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 4.
    """
    from medscope.protocols.benchmark_mcq import accuracy_tests

    lo = accuracy_tests.bh([_interval(v)[0] for v in p])
    hi = accuracy_tests.bh([_interval(v)[1] for v in p])
    return float(lo[index]), float(hi[index])


def _value_for_verdict(text) -> float:
    b = bound(str(text))
    if b:
        return b[1] / 2 if b[0] in ("<", "<=") else b[1]
    return printed(str(text))[0]


@derivation
def verdict(ctx: Context, q, tost_q) -> str:
    """Table 4's verdict from the printed q and TOST q (benchmark-MCQ paper Methods).

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    q, tost_q : str or float
        The printed FDR q and TOST q; a bound '< x' is read as x / 2, '> x' as x.

    Returns
    -------
    str
        'Effect', 'Equivalent', 'Effect (small)' (both) or 'Undetermined' at alpha 0.05
        (``accuracy_tests.verdict``).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    from medscope.protocols.benchmark_mcq import accuracy_tests

    return accuracy_tests.verdict(_value_for_verdict(q), _value_for_verdict(tost_q))


@derivation
def verdict_count(ctx: Context, q: list, tost_q: list, kind: str) -> float:
    """How many cells are FDR-significant (``effect``), TOST-equivalent (``equivalent``) or both.

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    q, tost_q : list
        The printed q and TOST q of each cell, equal lengths (read as in ``verdict``).
    kind : str
        'effect' (Effect or Effect (small)), 'equivalent' (Equivalent or Effect (small)), 'both'
        (Effect (small)) or 'undetermined'.

    Returns
    -------
    float
        The number of cells of that kind.
    """
    from medscope.protocols.benchmark_mcq import accuracy_tests

    names = [accuracy_tests.verdict(_value_for_verdict(a), _value_for_verdict(b)) for a, b in zip(q, tost_q, strict=True)]
    want = {"effect": ("Effect", "Effect (small)"), "equivalent": ("Equivalent", "Effect (small)"),
            "both": ("Effect (small)",), "undetermined": ("Undetermined",)}[kind]
    return float(sum(n in want for n in names))


def is_number(x) -> bool:
    """Whether ``x`` is a finite int or float (a bool is not).

    Parameters
    ----------
    x : object
        Any value.

    Returns
    -------
    bool
    """
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# -- the organ-presence paper: a constant reply on the organ-presence probe --------------------------------------------------

PROBE_ORGANS = ("spleen", "right kidney", "left kidney", "gallbladder", "esophagus", "liver", "stomach", "aorta",
                "inferior vena cava", "portal and splenic vein", "pancreas", "right adrenal gland", "left adrenal gland")


def constant_probe_rows(reply: str, fmt: str = "free_text", cases: int = 30, per_case: int = 2) -> list[dict]:
    """Probe scores of one constant reply on a small probe in the probe's item layout: ``per_case``
    positives and ``per_case`` negatives of each strategy on each of ``cases`` cases, over the 13
    BTCV organs, read by the organ-presence protocol's reply reader (``score_episodes``).

    Parameters
    ----------
    reply : str
        The reply, ``{organ}`` replaced by the item's organ.
    fmt : str, optional
        The probe format, written as the episodes' condition (default 'free_text').
    cases : int, optional
        Number of cases.
    per_case : int, optional
        Items of each strategy (positive, random, popular, adversarial) per case.

    Returns
    -------
    list of dict
        The probe_scores rows ``score_episodes`` gives, one per item it reads.
    """
    from medscope.protocols.organ_presence.scoring import score_episodes
    from medscope.volumes.config import DEFAULT_HEDGES

    items, episodes = {}, []
    for c in range(cases):
        for s, truth in (("positive", "present"), ("random", "absent"), ("popular", "absent"), ("adversarial", "absent")):
            for j in range(per_case):
                i = f"c{c:02d}-{s}-{j}"
                organ = PROBE_ORGANS[(c + j) % len(PROBE_ORGANS)]
                items[i] = {"item_id": i, "case_id": f"case{c:02d}", "z": 10 * j, "z_mm": 10.0 * j, "organ": organ,
                            "truth": truth, "strategy": s, "stratum": "mid", "render": "gray",
                            "z_distance_mm": None if truth == "present" else 20.0 + 10 * j, "absent_from_volume": False}
                episodes.append({"run_id": "reproduce", "model": "constant", "condition": fmt, "item_id": i,
                                 "raw_text": reply.format(organ=organ)})
    rows, _ = score_episodes(episodes, items, DEFAULT_HEDGES)
    return rows


@derivation
def constant_probe_metric(ctx: Context, reply: str, strategy: str, metric: str = "specificity", fmt: str = "free_text") -> float:
    """A probe metric of a model that always gives ``reply`` (organ-presence paper: an always-present model's
    free-text specificity), through the protocol's ``probe_metrics``.

    Parameters
    ----------
    ctx : Context
        Caches the probe metrics per (reply, fmt) for the run.
    reply : str
        The constant reply, ``{organ}`` replaced by the item's organ.
    strategy : str
        The negative-sampling strategy whose breakdown is read ('positive', 'random', 'popular',
        'adversarial').
    metric : str, optional
        A probe metric name (default 'specificity').
    fmt : str, optional
        The probe format (default 'free_text').

    Returns
    -------
    float
        The metric's value in breakdown ``strategy=<strategy>;render=gray`` (20 bootstrap resamples).

    Raises
    ------
    MedScopeError
        When the probe metrics have no such row.
    """
    from medscope.protocols.organ_presence.scoring import probe_metrics

    key = (reply, fmt)
    cache = ctx.__dict__.setdefault("_probe", {})
    if key not in cache:
        cache[key] = probe_metrics(constant_probe_rows(reply, fmt), b=20)
    want = f"strategy={strategy};render=gray"
    for r in cache[key]:
        if r["metric"] == metric and r["breakdown"] == want:
            return float(r["value"])
    raise MedScopeError(f"the probe metrics have no {metric} for {want}")


@derivation
def stage_selection(ctx: Context, stages: dict, previous: dict | None = None, margin: float = 0.02) -> str:
    """The stage the pre-registered rule picks from printed validation U and H (counterfactual paper §3.6),
    through ``medscope.training.selection.select_stage`` (what ``medscope train-select`` runs).

    Parameters
    ----------
    ctx : Context
        Unused; every derivation takes it.
    stages : dict of str to dict
        Stage name -> {"U": printed net utility, "H": printed healthy-claims rate in percent}, in stage
        order.
    previous : dict, optional
        The previous release's printed {"U", "H"} (amendment 1).
    margin : float, optional
        The rule's tolerance on U and on H (as a fraction).

    Returns
    -------
    str
        The chosen stage's name, or 'previous'.

    References
    ----------
    .. [1] counterfactual paper, §3.6.
    """
    from medscope.training.selection import select_stage

    metrics = {name: {"U": printed(str(v["U"]))[0], "H": printed(str(v["H"]))[0] / 100} for name, v in stages.items()}
    prev = {"U": printed(str(previous["U"]))[0], "H": printed(str(previous["H"]))[0] / 100} if previous else None
    return select_stage(metrics, margin=margin, previous=prev).chosen
