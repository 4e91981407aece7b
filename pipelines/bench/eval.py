"""``medscope bench eval``: does the sweep use a provider's rate limit, and does a resumed
sweep re-send finished work?

Against a loopback OpenAI-wire server with fixed latency, one model with an rpm limit is
swept over N units with enough concurrency to exceed the limit; the achieved request rate at
the server is reported as a share of the limit (aim >= 90%). The same sweep is then rerun on
the same output, and the requests it sends are counted (must be 0).

Then the driver's memory against the sweep's size: sweeps of ~130 / ~480 / ~1,900 units (views
with 256 x 256 noise images, ~66 KB of PNG each), each in a process of its own
(``pipelines.bench.eval_driver``), print the driver's peak RSS beside episodes/s. The driver
holds keys, not pixels (workers fetch their items by id), so the peak should not grow with
the units. The machine is shared: the figures are noisy, and episodes/s includes actor start-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

MEMORY_SIZES = (128, 480, 1920)
QUICK_MEMORY_SIZES = (32, 128)


def bench_eval(args) -> dict:
    """Sweep a loopback OpenAI-wire server at its rpm limit, resume the sweep, and measure the
    driver's memory (see the module docstring); print the figures.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``quick`` (24 units at 240 rpm instead of 60 at 300, and ``QUICK_MEMORY_SIZES``).

    Returns
    -------
    dict
        ``units``, ``rpm_limit``, ``server_latency_s``, ``episodes_written``, ``requests_first_run``,
        ``achieved_rpm``, ``share_of_limit``, ``end_to_end_rpm_incl_startup``,
        ``resumed_requests_for_finished_work``, ``resumed_to_run`` and ``driver_memory`` (the rows of
        :func:`driver_memory`).
    """
    from medscope.testing import providers as fp
    from medscope.testing.protocols import SingleTurnProtocol
    from medscope.testing.views import write_views
    from medscope.models.config import ModelEntry
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.support.raycluster import ensure_ray

    quick = getattr(args, "quick", False)
    rpm, latency, n = (240.0, 0.2, 24) if quick else (300.0, 0.25, 60)
    os.environ["MEDSCOPE_BENCH_KEY"] = "bench-loopback-only"
    ensure_ray()
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", latency_s=latency,
                             expected_key="bench-loopback-only")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            views = write_views(os.path.join(tmp, "views.parquet"), n)
            entry = ModelEntry(name="bench", kind="openai", model="loopback", base_url=server.url,
                               api_key_env="MEDSCOPE_BENCH_KEY", rpm=rpm, timeout_s=10)
            cfg = EvalConfig(views=views, models="-", out=os.path.join(tmp, "eval"), conditions=["agent"],
                             workers=2, concurrency=8)
            t0 = time.monotonic()
            first = run_sweep(cfg, SingleTurnProtocol(), [entry])
            wall = time.monotonic() - t0
            times = sorted(r.t for r in server.requests)
            sent_first = len(times)
            # Skip the first few requests: each worker's first one also opens its connection,
            # so its arrival time is late and would inflate the rate measured from it.
            warm = times[min(4, len(times) - 2):]
            steady = (len(warm) - 1) / (warm[-1] - warm[0]) * 60.0 if len(warm) > 1 else 0.0
            before = len(server.requests)
            second = run_sweep(cfg, SingleTurnProtocol(), [entry])
            resent = len(server.requests) - before
    finally:
        server.close()
    result = {
        "units": n, "rpm_limit": rpm, "server_latency_s": latency, "episodes_written": first["done"],
        "requests_first_run": sent_first,
        "achieved_rpm": round(steady, 1), "share_of_limit": round(steady / rpm, 3),
        "end_to_end_rpm_incl_startup": round(n / wall * 60.0, 1),
        "resumed_requests_for_finished_work": resent, "resumed_to_run": second["to_run"],
    }
    print(f"eval bench: {n} units, limit {rpm:g} rpm, server latency {latency:g}s")
    print(f"  achieved {steady:.1f} rpm = {steady / rpm:.1%} of the limit (after 4 warm-up requests)")
    print(f"  end to end incl. actor start-up: {result['end_to_end_rpm_incl_startup']:.1f} rpm")
    print(f"  resumed sweep: {resent} requests for {first['done']} finished episodes (must be 0)")
    result["driver_memory"] = driver_memory(QUICK_MEMORY_SIZES if quick else MEMORY_SIZES)
    return result


def noise_views(uri: str, n: int, side: int = 256, seed: int = 0) -> str:
    """A views table of ``n`` views whose images are ``side`` x ``side`` gray noise (PNG does
    not shrink noise, so each image is ~side^2 bytes, like a real radiograph's crop).

    Parameters
    ----------
    uri : str
        Path or URI the views table is written to.
    n : int
        Number of views.
    side : int, optional
        Image side in pixels.
    seed : int, optional
        Seed of the noise.

    Returns
    -------
    str
        ``uri``.
    """
    from medscope.io import records
    from medscope.images import encode_png
    from medscope.testing.views import views_rows

    rng = np.random.default_rng(seed)
    rows = views_rows(n)
    for row in rows:
        row["image"] = encode_png(rng.integers(0, 256, (side, side), dtype=np.uint8))
        row["width"] = row["height"] = side
    records.write_table("views", rows, uri)
    return uri


def driver_memory(sizes: tuple[int, ...], side: int = 256, latency: float = 0.02) -> list[dict]:
    """Peak RSS of the sweep's driver at each size, each sweep in a fresh process with its own
    local Ray (so one size's peak cannot hide another's), against one loopback server.

    Parameters
    ----------
    sizes : tuple of int
        Units per sweep, one sweep each.
    side : int, optional
        Side in pixels of the noise images (:func:`noise_views`).
    latency : float, optional
        The loopback server's latency per request, in seconds.

    Returns
    -------
    list of dict
        One per size: the driver's JSON line (``units``, ``done``, ``wall_s``, ``driver_peak_rss_mb``) plus
        ``views_mb`` and ``episodes_per_s``.

    Raises
    ------
    RuntimeError
        When a sweep's process exits non-zero.
    """
    from medscope.testing import providers as fp

    key = "bench-loopback-only"
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", latency_s=latency, expected_key=key)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in sizes:
                views = noise_views(os.path.join(tmp, f"views-{n}.parquet"), n, side)
                spec = os.path.join(tmp, f"spec-{n}.json")
                with open(spec, "w") as fh:
                    json.dump({"views": views, "out": os.path.join(tmp, f"eval-{n}"), "url": server.url,
                               "key": key}, fh)
                proc = subprocess.run([sys.executable, "-m", "pipelines.bench.eval_driver", spec],
                                      capture_output=True, text=True, timeout=900)
                if proc.returncode != 0:
                    raise RuntimeError(f"bench sweep of {n} units failed:\n{proc.stderr[-2000:]}")
                got = json.loads(proc.stdout.strip().splitlines()[-1])
                got["views_mb"] = round(os.path.getsize(views) / 2**20, 1)
                got["episodes_per_s"] = round(got["done"] / got["wall_s"], 1) if got["wall_s"] else 0.0
                rows.append(got)
                server.requests.clear()  # the server's log is the parent's memory, not the driver's
    finally:
        server.close()
    print(f"eval driver memory ({side}x{side} noise images; shared machine: figures are noisy)")
    print(f"  {'units':>6}  {'views MB':>8}  {'driver peak RSS MB':>18}  {'episodes/s':>10}")
    for r in rows:
        print(f"  {r['units']:>6}  {r['views_mb']:>8.1f}  {r['driver_peak_rss_mb']:>18.1f}  {r['episodes_per_s']:>10.1f}")
    if len(rows) > 1:
        slope = (rows[-1]["driver_peak_rss_mb"] - rows[0]["driver_peak_rss_mb"]) / (rows[-1]["units"] - rows[0]["units"])
        print(f"  growth: {slope * 1024:.1f} KB of driver memory per unit "
              f"({rows[0]['units']} -> {rows[-1]['units']} units)")
    return rows
