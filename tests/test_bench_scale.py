"""``medscope bench scale`` at its tiniest size: the table has its rows and columns, every view
built is swept once in every layout, and each derived figure follows from the times printed
beside it (rates, ratios to one worker, share of the ceiling, cost). No timing is asserted."""

from __future__ import annotations

import argparse
import re

import pytest

from pipelines.bench.scale import COLUMNS, bench_scale

PRICE = 0.05  # $/vCPU-hour passed as the flag would


def _close(got: float, want: float, decimals: int = 3) -> bool:
    # printed to `decimals` places: allow the rounding of the printed inputs and of the result
    return got == pytest.approx(want, rel=3e-3, abs=2 * 10 ** -decimals)


def _quotient(got: float, num: float, den: float) -> bool:
    # ``den`` is printed to 3 places: a short steady window (0.111 s) moves the quotient by
    # ~0.5 % within its own rounding, so the check takes the quotient's whole rounding range
    lo, hi = num / (den + 5e-4), num / max(den - 5e-4, 1e-9)
    return lo - 2e-3 <= got <= hi + 2e-3


def test_bench_scale_table_is_consistent_with_its_measured_times(capsys):
    # one node x 1 CPU (the base every ratio divides by) and two nodes x 1 CPU: the layout that
    # crosses nodes; 1 node x 2 CPUs only repeats the arithmetic at another cluster start
    rows = bench_scale(argparse.Namespace(quick=True, cases=4, usd_per_vcpu_hour=PRICE, layouts=((1, 1), (2, 1))))
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split() == list(COLUMNS))
    table = [dict(zip(COLUMNS, line.split())) for line in lines[head + 1: head + 5]]
    assert len(table) == 4 and len(rows) == 4
    assert [r["work"] for r in table] == ["views", "episodes"] * 2
    assert [(int(r["nodes"]), int(r["workers"]), int(r["vCPUs"])) for r in table] == [
        (1, 1, 1), (1, 1, 1), (2, 2, 2), (2, 2, 2)]
    mean = float(re.search(r"mean ([0-9.]+)x is the 'of_ceiling' denominator", out).group(1))
    assert f"${PRICE:g}/vCPU-h" in out

    num = [{k: (v if k == "work" else float(v)) for k, v in r.items()} for r in table]
    views_units = {int(r["units"]) for r in num if r["work"] == "views"}
    assert len(views_units) == 1 and views_units.pop() > 0  # the same cohort gives the same views
    for i in range(0, 4, 2):
        v, e = num[i], num[i + 1]
        assert e["units"] == v["units"]  # every view built is swept exactly once
        assert e["cluster_s"] == v["cluster_s"]  # one cluster per layout
    base = {r["work"]: r for r in num[:2]}
    for r in num:
        first = r["work"] == "episodes"
        assert _quotient(r["per_s_e2e"], r["units"], r["job_s"])
        assert _quotient(r["per_s_steady"], r["units"] - first, r["steady_s"])
        assert _close(r["x1_e2e"], r["per_s_e2e"] / base[r["work"]]["per_s_e2e"])
        assert _close(r["x1_steady"], r["per_s_steady"] / base[r["work"]]["per_s_steady"])
        assert _close(r["of_ceiling_e2e"], r["x1_e2e"] / mean)
        assert _close(r["of_ceiling_steady"], r["x1_steady"] / mean)
        assert _close(r["vcpu_s_per_1k"], r["vCPUs"] * r["job_s"] / r["units"] * 1000.0)
        assert _close(r["usd_per_1k"], r["vcpu_s_per_1k"] / 3600.0 * PRICE, decimals=6)
        assert r["startup_s"] > 0 and r["steady_s"] > 0 and r["job_s"] >= r["steady_s"]
    assert base["views"]["x1_e2e"] == 1.0 and base["episodes"]["x1_steady"] == 1.0
