"""``medscope bench faults``: the fault campaign -- each fault kind at two concurrencies, with
counts of lost, duplicated and re-billed units (docs/scaling.md, "Fault campaign").

Every run is a real sweep (``run_sweep`` on local Ray workers) of N units against a loopback
OpenAI-wire server (medscope.testing.providers) that answers every unit's first request with
the fault, then normally; S3 write faults go through a loopback proxy in front of moto that
fails the first PUTs of episode parts (medscope.testing.s3proxy); a killed worker is a Ray
actor killed mid-sweep. After the sweep the same sweep is run again (a resume). Counted:

- lost: units with no episode after the sweep and its resume;
- duplicated: episode rows beyond one per unit;
- extra requests: requests the provider received beyond one per unit (the retries);
- re-billed: completions the provider generated beyond one per unit (an answer, also one sent
  after the client had given up, or cut, is billed by a real provider; a 429/5xx/reset is not);
- resume requests: requests the resumed sweep sent (finished work must send none).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time

KEY_ENV = "MEDSCOPE_BENCH_FAULT_KEY"
BILLED = {"answer", "slow", "truncated", "empty", "refusal"}


def _kinds():
    from medscope.testing import providers as fp

    return [
        ("429 with Retry-After", fp.status(429, retry_after=0.3)),
        ("429 without Retry-After", fp.status(429)),
        ("500", fp.status(500)),
        ("503", fp.status(503)),
        ("timeout (answer after the client gave up)", fp.slow(4.0)),
        ("connection reset", fp.RESET),
        ("cut body", fp.TRUNCATED),
        ("non-JSON body", fp.NONJSON),
        ("killed worker (actor killed mid-sweep)", "kill"),
        ("S3 503 SlowDown on 3 episode PUTs", ("s3", 3)),
        ("S3 503 SlowDown on 12 episode PUTs", ("s3", 12)),
    ]


def _one(label, fault, concurrency: int, n: int, tmp: str, s3_endpoint: str | None) -> dict:
    import ray

    from medscope.io import records, storage
    from medscope.models.config import ModelEntry
    from medscope.testing import providers as fp
    from medscope.testing.protocols import SingleTurnProtocol, unit_tag
    from medscope.testing.s3proxy import FailingS3Proxy
    from medscope.testing.views import write_views
    from pipelines.eval import EvalConfig, run_sweep

    latency = 0.25 if fault == "kill" else 0.05
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", latency_s=latency,
                             expected_key="fault-bench-loopback")
    proxy = None
    tag = f"{abs(hash((label, concurrency))) % 10**8}"
    out = os.path.join(tmp, f"eval-{tag}")
    try:
        if isinstance(fault, tuple):
            proxy = FailingS3Proxy(s3_endpoint, fail_puts=fault[1], match="/episodes/part-")
            storage.configure(s3_endpoint=proxy.url)
            out = f"s3://medscope-faults/eval-{tag}"
        elif fault != "kill":
            for i in range(n):
                server.on(unit_tag(f"v{i:03d}", "agent"), fault)
        views = write_views(os.path.join(tmp, f"views-{tag}.parquet"), n)
        entry = ModelEntry(name="m", kind="openai", model="loopback", base_url=server.url, api_key_env=KEY_ENV,
                           timeout_s=1.5, max_attempts=4, price_in_per_mtok=2.0, price_out_per_mtok=8.0)
        cfg = EvalConfig(views=views, models="-", out=out, conditions=["agent"], workers=2,
                         concurrency=concurrency, backoff_s=0.05, run_id=f"faults{tag}")
        error, killed = None, 0
        t0 = time.monotonic()
        if fault == "kill":
            result: dict = {}
            sweeper = threading.Thread(target=lambda: result.update(run_sweep(cfg, SingleTurnProtocol(), [entry])))
            sweeper.start()
            while len(records.part_keys(f"{out}/episodes")) < n // 4 and sweeper.is_alive():
                time.sleep(0.05)
            victims = sorted(a for a in ray.util.list_named_actors() if a.startswith(f"medscope-eval-faults{tag}"))
            if victims:
                ray.kill(ray.get_actor(victims[0]))
                killed = 1
            sweeper.join(timeout=300)
            first = result
        else:
            try:
                first = run_sweep(cfg, SingleTurnProtocol(), [entry])
            except Exception as err:  # noqa: BLE001 - a sweep that dies is a result of the campaign
                first, error = {}, f"{type(err).__name__}: {err}"[:120]
        wall = time.monotonic() - t0
        before = len(server.requests)
        again = run_sweep(cfg, SingleTurnProtocol(), [entry])
        resume_requests = len(server.requests) - before
        keys = records.read_table("episodes", f"{out}/episodes", columns=["request_key"]).column("request_key").to_pylist()
        billed: dict[str, int] = {}
        for r in server.requests[:before]:
            if r.action in BILLED:
                unit = next((i for i in range(n) if unit_tag(f"v{i:03d}", "agent") in r.text), None)
                billed[unit] = billed.get(unit, 0) + 1
        return {
            "fault": label, "concurrency": concurrency, "units": n,
            "lost": n - len(set(keys)), "duplicated": len(keys) - len(set(keys)),
            "extra_requests": before - n, "rebilled": sum(max(0, c - 1) for c in billed.values()),
            "resume_requests": resume_requests, "resume_ran": again.get("to_run", 0),
            "first_run": error or f"done {first.get('done', 0)}, retry_later {first.get('retry_later', 0)}, "
                                  f"failed {first.get('failed', 0)}",
            # faults that happened: requests answered with the fault, workers killed, PUTs failed
            "injected": len(proxy.failed) if proxy else killed if fault == "kill"
            else sum(r.action != "answer" for r in server.requests[:before]),
            "wall_s": round(wall, 1),
        }
    finally:
        server.close()
        if proxy:
            proxy.close()
            storage.configure(s3_endpoint=s3_endpoint)


def bench_faults(args) -> list[dict]:
    """Run the fault campaign: each fault kind at each concurrency, a sweep and its resume; print
    one line per run and the Markdown table.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``quick`` (8 units at concurrency 2 instead of 12 units at 2 and 8).

    Returns
    -------
    list of dict
        One per (fault, concurrency): ``fault``, ``concurrency``, ``units``, ``lost``, ``duplicated``,
        ``extra_requests``, ``rebilled``, ``resume_requests``, ``resume_ran``, ``first_run``, ``injected`` and
        ``wall_s``.
    """
    from pipelines.bench.loopback_s3 import loopback_s3
    from pipelines.support.raycluster import ensure_ray

    quick = getattr(args, "quick", False)
    n, concurrencies = (8, (2,)) if quick else (12, (2, 8))
    os.environ[KEY_ENV] = "fault-bench-loopback"
    rows = []
    with loopback_s3("medscope-faults") as endpoint:
        for attempt in range(3):  # Ray's 30 s start-up wait can pass on a crowded machine
            try:
                ensure_ray(num_cpus=2)
                break
            except Exception:  # noqa: BLE001 - Ray raises a bare Exception on a slow start
                import ray

                ray.shutdown()
                if attempt == 2:
                    raise
        with tempfile.TemporaryDirectory() as tmp:
            for label, fault in _kinds():
                for c in concurrencies:
                    row = _one(label, fault, c, n, tmp, endpoint)
                    rows.append(row)
                    print(f"  {label} @ {c}: lost {row['lost']}, duplicated {row['duplicated']}, "
                          f"re-billed {row['rebilled']}, resume requests {row['resume_requests']} ({row['wall_s']} s)",
                          flush=True)
    cols = ["fault", "concurrency", "units", "lost", "duplicated", "extra_requests", "rebilled",
            "resume_requests", "injected", "first_run"]
    print(f"\nfault campaign ({time.strftime('%Y-%m-%d', time.gmtime())}): {n} units per sweep, 2 workers, "
          "concurrency = requests in flight per worker\n")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    print("| lost node | - | - | see multi-node tests | | | | | | |")
    return rows
