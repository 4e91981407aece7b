"""The views build's summary and its sorted rejects table, computed by Arrow on the driver
(no Python dict per view or reject)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute

from medscope.io import records


def sorted_rejects(tables: list[pa.Table]) -> pa.Table:
    """The rejects tables as one, sorted by (item_id, stage, reason, detail with no detail as
    ""), ties kept in the order given (a stable sort): the order a sort of the rows as Python
    dicts gave, without a dict per reject on the driver.

    Parameters
    ----------
    tables : list of pyarrow.Table
        Rejects tables (or anything ``records.to_table("rejects", ...)`` takes).

    Returns
    -------
    pyarrow.Table
        One rejects table, sorted.
    """
    t = pa.concat_tables([records.to_table("rejects", x) for x in tables]).combine_chunks()
    keys = pa.table({"item_id": t.column("item_id"), "stage": t.column("stage"), "reason": t.column("reason"),
                     "detail": pa.compute.fill_null(t.column("detail"), "")})
    return t.take(pa.compute.sort_indices(keys, [(k, "ascending") for k in keys.column_names]))


def summarize(views: pa.Table, rejects: pa.Table | list[dict], report: dict) -> dict:
    """Counts per kind, tool and imaging type; QC pass rates and reasons; AUCs.

    Parameters
    ----------
    views : pyarrow.Table
        The views table, or its QC columns (``kind``, ``tool``, ``imaging_type``, ``split``, ``passed``).
    rejects : pyarrow.Table or list of dict
        Rejects rows; only ``reason`` is read.
    report : dict
        The build report; ``edit_detector``, ``adversarial``, ``keep_rules`` and ``crosswalk`` are read
        when present.

    Returns
    -------
    dict
        ``views`` and ``passed`` totals; {views, passed} counts ``by_kind``, ``by_tool``, ``by_imaging_type``,
        ``by_split``; ``reject_reasons`` counts; the edit detector's and adversarial filter's AUCs, the
        adversarially dropped cases, ``keep_rules``, near-copy pair counts, the hash-close groups too
        large to pair (``large_hash_groups``) and the cap they are over (``large_group_cap``; None in a
        report older than the cap).
    """
    # counted by Arrow, not over a Python dict per view (a transient of ~0.6 KB a view at the
    # driver's peak)
    t = views.select(["kind", "tool", "imaging_type", "split"]).append_column(
        "passed_n", pa.compute.cast(views.column("passed"), pa.int64()))

    def count(key):
        g = t.group_by(key, use_threads=False).aggregate([([], "count_all"), ("passed_n", "sum")]).to_pydict()
        return dict(sorted((str(k), {"views": n, "passed": p or 0})
                           for k, n, p in zip(g[key], g["count_all"], g["passed_n_sum"])))

    reasons: dict[str, int] = {}
    for r in (rejects.column("reason").to_pylist() if isinstance(rejects, pa.Table) else (r["reason"] for r in rejects)):
        reasons[r] = reasons.get(r, 0) + 1
    det, adv = report.get("edit_detector", {}), report.get("adversarial", {})
    return {
        "views": views.num_rows, "passed": int(pa.compute.sum(t.column("passed_n")).as_py() or 0),
        "by_kind": count("kind"), "by_tool": count("tool"), "by_imaging_type": count("imaging_type"),
        "by_split": count("split"), "reject_reasons": dict(sorted(reasons.items())),
        "edit_detector_heldout_auc": det.get("heldout_auc"), "edit_detector_train_auc": det.get("train_auc"),
        "adversarial_auc_before": adv.get("auc_before"), "adversarial_auc_after": adv.get("auc_after"),
        "adversarial_dropped_cases": adv.get("dropped"), "keep_rules": report.get("keep_rules", {}),
        "cross_cohort_pairs": len(report.get("crosswalk", {}).get("cross_cohort_pairs", [])),
        "near_copy_pairs_by_tier": report.get("crosswalk", {}).get("pairs_by_tier", {}),
        "large_hash_groups": report.get("crosswalk", {}).get("large_hash_groups", []),
        "large_group_cap": report.get("crosswalk", {}).get("large_group_cap"),
    }
