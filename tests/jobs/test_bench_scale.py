"""``medscope bench scale`` at its tiniest size: the table has its rows and columns, every view
built is swept once in every layout, and each derived figure follows from the times printed
beside it (rates, ratios to one worker, share of the ceiling, cost). No timing is asserted."""

from __future__ import annotations

import argparse
import itertools
import re

import pytest

from pipelines.bench.scale import COLUMNS, bench_scale

PRICE = 0.05  # $/vCPU-hour passed as the flag would


def _printed(value: float, decimals: int = 3) -> tuple[float, float]:
    """Where a value printed to ``decimals`` places really lies (its rounding interval)."""
    half = 0.5 * 10 ** -decimals
    return value - half, value + half


def _follows(got: float, formula, *inputs: tuple[float, float], decimals: int = 3) -> bool:
    """``got`` (printed to ``decimals`` places) is ``formula`` of the inputs, each known only to
    its printed interval. Every formula here is monotone in each input over positive values, so
    its range is spanned by the intervals' corners. Under load the rates fall to ~0.1/s, where a
    ratio of two rates printed to 3 places moves by ~1 % within their rounding; a fixed relative
    tolerance could not follow that, the interval does."""
    corners = [formula(*c) for c in itertools.product(*inputs)]
    half = 0.5 * 10 ** -decimals
    return min(corners) - half - 1e-12 <= got <= max(corners) + half + 1e-12


def _exact(value: float) -> tuple[float, float]:
    return value, value


@pytest.mark.slow
@pytest.mark.ray  # bench scale starts its own local Ray clusters
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
        p = {k: _printed(v) for k, v in r.items() if k not in ("work", "usd_per_1k")}
        b = {k: _printed(v) for k, v in base[r["work"]].items() if k != "work"}
        units, vcpus, m = _exact(r["units"]), _exact(r["vCPUs"]), _printed(mean)
        assert _follows(r["per_s_e2e"], lambda n, t: n / t, units, p["job_s"])
        assert _follows(r["per_s_steady"], lambda n, t: n / t, _exact(r["units"] - first), p["steady_s"])
        assert _follows(r["x1_e2e"], lambda a, z: a / z, p["per_s_e2e"], b["per_s_e2e"])
        assert _follows(r["x1_steady"], lambda a, z: a / z, p["per_s_steady"], b["per_s_steady"])
        assert _follows(r["of_ceiling_e2e"], lambda x, c: x / c, p["x1_e2e"], m)
        assert _follows(r["of_ceiling_steady"], lambda x, c: x / c, p["x1_steady"], m)
        assert _follows(r["vcpu_s_per_1k"], lambda c, t, n: c * t / n * 1000.0, vcpus, p["job_s"], units)
        assert _follows(r["usd_per_1k"], lambda c: c / 3600.0 * PRICE, p["vcpu_s_per_1k"], decimals=6)
        assert r["startup_s"] > 0 and r["steady_s"] > 0 and r["job_s"] >= r["steady_s"]
    assert base["views"]["x1_e2e"] == 1.0 and base["episodes"]["x1_steady"] == 1.0


def test_a_ratio_follows_from_printed_rates_within_their_rounding_and_no_further():
    # the loaded run of 2026-12-02: rates 0.133 and 0.115 printed, their unrounded ratio 1.165
    rates = (_printed(0.133), _printed(0.115))
    assert _follows(1.165, lambda a, z: a / z, *rates)  # 0.1335 / 0.1145 = 1.1659
    assert not _follows(1.168, lambda a, z: a / z, *rates)  # beyond 1.1659 + 0.0005
    assert not _follows(1.146, lambda a, z: a / z, *rates)  # below 0.1325 / 0.1155 = 1.1472 - 0.0005
