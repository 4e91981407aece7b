"""One evaluation sweep in a process of its own, so ``bench eval`` can read the driver's peak RSS.

``python -m pipelines.bench.eval_driver SPEC.json``: SPEC names the views table, the output
folder and the loopback server; the process starts its own local Ray, runs the sweep with the
single-turn test protocol and prints one JSON line: units, episodes written, the sweep's wall
time and this process's peak resident memory (the driver only, not Ray's own processes nor the
workers).

The peak is ``VmHWM`` (pipelines/support/peak_memory.py), not ``ru_maxrss``, which would report
the bench's own size (it holds the loopback server's request log and wrote the views).
"""

from __future__ import annotations

import json
import os
import sys
import time

from pipelines.support.peak_memory import peak_rss_kib


def main(argv: list[str]) -> int:
    """Run the sweep SPEC describes and print its JSON line (see the module docstring).

    Parameters
    ----------
    argv : list of str
        The command-line arguments: ``[SPEC.json]``, a JSON file with ``views``, ``out``, ``url``, ``key`` and
        optionally ``num_cpus``, ``workers`` and ``concurrency``.

    Returns
    -------
    int
        The exit status, 0.
    """
    from medscope.models.config import ModelEntry
    from medscope.testing.protocols import SingleTurnProtocol
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.support.raycluster import ensure_ray

    with open(argv[0]) as fh:
        spec = json.load(fh)
    os.environ["MEDSCOPE_BENCH_KEY"] = spec["key"]
    ensure_ray(num_cpus=spec.get("num_cpus", 2))
    entry = ModelEntry(name="bench", kind="openai", model="loopback", base_url=spec["url"],
                       api_key_env="MEDSCOPE_BENCH_KEY", timeout_s=30)
    cfg = EvalConfig(views=spec["views"], models="-", out=spec["out"], conditions=["agent"],
                     workers=spec.get("workers", 2), concurrency=spec.get("concurrency", 8))
    t0 = time.monotonic()
    summary = run_sweep(cfg, SingleTurnProtocol(), [entry])
    wall = time.monotonic() - t0
    peak_kb = peak_rss_kib()
    print(json.dumps({"units": summary["units"], "done": summary["done"], "wall_s": round(wall, 2),
                      "driver_peak_rss_mb": round(peak_kb / 1024, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
