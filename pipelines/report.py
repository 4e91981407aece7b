"""``medscope report --run URI [--run URI ...] --out DIR``: one Markdown + self-contained HTML
report of one or more scored runs, each protocol writing its own sections, with optional
sections from the §5.4 edit-visibility probes and a reader study's analysis."""

from __future__ import annotations

import json

from medscope import layout, storage
from medscope.report.build import build_report


def extra_sections(visibility: str | None = None, reader_analysis: str | None = None) -> list:
    """(title, body) sections from a ``medscope visibility`` JSON and a ``reader analyse`` folder."""
    sections: list = []
    if visibility:
        from medscope.qc.visibility import report_markdown

        sections.append(("Edit visibility (§5.4)", report_markdown(json.loads(storage.read_text(visibility)))))
    if reader_analysis:
        from medscope.reader.study_report import reader_section

        uri = storage.join(reader_analysis, layout.ReaderAnalysis.ANALYSIS)
        sections.append(reader_section(json.loads(storage.read_text(uri))))
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
    p.add_argument("--reader-analysis", help="folder of `medscope reader analyse`: the reader study (§7) as a section")
    p.add_argument("--min-items", type=int, default=None,
                   help="cells over fewer items are thin: marked, never called significant (default 10)")
    p.add_argument("--min-cases", type=int, default=None, help="cells over fewer cases are thin (default 5)")
    p.set_defaults(func=_report)


def _report(a) -> None:
    from medscope.report import thin

    with thin.configure(a.min_items, a.min_cases):
        print(json.dumps(build_report(a.run, a.out, reference=a.reference, gallery_cases=a.gallery_cases, plan=a.plan,
                                      extra_sections=extra_sections(a.visibility, a.reader_analysis)), indent=2))
