"""The ``medscope`` command. Each job module registers its own verbs (``register(subparsers)``)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from pipelines.support import outputs
from pipelines.support.jobs import guarded

# One line per job module; each issue adds its module here.
VERB_MODULES = [
    "pipelines.cohort",
    "pipelines.views",
    "pipelines.bench",
    "pipelines.demo",
    "pipelines.eval",
    "pipelines.score",
    "pipelines.stats",
    "pipelines.crosswalk",
    "pipelines.visibility",
    "pipelines.report",
    "pipelines.probe",
    "pipelines.agent",
    "pipelines.train",
    "pipelines.sweep",
    "pipelines.reader",
    "pipelines.benchgen",
    "pipelines.pairs",
    "pipelines.judge",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="medscope",
        description="Does the model read the image or recite the question? "
        "Counterfactual benchmarks, evaluation, statistics and training for medical VLMs.",
    )
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show Ray's own log lines too (quiet by default: steps, progress, results)")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for name in VERB_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        os.environ["MEDSCOPE_VERBOSE"] = "1"

    def go():
        # every verb's --out: refused where a Ray job would lose it, named when done
        out = getattr(args, "out", None)
        if isinstance(out, str) and out:
            outputs.check_out(out)
        args.func(args)
        out = getattr(args, "out", None)  # a --config file may have named it (flags.config_from_args)
        if isinstance(out, str) and out:
            outputs.announce(outputs.check_out(out))

    return guarded(go)


if __name__ == "__main__":
    sys.exit(main())
