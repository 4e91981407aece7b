"""The three-node run of tests/test_multinode.py, started as soon as the session's tests are
collected (tests/conftest.py) and read by that file's fixtures when its turn comes.

Why in the background: the run is one subprocess (tests/multinode_driver.py) that starts a
three-node Ray cluster and runs four jobs, each held at a gate until a node is lost. On an idle
2-core machine it took ~100 s of wall time with one core idle 90 % of it (tests/cpu_use.py:
92 idle CPU-s). pytest itself is one process, so while the small tests run one core is mostly
free; the driver uses it. What the file checks does not change: the same driver, the same
events, the same comparisons with one node, only started earlier. Every wait in the driver is
for an event (issue 30), so the suite running beside it is load it was built to take.

Its outputs go to a moto server of its own, in a process of its own: the session's server is
reset by every test that takes ``s3_bucket``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from medscope.testing.gate import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUCKET = "medscope-multinode"
# a hang guard only: a loaded 2-core machine took 1,647 s for the four jobs
HANG_GUARD_S = 3400.0

_MOTO = """
import sys
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(sys.argv[1]), verbose=False)
server.start()
sys.stdin.read()  # until the suite closes this pipe, or exits
server.stop()
"""


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
    except urllib.error.HTTPError:
        pass  # an HTTP answer all the same
    except OSError:
        return False
    return True


class MultinodeRun:
    """The driver run in the background: ``start`` returns at once, ``result`` waits for it."""

    def __init__(self, port: int):
        self.root = tempfile.mkdtemp(prefix="medscope-multinode-")
        self.inputs = os.path.join(self.root, "in")
        self.endpoint = f"http://127.0.0.1:{port}"
        self.out = f"s3://{BUCKET}/run"
        self._port = port
        self._moto = self._driver = None
        self._result: dict | None = None

    def start(self) -> "MultinodeRun":
        import boto3

        from tests.multinode_driver import DEADLINE_S

        self._moto = subprocess.Popen([sys.executable, "-c", _MOTO, str(self._port)], stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self._moto.poll() is not None or _answers(self.endpoint),
                 f"the multinode run's S3 server at {self.endpoint} to answer", deadline_s=600)
        if self._moto.poll() is not None:
            raise RuntimeError(f"the multinode run's S3 server exited with {self._moto.returncode}")
        boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
        env = dict(os.environ, PYTHONPATH=REPO, AWS_ENDPOINT_URL=self.endpoint,
                   # an S3 request held at the gate waits for the node loss, however long a busy
                   # machine takes: botocore's 60 s read timeout must not end it (and resend it)
                   # (the nodes' workers at nice 0: RAY_worker_niceness, tests/conftest.py)
                   FSSPEC_S3_CONFIG_KWARGS=json.dumps({"read_timeout": 2 * DEADLINE_S}))
        env.pop("RAY_ADDRESS", None)  # the driver starts its own cluster
        self._stdout = open(os.path.join(self.root, "driver.out"), "w")
        self._stderr = open(os.path.join(self.root, "driver.err"), "w")
        self._t0 = time.monotonic()
        self._driver = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "multinode_driver.py"), "--write-inputs",
             "--inputs", self.inputs, "--out", self.out],
            cwd=REPO, env=env, stdout=self._stdout, stderr=self._stderr, start_new_session=True)
        return self

    def result(self) -> dict:
        """The driver's exit status, its stdout and stderr and its wall time (started to ended)."""
        if self._result is None:
            try:
                self._driver.wait(timeout=HANG_GUARD_S)
            except subprocess.TimeoutExpired:
                self._stop_driver()
            seconds = time.monotonic() - self._t0
            self._stdout.close()
            self._stderr.close()
            read = lambda name: open(os.path.join(self.root, name)).read()  # noqa: E731
            self._result = {"returncode": self._driver.returncode, "stdout": read("driver.out"),
                            "stderr": read("driver.err"), "seconds": seconds}
        return self._result

    def _stop_driver(self) -> None:
        """SIGINT first, so that the driver's ``finally`` stops its nodes; then whatever is left
        of its process group (a node's agents started while it stopped outlive it)."""
        if self._driver is None:
            return
        if self._driver.poll() is None:
            os.killpg(self._driver.pid, signal.SIGINT)
            try:
                self._driver.wait(timeout=120)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self._driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # nothing left
        self._driver.wait()

    def close(self) -> None:
        self._stop_driver()
        if self._moto is not None and self._moto.poll() is None:
            self._moto.stdin.close()
            try:
                self._moto.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._moto.kill()
                self._moto.wait()
        shutil.rmtree(self.root, ignore_errors=True)
