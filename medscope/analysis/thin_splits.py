"""Evaluation splits too small for an interval, found where the views are built.

A views build whose QC removes most of a cohort can leave a test split of two cases; every cell
of the report over it would then be thin (``medscope.render.thin``: fewer than 10 views or 5
cases, an addition the papers do not set). ``views build`` and ``views show`` say so at once, per
split and view kind, with the QC reasons that removed the most views of that split and what to
try, rather than leaving it for the report to mark every cell.

The rule is the report's own (one constant, ``medscope.render.thin.ThinRule``): a split is thin
when any evaluation kind (O, T, R, N, D, the counterfactual paper §3.8) the build made has fewer
passed views, or those views fewer distinct cases, than a report cell needs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

from medscope.analysis.testsets import EVAL_KINDS, TEST_SETS
from medscope.render import thin

# the splits a test set can read, the one every test set reads first (test; validation: stage selection)
EVALUATION_SPLITS = tuple(sorted({s for splits in TEST_SETS.values() for s in splits}, key=("test", "validation").index))
# reasons that follow from another view's failure (§3.3's keep rules), not causes of their own
KNOCK_ON = ("case_failed_qc", "paired_target_failed", "paired_control_failed")
# what to try for each cause (a prefix of the reason); docs/views.md "When a split is thin"
TRY = {
    "edit_detected": "erasure tools the edit detector cannot tell from the image (`--tools`; `medscope bench "
                     "erasure` measures how many edits of each tool pass QC)",
    "lesion_still_stands_out": "another erasure tool (`--tools`), or a looser contrast check (`contrast_rel` in the recipe)",
    "tool_error": "the failing tool's own message in rejects.parquet, or other tools (`--tools`)",
    "lesion_pixels_changed": "a wider gap between the control edit and the lesion (`control_away_px` in the recipe)",
    "no_room_for_control": "smaller lesions only (`max_lesion_frac`) or a smaller `control_away_px`",
    "adversarial": "a looser adversarial filter (`adversarial_auc_max`, `adversarial_max_drop_frac`)",
}
MORE_CASES = "more cases, or a larger share for the split (`split_fractions` in the recipe; configs/views/demo.yaml gives test 40 %)"


@dataclass
class ThinSplit:
    """One evaluation split below the report's minimum: passed views and distinct cases per
    evaluation kind, and the reject reasons of its failed views, most first."""
    split: str
    views: dict[str, int]
    cases: dict[str, int]
    reasons: list[tuple[str, int]] = field(default_factory=list)


def thin_splits(views: pa.Table, split_fractions: dict[str, float] | None = None) -> list[ThinSplit]:
    """The evaluation splits of a views table too small for a report interval.

    Parameters
    ----------
    views : pyarrow.Table
        A views table, or its ``split``, ``kind``, ``case_id``, ``passed`` and ``reject_reason`` columns.
    split_fractions : dict of str to float, optional
        The recipe's split fractions; a split given none (0) is not expected and not checked.
        Default: every evaluation split is checked.

    Returns
    -------
    list of ThinSplit
        One per evaluation split where an evaluation kind built anywhere in the table has fewer
        passed views than ``thin.rule().min_items`` or fewer cases than ``min_cases`` (a split
        with no views at all counts 0 of each); empty when every split is large enough.

    References
    ----------
    .. [1] counterfactual paper, §3.3, §3.8.
    """
    cols = {k: views.column(k).to_pylist() for k in ("split", "kind", "case_id", "passed", "reject_reason")}
    kinds = [k for k in EVAL_KINDS if k in set(cols["kind"])]
    out = []
    for split in EVALUATION_SPLITS:
        if split_fractions is not None and not split_fractions.get(split):
            continue
        n_views, cases, reasons = Counter(), {k: set() for k in kinds}, Counter()
        for s, k, c, ok, why in zip(*cols.values()):
            if s != split or k not in cases:
                continue
            if ok:
                n_views[k] += 1
                cases[k].add(c)
            elif why:
                reasons[why] += 1
        n_cases = {k: len(cases[k]) for k in kinds}
        if any(thin.is_thin(n_views[k], n_cases[k]) for k in kinds):
            out.append(ThinSplit(split, {k: n_views[k] for k in kinds}, n_cases, reasons.most_common()))
    return out


def warning_lines(found: list[ThinSplit], top: int = 3) -> list[str]:
    """What ``views build`` warns and ``views show`` prints for each thin split: its counts, the
    causes that removed the most views (knock-on failures counted apart) and what to try.

    Parameters
    ----------
    found : list of ThinSplit
        From :func:`thin_splits`.
    top : int, optional
        Causes named per split.

    Returns
    -------
    list of str
        Three lines per split: ``warning: split 'test' is too thin for an interval ...``, the
        reasons, and ``try: ...``; empty when ``found`` is.

    References
    ----------
    .. [1] counterfactual paper, §3.3.
    """
    rule = thin.rule()
    lines = []
    for t in found:
        counts = ", ".join(f"{k} {t.views[k]} views / {t.cases[k]} cases" for k in t.views)
        lines.append(f"warning: split '{t.split}' is too thin for an interval (passed views / cases per kind: {counts}; "
                     f"the report needs {rule.min_items} views over {rule.min_cases} cases a cell, docs/report.md)")
        causes = [(r, n) for r, n in t.reasons if r not in KNOCK_ON]
        knock = [(r, n) for r, n in t.reasons if r in KNOCK_ON]
        if t.reasons:
            said = "; ".join(f"{r} {n} views" for r, n in causes[:top]) or "no cause of its own"
            if knock:
                said += " (then by §3.3's keep rules: " + ", ".join(f"{r} {n}" for r, n in knock) + ")"
            lines.append(f"  QC removed most in '{t.split}': {said}")
        else:
            lines.append(f"  QC removed no view of '{t.split}': the cohort has too few cases there")
        tips = list(dict.fromkeys(tip for r, _ in causes[:top] for key, tip in TRY.items() if r.startswith(key)))
        lines.append("  try: " + "; ".join(tips + [MORE_CASES]) + " (docs/views.md, 'When a split is thin')")
    return lines


__all__ = ["EVALUATION_SPLITS", "KNOCK_ON", "ThinSplit", "thin_splits", "warning_lines"]
