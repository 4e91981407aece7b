"""Seed 001's embedded default, end to end without any real LLM endpoint.

Phantom CT volumes with liver lesions and reports written from their label maps -> the shipped
liver schema, copied and approved at both checkpoints (the demo stands in for the clinician) ->
build with the deterministic rule extractor and a loopback OpenAI-compatible server writing the
report-derived questions -> the trivial policies and the classical reader, sighted and blind,
through the shared sweep -> score -> a report with Tables 1-4.
"""

from __future__ import annotations

import os
import shutil
import time

from medscope import storage
from medscope.benchgen import schema as schemamod
from medscope.benchgen.phantom import phantom_cohort
from medscope.benchgen.questions import REPORT_PROMPT
from medscope.models.config import ModelEntry
from medscope.protocols.base import ScoreOptions
from medscope.report.render import Section, to_html, to_markdown

LOCAL_KEY_ENV = "MEDSCOPE_BENCHGEN_LOCAL_KEY"  # a local OpenAI-compatible server takes any key
DEMO_MODELS = (
    {"name": "always-claims", "kind": "policy", "model": "always-claims"},
    {"name": "always-absent", "kind": "policy", "model": "always-absent"},
    {"name": "always-refers", "kind": "policy", "model": "always-refers"},
    # montages tile many slices, so the reader's noise gate (meant for single images) is opened
    {"name": "classical", "kind": "classical", "model": "dog_blob", "options": {"max_noise": 1000.0}},
)


def write_report(sections: list[tuple[str, list]], out_dir: str, title: str) -> dict:
    secs = [Section(t, blocks) for t, blocks in sections]
    md, images = to_markdown(title, secs)
    os.makedirs(out_dir, exist_ok=True)
    for name, png in images.items():
        os.makedirs(os.path.dirname(os.path.join(out_dir, name)), exist_ok=True)
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(png)
    paths = {"markdown": os.path.join(out_dir, "report.md"), "html": os.path.join(out_dir, "report.html")}
    with open(paths["markdown"], "w") as f:
        f.write(md)
    with open(paths["html"], "w") as f:
        f.write(to_html(title, secs))
    return paths


def run_demo(out_dir: str, n_cases: int = 6, n_boot: int = 2000, n_boot_tests: int = 10_000,
             models: tuple[dict, ...] = DEMO_MODELS) -> dict:
    from medscope.protocols.benchmark_mcq import PROTOCOL
    from medscope.testing.benchgen_author import author_responder
    from medscope.testing.providers import FakeProvider
    from pipelines.benchgen import MCQ_PROTOCOL, BuildConfig, build
    from pipelines.eval import EvalConfig, run_sweep

    t0 = time.monotonic()
    out_dir = os.path.abspath(out_dir)
    cohort = phantom_cohort(os.path.join(out_dir, "cohort"), n_cases=n_cases)
    schema_uri = os.path.join(out_dir, "liver_schema.yaml")
    shutil.copyfile(schemamod.shipped_path("liver"), schema_uri)
    for cp in schemamod.CHECKPOINTS:
        schemamod.approve(schema_uri, cp, "demo (automatic; a clinician approves a real cohort)", REPORT_PROMPT)
    os.environ.setdefault(LOCAL_KEY_ENV, "local-server-no-key")
    author = FakeProvider("openai", responder=author_responder(schemamod.load_schema(schema_uri)))
    try:
        gen = {"name": "author-llm", "kind": "openai", "model": "local-author", "base_url": author.url,
               "api_key_env": LOCAL_KEY_ENV, "max_attempts": 2}
        cfg = BuildConfig.model_validate({
            "reports": cohort["reports"], "volumes": cohort["volumes"], "schema": schema_uri,
            "out": os.path.join(out_dir, "benchmark"), "cohort": "phantom_liver_ct", "private": True,
            "endpoint_allowlist": [author.url], "generator_entry": gen})
        built = build(cfg)
        generation_requests = len(author.requests)
    finally:
        author.close()
    eval_out = os.path.join(out_dir, "eval")
    sweep = run_sweep(EvalConfig(views=cfg.out, models="(inline)", conditions=["sighted", "blind"], out=eval_out,
                                 protocol=MCQ_PROTOCOL), entries=[ModelEntry.model_validate(m) for m in models])
    protocol = PROTOCOL()
    scored = os.path.join(out_dir, "scored")
    protocol.score(storage.join(eval_out, "episodes"), cfg.out, scored,
                   ScoreOptions(n_boot=n_boot, extra={"n_boot_tests": n_boot_tests}))
    report_dir = os.path.join(out_dir, "report")
    report = write_report(protocol.report_sections(scored, report_dir), report_dir,
                          "MedScope: contamination-controlled multiple-choice benchmark (phantom cohort)")
    return {"cohort": cohort["reports"], "schema": schema_uri, "benchmark": cfg.out, "build": built,
            "generation_requests": generation_requests, "eval": eval_out, "episodes": sweep["done"] + sweep["skipped_finished"],
            "scored_run": scored, "report": report, "seconds": round(time.monotonic() - t0, 1)}
