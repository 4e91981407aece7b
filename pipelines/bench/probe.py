"""``medscope bench probe``: probe build throughput on 1 and 2 workers, and worker peak memory."""

from __future__ import annotations

import os
import tempfile
import time

from medscope import records

def bench(args) -> None:
    """``medscope bench probe``: volumes/s with 1 and 2 Ray workers; peak memory for 4 and 16 volumes.

    Every figure is a real ``build`` (both passes, files written) on the same synthetic NIfTI
    volumes. The first build of the process is reported apart: it pays the workers' start-up
    (process start, imports), which a real job pays once. The timed builds then alternate 1
    and 2 workers, twice, and every run is printed; the ratios use the mean of each.
    """
    import statistics

    from medscope.volumes.config import ProbeConfig
    from medscope.volumes.synthetic_ct import write_synthetic_volumes
    from pipelines.probe import build
    from pipelines.support.peak_memory import peak_rss_kib, reset_peak_rss
    from pipelines.support.raycluster import ensure_ray

    shape = (64, 64, 32) if args.quick else (192, 192, 96)
    n_speed = args.cases or 16  # --cases: volumes, for a run where start-up is a small part of the job
    from pipelines.bench import parallel_ceiling

    load_before = os.getloadavg()[0]
    ceiling = [parallel_ceiling()[1]]
    with tempfile.TemporaryDirectory(prefix="medscope-bench-probe-") as tmp:
        # the volumes written once; the 4- and 16-volume tables are its first rows (same files)
        written = write_synthetic_volumes(os.path.join(tmp, "vols"), max(16, n_speed), shape)
        vols = {n_speed: written}
        for n in (4, 16):
            vols[n] = os.path.join(tmp, f"v{n}.parquet")
            records.write_table("volumes", records.read_table("volumes", written).slice(0, n), vols[n])
        cfg = ProbeConfig(slices_per_volume=12)
        t = time.monotonic()
        ensure_ray()
        cluster_s = time.monotonic() - t
        print(f"probe build, synthetic volumes {shape} (.nii.gz), 12 slices per volume; "
              f"load average {load_before:.2f} at start", flush=True)
        cold = build(vols[4], os.path.join(tmp, "cold"), cfg.model_copy(update={"workers": 2}), progress=False)
        print(f"  first build of the process (4 volumes, 2 workers): {cold['seconds']:.1f}s, of which "
              f"{_startup(cold):.1f}s before the first volume started (worker start-up, paid once per job); "
              f"Ray cluster start before it {cluster_s:.1f}s", flush=True)
        print(f"  {'run':<12} {'volumes':>7} {'start-up':>9} {'steady':>8} {'build':>7}   "
              f"{'vol/s end-to-end':>16} {'vol/s steady':>13}", flush=True)
        runs: dict[int, list[dict]] = {1: [], 2: []}
        for rep in range(2):
            for w in (1, 2):
                s = build(vols[n_speed], os.path.join(tmp, f"speed{w}-{rep}"), cfg.model_copy(update={"workers": w}),
                          progress=False)
                r = {"e2e": n_speed / s["seconds"], "steady": n_speed / _steady(s), "startup": _startup(s),
                     "seconds": s["seconds"], "rss": s["worker_peak_rss_mb"]}
                runs[w].append(r)
                print(f"  {w} worker{'s' if w > 1 else ' '} #{rep + 1}  {n_speed:>7} {r['startup']:8.1f}s "
                      f"{_steady(s):7.1f}s {s['seconds']:6.1f}s   {r['e2e']:16.2f} {r['steady']:13.2f}", flush=True)
        mem = {}
        for n in (4, 16):
            reset_peak_rss()
            s = build(vols[n], os.path.join(tmp, f"mem{n}"), cfg.model_copy(update={"workers": 2}), progress=False)
            mem[n] = (s["worker_peak_rss_mb"], peak_rss_kib() / 1024)
        ceiling.append(parallel_ceiling()[1])
    mean = {w: {k: statistics.mean(r[k] for r in runs[w]) for k in ("e2e", "steady")} for w in (1, 2)}
    print(f"  load average {os.getloadavg()[0]:.2f} at end (figures are only meaningful on an idle machine)")
    print("  start-up = both passes' time until their first volume began; steady = the rest of the two")
    print("  passes (first volume begun to last done); build = the whole build, driver work included")
    print(f"  machine ceiling: two plain processes at once ran {ceiling[0]:.2f}x / {ceiling[1]:.2f}x the speed of one"
          " (before / after; no Ray; 2.0 on truly free cores)")
    print(f"  2 workers / 1 worker, end-to-end: {mean[2]['e2e'] / mean[1]['e2e']:.2f}x   "
          f"steady: {mean[2]['steady'] / mean[1]['steady']:.2f}x   (aim >= 1.7x; means of 2 runs each)")
    for n in (4, 16):
        print(f"  {n:>2} volumes, 2 workers: worker peak RSS in one task {mem[n][0]:.0f} MB, "
              f"driver peak RSS during the build {mem[n][1]:.0f} MB")
    print(f"  peak memory 16 / 4 volumes: workers {mem[16][0] / mem[4][0]:.2f}, driver {mem[16][1] / mem[4][1]:.2f}"
          " (should stay ~1)")


def _startup(summary: dict) -> float:
    return sum(t["startup_s"] for t in summary["timing"].values())


def _steady(summary: dict) -> float:
    return sum(t["steady_s"] for t in summary["timing"].values())
