"""Issue 32, the items left after the third campaign: each bad input placed beside good ones.

- rejects carry the exception's class (``error_class``), so rows can be grouped by cause;
- NaN / inf / out-of-range lesion fractions are refused on write and on read (views, cases);
- (further items of the issue follow below, one section each).
"""

import io
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from cohort_layouts import _save, gray_image, rect_mask
from medscope import cohorts, records, tablescan
from medscope.errors import MedScopeError
from medscope.training.synthetic import synthetic_views

pytestmark = pytest.mark.timeout(120)


def _png(array) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------- error_class


def test_rejects_name_the_exception_class_of_each_cause(tmp_path):
    root = tmp_path / "imf"
    m = rect_mask(32, 40, 5, 5, 20, 12).astype(np.uint8) * 255
    _save(f"{root}/images/good.png", gray_image(32, 40, 1))
    _save(f"{root}/masks/good_mask.png", m)
    truncated = _png(gray_image(32, 40, 2))[:60]
    (root / "images" / "cut.png").write_bytes(truncated)
    _save(f"{root}/masks/cut_mask.png", m)
    os.mkfifo(root / "images" / "pipe.png")
    _save(f"{root}/masks/pipe_mask.png", m)
    # what Pillow itself raises on the truncated bytes, worked out here, not by MedScope
    try:
        Image.open(io.BytesIO(truncated)).load()
        raise AssertionError("Pillow read a truncated PNG")
    except Exception as err:  # noqa: BLE001
        pillow_class = type(err).__name__
    cfg = cohorts.dataset_config("image-mask-folder", overrides={"mask_suffix": "_mask"})
    table, rejects = cohorts.load("image-mask-folder", str(root), cfg)
    assert table.column("source_file").to_pylist() == ["images/good.png"]
    got = {r["item_id"]: (r["reason"], r["error_class"]) for r in rejects if r["stage"] == "load"}
    assert got["images/cut.png"] == ("unreadable image", pillow_class)
    assert got["images/pipe.png"] == ("not a regular file", "Reject")  # MedScope's own check
    back = records.to_table("rejects", rejects)
    assert "error_class" in back.column_names


# --------------------------------------------------------------------------- NaN lesion fractions


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.1, 1.5])
def test_views_with_a_non_finite_lesion_fraction_are_refused_on_write_and_read(tmp_path, bad):
    rows = synthetic_views(3, seed=1, size=32)
    good = records.to_table("views", rows)  # the good rows are storable
    lesion = next(i for i, r in enumerate(rows) if r["lesion_area_frac"] > 0)
    rows[lesion]["lesion_area_frac"] = bad
    with pytest.raises(MedScopeError, match=r"views.lesion_area_frac must be a finite share in \[0, 1\]; 1 row"):
        records.to_table("views", rows)
    # a table written by another tool is refused when read, naming the file and the view
    frac = good.column("lesion_area_frac").to_pylist()
    frac[lesion] = bad
    written = good.set_column(good.column_names.index("lesion_area_frac"), "lesion_area_frac", pa.array(frac))
    uri = str(tmp_path / "views.parquet")
    pq.write_table(written, uri)
    view = rows[lesion]["view_id"]
    with pytest.raises(MedScopeError, match=f"{uri}.*1 row.*{view}"):
        records.read_table("views", uri)
    with pytest.raises(MedScopeError, match="lesion_area_frac must be a finite share"):
        list(tablescan.iter_rows("views", uri))
    # the same table with the good value reads back whole
    pq.write_table(good, uri)
    assert records.read_table("views", uri).num_rows == len(rows)
