"""``medscope bench erasure``: QC pass rates of target removal by erasure tool and imaging type.

Builds the views of one phantom cohort once per offline tool (Telea, Navier-Stokes, texture,
transplant; no network weights) with the full §3.3 QC (contrast, edit detector, adversarial
filtering) and prints, per tool, the share of target removals that pass by imaging type and
the share of lesion cases that keep a complete original / target / random-removal triple (the
cases the paper's statistics can use).
"""

from __future__ import annotations

import tempfile
import time

from medscope import records, storage
from medscope.views.recipe import Recipe

TOOLS = ("telea", "ns", "texture", "transplant")


def pass_rates(views) -> dict:
    """{imaging type | "all": (passed, built)} of target removals, and (complete, lesion) cases."""
    rows = views.select(["case_id", "kind", "imaging_type", "passed"]).to_pylist()
    rates: dict[str, list[int]] = {}
    kinds_ok: dict[str, set] = {}
    lesion = set()
    for r in rows:
        if r["kind"] == "target_removal":
            for key in (r["imaging_type"], "all"):
                d = rates.setdefault(key, [0, 0])
                d[0] += int(r["passed"])
                d[1] += 1
        if r["kind"] == "original":
            lesion.add(r["case_id"])
        if r["passed"]:
            kinds_ok.setdefault(r["case_id"], set()).add(r["kind"])
    complete = sum(1 for c in lesion if {"original", "target_removal", "random_removal"} <= kinds_ok.get(c, set()))
    return {"target_removal": {k: tuple(v) for k, v in sorted(rates.items())}, "complete_cases": (complete, len(lesion))}


def bench_erasure(args) -> None:
    from medscope.cohorts import phantom
    from pipelines.views import build_views

    n = 16 if args.quick else 60
    with tempfile.TemporaryDirectory(prefix="medscope-bench-erasure-") as tmp:
        cases = phantom.generate(storage.join(tmp, "cohort"), n_cases=n, seed=0)["cases"]
        results = {}
        for tool in TOOLS:
            t = time.monotonic()
            recipe = Recipe(seed=0, tools=[tool], unmatched_control=False, insertion=False)
            out = storage.join(tmp, tool)
            build_views(cases, out, recipe, engine="local", quiet=True)
            results[tool] = pass_rates(records.read_table("views", storage.join(out, "views.parquet")))
            results[tool]["seconds"] = time.monotonic() - t
    types = sorted({k for r in results.values() for k in r["target_removal"] if k != "all"})
    print(f"phantom cohort, {n} cases; target removals passing QC (contrast, edit detector, adversarial filter)")
    print(f"{'tool':<11}" + "".join(f"{t:>16}" for t in types + ["all"]) + f"{'complete cases':>17}{'s':>7}")
    for tool, r in results.items():
        cells = []
        for t in types + ["all"]:
            p, b = r["target_removal"].get(t, (0, 0))
            cells.append(f"{p}/{b} ({p / b:.0%})" if b else "–")
        c, L = r["complete_cases"]
        print(f"{tool:<11}" + "".join(f"{c_:>16}" for c_ in cells) + f"{f'{c}/{L} ({c / L:.0%})' if L else '–':>17}"
              f"{r['seconds']:7.1f}")
