"""The views build's driver never holds the cohort's pixels: it reads cases a block
at a time, runs the cross-case QC on features and id columns, and streams the final table
from the per-case parts, in ``view_id`` order."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest

from medscope.io import records
from medscope.views.stream import view_groups
from medscope.views.synthetic_cases import synthetic_cases

# Run in a fresh process so that Arrow's peak allocation is this build's alone. The local
# engine builds in the same process, so the peak also covers one case's views being built.
_DRIVER = """
import json, sys
import pyarrow as pa
import pytest
from medscope.views.recipe import Recipe
from pipelines.views import build_views
s = build_views(sys.argv[1], sys.argv[2], Recipe(seed=0), engine="local", quiet=True, block_rows=2,
                row_group_bytes=1)
print(json.dumps({"peak": pa.default_memory_pool().max_memory(), "views": s["views"]}))
"""


@pytest.mark.slow
def test_driver_arrow_peak_is_a_few_cases_not_the_cohort(tmp_path):
    rows = synthetic_cases(48, seed=3, size=256)
    # a case id that extends another with "/": their view ids interleave, and the streamed
    # table must still come out in view_id order
    rows.append(dict(rows[1], case_id=rows[1]["case_id"] + "/b"))
    cases = str(tmp_path / "cases.parquet")
    records.write_table("cases", rows, cases)
    out = str(tmp_path / "views")
    run = subprocess.run([sys.executable, "-c", _DRIVER, cases, out], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])

    views = records.read_table("views", out)
    cohort = records.read_table("cases", cases)
    assert got["views"] == views.num_rows > 48 * 4
    # What the old driver held at once: every case's image column and the whole views table
    # (in Arrow memory both). The streaming driver holds a block of 2 cases, one case's views
    # and the id/QC columns: well under half of the views table alone.
    whole = views.nbytes + cohort.column("image").nbytes
    assert got["peak"] < 0.5 * views.nbytes, (got["peak"], views.nbytes, whole)
    ids = views.column("view_id").to_pylist()
    assert ids == sorted(ids)
    assert views.equals(views.take(pa.compute.sort_indices(views, [("view_id", "ascending")])))
    assert views.combine_chunks().num_rows == len(set(ids))


def test_view_groups_put_cases_whose_views_interleave_together():
    ids = ["a", "a-1", "a/b", "b", "a/b/c", "ab"]
    # "a-1/..." < "a/..." < "a/b/..." < "ab/..." < "b/...": a group per run of ids under "<id>/"
    assert view_groups(ids) == [["a-1"], ["a", "a/b", "a/b/c"], ["ab"], ["b"]]
    views = sorted(f"{c}/{k}" for c in ids for k in ("original", "target_removal"))
    streamed = [v for g in view_groups(ids) for v in sorted(f"{c}/{k}" for c in g for k in ("original", "target_removal"))]
    assert streamed == views


def test_bench_views_growth_is_the_slope_and_the_bound_fits_a_million_cases():
    from pipelines.bench.views import GROWTH_BOUND_KB, growth_per_case_kb

    # 100 -> 1,600 cases, 374 -> 770 MB (quiet-machine figures): 396 MB / 1,500 cases
    assert growth_per_case_kb([{"cases": 100, "driver_peak_rss_mb": 374.0},
                               {"cases": 1600, "driver_peak_rss_mb": 770.0}]) == pytest.approx(264.0)
    # three points on a line with 10 KB/case plus noise that cancels in least squares: (-1, +2, -1) MB
    rows = [{"cases": n, "driver_peak_rss_mb": 300 + n * 0.010 + e} for n, e in ((100, -1), (400, 2), (700, -1))]
    assert growth_per_case_kb(rows) == pytest.approx(10.0)
    assert GROWTH_BOUND_KB * 1_000_000 / 1e9 <= 16  # KB/case x 1M cases within a 16 GB driver
