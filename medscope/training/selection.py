"""Pre-registered stage selection (counterfactual paper §3.6), through the scoring issue's decision rules.

With U the validation net utility and H the validation rate of claimed findings on healthy
images: stage 3 is chosen if U3 ≥ U2 − 0.02 and H3 ≤ H2 + 0.02; otherwise stage 2 under the
same rule against stage 1; otherwise stage 1. Amendment 1: a previous release is kept instead
when the chosen stage's U falls more than 0.02 below it. The rule itself is
``medscope.analysis.decision_rules`` (``stage_selection``); this module feeds it the training run's
validation numbers and records the choice with the comparisons behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from medscope.analysis import decision_rules as rules

TEST_SET = "validation"


@dataclass
class Selection:
    chosen: str
    reasons: list[str] = field(default_factory=list)  # the comparisons, with their numbers
    numbers: dict[str, dict[str, float]] = field(default_factory=dict)


def select_stage(
    metrics: dict[str, dict[str, float]], margin: float = 0.02, previous: dict[str, float] | None = None
) -> Selection:
    """``metrics`` = {"stage1": {"U": .., "H": ..}, "stage2": .., "stage3": ..} (validation, in
    stage order); ``previous`` the earlier release's {"U", "H"} for amendment 1.

    Parameters
    ----------
    metrics : dict of str to dict
        Stage name -> {"U": validation net utility, "H": validation healthy-claims rate}, in stage
        order; optional "U_counts" / "H_counts" (``"14/100"``, ``medscope.analysis.exact``) decide
        the rule exactly (without them the values are read from their decimal text).
    margin : float, optional
        Tolerance on U and on H, read as the decimal it is written as (0.02 = 1/50): a tie passes.
    previous : dict of str to float, optional
        The previous release's {"U", "H"}.

    Returns
    -------
    Selection
        ``chosen`` (a stage name, or 'previous'), ``reasons`` (the comparisons, with their numbers) and
        ``numbers`` (the inputs).

    References
    ----------
    .. [1] counterfactual paper, §3.6.
    """
    numbers = dict(metrics) | ({"previous": dict(previous)} if previous else {})
    rows = [
        {"model": m, "condition": "agent", "test_set": TEST_SET, "breakdown": "all", "metric": metric,
         "value": float(v[key]), "ci_low": None, "ci_high": None, "n_cases": 0, "reference": None,
         "counts": v.get(f"{key}_counts")}
        for m, v in numbers.items() for metric, key in (("net_utility", "U"), ("healthy_claims", "H"))
    ]
    rule = rules.Rule(
        id="stage_selection", kind="stage_selection", test_set=TEST_SET, candidates=list(metrics),
        utility="net_utility", harm="healthy_claims", utility_tolerance=margin, harm_tolerance=margin,
        fallback=rules.Fallback(model="previous", margin=margin) if previous else None,
    )
    verdict = rules.apply_rule(rule, pd.DataFrame(rows))
    return Selection(verdict["verdict"].removeprefix("select "), verdict["lines"], numbers)
