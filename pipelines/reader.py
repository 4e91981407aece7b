"""``medscope reader``: the blinded physician reading of the counterfactual paper §7.

pack: draw the stratified sample from a views table's main test and write a reading pack
(``reading/`` = the static page and its images, for the readers; ``key.json`` beside it).
analyse: score the answer files of a pack and its supplements; write analysis.json,
rejects.parquet and a report (report.md, report.html) with the reader-study section.
"""

from __future__ import annotations

import json
import sys

from pydantic import Field as F

from medscope.io import storage
from medscope.config import StrictModel
from medscope.reader import PAGE_FILE, READING_DIR, REPORT_HTML, REPORT_MD
from pipelines.support.flags import add_action, cli


def _pack(a) -> int:
    from medscope.reader.pack import write_pack

    key = write_pack(a.views, a.out, name=a.name, per_kind=a.per_kind, seed=a.seed, size=a.size, tool=a.tool,
                     after=a.after or [], title=a.title)
    if key["per_kind"] < key["per_kind_requested"]:
        print(f"warning: only {key['per_kind']} images per kind (asked {key['per_kind_requested']}): the test split "
              f"has {key['eligible_lesion_cases']} eligible lesion cases and {key['eligible_lesion_free_cases']} "
              f"lesion-free cases", file=sys.stderr)
    summary = {k: key[k] for k in ("name", "pack_hash", "tool", "per_kind", "per_kind_requested", "size")}
    summary.update(images=len(key["items"]), page=storage.join(a.out, READING_DIR, PAGE_FILE),
                   give_readers=storage.join(a.out, READING_DIR), keep=storage.join(a.out, "key.json"))
    print(json.dumps(summary, indent=2))
    return 0


def _analyse(a) -> int:
    from medscope.reader.analysis import analyse
    from medscope.reader.study_report import write_report

    result = analyse(a.pack, a.answers, a.out, reference=a.reference, acceptable=a.acceptable)
    md, html, images = write_report(result)
    storage.write_text(storage.join(a.out, REPORT_MD), md)
    storage.write_text(storage.join(a.out, REPORT_HTML), html)
    for name, png in images.items():
        storage.write_bytes(storage.join(a.out, "images", name), png)
    m = result["majority_localized"]
    print(json.dumps({"readers": sorted(result["readers"]), "answers_scored": result["answers_scored"],
                      "rejects": len(result["rejects"]), "files_rejected": result["files_rejected"],
                      "majority_residual": {k: m[k] for k in ("k", "n", "ties", "rate", "ci_low", "ci_high")},
                      "per_reader": {r: {"auc_edited_vs_unmodified": v["auc_edited_vs_unmodified"],
                                         "auc_erased_vs_control": v["auc_erased_vs_control"],
                                         "residual": f"{v['residual']['k']}/{v['residual']['n']}"}
                                     for r, v in result["readers"].items()},
                      "out": a.out}, indent=2))
    return 0


class ReaderPackConfig(StrictModel):
    """``medscope reader pack``: the blinded sample, its reading page and answer key."""

    views: str = F(description="views table (or the folder `medscope views build` wrote)")
    out: str = F(description="new pack folder: reading/ for readers, key.json kept back")
    name: str = F("reading", description="pack name (part of the hash; use e.g. 'main', 'supplement-1')")
    per_kind: int = F(32, ge=1, description="images per kind (4 kinds; supplements: 24)")
    seed: int = F(0, description="seed of the stratified draw")
    size: int = F(768, ge=1, description="long side of every re-saved image, pixels")
    tool: str | None = F(None, description="erasure tool of the erased and control images (default: the commonest)")
    after: list[str] = F([], description="earlier pack: draw a supplement from cases not in it",
                         json_schema_extra=cli(repeat=True, metavar="PACK"))
    title: str = F("Image reading", description="heading shown to readers")


class ReaderAnalyseConfig(StrictModel):
    """``medscope reader analyse``: answer files scored against their pack(s)."""

    pack: list[str] = F(min_length=1, description="pack folder (repeat for supplements)",
                        json_schema_extra=cli(repeat=True, metavar="PACK"))
    answers: list[str] = F(min_length=1, description="answer files downloaded from the page",
                           json_schema_extra=cli(nargs="+", metavar="FILE"))
    out: str = F(description="folder for analysis.json, rejects.parquet, report.md/.html")
    reference: str | None = F(None, description="JSON of zero-shot edit-visibility AUCs (model -> AUC), §5.4")
    acceptable: float = F(0.10, ge=0, le=1, description="acceptable residual-finding rate")


def register(sub) -> None:
    """Add the ``reader`` verb and its actions (pack, analyse).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``reader`` is added to them.
    """
    p = sub.add_parser("reader", help="reader-study packs (static reading page) and their analysis (counterfactual paper §7)")
    rs = p.add_subparsers(dest="reader_verb", metavar="ACTION")
    rs.required = True
    add_action(rs, "pack", ReaderPackConfig, _pack, "draw the blinded sample and write the reading page + answer key")
    add_action(rs, "analyse", ReaderAnalyseConfig, _analyse, "score answer files against their pack(s)",
               aliases=("analyze",))
