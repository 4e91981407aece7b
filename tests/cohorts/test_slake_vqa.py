"""The SLAKE release reader: bad question files beside good splits."""

from __future__ import annotations

import json

import pytest

from medscope import cohorts

from tests.fixtures.bad_input import _load, _vqa_kind, by_item, detail_of


def _slake_vqa(root):
    from tests.fixtures.replay_layouts import smooth_image, write_slake

    write_slake(root, 2, {2: smooth_image(9)}, {})


def _plant_slake(kind):
    def plant(root):
        if kind == "absolute img_name":
            data = json.loads((root / "train.json").read_text())
            data.append({**data[0], "qid": 99001, "img_name": "/etc/passwd"})
            (root / "train.json").write_text(json.dumps(data))
            return "path leaves the input root", "train.json"
        if kind == "truncated train.json":
            p = root / "train.json"
            p.write_bytes(p.read_bytes()[:50])
            return "corrupt JSON", "train.json"
        raise AssertionError(kind)

    return plant


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["absolute img_name", "truncated train.json"])
def test_slake_vqa(tmp_path, kind):
    if kind == "truncated train.json":  # the train split is lost as one named reject; test is kept
        root = tmp_path / "data"
        _slake_vqa(root)
        base_rows, _ = _load("slake-vqa", root, None)
        _plant_slake(kind)(root)
        rows, rejects = _load("slake-vqa", root, None)
        assert rows and all(rows[k] == base_rows[k] for k in rows)
        assert any("train.json" in k and v == "corrupt JSON" for k, v in rejects.items()), rejects
        return
    _vqa_kind(tmp_path, "slake-vqa", _slake_vqa, _plant_slake(kind))


@pytest.mark.timeout(120)
def test_deeply_nested_release_json_is_one_reject_beside_good_splits(tmp_path):
    from tests.fixtures.replay_layouts import write_slake

    write_slake(tmp_path, 3, {}, {})
    cfg = cohorts.dataset_config("slake-vqa")
    table_ok, _ = cohorts.load("slake-vqa", str(tmp_path), cfg)
    extra = next(n for n in cfg.question_files if not (tmp_path / n).exists())
    (tmp_path / extra).write_text("[" * 100_000 + "]" * 100_000)  # RecursionError in json before
    table, rejects = cohorts.load("slake-vqa", str(tmp_path), cfg)
    assert table.to_pylist() == table_ok.to_pylist() and table.num_rows > 0
    assert by_item(rejects)[extra] == "corrupt JSON"
    assert "JSON nested too deeply" in detail_of(rejects, extra)
