"""The static reading page (counterfactual paper §7 "Procedure"): one self-contained HTML file, inline CSS
and JS, no server and no network; it opens from a USB stick (file://) or any static host.

The page holds no answer key: only opaque image names, each case's clinical question, the pack
name and hash. Each reader gets a random order (browser crypto), answers the edit rating (four
levels) and the clinical question (yes / no / cannot tell), with keys 1-4, Y/N/C, Enter and the
arrows. Progress is kept in localStorage under the pack hash, so a reload resumes where the
reader was. The downloaded answer file names the pack hash and the reader's code, specialty
and years of experience. Nothing about image kinds, counts by kind or results is shown.
"""

from __future__ import annotations

import html
import json
from importlib import resources


def render_page(*, title: str, pack_name: str, pack_hash: str, items: list[dict]) -> str:
    """The page's HTML; ``items`` are ``{"id", "src", "question"}`` in listing order.

    Parameters
    ----------
    title : str
        The page title (HTML-escaped).
    pack_name : str
        The pack name shown on the page and written into answer files.
    pack_hash : str
        The pack hash written into answer files.
    items : list of dict
        ``{"id": opaque image name, "src": relative image path, "question": clinical question}``.

    Returns
    -------
    str
        The self-contained HTML document.

    References
    ----------
    .. [1] counterfactual paper, §7 "Procedure".
    """
    template = resources.files("medscope.reader").joinpath("data/page.html").read_text(encoding="utf-8")
    data = json.dumps({"pack_name": pack_name, "pack_hash": pack_hash, "items": items}, separators=(",", ":"))
    # inside <script>, "</" could close the element early: JSON allows "<\/" for the same text
    data = data.replace("</", "<\\/")
    return (template.replace("__TITLE__", html.escape(title)).replace("__PACK_NAME__", html.escape(pack_name))
            .replace("__PACK_JSON__", data))
