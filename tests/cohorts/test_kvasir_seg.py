"""The Kvasir-SEG reader: bad files planted beside good cases."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.bad_input import KEPT, _png, run_kind
from tests.fixtures.cohort_bad_layouts import write_raw
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import colour_image
from tests.fixtures.cohort_layouts import rect_mask


def _kvasir(root):
    from tests.fixtures.cohort_layouts import write_kvasir

    write_kvasir(root)


def _plant_kvasir(kind):
    def plant(root):
        mask = rect_mask(48, 64, 10, 8, 29, 27).astype(np.uint8) * 255
        if kind == "PNG bytes in a .jpg image":
            write_raw(root, "images/cjz0001.jpg", _png(colour_image(48, 64, 40)))
            _save(f"{root}/masks/cjz0001.jpg", mask, "JPEG", quality=90)
            return {"images/cjz0001.jpg": KEPT}
        if kind == "low-quality JPEG mask":
            _save(f"{root}/images/cjz0002.jpg", colour_image(48, 64, 41), "JPEG", quality=95)
            _save(f"{root}/masks/cjz0002.jpg", mask, "JPEG", quality=30)  # ringing well past the edges
            return {"images/cjz0002.jpg": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["PNG bytes in a .jpg image", "low-quality JPEG mask"])
def test_kvasir_seg(tmp_path, kind):
    run_kind(tmp_path, "kvasir-seg", _kvasir, _plant_kvasir(kind))
