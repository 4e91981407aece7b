"""A views build whose QC leaves an evaluation split too small for a report interval says so:
``views build`` ends with a warning and ``views show`` with the same lines, per split and kind,
naming the reasons that removed the most views and what to try; by the report's own thin rule."""

from __future__ import annotations

import pyarrow as pa

from medscope.analysis import thin_splits as ts
from medscope.io import records
from medscope.render import thin
from medscope.views.synthetic_cases import synthetic_cases
from pipelines import cli

KINDS = ("original", "target_removal", "random_removal")


def _table(test_views: int, test_cases: int, failed: dict[str, int] | None = None) -> pa.Table:
    """A views table: ``test_views`` passed views of each kind over ``test_cases`` cases in the
    test split, a large validation split, and ``failed`` test views by reason."""
    rows = []
    for split, n, c in (("test", test_views, test_cases), ("validation", 40, 20)):
        for k in KINDS:
            rows += [dict(split=split, kind=k, case_id=f"{split}-{i % c}", passed=True, reject_reason=None)
                     for i in range(n)]
    for reason, n in (failed or {}).items():
        rows += [dict(split="test", kind="target_removal", case_id=f"gone-{i}", passed=False, reject_reason=reason)
                 for i in range(n)]
    rows.append(dict(split="train", kind="original", case_id="tr", passed=True, reject_reason=None))  # never checked
    return pa.Table.from_pylist(rows)


def test_a_split_is_thin_below_the_reports_minimum_of_views_or_cases():
    rule = thin.rule()
    assert (rule.min_items, rule.min_cases) == (10, 5)  # the report's marks (docs/report.md)
    assert ts.thin_splits(_table(10, 5)) == []  # exactly at the minimum: an interval
    (low,) = ts.thin_splits(_table(9, 5))  # one view short
    assert low.split == "test" and low.views == dict.fromkeys(KINDS, 9) and low.cases == dict.fromkeys(KINDS, 5)
    (few,) = ts.thin_splits(_table(12, 4))  # enough views over too few cases
    assert few.cases == dict.fromkeys(KINDS, 4)
    # a split the recipe gives no share is not expected
    assert ts.thin_splits(_table(2, 2), {"train": 0.85, "validation": 0.15, "test": 0.0}) == []
    with thin.configure(min_items=3, min_cases=2):  # the report's --min-items / --min-cases
        assert ts.thin_splits(_table(3, 2)) == []


def test_the_warning_names_the_causes_before_the_knock_on_failures_and_what_to_try():
    found = ts.thin_splits(_table(2, 2, {"edit_detected": 9, "case_failed_qc": 26, "lesion_still_stands_out": 3,
                                         "paired_target_failed": 9}))
    head, causes, tries = ts.warning_lines(found)
    assert head.startswith("warning: split 'test' is too thin for an interval")
    assert "original 2 views / 2 cases" in head and "10 views over 5 cases" in head
    # the causes, most first; the keep rules' knock-on failures apart
    assert causes == ("  QC removed most in 'test': edit_detected 9 views; lesion_still_stands_out 3 views "
                      "(then by §3.3's keep rules: case_failed_qc 26, paired_target_failed 9)")
    assert tries.startswith("  try: erasure tools the edit detector cannot tell")
    assert "contrast_rel" in tries and "split_fractions" in tries


def test_views_build_ends_with_the_warning_and_views_show_prints_it(tmp_path, capsys):
    # 16 cases under the demo recipe (test 40 %): QC leaves the test split 2 lesion cases
    cases = str(tmp_path / "cases.parquet")
    records.write_table("cases", synthetic_cases(16, seed=2, size=80), cases)
    out = str(tmp_path / "views")
    argv = ["views", "build", "--cases", cases, "--out", out, "--engine", "local", "--recipe", "configs/views/demo.yaml"]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    # the split's counts worked out from the table itself
    v = records.read_table("views", out + "/views.parquet").to_pandas()
    test = v[(v.split == "test") & v.passed]
    assert 0 < test.case_id.nunique() < 5  # this cohort's test split is thin: the build must say so
    # the build's last words (before the CLI's "results in"): a warning per thin split, test
    # first, three lines each
    assert err[-1].startswith("medscope: results in")
    head, causes_line, tries, vhead = err[-7:-3]
    assert head.startswith("warning: split 'test' is too thin") and vhead.startswith("warning: split 'validation'")
    for kind in ("original", "target_removal", "random_removal"):
        part = test[test.kind == kind]
        assert f"{kind} {len(part)} views / {part.case_id.nunique()} cases" in head
    failed = v[(v.split == "test") & ~v.passed].reject_reason.value_counts()
    causes = failed.drop([r for r in ts.KNOCK_ON if r in failed.index])
    assert f"QC removed most in 'test': {causes.index[0]} {causes.iloc[0]} views" in causes_line
    assert f"case_failed_qc {failed['case_failed_qc']}" in causes_line
    assert tries.startswith("  try: ") and "split_fractions" in tries
    assert cli.main(["views", "show", out]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[-6:] == err[-7:-1]
