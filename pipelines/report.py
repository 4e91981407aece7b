"""``medscope report --run URI [--run URI ...] --out DIR``: one Markdown + self-contained HTML
report of one or more scored runs, each protocol writing its own sections, with optional
sections from the §5.4 edit-visibility probes and a reader study's analysis. The runs'
protocols' report options (``--reference``, ``--gallery-cases``, ...) are flags generated from
their ``Options`` models (pipelines/support/protocol_flags.py)."""

from __future__ import annotations

import json

import argparse

from medscope import layout, protocols, storage
from medscope.report.build import build_report, run_protocol
from pipelines.support import protocol_flags


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
    p.add_argument("--visibility", help="JSON of `medscope visibility`: the §5.4 probes' AUCs as a section")
    p.add_argument("--reader-analysis", help="folder of `medscope reader analyse`: the reader study (§7) as a section")
    p.add_argument("--min-items", type=int, default=None,
                   help="cells over fewer items are thin: marked, never called significant (default 10)")
    p.add_argument("--min-cases", type=int, default=None, help="cells over fewer cases are thin (default 5)")
    protocol_flags.install(p, "report", _reported_protocols)  # the runs' protocols' report options as flags
    p.set_defaults(func=_report)


def _reported_protocols(argv: list[str]) -> list[str] | None:
    """The protocols of the runs a ``report`` command line names (None: no run named yet)."""
    pre = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    pre.add_argument("--run", action="append")
    try:
        known, _ = pre.parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    if not known.run:
        return None
    specs = []
    for run in known.run:
        manifest = layout.ScoredRun(run).manifest
        record = json.loads(storage.read_text(manifest)) if storage.exists(manifest) else {}
        specs.append(record.get("protocol_spec") or run_protocol(run))
    return specs


def _report(a) -> None:
    from medscope.report import thin

    protocol_flags.refuse_misplaced(a)
    options: dict = {}
    for spec in dict.fromkeys(_reported_protocols(["--run=" + r for r in a.run]) or []):
        options.update(protocol_flags.given(a, protocols.options_class(protocols.protocol_class(spec)), "report"))
    with thin.configure(a.min_items, a.min_cases):
        print(json.dumps(build_report(a.run, a.out, extra_sections=extra_sections(a.visibility, a.reader_analysis),
                                      **options), indent=2))
