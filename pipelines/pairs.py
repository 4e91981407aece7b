"""``medscope pairs``: generate, review, build and check paired-modality sets (paired-modality paper).

    medscope pairs generate --spec pairs.yaml --work W      # candidates -> W/review.yaml (pending)
    medscope pairs review W [--approve ID ...] [--reject ID ...] [--retry ID ... --feedback TEXT]
    medscope pairs build --spec pairs.yaml --work W --out SET   # approved photos -> SET/manifest.yaml
    medscope pairs check SET                                 # counts and manifest rejects
    medscope pairs embedded --out SET                        # the generated stand-in set
    medscope eval run --protocol paired_modality --items SET --models configs/models/pairs.yaml \
        --conditions photo_only,paired --out EVAL
    medscope score --episodes EVAL --out RUN [--judge rule|NAME
        --judge-models configs/models/pairs-judge.yaml --pooled-models A,B]
    medscope report --run RUN --out REPORT

Evaluation, scoring (extract-then-judge) and the report are the shared verbs; ``medscope demo``
runs the whole protocol on the embedded set with a loopback judge.
"""

from __future__ import annotations

import json
import os
import sys

from pydantic import Field as F

from medscope import config as cfgmod
from medscope.io import records, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.protocols.paired_modality import PROTOCOL, tables
from pipelines.support.flags import add_action, cli

PROTOCOL_SPEC = "paired_modality"
JUDGE_KEY_ENV = "MEDSCOPE_PAIRS_LOOPBACK_JUDGE_KEY"  # a placeholder for the loopback judge, not a secret
# The demo's offline subjects (three constant policies, the colour reader, the swayed simulation)
DEMO_MODELS = cfgmod.load_yaml(cfgmod.shipped("models", "pairs-offline.yaml"))["models"]


def _spec(path: str):
    from medscope.pairs.spec import PairsSpec

    return cfgmod.load(PairsSpec, path)


def _spec_dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


def check(uri: str, rejects_out: str | None = None) -> dict:
    """Counts of a manifest's good photographs and its rejects by reason (written beside it).

    Parameters
    ----------
    uri : str
        A paired-modality ``manifest.yaml`` or the set folder holding it.
    rejects_out : str or None, optional
        Where the rejects table is written; None: beside the manifest (in the folder ``uri`` names, or
        the manifest's folder). Written only when an entry is rejected.

    Returns
    -------
    dict
        ``photos`` (good photographs), ``conditions`` (distinct conditions among them), ``matched``
        and ``mismatched`` (photographs of each type), ``rejects`` ({reason: count}) and
        ``rejects_table`` (the rejects table's URI, None when nothing was rejected).
    """
    photos, rejects = PROTOCOL().photos(uri)
    out = rejects_out or storage.join(storage.absolute(uri) if storage.is_dir(uri) else _spec_dir(uri),
                                      tables.MANIFEST_REJECTS)
    if rejects:
        records.write_table("rejects", rejects, out)
    reasons: dict[str, int] = {}
    for r in rejects:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    return {"photos": len(photos), "conditions": len({p.condition for p in photos}),
            "matched": sum(p.photo_type == "matched" for p in photos),
            "mismatched": sum(p.photo_type == "mismatched" for p in photos),
            "rejects": reasons, "rejects_table": out if rejects else None}


def demo_judge_entry(url: str) -> dict:
    """The judge of the embedded demo: a loopback server speaking the Anthropic wire with the
    deterministic rule judge behind it, reached through the real Anthropic adapter.

    Sets ``MEDSCOPE_PAIRS_LOOPBACK_JUDGE_KEY`` to a placeholder in the environment when unset.

    Parameters
    ----------
    url : str
        Base URL of the loopback judge server.

    Returns
    -------
    dict
        The judge's model entry: ``name``, ``kind`` (``"anthropic"``), ``model``, ``base_url``,
        ``api_key_env``, ``max_output_tokens`` and ``timeout_s``.
    """
    os.environ.setdefault(JUDGE_KEY_ENV, "loopback-placeholder")
    return {"name": "loopback-rule-judge", "kind": "anthropic", "model": "rule-judge-loopback",
            "base_url": url, "api_key_env": JUDGE_KEY_ENV, "max_output_tokens": 500, "timeout_s": 30}


# --- CLI --------------------------------------------------------------------------------------------


class PairsGenerateConfig(StrictModel):
    """``medscope pairs generate``: one round of candidate photographs."""

    spec: str = F(description="pairs spec YAML (conditions, prompts, captions, generator)")
    work: str = F(description="work folder (candidates/, review.yaml)")


class PairsReviewConfig(StrictModel):
    """``medscope pairs review``: list candidates, or record decisions."""

    work: str = F(description="work folder (candidates/, review.yaml)", json_schema_extra=cli(positional=True))
    approve: list[str] = F([], description="candidate ids to approve, or all-pending",
                           json_schema_extra=cli(nargs="+", metavar="ID"))
    reject: list[str] = F([], description="candidate ids to reject", json_schema_extra=cli(nargs="+", metavar="ID"))
    retry: list[str] = F([], description="candidate ids to generate again (with feedback)",
                         json_schema_extra=cli(nargs="+", metavar="ID"))
    feedback: str = F("", description="what the next attempt should change (needed with retry)")
    reviewer: str = F(default_factory=lambda: os.environ.get("USER", ""),
                      description="the reviewer's name (default: $USER)")


class PairsBuildConfig(StrictModel):
    """``medscope pairs build``: approved photographs -> OUT/manifest.yaml."""

    spec: str = F(description="pairs spec YAML (conditions, prompts, captions, generator)")
    work: str = F(description="work folder the review was recorded in")
    out: str = F(description="set folder: manifest.yaml and the photographs")


class PairsCheckConfig(StrictModel):
    """``medscope pairs check``: a manifest's good photographs and rejects by reason."""

    manifest: str = F(description="manifest.yaml or its folder", json_schema_extra=cli(positional=True))
    strict: bool = F(False, description="fail (exit non-zero) when any entry is rejected")


class PairsEmbeddedConfig(StrictModel):
    """``medscope pairs embedded``: the embedded generated pair set."""

    out: str = F(description="set folder to write")


def register(sub) -> None:
    """Add the ``pairs`` verb and its actions (generate, review, build, check, embedded).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``pairs`` is added to them.
    """
    p = sub.add_parser("pairs", help="paired-modality sets (paired-modality paper): generate, review, build, check")
    v = p.add_subparsers(dest="pairs_verb", metavar="VERB")
    v.required = True
    add_action(v, "generate", PairsGenerateConfig, _generate, "one round of candidate photographs into WORK/review.yaml")
    add_action(v, "review", PairsReviewConfig, _review, "list candidates, or record approve / reject / retry decisions")
    add_action(v, "build", PairsBuildConfig, lambda a: _print(__import__("medscope.pairs.review", fromlist=["build"]).build(
        _spec(a.spec), a.work, a.out, _spec_dir(a.spec))), "approved photographs -> OUT/manifest.yaml with provenance")
    add_action(v, "check", PairsCheckConfig, _check, "read a manifest: good photographs and rejects by reason")
    add_action(v, "embedded", PairsEmbeddedConfig, lambda a: _print(
        __import__("medscope.pairs.embedded", fromlist=["x"]).write_embedded_set(a.out)),
        "write the embedded generated pair set")


def _check(args) -> None:
    got = check(args.manifest)
    _print(got)
    if args.strict and got["rejects"]:
        raise MedScopeError(f"{args.manifest}: {sum(got['rejects'].values())} entries rejected "
                            f"({', '.join(sorted(got['rejects']))}); see {got['rejects_table']}")


def _generate(args) -> None:
    from medscope.pairs.generators import build_generator
    from medscope.pairs.review import generate_round

    spec = _spec(args.spec)
    summary = generate_round(spec, args.work, build_generator(spec.generator), _spec_dir(args.spec))
    _print(summary)
    for h in summary["retries_waiting_on_pending"]:  # a retry never vanishes without a word
        print(f"medscope: retry of {h['retry']} not generated: sibling candidate(s) {', '.join(h['pending'])} still "
              f"pending; decide them first (medscope pairs review {args.work} --approve/--reject ID), then rerun",
              file=sys.stderr)
    if summary["retries_waiting_on_pending"] and not summary["generated"]:
        from pipelines.support.accounting import EXIT_NO_WORK, UnitsIncomplete

        raise UnitsIncomplete(f"pairs generate made nothing: {len(summary['retries_waiting_on_pending'])} retry(ies) "
                              "wait on pending candidates (above)", EXIT_NO_WORK)


def _review(args) -> None:
    from medscope.pairs.review import approvers, decide, load_review

    done = 0
    if args.retry and not args.feedback:
        raise MedScopeError("--retry needs --feedback")
    for decision, ids in (("approve", args.approve), ("reject", args.reject), ("retry", args.retry)):
        if ids:
            done += decide(args.work, ids, decision, args.feedback, args.reviewer)
    if done:
        print(f"recorded {done} decision(s) in {storage.join(args.work, tables.REVIEW)}", file=sys.stderr)
    for c in load_review(args.work)["candidates"]:
        by = approvers(c)
        print(f"{c['decision']:8s} {c['id']:48s} {c['image']}" + (f"  approved by: {', '.join(by)}" if by else "")
              + (f"  feedback: {c['feedback']}" if c.get("feedback") else ""))


def _print(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))
