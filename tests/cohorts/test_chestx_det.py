"""The ChestX-Det reader: bad records and files beside good ones; every file and record gets a row."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.bad_input import ANY, KEPT, NFD_E, _load_rows, run_kind
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import gray_image


def _chestx(root):
    from tests.fixtures.release_layouts import write_chestx_det

    write_chestx_det(root)


def _chestx_add(root, rec, image=True, disk_name=None):
    p = root / "ChestX_Det_train.json"
    data = json.loads(p.read_text())
    data.append(rec)
    p.write_text(json.dumps(data))
    if image:
        _save(f"{root}/train/{disk_name or rec['file_name']}", gray_image(64, 64, 60), "PNG")


def _plant_chestx(kind):
    def plant(root):
        if kind == "polygon with a NaN coordinate":
            _chestx_add(root, {"file_name": "50001.png", "syms": ["Nodule"], "boxes": [[0, 0, 1, 1]],
                               "polygons": [[[10, 10], [float("nan"), 10], [20, 18]]]})
            return {"train/50001.png": "bad polygon"}
        if kind == "syms is a string":
            _chestx_add(root, {"file_name": "50002.png", "syms": "Nodule", "boxes": [],
                               "polygons": [[[10, 10], [20, 10], [20, 18]]]})
            return {"train/50002.png": ANY}
        if kind == "NFD file_name, NFC file on disk":
            _chestx_add(root, {"file_name": f"caf{NFD_E}.png", "syms": [], "boxes": [], "polygons": []},
                        disk_name="café.png")
            return {"train/café.png": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["polygon with a NaN coordinate", "syms is a string", "NFD file_name, NFC file on disk"])
def test_chestx_det(tmp_path, kind):
    run_kind(tmp_path, "chestx-det", _chestx, _plant_chestx(kind))


@pytest.mark.timeout(120)
def test_chestx_det_every_file_and_record_gets_a_row(tmp_path):
    import json

    root = tmp_path / "chestx"
    _save(f"{root}/train/1.png", gray_image(64, 64, 1))
    _save(f"{root}/train/2.png", gray_image(64, 64, 2))
    _save(f"{root}/train/stray.png", gray_image(64, 64, 3))  # on disk, in no record
    (root / "train" / "notes.txt").write_text("export log")
    _save(f"{tmp_path}/outside/secret.png", gray_image(64, 64, 4))  # exists, so only the guard stops it
    _save(f"{root}/train/cut.png", gray_image(64, 64, 5))
    (root / "train" / "cut.png").write_bytes((root / "train" / "cut.png").read_bytes()[:70])
    nodule = {"file_name": "2.png", "syms": ["Nodule"], "boxes": [[0, 0, 1, 1]],
              "polygons": [[[10, 10], [20, 10], [20, 18], [10, 18]]]}
    recs = [{"file_name": "1.png", "syms": [], "boxes": [], "polygons": []}, nodule, dict(nodule),
            {"file_name": "../../outside/secret.png", "syms": [], "boxes": [], "polygons": []},
            {"file_name": "cut.png", "syms": [], "boxes": [], "polygons": []}]
    (root / "ChestX_Det_train.json").write_text(json.dumps(recs))
    kept, load, ignored = _load_rows("chestx-det", root)
    assert kept == {"train/1.png", "train/2.png#Nodule"}  # the repeat did not make a second case
    assert load == {"ChestX_Det_train.json[2]": "duplicate record",
                    "train/../../outside/secret.png": "path leaves the input root",
                    "train/cut.png": "unreadable image",
                    "train/stray.png": "not in the annotations"}
    assert ignored == {"train/notes.txt": "not a png/jpg/jpeg/bmp/tif/tiff file"}
