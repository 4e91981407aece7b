"""Several nodes, one lost (issue 16): views build, probe build, evaluation sweep and training on
a three-node Ray cluster (tests/multinode_driver.py, in a subprocess), one worker node removed in
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

from medscope import layout, records, storage
from tests import multinode_driver as drv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET = "medscope-multinode"
RUN_VOLATILE = ("latency_s",)  # an episode's wall time: the only run-specific column


def _table_bytes(uri: str) -> bytes:
    return storage.read_bytes(uri)


def _parts(folder: str) -> dict[str, bytes]:
    return {f.rsplit("/", 1)[-1]: storage.read_bytes(f) for f in storage.list_files(folder, suffix=".parquet")}


def _collect(out: str) -> dict:
    """Everything the comparisons need, read while the S3 server still holds it."""
    views, probe, ev, train = (storage.join(out, j) for j in ("views", "probe", "eval", "train"))
    vb, pb = layout.ViewsBuild(views), layout.ProbeBuild(probe)
    episodes = records.read_table("episodes", layout.EvalRun(ev).episodes)
    episodes = episodes.take(pc.sort_indices(episodes, [("request_key", "ascending")]))
    return {
        "views": {"views": _table_bytes(vb.views), "rejects": _table_bytes(vb.rejects),
                  "qc_report": storage.read_text(vb.qc_report),
                  "rows": records.read_table("views", vb.views, columns=["view_id", "case_id"]).to_pylist(),
                  "parts": sorted(_parts(storage.join(views, "parts", "views")))},
        "probe": {"slices": _table_bytes(pb.slices), "rejects": _table_bytes(pb.rejects),
                  "stats": storage.read_text(pb.cohort_stats), "items": _parts(pb.probe_items),
                  "item_ids": records.read_table("probe_items", pb.probe_items).column("item_id").to_pylist()},
        "eval": {"rows": episodes.drop_columns(list(RUN_VOLATILE)).to_pylist(),
                 "keys": episodes.column("request_key").to_pylist()},
        "train": {"log": drv.train_log(train),
                  "summary": json.loads(storage.read_text(layout.TrainRun(train).summary))},
    }


@pytest.fixture(scope="module")
def runs(ray_cluster, s3_server, tmp_path_factory, torch_one_thread):
    """The single-node reference (this session's Ray, local disk) and the three-node run with a
    lost node per job (a subprocess, outputs on S3); returns both, read back, and the timings."""
    import boto3

    root = tmp_path_factory.mktemp("multinode")
    inputs = drv.write_inputs(str(root / "in"))
    with open(root / "in" / "inputs.json", "w") as fh:
        json.dump(inputs, fh)

    t0 = time.monotonic()
    single = str(root / "single")
    server = drv.provider()
    try:
        ref = {"views": drv.run_views(inputs, os.path.join(single, "views")),
               "probe": drv.run_probe(inputs, os.path.join(single, "probe")),
               "eval": drv.run_eval(inputs, os.path.join(single, "eval"), server),
               "train": drv.run_train(inputs, os.path.join(single, "train"))}
        ref["eval_requests"] = len(server.requests)
    finally:
        server.close()
    single_s = time.monotonic() - t0

    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    env = dict(os.environ, PYTHONPATH=REPO, AWS_ENDPOINT_URL=s3_server)
    env.pop("RAY_ADDRESS", None)  # the driver starts its own cluster
    t1 = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tests", "multinode_driver.py"),
                           "--inputs", str(root / "in"), "--out", f"s3://{BUCKET}/run"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    multi_s = time.monotonic() - t1
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("MULTINODE-REPORT ")]
    assert proc.returncode == 0 and lines, f"driver failed ({proc.returncode}):\n{proc.stderr[-6000:]}"
    report = json.loads(lines[-1].split(" ", 1)[1])

    before = os.environ.get("AWS_ENDPOINT_URL")
    os.environ["AWS_ENDPOINT_URL"] = s3_server
    storage.configure(s3_endpoint=None)
    try:
        multi = _collect(f"s3://{BUCKET}/run")
    finally:
        if before is None:
            os.environ.pop("AWS_ENDPOINT_URL", None)
        else:
            os.environ["AWS_ENDPOINT_URL"] = before
        storage.configure(s3_endpoint=None)
    print(f"\nmultinode: single-node reference {single_s:.1f}s, three nodes with a lost node {multi_s:.1f}s "
          f"(cluster start {report['cluster_start_s']}s; jobs "
          + ", ".join(f"{j} {report[j]['seconds']}s" for j in ("views", "probe", "eval", "train")) + ")")
    return {"single": _collect(single), "ref": ref, "multi": multi, "report": report,
            "times": {"single_s": single_s, "multi_s": multi_s}}


def _killed_mid_job(report: dict, job: str) -> dict:
    kill = report[job]["kill"]
    assert kill["killed"], f"{job}: no worker node was running its work to kill: {kill}"
    # the node went after the job started and before it ended: it was lost mid-job
    assert kill["kill_after_start_s"] > 0 and kill["end_after_kill_s"] > 0
    return kill


def test_cluster_had_three_nodes_with_their_own_resources(runs):
    nodes = runs["report"]["nodes"]
    assert len(nodes) == 3
    assert sorted(r.get("CPU", 0.0) for r in nodes.values()) == [0.0, 1.0, 1.0]
    assert sum(any(k.startswith("medscope_worker") for k in r) for r in nodes.values()) == 2


def test_views_build_survives_a_lost_node_byte_identical(runs):
    kill = _killed_mid_job(runs["report"], "views")
    assert 1 <= kill["finished_before_kill"] < drv.N_CASES  # parts written before the node went
    single, multi = runs["single"]["views"], runs["multi"]["views"]
    assert multi["views"] == single["views"] and multi["rejects"] == single["rejects"]
    assert multi["qc_report"] == single["qc_report"]
    ids = [r["view_id"] for r in multi["rows"]]
    assert len(ids) == len(set(ids)) == runs["ref"]["views"]["views"] > 0
    assert len(multi["parts"]) == drv.N_CASES  # one part per case: none lost, none twice
    assert runs["report"]["views"]["summary"]["built_now"] == drv.N_CASES


def test_probe_build_survives_a_lost_node_byte_identical(runs):
    _killed_mid_job(runs["report"], "probe")
    single, multi = runs["single"]["probe"], runs["multi"]["probe"]
    assert multi["slices"] == single["slices"] and multi["rejects"] == single["rejects"]
    assert multi["stats"] == single["stats"]
    assert multi["items"] == single["items"]  # the same part files, byte for byte
    assert len(multi["items"]) == runs["ref"]["probe"]["volumes_used"] == drv.N_VOLUMES
    assert len(multi["item_ids"]) == len(set(multi["item_ids"])) == runs["ref"]["probe"]["items_written"] > 0


def test_eval_sweep_survives_a_lost_node_without_rebilling_finished_units(runs):
    kill = _killed_mid_job(runs["report"], "eval")
    units = drv.N_ITEMS * len(drv.CONDITIONS)
    summary = runs["report"]["eval"]["summary"]
    finished_before = set(kill["finished_before_kill"])
    assert 3 <= len(finished_before) < units
    # same episodes as on one node (wall time aside), one per unit
    single, multi = runs["single"]["eval"], runs["multi"]["eval"]
    assert multi["rows"] == single["rows"]
    assert len(multi["keys"]) == len(set(multi["keys"])) == units
    per_unit = summary["requests_per_unit"]
    assert set(per_unit) == set(multi["keys"]) and all(n >= 1 for n in per_unit.values())
    # a unit whose episode was written before the kill was requested once, before the kill;
    # only units in flight on the lost node were sent again
    for key in finished_before:
        assert per_unit[key] == 1 and all(t < 0 for t in summary["request_times_after_kill"][key])
    resent = {k: n for k, n in per_unit.items() if n > 1}
    assert not set(resent) & finished_before
    assert summary["requests_total"] == units + sum(n - 1 for n in resent.values())
    assert len(resent) <= 2 * 2  # at most the lost node's share: one actor x its 2 request slots
    assert runs["ref"]["eval_requests"] == units  # the single-node run sent each unit once
    assert summary["failed"] == summary["retry_later"] == 0


def test_training_resumes_from_its_last_checkpoint_after_a_lost_node(runs):
    kill = _killed_mid_job(runs["report"], "train")
    summary = runs["multi"]["train"]["summary"]
    log = runs["multi"]["train"]["log"]
    resumed = summary["resumed_from"]
    assert summary["steps"] == drv.TRAIN_STEPS
    # resumed from a checkpoint (every 2 steps) at or after the one seen before the kill, not from 0
    assert resumed >= kill["finished_before_kill"]["step"] >= 2 and resumed % 2 == 0 and resumed < drv.TRAIN_STEPS
    # the step log: every step once, the first attempt's up to the checkpoint, the rest by the resumed one
    assert [r["step"] for r in log] == list(range(1, drv.TRAIN_STEPS + 1))
    assert [r["resumed_from"] for r in log] == [0] * resumed + [resumed] * (drv.TRAIN_STEPS - resumed)
    # the single-node run never resumed, and the resumed run trained the same steps
    ref_log = runs["single"]["train"]["log"]
    assert [r["resumed_from"] for r in ref_log] == [0] * drv.TRAIN_STEPS
    assert [r["lr"] for r in log] == [r["lr"] for r in ref_log]
    assert [r["loss"] for r in log] == pytest.approx([r["loss"] for r in ref_log], rel=1e-4)
