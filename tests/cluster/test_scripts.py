"""cluster/start-local-head.sh + cluster/submit.sh as docs/cluster.md writes them, against a real
Ray head on loopback ports, with Ray 2.60's token auth on (a ~/.ray/auth_token on the machine)
and off (RAY_AUTH_MODE=disabled); a relative out: is refused inside the job, OUT= is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from medscope.io import records
from tests.conftest import REPO_ROOT, free_port
from tests.cluster.test_submit import _wait_for_dashboard, stop_head

VENV_BIN = os.path.dirname(sys.executable)


def _start_head(env: dict) -> tuple[subprocess.Popen, str]:
    """The script as written, plus --block and free loopback ports (other heads share this box)."""
    gcs, dash = free_port(), free_port()
    env = dict(env, RAY=os.path.join(VENV_BIN, "ray"), GCS_PORT=str(gcs), DASHBOARD_PORT=str(dash), NUM_CPUS="1")
    temp_dir = tempfile.mkdtemp(prefix="rh", dir="/tmp")
    log = os.path.join(temp_dir, "head.log")
    extra = ["--block", "--temp-dir", temp_dir,
             "--ray-client-server-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
             "--metrics-export-port", str(free_port()), "--runtime-env-agent-port", str(free_port())]
    proc = subprocess.Popen(["bash", os.path.join(REPO_ROOT, "cluster", "start-local-head.sh"), *extra], env=env,
                            start_new_session=True, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{dash}"
    try:
        _wait_for_dashboard(url, proc, log=log)
    except BaseException:
        stop_head(proc)
        raise
    return proc, url


def _submit(env: dict, url: str, config: str, out: str | None = None) -> subprocess.CompletedProcess:
    env = dict(env, RAY_ADDRESS=url, RAY=os.path.join(VENV_BIN, "ray"))
    if out:
        env["OUT"] = out
    return subprocess.run(["bash", os.path.join(REPO_ROOT, "cluster", "submit.sh"), "cohort", config],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.ray  # starts its own `ray start` heads
def test_local_head_and_submit_script_with_token_auth_on_and_off(tmp_path):
    base = {k: v for k, v in os.environ.items()
            if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    base["PATH"] = f"{VENV_BIN}:{base['PATH']}"  # the job's `python` is the project's
    token_home, plain_home = tmp_path / "home-token", tmp_path / "home-plain"
    (token_home / ".ray").mkdir(parents=True)
    (token_home / ".ray" / "auth_token").write_text("a" * 32)
    plain_home.mkdir()
    config = tmp_path / "phantom.yaml"  # as configs/cohort/phantom.yaml, smaller: out: is relative
    config.write_text("format: phantom\nout: demo-out/cohort\ncases: 4\nvolumes: 0\n")
    config = str(config)

    # token auth on: a head started where ~/.ray/auth_token exists
    proc, url = _start_head(dict(base, HOME=str(token_home)))
    try:
        refused = _submit(dict(base, HOME=str(plain_home)), url, config, out=str(tmp_path / "never"))
        assert refused.returncode != 0 and not (tmp_path / "never").exists()
        assert "Authentication" in refused.stderr  # no token on the client side: refused
        kept = tmp_path / "kept-token"
        ok = _submit(dict(base, HOME=str(token_home)), url, config, out=str(kept))
        assert ok.returncode == 0, (ok.stdout + ok.stderr)[-3000:]
        assert f"medscope: results in {kept}" in ok.stdout + ok.stderr
        assert records.read_table("cases", str(kept / "cases.parquet")).num_rows == 4
        # the config's relative out: would land in Ray's copy of the working dir: refused
        lost = _submit(dict(base, HOME=str(token_home)), url, config)
        assert lost.returncode != 0
        assert "absolute path" in lost.stdout + lost.stderr and "runtime_resources" in lost.stdout + lost.stderr
    finally:
        stop_head(proc)

    # token auth off, explicitly (RAY_AUTH_MODE=disabled), even where the token file exists
    off = dict(base, HOME=str(token_home), RAY_AUTH_MODE="disabled")
    proc, url = _start_head(off)
    try:
        kept = tmp_path / "kept-plain"
        ok = _submit(dict(base, HOME=str(plain_home)), url, config, out=str(kept))
        assert ok.returncode == 0, (ok.stdout + ok.stderr)[-3000:]
        assert records.read_table("cases", str(kept / "cases.parquet")).num_rows == 4
    finally:
        stop_head(proc)
