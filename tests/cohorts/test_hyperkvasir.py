"""The HyperKvasir reader: bad files planted beside good cases."""

from __future__ import annotations

import pytest

from tests.fixtures.bad_input import KEPT, run_kind
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import colour_image


def _hyperkvasir(root):
    from tests.fixtures.release_layouts import write_hyperkvasir

    write_hyperkvasir(root)


def _plant_hk(kind):
    def plant(root):
        base = "labeled-images/lower-gi-tract/anatomical-landmarks"
        if kind == "class folder in upper case":
            _save(f"{root}/{base}/Cecum/cc01.jpg", colour_image(36, 44, 62), "JPEG", quality=90)
            return {f"{base}/Cecum/cc01.jpg": KEPT}
        if kind == "PNG image in a class folder":
            _save(f"{root}/{base}/ileum/cc02.png", colour_image(36, 44, 63))
            return {f"{base}/ileum/cc02.png": KEPT}
        raise AssertionError(kind)

    return plant


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["class folder in upper case", "PNG image in a class folder"])
def test_hyperkvasir(tmp_path, kind):
    run_kind(tmp_path, "hyperkvasir", _hyperkvasir, _plant_hk(kind))
