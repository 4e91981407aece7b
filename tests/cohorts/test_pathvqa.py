"""The PathVQA release reader: bad pickles beside a good test split."""

from __future__ import annotations

import os
import pickle

import pytest

from tests.fixtures.bad_input import _load


def pathvqa(root):
    from tests.fixtures.replay_layouts import smooth_image, write_pathvqa

    write_pathvqa(root, 3, {7: smooth_image(77)}, {})


def _plant_pvqa(kind):
    def plant(root):
        p = root / "pvqa" / "qas" / "train" / "train_qa.pkl"
        if kind == "pickle calling os.system":
            class Evil:
                def __reduce__(self):
                    return (os.system, ("touch " + str(root / "PWNED"),))

            p.write_bytes(pickle.dumps([Evil()]))
        elif kind == "truncated pickle":
            p.write_bytes(p.read_bytes()[:40])
        return "qas/train/train_qa.pkl"

    return plant


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["pickle calling os.system", "truncated pickle"])
def test_pathvqa(tmp_path, kind):
    root = tmp_path / "data"
    pathvqa(root)
    item = _plant_pvqa(kind)(root)
    rows, rejects = _load("pathvqa", root, None)
    assert rows and all(k.split("/")[-1].startswith("test") for k in rows)  # test split kept
    assert rejects.get(item) == "corrupt pickle" and not (root / "PWNED").exists()


@pytest.mark.timeout(120)
def test_pathvqa_pickle_of_a_dict(tmp_path):
    root = tmp_path / "data"
    pathvqa(root)
    (root / "pvqa" / "qas" / "train" / "train_qa.pkl").write_bytes(pickle.dumps({"image": "train_0000"}))
    rows, rejects = _load("pathvqa", root, None)
    assert rows and all(k.split("/")[-1].startswith("test") for k in rows)  # test split kept
    assert rejects.get("qas/train/train_qa.pkl") == "corrupt pickle"
