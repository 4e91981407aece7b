"""``medscope report --run URI [--run URI ...] --out DIR``: one Markdown + self-contained HTML
report of one or more scored runs, each protocol writing its own sections, with optional
sections from the §5.4 edit-visibility detectors and a reader study's analysis. The runs'
protocols' report options (``--reference``, ``--gallery-cases``, ...) are flags generated from
their ``Options`` models (pipelines/support/protocol_flags.py)."""

from __future__ import annotations

import json

import pydantic

from medscope import protocols
from medscope.io import layout, safe_text, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.report.build import build_report, run_protocol
from pipelines.support import protocol_flags
from pipelines.support.flags import add_config_flags, cli, config_from_args


class ReportConfig(StrictModel):
    """Markdown + self-contained HTML report of one or more scored runs. Below the report's own
    settings, the report options of the runs' protocols (from their Options models)."""

    run: list[str] = pydantic.Field(min_length=1, description=(
        "scored-run folder written by `medscope score` (repeat for several protocols' runs)"),
        json_schema_extra=cli(repeat=True, metavar="RUN"))
    out: str = pydantic.Field(description="folder for report.md, report.html, images/, transcripts/")
    visibility: str | None = pydantic.Field(None, description="JSON of `medscope visibility`: the §5.4 edit detectors' AUCs "
                                                              "as a section")
    reader_analysis: str | None = pydantic.Field(None, description="folder of `medscope reader analyse`: the reader "
                                                                   "study (§7) as a section")
    min_items: int | None = pydantic.Field(None, ge=1, description="cells over fewer items are thin: marked, never "
                                                                  "called significant (default 10)")
    min_cases: int | None = pydantic.Field(None, ge=1, description="cells over fewer cases are thin (default 5)")


def extra_sections(visibility: str | None = None, reader_analysis: str | None = None) -> list:
    """(title, body) sections from a ``medscope visibility`` JSON and a ``reader analyse`` folder.

    Parameters
    ----------
    visibility : str or None, optional
        URI of the JSON written by ``medscope visibility`` (the §5.4 edit detectors' AUCs); None or
        empty: no visibility section.
    reader_analysis : str or None, optional
        Folder written by ``medscope reader analyse``; its analysis JSON becomes the reader-study
        section. None or empty: no reader section.

    Returns
    -------
    list of tuple of (str, str)
        The (title, Markdown body) sections, visibility first; empty when neither is given.
    """
    sections: list = []
    if visibility:
        from medscope.qc.visibility import report_markdown

        sections.append(("Edit visibility (§5.4)", _from_file(visibility, "medscope visibility", report_markdown)))
    if reader_analysis:
        from medscope.reader.study_report import reader_section

        uri = storage.join(reader_analysis, layout.ReaderAnalysis.ANALYSIS)
        sections.append(_from_file(uri, "medscope reader analyse", reader_section))
    return sections


def _from_file(uri: str, writer: str, build):
    """``build`` over the JSON object in ``uri``; a file of another shape is one line naming it.

    A list where the object belongs is refused by ``read_json_object``; an object whose fields
    are missing or of the wrong kind fails inside ``build``, and is named here the same way."""
    doc = safe_text.read_json_object(uri)
    try:
        return build(doc)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as err:
        raise MedScopeError(f"{uri}: not the JSON that `{writer}` writes ({type(err).__name__}: {err})") from None


def register(sub) -> None:
    """Add the ``report`` verb, with the report options of the named runs' protocols as flags.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``report`` is added to them.
    """
    p = sub.add_parser("report", help="Markdown + self-contained HTML report of one or more scored runs",
                       description=ReportConfig.__doc__)
    add_config_flags(p, ReportConfig)
    protocol_flags.install(p, "report", _reported_protocols)  # the runs' protocols' report options as flags
    p.set_defaults(func=_report)


def _reported_protocols(argv: list[str]) -> list[str] | None:
    """The protocols of the runs a ``report`` command line names (None: no run named yet)."""
    known = protocol_flags.peek(argv, "--run", repeat=("--run",))
    if known is None or not known.run:
        return None
    specs = []
    for run in known.run:
        manifest = layout.ScoredRun(run).manifest
        record = safe_text.read_json_object(manifest) if storage.exists(manifest) else {}
        specs.append(record.get("protocol_spec") or run_protocol(run))
    return specs


def _report(a) -> None:
    from medscope.render import thin

    protocol_flags.refuse_misplaced(a)
    cfg = config_from_args(a, ReportConfig, source="medscope report")
    options: dict = {}
    for spec in dict.fromkeys(_reported_protocols(["--run=" + r for r in cfg.run]) or []):
        options.update(protocol_flags.given(a, protocols.options_class(protocols.protocol_class(spec)), "report"))
    with thin.configure(cfg.min_items, cfg.min_cases):
        print(json.dumps(build_report(cfg.run, cfg.out, extra_sections=extra_sections(cfg.visibility,
                                                                                      cfg.reader_analysis),
                                      **options), indent=2))
