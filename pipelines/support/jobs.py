"""What every job shares: ``python -m pipelines.<job> --config F`` and one-line errors."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

import pydantic
import yaml

from medscope import config as cfgmod
from medscope.errors import MedScopeError
from medscope.io.safe_text import redact_urls
from pipelines.support import outguard, outputs

C = TypeVar("C", bound=pydantic.BaseModel)


def job_main(name: str, model: type[C], run: Callable[[C], dict], argv: list[str] | None = None) -> int:
    """Entry point of ``python -m pipelines.<name> --config F``: load, validate, run, summarise.

    Parameters
    ----------
    name : str
        The job's module under ``pipelines`` (the program name, and the verb in the ``out:``
        marker).
    model : type of pydantic.BaseModel
        The job's config model; one with an ``out`` field also gets ``--out``, ``--append`` and
        ``--overwrite``.
    run : callable
        Called with the validated config; returns the summary printed as JSON (a summary with
        ``accounting`` decides the exit code through ``accounting.conclude``).
    argv : list of str, optional
        The command line after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code (``guarded``): 0, 2 on an error, the error's own ``exit_code``, or 130 when
        interrupted.
    """
    parser = argparse.ArgumentParser(prog=f"python -m pipelines.{name}")
    parser.add_argument("--config", required=True, help="YAML file (path or URI)")
    if "out" in model.model_fields:
        parser.add_argument("--out", default=None,
                            help="output URI, overriding the config's out: (absolute or s3:// under a Ray job)")
    if "out" in model.model_fields:
        parser.add_argument("--append", action="store_true", help="out: holds another run: add this one to it")
        parser.add_argument("--overwrite", action="store_true", help="out: holds another run: replace it")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override one config key with a YAML value, e.g. --set cases=24 (repeatable)")
    args = parser.parse_args(argv)

    def go():
        overrides = dict(_override(o) for o in args.overrides)
        if getattr(args, "out", None):
            overrides["out"] = args.out
        if overrides:
            data = dict(cfgmod.load_yaml(args.config) or {}, **overrides)
            cfg = cfgmod.parse(model, data, source=f"{args.config} with {', '.join(sorted(overrides))} set")
        else:
            cfg = cfgmod.load(model, args.config)
        where = outputs.check_out(cfg.out, "out:") if isinstance(getattr(cfg, "out", None), str) else None
        marked = outguard.identity(name, cfg.model_dump()) if where else None
        outguard.refuse_both(getattr(args, "append", False), getattr(args, "overwrite", False))
        if where:  # an out: holding a different run is refused unless --append / --overwrite
            outguard.check(cfg.out, marked, args.append, args.overwrite, "out:")
        summary = run(cfg)
        if where:
            outguard.record(cfg.out, marked)
        print_summary(summary)
        if where:
            outputs.announce(where)
        if isinstance(summary, dict) and summary.get("accounting"):  # a sweep: its units decide the exit code
            from pipelines.support.accounting import conclude

            conclude(summary, getattr(cfg, "max_failed", None), name)

    return guarded(go)


def _override(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` of ``--set`` -> (key, the value read as YAML: ``cases=24`` gives 24)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise MedScopeError(f"--set {text!r}: give KEY=VALUE, e.g. --set cases=24")
    try:
        return key.strip(), yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise MedScopeError(f"--set {text!r}: the value is not YAML ({str(err).splitlines()[0]})") from None


def broken_symlink_message(err: OSError) -> str | None:
    """What to tell the user when ``err`` came from a path (or a folder above it) that is a
    symlink leading nowhere: a dangling link or a loop.

    ``os.makedirs`` on such a path raises a bare ``FileExistsError: File exists`` although nothing
    usable exists there (issue 51, the tenth campaign), which names neither the link nor a fix.

    Parameters
    ----------
    err : OSError
        The error; its ``filename`` and ``filename2`` are the paths looked at.

    Returns
    -------
    str or None
        One line naming the link, where it points and what to do; None when no path of ``err``
        passes through a broken symlink.
    """
    for name in (err.filename, err.filename2):
        if not isinstance(name, (str, bytes, os.PathLike)):
            continue
        path = os.path.abspath(os.fsdecode(name))
        while True:
            if os.path.islink(path) and not os.path.exists(path):
                target = os.readlink(path)
                try:
                    os.stat(path)
                except OSError as stat_err:
                    if stat_err.errno == errno.ELOOP:
                        return (f"{path} is a symlink loop (it points to {target!r}, which leads back to itself); "
                                "remove the link or give another path")
                return (f"{path} is a dangling symlink (it points to {target!r}, which does not exist); "
                        "remove the link, create its target, or give another path")
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return None


def guarded(fn: Callable[[], object]) -> int:
    """Run ``fn``; errors become one line on stderr (exit 2, or the error's own ``exit_code``:
    pipelines.support.accounting) instead of a traceback.

    ``MEDSCOPE_DEBUG=1`` re-raises unexpected errors with their traceback.

    Parameters
    ----------
    fn : callable
        Called with no arguments; what it returns is ignored.

    Returns
    -------
    int
        0 when ``fn`` returned (or stdout's reader went away), the ``MedScopeError``'s
        ``exit_code`` (default 2), 130 on Ctrl-C, 2 on any other error.
    """
    try:
        fn()
    except MedScopeError as err:
        print(redact_urls(f"medscope: error: {err}"), file=sys.stderr)
        return getattr(err, "exit_code", 2)
    except BrokenPipeError:
        # the reader of our output went away (`medscope ... | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("medscope: interrupted; finished work is kept and a rerun resumes", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the CLI's last line of defence
        broken = broken_symlink_message(err) if isinstance(err, OSError) else None
        if broken:
            print(redact_urls(f"medscope: error: {broken}"), file=sys.stderr)
            return 2
        if os.environ.get("MEDSCOPE_DEBUG"):
            raise
        print(
            redact_urls(f"medscope: error: {type(err).__name__}: {err} (set MEDSCOPE_DEBUG=1 for the traceback)"),
            file=sys.stderr,
        )
        return 2
    return 0


def print_summary(summary: dict) -> None:
    """Print ``summary`` on stdout as indented, key-sorted JSON, with credentials in URLs redacted.

    Parameters
    ----------
    summary : dict
        The job's summary; values JSON cannot hold are printed as their ``str``.
    """
    print(redact_urls(json.dumps(summary, indent=2, sort_keys=True, default=str)))  # no user:password@ URLs


class Progress:
    """Progress of a long step: a live bar on a terminal (tqdm), plain lines every few seconds
    in logs and under ``ray job submit`` (no terminal tricks in files)."""

    def __init__(self, label: str, total: int | None = None, every_s: float = 2.0):
        self.label, self.total, self.every_s = label, total, every_s
        self.done = 0
        self.outcomes: Counter = Counter()  # failed / refused ... as they happen (shown beside the count)
        self._last = 0.0
        self._start = time.monotonic()
        self._bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=f"  {label}", unit="", leave=True, dynamic_ncols=True)

    def update(self, n: int = 1, outcome: str | None = None) -> None:
        self.done += n
        if outcome and outcome != "done":
            self.outcomes[outcome] += n
        if self._bar is not None:
            if outcome and outcome != "done":
                self._bar.set_postfix_str(self._tally(), refresh=False)
            self._bar.update(n)
            if self.total and self.done >= self.total:
                self._bar.close()
            return
        now = time.monotonic()
        if now - self._last >= self.every_s or (self.total and self.done >= self.total):
            self._last = now
            of = f"/{self.total}" if self.total else ""
            tally = f", {self._tally()}" if self.outcomes else ""
            print(f"  {self.label}: {self.done}{of} ({now - self._start:.0f}s{tally})", file=sys.stderr, flush=True)

    def _tally(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))


def units_per_block(n_units: int, workers: int, most: int, blocks_per_worker: int) -> int:
    """Units (cases, volumes, row groups) in one Ray Data block: ``n_units`` over
    ``blocks_per_worker`` blocks a worker, between 1 and ``most``.

    Ray Data's driver pays about the same per block whatever its size (scheduling, metadata,
    result decoding; docs/benchmarks.md), and on a small cluster that CPU comes out of the
    workers'; enough blocks a worker keep the last block's tail short, and ``most`` bounds what a
    lost block runs again.

    Parameters
    ----------
    n_units : int
        Units in all.
    workers : int
        Workers of the cluster (at least 1 is assumed).
    most : int
        The most units in one block.
    blocks_per_worker : int
        Blocks wanted per worker.

    Returns
    -------
    int
        ``n_units // (blocks_per_worker * workers)``, clipped to [1, ``most``].
    """
    return max(1, min(most, n_units // (blocks_per_worker * max(1, workers))))


def most_at_once(stamps: list[tuple[float, float, int]]) -> int:
    """The most work items running at one moment, from their (start, end, pid) stamps; an item
    that ends at the moment another starts does not overlap it.

    Parameters
    ----------
    stamps : list of tuple of (float, float, int)
        (start, end, worker pid) of each work item, in seconds.

    Returns
    -------
    int
        The largest number of items whose intervals overlap (0 for no stamps).
    """
    events = sorted([(s[1], -1) for s in stamps] + [(s[0], 1) for s in stamps])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def map_timing(t_start: float, stamps: list[tuple[float, float, int]]) -> dict:
    """Split a map stage into its fixed start-up and its steady work, from per-item stamps.

    ``t_start``: wall clock (epoch s) when the stage began (before tools or actors are made);
    ``stamps``: (start, end, worker pid) of every work item (a case, a volume). ``startup_s``
    is the time until the first item began on any worker (worker or actor start-up, imports,
    tool and model loading); ``steady_s`` runs from there to the last item's end, so a worker
    that comes up late or idles at the end counts against the steady figure, never for it.

    Parameters
    ----------
    t_start : float
        Wall clock (epoch s) when the stage began.
    stamps : list of tuple of (float, float, int)
        (start, end, worker pid) of every work item; must not be empty.

    Returns
    -------
    dict
        ``startup_s``, ``steady_s``, ``total_s`` and ``busy_s`` (s), ``cases`` (items),
        ``workers`` (distinct pids), ``most_at_once`` and ``worker_first_case_s`` (each worker's
        first start after ``t_start``, sorted).
    """
    first = min(s[0] for s in stamps)
    last = max(s[1] for s in stamps)
    by_worker: dict[int, list[float]] = {}
    for s in stamps:
        by_worker.setdefault(s[2], []).append(s[0])
    return {"startup_s": first - t_start, "steady_s": last - first, "total_s": last - t_start,
            "cases": len(stamps), "workers": len(by_worker), "most_at_once": most_at_once(stamps),
            "worker_first_case_s": sorted(min(v) - t_start for v in by_worker.values()),
            "busy_s": sum(s[1] - s[0] for s in stamps)}
