"""Values a table may not hold although its schema's types allow them.

A lesion fraction is a float column, so Arrow stores NaN, inf or 1.5 without a word; read back,
a NaN compares False with every threshold and silently labels a lesion view "absent".
``records`` calls :func:`check_fractions` on every table it writes (``validate``) and reads
(``conform``, the streaming reader too), so such a table is refused with one error naming the
file, the column, the count and the first ids.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from medscope.errors import MedScopeError

# Shares of an image: finite and in [0, 1]. A NaN lesion fraction compares False with every
# threshold, so it would silently label a lesion view "absent"; refused on write and read.
FRACTIONS: dict[str, tuple[str, ...]] = {"cases": ("lesion_area_frac",), "views": ("lesion_area_frac",),
                                         "scores": ("lesion_area_frac",)}


# Image sizes in pixels: at least 1 (an image of -5 or 0 columns is no image the table describes).
SIZES: dict[str, tuple[str, ...]] = {"cases": ("width", "height"), "views": ("width", "height")}


def check_fractions(name: str, table: pa.Table, where: str = "") -> None:
    """Raise MedScopeError naming the column, the count and the first ids of rows whose
    fraction (``FRACTIONS``) is NaN, infinite or outside [0, 1]; nulls are the schema's affair.

    Parameters
    ----------
    name : str
        The table's name (``cases``, ``views``, ``scores``, ...); tables not in ``FRACTIONS`` pass.
    table : pyarrow.Table
        The table to check; a listed column it lacks is skipped.
    where : str, optional
        The file or URI named in the error; ``""`` for the table's name.

    Raises
    ------
    MedScopeError
        When a fraction column holds a value that is NaN, infinite or outside [0, 1], or a size
        column (``SIZES``) one below 1; the message gives the count and up to five ``view_id`` /
        ``case_id`` / ``item_id`` values (or bad values).
    """
    for column in SIZES.get(name, ()):
        if column in table.column_names:
            bad = pc.fill_null(pc.less(table.column(column), 1), False)
            _refuse_rows(name, column, table, bad, where, "must be a size of at least 1 pixel")
    for column in FRACTIONS.get(name, ()):
        if column not in table.column_names:
            continue
        col = table.column(column)
        ok = pc.fill_null(pc.and_(pc.is_finite(col), pc.and_(pc.greater_equal(col, 0), pc.less_equal(col, 1))), True)
        _refuse_rows(name, column, table, pc.invert(ok), where, "must be a finite share in [0, 1]")


def _refuse_rows(name: str, column: str, table: pa.Table, bad, where: str, rule: str) -> None:
    """Raise MedScopeError naming the file, the column, the rule, the count and the first ids
    of the rows ``bad`` marks; nothing when it marks none."""
    n = pc.sum(bad).as_py() or 0
    if n:
        key = next((k for k in ("view_id", "case_id", "item_id") if k in table.column_names), None)
        ids = table.filter(bad).column(key).to_pylist()[:5] if key else []
        raise MedScopeError(f"{where or name}: {name}.{column} {rule}; {n} row(s) are not "
                            f"(e.g. {ids or pc.unique(table.column(column).filter(bad)).to_pylist()[:5]}); "
                            "rebuild the table")
