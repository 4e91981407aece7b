"""``medscope bench <what>``: side-by-side benchmarks that print measured ratios.

Each issue adds one entry to BENCHES: a name -> "module:function" taking the parsed args.
"""

from __future__ import annotations

import importlib

from medscope.errors import MedScopeError

BENCHES: dict[str, str] = {
    "probe": "pipelines.probe_cli:bench",
    "eval": "pipelines.eval_bench:bench_eval",
    "stats": "pipelines.score:bench_stats",
    "views": "pipelines.build_views:bench",
    "agent": "pipelines.agent:bench",
}


def register(sub) -> None:
    p = sub.add_parser("bench", help="side-by-side performance benchmarks (prints ratios)")
    p.add_argument("what", help=f"one of: {', '.join(sorted(BENCHES)) or '(none yet)'}")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.set_defaults(func=run)


def run(args) -> None:
    if args.what not in BENCHES:
        raise MedScopeError(f"no benchmark {args.what!r}; choose from: {', '.join(sorted(BENCHES))}")
    module, func = BENCHES[args.what].split(":")
    getattr(importlib.import_module(module), func)(args)
