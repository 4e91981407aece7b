"""Schemas validate on write; part folders read back whole and stay write-once."""

import pyarrow as pa
import pytest

from medscope import records
from medscope.errors import MedScopeError


def reject_row(i):
    return records.reject("cases", "kvasir-seg", f"img{i}.jpg", "load", "unreadable image", "truncated")


def test_every_design_table_has_a_schema():
    for name in ("cases", "views", "episodes", "scores", "metrics", "volumes", "slices", "probe_items", "rejects"):
        assert isinstance(records.schema(name), pa.Schema)
        assert records.empty(name).num_rows == 0


def test_write_and_read_table(tmp_path):
    uri = str(tmp_path / "rejects.parquet")
    records.write_table("rejects", [reject_row(i) for i in range(3)], uri)
    back = records.read_table("rejects", uri)
    assert back.num_rows == 3
    assert back.column("item_id").to_pylist() == ["img0.jpg", "img1.jpg", "img2.jpg"]
    assert back.schema == records.schema("rejects")


def test_null_in_required_field_is_refused(tmp_path):
    row = reject_row(0) | {"reason": None}
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
        records.to_table("rejects", [reject_row(0) | {"secret": "x"}])


def test_parts_are_write_once_and_read_in_key_order(tmp_path):
    folder = str(tmp_path / "rejects")
    assert records.write_part("rejects", [reject_row(2)], folder, "b")
    assert records.write_part("rejects", [reject_row(1)], folder, "a")
    assert not records.write_part("rejects", [reject_row(9)], folder, "a")
    assert records.part_keys(folder) == {"a", "b"}
    back = records.read_table("rejects", folder)
    assert back.column("item_id").to_pylist() == ["img1.jpg", "img2.jpg"]


def test_parts_on_s3(s3_bucket):
    folder = s3_bucket + "/run/rejects"
    records.write_part("rejects", [reject_row(0)], folder, "k0")
    assert records.part_keys(folder) == {"k0"}
    assert records.read_table("rejects", folder).num_rows == 1


def test_missing_table_is_a_clear_error(tmp_path):
    with pytest.raises(MedScopeError, match="no cases table"):
        records.read_table("cases", str(tmp_path / "none.parquet"))
