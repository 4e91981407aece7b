"""Cross-case QC over a built views table (seed 000, §3.3): the edit detector, case-level
keep rules and adversarial filtering. Failed views stay, with ``passed = false`` and a reason.

Keep rules: a target erasure passes its contrast test and scores below the edit-score bound;
a random removal (and unmatched control) changes no lesion pixel; the random removal of a
tool goes with its target erasure (they share tool and shape, §3.2); a lesion case with no
passing target erasure keeps none of its views (its original, controls, degraded and
insertion views fail with ``case_failed_qc``).
"""

from __future__ import annotations

import pyarrow as pa

from medscope import records
from medscope.qc import detector
from medscope.views.recipe import Recipe


def finalize(views: pa.Table, features: list[dict], recipe: Recipe) -> tuple[pa.Table, list[dict], dict]:
    """(views with final QC fields, new rejects rows, report)."""
    cols = {k: views.column(k).to_pylist() for k in ("view_id", "case_id", "kind", "tool", "passed", "reject_reason", "edit_score", "source")}
    n = len(cols["view_id"])
    passed, reason, score = list(cols["passed"]), list(cols["reject_reason"]), list(cols["edit_score"])
    before = list(passed)
    report: dict = {}

    if recipe.edit_detector:
        model, report["edit_detector"] = detector.train_edit_detector(features, recipe.seed)
    else:
        model, report["edit_detector"] = None, {"skipped": "edit_detector: false in the recipe"}
    if model is not None:
        scores = detector.score_targets(model, features)
        for i in range(n):
            s = scores.get(cols["view_id"][i])
            if s is not None:
                score[i] = s
                if passed[i] and s >= recipe.edit_score_max:
                    passed[i], reason[i] = False, "edit_detected"

    def fail(i: int, why: str) -> None:
        if passed[i]:
            passed[i], reason[i] = False, why

    def propagate() -> None:
        target_ok: dict[tuple[str, str], bool] = {}
        lesion_case: dict[str, bool] = {}
        for i in range(n):
            c = cols["case_id"][i]
            if cols["kind"][i] == "target_removal":
                target_ok[(c, cols["tool"][i])] = target_ok.get((c, cols["tool"][i]), False) or passed[i]
            if cols["kind"][i] == "original":
                lesion_case[c] = True
        case_ok = dict.fromkeys(lesion_case, False)
        for (c, _), ok in target_ok.items():
            if c in case_ok:
                case_ok[c] = case_ok[c] or ok
        for i in range(n):
            c, k = cols["case_id"][i], cols["kind"][i]
            if k == "random_removal" and not target_ok.get((c, cols["tool"][i]), False):
                fail(i, "paired_target_failed")
            elif k == "target_removal" and not passed[i]:
                continue
            elif c in case_ok and not case_ok[c]:
                fail(i, "case_failed_qc")

    propagate()
    kept = {cols["case_id"][i] for i in range(n) if cols["kind"][i] == "target_removal" and passed[i]}
    dropped, report["adversarial"] = detector.adversarial_filter(
        features, kept, max_auc=recipe.adversarial_auc_max, max_drop_frac=recipe.adversarial_max_drop_frac,
        seed=recipe.seed)
    for i in range(n):
        if cols["case_id"][i] in dropped and cols["kind"][i] in ("target_removal", "random_removal", "original", "unmatched_control", "degraded", "insertion"):
            fail(i, "adversarial_filter")

    rejects = [
        records.reject("views", cols["source"][i], cols["view_id"][i], "qc", reason[i])
        for i in range(n) if before[i] and not passed[i]
    ]
    out = views
    for name, values, typ in (("passed", passed, pa.bool_()), ("reject_reason", reason, pa.string()), ("edit_score", score, pa.float64())):
        out = out.set_column(out.schema.get_field_index(name), name, pa.array(values, typ))
    return out, rejects, report
