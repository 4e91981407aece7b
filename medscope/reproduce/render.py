"""The reproduction page: per paper, per table or figure, the paper's value beside ours (derivable
cells) or what regenerates it (needs data), as Markdown and a self-contained HTML page, and the
plain-text lines the command prints."""

from __future__ import annotations

import html

from medscope.reproduce.check import CellResult
from medscope.reproduce import registry
from medscope.reproduce.registry import Entry, Paper
from medscope.render.document import Para, Raw, Section, Table, to_html, to_markdown

TITLE = "MedScope reproduce: the four papers' tables beside MedScope's numbers"


def _summary(papers: list[Paper], results: dict) -> Section:
    rows = []
    for p in papers:
        entries = [e for e in p.entries if (p.paper, e.id) in results]
        cells = [r for e in entries for r in results[(p.paper, e.id)]]
        by = {s: sum(e.status == s for e in entries) for s in ("derivable", "partly derivable", "needs data", "qualitative")}
        rows.append([registry.PAPER_NAMES[p.paper], p.title, str(len(entries)), str(by["derivable"]), str(by["partly derivable"]),
                     str(by["needs data"]), str(by["qualitative"]), str(len(cells)),
                     str(sum(r.status == "match" for r in cells)), str(sum(r.status != "match" for r in cells))])
    return Section("Summary", [Table(
        ["Paper", "Title", "Entries", "Derivable", "Partly", "Needs data", "Qualitative", "Cells checked", "Match", "Mismatch"],
        rows, "Cells checked: derivable cells computed by MedScope's own scoring and statistics code from numbers "
              "the paper prints; a match is within the paper's printed rounding.")])


def entry_blocks(entry: Entry, rows: list[CellResult]) -> list:
    """The report blocks of one entry: its status, what makes it qualitative, the table of checked cells
    and the commands that regenerate what needs data.

    Parameters
    ----------
    entry : Entry
        A registry entry (a table or figure of a paper).
    rows : list of CellResult
        The entry's checked cells (``check.check_entry``); none: no cells table.

    Returns
    -------
    list
        ``Para``, ``Table`` and ``Raw`` blocks of ``medscope.render.document``, in page order.
    """
    blocks = [Para(f"**Status: {entry.status}.**")]
    if entry.qualitative:
        blocks.append(Para(f"Qualitative: {entry.qualitative}"))
    if rows:
        blocks.append(Para(f"Derivation: {entry.derivation}"))
        blocks.append(Table(["Cell", "Paper", "MedScope", "Difference", "Status"],
                            [[r.cell, r.printed, r.ours, r.difference,
                              r.status if not r.detail else f"{r.status} ({r.detail})"] for r in rows]))
    nd = entry.needs_data
    if nd:
        cmds = "\n".join(nd.commands)
        text = f"Needs data: {nd.reason}. Cohort: {nd.cohort}. Models: {nd.models}."
        blocks.append(Raw(f"{text}\n\n```bash\n{cmds}\n```",
                          f"<p>{html.escape(text)}</p><pre><code>{html.escape(cmds)}</code></pre>"))
    return blocks


def sections(papers: list[Paper], results: dict) -> list[Section]:
    """The page's sections: the summary table, then one section per checked entry.

    Parameters
    ----------
    papers : list of Paper
        The registries, in page order.
    results : dict
        ``check.check_papers``'s results, keyed by (paper id, entry id); an entry without a key is left
        out (``--table`` asked for another).

    Returns
    -------
    list of Section
        The summary section, then one per entry with results, each with an anchor built from the paper
        and entry id.
    """
    out = [_summary(papers, results)]
    for p in papers:
        for e in p.entries:
            if (p.paper, e.id) not in results:
                continue  # --table: only the entry asked for
            out.append(Section(f"{registry.PAPER_NAMES[p.paper][:1].upper()}{registry.PAPER_NAMES[p.paper][1:]} {e.id}: {e.title}", entry_blocks(e, results.get((p.paper, e.id), [])),
                               anchor=f"seed{p.paper}-{e.id}".lower().replace(" ", "-").replace("§", "s").replace(".", "-")))
    return out


def page(papers: list[Paper], results: dict) -> tuple[str, str]:
    """(Markdown, self-contained HTML) of the reproduction page.

    Parameters
    ----------
    papers : list of Paper
        The registries, in page order.
    results : dict
        ``check.check_papers``'s results, keyed by (paper id, entry id).

    Returns
    -------
    markdown : str
        The page as Markdown.
    html : str
        The same page as one self-contained HTML document.
    """
    secs = sections(papers, results)
    md, _ = to_markdown(TITLE, secs)
    return md, to_html(TITLE, secs)


def text_lines(papers: list[Paper], results: dict) -> list[str]:
    """What ``medscope reproduce`` prints: one line per derivable cell, the commands of needs-data entries.

    Parameters
    ----------
    papers : list of Paper
        The registries, in print order.
    results : dict
        ``check.check_papers``'s results, keyed by (paper id, entry id); entries without a key are skipped.

    Returns
    -------
    list of str
        The lines, without newlines: a header per paper and per entry, then the entry's cells (paper,
        ours, difference, status), needs-data reason and commands, and qualitative note.
    """
    lines = []
    for p in papers:
        lines.append(f"== {registry.PAPER_NAMES[p.paper]}: {p.title}")
        for e in p.entries:
            if (p.paper, e.id) not in results:
                continue
            lines.append(f"-- {e.id}: {e.title} [{e.status}]")
            for r in results[(p.paper, e.id)]:
                lines.append(f"   {r.cell:<48} paper {r.printed:>10}  ours {r.ours:>22}  diff {r.difference:>12}  {r.status}"
                             + (f"  ({r.detail})" if r.status != "match" and r.detail else ""))
                if r.status == "match" and (r.detail or "").startswith("addition:"):
                    # a match that rests on a value the paper does not give says so, on the console too
                    lines.append(f"     {r.detail}")
            if e.needs_data:
                lines.append(f"   needs data: {e.needs_data.reason}")
                lines += [f"     $ {c}" for c in e.needs_data.commands]
            if e.qualitative:
                lines.append(f"   qualitative: {e.qualitative}")
    return lines
