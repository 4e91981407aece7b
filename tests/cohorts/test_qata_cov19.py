"""The QaTa-COV19 reader: file names and masks; every file gets a row."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.bad_input import KEPT, NFD_E, _load_rows, run_kind
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import gray_image
from tests.fixtures.cohort_layouts import rect_mask


def _qata(root):
    from tests.fixtures.release_layouts import write_qata

    write_qata(root)


@pytest.mark.timeout(120)
def test_qata_nfd_image_nfc_mask(tmp_path):
    def plant(root):
        base = root / "QaTa-COV19-v2" / "Train Set"
        _save(f"{base}/Images/covid_caf{NFD_E}.png", gray_image(40, 40, 61))
        _save(f"{base}/Ground-truths/mask_covid_café.png", rect_mask(40, 40, 4, 6, 15, 20).astype(np.uint8) * 255)
        return {f"QaTa-COV19-v2/Train Set/Images/covid_caf{NFD_E}.png": KEPT}

    run_kind(tmp_path, "qata-cov19", _qata, plant)


@pytest.mark.timeout(120)
def test_qata_every_file_gets_a_row(tmp_path):
    base = tmp_path / "QaTa-COV19-v2" / "Train Set"
    m = rect_mask(40, 40, 4, 6, 15, 20).astype(np.uint8) * 255
    _save(f"{base}/Images/covid_1.png", gray_image(40, 40, 1))
    _save(f"{base}/Ground-truths/mask_covid_1.png", m)
    _save(f"{base}/Ground-truths/mask_covid_9.png", m)  # no image claims it
    _save(f"{base}/Ground-truths/covid_1_copy.png", m)  # not named mask_<image>
    _save(f"{base}/Previews/covid_1.png", gray_image(40, 40, 2))  # another folder
    _save(f"{base}/Images/covid_2.png", gray_image(40, 40, 3))
    (base / "Images" / "covid_2.png").write_bytes((base / "Images" / "covid_2.png").read_bytes()[:70])
    _save(f"{base}/Ground-truths/mask_covid_2.png", m)
    (base / "Images" / "Thumbs.db").write_bytes(b"\0" * 8)
    kept, load, ignored = _load_rows("qata-cov19", tmp_path)
    t = "QaTa-COV19-v2/Train Set"
    assert kept == {f"{t}/Images/covid_1.png"}
    assert load == {f"{t}/Ground-truths/mask_covid_9.png": "mask without image",
                    f"{t}/Images/covid_2.png": "unreadable image"}
    assert ignored == {f"{t}/Ground-truths/covid_1_copy.png": "in Ground-truths/ but not named mask_<image>",
                       f"{t}/Previews/covid_1.png": "outside the Images/ and Ground-truths/ folders",
                       f"{t}/Images/Thumbs.db": "not a png/jpg/jpeg/bmp/tif/tiff file"}
