"""Several nodes, one lost: views build, probe build, evaluation sweep and training on
a three-node Ray cluster (tests/fixtures/multinode_driver.py, in a subprocess), one worker node removed in
the middle of each job, outputs on the loopback S3 server; compared with single-node runs of the
same inputs on the session's Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pyarrow.compute as pc
import pytest

from medscope.io import layout, records, storage
from medscope.protocols import organ_presence  # noqa: F401 - registers probe_items (read below)
from tests.fixtures import multinode_driver as drv

from tests.conftest import REPO_ROOT as REPO  # noqa: E402
BUCKET = "medscope-multinode"
RUN_VOLATILE = ("latency_s", "queued_s")  # times measured in the run: its only run-specific columns
# a three-node cluster running four jobs, and three single-node references, take more than the
# ~20 s of an ordinary test file; pytest-timeout's 600 s per test is too tight on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.multinode, pytest.mark.timeout(3600)]  # a hang guard only: a passing run takes ~1.5 min idle


def _parts(folder: str) -> dict[str, bytes]:
    return {f.rsplit("/", 1)[-1]: storage.read_bytes(f) for f in storage.list_files(folder, suffix=".parquet")}


def _collect(out: str, job: str):
    """What the comparisons need of one job's output, read while the S3 server still holds it."""
    folder = storage.join(out, job)
    if job == "views":
        vb = layout.ViewsBuild(folder)
        return {"views": storage.read_bytes(vb.views), "rejects": storage.read_bytes(vb.rejects),
                "qc_report": storage.read_utf8(vb.qc_report),
                "rows": records.read_table("views", vb.views, columns=["view_id", "case_id"]).to_pylist(),
                "parts": sorted(_parts(storage.join(folder, "parts", "views")))}
    if job == "probe":
        pb = layout.ProbeBuild(folder)
        return {"slices": storage.read_bytes(pb.slices), "rejects": storage.read_bytes(pb.rejects),
                "stats": storage.read_utf8(pb.cohort_stats), "items": _parts(pb.probe_items),
                "item_ids": records.read_table("probe_items", pb.probe_items).column("item_id").to_pylist()}
    if job == "eval":
        episodes = records.read_table("episodes", layout.EvalRun(folder).episodes)
        episodes = episodes.take(pc.sort_indices(episodes, [("request_key", "ascending")]))
        return {"rows": episodes.drop_columns(list(RUN_VOLATILE)).to_pylist(),
                "keys": episodes.column("request_key").to_pylist()}
    return {"log": drv.train_log(folder), "summary": json.loads(storage.read_utf8(layout.TrainRun(folder).summary))}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("multinode")
    made = drv.write_inputs(str(root / "in"))
    with open(root / "in" / "inputs.json", "w") as fh:
        json.dump(made, fh)
    return root, made


@pytest.fixture(scope="module")
def multi(s3_server, inputs):
    """The three-node run, one worker node lost per job (a subprocess, outputs on S3): its
    report and its outputs, read back."""
    import boto3

    root, _ = inputs
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    env = dict(os.environ, PYTHONPATH=REPO, AWS_ENDPOINT_URL=s3_server,
               # an S3 request held at the gate waits for the node loss, however long a busy
               # machine takes: botocore's 60 s read timeout must not end it (and resend it)
               # (the nodes' workers at nice 0: RAY_worker_niceness, tests/conftest.py)
               FSSPEC_S3_CONFIG_KWARGS=json.dumps({"read_timeout": 2 * drv.DEADLINE_S}))
    env.pop("RAY_ADDRESS", None)  # the driver starts its own cluster
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tests", "fixtures", "multinode_driver.py"),
                           "--inputs", str(root / "in"), "--out", f"s3://{BUCKET}/run"],
                          # a hang guard only: a loaded 2-core machine took 1,647 s for the four jobs
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=3400)
    seconds = time.monotonic() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("MULTINODE-REPORT ")]
    assert proc.returncode == 0 and lines, f"driver failed ({proc.returncode}):\n{proc.stderr[-6000:]}"
    report = json.loads(lines[-1].split(" ", 1)[1])
    before = os.environ.get("AWS_ENDPOINT_URL")
    os.environ["AWS_ENDPOINT_URL"] = s3_server
    storage.configure(s3_endpoint=None)
    try:
        outputs = {job: _collect(f"s3://{BUCKET}/run", job) for job in ("views", "probe", "eval", "train")}
    finally:
        if before is None:
            os.environ.pop("AWS_ENDPOINT_URL", None)
        else:
            os.environ["AWS_ENDPOINT_URL"] = before
        storage.configure(s3_endpoint=None)
    print(f"\nmultinode: three nodes, one lost per job: {seconds:.1f}s (cluster start {report['cluster_start_s']}s; "
          + ", ".join(f"{j} {report[j]['seconds']}s" for j in ("views", "probe", "eval", "train")) + ")")
    for job in ("views", "probe", "eval", "train"):
        kill = report[job]["kill"]
        seen = kill.get("finished_before_kill")
        print(f"multinode: {job}: node lost with {len(kill.get('in_flight', []))} request(s) in flight on it; "
              f"finished before: {len(seen) if isinstance(seen, list) else seen}")
    # what the driver said on stderr about lost workers, for the messages of failed assertions
    losses = [ln.strip() for ln in proc.stderr.splitlines() if "worker was lost" in ln]
    return {"report": report, "out": outputs, "seconds": seconds, "losses": losses}


def _single(ray_cluster, inputs, job: str) -> tuple[dict, dict]:
    """The same job on one node (this session's Ray, local disk): (its summary, its outputs)."""
    root, made = inputs
    out = str(root / "single")
    t0 = time.monotonic()
    if job == "eval":
        server = drv.provider()
        try:
            summary = drv.run_eval(made, os.path.join(out, "eval"), server, on_worker_nodes=False)
            summary["requests_total"] = len(server.requests)
        finally:
            server.close()
    else:
        summary = {"views": drv.run_views, "probe": drv.run_probe}[job](made, os.path.join(out, job))
    print(f"\nmultinode: single-node {job}: {time.monotonic() - t0:.1f}s")
    return summary, _collect(out, job)


def _lost_node(report: dict, job: str) -> dict:
    """What the lost node had in flight and what was finished when it went (the driver's
    NodeLoss: the node is killed while the job's requests are held at a loopback server)."""
    kill = report[job]["kill"]
    assert kill["killed"], f"{job}: no worker node was lost: {kill.get('error')}"
    # the held requests that triggered the kill came from the lost node, and were dropped with
    # it: each was in flight there, none landed
    assert kill["in_flight"] and set(kill["held_on_node"]) <= set(kill["in_flight"]), kill
    return kill


def _names(paths) -> list[str]:
    return [p.rsplit("/", 1)[-1].split("?", 1)[0] for p in paths]


def _parts_once(multi: dict, job: str, got_parts: list[str]) -> dict:
    """The parts job ``job`` wrote around the lost node: one before it (the gate let exactly
    one through), the ones in flight on it redone elsewhere, every part PUT exactly once."""
    kill = _lost_node(multi["report"], job)
    assert len(kill["finished_before_kill"]) == 1  # the gate let one part through, then held the rest
    puts = _names(multi["report"][job]["summary"]["part_puts"])
    assert sorted(puts) == sorted(set(puts)) == got_parts  # none lost, none written twice
    in_flight = _names(kill["in_flight"])
    assert set(in_flight) <= set(got_parts)  # the lost node's writes never landed; others redid them
    assert f"part-{kill['finished_before_kill'][0]}.parquet" not in in_flight
    return kill


def test_cluster_had_three_nodes_with_their_own_resources(multi):
    nodes = multi["report"]["nodes"]
    assert len(nodes) == 3
    assert sorted(r.get("CPU", 0.0) for r in nodes.values()) == [0.0, 1.0, 1.0]
    assert sum(any(k.startswith("medscope_worker") for k in r) for r in nodes.values()) == 2


def test_views_build_survives_a_lost_node_byte_identical(ray_cluster, inputs, multi):
    got = multi["out"]["views"]
    _parts_once(multi, "views", got["parts"])
    ref, single = _single(ray_cluster, inputs, "views")
    assert got["views"] == single["views"] and got["rejects"] == single["rejects"]
    assert got["qc_report"] == single["qc_report"]
    ids = [r["view_id"] for r in got["rows"]]
    assert len(ids) == len(set(ids)) == ref["views"] > 0
    assert got["parts"] == single["parts"] and len(got["parts"]) > drv.N_CASES // 2  # per case: none lost, none twice
    assert multi["report"]["views"]["summary"]["built_now"] == ref["built_now"] == drv.N_CASES


def test_probe_build_survives_a_lost_node_byte_identical(ray_cluster, inputs, multi):
    got = multi["out"]["probe"]
    _parts_once(multi, "probe", sorted(got["items"]))
    ref, single = _single(ray_cluster, inputs, "probe")
    assert got["slices"] == single["slices"] and got["rejects"] == single["rejects"]
    assert got["stats"] == single["stats"]
    assert got["items"] == single["items"]  # the same part files, byte for byte
    assert len(got["items"]) == ref["volumes_used"] == drv.N_VOLUMES
    assert len(got["item_ids"]) == len(set(got["item_ids"])) == ref["items_written"] > 0


def test_eval_sweep_survives_a_lost_node_without_rebilling_finished_units(ray_cluster, inputs, multi):
    kill = _lost_node(multi["report"], "eval")
    units = drv.N_ITEMS * len(drv.CONDITIONS)
    summary = multi["report"]["eval"]["summary"]
    # the provider answered the first units, then held every request: exactly those were written
    finished_before = set(kill["finished_before_kill"])
    assert len(finished_before) == drv.EVAL_ANSWERED_FIRST
    in_flight = set(kill["in_flight"])  # units whose request was held on the lost node when it went
    # the lost node's pool actors (one, or both when Ray put both there) x their 2 request slots
    assert 1 <= len(in_flight) <= 2 * 2 and not in_flight & finished_before
    # same episodes as on one node (wall time aside), one per unit
    ref, single = _single(ray_cluster, inputs, "eval")
    got = multi["out"]["eval"]
    assert got["rows"] == single["rows"]
    assert len(got["keys"]) == len(set(got["keys"])) == units
    per_unit = summary["requests_per_unit"]
    assert set(per_unit) == set(got["keys"])
    before_kill = summary["requests_before_kill"]
    said = f"in flight on the lost node: {sorted(in_flight)}; driver: {multi['losses']}; per unit: {per_unit}; " \
           f"before the kill: {before_kill}; queued again: {summary['units_sent_again']}"
    # a unit finished before the kill was requested once, before the kill
    for key in finished_before:
        assert per_unit[key] == before_kill[key] == 1, said
    # the units held on the lost node were in flight there (requested before the kill) and the
    # driver queued them again; only units it queued again were requested twice, none more often.
    # (On a heavily loaded machine Ray can declare a worker on a live node unreachable before the
    # kill: the driver kills it and queues its units again too, and says so.)
    sent_again = set(summary["units_sent_again"])
    twice = {k for k, n in per_unit.items() if n == 2}
    assert all(before_kill[k] >= 1 for k in in_flight), said
    assert in_flight <= twice <= sent_again and set(per_unit.values()) <= {1, 2}, said
    assert not sent_again & finished_before, said
    assert summary["requests_total"] == units + len(twice), said
    # the lost node's worker, and any replacement Ray placed there before it knew the node was
    # gone; each loss queues at most that worker's two request slots again
    assert 1 <= summary["workers_lost"] and len(sent_again) <= 2 * summary["workers_lost"], said
    assert ref["requests_total"] == units  # the single-node run sent each unit once
    assert summary["failed"] == summary["retry_later"] == 0


def test_training_resumes_from_its_last_checkpoint_after_a_lost_node(multi):
    kill = _lost_node(multi["report"], "train")
    summary, log = multi["out"]["train"]["summary"], multi["out"]["train"]["log"]
    # the node went while the step-4 checkpoint's upload was held: the step-2 one was the last
    # recorded (checkpoints every 2 steps), and the progress file said step 2 of the first attempt
    assert all("/checkpoint_" in p for p in kill["in_flight"])
    assert kill["finished_before_kill"]["step"] == 2 and kill["finished_before_kill"]["resumed_from"] == 0
    assert summary["steps"] == drv.TRAIN_STEPS
    resumed = summary["resumed_from"]
    assert resumed == 2
    # the step log: every step once, the first attempt's up to the checkpoint, the rest by the resumed one
    assert [r["step"] for r in log] == list(range(1, drv.TRAIN_STEPS + 1))
    assert [r["resumed_from"] for r in log] == [0] * resumed + [resumed] * (drv.TRAIN_STEPS - resumed)
    assert all(r["loss"] == r["loss"] and r["loss"] > 0 for r in log)  # finite, not NaN
