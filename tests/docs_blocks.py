"""The shell blocks of README.md and docs/*.md, and a fresh copy of the checkout to run them in.

Fence convention (COORD): ```bash run  -> run as written by tests/test_docs_blocks.py;
```bash gpu / cloud / data (and a plain ```bash) -> `bash -n` syntax check only.
A block runs in a copy of the checkout's files (what `git clone` of a committed tree gives),
with the venv reachable as `.venv` but NOT activated (PATH without its bin/), in its own PID and
network namespace where `unshare` allows: fixed ports (8265, 6379, a local server's :8000) and
`ray stop` then touch nothing else on a shared machine.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile

from tests.conftest import REPO_ROOT

MARKERS = ("run", "gpu", "cloud", "data", "")
_FENCE = re.compile(r"^(\s*)```bash(?:[ \t]+(\S+))?[ \t]*$")
_CLOSE = re.compile(r"^\s*```\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    path: str  # relative to the repo root
    line: int  # 1-based line of the opening fence
    marker: str  # one of MARKERS (unknown markers are kept, to be reported)
    text: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def doc_files(root: str = REPO_ROOT) -> list[str]:
    docs = sorted(f"docs/{n}" for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".md"))
    return ["README.md", *docs]


def shell_blocks(root: str = REPO_ROOT) -> list[Block]:
    """Every ```bash block of README.md and docs/*.md, indentation of the fence removed."""
    blocks = []
    for rel in doc_files(root):
        lines = open(os.path.join(root, rel), encoding="utf-8").read().splitlines()
        i = 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            indent, start, body = len(m.group(1)), i + 1, []
            i += 1
            while i < len(lines) and not _CLOSE.match(lines[i]):
                body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i].lstrip())
                i += 1
            blocks.append(Block(rel, start, m.group(2) or "", "\n".join(body) + "\n"))
            i += 1
    return blocks


def fresh_copy(dest: str, root: str = REPO_ROOT) -> str:
    """The files a clone of the checkout holds (tracked plus untracked-not-ignored, as in the
    working tree, so uncommitted edits are tested too), with `.venv` linked to this venv."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src, dst = os.path.join(root, rel), os.path.join(dest, rel)
        if not os.path.lexists(src):
            continue  # deleted in the working tree, not yet committed
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    os.symlink(sys.prefix, os.path.join(dest, ".venv"))
    return dest


def plain_env(clone: str, tmp: str) -> dict:
    """A shell where nothing is activated: the venv's bin/ off PATH, no VIRTUAL_ENV, no Ray address.
    PYTHONPATH=<clone> stands in for the editable install a real fresh clone makes of itself
    (the shared venv's editable install points at another checkout)."""
    venv_bin = os.path.join(sys.prefix, "bin")
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":")
            if p and os.path.realpath(p) != os.path.realpath(venv_bin)]
    # the machine's settings pass, as they would in the user's shell; RAY_worker_niceness among
    # them (tests/conftest.py sets it for every Ray of the suite)
    keep = ("HOME", "LANG", "LC_ALL", "USER", "LOGNAME", "TERM", "RAY_worker_niceness")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    os.makedirs(os.path.join(tmp, "t"), exist_ok=True)
    # Ray's socket paths live under RAY_TMPDIR and must stay under 107 bytes: a short folder of its own
    ray_tmp = tempfile.mkdtemp(prefix="rb", dir="/tmp")
    env.update(PATH=":".join(path), PYTHONPATH=clone, TMPDIR=os.path.join(tmp, "t"),
               RAY_TMPDIR=ray_tmp, MPLBACKEND="Agg")
    return env


def can_isolate() -> bool:
    """Whether this machine lets us run a block in its own PID + network namespace."""
    if not shutil.which("unshare"):
        return False
    r = subprocess.run(["unshare", "--pid", "--kill-child", "--mount-proc", "--net", "true"], capture_output=True)
    return r.returncode == 0


def run_block(text: str, clone: str, env: dict, timeout: float, prelude: str = "") -> subprocess.CompletedProcess:
    """`bash -e -o pipefail` on the block as written, in the clone; in a namespace of its own
    (loopback up) where the machine allows it, after `prelude` (e.g. starting a loopback server)."""
    script = os.path.join(clone, ".docs-block.sh")
    with open(script, "w") as f:
        f.write("set -e -o pipefail\n" + text)
    inner = f"{prelude}\nbash {script}"
    argv = ["bash", "-c", inner]
    if can_isolate():
        argv = ["unshare", "--pid", "--kill-child", "--mount-proc", "--net", "bash", "-c", f"ip link set lo up\n{inner}"]
    return subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)
