"""Shared fixtures: one real local Ray cluster per session and a real S3 server on loopback."""

from __future__ import annotations

import os
import socket
import urllib.request

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Credentials for the loopback S3 server only; never real ones.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
os.environ.pop("RAY_ADDRESS", None)
# Every Ray the suite starts (the session's, the three nodes, `ray start` heads, `bench scale`'s
# clusters, the docs' blocks) starts its workers at nice 0, not Ray's default 15. Ray lowers its
# workers so that a node's own services stay responsive; here the workers are the work under test,
# and beside two nice-0 busy loops on two cores (the loaded run, docs/testing.md) the scheduler
# gives a nice-15 worker ~3 % of a core (weights 36 against 1,024): the workstation runbook then
# took 30 minutes once and failed at about its 40-minute hang guard once. Niceness changes only
# how the kernel shares the CPUs, never what a test checks; a setting already set is kept.
os.environ.setdefault("RAY_worker_niceness", "0")


_PORTS_HANDED_OUT: set[int] = set()
# Under pytest-xdist each worker takes only the ports of its own residue, so two workers never
# hand out the same port (one worker's closed port can be the next bind(0) of the other).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)


def free_port() -> int:
    """A loopback port free now and not handed out before in this run, by any worker.

    The kernel may give the same free port to two bind(0) calls once the first socket is
    closed; a Ray head started with two equal ports exits at once ("used by other components").
    """
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # port // 2: Linux hands bind(0) odd ports first (it keeps the even ones for connect())
        if port not in _PORTS_HANDED_OUT and (port // 2) % _WORKERS == _WORKER:
            _PORTS_HANDED_OUT.add(port)
            return port


# The suite runs on two pytest-xdist workers (`-n 2`, pyproject.toml); which tests go where:
from tests import xdist_split  # noqa: E402
from tests.xdist_split import pytest_xdist_make_scheduler  # noqa: E402,F401


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: `-m "not ray"` sees the marks set here
def pytest_collection_modifyitems(config, items):
    """Mark ``ray`` every test whose fixture closure holds ``ray_cluster`` (the session's Ray); tests
    that start Ray another way (a `ray start` head, three nodes, `bench scale`) carry the mark by
    hand. Then order the items for the two workers (tests/xdist_split.py)."""
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
    xdist_split.pytest_collection_modifyitems(config, items)


@pytest.fixture(scope="session")
def ray_cluster():
    """A real local Ray cluster with two CPUs, shared by every test of the session."""
    import ray

    from pipelines.support.raycluster import ensure_ray

    from tests.fixtures.raystart import started

    # workers at nice 0 (RAY_worker_niceness, set above for every Ray of the session)
    started(lambda: ensure_ray(num_cpus=2), "the session's Ray", cleanup=ray.shutdown)  # again if Ray's 30 s start limit runs out
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3-compatible server on a loopback port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(s3_server, monkeypatch):
    """A fresh bucket on the loopback S3 server (server state reset per test); yields s3://bucket."""
    import boto3

    from medscope.io import storage

    urllib.request.urlopen(urllib.request.Request(f"{s3_server}/moto-api/reset", method="POST"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    storage.configure(s3_endpoint=None)  # forget cached filesystems bound to older endpoints
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket="medscope-test")
    yield "s3://medscope-test"
    storage.configure(s3_endpoint=None)


@pytest.fixture(scope="module")
def torch_one_thread():
    """Tiny models run far faster on one thread than on two contended ones (shared CI cores)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
