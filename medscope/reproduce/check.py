"""Compare every derivable cell with the value the paper prints, within the paper's rounding.

A printed number stands for an interval: '0.110' for [0.1095, 0.1105]. A cell matches when what
MedScope computes lies in it (or, for a derivation from rounded inputs that returns an interval,
when the two intervals meet); a printed bound ('< 0.001') matches when ours satisfies it; a printed
word ('Effect') must be equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from medscope.errors import MedScopeError
from medscope.reproduce import derive
from medscope.reproduce.registry import Cell, Entry, Paper, bound, printed

EPS = 1e-9  # float noise, far below any printed digit


@dataclass
class CellResult:
    paper: str  # "000"
    entry: str  # "Table 5"
    cell: str
    printed: str
    ours: str
    difference: str
    status: str  # "match", "MISMATCH", "error"
    detail: str = ""


def _fmt(x: float, like: str) -> str:
    decimals = len(like.split(".", 1)[1]) if "." in like else 0
    if decimals == 0 and float(x).is_integer():
        return str(int(x))  # a count
    return f"{x:.{decimals + 2}f}" if abs(x) < 1e6 else f"{x:.6g}"


def judge(cell: Cell, ours) -> tuple[str, str, str]:
    """(ours as text, difference as text, 'match' / 'MISMATCH') of one cell.

    Parameters
    ----------
    cell : Cell
        The registry cell: its printed value and the ``scale`` applied to ours before comparing.
    ours : str, float or tuple of float
        The derivation's value: a word (compared for equality), a number, or a (low, high) interval
        from rounded inputs.

    Returns
    -------
    shown : str
        Ours after scaling, printed to two digits more than the paper (an interval as '[lo, hi]').
    difference : str
        Ours minus the printed value ('0' within float noise), the distance from the interval to the
        printed value ('0 (inside)' when inside), or '' for a word or a bound.
    status : str
        'match' or 'MISMATCH'.

    Raises
    ------
    MedScopeError
        When an interval is to be judged against a printed bound, or the printed value is not a number
        where one is needed.
    """
    text = cell.paper.strip()
    if isinstance(ours, str):
        return ours, "", "match" if ours == text else "MISMATCH"
    b = bound(text)
    if isinstance(ours, tuple):
        lo, hi = ours[0] * cell.scale, ours[1] * cell.scale
        if b:
            raise MedScopeError(f"{cell.id}: an interval cannot be judged against a bound ({text})")
        v, h = printed(text)
        shown = f"[{_fmt(lo, text)}, {_fmt(hi, text)}]"
        gap = 0.0 if lo - EPS <= v <= hi + EPS else (lo - v if v < lo else v - hi)
        ok = lo - EPS <= v + h and v - h <= hi + EPS
        return shown, f"{gap:+.{4}g}" if gap else "0 (inside)", "match" if ok else "MISMATCH"
    x = float(ours) * cell.scale
    if b:
        op, v = b
        ok = {"<": x < v, "<=": x <= v + EPS, ">": x > v, ">=": x >= v - EPS}[op]
        return _fmt(x, str(v)), "", "match" if ok else "MISMATCH"
    v, h = printed(text)
    diff = x - v
    return _fmt(x, text), f"{diff:+.2g}" if abs(diff) > EPS else "0", "match" if abs(diff) <= h + EPS else "MISMATCH"


def check_entry(paper: Paper, entry: Entry, ctx: derive.Context) -> list[CellResult]:
    """Every cell of one entry, derived and judged; a cell whose derivation raises ``MedScopeError`` is
    an 'error' row carrying the message, not a raised error.

    Parameters
    ----------
    paper : Paper
        The registry the entry belongs to.
    entry : Entry
        The entry whose cells are checked.
    ctx : derive.Context
        What the run's cells share (the constant policies, scored once).

    Returns
    -------
    list of CellResult
        One per cell, in the entry's order, with the cell's note as ``detail`` (or the error's message).
    """
    out = []
    for cell in entry.cells:
        try:
            ours = derive.compute(ctx, cell.compute, cell.args)
            shown, diff, status = judge(cell, ours)
            out.append(CellResult(paper.paper, entry.id, cell.id, cell.paper, shown, diff, status, cell.note))
        except MedScopeError as err:
            out.append(CellResult(paper.paper, entry.id, cell.id, cell.paper, "", "", "error", str(err)))
    return out


def check_papers(papers: list[Paper], entry_id: str | None = None, ctx: derive.Context | None = None
                 ) -> dict[tuple[str, str], list[CellResult]]:
    """Results per (paper, entry id), in registry order; ``entry_id``: only that entry.

    Parameters
    ----------
    papers : list of Paper
        The registries to check.
    entry_id : str, optional
        Only this entry of each paper, matched through ``registry.norm_id``.
    ctx : derive.Context, optional
        A context to derive in; without one a context is made here and closed on return.

    Returns
    -------
    dict of (str, str) to list of CellResult
        Key (paper id, entry id as the registry writes it).

    Raises
    ------
    MedScopeError
        When ``entry_id`` names no entry of a paper.
    """
    own = ctx is None
    ctx = ctx or derive.Context()
    try:
        results = {}
        for paper in papers:
            entries = [paper.entry(entry_id)] if entry_id else paper.entries
            for e in entries:
                results[(paper.paper, e.id)] = check_entry(paper, e, ctx)
        return results
    finally:
        if own:
            ctx.close()


def failures(results: dict) -> list[CellResult]:
    """The cells that did not match.

    Parameters
    ----------
    results : dict
        ``check_papers``'s results.

    Returns
    -------
    list of CellResult
        Every row whose status is not 'match' ('MISMATCH' or 'error'), in results order.
    """
    return [r for rows in results.values() for r in rows if r.status != "match"]
