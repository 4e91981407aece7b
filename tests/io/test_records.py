"""Schemas validate on write; part folders read back whole and stay write-once."""

import pyarrow as pa
import pytest

from medscope import protocols
from medscope.io import layout, records
from medscope.errors import MedScopeError
from medscope.protocols import counterfactual  # noqa: F401 - registers its scores table (used below)
import pyarrow.parquet as pq
from medscope import images
from medscope.io import tablescan
from medscope.training.synthetic_views import synthetic_views
from tests.fixtures.bad_input import _err


def sample_reject_row(i):
    return records.reject_row("cases", "kvasir-seg", f"img{i}.jpg", "load", "unreadable image", "truncated")


def test_every_design_table_has_a_schema():
    protocols.import_all()
    for name in ("cases", "views", "episodes", "scores", "metrics", "volumes", "slices", "probe_items", "rejects"):
        assert isinstance(records.schema(name), pa.Schema)
        assert records.empty(name).num_rows == 0
    # the package an early lookup's error names is the one that registers the table
    for name, package in records.DECLARED_IN.items():
        assert records.declared_by(name) == f"{package}.tables", name
    assert records.SHARED == {"cases", "views", "episodes", "metrics", "rejects", "volumes", "vqa_items", "reply_judgements",
                              "near_copy_pairs", "near_copy_groups"}


def test_a_protocols_table_read_before_its_protocol_is_imported_names_the_protocol(monkeypatch, tmp_path):
    monkeypatch.delitem(records.SCHEMAS, "probe_scores", raising=False)
    with pytest.raises(MedScopeError, match="'probe_scores' is the organ_presence protocol's own table, registered "
                                            "when medscope.protocols.organ_presence is imported"):
        records.read_table("probe_scores", str(tmp_path))
    with pytest.raises(MedScopeError, match="unknown table 'my_scores': not a shared table .* the module of "
                                            "--protocol module:Class"):
        records.schema("my_scores")


@pytest.fixture
def fresh_registry(monkeypatch):
    """Registrations made by a test leave the session's registry as it was."""
    for mod, name in ((records, "SCHEMAS"), (records, "ENUMS"), (records, "_DECLARED_BY"), (layout, "TABLE_MEMBERS")):
        monkeypatch.setattr(mod, name, dict(getattr(mod, name)))
    monkeypatch.setattr(layout, "PART_TABLES", set(layout.PART_TABLES))


def test_a_registered_table_is_written_validated_and_found_in_its_folder(fresh_registry, tmp_path):
    sch = pa.schema([pa.field("item_id", pa.string(), nullable=False), pa.field("colour", pa.string())])
    for _ in range(2):  # the module imported again (a reload): the same registration, no clash
        records.register_table("toy_items", sch, declared_by="toyproto", enums={"colour": ("red", "blue")},
                               files=("toys",), part_files=True)
    folder = tmp_path / "build"
    records.write_part("toy_items", [{"item_id": "a", "colour": "red"}], str(folder / "toys"), "k1")
    assert records.read_table("toy_items", str(folder)).to_pylist() == [{"item_id": "a", "colour": "red"}]
    assert layout.ScoredRun("r").table("toy_items").endswith("r/toy_items.parquet")  # a part folder is no file
    with pytest.raises(MedScopeError, match=r"toy_items.colour has value\(s\) \['green'\]; allowed: red, blue"):
        records.to_table("toy_items", [{"item_id": "b", "colour": "green"}])
    records.register_table("toy_scores", sch, declared_by="toyproto", files=("toy.parquet",))
    assert layout.ScoredRun("r").table("toy_scores").endswith("r/toy.parquet")
    with pytest.raises(MedScopeError, match="'toy_items' is already declared by toyproto with another schema"):
        records.register_table("toy_items", pa.schema([pa.field("x", pa.int32())]), declared_by="other")
    with pytest.raises(MedScopeError, match="'metrics' is a shared table; other cannot redeclare it"):
        records.register_table("metrics", sch, declared_by="other")


def test_write_and_read_table(tmp_path):
    uri = str(tmp_path / "rejects.parquet")
    records.write_table("rejects", [sample_reject_row(i) for i in range(3)], uri)
    back = records.read_table("rejects", uri)
    assert back.num_rows == 3
    assert back.column("item_id").to_pylist() == ["img0.jpg", "img1.jpg", "img2.jpg"]
    assert back.schema == records.schema("rejects")


def test_null_in_required_field_is_refused(tmp_path):
    row = sample_reject_row(0) | {"reason": None}
    with pytest.raises(MedScopeError, match="rejects.reason must not be null"):
        records.write_table("rejects", [row], str(tmp_path / "r.parquet"))
    assert not (tmp_path / "r.parquet").exists()


def test_enum_values_are_checked():
    row = {
        "model": "m", "condition": "agent", "view_id": "v", "case_id": "c", "run_id": "r",
        "kind": "original", "expected": "present", "action": "shrug", "claims_finding": None,
        "correct": False, "iou": None, "grounded": False, "tool_calls": 0, "reward": -1.0,
        "cost_matrix": "table2",
    }
    with pytest.raises(MedScopeError, match=r"scores.action has value\(s\) \['shrug'\]"):
        records.to_table("scores", [row])


def test_unknown_field_is_refused():
    with pytest.raises(MedScopeError, match="unknown field"):
        records.to_table("rejects", [sample_reject_row(0) | {"secret": "x"}])


def test_parts_are_write_once_and_read_in_key_order(tmp_path):
    folder = str(tmp_path / "rejects")
    assert records.write_part("rejects", [sample_reject_row(2)], folder, "b")
    assert records.write_part("rejects", [sample_reject_row(1)], folder, "a")
    assert not records.write_part("rejects", [sample_reject_row(9)], folder, "a")
    assert records.part_keys(folder) == {"a", "b"}
    back = records.read_table("rejects", folder)
    assert back.column("item_id").to_pylist() == ["img1.jpg", "img2.jpg"]


def test_parts_on_s3(s3_bucket):
    folder = s3_bucket + "/run/rejects"
    records.write_part("rejects", [sample_reject_row(0)], folder, "k0")
    assert records.part_keys(folder) == {"k0"}
    assert records.read_table("rejects", folder).num_rows == 1


def test_missing_table_is_a_clear_error(tmp_path):
    with pytest.raises(MedScopeError, match="no cases table"):
        records.read_table("cases", str(tmp_path / "none.parquet"))


def test_the_shared_question_table_keeps_its_enumerated_values():
    row = {"item_id": "q1", "source": "vqa-rad", "split": "test", "image_file": "a.png", "image": b"png",
           "question": "Is there a mass?", "answer": "yes", "answer_type": "maybe", "private": False}
    with pytest.raises(MedScopeError, match=r"vqa_items.answer_type has value\(s\) \['maybe'\]; allowed: closed, open"):
        records.to_table("vqa_items", [row])
    assert records.to_table("vqa_items", [row | {"answer_type": "closed"}]).num_rows == 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize("data", [None, b"", b"GIF89a" + b"\0" * 20, b"\x89PNG\r\n\x1a\n"])
def test_decode_png_of_bad_bytes_is_one_clear_error(data):
    assert "decode" in _err(lambda: images.decode_png(data)) or data is None


def _views_with_frac(value):
    from medscope.training.synthetic_views import synthetic_views

    rows = synthetic_views(2, seed=3, size=32)
    rows[0]["lesion_area_frac"] = value
    return rows


@pytest.mark.timeout(120)
def test_views_fraction_just_over_one_is_refused():
    assert "lesion_area_frac" in _err(lambda: records.to_table("views", _views_with_frac(1.0000001)))


@pytest.mark.timeout(120)
def test_cases_table_with_nan_fraction_is_refused_on_read(tmp_path):
    from medscope.views.synthetic_cases import synthetic_cases

    table = records.to_table("cases", synthetic_cases(3, size=32))
    frac = table.column("lesion_area_frac").to_pylist()
    frac[1] = float("nan")
    table = table.set_column(table.column_names.index("lesion_area_frac"), "lesion_area_frac", pa.array(frac))
    pq.write_table(table, tmp_path / "cases.parquet")
    assert "cases.parquet" in _err(lambda: records.read_table("cases", str(tmp_path / "cases.parquet")))


@pytest.mark.timeout(120)
def test_csv_named_views_parquet_is_named(tmp_path):
    (tmp_path / "views.parquet").write_text("view_id,split\nv1,test\n")
    assert "views.parquet" in _err(lambda: records.read_table("views", str(tmp_path / "views.parquet")))


@pytest.mark.timeout(120)
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


@pytest.mark.timeout(120)
@pytest.mark.parametrize("values", [[1, 2, 3], [1.5, 2.5, 3.5], [True, False, True]])
def test_numbers_where_text_belongs_are_refused_naming_the_column(tmp_path, values):
    # Fresh campaign (issue 51): a question column of 1, 2, 3 was cast to the questions "1", "2", "3"
    # and sent to the models.
    good = records.to_table("views", synthetic_views(3, seed=1, size=32))
    uri = str(tmp_path / "views.parquet")
    i = good.column_names.index("question")
    column = pa.array([values[k % len(values)] for k in range(good.num_rows)])
    pq.write_table(good.set_column(i, "question", column), uri)
    kind = pa.array(values).type
    with pytest.raises(MedScopeError, match=rf"views.parquet: column 'question' holds {kind} values where text belongs"):
        records.read_table("views", uri)
    pq.write_table(good, uri)
    assert records.read_table("views", uri).column("question").to_pylist() == good.column("question").to_pylist()
    # whole numbers in an id column are ids as a hospital writes them: read as their decimal text
    ids = pa.array([12345 + k for k in range(good.num_rows)], pa.int64())
    pq.write_table(good.set_column(good.column_names.index("patient_id"), "patient_id", ids), uri)
    assert records.read_table("views", uri).column("patient_id").to_pylist() == [str(12345 + k) for k in range(good.num_rows)]


@pytest.mark.timeout(120)
def test_a_value_past_the_columns_type_names_the_column(tmp_path):
    # height is int32 in the views schema; 10**12 does not fit, and the error said only
    # "Integer value ... not in range", not which column.
    good = records.to_table("views", synthetic_views(3, seed=1, size=32))
    uri = str(tmp_path / "views.parquet")
    i = good.column_names.index("height")
    heights = [10**12 if k == 1 else 32 for k in range(good.num_rows)]
    pq.write_table(good.set_column(i, "height", pa.array(heights, pa.int64())), uri)
    with pytest.raises(MedScopeError, match=r"views.parquet: column 'height' \(int64\) cannot be read as int32"):
        records.read_table("views", uri)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("column, bad", [("width", -5), ("height", 0)])
def test_image_sizes_below_one_pixel_are_refused_naming_the_view(tmp_path, column, bad):
    rows = synthetic_views(3, seed=1, size=32)
    rows[1][column] = bad
    with pytest.raises(MedScopeError, match=rf"views.{column} must be a size of at least 1 pixel; 1 row"):
        records.to_table("views", rows)
    good = records.to_table("views", synthetic_views(3, seed=1, size=32))
    sizes = good.column(column).to_pylist()
    sizes[1] = bad
    uri = str(tmp_path / "views.parquet")
    pq.write_table(good.set_column(good.column_names.index(column), column, pa.array(sizes, pa.int32())), uri)
    with pytest.raises(MedScopeError, match=rf"views.parquet: views.{column} .*{rows[1]['view_id']}"):
        records.read_table("views", uri)
