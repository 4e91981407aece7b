"""The image-mask-folder reader (medscope.cohorts.image_mask_folder): bad files of every kind planted beside good pairs; the good cases are kept unchanged and each bad one is a reject with its reason."""

from __future__ import annotations

import gzip
import io
import os
import unicodedata

import numpy as np
import pytest
from PIL import Image

from medscope import cohorts
from medscope import images

from tests.fixtures.bad_input import ANY, IMF, KEPT, _png, by_item, detail_of, imf_cfg, run_kind
from tests.fixtures.cohort_bad_layouts import save_with_orientation
from tests.fixtures.cohort_bad_layouts import write_raw
from tests.fixtures.cohort_layouts import _save
from tests.fixtures.cohort_layouts import colour_image
from tests.fixtures.cohort_layouts import expect
from tests.fixtures.cohort_layouts import gray_image
from tests.fixtures.cohort_layouts import rect_mask
from tests.fixtures.cohort_layouts import truncated_bytes
from tests.fixtures.cohort_layouts import write16
from tests.fixtures.cohort_layouts import write_image_mask_folder


def imf(root):
    h, w = 32, 40
    for i, box in enumerate(((3, 4, 12, 20), (20, 2, 39, 9))):
        _save(f"{root}/images/G{i}.png", gray_image(h, w, i + 1))
        _save(f"{root}/masks/G{i}_mask.png", rect_mask(h, w, *box).astype(np.uint8) * 255)


def _imf_pair(root, name, image_bytes, mask=None, mask_bytes=None, ext="png"):
    write_raw(root, f"images/{name}.{ext}", image_bytes)
    if mask_bytes is None:
        mask_bytes = _png((rect_mask(32, 40, 5, 5, 15, 15) if mask is None else mask).astype(np.uint8) * 255)
    write_raw(root, f"masks/{name}_mask.png", mask_bytes)
    return f"images/{name}.{ext}"


def _gif(frames):
    buf = io.BytesIO()
    ims = [Image.fromarray(f) for f in frames]
    ims[0].save(buf, format="GIF", save_all=True, append_images=ims[1:])
    return buf.getvalue()


def _cmyk_jpeg():
    buf = io.BytesIO()
    Image.fromarray(np.dstack([gray_image(32, 40, 3)] * 3)).convert("CMYK").save(buf, format="JPEG")
    return buf.getvalue()


def _ihdr_zero_width():
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 0, 32, 8, 0, 0, 0, 0)) + chunk(b"IEND", b"")


def _big_text_png():
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "x" * 3_000_000)
    buf = io.BytesIO()
    Image.fromarray(gray_image(32, 40, 4)).save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def _palette_mask():
    img = Image.fromarray(rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint8), mode="L").convert("P")
    img.putpalette([0, 0, 0, 0, 0, 0] + [0] * 762)  # index 1 drawn black: the index is the label
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _tiff16be():
    ramp = (np.arange(32 * 40, dtype=np.uint16).reshape(32, 40) * 3)
    img = Image.frombytes("I;16B", (40, 32), ramp.astype(">u2").tobytes())
    buf = io.BytesIO()
    img.save(buf, format="TIFF")
    return buf.getvalue()


def _plant_imf(kind):
    def plant(root):
        if kind == "zero-byte image":
            return {_imf_pair(root, "B", b""): "unreadable image"}
        if kind == "png signature only":
            return {_imf_pair(root, "B", b"\x89PNG\r\n\x1a\n"): "unreadable image"}
        if kind == "animated gif":
            # .gif is not an extension of this layout: an ``ignored`` row (first run expected a reject)
            _imf_pair(root, "B", _gif([gray_image(32, 40, 1), gray_image(32, 40, 2)]), ext="gif")
            return {}
        if kind == "multi-page tiff mask":
            buf = io.BytesIO()
            pages = [Image.fromarray(rect_mask(32, 40, 1, 1, 9, 9).astype(np.uint8) * 255)] * 2
            pages[0].save(buf, format="TIFF", save_all=True, append_images=pages[1:])
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 5)), mask_bytes=buf.getvalue()): "multi-page image"}
        if kind == "1x1 image whole mask":
            return {_imf_pair(root, "B", _png(gray_image(1, 1, 5)), mask=np.ones((1, 1), bool)): "whole-image mask"}
        if kind == "zero-width IHDR":
            return {_imf_pair(root, "B", _ihdr_zero_width()): ANY}
        if kind == "16-bit 0/65535 mask":
            rel = _imf_pair(root, "B", _png(gray_image(32, 40, 6)), mask_bytes=b"")
            write16(f"{root}/masks/B_mask.png", rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint16) * 65535)
            return {rel: KEPT}
        if kind == "newline in file name":
            return {_imf_pair(root, "B\nC", _png(gray_image(32, 40, 7))): KEPT}
        if kind == "folder named like an image":
            os.makedirs(f"{root}/images/folder.png")
            return {}
        if kind == "3 MB PNG text chunk":
            return {_imf_pair(root, "B", _big_text_png()): KEPT}
        if kind == "palette mask drawn black":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 8)), mask_bytes=_palette_mask()): KEPT}
        if kind == "CMYK JPEG image":
            return {_imf_pair(root, "B", _cmyk_jpeg(), ext="jpg"): KEPT}
        if kind == "LA image":
            return {_imf_pair(root, "B", _png(np.dstack([gray_image(32, 40, 9), np.full((32, 40), 255, np.uint8)]),
                                                 mode="LA")): KEPT}
        if kind == "big-endian 16-bit TIFF":
            return {_imf_pair(root, "B", _tiff16be(), ext="tif"): KEPT}
        if kind == "constant float image":
            buf = io.BytesIO()
            Image.fromarray(np.full((32, 40), 3.5, np.float32)).save(buf, format="TIFF")
            return {_imf_pair(root, "B", buf.getvalue(), ext="tif"): KEPT}
        if kind == "upper-case extension":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 10)), ext="PNG"): KEPT}
        if kind == "hidden mask file":
            write_raw(root, "masks/.G0_mask.png", b"\0")
            return {}
        if kind == "garbage after IEND":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 11)) + b"trailing junk" * 100): KEPT}
        if kind == "mask 1 px larger":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 12)), mask=rect_mask(33, 40, 2, 2, 8, 8)):
                    "mask size differs"}
        if kind == "symlinked image file":
            os.makedirs(root.parent / "elsewhere", exist_ok=True)
            (root.parent / "elsewhere" / "x.png").write_bytes(_png(gray_image(32, 40, 13)))
            os.symlink(root.parent / "elsewhere" / "x.png", root / "images" / "B.png")
            write_raw(root, "masks/B_mask.png", _png(rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint8) * 255))
            return {"images/B.png": "path leaves the input root"}  # never read from outside --path
        raise AssertionError(kind)

    return plant


IMF_KINDS = ["zero-byte image", "png signature only", "animated gif", "multi-page tiff mask", "1x1 image whole mask",
             "zero-width IHDR", "16-bit 0/65535 mask", "newline in file name", "folder named like an image",
             "3 MB PNG text chunk", "palette mask drawn black", "CMYK JPEG image", "LA image",
             "big-endian 16-bit TIFF", "constant float image", "upper-case extension", "hidden mask file",
             "garbage after IEND", "mask 1 px larger", "symlinked image file"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", IMF_KINDS)
def test_image_mask_folder(tmp_path, kind):
    run_kind(tmp_path, "image-mask-folder", imf, _plant_imf(kind), IMF)


def _mask_png(h=32, w=40, box=(5, 5, 15, 15), mode=None, scale=255, dtype=np.uint8):
    return _png((rect_mask(h, w, *box).astype(dtype) * scale), mode=mode)


def _plant_imf_more(kind):
    def plant(root):
        if kind == "mask named .jpg holding PNG bytes":
            write_raw(root, "images/B.png", _png(gray_image(32, 40, 21)))
            write_raw(root, "masks/B_mask.jpg", _mask_png())
            return {"images/B.png": KEPT}
        if kind == "1-bit mask":
            buf = io.BytesIO()
            Image.fromarray(rect_mask(32, 40, 5, 5, 15, 15)).convert("1").save(buf, "PNG")
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 22)), mask_bytes=buf.getvalue()): KEPT}
        if kind == "RGBA mask drawn in alpha only":
            rgba = np.zeros((32, 40, 4), np.uint8)
            rgba[5:15, 5:15, 3] = 255
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 23)), mask_bytes=_png(rgba)): ANY}
        if kind == "accented file name":
            return {_imf_pair(root, "é-1", _png(gray_image(32, 40, 24))): KEPT}
        if kind == "1 x 600 strip":
            m = np.zeros((1, 600), np.uint8)
            m[0, 10:50] = 255
            return {_imf_pair(root, "B", _png(gray_image(1, 600, 25)), mask_bytes=_png(m)): KEPT}
        if kind == "JPEG cut mid-scan":
            return {_imf_pair(root, "B", truncated_bytes(colour_image(32, 40, 26), "JPEG"), ext="jpg"): "unreadable image"}
        if kind == "16-bit 0/1 mask":
            return {_imf_pair(root, "B", _png(gray_image(32, 40, 27)), mask_bytes=_mask_png(scale=1, dtype=np.uint16)): KEPT}
        if kind == "symlink to a file inside the root":
            write_raw(root, "originals/x.png", _png(gray_image(32, 40, 28)))
            os.symlink(root / "originals" / "x.png", root / "images" / "B.png")
            write_raw(root, "masks/B_mask.png", _mask_png())
            return {"images/B.png": KEPT}
        if kind == "hard link to another image":
            os.link(root / "images" / "G0.png", root / "images" / "B.png")
            write_raw(root, "masks/B_mask.png", _mask_png())
            return {"images/B.png": KEPT}
        if kind == "image and mask in a nested folder":
            write_raw(root, "images/site/B.png", _png(gray_image(32, 40, 29)))
            write_raw(root, "masks/site/B_mask.png", _mask_png())
            return {"images/site/B.png": KEPT}
        if kind == "EXIF-rotated image and mask":
            save_with_orientation(f"{root}/images/B.png", gray_image(32, 40, 30), 3)
            save_with_orientation(f"{root}/masks/B_mask.png", rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint8) * 255, 3)
            return {"images/B.png": KEPT}
        raise AssertionError(kind)

    return plant


IMF_MORE_KINDS = ["mask named .jpg holding PNG bytes", "1-bit mask", "RGBA mask drawn in alpha only", "accented file name",
             "1 x 600 strip", "JPEG cut mid-scan", "16-bit 0/1 mask", "symlink to a file inside the root",
             "hard link to another image", "image and mask in a nested folder", "EXIF-rotated image and mask"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", IMF_MORE_KINDS)
def test_image_mask_folder_more_kinds(tmp_path, kind):
    run_kind(tmp_path, "image-mask-folder", imf, _plant_imf_more(kind), IMF)


def _tiff_bytes(pages):
    buf = io.BytesIO()
    first, *rest = [Image.fromarray(p) for p in pages]
    first.save(buf, format="TIFF", save_all=bool(rest), append_images=rest)
    return buf.getvalue()


@pytest.mark.timeout(120)
def test_float_images_with_nan_or_inf_and_multipage_tiffs_are_rejected(tmp_path):
    good, bad = write_image_mask_folder(tmp_path)
    h, w = 32, 40
    m = rect_mask(h, w, 3, 4, 12, 20).astype(np.uint8) * 255
    ramp = np.linspace(0.0, 1.0, h * w, dtype=np.float32).reshape(h, w)
    write_raw(tmp_path, "images/P010_a.tif", _tiff_bytes([ramp]))  # a good float image
    _save(f"{tmp_path}/masks/P010_a_mask.png", m)
    good["images/P010_a.tif"] = expect(m > 0)
    for name, arr in (("P011_a", np.full((h, w), np.nan, np.float32)), ("P012_a", np.where(ramp > 0.5, np.inf, ramp))):
        write_raw(tmp_path, f"images/{name}.tif", _tiff_bytes([arr.astype(np.float32)]))
        _save(f"{tmp_path}/masks/{name}_mask.png", m)
        bad[f"images/{name}.tif"] = "non-finite pixels"
    write_raw(tmp_path, "images/P013_a.tif", _tiff_bytes([gray_image(h, w, 1), gray_image(h, w, 2)]))
    _save(f"{tmp_path}/masks/P013_a_mask.png", m)
    bad["images/P013_a.tif"] = "multi-page image"
    write_raw(tmp_path, "images/P014_a.png", gzip.compress(b""))  # not even an image
    bad["images/P014_a.png"] = "unreadable image"
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), imf_cfg())
    rows = {r["source_file"]: r for r in table.to_pylist()}
    assert set(rows) == set(good)
    assert rows["images/P010_a.tif"]["lesion_bbox"] == good["images/P010_a.tif"][1]
    # the float ramp is stretched to the full 8-bit range, never left black
    img = images.decode_png(rows["images/P010_a.tif"]["image"], gray=True)
    assert int(img.min()) == 0 and int(img.max()) == 255
    assert by_item(rejects) == bad
    assert "2 pages" in detail_of(rejects, "images/P013_a.tif")


@pytest.mark.timeout(120)
def test_nfd_mask_name_still_matches_its_nfc_image(tmp_path):
    h, w = 32, 40
    m = rect_mask(h, w, 5, 6, 20, 22)
    name = "Patient_é1"
    _save(f"{tmp_path}/images/{unicodedata.normalize('NFC', name)}.png", gray_image(h, w, 1))
    _save(f"{tmp_path}/masks/{unicodedata.normalize('NFD', name)}_mask.png", m.astype(np.uint8) * 255)
    _save(f"{tmp_path}/images/plain.png", gray_image(h, w, 2))
    _save(f"{tmp_path}/masks/plain_mask.png", m.astype(np.uint8) * 255)
    table, rejects = cohorts.load("image-mask-folder", str(tmp_path), imf_cfg())
    rows = table.to_pylist()
    assert len(rows) == 2 and all(r["lesion_bbox"] == expect(m)[1] for r in rows)
    assert rejects == []


def _write_deep(path: str, data: bytes) -> None:
    """Write ``data`` at ``path`` even past the system's PATH_MAX: folders made and opened one
    component at a time, each relative to the descriptor of the one above."""
    parts = path.split("/")
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[1:-1]:
            try:
                os.mkdir(part, dir_fd=fd)
            except FileExistsError:
                pass
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, data)
        os.close(out)
    finally:
        os.close(fd)


@pytest.mark.timeout(120)
def test_image_deeper_than_path_max_gets_a_row_of_its_own(tmp_path):
    """Issue 51: an image whose folder lies deeper than PATH_MAX (4096 bytes) left no row of its
    own: its folder became an ``unreadable folder`` ignored row, and a mask that could still be
    read became ``mask without image``. The folder is now listed by descriptor, the image is a
    ``path too long`` reject (with the fix: move it higher up) and its mask is claimed."""
    deep = "/".join(["d" * 200] * 21)  # 4220 bytes of folders: over PATH_MAX wherever tmp_path is

    def plant(root):
        _write_deep(f"{root}/images/{deep}/L.png", _png(gray_image(32, 40, 7)))
        _write_deep(f"{root}/masks/{deep}/L_mask.png", _png(rect_mask(32, 40, 5, 5, 15, 15).astype(np.uint8) * 255))
        return {f"images/{deep}/L.png": "path too long"}

    run_kind(tmp_path, "image-mask-folder", imf, plant, IMF)
