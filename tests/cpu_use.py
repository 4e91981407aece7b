"""Where the suite's time goes: a pytest plugin (``pytest -p tests.cpu_use``).

Per test it records the wall time and how busy the machine's CPUs were meanwhile (from
``/proc/stat``, so Ray's workers, servers and subprocesses count, whoever started them); at the
end it prints the suite's CPU demand and idle capacity, and the files that leave the most cores
idle. That tells apart a suite that is slow because it asks for more CPU than the machine has
(only less work helps) from one that waits (overlap or shorter waits help). ``CPU_USE_JSONL=F``
also writes one JSON line per test to F. On pytest-xdist workers (the default run) the tests
overlap, so it prints one line for the whole run, start to end, and leaves the per-test rows to
``CPU_USE_JSONL``. Linux only; on a shared machine other work counts as busy.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict

import pytest

_rows: list[dict] = []


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU-seconds of all this machine's CPUs since boot (``/proc/stat``)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - idle) / hz, sum(ticks) / hz


def summarize(rows: list[dict], cpus: int, top: int = 8) -> list[str]:
    """Lines for the terminal: the suite's wall, CPU demand, idle capacity, and the files with the
    most idle core-seconds. Each row: ``id``, ``wall`` s, ``busy`` and ``total`` CPU-s of the machine."""
    wall = sum(r["wall"] for r in rows)
    busy = sum(r["busy"] for r in rows)
    total = sum(r["total"] for r in rows)
    if not rows or total <= 0:
        return ["cpu use: no test measured"]
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in rows:
        f = by_file[r["id"].split("::")[0]]
        f[0] += r["wall"]
        f[1] += r["total"] - r["busy"]
        f[2] += r["busy"]
    lines = [f"cpu use: {len(rows)} tests, {wall:.0f} s of tests on {cpus} CPUs; the machine was busy "
             f"{busy:.0f} CPU-s ({busy / total:.0%} of its capacity), idle {total - busy:.0f} CPU-s; "
             f"all the CPU asked for, packed on {cpus} CPUs with no idle, would take {busy / cpus:.0f} s",
             "  files with the most idle CPU-s (wall s, idle CPU-s, busy CPU-s):"]
    for name, (w, idle, b) in sorted(by_file.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"  {w:8.1f} {idle:8.1f} {b:8.1f}  {name}")
    return lines


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0, (b0, a0) = time.monotonic(), machine_cpu_seconds()
    yield
    t1, (b1, a1) = time.monotonic(), machine_cpu_seconds()
    row = {"id": item.nodeid, "wall": round(t1 - t0, 3), "busy": round(b1 - b0, 3), "total": round(a1 - a0, 3)}
    _rows.append(row)
    if os.environ.get("CPU_USE_JSONL"):
        with open(os.environ["CPU_USE_JSONL"], "a") as f:
            f.write(json.dumps(row) + "\n")


_session: dict[str, tuple[float, float, float]] = {}


def run_summary(wall: float, busy: float, total: float, cpus: int) -> str:
    """One line for the whole run, start to end: what a run on pytest-xdist workers can say
    (its tests overlap, so per-test rows would count the same CPU-seconds twice)."""
    if total <= 0:
        return "cpu use: nothing measured"
    return (f"cpu use, the whole run: {wall:.0f} s on {cpus} CPUs; the machine was busy {busy:.0f} CPU-s "
            f"({busy / total:.0%} of its capacity), idle {total - busy:.0f} CPU-s; packed on {cpus} CPUs "
            f"with no idle, {busy / cpus:.0f} s")


def pytest_sessionstart(session):
    busy, total = machine_cpu_seconds()
    _session["start"] = (time.monotonic(), busy, total)


def pytest_terminal_summary(terminalreporter, config):
    cpus = os.cpu_count() or 1
    if "start" in _session:
        t0, b0, a0 = _session["start"]
        b1, a1 = machine_cpu_seconds()
        terminalreporter.write_line(run_summary(time.monotonic() - t0, b1 - b0, a1 - a0, cpus))
    if getattr(config.option, "numprocesses", None):  # the per-test rows are on the workers
        terminalreporter.write_line("cpu use: per-test rows on the workers: CPU_USE_JSONL=F writes them")
        return
    for line in summarize(_rows, cpus):
        terminalreporter.write_line(line)
