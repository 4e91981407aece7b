"""``medscope bench probe``: probe build throughput on 1 and 2 workers, and worker peak memory."""

from __future__ import annotations

import os
import tempfile
import time

from medscope.io import records

def bench(args) -> None:
    """``medscope bench probe``: volumes/s with 1 and 2 Ray workers at 16 and 64 volumes against
    the machine ceiling; peak memory for 4 and 16 volumes.

    Every figure is a real ``build`` (both passes, files written) on the same synthetic NIfTI
    volumes. The first build of the process is reported apart: it pays the workers' start-up
    (process start, imports), which a real job pays once. The timed builds then alternate 1
    and 2 workers, twice, and every run is printed; the ratios use the mean of each.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``quick`` (64 x 64 x 32 volumes and 16 of them, instead of 192 x 192 x 96 and 16 and 64) and
        ``cases`` (one number of volumes instead).
    """
    import statistics

    from medscope.volumes.config import ProbeConfig
    from medscope.volumes.synthetic_ct import write_synthetic_volumes
    from pipelines.probe import build
    from pipelines.support.peak_memory import peak_rss_kib, reset_peak_rss
    from pipelines.support.raycluster import ensure_ray

    shape = (64, 64, 32) if args.quick else (192, 192, 96)
    # --cases: one size; by default today's 16 volumes and 4x that, where start-up is a small
    # part of the job
    sizes = [args.cases] if args.cases else ([16] if args.quick else [16, 64])
    from pipelines.bench import OF_CEILING_AIM, parallel_ceiling

    load_before = os.getloadavg()[0]
    ceiling = [parallel_ceiling(repeats=3)[1]]
    with tempfile.TemporaryDirectory(prefix="medscope-bench-probe-") as tmp:
        # the volumes written once; every smaller table is the first rows of it (same files)
        written = write_synthetic_volumes(os.path.join(tmp, "vols"), max(16, *sizes), shape)
        vols = {}
        for n in {4, 16, *sizes}:
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
        print(f"  {'run':<12} {'volumes':>7} {'a block':>7} {'start-up':>9} {'steady':>8} {'build':>7}   "
              f"{'vol/s end-to-end':>16} {'vol/s steady':>13}", flush=True)
        means = {}
        for n in sizes:
            runs: dict[int, list[dict]] = {1: [], 2: []}
            for rep in range(2):
                for w in (1, 2):
                    s = build(vols[n], os.path.join(tmp, f"speed{n}-{w}-{rep}"), cfg.model_copy(update={"workers": w}),
                              progress=False)
                    r = {"e2e": n / s["seconds"], "steady": n / _steady(s), "startup": _startup(s),
                         "seconds": s["seconds"], "per_block": s["volumes_per_block"]}
                    runs[w].append(r)
                    print(f"  {w} worker{'s' if w > 1 else ' '} #{rep + 1}  {n:>7} {r['per_block']:>7} "
                          f"{r['startup']:8.1f}s {_steady(s):7.1f}s {s['seconds']:6.1f}s   {r['e2e']:16.2f} "
                          f"{r['steady']:13.2f}", flush=True)
            means[n] = {w: {k: statistics.mean(r[k] for r in runs[w]) for k in ("e2e", "steady", "startup", "seconds")}
                        for w in (1, 2)}
        mem = {}
        for n in (4, 16):
            reset_peak_rss()
            s = build(vols[n], os.path.join(tmp, f"mem{n}"), cfg.model_copy(update={"workers": 2}), progress=False)
            mem[n] = (s["worker_peak_rss_mb"], peak_rss_kib() / 1024)
        ceiling.append(parallel_ceiling(repeats=3)[1])
        work_ceiling = probe_work_ceiling(vols[16], cfg)
    print(f"  load average {os.getloadavg()[0]:.2f} at end (figures are only meaningful on an idle machine)")
    print("  start-up = both passes' time until their first volume began; steady = the rest of the two")
    print("  passes (first volume begun to last done); build = the whole build, driver work included;")
    print("  a block = volumes per Ray Data block (pipelines.probe.volumes_per_block)")
    top = sum(ceiling) / 2
    print(f"  machine ceiling: two plain processes at once ran {ceiling[0]:.2f}x / {ceiling[1]:.2f}x the speed of one"
          f" (before / after, medians of 3; no Ray; 2.0 on truly free cores); their mean {top:.2f}x")
    print(f"  the probe's own work in plain processes (pass 1 and pass 2's volume load, 16 volumes, no Ray): "
          f"two at once ran {work_ceiling:.2f}x the speed of one (median of 3): the share of the ceiling the work "
          "itself reaches, whatever runs it")
    print(f"  {'2 workers / 1 worker':<28} {'end-to-end':>10} {'steady':>7} {'of ceiling':>11} {'start-up share':>15}")
    for n in sizes:
        m = means[n]
        e2e, steady = m[2]["e2e"] / m[1]["e2e"], m[2]["steady"] / m[1]["steady"]
        share = m[2]["startup"] / m[2]["seconds"]
        print(f"  {f'{n} volumes (means of 2 runs)':<28} {e2e:9.2f}x {steady:6.2f}x {e2e / top:5.2f} / {steady / top:4.2f}"
              f" {share:14.0%}")
    m = means[sizes[-1]]
    of = min(m[2]["e2e"] / m[1]["e2e"], m[2]["steady"] / m[1]["steady"]) / top
    print(f"  aim: >= {OF_CEILING_AIM} of the ceiling, end to end and steady, at {sizes[-1]} volumes: "
          f"{'met' if of >= OF_CEILING_AIM else 'not met'} ({of:.2f}; {of * top / work_ceiling:.2f} of the work's own)")
    for n in (4, 16):
        print(f"  {n:>2} volumes, 2 workers: worker peak RSS in one task {mem[n][0]:.0f} MB, "
              f"driver peak RSS during the build {mem[n][1]:.0f} MB")
    print(f"  peak memory 16 / 4 volumes: workers {mem[16][0] / mem[4][0]:.2f}, driver {mem[16][1] / mem[4][1]:.2f}"
          " (should stay ~1)")


_WORK = """
import sys, time
from medscope.io import records
from medscope.volumes import build as B
from medscope.volumes.config import ProbeConfig
cfg = ProbeConfig.model_validate_json(sys.argv[2])
part, parts = int(sys.argv[3]), int(sys.argv[4])
vols = records.read_table("volumes", sys.argv[1]).to_pylist()[part::parts]
for v in vols:
    B.count_volume(v, cfg)
    B.load_row(v)
"""


def probe_work_ceiling(volumes_uri: str, cfg, repeats: int = 3) -> float:
    """Speed-up of the probe's per-volume work split over two plain processes against one.

    Each process counts its volumes (pass 1) and loads them again (pass 2 reads each volume
    anew): no Ray, no files written. Work that is bound by memory bandwidth (gzip, whole-volume
    numpy passes) scales less than the machine ceiling's loop does; this is what two workers
    can reach on the probe at best. Imports are outside the timed part (a child that only
    imports is timed and subtracted).

    Parameters
    ----------
    volumes_uri : str
        Path or URI of the volumes table.
    cfg : ProbeConfig
        The probe's configuration, passed to the child processes as JSON.
    repeats : int, optional
        One-then-two measurements; their median is returned.

    Returns
    -------
    float
        Median speed-up of two processes over one (2.0: perfect).
    """
    import statistics
    import subprocess
    import sys

    def run(parts: int, work: bool = True) -> float:
        code = _WORK if work else _WORK.split("cfg = ")[0]
        t = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", code, volumes_uri, cfg.model_dump_json(), str(i), str(parts)])
                 for i in range(parts)]
        for p in procs:
            p.wait()
        return time.perf_counter() - t

    ratios = []
    for _ in range(repeats):
        imports = run(1, work=False)
        one, two = run(1) - imports, run(2) - imports
        ratios.append(one / two)
    return statistics.median(ratios)


def _startup(summary: dict) -> float:
    return sum(t["startup_s"] for t in summary["timing"].values())


def _steady(summary: dict) -> float:
    return sum(t["steady_s"] for t in summary["timing"].values())
