"""The report: one Markdown + self-contained HTML document from one or more scored runs.

Each scored run's ``run.json`` names the protocol that scored it; that protocol writes the
run's sections (``EvalProtocol.report_sections``), so the report of a demo that ran several
protocols is one document. ``report.html`` inlines everything and opens with no server;
``report.md`` keeps its images in ``images/``. Callers may add sections as ``(title, markdown)``,
``(title, {"markdown", "html"})`` or ``(title, [blocks])``.
"""

from __future__ import annotations

import json

from medscope import layout, protocols, storage
from medscope.errors import MedScopeError
from medscope.report import thin
from medscope.report.render import Raw, Section, to_html, to_markdown


def run_protocol(run: str) -> str:
    """The protocol that scored run folder ``run``, as ``--protocol`` names it: ``run.json``'s
    ``protocol_spec`` (``module:Class`` for a protocol outside the package), else its
    ``protocol`` (runs scored before protocols were named in ``run.json`` are counterfactual runs)."""
    manifest_uri = layout.ScoredRun(run).manifest
    if not storage.exists(manifest_uri):
        if storage.exists(layout.ScoredRun(run).metrics):
            return "counterfactual"
        raise MedScopeError(f"{run}: not a scored run folder (no run.json or metrics.parquet; run `medscope score` first)")
    manifest = json.loads(storage.read_text(manifest_uri))
    return manifest.get("protocol_spec") or manifest.get("protocol", "counterfactual")


def build_report(runs: str | list[str], out: str, reference: str | None = None, extra_sections=(),
                 gallery_cases: int = 4, title: str | None = None, plan: str | None = None) -> dict:
    """Write the report of the scored run folder(s) ``runs`` into folder ``out``; returns the written paths.

    ``reference``, ``gallery_cases`` and ``plan`` reach the counterfactual protocol's sections
    (the model the paired differences are taken against; cases shown in the gallery; a plan
    whose families are adjusted and printed as the paper's Table 6).
    """
    runs = [runs] if isinstance(runs, str) else list(runs)
    if not runs:
        raise MedScopeError("report: name at least one scored run")
    sections: list[Section] = []
    written: dict = {}
    for run in runs:
        name = run_protocol(run)
        protocol = protocols.load(name)
        options = ({"reference": reference, "gallery_cases": gallery_cases, "plan": plan}
                   if name == "counterfactual" else {})
        more, info = protocol.report_sections(run, out, **options)
        sections.extend(more)
        written.update(info)
    for t, body in extra_sections:
        sections.append(_extra(t, body))
    thin_cells = thin.summary_section(sections)  # the summary names the thin cells (issue 25)
    if thin_cells is not None:
        sections.append(thin_cells)
    # the summaries open the document, so its first screen answers "which models read the image?"
    sections.sort(key=lambda s: not (s.anchor or "").startswith("summary"))
    rep = layout.Report(out)
    title = title or f"MedScope report: {runs[0].rstrip('/').rsplit('/', 1)[-1]}"
    md, files = to_markdown(title, sections)
    for rel, data in files.items():
        storage.write_bytes(rep.file(rel), data)
    storage.write_text(rep.markdown, md)
    storage.write_text(rep.html, to_html(title, sections))
    return {"markdown": rep.markdown, "html": rep.html, **written}


def _extra(title, body) -> Section:
    if isinstance(body, str):
        return Section(title, [Raw(body)])
    if isinstance(body, dict):
        return Section(title, [Raw(body.get("markdown", ""), body.get("html"))])
    return Section(title, list(body))


__all__ = ["build_report", "run_protocol"]
