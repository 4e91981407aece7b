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


# --------------------------------------------------------------------------- pairs build


def test_a_truncated_approved_candidate_is_never_copied_into_a_pair_set(tmp_path):
    import yaml

    from medscope.pairs import review as rv
    from medscope.pairs.generators import ProceduralGenerator
    from tests.test_pairs_construction import _two_condition_spec

    spec = _two_condition_spec()
    work, out = tmp_path / "work", tmp_path / "set"
    rv.generate_round(spec, str(work), ProceduralGenerator(spec.generator))
    rv.decide(str(work), ["all-pending"], "approve", reviewer="dr-a")
    cands = rv.load_review(str(work))["candidates"]
    a, b = spec.conditions[0].condition, spec.conditions[1].condition
    cut = next(c for c in cands if c["condition"] == b and c["photo_type"] == "matched")
    path = work / cut["image"]
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a copy that stopped half-way
    with pytest.raises(Exception):  # Pillow itself cannot decode it: the premise, checked independently
        Image.open(io.BytesIO(path.read_bytes())).load()
    built = rv.build(spec, str(work), str(out))
    assert built["conditions"] == 1
    [entry] = built["incomplete"]
    assert entry["condition"] == b and entry["missing"] == []
    [bad] = entry["unreadable"]
    assert (bad["photo_type"], bad["candidate"], bad["reason"]) == ("matched", cut["id"], "unreadable image")
    assert bad["error_class"] not in ("", None, "Reject")  # Pillow's exception, by name
    manifest = yaml.safe_load(open(built["manifest"]))
    assert [c["condition"] for c in manifest["conditions"]] == [a]
    assert not (out / "photos" / f"{rv.slug(b)}-matched.png").exists()
    for pt in ("matched", "mismatched"):  # the good condition's photographs are whole copies
        rel = manifest["conditions"][0][pt]["image"]
        src = next(c for c in cands if c["condition"] == a and c["photo_type"] == pt)
        assert (out / rel).read_bytes() == (work / src["image"]).read_bytes()
