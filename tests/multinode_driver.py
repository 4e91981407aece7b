"""Several nodes, one lost: the four Ray jobs on a three-node cluster, one worker node killed mid-job.

Run as a subprocess (the test session already holds an in-process single-node Ray):

    python tests/multinode_driver.py --inputs DIR --out s3://bucket/prefix [--jobs views,probe,eval,train]

It starts ``ray.cluster_utils.Cluster``: a head with no CPUs (it holds the driver, the GCS and
the Ray Train controller) and two worker nodes of one CPU each, with their own custom
resources. Every node loss is driven by events, never by time: the job's own
requests are held in flight at a loopback server's gate (medscope.testing.gate) -- S3 writes of
its parts or checkpoint uploads at a loopback S3 proxy, model requests at the loopback provider.
Once the job has finished a known amount of work (one views part, one probe items part, four
episodes, the first checkpoint) and a held request comes from a worker node, that node is
killed (raylet and processes, no graceful drain); when its processes are gone, its held
requests are dropped unanswered and the others let through. So what was finished before the
kill and what was in flight on the lost node are both known exactly. When the job has
finished, a fresh worker node joins for the next job. One JSON line on stdout reports, per
job, the summary, what was in flight and finished at the kill, and the figures the test checks.

The job calls themselves (``run_views`` ...) are shared with the single-node reference run of
the test, so both runs get exactly the same inputs and settings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time

import yaml

from medscope.io import layout, records, storage
from medscope.testing.gate import wait_for
from raystart import started  # tests/raystart.py: this script runs from tests/

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# the small sizes the test uses (two shared cores): a phantom of 8 cases, 4 CT volumes,
# 8 items x 2 conditions, 6 training steps
N_CASES, N_VOLUMES, N_ITEMS, TRAIN_STEPS = 8, 4, 8, 6
CONDITIONS = ["agent", "blind"]
KEY_ENV = "MEDSCOPE_TEST_OPENAI_KEY"


# -- inputs and the job calls (shared with the single-node reference in the test) -----------------
def write_inputs(folder: str) -> dict:
    """The phantom cases and CT volumes, a small views table for the sweep, training views."""
    from medscope.cohorts.phantom import phantom_cases, write_volumes
    from medscope.testing.views import write_views
    from medscope.training.synthetic_views import synthetic_views

    os.makedirs(folder, exist_ok=True)
    rows, _ = phantom_cases(N_CASES, seed=3)
    cases = os.path.join(folder, "cases.parquet")
    records.write_table("cases", sorted(rows, key=lambda r: r["case_id"]), cases)
    volumes = write_volumes(os.path.join(folder, "ct"), N_VOLUMES, seed=0, shape=(64, 64, 24))
    items = write_views(os.path.join(folder, "items.parquet"), N_ITEMS)
    train_views = os.path.join(folder, "train_views.parquet")
    records.write_table("views", synthetic_views(6, seed=0) + synthetic_views(3, seed=1, split="validation"),
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
                           expected_key=os.environ[KEY_ENV])


def eval_parts(server):
    """(config maker, protocol, model entries) of the sweep against ``server``."""
    from medscope.models.config import ModelEntry
    from medscope.testing.protocols import SingleTurnProtocol
    from pipelines.eval import EvalConfig

    entry = ModelEntry(name="gpt-fake", kind="openai", model="fake-1", base_url=server.url, api_key_env=KEY_ENV,
                       # a request held at the provider waits until the node is lost, however long a
                       # busy machine takes: a client timeout must not end it (and resend it)
                       price_in_per_mtok=2.0, price_out_per_mtok=8.0, timeout_s=2 * DEADLINE_S)

    def cfg(items, out, on_worker_nodes=True):
        # a fixed run id: the episodes of the single-node and the multi-node run must agree
        # the pool actors go to worker nodes only (Ray's SPREAD alone put both on the head at
        # times, and then no worker node had work to lose); a worker node holds at most two
        return EvalConfig(views=items, models="unused.yaml", out=out, conditions=CONDITIONS, run_id="multinode",
                          workers=2, concurrency=2, backoff_s=0.05,
                          pool_resources={EVAL_POOL: 0.5} if on_worker_nodes else {})

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


def run_eval(inputs: dict, out: str, server, on_worker_nodes: bool = True) -> dict:
    """The sweep; ``on_worker_nodes=False`` for a one-node cluster, which has no worker nodes."""
    from pipelines.eval import run_sweep

    cfg, protocol, entries = eval_parts(server)
    return run_sweep(cfg(inputs["items"], out, on_worker_nodes), protocol, entries)


def run_train(inputs: dict, out: str) -> dict:
    from pipelines.train import TrainJob, run

    return run(TrainJob(recipe=inputs["recipe"], views=inputs["train_views"], out=out, max_failures=2))


def train_log(out: str) -> list[dict]:
    text = storage.read_utf8(layout.TrainRun(out).log)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# -- the cluster ---------------------------------------------------------------------------
# A wait for an event gives up only so that a broken run ends; never a verdict. With two busy
# loops beside it (nice 0 against Ray's workers at nice 15), training took more than 300 s to
# reach its first checkpoint on a 2-core machine (2026-12-02), so the bound is 20 minutes.
DEADLINE_S = 1200.0


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
        self.cluster = started(lambda: Cluster(initialize_head=True, head_node_args=head), "the head node")
        self.workers = [self.add() for _ in range(2)]
        self.cluster.wait_for_nodes()

    @staticmethod
    def _args(cpus: int, name: str) -> dict:
        return {"num_cpus": cpus, "resources": {f"medscope_{name}": 1}, "object_store_memory": 80 * 2**20,
                "include_dashboard": False}

    def add(self):
        self.serial += 1
        args = self._args(1, f"worker{self.serial}")
        args["resources"][EVAL_POOL] = 1.0  # room for two eval pool actors; the head has none
        return started(lambda: self.cluster.add_node(**args), f"worker node {self.serial}")

    def replace(self, node) -> None:
        self.workers.remove(node)
        self.workers.append(self.add())
        self.cluster.wait_for_nodes()

    def ports_of(self, node, server_port: int) -> set[int]:
        """The client ports of ``node``'s connections to the loopback server on ``server_port``."""
        out = set()
        for proc in _processes(node):
            try:
                conns = proc.net_connections(kind="tcp")
            except Exception:  # noqa: BLE001 - a process gone while looked at
                continue
            out.update(c.laddr.port for c in conns if c.raddr and c.raddr.port == server_port)
        return out

    def kill(self, node) -> None:
        """Lose ``node`` as a machine is lost: its raylet and every process it started killed at
        once, no graceful drain; returns once none of them can send anything any more."""
        import psutil

        procs = _processes(node)
        self.cluster.remove_node(node, allow_graceful=False)
        for proc in procs:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass

        def gone(proc) -> bool:
            try:
                return proc.status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return True

        wait_for(lambda: all(gone(p) for p in procs), f"the processes of lost node {node.node_id[:8]} to exit",
                 DEADLINE_S)

    def shutdown(self) -> None:
        self.cluster.shutdown()


def _processes(node) -> list:
    """``node``'s worker processes: every worker process of a node is a child of its raylet."""
    import psutil

    try:
        return psutil.Process(node.all_processes["raylet"][0].process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


class JobEnded(Exception):
    """The job returned before the event the node loss waits for."""


class NodeLoss(threading.Thread):
    """Loses a worker node at a moment the job's own requests define, never at a time.

    ``gate`` (a loopback server's medscope.testing.gate.Gate) holds the job's requests in
    flight; once ``ready()`` and a held request comes from a process of a worker node, that node
    is killed (raylet and processes), and only when its processes are gone are the held
    requests released: the lost node's dropped unanswered, the others let through. So the work
    in flight on the lost node is known (``in_flight``) and cannot have finished, and what was
    finished before the kill (``snapshot()``) is exactly what it was when the node went."""

    def __init__(self, nodes: ThreeNodes, gate, server_port: int, ready, snapshot, what: str):
        super().__init__(daemon=True)
        self.nodes, self.gate, self.server_port = nodes, gate, server_port
        self.ready, self.snapshot, self.what = ready, snapshot, what
        self.info: dict = {"killed": False}
        self.job_done = threading.Event()  # set when the job returned: nothing left to kill

    def _victim(self):
        if self.job_done.is_set():
            raise JobEnded(self.info.get("last_error"))
        try:
            if not self.ready():
                return None
            held = self.gate.held()
            for node in list(self.nodes.workers):
                ports = self.nodes.ports_of(node, self.server_port)
                mine = [h for h in held if h.client_port in ports]
                if mine:
                    return node, mine
        except Exception as err:  # noqa: BLE001 - a slow S3 listing, a process gone: look again
            self.info["last_error"] = f"{type(err).__name__}: {err}"
        return None

    def run(self) -> None:
        try:
            node, held = wait_for(self._victim, self.what, DEADLINE_S)
            seen = self.snapshot()  # held requests stop the job's progress: exact at the kill
            on_node = self.nodes.ports_of(node, self.server_port)
            self.nodes.kill(node)
            # a held request sent from the lost node, whose sender is gone, was in flight there:
            # it never lands; every other held request goes on
            alive = _client_ports(self.server_port)
            dropped = self.gate.release(drop=lambda h: h.client_port in on_node and h.client_port not in alive)
            self.info = {"killed": True, "node_id": node.node_id, "finished_before_kill": seen,
                         "held_on_node": sorted(h.what for h in held), "in_flight": sorted(h.what for h in dropped)}
        except JobEnded:
            self.info["error"] = f"the job ended before {self.what} (last error: {self.info.get('last_error')})"
        except Exception as err:  # noqa: BLE001 - reported to the test, which says what was awaited
            self.info["error"] = f"{type(err).__name__}: {err} (last error: {self.info.get('last_error')})"
        finally:
            self.gate.release()  # whatever happened, the job must not hang on a held request


def _client_ports(server_port: int) -> set[int]:
    """Client ports of the connections to ``server_port`` that a live process still holds."""
    import psutil

    return {c.laddr.port for c in psutil.net_connections(kind="tcp")
            if c.pid and c.raddr and c.raddr.port == server_port}


def _count_parts(folder: str) -> int:
    return len(storage.list_files(folder, suffix=".parquet")) if storage.is_dir(folder) else 0


def _timed(fn, *args) -> tuple[dict, float]:
    t = time.monotonic()
    res = fn(*args)
    return res, round(time.monotonic() - t, 2)


def _part_puts(s3, folder: str) -> list[str]:
    """Paths of the part files under ``folder`` the S3 server accepted, one per PUT."""
    prefix = "/" + folder.split("://", 1)[1] + "/part-"
    return [p.split("?", 1)[0] for p in s3.puts if p.startswith(prefix)]


def _parts_rule(folder: str):
    prefix = "/" + folder.split("://", 1)[1] + "/part-"
    return lambda method, path: method == "PUT" and path.startswith(prefix)


def _checkpoint_rule():
    """Holds the upload of every checkpoint after the first (Ray Train writes each into its
    own ``checkpoint_<time>/`` folder)."""
    first: list[str] = []

    def rule(method: str, path: str) -> bool:
        m = re.search(r"/(checkpoint_\d[^/?]*)/", path)
        if method not in ("PUT", "POST") or not m:
            return False
        first[:] = first or [m.group(1)]
        return m.group(1) != first[0]

    return rule


EVAL_ANSWERED_FIRST = 4  # units answered before the provider holds the rest
EVAL_POOL = "medscope_eval_pool"  # the custom resource that keeps eval pool actors on worker nodes


def scenario(inputs: dict, out: str, jobs: list[str]) -> dict:
    import ray

    from medscope.testing.s3proxy import FailingS3Proxy
    from pipelines.support import raycluster

    t_start = time.monotonic()
    # Ray's own wait for a starting raylet to register (30 s by default) is too short for a
    # loaded machine; `started` retries what Python-side Ray still times out on
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
    # every S3 request of the driver and of the nodes goes through a loopback proxy, whose gate
    # holds a job's part writes (or checkpoint uploads) in flight; the nodes inherit the endpoint
    s3 = FailingS3Proxy(os.environ["AWS_ENDPOINT_URL"])
    os.environ["AWS_ENDPOINT_URL"] = s3.url
    storage.configure(s3_endpoint=None)
    s3_port = int(s3.url.rsplit(":", 1)[1])
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
            folder = storage.join(out, job)
            if job == "views":
                vparts = storage.join(folder, "parts", "views")
                s3.gate.hold(_parts_rule(vparts), after=1)
                loss = NodeLoss(nodes, s3.gate, s3_port, lambda: _count_parts(vparts) >= 1,
                                lambda: sorted(records.part_keys(vparts)),
                                "a views part written and another one's write held from a worker node")
                loss.start()
                res, secs = _timed(run_views, inputs, folder)
                res["part_puts"] = _part_puts(s3, vparts)
            elif job == "probe":
                iparts = layout.ProbeBuild(folder).probe_items
                s3.gate.hold(_parts_rule(iparts), after=1)
                loss = NodeLoss(nodes, s3.gate, s3_port, lambda: _count_parts(iparts) >= 1,
                                lambda: sorted(records.part_keys(iparts)),
                                "a probe items part written and another one's write held from a worker node")
                loss.start()
                res, secs = _timed(run_probe, inputs, folder)
                res["part_puts"] = _part_puts(s3, iparts)
            elif job == "eval":
                episodes = layout.EvalRun(folder).episodes
                server = provider()
                # the first units are answered; every later request waits, in flight, at the provider
                server.gate.hold(lambda method, text: True, after=EVAL_ANSWERED_FIRST)
                at_kill: dict = {}

                def snapshot():
                    at_kill["requests"] = len(server.requests)
                    return sorted(records.part_keys(episodes))

                loss = NodeLoss(nodes, server.gate, int(server.url.rsplit(":", 1)[1].split("/")[0]),
                                lambda: _count_parts(episodes) >= EVAL_ANSWERED_FIRST, snapshot,
                                f"{EVAL_ANSWERED_FIRST} episodes written and a request held from a worker node")
                loss.start()
                try:
                    res, secs = _timed(run_eval, inputs, folder, server)
                finally:
                    server.close()
                by_tag = unit_keys(inputs["items"])
                before = server.requests[:at_kill.get("requests", 0)]
                res["requests_per_unit"] = {by_tag[t]: server.count(t) for t in by_tag}
                res["requests_before_kill"] = {by_tag[t]: sum(t in r.text for r in before) for t in by_tag}
                res["requests_total"] = len(server.requests)
                # held prompts -> the units they ask about
                for key in ("in_flight", "held_on_node"):
                    if key in loss.info:
                        loss.info[key] = sorted({by_tag[t] for t in by_tag for text in loss.info[key] if t in text})
            elif job == "train":
                snap = storage.join(folder, "ray", "smoke", "checkpoint_manager_snapshot.json")
                progress = layout.TrainRun(folder).progress
                s3.gate.hold(_checkpoint_rule())

                def ready():
                    if not (storage.exists(progress) and storage.exists(snap)):
                        return False
                    return json.loads(storage.read_utf8(progress))["step"] >= 2 and "checkpoint_" in storage.read_utf8(snap)

                loss = NodeLoss(nodes, s3.gate, s3_port, ready, lambda: json.loads(storage.read_utf8(progress)),
                                "the first checkpoint recorded and the next one's upload held from a worker node")
                loss.start()
                res, secs = _timed(run_train, inputs, folder)
                res["log"] = train_log(folder)
            else:
                raise SystemExit(f"unknown job {job}")
            loss.job_done.set()
            loss.join(timeout=DEADLINE_S)
            s3.gate.release()
            info = dict(loss.info)
            report[job] = {"summary": res, "seconds": secs, "kill": info}
            if info.get("killed"):
                lost = next((n for n in list(nodes.workers) if n.node_id == info["node_id"]), None)
                if lost is not None:
                    nodes.replace(lost)
    finally:
        ray.shutdown()
        nodes.shutdown()
        s3.close()
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
