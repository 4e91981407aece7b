"""``medscope bench erasure``: how well each offline erasure tool survives §3.3's QC.

Builds the views of one phantom cohort once per offline tool (no network weights: Telea,
Navier-Stokes, texture, transplant, exemplar, graft and OpenCV contrib's ``fsr_fast`` / ``shiftmap``; ``fsr_best``
on request, it is slow) with the full QC (contrast, edit detector, rule (ii), adversarial
filtering), and once with a views recipe's own tool mix (``--recipe``, e.g. the demo's), and
prints per tool:

- the share of target removals that pass QC, by imaging type and overall (passed / built);
- lesion cases that keep a complete original / target / random-removal triple;
- the edit detector's held-out AUC (control edits against the same regions of the original:
  0.5 means the tool's fills cannot be told from tissue);
- the contrast-ring ratio, median of contrast after / before over the target removals (§3.3 (i)
  passes at <= 0.35, or an absolute contrast <= 1);
- seconds per fill: the median of one fill of each of the first ``FILL_TIMED`` lesions' dilated
  masks (a timing: quote it with the machine's load).
"""

from __future__ import annotations

import statistics
import tempfile
import time

import numpy as np

from medscope.io import records, storage
from medscope.views.recipe import Recipe, load_recipe

TOOLS = ("telea", "ns", "texture", "transplant", "exemplar", "graft", "fsr_fast", "shiftmap")
FILL_TIMED = 8


def pass_rates(views) -> dict:
    """{imaging type | "all": (passed, built)} of target removals, and (complete, lesion) cases.

    Parameters
    ----------
    views : pyarrow.Table
        A views table with ``case_id``, ``kind``, ``imaging_type`` and ``passed`` columns.

    Returns
    -------
    dict
        ``"target_removal"``: {imaging type or ``"all"``: (passed, built)}; ``"complete_cases"``: (lesion cases
        with a passed original, target and random removal, lesion cases).
    """
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


def contrast_ratio(views) -> tuple[float | None, int]:
    """(median of contrast after / before over target removals with both measured, n).

    Parameters
    ----------
    views : pyarrow.Table
        A views table with ``kind``, ``contrast_before`` and ``contrast_after`` columns.

    Returns
    -------
    ratio : float or None
        The median ratio; None when no target removal has both contrasts.
    n : int
        Target removals the median is over.
    """
    rows = views.select(["kind", "contrast_before", "contrast_after"]).to_pylist()
    ratios = [r["contrast_after"] / r["contrast_before"] for r in rows
              if r["kind"] == "target_removal" and r["contrast_after"] is not None and r["contrast_before"]]
    return (statistics.median(ratios) if ratios else None), len(ratios)


def fill_seconds(tool: str, cases_uri: str, dilation_px: int = 5) -> tuple[float, int]:
    """(median seconds of one fill, n) over the dilated masks of the first FILL_TIMED lesions.

    Parameters
    ----------
    tool : str
        An offline erasure tool's name (one of ``TOOLS`` or ``fsr_best``).
    cases_uri : str
        Path or URI of the cohort's cases table.
    dilation_px : int, optional
        Pixels the lesion mask is dilated by before the fill.

    Returns
    -------
    seconds : float
        Median wall seconds of one fill; NaN when no case has a mask.
    n : int
        Fills timed (at most ``FILL_TIMED``).
    """
    from medscope.images import decode_mask, decode_png
    from medscope.views import geometry
    from medscope.views.tools import make_eraser

    eraser = make_eraser(tool)
    times = []
    for case in records.read_table("cases", cases_uri).to_pylist():
        if case.get("mask") is None:
            continue
        image, region = decode_png(case["image"]), geometry.dilate_mask(decode_mask(case["mask"]), dilation_px)
        t = time.perf_counter()
        eraser.fill(image, region, np.random.default_rng(0))
        times.append(time.perf_counter() - t)
        if len(times) == FILL_TIMED:
            break
    return (statistics.median(times) if times else float("nan")), len(times)


def measure(cases_uri: str, out: str, recipe: Recipe) -> dict:
    """Build ``recipe``'s views of the cohort and read back what the table reports.

    Parameters
    ----------
    cases_uri : str
        Path or URI of the cohort's cases table.
    out : str
        Folder the views, their table and ``qc_report.json`` are written to.
    recipe : Recipe
        The views recipe to build with.

    Returns
    -------
    dict
        The keys of :func:`pass_rates`, plus ``seconds`` (build wall time), ``contrast_ratio`` ((ratio, n) of
        :func:`contrast_ratio`), ``detector_auc`` (the edit detector's held-out AUC, or None) and
        ``keep_rules`` (from the QC report).
    """
    import json

    from pipelines.views import build_views

    t = time.monotonic()
    build_views(cases_uri, out, recipe, engine="local", quiet=True)
    views = records.read_table("views", storage.join(out, "views.parquet"))
    report = json.loads(storage.read_utf8(storage.join(out, "qc_report.json")))
    ratio, n_ratio = contrast_ratio(views)
    return {**pass_rates(views), "seconds": time.monotonic() - t, "contrast_ratio": (ratio, n_ratio),
            "detector_auc": report.get("edit_detector", {}).get("heldout_auc"),
            "keep_rules": report.get("keep_rules", {})}


def bench_erasure(args) -> None:
    """Build one phantom cohort's views with each tool (and ``--recipe``'s mix) and print the table.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``cases`` (cohort size; default 60, 16 with ``quick``), ``quick``, ``tools`` (comma-separated;
        default ``TOOLS``) and ``recipe`` (a views recipe, optional).
    """
    from medscope.cohorts import phantom

    n = args.cases or (16 if args.quick else 60)
    tools = tuple(t for t in (getattr(args, "tools", None) or ",".join(TOOLS)).split(",") if t)
    mix = getattr(args, "recipe", None)
    with tempfile.TemporaryDirectory(prefix="medscope-bench-erasure-") as tmp:
        cases = phantom.generate(storage.join(tmp, "cohort"), n_cases=n, seed=0)["cases"]
        results = {}
        for tool in tools:
            recipe = Recipe(seed=0, tools=[tool], unmatched_control=False, insertion=False)
            results[tool] = measure(cases, storage.join(tmp, tool), recipe)
            results[tool]["fill"] = fill_seconds(tool, cases)
        if mix:
            recipe = load_recipe(mix)
            results[f"recipe {recipe.name}"] = measure(cases, storage.join(tmp, "recipe"), recipe)
    print(format_table(results, n))


def format_table(results: dict, n: int) -> str:
    """The per-tool table :func:`bench_erasure` prints.

    Parameters
    ----------
    results : dict
        {tool or ``"recipe <name>"``: the dict of :func:`measure`, with ``fill`` ((seconds, n) of
        :func:`fill_seconds`) for single tools}.
    n : int
        Cases in the phantom cohort.

    Returns
    -------
    str
        The table, one line per tool, with a header and a closing note on timings.
    """
    def frac(p, b):
        return f"{p}/{b} ({p / b:.0%})" if b else "–"

    types = sorted({k for r in results.values() for k in r["target_removal"] if k != "all"})
    lines = [f"phantom cohort, {n} cases; QC: contrast, edit detector, rule (ii), adversarial filter",
             f"{'tool':<16}" + "".join(f"{t:>15}" for t in types + ["all T passed"])
             + f"{'complete cases':>16}{'detector AUC':>14}{'contrast ratio (n)':>20}{'s/fill (n)':>13}"]
    for tool, r in results.items():
        cells = [frac(*r["target_removal"].get(t, (0, 0))) for t in types + ["all"]]
        ratio, n_ratio = r["contrast_ratio"]
        auc = r["detector_auc"]
        fill = r.get("fill")
        lines.append(f"{tool:<16}" + "".join(f"{c:>15}" for c in cells) + f"{frac(*r['complete_cases']):>16}"
                     + f"{'n/a' if auc is None else f'{auc:.3f}':>14}"
                     + f"{'n/a' if ratio is None else f'{ratio:.3f} ({n_ratio})':>20}"
                     + f"{f'{fill[0]:.3f} ({fill[1]})' if fill else 'whole build':>13}")
    lines.append("s/fill: median wall time of one fill on this machine now; read it with the machine's load")
    return "\n".join(lines)
