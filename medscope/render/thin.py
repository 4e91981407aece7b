"""Thin cells: every table cell says what it is over, and a cell too small to mean anything is
marked and never called significant, above chance or equivalent (docs/report.md).

One rule for every protocol's tables: a cell over fewer than ``min_items`` items or fewer than
``min_cases`` cases is *thin*. Tables write ``cell(text, n_items, n_cases)`` (the value, its n,
and a dagger when thin); text that would state a test's outcome goes through ``claim`` (a thin
cell's claim becomes "thin: not tested"); a report's summary lists the thin cells with
``summary``. The minimums are configurable (``medscope report --min-items / --min-cases``,
``configure``).
"""

from __future__ import annotations

from contextlib import contextmanager

import pydantic

from medscope.config import StrictModel

MARK = "†"


class ThinRule(StrictModel):
    """The smallest cell a table reports as a result."""

    # addition: none of the four papers sets a minimum cell size; 10 items or 5 cases
    min_items: int = pydantic.Field(10, ge=1, description="cells over fewer items are thin")
    min_cases: int = pydantic.Field(5, ge=1, description="cells over fewer cases (clusters) are thin")


_RULE = ThinRule()


def rule() -> ThinRule:
    """The minimums in force (``configure`` changes them inside its block).

    Returns
    -------
    ThinRule
        ``min_items`` and ``min_cases``; default 10 and 5.
    """
    return _RULE


@contextmanager
def configure(min_items: int | None = None, min_cases: int | None = None):
    """Use other minimums inside the block (``medscope report`` wraps the report build in it).

    Parameters
    ----------
    min_items : int, optional
        Cells over fewer items are thin; None or 0: keep the current minimum.
    min_cases : int, optional
        Cells over fewer cases (clusters) are thin; None or 0: keep the current minimum.

    Yields
    ------
    ThinRule
        The rule in force inside the block; the previous one is restored on leaving it.
    """
    global _RULE
    before = _RULE
    _RULE = ThinRule(min_items=min_items or before.min_items, min_cases=min_cases or before.min_cases)
    try:
        yield _RULE
    finally:
        _RULE = before


def _n(v) -> int | None:
    try:
        return None if v is None or v != v else int(v)  # NaN -> unknown
    except (TypeError, ValueError):
        return None


def is_thin(n_items=None, n_cases=None) -> bool:
    """Whether a cell over ``n_items`` items and ``n_cases`` cases is thin (an unknown count is
    not held against it; a zero is).

    Parameters
    ----------
    n_items : int, optional
        Items the cell is over; None or NaN: unknown.
    n_cases : int, optional
        Cases (clusters) the cell is over; None or NaN: unknown.

    Returns
    -------
    bool
        True when a known count is below its minimum.
    """
    items, cases = _n(n_items), _n(n_cases)
    return (items is not None and items < _RULE.min_items) or (cases is not None and cases < _RULE.min_cases)


def n_text(n_items=None, n_cases=None) -> str:
    """``n=28, 7 cases`` (what is known of the two).

    Parameters
    ----------
    n_items : int, optional
        Items the cell is over; None or NaN: left out.
    n_cases : int, optional
        Cases the cell is over; None or NaN: left out.

    Returns
    -------
    str
        E.g. ``"n=28, 7 cases"``; '' when neither is known.
    """
    items, cases = _n(n_items), _n(n_cases)
    parts = ([f"n={items}"] if items is not None else []) + ([f"{cases} case{'s' * (cases != 1)}"] if cases is not None else [])
    return ", ".join(parts)


def cell(text: str, n_items=None, n_cases=None) -> str:
    """A table cell: the value, what it is over, and the thin mark when it is thin.

    Parameters
    ----------
    text : str
        The formatted value.
    n_items : int, optional
        Items the cell is over.
    n_cases : int, optional
        Cases the cell is over.

    Returns
    -------
    str
        ``"<text> (n=.., .. cases)"`` with `` †`` when thin; ``text`` alone when neither count is known.
    """
    n = n_text(n_items, n_cases)
    return f"{text} ({n}){' ' + MARK if is_thin(n_items, n_cases) else ''}" if n else text


def claim(text: str, n_items=None, n_cases=None) -> str:
    """A verdict or test outcome ("Above chance", "Equivalent", "significant"): replaced for a
    thin cell, which is never called any of them.

    Parameters
    ----------
    text : str
        The verdict to state.
    n_items : int, optional
        Items the cell is over.
    n_cases : int, optional
        Cases the cell is over.

    Returns
    -------
    str
        ``text``, or ``"thin (n=..): not tested"`` for a thin cell.
    """
    return f"thin ({n_text(n_items, n_cases)}): not tested" if is_thin(n_items, n_cases) else text


def note() -> str:
    """The caption line every table with thin marks carries.

    Returns
    -------
    str
        The caption, naming the minimums in force.
    """
    return (f"{MARK} thin cell: fewer than {_RULE.min_items} items or {_RULE.min_cases} cases; shown, never called "
            "significant, above chance or equivalent.")


def summary(labels: list[str]) -> str:
    """The report summary's line naming the thin cells (or saying there are none).

    Parameters
    ----------
    labels : list of str
        One label per thin cell; the first 12 are named, the rest counted.

    Returns
    -------
    str
        One sentence.
    """
    if not labels:
        return f"No thin cells (every cell has at least {_RULE.min_items} items and {_RULE.min_cases} cases)."
    shown = "; ".join(labels[:12]) + (f"; and {len(labels) - 12} more" if len(labels) > 12 else "")
    return (f"Thin cells ({len(labels)}; fewer than {_RULE.min_items} items or {_RULE.min_cases} cases, marked "
            f"{MARK}, never called significant): {shown}.")


def marked_cells(sections) -> dict[str, int]:
    """Section title -> how many of its table cells carry the thin mark (for the report summary).

    Parameters
    ----------
    sections : iterable of Section
        Report sections (``medscope.render.document.Section``).

    Returns
    -------
    dict of str to int
        Section title -> count of thin-marked cells, for sections with at least one.
    """
    from medscope.render.document import to_markdown

    out = {}
    for s in sections:
        n = to_markdown("", [s])[0].count(f"{MARK} |")
        if n:
            out[s.title] = n
    return out


def summary_section(sections):
    """The report summary's "Thin cells" section (None when no cell is thin).

    Parameters
    ----------
    sections : iterable of Section
        The report's sections.

    Returns
    -------
    Section or None
        A "Thin cells" section (anchor ``summary-thin-cells``) counting the marked cells per section;
        None when no cell is marked.
    """
    from medscope.render.document import Para, Section

    counts = marked_cells(sections)
    if not counts:
        return None
    where = "; ".join(f"{t}: {n}" for t, n in counts.items())
    return Section("Thin cells", [Para(
        f"{sum(counts.values())} table cells are thin (fewer than {_RULE.min_items} items or {_RULE.min_cases} cases; "
        f"marked {MARK}): shown with their n, never called significant, above chance or equivalent. By section: "
        f"{where}.")], anchor="summary-thin-cells")
