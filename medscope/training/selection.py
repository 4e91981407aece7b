"""Pre-registered stage selection (seed 000 §3.6).

With U the validation net utility and H the validation rate of claimed findings on healthy
images: stage 3 is chosen if U3 ≥ U2 − 0.02 and H3 ≤ H2 + 0.02; otherwise stage 2 under the
same rule against stage 1; otherwise stage 1. Amendment 1: a previous release is kept instead
when the chosen stage's U falls more than 0.02 below it.

The scoring issue's decision-rule machinery (``medscope.scoring.rules``) is not on this branch
yet, so the rule is this small function with the same inputs; the lead can route it there.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Selection:
    chosen: str
    reasons: list[str] = field(default_factory=list)  # the comparisons, with their numbers
    numbers: dict[str, dict[str, float]] = field(default_factory=dict)


def not_worse(new: dict, old: dict, margin: float) -> tuple[bool, str]:
    ok = new["U"] >= old["U"] - margin and new["H"] <= old["H"] + margin
    return ok, f"U {new['U']:.3f} vs {old['U']:.3f} (−{margin}), H {new['H']:.3f} vs {old['H']:.3f} (+{margin}): {'pass' if ok else 'fail'}"


def select_stage(
    metrics: dict[str, dict[str, float]], margin: float = 0.02, previous: dict[str, float] | None = None
) -> Selection:
    """``metrics`` = {"stage1": {"U": .., "H": ..}, "stage2": .., "stage3": ..} (validation)."""
    sel = Selection("stage1", numbers=dict(metrics))
    ok3, why3 = not_worse(metrics["stage3"], metrics["stage2"], margin)
    sel.reasons.append(f"stage3 vs stage2: {why3}")
    if ok3:
        sel.chosen = "stage3"
    else:
        ok2, why2 = not_worse(metrics["stage2"], metrics["stage1"], margin)
        sel.reasons.append(f"stage2 vs stage1: {why2}")
        sel.chosen = "stage2" if ok2 else "stage1"
    if previous is not None:
        sel.numbers["previous"] = dict(previous)
        if metrics[sel.chosen]["U"] < previous["U"] - margin:
            sel.reasons.append(f"{sel.chosen} U {metrics[sel.chosen]['U']:.3f} more than {margin} below previous {previous['U']:.3f}")
            sel.chosen = "previous"
    return sel
