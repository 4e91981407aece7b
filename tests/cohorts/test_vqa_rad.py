"""The VQA-RAD release reader: bad JSON records and names planted beside good questions."""

from __future__ import annotations

import json

import pytest

from medscope import cohorts

from tests.fixtures.bad_input import ANY, KEPT, _load, _vqa_kind
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import gray_image


def vqarad(root):
    from tests.fixtures.replay_layouts import write_vqa_rad

    write_vqa_rad(root, 3, {}, {})


def _vqarad_edit(root, fn):
    p = root / "VQA_RAD Dataset Public.json"
    data = json.loads(p.read_text())
    out = fn(data)
    if isinstance(out, bytes):
        p.write_bytes(out)
    else:
        p.write_text(json.dumps(out))


def _first_key(root):
    data = json.loads((root / "VQA_RAD Dataset Public.json").read_text())
    q = data[0]
    return q, f"VQA_RAD Image Folder/{q['image_name']}#{q['qid']}"


def _plant_vqarad(kind):
    def plant(root):
        q, key = _first_key(root)
        if kind == "top-level object":
            _vqarad_edit(root, lambda d: {"questions": d})
            return None
        if kind == "integer image name":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9001, "image_name": 123}])
            return {"VQA_RAD Image Folder/123#9001": "missing image"}
        if kind == "answer is a list":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9002, "answer": ["yes", "no"]}])
            return {f"VQA_RAD Image Folder/{q['image_name']}#9002": "empty answer"}
        if kind == "UTF-16 JSON":
            _vqarad_edit(root, lambda d: json.dumps(d).encode("utf-16"))
            return {}
        if kind == "UTF-8 BOM JSON":
            _vqarad_edit(root, lambda d: b"\xef\xbb\xbf" + json.dumps(d).encode())
            return {}
        if kind == "same record twice":
            _vqarad_edit(root, lambda d: d + [q])
            return {key: "duplicate record"}
        if kind == "backslash climb":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9003, "image_name": "..\\..\\secret.jpg"}])
            return {"VQA_RAD Dataset Public.json[9]": "path leaves the input root"}
        if kind == "NaN qid":
            _vqarad_edit(root, lambda d: json.dumps(d + [{**q, "qid": float("nan")}]).encode())
            return {f"VQA_RAD Image Folder/{q['image_name']}#nan": KEPT}
        raise AssertionError(kind)

    return plant


VQA_KINDS = ["top-level object", "integer image name", "answer is a list", "UTF-16 JSON", "UTF-8 BOM JSON",
             "same record twice", "backslash climb", "NaN qid"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", VQA_KINDS)
def test_vqa_rad(tmp_path, kind):
    root = tmp_path / "data"
    vqarad(root)
    base_rows, _ = _load("vqa-rad", root, None)
    expected = _plant_vqarad(kind)(root)
    rows, rejects = _load("vqa-rad", root, None)
    if expected is None:  # the whole file is unusable: one reject naming it, no crash
        assert rows == {} and list(rejects.values()) == ["corrupt JSON"]
        return
    for k, r in base_rows.items():
        assert rows.get(k) == r
    for item, want in expected.items():
        if want == KEPT:
            assert item in rows
        else:
            got = {k: v for k, v in rejects.items() if k.endswith(item) or k == item}
            assert want in got.values(), f"{item}: {rejects}"


def _plant_vqarad_more(kind):
    def plant(root):
        q = json.loads((root / "VQA_RAD Dataset Public.json").read_text())[0]
        if kind == "question is null":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9101, "question": None}])
            return ANY, "9101"
        if kind == "record without image_name":
            _vqarad_edit(root, lambda d: d + [{k: v for k, v in {**q, "qid": 9102}.items() if k != "image_name"}])
            return ANY, "9102"  # first run: the test guessed the item was named after the JSON file
        if kind == "200 KB question":
            _vqarad_edit(root, lambda d: d + [{**q, "qid": 9103, "question": "Is there " + "x" * 200_000 + "?"}])
            return KEPT, ""
        if kind == "trailing comma":
            p = root / "VQA_RAD Dataset Public.json"
            p.write_text(p.read_text()[:-1] + ",]")
            return "corrupt JSON", "VQA_RAD Dataset Public.json"
        raise AssertionError(kind)

    return plant


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["question is null", "record without image_name", "200 KB question", "trailing comma"])
def test_vqa_rad_more_kinds(tmp_path, kind):
    if kind == "trailing comma":  # the one file is unusable: one reject naming it, no crash
        root = tmp_path / "data"
        vqarad(root)
        _plant_vqarad_more(kind)(root)
        rows, rejects = _load("vqa-rad", root, None)
        assert rows == {} and list(rejects.values()) == ["corrupt JSON"]
        return
    _vqa_kind(tmp_path, "vqa-rad", vqarad, _plant_vqarad_more(kind))


@pytest.mark.timeout(120)
def test_vqa_release_json_names_match_files_in_nfc(tmp_path):
    """A VQA-RAD JSON written with an NFD name (macOS) beside the file unpacked in NFC: one item,
    the same one as when both agree; a name that matches nothing is still a missing image."""
    import json
    import unicodedata

    from tests.fixtures.replay_layouts import smooth_image, write_vqa_rad

    root = tmp_path / "vqarad"
    write_vqa_rad(root, 2, {}, {})
    _save(f"{root}/VQA_RAD Image Folder/café.jpg", smooth_image(5), "JPEG", quality=95)
    p = root / "VQA_RAD Dataset Public.json"
    data = json.loads(p.read_text())
    nfd = unicodedata.normalize("NFD", "café.jpg")
    data += [{**data[0], "qid": 501, "image_name": nfd}, {**data[0], "qid": 502, "image_name": "nowhere.jpg"}]
    p.write_text(json.dumps(data))
    table, rejects = cohorts.load("vqa-rad", str(root))
    files = table.column("image_file").to_pylist()
    assert "VQA_RAD Image Folder/café.jpg" in files and len(files) == len(data) - 1
    assert {r["item_id"]: r["reason"] for r in rejects} == {"VQA_RAD Image Folder/nowhere.jpg#502": "missing image"}


def _write_vqa_rad(root, names):
    data = []
    for i, name in enumerate(names):
        data.append({"qid": i + 1, "image_name": name, "image_organ": "CHEST", "answer": "yes", "answer_type": "CLOSED",
                     "question_type": "PRES", "question": "Is there a mass?", "phrase_type": "freeform"})
    (root / "VQA_RAD Dataset Public.json").write_text(json.dumps(data))


@pytest.mark.timeout(120)
def test_names_in_a_release_json_may_not_leave_the_dataset_folder(tmp_path):
    root = tmp_path / "vqarad"
    folder = root / "VQA_RAD Image Folder"
    _save(str(folder / "synpic1.jpg"), gray_image(40, 40, 1), "JPEG", quality=95)
    _save(str(tmp_path / "outside" / "secret.jpg"), gray_image(40, 40, 2), "JPEG", quality=95)
    _write_vqa_rad(root, ["synpic1.jpg", "../../outside/secret.jpg", "/etc/hostname"])
    table, rejects = cohorts.load("vqa-rad", str(root))
    assert [r["image_file"] for r in table.to_pylist()] == ["VQA_RAD Image Folder/synpic1.jpg"]
    reasons = {r["item_id"].rsplit("#", 1)[0]: r["reason"] for r in rejects}
    assert set(reasons.values()) == {"path leaves the input root"} and len(reasons) == 2
