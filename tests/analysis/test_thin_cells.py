"""Thin cells are marked with their n and never called above chance / significant."""

from __future__ import annotations

import pandas as pd

from medscope.protocols.benchmark_mcq import scoring
from medscope.protocols.benchmark_mcq.report import supp_table1, table1
from medscope.protocols.paired_modality.report import table1 as pairs_table1
from medscope.render import thin


def test_rule_boundaries_and_configuration():
    assert thin.is_thin(9, 5) and thin.is_thin(10, 4) and not thin.is_thin(10, 5)
    assert thin.is_thin(n_cases=0) and not thin.is_thin() and not thin.is_thin(None, float("nan"))
    assert thin.cell("0.500", 28, 7) == "0.500 (n=28, 7 cases)"
    assert thin.cell("1.000", 1, 1) == "1.000 (n=1, 1 case) †"
    assert thin.claim("Above chance", 1, 1) == "thin (n=1, 1 case): not tested"
    assert thin.claim("Above chance", 28, 7) == "Above chance"
    with thin.configure(min_items=2, min_cases=1):
        assert not thin.is_thin(2, 1) and "fewer than 2 items or 1 cases" in thin.note()
    assert thin.rule().min_items == 10  # restored


def _items(n=28):
    # one case, 28 report-derived yes/no questions (the the benchmark-MCQ paper example)
    return [{"item_id": f"q{i}", "case_id": "case0", "cohort": "liver", "qtype": "report", "subcategory": "s",
             "k": 2, "answer": "A", "options": ["Yes", "No"], "imaging_source": "public", "matched_group": None}
            for i in range(n)]


def test_one_valid_answer_of_28_is_a_thin_cell_never_called_above_chance():
    items = _items()
    # one valid (and right) sighted answer; 27 the reader cannot map to an option
    eps = [{"model": "m", "condition": "sighted", "item_id": it["item_id"], "error": None,
             "raw_text": "A" if i == 0 else "I cannot say"} for i, it in enumerate(items)]
    rows, _ = scoring.score_rows(eps, {r["item_id"]: r for r in items})
    df = pd.DataFrame(rows)
    m = pd.DataFrame(scoring.metrics_rows(df, pd.DataFrame(items), b=200))
    t = pd.DataFrame(scoring.test_rows(df, b=500))
    t1 = table1(m, pd.DataFrame(items), df)
    cell = [r for r in t1.rows if r[0] == "m"][-1][1]  # the report-derived block
    assert cell.startswith("1.000") and cell.endswith("(n=1, 1 case) †")
    assert "thin cell" in t1.caption
    above = t[t["family"] == "above_chance"].iloc[0]
    assert above["verdict"] == "thin (n=1, 1 case): not tested"
    assert [r[-1] for r in supp_table1(t).rows] == ["thin (n=1, 1 case): not tested"]
    assert not any("Above chance" in str(c) for r in supp_table1(t).rows for c in r)


def test_paired_table_shows_n_per_cell():
    # 3 photographs judged for one cell, 2 for the other (a corrupt judge reply dropped one)
    def row(setting, metric, n, v):
        return {"model": "m", "condition": setting, "test_set": "pairs", "breakdown": "photo_type=matched",
                "metric": metric, "value": v, "ci_low": 0.0, "ci_high": 1.0, "n_cases": n}
    metrics = [row("photo_only", "fp_rate", 3, 1 / 3), row("paired", "fp_rate", 2, 0.5)]
    cells = [c for r in pairs_table1(metrics).rows for c in r if "(n=" in c]
    assert sorted(c.rsplit("(", 1)[-1] for c in cells) == ["n=2) †", "n=3) †"]


def test_report_summary_counts_thin_cells(tmp_path):
    from medscope.render.document import Section, Table

    sections = [Section("Probe", [Table(["a", "b"], [[thin.cell("0.5", 3, 1), thin.cell("0.7", 40, 9)],
                                                     [thin.cell("0.1", 12, 2), "–"]], thin.note())])]
    s = thin.summary_section(sections)
    assert s.anchor.startswith("summary") and "2 table cells are thin" in s.blocks[0].text and "Probe: 2" in s.blocks[0].text
    assert thin.summary_section([Section("Fine", [Table(["a"], [[thin.cell("0.7", 40, 9)]])])]) is None
