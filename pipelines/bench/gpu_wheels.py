"""``cluster/gpu-check.sh --prepare DIR``: the wheels a bare GPU machine lacks for the GPU check.

The project's GPU machine has Python 3.12 with torch (CUDA), transformers, peft,
accelerate, opencv-python-headless, pyarrow, fsspec, numpy, scipy, pandas, scikit-image and
pytest, reaches no package index, and takes at most 64 MiB of files per command. The check's
code paths (pipelines/bench/gpu.py) need beyond those: pydantic (MedScope's configs), diffusers
(the ``sd`` tool) and DeepSpeed (ZeRO-2), with their own small requirements. They are fetched here
for the target's Python and platform at constraints.txt's pins; DeepSpeed, an sdist, is built into
a wheel with no compiled ops (DS_BUILD_OPS=0: what it needs is JIT-built on the GPU machine).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from medscope.errors import MedScopeError

LIMIT_BYTES = 64 * 2**20
TARGET = {"python_version": "3.12", "implementation": "cp", "abis": ["cp312", "abi3", "none"],
          "platforms": ["manylinux2014_x86_64", "manylinux_2_28_x86_64", "linux_x86_64"]}
# binary wheels for the target (pure-Python ones match any platform)
WHEELS = ("pydantic", "pydantic_core", "annotated-types", "typing-inspection",  # medscope.config
          "diffusers", "importlib_metadata", "zipp",  # the sd erasure tool
          "hjson", "einops", "msgpack", "py-cpuinfo", "ninja")  # DeepSpeed's requirements beyond torch's
SDISTS = ("deepspeed",)  # built here into a py3-none-any wheel


def canonical(name: str) -> str:
    """A distribution name in canonical form: runs of ``-``, ``_`` and ``.`` become ``-``, lower case.

    Parameters
    ----------
    name : str
        A distribution name.

    Returns
    -------
    str
        The canonical name.
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(constraints: str) -> dict[str, str]:
    """name (canonical) -> version, from a constraints file's ``name==version`` lines.

    Parameters
    ----------
    constraints : str
        Path of the constraints file.

    Returns
    -------
    dict of str to str
        {canonical name: pinned version}.
    """
    out = {}
    for line in open(constraints, encoding="utf-8"):
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([^\s#;]+)", line)
        if m:
            out[canonical(m.group(1))] = m.group(2)
    return out


def specs(names, pinned: dict[str, str]) -> list[str]:
    """``name==version`` for each name; a name with no pin anywhere is an error, not a drift.

    Parameters
    ----------
    names : iterable of str
        Distribution names.
    pinned : dict of str to str
        {canonical name: version}, as :func:`pins` returns.

    Returns
    -------
    list of str
        ``name==version`` for each name, in order.

    Raises
    ------
    MedScopeError
        When a name has no pin.
    """
    missing = [n for n in names if canonical(n) not in pinned]
    if missing:
        raise MedScopeError(f"no version pinned for {', '.join(missing)} in constraints.txt")
    return [f"{n}=={pinned[canonical(n)]}" for n in names]


def download_command(python: str, dest: str, wheel_specs: list[str], target: dict = TARGET) -> list[str]:
    """``pip download`` of binary wheels for the target's Python and platform, no dependencies
    (the list is complete: what the machine has is not fetched again).

    Parameters
    ----------
    python : str
        The Python executable that runs pip.
    dest : str
        Folder the wheels are downloaded to.
    wheel_specs : list of str
        ``name==version`` requirements.
    target : dict, optional
        ``python_version``, ``implementation``, ``abis`` and ``platforms`` of the target machine.

    Returns
    -------
    list of str
        The command's argv.
    """
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--python-version", target["python_version"], "--implementation", target["implementation"], "-d", dest]
    for abi in target["abis"]:
        cmd += ["--abi", abi]
    for plat in target["platforms"]:
        cmd += ["--platform", plat]
    return cmd + list(wheel_specs)


def build_command(python: str, dest: str, sdist_specs: list[str]) -> tuple[list[str], dict]:
    """``pip wheel`` of the sdists against this environment's torch, with no compiled ops.

    Parameters
    ----------
    python : str
        The Python executable that runs pip.
    dest : str
        Folder the built wheels go to.
    sdist_specs : list of str
        ``name==version`` requirements of the sdists.

    Returns
    -------
    argv : list of str
        The command.
    env : dict
        This process's environment with ``DS_BUILD_OPS=0``.
    """
    env = dict(os.environ, DS_BUILD_OPS="0")
    return [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
            "-w", dest, *sdist_specs], env


def folder_bytes(dest: str) -> dict[str, int]:
    """Every wheel in ``dest`` with its size in bytes.

    Parameters
    ----------
    dest : str
        The wheel folder.

    Returns
    -------
    dict of str to int
        {wheel file name: bytes}, sorted by name.
    """
    return {n: os.path.getsize(os.path.join(dest, n)) for n in sorted(os.listdir(dest)) if n.endswith(".whl")}


def check_size(sizes: dict[str, int], limit: int = LIMIT_BYTES) -> int:
    """The folder's total; over ``limit`` it is an error naming the largest wheels.

    Parameters
    ----------
    sizes : dict of str to int
        {wheel file name: bytes}, as :func:`folder_bytes` returns.
    limit : int, optional
        Most bytes the folder may hold.

    Returns
    -------
    int
        The total bytes.

    Raises
    ------
    MedScopeError
        When the total is over ``limit``.
    """
    total = sum(sizes.values())
    if total > limit:
        big = ", ".join(f"{n} {s / 2**20:.1f} MiB" for n, s in sorted(sizes.items(), key=lambda x: -x[1])[:3])
        raise MedScopeError(f"wheel folder is {total / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB a GPU run takes "
                            f"(largest: {big})")
    return total


def prepare(dest: str, python: str = sys.executable, constraints: str = "constraints.txt") -> dict:
    """Fill ``dest`` with the wheels and write ``wheels.json`` (files, sizes, total, target).

    Parameters
    ----------
    dest : str
        The wheel folder (created if missing).
    python : str, optional
        The Python executable that runs pip.
    constraints : str, optional
        Path of the constraints file with the pins.

    Returns
    -------
    dict
        The manifest written: ``target``, ``wheels`` ({file: bytes}), ``total_bytes`` and ``limit_bytes``.

    Raises
    ------
    MedScopeError
        When a wheel has no pin or the folder is over ``LIMIT_BYTES``.
    subprocess.CalledProcessError
        When pip fails.
    """
    os.makedirs(dest, exist_ok=True)
    pinned = pins(constraints)
    subprocess.run(download_command(python, dest, specs(WHEELS, pinned)), check=True)
    cmd, env = build_command(python, dest, specs(SDISTS, pinned))
    subprocess.run(cmd, check=True, env=env)
    sizes = folder_bytes(dest)
    total = check_size(sizes)
    manifest = {"target": TARGET, "wheels": sizes, "total_bytes": total, "limit_bytes": LIMIT_BYTES}
    with open(os.path.join(dest, "wheels.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"{len(sizes)} wheels, {total / 2**20:.1f} MiB of {LIMIT_BYTES / 2**20:.0f} MiB, in {dest}")
    return manifest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m pipelines.bench.gpu_wheels DIR")
    try:
        prepare(sys.argv[1])
    except MedScopeError as err:
        sys.exit(f"gpu-check --prepare: {err}")
