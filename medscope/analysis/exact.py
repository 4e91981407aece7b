"""Metric values as exact rationals, so that a pre-registered rule is decided by the counts,
never by floating point (counterfactual paper §3.6, §3.7).

Every §3.8 metric is a signed sum of ratios (``view_metrics.METRICS``): healthy-image claims is
k / n, ESG is a / b - c / d, net utility is (sum of rewards) / n. The metrics table keeps each
point value's ratios as text in its ``counts`` column (``"14/100"``, ``"30/100 - 10/100"``,
``"122.1/1115"``), and a paired difference keeps both sides' (``"30/100 - 35/100"``). ``value``
reads that text back as a ``fractions.Fraction``; a threshold or margin from a plan is read
from its decimal text (0.02 is exactly 1/50), so 14/100 <= 12/100 + 0.02 holds, as the paper's
inequality reads.

A count is an integer, or a sum of rewards: the cost matrices' entries are decimals with at
most four places, so a reward sum is written to six decimal places (its float error is far
below 1e-6) and read back exactly.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

# (sign, numerator, denominator): one ratio of a signed sum
Term = tuple[int, float, float]

PLACES = 6  # decimal places a reward sum is written to (cost-matrix entries have at most 4)
_TERM = re.compile(r"\s*([+-])?\s*(\d+(?:\.\d+)?)/(\d+)\s*")


def _number(x: float) -> str:
    text = f"{round(abs(float(x)), PLACES):.{PLACES}f}".rstrip("0").rstrip(".")
    return text or "0"


def counts_text(terms: list[Term]) -> str | None:
    """The signed sum of ratios as text, ``"14/100"`` or ``"30/100 - 10/100"``; None when a
    denominator is 0 (the metric is undefined).

    Parameters
    ----------
    terms : list of tuple of (int, float, float)
        (sign +1 / -1, numerator, denominator) of each ratio; a negative numerator (a reward sum)
        moves its sign to the term's.

    Returns
    -------
    str or None
        The text ``value`` reads back.
    """
    parts = []
    for sign, num, den in terms:
        if not den or not math.isfinite(num) or not math.isfinite(den):
            return None
        s = sign * (-1 if num < 0 else 1)
        ratio = f"{_number(num)}/{int(round(den))}"
        parts.append((("-" if s < 0 else "") + ratio) if not parts else (f" - {ratio}" if s < 0 else f" + {ratio}"))
    return "".join(parts) if parts else None


def negated(text: str) -> str:
    """``text`` with every term's sign flipped (the reference's side of a difference).

    Parameters
    ----------
    text : str
        A ``counts_text``.

    Returns
    -------
    str
        The same ratios, signs flipped.
    """
    return counts_text([(-s, n, d) for s, n, d in terms_of(text)])


def difference(a: str | None, b: str | None) -> str | None:
    """The counts of a - b (a paired difference: model's ratios, then the reference's negated).

    Parameters
    ----------
    a, b : str or None
        ``counts_text`` of the two sides.

    Returns
    -------
    str or None
        ``a`` followed by ``b``'s terms negated; None when either is None.
    """
    if a is None or b is None:
        return None
    return counts_text(terms_of(a) + [(-s, n, d) for s, n, d in terms_of(b)])


def terms_of(text: str) -> list[Term]:
    """The ratios of a counts text.

    Parameters
    ----------
    text : str
        A ``counts_text``.

    Returns
    -------
    list of tuple of (int, float, float)
        (sign, numerator, denominator) of each ratio.

    Raises
    ------
    ValueError
        When ``text`` is not a signed sum of ratios.
    """
    out, pos = [], 0
    while pos < len(text):
        m = _TERM.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"not a signed sum of ratios: {text!r}")
        out.append((-1 if m.group(1) == "-" else 1, float(m.group(2)), float(m.group(3))))
        pos = m.end()
    return out


def value(text: str) -> Fraction:
    """A counts text read as an exact rational.

    Parameters
    ----------
    text : str
        A ``counts_text`` (``"14/100 - 12/100"``).

    Returns
    -------
    fractions.Fraction
        The signed sum of its ratios, each numerator read from its decimal text.

    Raises
    ------
    ValueError
        When ``text`` is not a signed sum of ratios, or a denominator is 0.

    References
    ----------
    .. [1] counterfactual paper, §3.6, §3.7.
    """
    total = Fraction(0)
    for m in _TERM.finditer(text):
        total += (-1 if m.group(1) == "-" else 1) * Fraction(m.group(2)) / int(m.group(3))
    terms_of(text)  # refuses anything that is not a signed sum of ratios
    return total


def threshold(x: float | int | str) -> Fraction:
    """A plan's threshold or margin as the rational its decimal text names (0.02 -> 1/50, not
    the nearest binary float).

    Parameters
    ----------
    x : float, int or str
        The number as the plan gives it.

    Returns
    -------
    fractions.Fraction
        ``Fraction(str(x))``.
    """
    return Fraction(str(x))


def of_row(val: float, counts: str | None, signed: bool = False) -> tuple[Fraction, str]:
    """A metrics row's point value as a rational, with how it was read.

    Parameters
    ----------
    val : float
        The row's ``value``.
    counts : str or None
        The row's ``counts`` (None in tables written before the column existed, or for metrics
        that are not ratios).
    signed : bool, optional
        Print the value with its sign (a difference).

    Returns
    -------
    value : fractions.Fraction
        From ``counts`` when given; else from ``val``'s shortest decimal text (the float as
        printed, not its binary expansion).
    text : str
        ``"14/100 = 0.140"``, or the rounded value alone without counts.
    """
    fmt = "{:+.3f}" if signed else "{:.3f}"
    if counts:
        exact_value = value(counts)
        return exact_value, f"{counts} = {fmt.format(float(exact_value))}"
    return Fraction(repr(float(val))), fmt.format(float(val))
