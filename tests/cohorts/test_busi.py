"""The BUSI reader: bad files planted beside good cases."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.bad_input import KEPT, run_kind
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import gray_image
from tests.fixtures.cohort_layouts import rect_mask


def _busi(root):
    from tests.fixtures.cohort_layouts import write_busi

    write_busi(root)


def _plant_busi(kind):
    def plant(root):
        img = np.stack([gray_image(40, 56, 50)] * 3, axis=2)
        if kind == "second mask file merged":
            _save(f"{root}/benign/benign (77).png", img)
            _save(f"{root}/benign/benign (77)_mask.png", rect_mask(40, 56, 2, 2, 10, 10).astype(np.uint8) * 255)
            _save(f"{root}/benign/benign (77)_mask_1.png", rect_mask(40, 56, 30, 20, 40, 30).astype(np.uint8) * 255)
            return {"benign/benign (77).png": KEPT}
        if kind == "normal image with a black mask":
            _save(f"{root}/normal/normal (78).png", img)
            _save(f"{root}/normal/normal (78)_mask.png", np.zeros((40, 56), np.uint8))
            return {"normal/normal (78).png": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["second mask file merged", "normal image with a black mask"])
def test_busi(tmp_path, kind):
    run_kind(tmp_path, "busi", _busi, _plant_busi(kind))
