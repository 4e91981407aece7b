"""Connect to the Ray cluster named by ``RAY_ADDRESS``, or start a local one sized to this machine."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile

import ray

import pipelines
from medscope.errors import MedScopeError
from medscope.io.safe_text import redact_url

# The folder holding the medscope and pipelines packages (a checkout, or site-packages after
# a plain install): Ray workers of a local cluster get it on their path to import our code.
CODE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(pipelines.__file__)))
# addition: how long the driver waits for RAY_ADDRESS's head to accept a connection before saying it is not
# there (ray.init itself retries an absent head for minutes)
HEAD_CONNECT_TIMEOUT_S = 5.0


def ensure_ray(num_cpus: int | None = None) -> None:
    """Initialise Ray once per process.

    Under ``ray job submit`` (or with ``RAY_ADDRESS`` set) this attaches to that cluster;
    otherwise it starts a local Ray with every core of the machine (or ``num_cpus``) whose
    workers get this checkout on their ``PYTHONPATH``, so they import the driver's code. An
    ``http(s)://`` ``RAY_ADDRESS`` is a dashboard's, for ``ray job submit`` (docs/cluster.md's
    runbook exports one), which ``ray.init`` refuses: a direct verb then starts its own local
    Ray and says so in one line, naming the address to set to use that head instead
    (:func:`driver_address`).

    Parameters
    ----------
    num_cpus : int, optional
        CPUs of a local Ray (default: ``os.cpu_count()``); ignored when attaching to a cluster.
    """
    if ray.is_initialized():
        return
    verbose = is_verbose()
    if not verbose:
        _quiet_ray_loggers()
    # Quiet: Ray's own chatter (worker log lines forwarded to the driver, the Train
    # controller's state polling, Ray Data's per-dataset lines) stays in Ray's session logs
    # under /tmp/ray; MedScope prints its steps and progress. `--verbose` shows everything.
    quiet = {} if verbose else {"log_to_driver": False}
    level = logging.INFO if verbose else logging.ERROR
    address, note = driver_address(os.environ.get("RAY_ADDRESS"))
    if note:
        print(note, file=sys.stderr, flush=True)
    if address:
        require_head_reachable(address)
    with contextlib.nullcontext() if verbose else _init_lines_to_log():
        if address:
            # Under `ray job submit` the job's runtime_env (working_dir, env vars) already
            # reaches every worker; adding one here would replace it.
            ray.init(address=address, logging_level=level, **quiet)
        else:
            runtime_env = {"env_vars": {"PYTHONPATH": _pythonpath()}}
            # address="local" always starts a fresh local cluster, never attaching to a head
            # that `ray start` left on this machine.
            ray.init(
                address="local",
                num_cpus=num_cpus or os.cpu_count(),
                include_dashboard=False,
                runtime_env=runtime_env,
                logging_level=level,
                **quiet,
            )
    _quiet_ray_data()
    if not verbose:
        _quiet_ray_loggers()


def driver_address(env_address: str | None) -> tuple[str | None, str | None]:
    """The address a driver attaches to, from ``RAY_ADDRESS``, and a note when it is set aside.

    ``ray.init`` takes a GCS address (``HOST:6379``, ``auto``) or a client one (``ray://``); the
    dashboard's ``http://HOST:8265``, which ``ray job submit`` and ``cluster/submit.sh`` take, makes
    it fail with ``ValueError: Invalid Ray address``. Such an address is set aside for a direct
    verb (a local Ray is started), with a note saying what to set to use the head instead.

    Parameters
    ----------
    env_address : str or None
        The ``RAY_ADDRESS`` environment variable's value.

    Returns
    -------
    address : str or None
        The address to attach to; None to start a local Ray.
    note : str or None
        One line for stderr when an http(s) address was set aside; else None.
    """
    if not env_address:
        return None, None
    if env_address.startswith(("http://", "https://")):
        netloc = env_address.split("://", 1)[1].split("/", 1)[0].rpartition("@")[2]
        host = netloc.rsplit(":", 1)[0] if ":" in netloc else netloc
        return None, (f"medscope: RAY_ADDRESS={redact_url(env_address)} is a dashboard address, for `ray job submit` / "
                      f"cluster/submit.sh; this command starts its own local Ray (to run it on that head: "
                      f"RAY_ADDRESS={host}:6379, its GCS port)")
    return env_address, None


def require_head_reachable(address: str, timeout_s: float = HEAD_CONNECT_TIMEOUT_S) -> None:
    """Stop with one line when ``RAY_ADDRESS``'s head does not accept a connection.

    ``ray.init`` retries a ``HOST:PORT`` (or ``ray://HOST:PORT``) where nothing listens for minutes
    (a sweep with a stale ``RAY_ADDRESS`` held its terminal past 150 s, issue 51's sixth
    campaign); one TCP connection with a short timeout tells the same in seconds. ``auto`` (the head
    that ``ray start`` left on this machine) is left to Ray.

    Parameters
    ----------
    address : str
        The address the driver attaches to (:func:`driver_address`).
    timeout_s : float, optional
        Seconds to wait for the connection.

    Raises
    ------
    MedScopeError
        Naming ``RAY_ADDRESS`` (credentials redacted), why it failed, and the two ways on.
    """
    rest = address.split("://", 1)[1] if "://" in address else address
    netloc = rest.split("/", 1)[0].rpartition("@")[2]
    if address == "auto" or not netloc:
        return
    host, sep, port = netloc.rpartition(":")
    if not sep or not port.isdigit():
        host, port = netloc, "10001" if address.startswith("ray://") else "6379"  # Ray's default ports
    host = host.strip("[]")  # an IPv6 literal
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as err:
        why = "no answer within {:g} s".format(timeout_s) if isinstance(err, TimeoutError) else (
            getattr(err, "strerror", None) or str(err))
        raise MedScopeError(f"RAY_ADDRESS={redact_url(address)}: no Ray head there ({why}); start the head "
                            "(`ray start --head`), or unset RAY_ADDRESS to run on a local Ray") from None


@contextlib.contextmanager
def _init_lines_to_log():
    """Send what Ray's C++ core prints on stderr while it starts (e.g. "Set ray log level from
    environment variable ...") to a file instead of the console; errors still raise in Python,
    and the file is named if start-up fails."""
    log = os.path.join(tempfile.gettempdir(), f"medscope-ray-init-{os.getpid()}.log")
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # no real stderr (a notebook): nothing to hide
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with open(log, "w") as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield
        except Exception:
            os.dup2(saved, fd)
            print(f"medscope: Ray's start-up output is in {log}", file=sys.stderr)
            raise
        finally:
            os.dup2(saved, fd)
            os.close(saved)


def is_verbose() -> bool:
    """``medscope --verbose`` (or ``MEDSCOPE_VERBOSE=1``): Ray's own logs on the console too.

    Returns
    -------
    bool
        Whether ``MEDSCOPE_VERBOSE`` is set to anything but "" or "0".
    """
    return os.environ.get("MEDSCOPE_VERBOSE", "") not in ("", "0")


def _quiet_ray_loggers() -> None:
    # the C++ core workers print known-harmless actor notices at ERROR level to stderr;
    # failures still reach the driver as Python exceptions
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    for name in ("ray", "ray.data", "ray.train", "ray.tune", "ray._private", "ray.util"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _pythonpath() -> str:
    parts = [CODE_ROOT, os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def _quiet_ray_data() -> None:
    """Progress bars of Ray Data flood logs of non-interactive runs; keep ours instead."""
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False


def cluster_gpus() -> float:
    """GPUs the connected cluster holds (0 on a CPU machine).

    Returns
    -------
    float
        The cluster's ``GPU`` resource total.
    """
    return float(ray.cluster_resources().get("GPU", 0.0))
