"""A small views table in the real schema, for sweep tests."""

from __future__ import annotations

import numpy as np

from medscope.io import records
from medscope.images import encode_png


def views_rows(n: int, private_every: int = 0, allow: tuple[str, ...] = ()) -> list[dict]:
    """Rows of the ``views`` table: 16 x 16 grey "original" views, expected present and absent by turns,
    two views a case.

    Parameters
    ----------
    n : int
        Number of rows (``v000`` on).
    private_every : int, optional
        Every ``private_every``-th row (from the first) is private; 0 for none.
    allow : tuple of str, optional
        ``endpoint_allowlist`` of the private rows.

    Returns
    -------
    list of dict
        The rows.
    """
    rows = []
    for i in range(n):
        img = np.full((16, 16), 20 * (i % 10), np.uint8)
        private = bool(private_every) and i % private_every == 0
        rows.append({
            "view_id": f"v{i:03d}", "case_id": f"c{i // 2:03d}", "kind": "original", "tool": "none",
            "degradation": None, "image": encode_png(img), "edit_mask": None,
            "expected": "present" if i % 2 == 0 else "absent", "source": "phantom", "imaging_type": "xray",
            "patient_id": None, "group_id": None, "split": "test", "finding": "nodule",
            "question": "Is there a nodule?", "question_kind": "presence", "critical": False,
            "lesion_area_frac": 0.0, "lesion_bbox": None, "width": 16, "height": 16,
            "contrast_before": None, "contrast_after": None, "edit_score": None, "lesion_untouched": None,
            "passed": True, "reject_reason": None, "recipe_hash": "test",
            "private": private, "endpoint_allowlist": list(allow) if private else [],
        })
    return rows


def write_views(uri: str, n: int, **kw) -> str:
    """Write ``views_rows(n, **kw)`` as the views table at ``uri``.

    Parameters
    ----------
    uri : str
        Where to write the table (one Parquet file).
    n : int
        Number of rows.
    **kw
        ``private_every`` and ``allow``, passed to `views_rows`.

    Returns
    -------
    str
        ``uri``.
    """
    records.write_table("views", views_rows(n, **kw), uri)
    return uri
