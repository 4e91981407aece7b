"""The workstation runbook on a shared machine: stop-local-head.sh stops the head that
start-local-head.sh started and no other process; cluster/ray.sh sets token auth as submit.sh
does and points status at the recorded head; a dashboard RAY_ADDRESS does not break direct verbs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

from tests.conftest import REPO_ROOT

BARE_PATH = "/usr/bin:/bin"


def _checkout(tmp_path, fake_ray: str):
    root = tmp_path / "checkout"
    (root / "cluster").mkdir(parents=True)
    for name in ("start-local-head.sh", "stop-local-head.sh", "ray.sh"):
        shutil.copy(os.path.join(REPO_ROOT, "cluster", name), root / "cluster" / name)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "ray").write_text(f"#!{sys.executable}\n{fake_ray}")
    (bin_dir / "ray").chmod(0o755)
    return root


def _run(root, script, *args, **env):
    base = {"PATH": BARE_PATH, "HOME": str(root), "TMPDIR": str(root), **env}
    return subprocess.run(["bash", str(root / "cluster" / script), *args], env=base, capture_output=True,
                          text=True, timeout=120)


# a stand-in for `ray start --head`: leaves a daemon (named like Ray's) in the caller's process
# group, as Ray's GCS and raylet stay behind when `ray start` returns, and writes its pid
HEAD = """import os, subprocess, sys
def start(name, **kw):
    return subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(60)", name],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
daemon = start("raylet-stand-in")
worker = start("ray-worker-stand-in", process_group=0)  # Ray's workers lead groups of their own
open(os.environ["SEEN"], "w").write(f"{os.getpid()} {os.getpgid(0)} {daemon.pid} {worker.pid}")
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not yet reaped) is not alive
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_stop_script_stops_its_own_head_and_nothing_else(tmp_path):
    root = _checkout(tmp_path, HEAD)
    seen = tmp_path / "seen"
    # someone else's Ray on the machine: a process ray stop would have stopped
    other = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(60)", "ray-of-another-user"],
                             start_new_session=True)
    daemon = worker = None
    try:
        r = _run(root, "start-local-head.sh", RAY_AUTH_MODE="disabled", SEEN=str(seen))
        assert r.returncode == 0, r.stderr
        start_pid, start_pgid, daemon, worker = map(int, seen.read_text().split())
        assert start_pgid == start_pid  # `ray start` led a process group of its own
        state = (root / f"medscope-head-{os.getuid()}-8265").read_text()
        assert f"HEAD_PGID={start_pgid}\n" in state and "GCS_ADDRESS=127.0.0.1:6379" in state
        assert "stop-local-head.sh" in r.stdout
        assert _alive(daemon) and _alive(worker) and os.getpgid(worker) != start_pgid
        r = _run(root, "stop-local-head.sh")
        assert r.returncode == 0, r.stderr
        assert not _alive(daemon) and not _alive(worker) and _alive(other.pid)
        assert not (root / f"medscope-head-{os.getuid()}-8265").exists()
        # nothing recorded any more: a second stop stops nothing and says so
        r = _run(root, "stop-local-head.sh")
        assert r.returncode == 1 and "nothing stopped" in r.stderr
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
        for pid in (daemon, worker):
            if pid and _alive(pid):
                os.kill(pid, signal.SIGKILL)


RECORDER = """import json, os, sys
json.dump({"argv": sys.argv[1:], "auth": os.environ.get("RAY_AUTH_MODE"), "address": os.environ.get("RAY_ADDRESS")},
          open(os.environ["SEEN"], "w"))
"""


def test_ray_wrapper_sends_the_token_and_asks_status_of_the_recorded_head(tmp_path):
    root = _checkout(tmp_path, RECORDER)
    seen = tmp_path / "seen.json"
    (root / ".ray").mkdir()
    (root / ".ray" / "auth_token").write_text("t")
    r = _run(root, "ray.sh", "job", "logs", "--follow", "medscope-demo-1", SEEN=str(seen),
             RAY_ADDRESS="http://127.0.0.1:8265")
    assert r.returncode == 0, r.stderr
    got = json.loads(seen.read_text())
    assert got == {"argv": ["job", "logs", "--follow", "medscope-demo-1"], "auth": "token",
                   "address": "http://127.0.0.1:8265"}
    # status reads the GCS: the recorded head's, not the dashboard's address
    (root / f"medscope-head-{os.getuid()}-8265").write_text("HEAD_PGID=1\nGCS_ADDRESS=127.0.0.1:6379\n")
    r = _run(root, "ray.sh", "status", SEEN=str(seen), RAY_ADDRESS="http://127.0.0.1:8265", RAY_AUTH_MODE="disabled")
    assert r.returncode == 0, r.stderr
    assert json.loads(seen.read_text()) == {"argv": ["status"], "auth": "disabled", "address": "127.0.0.1:6379"}
    (root / f"medscope-head-{os.getuid()}-8265").unlink()
    r = _run(root, "ray.sh", "status", SEEN=str(seen), RAY_ADDRESS="http://127.0.0.1:8265")
    assert r.returncode == 2 and "RAY_ADDRESS=HOST:6379" in r.stderr


def test_a_dashboard_address_is_set_aside_for_direct_verbs_in_one_line(monkeypatch, capsys):
    from pipelines.support import raycluster

    assert raycluster.driver_address("127.0.0.1:6379") == ("127.0.0.1:6379", None)
    assert raycluster.driver_address(None) == (None, None)
    address, note = raycluster.driver_address("http://alice:pw@10.0.0.5:8265")
    assert address is None and "pw" not in note
    assert note == ("medscope: RAY_ADDRESS=http://***@10.0.0.5:8265 is a dashboard address, for `ray job submit` / "
                    "cluster/submit.sh; this command starts its own local Ray (to run it on that head: "
                    "RAY_ADDRESS=10.0.0.5:6379, its GCS port)")
    # ensure_ray with the runbook's RAY_ADDRESS: a local Ray (ray.init recorded, none started), the note once
    calls = []
    monkeypatch.setattr(raycluster.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(raycluster.ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setenv("RAY_ADDRESS", "http://127.0.0.1:8265")
    monkeypatch.setenv("MEDSCOPE_VERBOSE", "1")  # no stderr redirection around ray.init
    raycluster.ensure_ray(num_cpus=1)
    assert calls[0]["address"] == "local" and calls[0]["num_cpus"] == 1
    err = capsys.readouterr().err
    assert err.count("is a dashboard address") == 1 and "RAY_ADDRESS=127.0.0.1:6379" in err


def test_a_script_already_leading_its_session_keeps_the_head_in_it(tmp_path):
    # as tests/cluster/test_scripts.py starts it (start_new_session): the head stays in the
    # caller's session, so killing that process group still ends it
    root = _checkout(tmp_path, HEAD)
    seen = tmp_path / "seen"
    env = {"PATH": BARE_PATH, "HOME": str(root), "TMPDIR": str(root), "RAY_AUTH_MODE": "disabled", "SEEN": str(seen)}
    proc = subprocess.Popen(["bash", str(root / "cluster" / "start-local-head.sh")], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(timeout=120) == 0
    _, start_pgid, daemon, worker = map(int, seen.read_text().split())
    try:
        assert start_pgid == proc.pid and os.getpgid(daemon) == proc.pid
        assert f"HEAD_PGID={proc.pid}\n" in (root / f"medscope-head-{os.getuid()}-8265").read_text()
        assert _run(root, "stop-local-head.sh").returncode == 0
        assert not _alive(daemon) and not _alive(worker)
    finally:
        for pid in (daemon, worker):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_ray_address_where_no_head_listens_is_one_line_not_a_hang(monkeypatch):
    # issue 51 (sixth campaign): RAY_ADDRESS=127.0.0.1:9 held `eval run` past 150 s (ray.init retries)
    import socket

    import pytest

    from medscope.errors import MedScopeError
    from pipelines.support import raycluster

    calls = []
    monkeypatch.setattr(raycluster.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(raycluster.ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setenv("MEDSCOPE_VERBOSE", "1")  # no stderr redirection around ray.init
    with socket.socket() as bound:  # bound, never listening: a connection to it is refused at once
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        for address in (f"127.0.0.1:{port}", f"ray://alice:pw@127.0.0.1:{port}"):
            monkeypatch.setenv("RAY_ADDRESS", address)
            with pytest.raises(MedScopeError) as err:
                raycluster.ensure_ray(num_cpus=1)
            shown = address.replace("alice:pw", "***")
            assert str(err.value) == (f"RAY_ADDRESS={shown}: no Ray head there (Connection refused); start the "
                                      "head (`ray start --head`), or unset RAY_ADDRESS to run on a local Ray")
    assert calls == []  # nothing waited on ray.init
    with socket.socket() as head:  # something listening there: the driver attaches as before
        head.bind(("127.0.0.1", 0))
        head.listen(1)
        there = f"127.0.0.1:{head.getsockname()[1]}"
        monkeypatch.setenv("RAY_ADDRESS", there)
        raycluster.ensure_ray(num_cpus=1)
    assert calls[0]["address"] == there
