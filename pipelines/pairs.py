"""``medscope pairs``: build, check, score and report paired-modality sets (seed 002).

    medscope pairs generate --spec pairs.yaml --work W      # candidates -> W/review.yaml (pending)
    medscope pairs review W [--approve ID ...] [--reject ID ...] [--retry ID ... --feedback TEXT]
    medscope pairs build --spec pairs.yaml --work W --out SET   # approved photos -> SET/manifest.yaml
    medscope pairs check SET                                 # counts and manifest rejects
    medscope pairs embedded --out SET                        # the generated stand-in set
    medscope eval --protocol medscope.protocols.paired_modality:PROTOCOL --views SET \
        --models M.yaml --conditions photo_only,paired --out EVAL
    medscope pairs score --episodes EVAL --items SET --out RUN [--judge rule|NAME --judge-models F]
    medscope pairs report RUN --out REPORT
    medscope pairs demo [--out DIR]                          # all of it on the embedded set

``run_pairs_demo(out_dir)`` is the demo as a function (the main demo can call it).
"""

from __future__ import annotations

import json
import os
import sys
import time

from medscope import config as cfgmod
from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.protocols.base import ScoreOptions
from medscope.protocols.paired_modality import PROTOCOL, names

PROTOCOL_SPEC = "medscope.protocols.paired_modality:PROTOCOL"
JUDGE_KEY_ENV = "MEDSCOPE_PAIRS_LOOPBACK_JUDGE_KEY"  # a placeholder for the loopback judge, not a secret
DEMO_MODELS = [
    {"name": "always-claims", "kind": "policy", "model": "always-claims"},
    {"name": "always-absent", "kind": "policy", "model": "always-absent"},
    {"name": "always-refers", "kind": "policy", "model": "always-refers"},
    {"name": "colour-knn-reader", "kind": "medscope.protocols.paired_modality.baseline:build_reader"},
    {"name": "swayed-reader-sim", "kind": "medscope.protocols.paired_modality.baseline:build_swayed",
     "options": {"sway": 0.6}},
]


def _spec(path: str):
    from medscope.pairs.spec import PairsSpec

    return cfgmod.load(PairsSpec, path)


def _spec_dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


def check(uri: str, rejects_out: str | None = None) -> dict:
    """Counts of a manifest's good photographs and its rejects by reason (written beside it)."""
    photos, rejects = PROTOCOL().photos(uri)
    out = rejects_out or storage.join(storage.absolute(uri) if storage.is_dir(uri) else _spec_dir(uri),
                                      names.MANIFEST_REJECTS)
    if rejects:
        records.write_table("rejects", rejects, out)
    reasons: dict[str, int] = {}
    for r in rejects:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    return {"photos": len(photos), "conditions": len({p.condition for p in photos}),
            "matched": sum(p.photo_type == "matched" for p in photos),
            "mismatched": sum(p.photo_type == "mismatched" for p in photos),
            "rejects": reasons, "rejects_table": out if rejects else None}


def score(episodes: str, items: str, out: str, judge: str = "rule", judge_models: str | None = None,
          second_judge: str | None = None, judge_cache: str | None = None) -> dict:
    extra = {"judge": judge}
    if judge_models:
        extra["judge_models"] = judge_models
    if second_judge:
        extra["second_judge"] = second_judge
    if judge_cache:
        extra["judge_cache"] = judge_cache
    return PROTOCOL().score(episodes, items, out, ScoreOptions(extra=extra))


def report(scored_run: str, out: str) -> dict:
    """``report.md`` (+ images) and a self-contained ``report.html`` of a scored run."""
    from medscope.report.render import Section, to_html, to_markdown

    sections = [Section(t, b) for t, b in PROTOCOL().report_sections(scored_run, out)]
    title = "MedScope paired-modality report"
    md, files = to_markdown(title, sections)
    for rel, data in files.items():
        storage.write_bytes(storage.join(out, rel), data)
    storage.write_text(storage.join(out, "report.md"), md)
    storage.write_text(storage.join(out, "report.html"), to_html(title, sections))
    return {"markdown": storage.join(out, "report.md"), "html": storage.join(out, "report.html")}


def run_pairs_demo(out_dir: str = "pairs-demo-out", workers: int = 1) -> dict:
    """The paired-modality protocol end to end with no external service: the embedded set; the
    trivial policies, the colour k-NN reader and a simulated radiograph-swayed reader in both
    settings through the shared Ray sweep; a loopback judge server (Anthropic wire, rule judge
    behind it) and a second, stricter rule judge; scores and a report. Returns paths and timings."""
    from medscope.models.config import ModelsConfig
    from medscope.pairs.embedded import write_embedded_set
    from medscope.protocols.paired_modality.judge import rule_judge_responder
    from medscope.protocols.paired_modality.manifest import read_manifest, vocabulary
    from medscope.testing.providers import FakeProvider
    from pipelines.eval import EvalConfig, run_sweep

    t0 = time.monotonic()
    timings = {}
    built = write_embedded_set(storage.join(out_dir, "pairs"))
    timings["pairs_s"] = round(time.monotonic() - t0, 1)
    models_uri = storage.join(out_dir, "models.yaml")
    storage.write_text(models_uri, json.dumps({"models": DEMO_MODELS}, indent=1))
    entries = cfgmod.parse(ModelsConfig, {"models": DEMO_MODELS}).models
    t = time.monotonic()
    cfg = cfgmod.parse(EvalConfig, {"views": built["manifest"], "models": models_uri, "out": storage.join(out_dir, "eval"),
                                    "conditions": ["photo_only", "paired"], "protocol": PROTOCOL_SPEC,
                                    "workers": workers, "concurrency": 4}, source="pairs demo")
    sweep = run_sweep(cfg, PROTOCOL(), entries)
    timings["eval_s"] = round(time.monotonic() - t, 1)
    photos, _ = read_manifest(built["manifest"])
    os.environ.setdefault(JUDGE_KEY_ENV, "loopback-placeholder")
    server = FakeProvider("anthropic", responder=rule_judge_responder(vocabulary(photos)))
    try:
        judge = {"name": "loopback-rule-judge", "kind": "anthropic", "model": "rule-judge-loopback",
                 "base_url": server.url, "api_key_env": JUDGE_KEY_ENV, "max_output_tokens": 500, "timeout_s": 30}
        t = time.monotonic()
        scored_dir = storage.join(out_dir, "scored")
        summary = PROTOCOL().score(storage.join(out_dir, "eval"), built["manifest"], scored_dir,
                                   ScoreOptions(extra={"judge": judge, "second_judge": "rule-named-only"}))
        timings["score_s"] = round(time.monotonic() - t, 1)
        judge_requests = len(server.requests)
    finally:
        server.close()
    t = time.monotonic()
    rep = report(scored_dir, storage.join(out_dir, "report"))
    timings["report_s"] = round(time.monotonic() - t, 1)
    timings["total_s"] = round(time.monotonic() - t0, 1)
    return {"manifest": built["manifest"], "episodes": sweep["episodes"], "scored": scored_dir,
            "metrics": summary["metrics"], "mcnemar": summary["mcnemar"], "labels": summary["labels"],
            "report_md": rep["markdown"], "report_html": rep["html"], "episodes_run": sweep["done"],
            "judge_requests_served": judge_requests, "kappa_fp": summary["kappa_fp"], "timings": timings}


# --- CLI --------------------------------------------------------------------------------------------


def register(sub) -> None:
    p = sub.add_parser("pairs", help="paired-modality sets (seed 002): generate, review, build, check, score, report")
    v = p.add_subparsers(dest="pairs_verb", metavar="VERB")
    v.required = True
    g = v.add_parser("generate", help="one round of candidate photographs into WORK/review.yaml")
    g.add_argument("--spec", required=True, help="pairs spec YAML (conditions, prompts, captions, generator)")
    g.add_argument("--work", required=True, help="work folder (candidates/, review.yaml)")
    g.set_defaults(func=_generate)
    r = v.add_parser("review", help="list candidates, or record approve / reject / retry decisions")
    r.add_argument("work")
    r.add_argument("--approve", nargs="+", default=[], metavar="ID", help="candidate ids, or all-pending")
    r.add_argument("--reject", nargs="+", default=[], metavar="ID")
    r.add_argument("--retry", nargs="+", default=[], metavar="ID")
    r.add_argument("--feedback", default="", help="what the next attempt should change (needed with --retry)")
    r.add_argument("--reviewer", default=os.environ.get("USER", ""))
    r.set_defaults(func=_review)
    b = v.add_parser("build", help="approved photographs -> OUT/manifest.yaml with provenance")
    b.add_argument("--spec", required=True)
    b.add_argument("--work", required=True)
    b.add_argument("--out", required=True)
    b.set_defaults(func=lambda a: _print(__import__("medscope.pairs.review", fromlist=["build"]).build(
        _spec(a.spec), a.work, a.out, _spec_dir(a.spec))))
    c = v.add_parser("check", help="read a manifest: good photographs and rejects by reason")
    c.add_argument("manifest", help="manifest.yaml or its folder")
    c.set_defaults(func=lambda a: _print(check(a.manifest)))
    e = v.add_parser("embedded", help="write the embedded generated pair set")
    e.add_argument("--out", required=True)
    e.set_defaults(func=lambda a: _print(__import__("medscope.pairs.embedded", fromlist=["x"]).write_embedded_set(a.out)))
    s = v.add_parser("score", help="extract-then-judge episodes: labels, rates with exact CIs, McNemar, kappa")
    s.add_argument("--episodes", required=True, help="an eval output folder or its episodes table")
    s.add_argument("--items", required=True, help="the manifest the episodes ran on")
    s.add_argument("--out", required=True)
    s.add_argument("--judge", default="rule", help="rule | rule-named-only | a model name in --judge-models")
    s.add_argument("--second-judge", default=None, help="same choices; gives Cohen's kappa")
    s.add_argument("--judge-models", default=None, help="configs/models/<file>.yaml holding the judge entries")
    s.add_argument("--judge-cache", default=None, help="judge reply cache (default: OUT/judge_cache)")
    s.set_defaults(func=lambda a: _print(score(a.episodes, a.items, a.out, a.judge, a.judge_models,
                                               a.second_judge, a.judge_cache)))
    rp = v.add_parser("report", help="Table 1, McNemar tests and the shift figure of a scored run")
    rp.add_argument("run")
    rp.add_argument("--out", required=True)
    rp.set_defaults(func=lambda a: _print(report(a.run, a.out)))
    d = v.add_parser("demo", help="the whole protocol on the embedded set, no external service")
    d.add_argument("--out", default="pairs-demo-out")
    d.set_defaults(func=lambda a: _print(run_pairs_demo(a.out)))


def _generate(args) -> None:
    from medscope.pairs.generators import build_generator
    from medscope.pairs.review import generate_round

    spec = _spec(args.spec)
    _print(generate_round(spec, args.work, build_generator(spec.generator)))


def _review(args) -> None:
    from medscope.pairs.review import decide, load_review

    done = 0
    if args.retry and not args.feedback:
        raise MedScopeError("--retry needs --feedback")
    for decision, ids in (("approve", args.approve), ("reject", args.reject), ("retry", args.retry)):
        if ids:
            done += decide(args.work, ids, decision, args.feedback, args.reviewer)
    if done:
        print(f"recorded {done} decision(s) in {storage.join(args.work, names.REVIEW)}", file=sys.stderr)
    for c in load_review(args.work)["candidates"]:
        print(f"{c['decision']:8s} {c['id']:48s} {c['image']}" + (f"  feedback: {c['feedback']}" if c.get("feedback") else ""))


def _print(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))
