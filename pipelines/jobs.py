"""What every job shares: ``python -m pipelines.<job> --config F`` and one-line errors."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TypeVar

import pydantic

from medscope import config as cfgmod
from medscope.errors import MedScopeError

C = TypeVar("C", bound=pydantic.BaseModel)


def job_main(name: str, model: type[C], run: Callable[[C], dict], argv: list[str] | None = None) -> int:
    """Entry point of ``python -m pipelines.<name> --config F``: load, validate, run, summarise."""
    parser = argparse.ArgumentParser(prog=f"python -m pipelines.{name}")
    parser.add_argument("--config", required=True, help="YAML file (path or URI)")
    args = parser.parse_args(argv)
    return guarded(lambda: print_summary(run(cfgmod.load(model, args.config))))


def guarded(fn: Callable[[], object]) -> int:
    """Run ``fn``; errors become one line on stderr (exit 2) instead of a traceback.

    ``MEDSCOPE_DEBUG=1`` re-raises unexpected errors with their traceback.
    """
    try:
        fn()
    except MedScopeError as err:
        print(f"medscope: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("medscope: interrupted; finished work is kept and a rerun resumes", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the CLI's last line of defence
        if os.environ.get("MEDSCOPE_DEBUG"):
            raise
        print(
            f"medscope: error: {type(err).__name__}: {err} (set MEDSCOPE_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 2
    return 0


def print_summary(summary: dict) -> None:
    print(json.dumps(summary, indent=2, sort_keys=True, default=str))


class Progress:
    """A plain progress line for long steps (no terminal tricks, so logs stay readable)."""

    def __init__(self, label: str, total: int | None = None, every_s: float = 2.0):
        self.label, self.total, self.every_s = label, total, every_s
        self.done = 0
        self._last = 0.0
        self._start = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self.every_s or (self.total and self.done >= self.total):
            self._last = now
            of = f"/{self.total}" if self.total else ""
            print(f"  {self.label}: {self.done}{of} ({now - self._start:.0f}s)", file=sys.stderr, flush=True)
