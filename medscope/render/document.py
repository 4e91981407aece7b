"""One document model, two renderers: Markdown (with image files beside it) and a
self-contained HTML page (images base64-inlined, styles inline, only in-page links)."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Image:
    png: bytes
    name: str  # file name beside the Markdown report
    alt: str = ""


@dataclass
class Panels:
    """Images side by side, each with its caption under it (the gallery's views of one case)."""

    images: list[Image]
    captions: list[str]


@dataclass
class Para:
    text: str


@dataclass
class Raw:
    markdown: str
    html: str | None = None  # None: converted from the Markdown


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)
    anchor: str = ""
    # reference material (e.g. transcripts) the report sets after every other section, so
    # that it never pushes another protocol's sections down the page
    appendix: bool = False


def slug(text: str) -> str:
    """An anchor name from a title: lower case, each run of other characters one hyphen.

    Parameters
    ----------
    text : str
        A section title.

    Returns
    -------
    str
        Lower-case letters, digits and single hyphens, none at either end.
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def to_markdown(title: str, sections: list[Section], image_dir: str = "images") -> tuple[str, dict[str, bytes]]:
    """(Markdown text, {relative path: PNG bytes}) to write beside it.

    Parameters
    ----------
    title : str
        The document's level-1 heading.
    sections : list of Section
        In order; each a level-2 heading (anchor ``anchor`` or its title's ``slug``) and its blocks.
    image_dir : str
        The folder, relative to the Markdown file, that images are linked from.

    Returns
    -------
    str
        The Markdown, opening with the title and a line of contents links.
    dict of str to bytes
        ``"<image_dir>/<name>"`` -> PNG bytes of each ``Image`` block.
    """
    out, files = [f"# {title}", ""], {}
    out += ["Contents: " + " · ".join(f"[{s.title}](#{s.anchor or slug(s.title)})" for s in sections), ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Table):
                if b.caption:
                    out += [f"*{b.caption}*", ""]
                out.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
                out.append("|" + "---|" * len(b.headers))
                out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in b.rows]
                out.append("")
            elif isinstance(b, Image):
                path = f"{image_dir}/{b.name}"
                files[path] = b.png
                out += [f"![{b.alt or b.name}]({path})", ""]
            elif isinstance(b, Panels):
                for img, caption in zip(b.images, b.captions):
                    path = f"{image_dir}/{img.name}"
                    files[path] = img.png
                    out += [f"![{img.alt or img.name}]({path})", f"*{caption}*", ""]
            elif isinstance(b, Para):
                out += [b.text, ""]
            elif isinstance(b, Raw):
                out += [b.markdown, ""]
    return "\n".join(out), files


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
.scroll{overflow-x:auto;max-width:100%;margin:0.5em 0 1.5em}table{border-collapse:collapse}
#summary+ul{background:#f4f8fb;border-left:4px solid #1f4e79;padding:0.6em 0.6em 0.6em 2em}
pre,code{overflow-wrap:anywhere}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}td{white-space:nowrap}
.scroll td:first-child,.scroll th:first-child{position:sticky;left:0;z-index:1;box-shadow:inset -1px 0 #ccc}
.scroll td:first-child{background:#fff}
.caption{font-style:italic;margin:0.8em 0 0.2em}
img{max-width:100%}.panels{display:flex;flex-wrap:wrap;gap:8px;margin:0.5em 0}
.panels figure{margin:0;width:220px}.panels img{width:220px}
.panels figcaption{font-size:0.85em;color:#444;margin-top:2px}
pre{background:#f7f7f7;padding:0.5em;white-space:pre-wrap}details{margin:0.3em 0}"""


def _inline(text: str) -> str:
    """Escape, then the little inline Markdown this report uses: links to anchors, bold, code."""
    t = html.escape(text, quote=False)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"`(.+?)`", r"<code>\1</code>", t)
    t = re.sub(r"\[([^\]]+)\]\((#[^)\s]+)\)", lambda m: f'<a href="{html.escape(m[2])}">{m[1]}</a>', t)
    return t


def md_to_html(md: str) -> str:
    """Minimal Markdown (headings, pipe tables, lists, paragraphs, data-URI images) to HTML.

    Parameters
    ----------
    md : str
        Markdown of the subset: ``#`` headings (shifted down two levels, at most h6), pipe tables,
        ``-`` / ``*`` lists, one-line paragraphs, images given as PNG data URIs; inline bold, code and
        in-page links.

    Returns
    -------
    str
        HTML fragment, one element per line; text is escaped.
    """
    out, lines, i = [], md.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in re.split(r"(?<!\\)\|", lines[i].strip())[1:-1]]
                if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                    rows.append(cells)
                i += 1
            head, body = rows[0], rows[1:]
            out.append("<div class='scroll'><table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</table></div>")
            continue
        m = re.match(r"(#{1,6})\s+(.*)", line)
        img = re.fullmatch(r"!\[([^\]]*)\]\((data:image/png;base64,[A-Za-z0-9+/=]+)\)", line.strip())
        if m:
            n = min(len(m[1]) + 2, 6)
            out.append(f"<h{n}>{_inline(m[2])}</h{n}>")
        elif img:
            out.append(f'<img alt="{html.escape(img[1])}" src="{img[2]}">')
        elif line.startswith(("- ", "* ")):
            items = []
            while i < len(lines) and lines[i].startswith(("- ", "* ")):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return "\n".join(out)


def data_uri(png: bytes) -> str:
    """PNG bytes as a ``data:`` URI, for images inlined in the HTML page.

    Parameters
    ----------
    png : bytes
        A PNG file.

    Returns
    -------
    str
        ``"data:image/png;base64,..."``.
    """
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def to_html(title: str, sections: list[Section]) -> str:
    """The self-contained HTML page: styles inline, images as data URIs, only in-page links.

    Parameters
    ----------
    title : str
        The page title and its h1 heading.
    sections : list of Section
        In order; each an h2 (id its ``anchor`` or its title's ``slug``) and its blocks. A ``Raw``
        block gives its ``html``, else its Markdown through ``md_to_html``.

    Returns
    -------
    str
        A complete HTML document.
    """
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
             "<p>Contents: " + " · ".join(f'<a href="#{s.anchor or slug(s.title)}">{html.escape(s.title)}</a>'
                                         for s in sections) + "</p>"]
    for s in sections:
        parts.append(f'<h2 id="{s.anchor or slug(s.title)}">{html.escape(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Table):
                # the caption sits above the scroller, so it wraps at the page width, not the table's
                cap = f"<p class='caption'>{html.escape(b.caption)}</p>" if b.caption else ""
                parts.append(f"{cap}<div class='scroll'><table><tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in b.headers)
                             + "</tr>" + "".join("<tr>" + "".join(f"<td>{_inline(str(c))}</td>" for c in r) + "</tr>"
                                                 for r in b.rows) + "</table></div>")
            elif isinstance(b, Image):
                parts.append(f'<img alt="{html.escape(b.alt or b.name)}" src="{data_uri(b.png)}">')
            elif isinstance(b, Panels):
                parts.append("<div class='panels'>" + "".join(
                    f'<figure><img alt="{html.escape(img.alt or img.name)}" src="{data_uri(img.png)}">'
                    f"<figcaption>{_inline(caption)}</figcaption></figure>"
                    for img, caption in zip(b.images, b.captions)) + "</div>")
            elif isinstance(b, Para):
                parts.append(f"<p>{_inline(b.text)}</p>")
            elif isinstance(b, Raw):
                parts.append(b.html if b.html is not None else md_to_html(b.markdown))
    parts.append("</body></html>")
    return "\n".join(parts)
