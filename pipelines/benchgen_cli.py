"""The ``medscope benchgen`` verbs: ``build``, ``schema show|init|approve``, ``show`` (seed 001)."""

from __future__ import annotations

import json
import shutil

from medscope import config as cfgmod
from medscope.benchgen import schema as schemamod
from medscope.benchgen.questions import REPORT_PROMPT
from medscope.errors import MedScopeError


def register(sub) -> None:
    p = sub.add_parser("benchgen", help="build a private multiple-choice benchmark from reports + volumes (seed 001)")
    verbs = p.add_subparsers(dest="benchgen_verb", metavar="ACTION")
    verbs.required = True

    b = verbs.add_parser("build", help="reports + volumes + approved schema -> items, montages, rejects")
    b.add_argument("--reports", required=True, help="CSV or JSONL: case_id, study, findings, impression")
    b.add_argument("--volumes", required=True, help="<root>/<case_id>/<sequence>.nii.gz or <sequence>/ (DICOM)")
    b.add_argument("--schema", required=True, help="approved schema YAML (see `benchgen schema init|approve`)")
    b.add_argument("--out", required=True)
    b.add_argument("--cohort", default="cohort", help="cohort name (a column of every table)")
    b.add_argument("--public", action="store_true", help="the cohort's reports are not private")
    b.add_argument("--allow-endpoint", action="append", default=[], help="endpoint allowed to receive report text")
    b.add_argument("--imaging-source", default="private", choices=("private", "public"))
    b.add_argument("--matched-group", default=None, help="cohorts generated identically (Table 3)")
    b.add_argument("--extractor", default="rules", choices=("rules", "llm"))
    b.add_argument("--generator-models", default=None, help="configs/models/<file>.yaml with the question writer")
    b.add_argument("--generator", default=None, help="model name in --generator-models (default: the first)")
    b.add_argument("--no-report-questions", action="store_true", help="schema-driven questions only")
    b.add_argument("--seed", type=int, default=42)
    b.set_defaults(func=_build)

    s = verbs.add_parser("schema", help="show a schema's checkpoint hashes, copy a shipped one, approve")
    s.add_argument("action", choices=("show", "init", "approve"))
    s.add_argument("schema", help="schema YAML, or a shipped name (liver | lung | brain) for show / init")
    s.add_argument("--out", help="init: where to copy the shipped schema")
    s.add_argument("--checkpoint", choices=schemamod.CHECKPOINTS, help="approve: schema | templates")
    s.add_argument("--by", default="", help="approve: the reviewer's name")
    s.set_defaults(func=_schema)

    ph = verbs.add_parser("phantom", help="write the phantom cohort: CT volumes with liver lesions + reports")
    ph.add_argument("--out", required=True)
    ph.add_argument("--cases", type=int, default=6)
    ph.set_defaults(func=_phantom)

    sc = verbs.add_parser("score", help="score an eval of a benchmark (until `medscope score` dispatches on protocol)")
    sc.add_argument("--episodes", required=True, help="episodes of `medscope eval` (the folder or its episodes/)")
    sc.add_argument("--items", required=True, help="the build folder")
    sc.add_argument("--out", required=True, help="scored-run folder")
    sc.add_argument("--n-boot", type=int, default=2000)
    sc.add_argument("--n-boot-tests", type=int, default=10_000)
    sc.add_argument("--seed", type=int, default=42)
    sc.set_defaults(func=_score)

    rp = verbs.add_parser("report", help="Markdown + HTML report (Tables 1-4) of a scored run")
    rp.add_argument("--run", required=True)
    rp.add_argument("--out", required=True)
    rp.set_defaults(func=_report)

    w = verbs.add_parser("show", help="summarise a build folder")
    w.add_argument("uri")
    w.set_defaults(func=lambda a: print(json.dumps(_show(a.uri), indent=2, default=str)))


def _show(uri):
    from pipelines.benchgen import show

    return show(uri)


def _score(a) -> None:
    from medscope import storage
    from medscope.protocols.base import ScoreOptions
    from medscope.protocols.benchmark_mcq import PROTOCOL

    episodes = a.episodes
    if storage.is_dir(storage.join(episodes, "episodes")):
        episodes = storage.join(episodes, "episodes")
    opts = ScoreOptions(n_boot=a.n_boot, seed=a.seed, extra={"n_boot_tests": a.n_boot_tests})
    print(json.dumps(PROTOCOL().score(episodes, a.items, a.out, opts), indent=2))


def _report(a) -> None:
    from medscope.protocols.benchmark_mcq import PROTOCOL
    from pipelines.benchgen_demo import write_report

    sections = PROTOCOL().report_sections(a.run, a.out)
    print(json.dumps(write_report(sections, a.out, "MedScope: contamination-controlled multiple-choice benchmark"),
                     indent=2))


def _phantom(a) -> None:
    from medscope.benchgen.phantom import phantom_cohort

    print(json.dumps(phantom_cohort(a.out, n_cases=a.cases), indent=2))


def _build(a) -> None:
    from pipelines.benchgen import BuildConfig, build
    from pipelines.support.jobs import print_summary

    cfg = cfgmod.parse(BuildConfig, {
        "reports": a.reports, "volumes": a.volumes, "schema": a.schema, "out": a.out, "cohort": a.cohort,
        "private": not a.public, "endpoint_allowlist": a.allow_endpoint, "imaging_source": a.imaging_source,
        "matched_group": a.matched_group, "extractor": a.extractor, "generator_models": a.generator_models,
        "generator_name": a.generator, "report_questions": not a.no_report_questions, "seed": a.seed,
    }, source="medscope benchgen build")
    print_summary(build(cfg))


def _schema(a) -> None:
    if a.action == "init":
        if not a.out:
            raise MedScopeError("benchgen schema init NAME --out FILE")
        shutil.copyfile(schemamod.shipped_path(a.schema), a.out)
        print(f"copied {a.schema} schema to {a.out}; review it, then approve both checkpoints")
        return
    uri = schemamod.resolve(a.schema)
    if a.action == "approve":
        if not a.checkpoint:
            raise MedScopeError("approve needs --checkpoint schema|templates and --by NAME")
        print(json.dumps(schemamod.approve(uri, a.checkpoint, a.by, REPORT_PROMPT), indent=2))
        return
    sch = cfgmod.load(schemamod.Schema, uri)
    print(f"schema {sch.name} ({sch.organ}; {sch.framework})")
    for f in sch.fields:
        print(f"  {f.name:<28} {f.type:<7} {f.subcategory:<22} {' | '.join(f.choices())}")
    hashes = schemamod.checkpoint_hashes(sch, REPORT_PROMPT)
    approved = schemamod.read_approval(uri)
    for cp in schemamod.CHECKPOINTS:
        got = (approved.get(cp) or {})
        state = "approved by " + got["by"] if got.get("sha256") == hashes[cp] else (
            "CHANGED since approval" if got else "not approved")
        print(f"  checkpoint {cp}: {hashes[cp][:16]}… {state}")
