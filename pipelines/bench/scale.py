"""``medscope bench scale``: views/s and episodes/s against workers and nodes, with cost per 1,000.

Three Ray layouts on this machine, each in its own process (a fresh cluster each):
1 node x 1 CPU, 1 node x 2 CPUs, and 2 nodes x 1 CPU (``ray.cluster_utils.Cluster``: a head
and a worker node, each its own raylet and object store, on loopback). In each, the real
``views build`` runs on the phantom cohort (workers = the cluster's CPUs), then an evaluation
sweep (``run_sweep``, the single-turn test protocol) over every view it wrote against a loopback
OpenAI-wire server with zero latency, so the sweep measures the pipeline, not a provider.

Start-up and steady parts are apart: views start-up = the map stage until its first case began
(actor start, imports, tools); steady = first case begun to last case done. Episodes start-up =
sweep start to the first request at the server; steady = first to last request, over n-1
episodes. End to end = the whole job (views: plan, map, QC; sweep: all of it). The machine
ceiling (two plain processes against one, no Ray) is measured before and after. Cost per 1,000
= vCPUs held x end-to-end seconds / units x 1,000 (what a cloud bills: the CPUs of the nodes for
the job's wall time), and dollars at ``--usd-per-vcpu-hour``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

# AWS EC2 on-demand, Linux, us-east-1: m6i.large (2 vCPU) $0.096/h -> $0.048 per vCPU-hour
# (aws.amazon.com/ec2/pricing/on-demand, the price it has listed since m6i launched in 2021).
DEFAULT_USD_PER_VCPU_HOUR = 0.048
PRICE_SOURCE = "AWS EC2 m6i.large on-demand, Linux, us-east-1: $0.096/h for 2 vCPUs"

LAYOUTS = ((1, 1), (1, 2), (2, 1))  # (nodes, CPUs per node); workers = nodes x CPUs
MARK = "SCALE-RESULT "
COLUMNS = ("work", "nodes", "workers", "vCPUs", "units", "cluster_s", "startup_s", "steady_s", "job_s",
           "per_s_e2e", "per_s_steady", "x1_e2e", "x1_steady", "of_ceiling_e2e", "of_ceiling_steady",
           "vcpu_s_per_1k", "usd_per_1k")


def bench_scale(args) -> list[dict]:
    """``medscope bench scale``: run each layout in a subprocess, print one table, return its rows.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``cases`` (phantom cases; default 60, 12 with ``quick``), ``quick``, ``usd_per_vcpu_hour``
        (default ``DEFAULT_USD_PER_VCPU_HOUR``) and ``layouts`` if present ((nodes, CPUs per node) pairs;
        default ``LAYOUTS``).

    Returns
    -------
    list of dict
        The rows of :func:`scale_rows`.

    Raises
    ------
    RuntimeError
        When a layout's process prints no result.
    """
    from medscope.io import storage
    from medscope.cohorts import phantom
    from pipelines.bench import parallel_ceiling

    n_cases = getattr(args, "cases", None) or (12 if args.quick else 60)
    price = getattr(args, "usd_per_vcpu_hour", None) or DEFAULT_USD_PER_VCPU_HOUR
    spin = 0.1 if n_cases <= 4 else 1.0  # the tiniest run (the test) also shortens the ceiling loop
    load_before = os.getloadavg()[0]
    ceiling = [parallel_ceiling(spin)[1]]
    with tempfile.TemporaryDirectory(prefix="medscope-bench-scale-") as tmp:
        cases = phantom.generate(storage.join(tmp, "cohort"), n_cases=n_cases, seed=0)["cases"]
        measured = []
        for nodes, cpus in getattr(args, "layouts", None) or LAYOUTS:
            spec = {"nodes": nodes, "cpus_per_node": cpus, "cases": cases, "out": os.path.join(tmp, f"{nodes}x{cpus}")}
            measured.append(_run_layout(spec))
            print(f"  measured {nodes} node(s) x {cpus} CPU(s)", file=sys.stderr, flush=True)
    ceiling.append(parallel_ceiling(spin)[1])
    rows = scale_rows(measured, sum(ceiling) / 2, price)
    print(f"bench scale: phantom cohort of {n_cases} cases; load average {load_before:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end (figures mean something only on an idle machine)")
    print(render(rows))
    print(f"machine ceiling: two plain processes ran {ceiling[0]:.2f}x / {ceiling[1]:.2f}x the speed of one "
          f"(before / after, no Ray; mean {sum(ceiling) / 2:.3f}x is the 'of_ceiling' denominator)")
    print("x1 = rate / the 1-node 1-worker rate; of_ceiling = x1 / ceiling (1.0 = as good as plain processes);")
    print("cluster_s: Ray start (paid once per cluster); startup_s / steady_s: see `medscope bench scale` docs;")
    print("episodes steady rate = (units - 1) / steady_s (first to last request at the server);")
    print(f"vcpu_s_per_1k = vCPUs x job_s / units x 1000; usd_per_1k = vcpu_s_per_1k / 3600 x ${price:g}/vCPU-h "
          f"({PRICE_SOURCE if price == DEFAULT_USD_PER_VCPU_HOUR else '--usd-per-vcpu-hour'})")
    return rows


def scale_rows(measured: list[dict], ceiling: float, usd_per_vcpu_hour: float) -> list[dict]:
    """The table's rows from the layouts' measurements: rates, ratios to 1 worker, share of the
    machine ceiling, and cost per 1,000 units. ``measured[0]`` is the 1-node 1-worker layout.

    Parameters
    ----------
    measured : list of dict
        One per layout, as :func:`measure` returns: ``nodes``, ``cpus_per_node``, ``cluster_s`` and ``views`` /
        ``episodes`` ({``units``, ``startup_s``, ``steady_s``, ``job_s``}).
    ceiling : float
        The machine ceiling: speed-up of two plain processes over one.
    usd_per_vcpu_hour : float
        Price of one vCPU-hour, in US dollars.

    Returns
    -------
    list of dict
        Two rows per layout (``work`` ``"views"`` and ``"episodes"``) with the keys of ``COLUMNS``.
    """
    rows = []
    base = {}
    for m in measured:
        vcpus = m["nodes"] * m["cpus_per_node"]
        for work in ("views", "episodes"):
            w = m[work]
            e2e = w["units"] / w["job_s"]
            # views: every case lies inside [first begun, last done]; episodes: the window runs
            # from the first request's arrival to the last's, so it spans units - 1 of them
            steady = (w["units"] - (work == "episodes")) / w["steady_s"]
            base.setdefault(work, (e2e, steady))
            x1_e2e, x1_steady = e2e / base[work][0], steady / base[work][1]
            cpu_s = vcpus * w["job_s"] / w["units"] * 1000.0
            rows.append({
                "work": work, "nodes": m["nodes"], "workers": vcpus, "vCPUs": vcpus, "units": w["units"],
                "cluster_s": m["cluster_s"], "startup_s": w["startup_s"], "steady_s": w["steady_s"],
                "job_s": w["job_s"], "per_s_e2e": e2e, "per_s_steady": steady,
                "x1_e2e": x1_e2e, "x1_steady": x1_steady,
                "of_ceiling_e2e": x1_e2e / ceiling, "of_ceiling_steady": x1_steady / ceiling,
                "vcpu_s_per_1k": cpu_s, "usd_per_1k": cpu_s / 3600.0 * usd_per_vcpu_hour,
            })
    return rows


def render(rows: list[dict]) -> str:
    """One fixed-width table; seconds and rates to 3 decimals, dollars to 6.

    Parameters
    ----------
    rows : list of dict
        Rows with the keys of ``COLUMNS``.

    Returns
    -------
    str
        A header line and one right-aligned line per row.
    """
    def cell(k, v):
        if isinstance(v, str) or isinstance(v, int):
            return str(v)
        return f"{v:.6f}" if k == "usd_per_1k" else f"{v:.3f}"

    cells = [list(COLUMNS)] + [[cell(k, r[k]) for k in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c[i].rjust(widths[i]) for i in range(len(COLUMNS))) for c in cells)


def _run_layout(spec: dict) -> dict:
    """One layout in a fresh process (one Ray cluster per process); its measurements."""
    from pipelines.support.raycluster import CODE_ROOT

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (CODE_ROOT, os.environ.get("PYTHONPATH")) if p))
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-m", "pipelines.bench.scale", json.dumps(spec)], env=env,
                          capture_output=True, text=True, timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    raise RuntimeError(f"bench scale layout {spec['nodes']}x{spec['cpus_per_node']} failed "
                       f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def measure(spec: dict) -> dict:
    """In the layout's own process: start its cluster, build views, sweep them; the timings.

    Parameters
    ----------
    spec : dict
        ``nodes``, ``cpus_per_node``, ``cases`` (the cohort's cases table) and ``out`` (folder for the views and
        the sweep).

    Returns
    -------
    dict
        ``nodes``, ``cpus_per_node``, ``cluster_s``, ``ray_nodes`` (nodes alive), ``views`` (``units``,
        ``startup_s``, ``steady_s``, ``job_s``, ``workers_used``) and ``episodes`` (``units``, ``startup_s``,
        ``steady_s``, ``job_s``, ``requests``); seconds.
    """
    import ray

    from medscope.models.config import ModelEntry
    from medscope.testing import providers as fp
    from medscope.testing.protocols import SingleTurnProtocol
    from medscope.views.recipe import Recipe
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.support.raycluster import ensure_ray
    from pipelines.views import build_views

    nodes, cpus = spec["nodes"], spec["cpus_per_node"]
    t = time.monotonic()
    cluster = None
    if nodes == 1:
        ensure_ray(num_cpus=cpus)
    else:
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": cpus, "include_dashboard": False})
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=cpus)
        cluster.wait_for_nodes()
        os.environ["RAY_ADDRESS"] = cluster.address
        ensure_ray()
    cluster_s = time.monotonic() - t
    workers = nodes * cpus
    out = {"nodes": nodes, "cpus_per_node": cpus, "cluster_s": cluster_s,
           "ray_nodes": len([n for n in ray.nodes() if n["Alive"]])}

    s = build_views(spec["cases"], os.path.join(spec["out"], "views"), Recipe(seed=0), workers=workers,
                    engine="ray", quiet=True)
    tm = s["map_timing"]
    out["views"] = {"units": s["views"], "startup_s": tm["startup_s"], "steady_s": tm["steady_s"],
                    "job_s": s["seconds"], "workers_used": tm["workers"]}

    key = "bench-scale-loopback-only"
    os.environ["MEDSCOPE_BENCH_KEY"] = key
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", latency_s=0.0, expected_key=key)
    try:
        entry = ModelEntry(name="loopback", kind="openai", model="loopback", base_url=server.url,
                           api_key_env="MEDSCOPE_BENCH_KEY", timeout_s=30)
        cfg = EvalConfig(views=s["views_uri"], models="-", out=os.path.join(spec["out"], "eval"),
                         conditions=["agent"], workers=workers, concurrency=4)
        t0 = time.monotonic()
        summary = run_sweep(cfg, SingleTurnProtocol(), [entry])
        job_s = time.monotonic() - t0
        times = sorted(r.t for r in server.requests)
    finally:
        server.close()
    out["episodes"] = {"units": summary["done"], "startup_s": times[0] - t0, "steady_s": times[-1] - times[0],
                       "job_s": job_s, "requests": len(times)}
    ray.shutdown()
    if cluster is not None:
        cluster.shutdown()
    return out


if __name__ == "__main__":
    print(MARK + json.dumps(measure(json.loads(sys.argv[1]))), flush=True)
