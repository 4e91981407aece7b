"""``medscope report --run URI --out DIR``: the Markdown + self-contained HTML report of a scored run."""

from __future__ import annotations

import json

from medscope.report.build import build_report


def register(sub) -> None:
    p = sub.add_parser("report", help="Markdown + self-contained HTML report of a scored run folder")
    p.add_argument("--run", required=True, action="append",
                   help="run folder written by `medscope score` (repeat for several protocols' runs)")
    p.add_argument("--out", required=True, help="folder for report.md, report.html, images/, transcripts/")
    p.add_argument("--reference", help="model the paired differences are taken against (default: highest ESG)")
    p.add_argument("--gallery-cases", type=int, default=4)
    p.set_defaults(func=lambda a: print(json.dumps(
        build_report(a.run, a.out, reference=a.reference, gallery_cases=a.gallery_cases), indent=2)))
