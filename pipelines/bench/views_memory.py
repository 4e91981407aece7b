"""Driver peak memory of ``views build`` against cohort size (``medscope bench views``).

Each size runs the real job (``build_views``, Ray engine) in a fresh Python process, so that
one process's peak is one build's peak. The figure is that process's own peak resident set
size, ``VmHWM`` (pipelines/support/peak_memory.py; not ``ru_maxrss``, which Linux carries over
from the bench process that started it, and which made the driver look as if it grew 273 KB per
case): the driver only; Ray's raylet, GCS and worker processes are other processes and are not
counted (pages of Ray's shared-memory object store that the driver itself touched are, as they
are resident in it).

``python -m pipelines.bench.views_memory CASES OUT [--workers N]`` prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (VmHWM is in KiB).

    Returns
    -------
    float
        The peak, in MB (10^6 bytes).
    """
    from pipelines.support.peak_memory import peak_rss_kib

    return peak_rss_kib() * 1024 / 1e6


def measure(cases: str, out: str, workers: int = 2) -> dict:
    """Build views of ``cases`` into ``out`` in this process; the summary figures and peak RSS.

    Parameters
    ----------
    cases : str
        Path or URI of the cases table.
    out : str
        The views build's output folder.
    workers : int, optional
        Ray actors of the build.

    Returns
    -------
    dict
        ``views``, ``seconds``, ``views_per_s``, ``views_mb`` (the views file's size, None when not local),
        ``driver_peak_rss_mb`` and ``phases`` (RSS and peak in MB at the end of each phase of the build).
    """
    from medscope.io import layout, storage
    from medscope.views.recipe import Recipe
    from pipelines.views import build_views

    t = time.monotonic()
    s = build_views(cases, out, Recipe(seed=0), workers=workers, engine="ray", quiet=True)
    seconds = time.monotonic() - t
    views_path = storage.local_path(layout.ViewsBuild(out).views)
    return {"views": s["views"], "seconds": round(seconds, 2), "views_per_s": round(s["views"] / seconds, 2),
            "views_mb": round(os.path.getsize(views_path) / 1e6, 2) if views_path else None,
            "driver_peak_rss_mb": round(peak_rss_mb(), 1), "phases": s.get("driver_memory_mb", {})}


def run_sizes(sizes: list[int], workdir: str, workers: int = 2) -> list[dict]:
    """For each size: a phantom cohort of that many cases, then one build in a fresh process.

    Parameters
    ----------
    sizes : list of int
        Cohort sizes, in phantom cases.
    workdir : str
        Folder for the cohorts and the builds.
    workers : int, optional
        Ray actors of each build.

    Returns
    -------
    list of dict
        One per size: ``cases`` and the keys of :func:`measure`.

    Raises
    ------
    RuntimeError
        When a build's process fails or prints no JSON line.
    """
    from medscope.io import storage
    from medscope.cohorts import phantom

    rows = []
    for n in sizes:
        cohort = storage.join(workdir, f"cohort-{n}")
        cases = phantom.generate(cohort, n_cases=n, seed=0)["cases"]
        cmd = [sys.executable, "-m", "pipelines.bench.views_memory", cases, storage.join(workdir, f"views-{n}"),
               "--workers", str(workers)]
        for _attempt in range(4):  # a local Ray can time out starting (30 s) on a busy machine: retry
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode == 0 or "timed out during startup" not in done.stderr:
                break
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode or not lines:
            raise RuntimeError(f"views build of {n} cases failed ({done.returncode}): {done.stderr[-2000:]}")
        rows.append({"cases": n, **json.loads(lines[-1])})
        print_table(rows[-1:], header=len(rows) == 1, footer=False)
    return rows


def print_table(rows: list[dict], header: bool = True, footer: bool = True) -> None:
    """Print the driver-memory table: a header, one line per row (and its phases), a footer.

    Parameters
    ----------
    rows : list of dict
        Rows as :func:`run_sizes` returns.
    header : bool, optional
        Print the column header first.
    footer : bool, optional
        Print the note on what the figures are last.
    """
    if header:
        print(f"{'cases':>6} {'views':>6} {'views MB':>9} {'driver peak RSS MB':>19} {'views/s':>8} {'seconds':>8}")
    for r in rows:
        print(f"{r['cases']:>6} {r['views']:>6} {r['views_mb']:>9} {r['driver_peak_rss_mb']:>19} "
              f"{r['views_per_s']:>8} {r['seconds']:>8}", flush=True)
        if r.get("phases"):  # RSS / peak (MB) at the end of each phase of the build
            print("       phases, RSS/peak MB: " + ", ".join(f"{k} {v.get('rss')}/{v.get('peak')}"
                                                      for k, v in r["phases"].items()), flush=True)
    if footer:
        print("driver peak RSS: VmHWM of the driver process alone (a fresh process per "
              "size; Ray's own processes and workers not counted); views/s: whole job, Ray start-up included")


def main(argv: list[str] | None = None) -> int:
    """Build one cohort's views in this process and print :func:`measure`'s figures as one JSON line.

    Parameters
    ----------
    argv : list of str or None, optional
        ``CASES OUT [--workers N]``; None reads ``sys.argv``.

    Returns
    -------
    int
        The exit status, 0.
    """
    p = argparse.ArgumentParser(prog="python -m pipelines.bench.views_memory")
    p.add_argument("cases")
    p.add_argument("out")
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args(argv)
    print(json.dumps(measure(a.cases, a.out, a.workers)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
