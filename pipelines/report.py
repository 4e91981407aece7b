"""``medscope report --run URI [--run URI ...] --out DIR``: one Markdown + self-contained HTML
report of one or more scored runs, each protocol writing its own sections."""

from __future__ import annotations

import json

from medscope import storage
from medscope.report.build import build_report


def _extra(args) -> list:
    sections = []
    if args.visibility:
        from medscope.qc.visibility import report_markdown

        sections.append(("Edit visibility (§5.4)", report_markdown(json.loads(storage.read_text(args.visibility)))))
    return sections


def register(sub) -> None:
    p = sub.add_parser("report", help="Markdown + self-contained HTML report of one or more scored runs")
    p.add_argument("--run", required=True, action="append",
                   help="scored-run folder written by `medscope score` (repeat for several protocols' runs)")
    p.add_argument("--out", required=True, help="folder for report.md, report.html, images/, transcripts/")
    p.add_argument("--reference", help="model the paired differences are taken against (default: highest ESG)")
    p.add_argument("--gallery-cases", type=int, default=4)
    p.add_argument("--plan", help="plan file whose families to adjust and print (configs/plans/primary_27.yaml)")
    p.add_argument("--visibility", help="JSON of `medscope visibility`: the §5.4 probes' AUCs as a section")
    p.set_defaults(func=lambda a: print(json.dumps(
        build_report(a.run, a.out, reference=a.reference, gallery_cases=a.gallery_cases, plan=a.plan,
                     extra_sections=_extra(a)), indent=2)))
