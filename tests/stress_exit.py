"""Run MedScope's commands many times beside busy loops and count how each one exits.

A command that has finished its work must exit with its own status, never abort on its way out
(issue 55: "terminate called without an active exception", exit 134 / -6, seen in a share of runs
on a loaded machine). Too rare to catch in a test, so this script is run by hand (docs/testing.md
has its figures):

    .venv/bin/python tests/stress_exit.py [--rounds 100] [--busy 2] [--eval-every 10] [--work DIR]

Each round runs, each in a fresh process: two ``records.read_table`` reads (the issue's
reproduction), ``cohort show``, ``views show`` and, every ``--eval-every`` rounds, ``eval run`` of
two constant policies (a local Ray starts and stops) and ``score`` of that run. ``--busy`` Python
loops spin beside them the whole time. The script prints a line per round that saw anything but the
expected exit, then a table: per command, runs, exit statuses, and runs whose stderr holds a native
abort's marks. It exits 1 if any run aborted or exited other than expected.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable
# What a native abort leaves on stderr: libstdc++'s terminate message, Ray's and Python's fault
# handlers' headers, abseil's stack lines.
ABORT_MARKS = ("terminate called", "SIGABRT", "Fatal Python error", "*** SIGSEGV", "@ 0x")
POLICIES = ("models:\n  - {name: always-present, kind: policy, model: always_present}\n"
            "  - {name: always-absent, kind: policy, model: always_absent}\n")


def cli(*args: str) -> list[str]:
    return [PYTHON, "-m", "pipelines.cli", *args]


def run(argv: list[str], cwd: str) -> tuple[int, str]:
    r = subprocess.run(argv, cwd=cwd, env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True,
                       timeout=900)
    return r.returncode, r.stderr


def prepare(work: str) -> None:
    """A 16-case phantom cohort and its views (built in this process's loop, no Ray)."""
    for argv in (cli("cohort", "phantom", "--out", "cohort", "--cases", "16", "--volumes", "0"),
                 cli("views", "build", "--cases", "cohort", "--out", "views", "--recipe", "configs/views/demo.yaml",
                     "--engine", "local")):
        code, err = run(argv, work)
        if code != 0:
            sys.exit(f"stress_exit: preparing {' '.join(argv[3:5])} failed ({code}):\n{err}")
    with open(os.path.join(work, "models.yaml"), "w") as fh:
        fh.write(POLICIES)


def commands(work: str, round_no: int, with_eval: bool) -> list[tuple[str, list[str], set[int]]]:
    """(name, argv, accepted exit statuses) for one round."""
    read = ("from medscope.io import records; "
            "print(records.read_table('cases', 'cohort').num_rows, records.read_table('rejects', 'cohort').num_rows)")
    out = [("read_table x2", [PYTHON, "-c", read], {0}),
           ("cohort show", cli("cohort", "show", "cohort"), {0}),
           ("views show", cli("views", "show", "views"), {0})]
    if with_eval:
        run_dir = f"runs/r{round_no}"
        out += [("eval run", cli("eval", "run", "--items", "views", "--models", "models.yaml", "--conditions", "plain",
                                 "--out", run_dir), {0}),
                ("score", cli("score", "--episodes", run_dir, "--out", f"scored/r{round_no}"), {0})]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--busy", type=int, default=2, help="busy Python loops beside the runs")
    p.add_argument("--eval-every", type=int, default=10, help="eval run + score every N rounds (0: never)")
    p.add_argument("--work", default=None, help="working folder (default: a new temporary one)")
    a = p.parse_args(argv)
    work = a.work or tempfile.mkdtemp(prefix="medscope-stress-")
    os.makedirs(work, exist_ok=True)
    print(f"stress_exit: working in {work}", flush=True)
    prepare(work)
    busy = [subprocess.Popen([PYTHON, "-c", "while True: pass"]) for _ in range(a.busy)]
    codes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    aborts: collections.Counter = collections.Counter()
    bad = 0
    try:
        for i in range(1, a.rounds + 1):
            with_eval = a.eval_every > 0 and i % a.eval_every == 0
            for name, cmd, accepted in commands(work, i, with_eval):
                code, err = run(cmd, work)
                codes[name][code] += 1
                marked = any(m in err for m in ABORT_MARKS)
                aborts[name] += marked
                if code not in accepted or marked:
                    bad += 1
                    tail = err.strip().splitlines()[-3:]
                    print(f"round {i}: {name} exited {code}{' with abort marks' if marked else ''}: {tail}", flush=True)
    finally:
        for proc in busy:
            proc.kill()
    print(f"\n{'command':<16}{'runs':>6}  exit statuses              abort marks")
    for name, counter in codes.items():
        statuses = ", ".join(f"{c}: {n}" for c, n in sorted(counter.items()))
        print(f"{name:<16}{sum(counter.values()):>6}  {statuses:<26} {aborts[name]}")
    total = sum(sum(c.values()) for c in codes.values())
    print(f"\n{bad} of {total} runs aborted or exited other than expected ({a.busy} busy loops beside them)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
