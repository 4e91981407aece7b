"""The report: one Markdown + self-contained HTML document from one or more scored runs.

Each scored run's ``run.json`` names the protocol that scored it; that protocol writes the
run's sections (``EvalProtocol.report_sections``), so the report of a demo that ran several
protocols is one document. ``report.html`` inlines everything and opens with no server;
``report.md`` keeps its images in ``images/``. Callers may add sections as ``(title, markdown)``,
``(title, {"markdown", "html"})`` or ``(title, [blocks])``. The summaries open the document and
the appendices (a section's ``appendix``: the transcripts) close it, after every protocol's sections.
"""

from __future__ import annotations


import dataclasses
import re

from medscope import protocols
from medscope.io import layout, safe_text, storage
from medscope.errors import MedScopeError
from medscope.protocols.base import parse_options
from medscope.render import thin
from medscope.render.document import Image, Panels, Para, Raw, Section, Table, slug, to_html, to_markdown


def run_protocol(run: str) -> str:
    """The protocol that scored run folder ``run``, as ``--protocol`` names it: ``run.json``'s
    ``protocol_spec`` (``module:Class`` for a protocol outside the package), else its
    ``protocol`` (runs scored before protocols were named in ``run.json`` are counterfactual runs).

    Parameters
    ----------
    run : str
        A scored run folder (local path or URI).

    Returns
    -------
    str
        A protocol name (e.g. 'counterfactual') or a ``module:Class`` spec.

    Raises
    ------
    MedScopeError
        When ``run`` holds neither ``run.json`` nor ``metrics.parquet``.
    """
    manifest_uri = layout.ScoredRun(run).manifest
    if not storage.exists(manifest_uri):
        if storage.exists(layout.ScoredRun(run).metrics):
            return "counterfactual"
        raise MedScopeError(f"{run}: not a scored run folder (no run.json or metrics.parquet; run `medscope score` first)")
    manifest = safe_text.read_json_object(manifest_uri)
    return manifest.get("protocol_spec") or manifest.get("protocol", "counterfactual")


def run_protocol_built(run: str, options: dict):
    """The protocol that scored ``run``, built with the options it scored under (its run.json)
    and the report ``options`` its ``Options`` sets at report.

    Parameters
    ----------
    run : str
        A scored run folder.
    options : dict
        Report options by name; those the protocol's ``Options`` does not have are ignored here (an
        option it has only at score is an error).

    Returns
    -------
    EvalProtocol
        An instance of the run's protocol class, its options the run's ``protocol_options`` updated
        with ``options``.

    Raises
    ------
    MedScopeError
        When an option of ``options`` is set at score rather than at report, or fails validation.
    """
    manifest_uri = layout.ScoredRun(run).manifest
    record = safe_text.read_json_object(manifest_uri) if storage.exists(manifest_uri) else {}
    name = run_protocol(run)
    spec = record.get("protocol_spec") or name
    cls = protocols.protocol_class(spec)
    model = protocols.options_class(cls)
    mine = {k: v for k, v in options.items() if k in model.model_fields}
    parse_options(model, mine, name, verbs=("report",), given_at="report")  # a score option here: said so
    return cls(parse_options(model, {**(record.get("protocol_options") or {}), **mine}, name))


def build_report(runs: str | list[str], out: str, extra_sections=(), title: str | None = None, **options) -> dict:
    """Write the report of the scored run folder(s) ``runs`` into folder ``out``; returns the written paths.

    ``options``: report options of the runs' protocols (``Options`` fields set at report, e.g. the
    counterfactual ``reference`` and ``gallery_cases``), each given to every run whose protocol
    has it; one that no run's protocol has is an error. None: the protocol's default.

    Parameters
    ----------
    runs : str or list of str
        One scored run folder, or several (their sections join one document).
    out : str
        The report folder; ``report.md``, ``report.html`` and ``images/`` are written there.
    extra_sections : iterable of (str, body)
        More sections, each ``(title, markdown)``, ``(title, {"markdown", "html"})`` or
        ``(title, [blocks])``.
    title : str, optional
        The document title; default "MedScope report: <first run's folder name>".
    **options
        Report options of the runs' protocols; None values are dropped.

    Returns
    -------
    dict
        ``"markdown"`` and ``"html"``: the written report paths, plus what the protocols' sections
        wrote (their ``report_sections`` info).

    Raises
    ------
    MedScopeError
        When ``runs`` is empty, or an option is one that no run's protocol has.
    """
    runs = [runs] if isinstance(runs, str) else list(runs)
    if not runs:
        raise MedScopeError("report: name at least one scored run")
    options = {k: v for k, v in options.items() if v is not None}
    built = [(run, run_protocol_built(run, options)) for run in runs]
    claimed = {k for _, p in built for k in type(p.options).model_fields}
    unclaimed = sorted(set(options) - claimed)
    if unclaimed:
        raise MedScopeError(f"report option(s) {unclaimed}: no run here is of a protocol that has them "
                            f"({', '.join(sorted({p.name for _, p in built}))})")
    sections: list[Section] = []
    written: dict = {}
    anchors_used: set[str] = set()
    images_used: set[str] = set()
    names = _run_names(runs)
    seen_protocols: set[str] = set()
    repeated = {p.name for _, p in built if sum(q.name == p.name for _, q in built) > 1}
    for (run, protocol), name in zip(built, names):
        # a second run of a protocol writes its files (transcripts, comparisons) in a folder of its own
        apart = protocol.name in seen_protocols
        seen_protocols.add(protocol.name)
        more, info = protocol.report_sections(run, storage.join(out, name) if apart else out)
        more = _kept_apart(more, name, anchors_used, images_used, files_under=name if apart else None,
                           titled=protocol.name in repeated)
        sections.extend(more)
        written.update(info)
    for t, body in extra_sections:
        sections.append(_extra(t, body))
    thin_cells = thin.summary_section(sections)  # the summary names the thin cells
    if thin_cells is not None:
        sections.append(thin_cells)
    # the summaries open the document, so its first screen answers "which models read the image?";
    # appendices (transcripts) close it, so no protocol's sections sit below another's reference material
    sections.sort(key=lambda s: (not (s.anchor or "").startswith("summary"), s.appendix))
    rep = layout.Report(out)
    title = title or f"MedScope report: {runs[0].rstrip('/').rsplit('/', 1)[-1]}"
    md, files = to_markdown(title, sections)
    for rel, data in files.items():
        storage.write_bytes(rep.file(rel), data)
    storage.write_text(rep.markdown, md)
    storage.write_text(rep.html, to_html(title, sections))
    return {"markdown": rep.markdown, "html": rep.html, **written}


def _run_names(runs: list[str]) -> list[str]:
    """A short, distinct name per run for anchors and folders: its folder's name, with the parent's
    name before it where two runs share a folder name, and a number where they still collide."""
    parts = [run.rstrip("/").split("/") for run in runs]
    names = [slug(p[-1]) or "run" for p in parts]
    for i, p in enumerate(parts):
        if names.count(names[i]) > 1 and len(p) > 1:
            names[i] = slug(f"{p[-2]}-{p[-1]}") or names[i]
    out = []
    for n in names:
        out.append(n if n not in out else f"{n}-{sum(o.startswith(n) for o in out) + 1}")
    return out


_LINK_MD = re.compile(r"\]\(([^)\s]+)\)")
_LINK_HTML = re.compile(r'\b(href|id)="([^"]+)"')


def _kept_apart(sections: list[Section], name: str, anchors_used: set[str], images_used: set[str],
                files_under: str | None = None, titled: bool = False) -> list[Section]:
    """One run's sections with anchors, element ids and image names that no earlier run's hold.

    Two runs of one protocol give the same anchors (``summary``, ``paired``, transcript ids) and
    image names; when one is already used, every anchor of the run gets ``-<name>`` and the links
    inside the run's own blocks follow; a used image name gets ``<name>-``. ``titled``: titles say
    which run they belong to (``(<name>)``). ``files_under``: the folder the run's files were
    written in (relative links to them are moved under it).
    """
    own = {s.anchor or slug(s.title) for s in sections}
    for s in sections:
        for b in s.blocks:
            if isinstance(b, Raw) and b.html:
                own.update(v for k, v in _LINK_HTML.findall(b.html) if k == "id")
    clash = own & anchors_used
    rename = {a: f"{a}-{name}" for a in own} if clash else {}
    anchors_used.update(rename.get(a, a) for a in own)

    def target(t: str) -> str:
        if t.startswith("#"):
            return "#" + rename.get(t[1:], t[1:])
        if files_under and not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("/"):
            return f"{files_under}/{t}"
        return t

    def text(t: str) -> str:
        t = _LINK_MD.sub(lambda m: f"]({target(m.group(1))})", t)
        return _LINK_HTML.sub(lambda m: f'{m.group(1)}="{rename.get(m.group(2), m.group(2)) if m.group(1) == "id" else target(m.group(2))}"', t)

    def image(img: Image) -> Image:
        n = img.name if img.name not in images_used else f"{name}-{img.name}"
        images_used.add(n)
        return dataclasses.replace(img, name=n)

    out = []
    for s in sections:
        blocks = []
        for b in s.blocks:
            if isinstance(b, Table):
                b = Table(list(b.headers), [[text(c) if isinstance(c, str) else c for c in r] for r in b.rows],
                          text(b.caption))
            elif isinstance(b, Image):
                b = image(b)
            elif isinstance(b, Panels):
                b = Panels([image(i) for i in b.images], [text(c) for c in b.captions])
            elif isinstance(b, Para):
                b = Para(text(b.text))
            elif isinstance(b, Raw):
                b = Raw(text(b.markdown), None if b.html is None else text(b.html))
            blocks.append(b)
        anchor = s.anchor or slug(s.title)
        out.append(dataclasses.replace(s, blocks=blocks, anchor=rename.get(anchor, anchor),
                                       title=f"{s.title} ({name})" if titled else s.title))
    return out


def _extra(title, body) -> Section:
    if isinstance(body, str):
        return Section(title, [Raw(body)])
    if isinstance(body, dict):
        return Section(title, [Raw(body.get("markdown", ""), body.get("html"))])
    return Section(title, list(body))


__all__ = ["build_report", "run_protocol"]
