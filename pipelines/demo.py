"""``medscope demo``: the whole pipeline on the phantom cohort, top to bottom.

Each stage of the product adds one step to STEPS; the demo runs them in order on one
output URI and ends by saying where the report is. It must stay under five minutes on a
2-core machine, so every step uses the small settings of ``configs/demo.yaml``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from medscope import storage
from medscope.config import StrictModel

DEFAULT_OUT = "demo-out"


@dataclass
class DemoContext:
    out: str  # root URI of this demo run
    seed: int = 0
    cases: int = 48
    paths: dict[str, str] = field(default_factory=dict)  # table name -> URI, filled by steps
    summary: dict[str, object] = field(default_factory=dict)

    def uri(self, *parts: str) -> str:
        return storage.join(self.out, *parts)


Step = Callable[[DemoContext], None]


def step_cohort(ctx: DemoContext) -> None:
    """Generate the phantom cohort (2D cases and 3D volumes) and show its counts."""
    from medscope.cohorts import phantom
    from pipelines.cohort import show_summary

    result = phantom.generate(ctx.uri("cohort"), n_cases=ctx.cases, seed=ctx.seed)
    ctx.paths.update(result)
    ctx.summary["cohort"] = show_summary(ctx.paths["cases"])


STEPS: list[tuple[str, Step]] = [
    ("phantom cohort", step_cohort),
]


class DemoConfig(StrictModel):
    """``python -m pipelines.demo --config configs/demo.yaml`` (what ``ray job submit`` runs)."""

    out: str = DEFAULT_OUT
    seed: int = 0
    cases: int = 48


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the whole pipeline on the generated phantom cohort")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output URI (default: ./{DEFAULT_OUT})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cases", type=int, default=48, help="phantom 2D cases (default 48)")
    p.set_defaults(func=lambda args: run(DemoContext(out=args.out, seed=args.seed, cases=args.cases)))


def run_config(cfg: DemoConfig) -> dict:
    ctx = run(DemoContext(out=cfg.out, seed=cfg.seed, cases=cfg.cases))
    return {"out": ctx.out, "paths": ctx.paths, "summary": ctx.summary}


def run(ctx: DemoContext) -> DemoContext:
    start = time.monotonic()
    for i, (name, step) in enumerate(STEPS, 1):
        t0 = time.monotonic()
        print(f"[{i}/{len(STEPS)}] {name} ...", file=sys.stderr, flush=True)
        step(ctx)
        print(f"[{i}/{len(STEPS)}] {name} done in {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)
    print(f"demo finished in {time.monotonic() - start:.0f}s; outputs under {ctx.out}")
    if "report" in ctx.paths:
        print(f"report: {ctx.paths['report']}")
    return ctx


if __name__ == "__main__":
    from pipelines.jobs import job_main

    sys.exit(job_main("demo", DemoConfig, run_config))
