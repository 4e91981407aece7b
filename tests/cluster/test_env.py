"""cluster/submit.sh and cluster/start-local-head.sh use the checkout's environment whatever the
caller's PATH: submit.sh finds .venv/bin/ray, and the head starts with that ray's bin/
first on PATH, because Ray runs a job's entrypoint `python` in the head's environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.conftest import REPO_ROOT

BARE_PATH = "/usr/bin:/bin"  # no venv, no ray


def _checkout(tmp_path):
    """The two scripts in a checkout whose .venv/bin/ray is a recorder of its argv and PATH."""
    root = tmp_path / "checkout"
    (root / "cluster").mkdir(parents=True)
    for name in ("submit.sh", "start-local-head.sh"):
        shutil.copy(os.path.join(REPO_ROOT, "cluster", name), root / "cluster" / name)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    seen = tmp_path / "seen.json"
    (bin_dir / "ray").write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                                 f"json.dump({{'argv': sys.argv[1:], 'path': os.environ['PATH']}}, open({str(seen)!r}, 'w'))\n")
    (bin_dir / "ray").chmod(0o755)
    return root, bin_dir, seen


def _run(root, script, *args, **env):
    base = {"PATH": BARE_PATH, "HOME": str(root), **env}
    return subprocess.run(["bash", str(root / "cluster" / script), *args], env=base, capture_output=True, text=True, timeout=60)


def test_submit_uses_the_checkouts_ray_with_nothing_on_path(tmp_path):
    root, _, seen = _checkout(tmp_path)
    r = _run(root, "submit.sh", "demo", "configs/demo.yaml", RAY_ADDRESS="http://127.0.0.1:1", OUT="/abs/out")
    assert r.returncode == 0, r.stderr
    argv = json.loads(seen.read_text())["argv"]
    assert argv[:2] == ["job", "submit"]
    assert argv[-8:] == ["--", "python", "-m", "pipelines.demo", "--config", "configs/demo.yaml", "--out", "/abs/out"]


def test_submit_without_any_ray_says_what_to_do(tmp_path):
    root, bin_dir, _ = _checkout(tmp_path)
    (bin_dir / "ray").unlink()
    r = _run(root, "submit.sh", "demo", "configs/demo.yaml", RAY_ADDRESS="http://127.0.0.1:1")
    assert r.returncode == 127 and "setup-env.sh" in r.stderr


def test_local_head_starts_with_the_environment_of_its_ray_first_on_path(tmp_path):
    root, bin_dir, seen = _checkout(tmp_path)
    r = _run(root, "start-local-head.sh", RAY_AUTH_MODE="disabled")
    assert r.returncode == 0, r.stderr
    got = json.loads(seen.read_text())
    assert got["argv"][:2] == ["start", "--head"]
    # the job's `python` (run by Ray on the head, in this environment) is the venv's
    assert got["path"].split(":")[0] == str(bin_dir) and got["path"].endswith(BARE_PATH)
