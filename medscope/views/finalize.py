"""Cross-case QC over a built views table (counterfactual paper, §3.3): the edit detector, case-level
keep rules and adversarial filtering. Failed views stay, with ``passed = false`` and a reason.

Keep rules (§3.3: "A case is kept only if (i) the lesion no longer stands out after target
removal ... and (ii) no lesion pixel changed in random removal"): a target erasure passes its
contrast test and scores below the edit-score bound; a random removal (and unmatched control)
changes no lesion pixel; the target and random removal of a tool stand or fall together (they
share tool and shape, §3.2); a lesion case with no tool whose pair passes both rules keeps none
of its views (its original, degraded, unmatched and insertion views fail with
``case_failed_qc``). ``report["keep_rules"]`` counts the cases dropped by each rule.
"""

from __future__ import annotations

import pyarrow as pa

from medscope.io import records
from medscope.qc import detector
from medscope.views.recipe import Recipe


def column_values(col: pa.ChunkedArray) -> list:
    """A column as a Python list; a string column's repeated values (case ids, kinds, tools,
    sources, reasons) as one shared ``str`` each, not one per view: ~60 bytes a view and column
    less on the views-build driver.

    Parameters
    ----------
    col : pyarrow.ChunkedArray
        Any column; only string columns are dictionary-encoded.

    Returns
    -------
    list
        The column's values in row order, nulls as None.
    """
    if not pa.types.is_string(col.type) or len(col) == 0:
        return col.to_pylist()
    enc = col.combine_chunks().dictionary_encode()
    vocab = enc.dictionary.to_pylist() + [None]  # a null's code -1 picks the None
    return [vocab[c] for c in enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).tolist()]


def finalize(views: pa.Table, features: list[dict], recipe: Recipe) -> tuple[pa.Table, list[dict], dict]:
    """(views with final QC fields, new rejects rows, report).

    Parameters
    ----------
    views : pyarrow.Table
        The built views table (``view_id``, ``case_id``, ``kind``, ``tool``, ``passed``, ``reject_reason``,
        ``edit_score``, ``source`` among its columns).
    features : list of dict
        QC feature rows of the edited regions (``view_id``, ``case_id``, ``kind``, ``tool``, ``role``, ``x``),
        as ``detector`` reads them.
    recipe : Recipe
        Supplies ``edit_detector``, ``edit_score_max``, the adversarial bounds and the seed.

    Returns
    -------
    views : pyarrow.Table
        ``views`` with ``passed``, ``reject_reason`` and ``edit_score`` replaced.
    rejects : list of dict
        One rejects row per view that passed before and fails now.
    report : dict
        ``edit_detector``, ``keep_rules`` (dropped-case counts by rule) and ``adversarial``.

    References
    ----------
    .. [1] Counterfactual paper, §3.3.
    """
    cols = {k: column_values(views.column(k)) for k in ("view_id", "case_id", "kind", "tool", "passed", "reject_reason", "edit_score", "source")}
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

    def propagate() -> dict:
        """§3.3's case keep rules: a lesion case is kept only if, for one tool, (i) its target
        removal passes (contrast, edit detector) and (ii) its random removal succeeded without
        changing a lesion pixel; the two views of a tool stand or fall together (§3.2: they share
        tool and shape). Returns the counts of dropped cases by rule."""
        ok: dict[tuple[str, str, str], bool] = {}
        lesion_case: set[str] = set()
        for i in range(n):
            c, k = cols["case_id"][i], cols["kind"][i]
            if k in ("target_removal", "random_removal"):
                ok[(c, k, cols["tool"][i])] = ok.get((c, k, cols["tool"][i]), False) or passed[i]
            if k == "original":
                lesion_case.add(c)
        tools_of: dict[str, set[str]] = {}
        for (c, _, t) in ok:
            tools_of.setdefault(c, set()).add(t)

        def pair_ok(c: str, t: str) -> bool:
            return ok.get((c, "target_removal", t), False) and ok.get((c, "random_removal", t), False)

        case_ok = {c: any(pair_ok(c, t) for t in tools_of.get(c, ())) for c in lesion_case}
        counts = {"lesion_cases": len(lesion_case), "kept_by_rules": sum(case_ok.values()), "dropped": 0,
                  "dropped_rule_i": 0, "dropped_rule_ii": 0, "dropped_rule_ii_only": 0, "dropped_unpaired": 0}
        for c in sorted(lesion_case):
            if case_ok[c]:
                continue
            rule_i = any(ok.get((c, "target_removal", t), False) for t in tools_of.get(c, ()))
            rule_ii = any(ok.get((c, "random_removal", t), False) for t in tools_of.get(c, ()))
            counts["dropped"] += 1
            counts["dropped_rule_i"] += not rule_i
            counts["dropped_rule_ii"] += not rule_ii
            counts["dropped_rule_ii_only"] += rule_i and not rule_ii
            counts["dropped_unpaired"] += rule_i and rule_ii  # (i) on one tool, (ii) on another
        for i in range(n):
            c, k, t = cols["case_id"][i], cols["kind"][i], cols["tool"][i]
            if k == "random_removal" and not ok.get((c, "target_removal", t), False):
                fail(i, "paired_target_failed")
            elif k == "target_removal" and passed[i] and not ok.get((c, "random_removal", t), False):
                fail(i, "paired_control_failed")
            elif k in ("target_removal", "random_removal") and not passed[i]:
                continue
            elif c in case_ok and not case_ok[c]:
                fail(i, "case_failed_qc")
        return counts

    report["keep_rules"] = propagate()
    kept = {cols["case_id"][i] for i in range(n) if cols["kind"][i] == "target_removal" and passed[i]}
    dropped, report["adversarial"] = detector.adversarial_filter(
        features, kept, max_auc=recipe.adversarial_auc_max, max_drop_frac=recipe.adversarial_max_drop_frac,
        seed=recipe.seed)
    for i in range(n):
        if cols["case_id"][i] in dropped and cols["kind"][i] in ("target_removal", "random_removal", "original", "unmatched_control", "degraded", "insertion"):
            fail(i, "adversarial_filter")

    rejects = [
        records.reject_row("views", cols["source"][i], cols["view_id"][i], "qc", reason[i])
        for i in range(n) if before[i] and not passed[i]
    ]
    out = views
    for name, values, typ in (("passed", passed, pa.bool_()), ("reject_reason", reason, pa.string()), ("edit_score", score, pa.float64())):
        out = out.set_column(out.schema.get_field_index(name), name, pa.array(values, typ))
    return out, rejects, report
