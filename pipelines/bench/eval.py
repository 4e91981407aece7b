"""``medscope bench eval``: does the sweep use a provider's rate limit, and does a resumed
sweep re-send finished work?

Against a loopback OpenAI-wire server with fixed latency, one model with an rpm limit is
swept over N units with enough concurrency to exceed the limit; the achieved request rate at
the server is reported as a share of the limit (aim >= 90%). The same sweep is then rerun on
the same output, and the requests it sends are counted (must be 0).
"""

from __future__ import annotations

import os
import tempfile
import time



def bench_eval(args) -> dict:
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
    return result
