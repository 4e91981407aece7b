"""Training seeds as distinct models, pooled where the counterfactual paper pools them (§3.7 C4, §3.9, §4.2).

A run of arm A at seed k is its own model, ``A@seed<k>`` (``seed_model_id``), in episodes and
scores: scoring keeps one decision per model x condition x view, so two seeds of one arm under
one name would lose the second seed's episodes. The scores table carries ``arm`` and ``seed``
(``arm_and_seed``), and the seeds of an arm pool as the model named ``A`` (``arm_pools``; the
case bootstrap resamples every seed's views of a case together, ``compare.pool_models``).

§3.9: "Seed results are reported as mean ± standard deviation over three seeds, with each seed
pair also compared by paired bootstrap"; §3.7 C4: "lower in every seed pair with the pooled
interval excluding zero" (``lower_in_every_seed_pair``).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from medscope.errors import MedScopeError

SEED_TAG = "@seed"
_SEED_RE = re.compile(r"^(?P<arm>.+)@seed(?P<seed>\d+)$")


def seed_model_id(arm: str, seed: int) -> str:
    """The model id of arm ``arm`` trained with seed ``seed``: ``<arm>@seed<k>``.

    Parameters
    ----------
    arm : str
        The arm's name; may not contain ``@seed``.
    seed : int
        The training seed.

    Returns
    -------
    str
        ``"<arm>@seed<k>"``.

    Raises
    ------
    MedScopeError
        When ``arm`` contains ``@seed``.
    """
    if SEED_TAG in arm:
        raise MedScopeError(f"arm name {arm!r} may not contain {SEED_TAG!r}")
    return f"{arm}{SEED_TAG}{int(seed)}"


def arm_and_seed(model: str) -> tuple[str, int | None]:
    """(arm, seed) of a model id; a model without ``@seed<k>`` is its own arm with no seed.

    Parameters
    ----------
    model : str
        A model id.

    Returns
    -------
    arm : str
        The part before ``@seed<k>``, or ``model`` itself.
    seed : int or None
        ``k``; None for a model without a seed.
    """
    m = _SEED_RE.match(model)
    return (m["arm"], int(m["seed"])) if m else (model, None)


def arm_seed_columns(models) -> tuple[list[str], list[int | None]]:
    """The ``arm`` and ``seed`` columns of the scores table for a column of model ids (both
    null for a model that is no seed run: an API model, a base checkpoint).

    Parameters
    ----------
    models : iterable
        Model ids (read as str).

    Returns
    -------
    arms : list of str or None
        Each model's arm; None for a model with no seed.
    seeds : list of int or None
        Each model's seed; None for a model with no seed.
    """
    pairs = [arm_and_seed(str(m)) for m in models]
    return [a if s is not None else None for a, s in pairs], [s for _, s in pairs]


def arm_pools(models) -> dict[str, list[str]]:
    """{arm: its seed models, by seed} for every arm that has ``@seed<k>`` models: the pools of
    ``compare.pool_models`` (an arm with one seed pools to that seed's episodes).

    Parameters
    ----------
    models : iterable
        Model ids (read as str; repeats allowed).

    Returns
    -------
    dict of str to list of str
        Arm -> its ``@seed<k>`` models in seed order, arms sorted by name.

    Raises
    ------
    MedScopeError
        When a plain model has the name of an arm with seeds.
    """
    by: dict[str, dict[int, str]] = {}
    for m in sorted(set(map(str, models))):
        arm, seed = arm_and_seed(m)
        if seed is not None:
            by.setdefault(arm, {})[seed] = m
    taken = {m for m in set(map(str, models)) if arm_and_seed(m)[1] is None}
    clash = sorted(set(by) & taken)
    if clash:
        raise MedScopeError(f"model(s) {clash} are both a plain model and an arm with seeds; rename one")
    return {arm: [seeds[k] for k in sorted(seeds)] for arm, seeds in sorted(by.items())}


def seed_pair_differences(table: pd.DataFrame, arm: str, reference: str, metric: str, test_set: str,
                          breakdown: str = "all") -> dict[int, float]:
    """{seed: value(arm@seed k) - value(reference@seed k)} read from paired-difference rows of a
    metrics table (``compare.seed_pairs``: model ``arm@seedk``, reference ``reference@seedk:...``),
    for every seed both arms were run with.

    Parameters
    ----------
    table : pandas.DataFrame
        A metrics table with paired-difference rows (``model``, ``reference``, ``test_set``,
        ``metric``, ``breakdown``, ``value``).
    arm : str
        The arm whose seed models are the rows' ``model``.
    reference : str
        The reference arm (the part of ``reference`` before ``:``, without its ``@seed<k>``).
    metric : str
        The metric, e.g. ``erased_claims``.
    test_set : str
        The test set.
    breakdown : str
        The breakdown group.

    Returns
    -------
    dict of int to float
        Seed -> difference, for every seed at which both arms were compared.

    Raises
    ------
    MedScopeError
        When a seed pair has several rows.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    ref_model = table["reference"].fillna("").astype(str).str.split(":").str[0]
    sel = (table["test_set"] == test_set) & (table["metric"] == metric) & (table["breakdown"] == breakdown)
    out: dict[int, float] = {}
    for i in np.flatnonzero(sel.to_numpy()):
        a, s = arm_and_seed(str(table["model"].iloc[i]))
        r, rs = arm_and_seed(ref_model.iloc[i])
        if a == arm and r == reference and s is not None and s == rs:
            if s in out:
                raise MedScopeError(f"several {metric} rows for {arm}@seed{s} - {reference}@seed{s} on {test_set}")
            out[s] = float(table["value"].iloc[i])
    return out


def lower_in_every_seed_pair(differences: dict[int, float], seeds: list[int] | None = None) -> tuple[bool, str]:
    """The counterfactual paper §3.7 C4: the primary endpoint (erased-lesion claims on the pooled held-out
    tools) must be "lower in every seed pair": for every seed k, the paired-view arm at seed k
    minus its matched-compute control at seed k (each pair continuing that seed's recipe
    adapter) is strictly below zero. A tie is not lower; a seed with no pair fails the rule
    (it cannot be shown lower). Interval widths play no part here: the pooled interval is a
    separate condition of C4.

    ``differences``: {seed: arm - control}; ``seeds``: the seeds the plan names (default: those
    given). Returns (holds, a line with every seed's difference).

    Parameters
    ----------
    differences : dict of int to float
        Seed -> (arm - control) difference (``seed_pair_differences``).
    seeds : list of int, optional
        The seeds that must each be lower; default the seeds of ``differences``.

    Returns
    -------
    holds : bool
        True when every seed has a difference and each is below 0; False with no seeds.
    text : str
        ``"seed 1: -0.012, seed 2: missing, ..."``, or ``"no seed pairs"``.

    References
    ----------
    .. [1] counterfactual paper, §3.7 (C4).
    """
    seeds = sorted(differences) if seeds is None else list(seeds)
    if not seeds:
        return False, "no seed pairs"
    missing = [s for s in seeds if s not in differences]
    ok = not missing and all(differences[s] < 0 for s in seeds)
    text = ", ".join(f"seed {s}: {differences[s]:+.3f}" if s in differences else f"seed {s}: missing" for s in seeds)
    return bool(ok), text
