"""A plain (non-editable) install runs the verbs from any directory.

The wheel is built from this checkout and installed with ``--no-deps`` into a fresh virtual
environment whose dependencies come from the project's environment by a path entry (so no
editable finder or checkout is on its path); every verb then runs from an empty directory,
so nothing may be read relative to the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("install")
    wheels = root / "wheels"
    # build from a copy: setuptools leaves build/ in the source tree and would reuse stale files
    src = root / "src"
    shutil.copytree(REPO_ROOT, src, symlinks=True,
                    ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__", "demo-out"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(src)], check=True, cwd=root, timeout=300)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies, without this checkout's editable finder (.pth files of an added path are not run)
    with open(os.path.join(site, "deps.pth"), "w") as fh:
        fh.write(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(wheels.glob("medscope-*.whl"))
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site, str(wheel)],
                   check=True, timeout=300, env=dict(os.environ, PYTHONPATH=sysconfig.get_paths()["purelib"]))
    work = root / "elsewhere"
    work.mkdir()
    return py, work, site


def _run(py, work, *args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    return subprocess.run([str(py), "-m", "pipelines.cli", *args], cwd=work, capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_installed_package_runs_verbs_from_another_directory(installed):
    py, work, site = installed
    where = subprocess.run([str(py), "-c", "import medscope, pipelines; print(medscope.__file__, pipelines.__file__)"],
                           cwd=work, capture_output=True, text=True, check=True).stdout
    assert where.count(site) == 2 and REPO_ROOT not in where
    r = _run(py, work, "cohort", "phantom", "--out", "cohort", "--cases", "12", "--volumes", "0")
    assert r.returncode == 0, r.stderr
    r = _run(py, work, "cohort", "show", "cohort")
    assert r.returncode == 0 and json.loads(r.stdout)["cases"]["n"] == 12, r.stdout + r.stderr
    # dataset defaults, prompts and cost matrices ship inside the package; a configs/ path given
    # on the command line resolves to the shipped copy when it is not in the working directory
    r = _run(py, work, "views", "build", "--cases", "cohort", "--out", "views", "--engine", "local",
             "--recipe", "configs/views/demo.yaml")
    assert r.returncode == 0, r.stderr
    r = _run(py, work, "views", "show", "views")
    assert r.returncode == 0 and "passed QC" in r.stdout, r.stderr
    r = subprocess.run([str(py), "-c", "from medscope.protocols.counterfactual import prompts, costs; "
                        "print(prompts.PROMPT_VERSION, costs.available())"], cwd=work, capture_output=True, text=True)
    assert r.returncode == 0 and "table2" in r.stdout, r.stderr
