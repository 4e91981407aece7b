"""Several nodes, one lost: the four Ray jobs on a three-node cluster, one worker node killed mid-job.

Run as a subprocess (the test session already holds an in-process single-node Ray):

    python tests/multinode_driver.py --inputs DIR --out s3://bucket/prefix [--jobs views,probe,eval,train]

It starts ``ray.cluster_utils.Cluster``: a head with no CPUs (it holds the driver, the GCS and
the Ray Train controller) and two worker nodes of one CPU each, with their own custom
resources. For each job a watcher thread waits for a progress signal on S3 (a views part, a
probe items part, episode parts, a recorded training checkpoint), finds the worker node that
runs the job's work (Ray's state API) and removes it, without a graceful drain. When the job
has finished, a fresh worker node joins for the next job. One JSON line on stdout reports,
per job, the summary, what was killed and when, and the figures the test checks.

The job calls themselves (``run_views`` ...) are shared with the single-node reference run of
the test, so both runs get exactly the same inputs and settings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import yaml

from medscope import layout, records, storage

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# the small sizes the test uses (two shared cores): a phantom of 8 cases, 4 CT volumes,
# 8 items x 2 conditions, 6 training steps
N_CASES, N_VOLUMES, N_ITEMS, TRAIN_STEPS = 8, 4, 8, 6
CONDITIONS = ["agent", "blind"]
KEY_ENV = "MEDSCOPE_TEST_OPENAI_KEY"
PROVIDER_LATENCY_S = 0.3  # each request takes a while, so the sweep is still running at the kill


# -- inputs and the job calls (shared with the single-node reference in the test) -----------------
def write_inputs(folder: str) -> dict:
    """The phantom cases and CT volumes, a small views table for the sweep, training views."""
    from medscope.cohorts.phantom import phantom_cases, write_volumes
    from medscope.testing.views import write_views
    from medscope.training import synthetic

    os.makedirs(folder, exist_ok=True)
    rows, _ = phantom_cases(N_CASES, seed=3)
    cases = os.path.join(folder, "cases.parquet")
    records.write_table("cases", sorted(rows, key=lambda r: r["case_id"]), cases)
    volumes = write_volumes(os.path.join(folder, "ct"), N_VOLUMES, seed=0, shape=(64, 64, 24))
    items = write_views(os.path.join(folder, "items.parquet"), N_ITEMS)
    train_views = os.path.join(folder, "train_views.parquet")
    records.write_table("views", synthetic.synthetic_views(6, seed=0) + synthetic.synthetic_views(3, seed=1, split="validation"),
                        train_views)
    recipe = yaml.safe_load(open(os.path.join(REPO, "configs", "train", "smoke.yaml")))
    recipe.update(max_steps=TRAIN_STEPS, checkpoint_every=2)
    recipe_path = os.path.join(folder, "recipe.yaml")
    with open(recipe_path, "w") as fh:
        yaml.safe_dump(recipe, fh)
    return {"cases": cases, "volumes": volumes, "items": items, "train_views": train_views, "recipe": recipe_path}


def run_views(inputs: dict, out: str) -> dict:
    from medscope.views.recipe import Recipe
    from pipelines.views import build_views

    return build_views(inputs["cases"], out, Recipe(seed=4), workers=2, block_rows=1, quiet=True)


def probe_config():
    from medscope.volumes.config import ProbeConfig

    return ProbeConfig(slices_per_volume=6, transition_mm=0.0, vessels=["aorta"], renders=["gray"],
                       max_image_side=64, bootstrap_b=50, workers=2)


def run_probe(inputs: dict, out: str) -> dict:
    from pipelines.probe import build

    return build(inputs["volumes"], out, probe_config(), progress=False)


def provider():
    from medscope.testing import providers as fp

    os.environ.setdefault(KEY_ENV, "test-key-openai")
    return fp.FakeProvider("openai", responder=lambda text, images: "yes" if images else "no",
                           latency_s=PROVIDER_LATENCY_S, expected_key=os.environ[KEY_ENV])


def eval_parts(server):
    """(config maker, protocol, model entries) of the sweep against ``server``."""
    from medscope.models.config import ModelEntry
    from medscope.testing.protocols import SingleTurnProtocol
    from pipelines.eval import EvalConfig

    entry = ModelEntry(name="gpt-fake", kind="openai", model="fake-1", base_url=server.url, api_key_env=KEY_ENV,
                       price_in_per_mtok=2.0, price_out_per_mtok=8.0, timeout_s=10.0)

    def cfg(items, out):
        # a fixed run id: the episodes of the single-node and the multi-node run must agree
        return EvalConfig(views=items, models="unused.yaml", out=out, conditions=CONDITIONS, run_id="multinode",
                          workers=2, concurrency=2, backoff_s=0.05)

    return cfg, SingleTurnProtocol(), [entry]


def unit_keys(items: str) -> dict[str, str]:
    """unit tag (as the provider sees it) -> request key (the episode part's name)."""
    from medscope.testing.protocols import unit_tag
    from pipelines.eval import request_key

    class _S:
        url = "http://unused/v1"

    _, protocol, entries = eval_parts(_S)
    return {unit_tag(item.item_id, c): request_key(protocol, item, entries[0], c)
            for item in protocol.load_items(items) for c in CONDITIONS}


def run_eval(inputs: dict, out: str, server) -> dict:
    from pipelines.eval import run_sweep

    cfg, protocol, entries = eval_parts(server)
    return run_sweep(cfg(inputs["items"], out), protocol, entries)


def run_train(inputs: dict, out: str) -> dict:
    from pipelines.train import TrainJob, run

    return run(TrainJob(recipe=inputs["recipe"], views=inputs["train_views"], out=out, max_failures=2))


def train_log(out: str) -> list[dict]:
    text = storage.read_text(layout.TrainRun(out).log)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# -- the cluster ---------------------------------------------------------------------------
class ThreeNodes:
    """A head without CPUs and two one-CPU worker nodes on loopback; lost nodes are replaced
    between jobs (as an autoscaler would), never during one."""

    def __init__(self):
        from ray.cluster_utils import Cluster

        self.serial = 0
        # a lost node is declared dead after ~5 missed 1 s health checks (Ray's default is
        # 3 s x 5); only then are its tasks retried and its actors restarted elsewhere
        head = dict(self._args(0, "head"), _system_config={"health_check_period_ms": 1000,
                                                           "health_check_failure_threshold": 5})
        self.cluster = Cluster(initialize_head=True, head_node_args=head)
        self.workers = [self.add() for _ in range(2)]
        self.cluster.wait_for_nodes()

    @staticmethod
    def _args(cpus: int, name: str) -> dict:
        return {"num_cpus": cpus, "resources": {f"medscope_{name}": 1}, "object_store_memory": 80 * 2**20,
                "include_dashboard": False}

    def add(self):
        self.serial += 1
        return self.cluster.add_node(**self._args(1, f"worker{self.serial}"))

    def replace(self, node) -> None:
        self.workers.remove(node)
        self.workers.append(self.add())
        self.cluster.wait_for_nodes()

    def node_running(self, marks: tuple[str, ...]):
        return next((n for n in self.workers if _running_on(n, marks)), None)

    def kill(self, node) -> None:
        self.cluster.remove_node(node, allow_graceful=False)

    def shutdown(self) -> None:
        self.cluster.shutdown()


def _titles(node) -> list[str]:
    """The command lines of ``node``'s worker processes: Ray names a worker's process after the
    task or actor it runs (``ray::EpisodeWorker.run``, ``ray::Map(items_task)``), and every
    worker process of a node is a child of that node's raylet (no dashboard needed)."""
    import psutil

    raylet = psutil.Process(node.all_processes["raylet"][0].process.pid)
    out = []
    for child in raylet.children(recursive=True):
        try:
            out.append(" ".join(child.cmdline()))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


def _running_on(node, marks: tuple[str, ...]) -> bool:
    """Whether a worker process of ``node`` runs the job's work now."""
    return any(t.startswith("ray::") and any(m in t for m in marks) for t in _titles(node))


class Killer(threading.Thread):
    """Waits for ``ready()`` and then kills a worker node running the job's ``work``."""

    def __init__(self, nodes: ThreeNodes, ready, work: tuple[str, ...], snapshot=None):
        super().__init__(daemon=True)
        self.nodes, self.ready, self.work, self.snapshot = nodes, ready, work, snapshot
        self.info: dict = {"killed": False}
        self.job_done = threading.Event()  # set when the job returned: nothing left to kill

    def run(self) -> None:
        t0 = time.monotonic()
        while not self.job_done.is_set():
            try:
                if self.ready():
                    # what ran where, for a kill that finds nothing to kill
                    self.info["titles"] = sorted({t[:80] for n in self.nodes.workers for t in _titles(n)
                                                  if t.startswith("ray::")})
                    victim = self.nodes.node_running(self.work)
                    if victim is not None:
                        t_mono = time.monotonic()
                        seen = self.snapshot() if self.snapshot else None  # what was finished just before
                        self.nodes.kill(victim)
                        self.info = {"killed": True, "node_id": victim.node_id, "at_s": round(time.monotonic() - t0, 2),
                                     "t_kill": time.time(), "finished_before_kill": seen, "work": self.work,
                                     "t_kill_monotonic": t_mono}
                        return
            except Exception as err:  # noqa: BLE001 - a process gone while looked at: look again
                self.info["last_error"] = f"{type(err).__name__}: {err}"
            time.sleep(0.05)


def _count_parts(folder: str) -> int:
    return len(storage.list_files(folder, suffix=".parquet")) if storage.is_dir(folder) else 0


def _timed(fn, *args) -> tuple[dict, float]:
    t = time.monotonic()
    res = fn(*args)
    return res, round(time.monotonic() - t, 2)


def scenario(inputs: dict, out: str, jobs: list[str]) -> dict:
    import ray

    from pipelines.support import raycluster

    t_start = time.monotonic()
    nodes = ThreeNodes()
    raycluster._quiet_ray_loggers()
    # the nodes inherit this process's environment (PYTHONPATH of the checkout, the S3
    # endpoint), so workers import this code without a runtime_env
    ray.init(address=nodes.cluster.address, log_to_driver=False, logging_level="ERROR")
    raycluster._quiet_ray_data()
    report: dict = {"cluster_start_s": round(time.monotonic() - t_start, 2),
                    "nodes": {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}}
    try:
        for job in jobs:
            t_job = time.time()
            if job == "views":
                folder = storage.join(out, "views")
                vparts = storage.join(folder, "parts", "views")
                killer = Killer(nodes, lambda: _count_parts(vparts) >= 1, ("_RayWriter",),
                                snapshot=lambda: _count_parts(vparts))
                killer.start()
                res, secs = _timed(run_views, inputs, folder)
            elif job == "probe":
                folder = storage.join(out, "probe")
                iparts = layout.ProbeBuild(folder).probe_items
                killer = Killer(nodes, lambda: _count_parts(iparts) >= 1, ("items_task", "count_task"),
                                snapshot=lambda: _count_parts(iparts))
                killer.start()
                res, secs = _timed(run_probe, inputs, folder)
            elif job == "eval":
                folder = storage.join(out, "eval")
                episodes = layout.EvalRun(folder).episodes
                server = provider()
                killer = Killer(nodes, lambda: _count_parts(episodes) >= 3, ("EpisodeWorker",),
                                snapshot=lambda: sorted(records.part_keys(episodes)))
                killer.start()
                try:
                    res, secs = _timed(run_eval, inputs, folder, server)
                finally:
                    server.close()
                by_tag = unit_keys(inputs["items"])
                res["requests_per_unit"] = {by_tag[t]: server.count(t) for t in by_tag}
                res["requests_total"] = len(server.requests)
                t_kill = killer.info.get("t_kill_monotonic")
                # when each unit's requests arrived, in seconds after the kill (negative: before)
                res["request_times_after_kill"] = {
                    by_tag[t]: [round(r.t - t_kill, 3) for r in server.requests if t in r.text] for t in by_tag
                } if t_kill else {}
            elif job == "train":
                folder = storage.join(out, "train")
                snap = storage.join(folder, "ray", "smoke", "checkpoint_manager_snapshot.json")
                progress = layout.TrainRun(folder).progress

                def ready():
                    if not (storage.exists(progress) and storage.exists(snap)):
                        return False
                    p = json.loads(storage.read_text(progress))
                    return p["step"] >= 2 and p["resumed_from"] == 0 and "checkpoint_" in storage.read_text(snap)

                killer = Killer(nodes, ready, ("RayTrainWorker",),
                                snapshot=lambda: json.loads(storage.read_text(progress)))
                killer.start()
                res, secs = _timed(run_train, inputs, folder)
                res["log"] = train_log(folder)
            else:
                raise SystemExit(f"unknown job {job}")
            killer.job_done.set()
            killer.join(timeout=5)
            info = dict(killer.info)
            t_end = time.time()
            report[job] = {"summary": res, "seconds": secs, "kill": info}
            if info.get("killed"):
                # the job's own clock: it started before the kill and ended after it
                info["kill_after_start_s"] = round(info["t_kill"] - t_job, 2)
                info["end_after_kill_s"] = round(t_end - info["t_kill"], 2)
                lost = next((n for n in list(nodes.workers) if n.node_id == info["node_id"]), None)
                if lost is not None:
                    nodes.replace(lost)
    finally:
        ray.shutdown()
        nodes.shutdown()
    report["total_s"] = round(time.monotonic() - t_start, 2)
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", required=True, help="folder of inputs written by write_inputs")
    ap.add_argument("--out", required=True, help="output prefix (s3://...)")
    ap.add_argument("--jobs", default="views,probe,eval,train")
    args = ap.parse_args(argv)
    inputs = json.load(open(os.path.join(args.inputs, "inputs.json")))
    report = scenario(inputs, args.out, args.jobs.split(","))
    print("MULTINODE-REPORT " + json.dumps(report, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
