"""The SIIM RLE reader (CSV + DICOM): bad rows and files planted beside good ones."""

from __future__ import annotations

import pytest

from medscope import cohorts
from medscope.errors import MedScopeError

from tests.fixtures.bad_input import ANY, KEPT, _png, by_item, run_kind
from tests.fixtures.cohort_bad_layouts import write_raw
from tests.fixtures.cohort_layouts import gray_image
from tests.fixtures.cohort_layouts import rect_mask
from tests.fixtures.cohort_layouts import rle_encode
from tests.fixtures.cohort_layouts import write_dicom
from tests.fixtures.cohort_layouts import write_siim


def siim(root):
    d = f"{root}/dicom-images-train"
    rows = []
    for i in range(2):
        m = rect_mask(32, 32, 2 + i, 3, 10, 15)
        write_dicom(f"{d}/s{i}/1.2.{i}.dcm", gray_image(32, 32, i + 1), f"pat-{i}")
        rows.append(f"1.2.{i},{rle_encode(m)}")
    write_raw(root, "train-rle.csv", ("ImageId,EncodedPixels\n" + "\n".join(rows) + "\n").encode())


def _siim_add(root, image_id, line, write=True, sub="x"):
    if write:
        write_dicom(f"{root}/dicom-images-train/{sub}/{image_id}.dcm", gray_image(32, 32, 9), "pat-9")
    with open(f"{root}/train-rle.csv", "ab") as fh:
        fh.write(line)
    return f"dicom-images-train/{sub}/{image_id}.dcm"


def _plant_siim(kind):
    def plant(root):
        if kind == "duplicate ImageId in two studies":
            a = _siim_add(root, "1.9.9", b"1.9.9,-1\n", sub="a")
            b = _siim_add(root, "1.9.9", b"", sub="b")
            return {a: "duplicate ImageId", b: "duplicate ImageId"}
        if kind == "PNG renamed .dcm":
            write_raw(root, "dicom-images-train/x/1.9.8.dcm", _png(gray_image(32, 32, 1)))
            _siim_add(root, "1.9.8", b"1.9.8,-1\n", write=False)
            return {"dicom-images-train/x/1.9.8.dcm": ANY}
        if kind == "blank and whitespace lines":
            _siim_add(root, "1.9.7", b"\n   \n\t\n1.9.7,-1\n\n")
            return {"dicom-images-train/x/1.9.7.dcm": KEPT}
        if kind == "tab inside RLE":
            return {_siim_add(root, "1.9.6", b"1.9.6,1\t2\n"): KEPT}  # a tab is whitespace between RLE numbers
        if kind == "extra third column":
            return {_siim_add(root, "1.9.5", b"1.9.5,-1,extra\n"): KEPT}
        if kind == "RLE of huge numbers":
            return {_siim_add(root, "1.9.4", b"1.9.4,1 99999999999999999999999\n"): "malformed RLE"}
        if kind == "quoted ImageId":
            return {_siim_add(root, "1.9.3", b'"1.9.3","-1"\n'): KEPT}
        if kind == "CSV without final newline, CR endings":
            p = root / "train-rle.csv"
            p.write_bytes(p.read_bytes().replace(b"\n", b"\r").rstrip(b"\r"))
            return {}
        if kind == "UTF-16 LE CSV without BOM":
            p = root / "train-rle.csv"
            p.write_bytes(p.read_bytes().decode().encode("utf-16-le"))
            return {}
        if kind == "zero-row DICOM":
            import pydicom

            write_dicom(f"{root}/dicom-images-train/x/1.9.2.dcm", gray_image(32, 32, 2), "pat-z")
            ds = pydicom.dcmread(f"{root}/dicom-images-train/x/1.9.2.dcm")
            ds.Rows = 0
            ds.save_as(f"{root}/dicom-images-train/x/1.9.2.dcm")
            _siim_add(root, "1.9.2", b"1.9.2,-1\n", write=False)
            return {"dicom-images-train/x/1.9.2.dcm": ANY}
        raise AssertionError(kind)

    return plant


SIIM_KINDS = ["duplicate ImageId in two studies", "PNG renamed .dcm", "blank and whitespace lines", "tab inside RLE",
              "extra third column", "RLE of huge numbers", "quoted ImageId", "CSV without final newline, CR endings",
              "UTF-16 LE CSV without BOM", "zero-row DICOM"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", SIIM_KINDS)
def test_siim(tmp_path, kind):
    run_kind(tmp_path, "siim-rle", siim, _plant_siim(kind))


def _plant_siim_more(kind):
    def plant(root):
        if kind == "RLE with a negative start":
            return {_siim_add(root, "1.9.1", b"1.9.1,-5 3\n"): "malformed RLE"}
        if kind == "two rows for one image (two regions)":
            a, b = rect_mask(32, 32, 2, 2, 8, 8), rect_mask(32, 32, 20, 20, 28, 28)
            line = f"1.9.0,{rle_encode(a)}\n1.9.0,{rle_encode(b)}\n".encode()
            return {_siim_add(root, "1.9.0", line): KEPT}
        if kind == "CSV with a UTF-8 BOM":
            p = root / "train-rle.csv"
            p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
            return {}
        if kind == "DICOM cut in its pixel data":
            rel = _siim_add(root, "1.9.2", b"1.9.2,-1\n")
            data = (root / rel).read_bytes()
            (root / rel).write_bytes(data[: len(data) - 300])
            return {rel: ANY}
        if kind == "DICOM without a CSV row":
            write_dicom(f"{root}/dicom-images-train/x/1.9.3.dcm", gray_image(32, 32, 3), "pat-3")
            return {"dicom-images-train/x/1.9.3.dcm": ANY}
        raise AssertionError(kind)

    return plant


SIIM_MORE_KINDS = ["RLE with a negative start", "two rows for one image (two regions)", "CSV with a UTF-8 BOM",
              "DICOM cut in its pixel data", "DICOM without a CSV row"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", SIIM_MORE_KINDS)
def test_siim_more_kinds(tmp_path, kind):
    run_kind(tmp_path, "siim-rle", siim, _plant_siim_more(kind))


@pytest.mark.timeout(120)
def test_siim_csv_saved_as_utf16_gives_the_same_cases(tmp_path):
    good, bad = write_siim(tmp_path)
    t8, r8 = cohorts.load("siim-rle", str(tmp_path))
    csv_path = tmp_path / "train-rle.csv"
    csv_path.write_bytes(csv_path.read_bytes().decode("utf-8").encode("utf-16"))
    t16, r16 = cohorts.load("siim-rle", str(tmp_path))
    assert t16.to_pylist() == t8.to_pylist() and t16.num_rows == len(good)
    assert by_item(r16) == by_item(r8)


@pytest.mark.timeout(120)
def test_a_csv_header_without_the_needed_columns_is_named_by_its_path(tmp_path):
    # the error named "RLE CSV" only: a user with several CSVs could not tell which one
    write_siim(tmp_path)
    csv_path = tmp_path / "train-rle.csv"
    csv_path.write_text("ImageId,Pixels\n1.2.3.1,-1\n")
    with pytest.raises(MedScopeError) as err:
        cohorts.load("siim-rle", str(tmp_path))
    assert str(err.value) == f"{csv_path} needs columns ImageId, EncodedPixels; has ['ImageId', 'Pixels']"
    csv_path.write_bytes(b"")
    with pytest.raises(MedScopeError) as err:
        cohorts.load("siim-rle", str(tmp_path))
    assert str(err.value) == f"{csv_path} is not readable: header line: empty file"
