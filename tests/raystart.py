"""Start a Ray node in a test without failing on a slow start.

Ray's start-up has fixed deadlines that a loaded machine exceeds, and the test would fail for a
reason that has nothing to do with what it checks: a starting raylet has 30 s to register with
the GCS (``ray._private.node``), and the raylet waits 15-30 s for its agents to report the ports
they bound, then aborts. ``started`` runs a Ray start with the first made patient (Ray's
node-info lookup, ``ray._private.services.get_node``, retried for up to ``REGISTER_LIMIT_S``),
the agents' ports chosen up front (so the raylet has nothing to wait for), the raylet's
configurable waits raised, and, should Ray still give up, tries the start again, ending the
processes the failed try left behind.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time

SLOW_START = "timed out during startup"
REGISTER_LIMIT_S = 180.0  # a hang guard: a node that has not registered by then is broken
# the raylet's own waits, read from its environment (inherited from here): for its agents
# (dashboard / metrics agent) to report their ports -- at a load average of ~40 the default ran
# out and the raylet aborted ("Timed out waiting for file .../metrics_agent_port") -- and for a
# worker process it started to register (60 s by default; a late worker is killed and started again)
AGENT_WAIT_ENV = {"RAY_agent_register_timeout_ms": "600000", "RAY_worker_register_timeout_seconds": "600"}


def patient_environment() -> None:
    """Set Ray's agent and worker waits for the nodes this process starts (before they start)."""
    for key, value in AGENT_WAIT_ENV.items():
        os.environ.setdefault(key, value)


@contextlib.contextmanager
def patient_registration(limit_s: float = REGISTER_LIMIT_S):
    """While active, Ray's lookup of a starting node's info waits up to ``limit_s`` for the
    node to register instead of failing at once (Ray calls it in a 30 s loop)."""
    import ray._private.services as services

    original = services.get_node

    def get_node(gcs_address, node_id, *args, **kwargs):
        end = time.monotonic() + limit_s
        while True:
            try:
                return original(gcs_address, node_id, *args, **kwargs)
            except RuntimeError:  # not registered yet, or the GCS too busy to say
                if time.monotonic() > end:
                    raise
                time.sleep(0.5)

    # The raylet waits a fixed 15-30 s (not configurable) for its metrics and runtime-env agents
    # to write the ports they bound to a file, and aborts the node when they are slower (seen at
    # load ~40); ports chosen up front are handed to the agents instead, and nothing waits.
    from ray._private.parameter import RayParams

    params_init = RayParams.__init__

    def init(self, *args, **kwargs):
        params_init(self, *args, **kwargs)
        names = [n for n in ("metrics_agent_port", "metrics_export_port", "runtime_env_agent_port",
                             "dashboard_agent_listen_port") if not getattr(self, n, None)]
        for name, port in zip(names, _free_ports(len(names))):
            setattr(self, name, port)

    services.get_node, RayParams.__init__ = get_node, init
    try:
        yield
    finally:
        services.get_node, RayParams.__init__ = original, params_init


def _free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: every socket stays bound until all are chosen, since a port
    released at once can come back from the next bind (seen: two agents handed one port, and
    Ray refused the node)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def started(make, what: str, attempts: int = 3, cleanup=None):
    """``make()`` (a Ray start) with a patient registration wait, up to ``attempts`` times while
    Ray still reports a slow start; ``cleanup()`` runs after a failed try (e.g. ``ray.shutdown``)."""
    import psutil

    patient_environment()
    for attempt in range(1, attempts + 1):
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        try:
            with patient_registration():
                return make()
        except Exception as err:  # noqa: BLE001 - Ray raises a bare Exception for this
            if attempt == attempts or SLOW_START not in str(err):
                raise
            print(f"starting {what}: Ray gave up on a slow start ({err}); try {attempt + 1} of {attempts}",
                  file=sys.stderr, flush=True)
            if cleanup is not None:
                cleanup()
            for proc in psutil.Process().children(recursive=True):
                if proc.pid not in before:
                    try:
                        proc.kill()
                    except psutil.NoSuchProcess:
                        pass
