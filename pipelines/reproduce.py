"""``medscope reproduce``: every table and figure of the four source papers, the paper's printed
values beside what MedScope computes (``medscope/reproduce``; docs/reproduce.md).

Derivable cells are computed by the scoring and statistics code a user's run goes through; a
needs-data entry prints the commands that regenerate it on the user's own cohort. ``--check``
fails (exit 2) when any derivable cell differs from the paper beyond its printed rounding;
``--out DIR`` writes ``reproduce.md`` and a self-contained ``reproduce.html``.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Literal

import pydantic

from medscope.io import storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.reproduce import registry
from pipelines.support.flags import add_config_flags, config_from_args

PAGE_MD, PAGE_HTML = "reproduce.md", "reproduce.html"


class ReproduceConfig(StrictModel):
    """``medscope reproduce`` flags (or ``--config FILE`` of the same keys)."""

    paper: Literal["counterfactual", "benchmark_mcq", "paired_modality", "organ_presence",
                   "000", "001", "002", "003"] | None = pydantic.Field(
        None, description="only this paper: counterfactual, benchmark_mcq, paired_modality or organ_presence "
                          "(or the number of its file in seeds/, 000-003); default: all four")

    @property
    def paper_id(self) -> str | None:
        return registry.PAPER_KEYS.get(self.paper, self.paper)
    table: str | None = pydantic.Field(
        None, description="only this table or figure of --paper, e.g. 'Table 5', T5, 'Figure 3', '§5.2 McNemar'")
    check: bool = pydantic.Field(False, description="exit non-zero if any derivable cell differs from the paper")
    out: str | None = pydantic.Field(None, description="folder URI for reproduce.md and reproduce.html (default: print only)")
    quiet: bool = pydantic.Field(False, description="print only the summary line (and any mismatch)")


class ReproduceMismatch(MedScopeError):
    """A derivable cell differs from the paper beyond its printed rounding."""


def reproduce(cfg: ReproduceConfig, stream=None) -> dict:
    """Check the registry's derivable cells, print them, write the page; returns counts and paths.

    Parameters
    ----------
    cfg : ReproduceConfig
        The ``medscope reproduce`` settings: ``paper``, ``table``, ``check``, ``out`` and ``quiet``.
    stream : file-like or None, optional
        Where the lines are printed; None: ``sys.stdout``.

    Returns
    -------
    dict
        ``entries``, ``derivable``, ``partly_derivable``, ``needs_data``, ``qualitative`` (entries by status),
        ``cells``, ``matched`` and ``mismatched`` (derivable cells); with ``out``, also ``markdown`` and ``html``
        (the pages' URIs).

    Raises
    ------
    MedScopeError
        When ``table`` is given without ``paper``.
    ReproduceMismatch
        With ``check``, when a derivable cell differs from the paper beyond its printed rounding.
    """
    from medscope.reproduce import check, registry, render

    stream = stream or sys.stdout
    if cfg.table and not cfg.paper:
        raise MedScopeError("--table needs --paper (tables are numbered per paper)")
    papers = [registry.load(p) for p in ([cfg.paper_id] if cfg.paper else registry.PAPER_IDS)]
    # the derivations score the image-blind policies through the scoring code, whose progress
    # lines (stderr) name episodes the user never ran; --quiet means the summary line alone
    with contextlib.redirect_stderr(io.StringIO()) if cfg.quiet else contextlib.nullcontext():
        results = check.check_papers(papers, cfg.table)
    bad = check.failures(results)
    n_cells = sum(len(v) for v in results.values())
    if not cfg.quiet:
        for line in render.text_lines(papers, results):
            print(line, file=stream)
    else:
        for r in bad:
            print(f"{registry.PAPER_NAMES[r.paper]} {r.entry} / {r.cell}: paper {r.printed}, ours {r.ours}: {r.status} {r.detail}".rstrip(),
                  file=stream)
    entries = [e for p in papers for e in p.entries if (p.paper, e.id) in results]
    by_status = {s: sum(e.status == s for e in entries) for s in ("derivable", "partly derivable", "needs data", "qualitative")}
    summary = {"entries": len(entries), **{k.replace(" ", "_"): v for k, v in by_status.items()},
               "cells": n_cells, "matched": n_cells - len(bad), "mismatched": len(bad)}
    print(headline(summary, cfg.quiet), file=stream)
    if cfg.out:
        md, html = render.page(papers, results)
        storage.write_text(storage.join(cfg.out, PAGE_MD), md)
        storage.write_text(storage.join(cfg.out, PAGE_HTML), html)
        summary.update(markdown=storage.join(cfg.out, PAGE_MD), html=storage.join(cfg.out, PAGE_HTML))
    if cfg.check and bad:
        raise ReproduceMismatch(f"{len(bad)} derivable cell(s) differ from the paper: "
                                + "; ".join(f"{registry.PAPER_NAMES[r.paper]} {r.entry} / {r.cell}" for r in bad[:5])
                                + (" ..." if len(bad) > 5 else ""))
    return summary


def headline(summary: dict, quiet: bool = False) -> str:
    """The line ``reproduce`` ends with: what its cells are, how many match, and what needs data.

    The derivable cells are arithmetic and statistics on the papers' printed values (and the
    image-blind policies scored on Table 5's printed view counts); no model result is among them.
    Every model result needs the user's data and runs: the entries that hold one are counted apart.

    Parameters
    ----------
    summary : dict
        What :func:`reproduce` returns (``matched``, ``cells``, ``mismatched``, ``entries`` and the
        entries by status).
    quiet : bool, optional
        The commands were not printed (``--quiet``): the line says how to see them.

    Returns
    -------
    str
        E.g. ``reproduce: arithmetic on the papers' printed values: 330 of 330 cells match; model
        results: need data (33 of 40 tables and figures; the commands under each 'needs data');
        3 qualitative``.
    """
    need = summary["needs_data"] + summary["partly_derivable"]
    differ = f" ({summary['mismatched']} differ)" if summary["mismatched"] else ""
    return (f"reproduce: arithmetic on the papers' printed values: {summary['matched']} of {summary['cells']} cells "
            f"match{differ}; model results: need data ({need} of {summary['entries']} tables and figures; "
            + ("`medscope reproduce` without --quiet prints the commands)" if quiet else "the commands under each 'needs data')")
            + (f"; {summary['qualitative']} qualitative" if summary["qualitative"] else ""))


def report_section(summary: dict, page_dir: str) -> tuple[str, dict]:
    """A report section that says how many derivable cells matched and links the page
    (``page_dir``: where the page lies relative to the report, e.g. ``../reproduce/``).

    Parameters
    ----------
    summary : dict
        What :func:`reproduce` returns (reads ``matched``, ``cells`` and ``entries``).
    page_dir : str
        The page's folder relative to the report, ending in ``/``.

    Returns
    -------
    title : str
        ``"Paper reproduction"``.
    bodies : dict of str to str
        ``"markdown"`` and ``"html"``: the section's text in each form.
    """
    import html

    text = (f"Arithmetic on the papers' printed values: {summary['matched']} of {summary['cells']} cells match within "
            f"their rounding. Model results need data: all {summary['entries']} tables and figures are listed, with the "
            "commands that regenerate them on real data (`medscope reproduce`).")
    href = page_dir + PAGE_HTML
    return "Paper reproduction", {
        "markdown": f"{text} Page: [{PAGE_HTML}]({href}).",
        "html": f"<p>{html.escape(text).replace('`medscope reproduce`', '<code>medscope reproduce</code>')} "
                f"Page: <a href=\"{html.escape(href)}\">{PAGE_HTML}</a>.</p>"}


def register(sub) -> None:
    """Add the ``reproduce`` verb.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``reproduce`` is added to them.
    """
    p = sub.add_parser("reproduce", help="every table of the four papers: the paper's numbers beside MedScope's, "
                                         "or the commands that regenerate them")
    add_config_flags(p, ReproduceConfig)
    p.set_defaults(func=lambda a: reproduce(config_from_args(a, source="medscope reproduce")))
