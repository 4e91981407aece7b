"""The ninth bad-input campaign (issue 51): kinds none of the earlier campaigns tried (see
docs/cohorts-bad-input.md), written and committed before its first run, each probe driving the
real CLI in a subprocess with a timeout (a hang is a failure).

Not a pytest module (no ``test_`` prefix): run it by hand::

    PYTHONPATH=$PWD .venv/bin/python tests/campaigns/campaign_ninth.py [--only FAMILY] [--json OUT]

The harness is the fourth's, fresh's, sixth's, seventh's and eighth's, imported from them, so every
campaign judges alike: a probe is **clean** when the command ends inside its timeout, prints no
traceback and no secret (the planted provider key is also searched for in every file of the run
folder), and either stops with exit 2 and a ``medscope: error:`` block naming the input and the
problem (``clean_error``; ``argparse_error``: the fourth's rule, which also reads argparse's one-line
``medscope <verb>: error: ...``), or finishes keeping the other work and giving the bad input a
row with a reason. Where the docs allow both answers the probe accepts both (``error_or``). A
probe that raises anything else is ``ERROR`` (the campaign's own fault until read), never clean.

Every probe's good-input premise (the verb, its flags, the columns and files it reads, the
documented exit code) was run on good input before this file was committed; no bad input was.

Families: ``formats`` (files as other tools and operating systems write them: Excel's ``sep=``
line, tab-separated where CSV belongs, Mac CR-only line ends, JSON with comments or trailing
commas, YAML alias bombs in configs not tried before), ``images`` (image and volume files of
shapes not tried before: RGBA, JPEG named ``.png``, a zTXt bomb, TIFF / DICOM / NIfTI headers that
claim terabytes, DICOM without pixel data, a NIfTI of zero voxel size), ``config`` (values of the
wrong kind or unit: ``30s``, ``1GB``, ``95`` for a fraction, ``1e3`` that YAML reads as text, decimal
commas, ``5%``), ``env`` (HOME unset, TMPDIR missing or a file, a read-only output parent, a deleted
working folder, a key with a Windows line end or smart quotes), ``provider`` (loopback replies not
tried before), ``verbs`` (a table of the wrong kind given to a verb, and outputs changed between
verbs).
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import sys
import zlib

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from tests.campaigns import campaign_fourth as c4  # noqa: E402
from tests.campaigns import campaign_fresh as cf  # noqa: E402
from tests.campaigns.campaign_eighth import (  # noqa: E402
    _json_reply, _completion, _read_replies, _readings, _remove_or, _scored, _cohort_imported)
from tests.campaigns.campaign_fourth import (  # noqa: E402
    ENV, EVAL_TIMEOUT, KEY_ENV, SECRET, RawProvider, _last, base_run, check_bad_unit_kept_apart,
    episodes, eval_args, generic, models_file, one_bad_unit, raw, rejects, require, run, run_nobody,
    write_items)
from tests.campaigns.campaign_fresh import _import, _imf_import, _mask_for, _table_rows, _write, clean_error  # noqa: E402
from tests.campaigns.campaign_sixth import _agreement, _audited, _labels, error_or  # noqa: E402
from tests.campaigns.campaign_seventh import _views, argparse_error  # noqa: E402

PROBES: list[tuple[str, str, object]] = []


def probe(family, name):
    def deco(fn):
        PROBES.append((family, name, fn))
        return fn
    return deco


def _error_any(res, needles, folder=None):
    """The fourth's rule (argparse's own line included), naming at least one of ``needles``."""
    c4.clean_error(res, folder=folder)
    text = " ".join(res.error_lines()).lower()
    require(any(n.lower() in text for n in needles), f"the error names none of {needles}: " + _last(res.err))


def _good_provider_eval(tmp, models_text_edit=None, env=None, **extra):
    """An eval run of 4 items against a healthy loopback provider; ``models_text_edit`` edits the
    models file's text before the run. Returns (result, out, provider)."""
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url, **extra)
        if models_text_edit:
            text = open(m, encoding="utf-8").read()
            open(m, "wb").write(models_text_edit(text))
        out = os.path.join(tmp, "out")
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT, env=env)
    finally:
        srv.close()
    return res, out, srv


def _four_clean_episodes(out):
    def ok():
        eps = episodes(out)
        require(sorted(e["item_id"] for e in eps if not e.get("error")) == ["v000", "v001", "v002", "v003"],
                f"{len(eps)} episodes, {sum(bool(e.get('error')) for e in eps)} with an error")
    return ok


# == formats: files as other tools and operating systems write them ==============================
SIIM_GOOD = {"1.2.3.1.dcm", "1.2.3.2.dcm", "1.2.3.3.dcm", "1.2.3.4.png"}


def _siim(tmp, plant):
    from tests.fixtures.cohort_layouts import write_siim
    root = os.path.join(tmp, "siim")
    write_siim(root)
    plant(root)
    return _import(tmp, "siim-rle", root), os.path.join(tmp, "out")


def _siim_cases(out):
    return {os.path.basename(c.get("source_file") or "") for c in _table_rows(os.path.join(out, "cases.parquet"))}


def _siim_csv_or_error(tmp, edit):
    """The RLE CSV edited as another tool writes it: either one clean error naming the CSV (exit 2,
    nothing written as complete), or every good case imported as from the plain CSV."""
    def plant(root):
        p = os.path.join(root, "train-rle.csv")
        # harness correction after the first run: `open(p, "w").write(edit(open(p).read()))` truncated
        # the file before reading it, so the first run's two probes edited an empty CSV
        text = open(p).read()
        require("ImageId, EncodedPixels" in text, "setup: no Kaggle header in the CSV")
        open(p, "w").write(edit(text))
    res, out = _siim(tmp, plant)
    generic(res, out)
    if res.rc == 2:
        clean_error(res)
        text = " ".join(res.error_lines()).lower()
        require("train-rle.csv" in text or "rle csv" in text, "the error names not the CSV: " + _last(res.err))
        return
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    have = _siim_cases(out)
    require(SIIM_GOOD <= have, f"good cases lost: {sorted(have)}")


@probe("formats", "siim-rle: train-rle.csv from Excel, first line 'sep=,'")
def _(tmp):
    _siim_csv_or_error(tmp, lambda text: "sep=,\n" + text)


@probe("formats", "siim-rle: train-rle.csv tab-separated")
def _(tmp):
    _siim_csv_or_error(tmp, lambda text: text.replace(", ", "\t"))


@probe("formats", "cohort remove @ids.csv with Mac CR-only line ends")
def _(tmp):
    def arg(ids):
        return "@" + _write(os.path.join(tmp, "ids.csv"), f"case_id\r{ids[0]}\r{ids[1]}\r", "w")
    _remove_or(tmp, arg, lambda ids: ids[:2], lambda ids: ["ids.csv"])


@probe("formats", "answers read --replies with Mac CR-only line ends")
def _(tmp):
    p = _write(os.path.join(tmp, "cr-replies.jsonl"), b'{"reply": "Yes, there is a nodule."}\r{"reply": "No."}\r', "wb")
    res, out = _read_replies(tmp, p)

    def ok():
        got = [r.get("decision") for r in _readings(out)]
        require(got == ["claim", "deny"], f"decisions {got}, not ['claim', 'deny']")
    error_or(res, ["cr-replies.jsonl"], ok)


def _labels_text(tmp, edit):
    run_dir, out, rows = _audited(tmp)
    p = _labels(tmp, out, {r["sample_id"]: r["reading"]["decision"] for r in rows})
    # harness correction after the first run: `open(p, "w").write(edit(open(p).read()))` truncated
    # the labels before reading them, so the first run's two probes edited an empty file
    text = open(p).read()
    require(text.rstrip().endswith("}") and ', "' in text, "setup: labels.json is not the one-line JSON written")
    open(p, "w").write(edit(text))
    res = _agreement(tmp, run_dir, p)
    ag = os.path.join(tmp, "agreement.json")
    error_or(res, ["labels.json"], lambda: require(os.path.exists(ag), "no agreement.json"))


@probe("formats", "answers agreement --labels JSON with // comments")
def _(tmp):
    _labels_text(tmp, lambda text: "// labelled by reader A, 2026-12-01\n" + text.replace(', "', ',\n// next\n "', 1))


@probe("formats", "answers agreement --labels JSON with trailing commas")
def _(tmp):
    _labels_text(tmp, lambda text: text.rstrip().rstrip("}").rstrip() + ",}" if text.rstrip().endswith("}") else text)


BOMB = cf.BOMB


@probe("formats", "views build --recipe holding a YAML alias bomb")
def _(tmp):
    recipe = _write(os.path.join(tmp, "bomb-recipe.yaml"),
                    BOMB + "name: demo\nseed: 0\ntools: [transplant, graft]\nnotes: *i\n")
    res, _ = _views(tmp, "--recipe", recipe)
    clean_error(res, "bomb-recipe.yaml")


@probe("formats", "cohort import --dataset-config holding a YAML alias bomb")
def _(tmp):
    root = cf._imf_root(tmp)
    p = _write(os.path.join(tmp, "bomb-site.yaml"), BOMB + "mask_suffix: _mask\nnotes: *i\n")
    clean_error(_import(tmp, "image-mask-folder", root, "--dataset-config", p), "bomb-site.yaml")


@probe("formats", "rules hash --plan a JSON plan with // comments")
def _(tmp):
    import yaml
    plan = yaml.safe_load(open(os.path.join(REPO, "configs", "plans", "v4_selection.yaml")))
    text = "// exported from the trial registry\n" + json.dumps(plan, indent=2)
    p = _write(os.path.join(tmp, "plan-with-comments.json"), text)
    clean_error(run(["rules", "hash", "--plan", p]), "plan-with-comments.json")


# == images: image and volume files of shapes not tried before ==================================
def _png(arr):
    return cf._png_bytes(arr)


@probe("images", "image-mask-folder: an RGBA image with varying alpha")
def _(tmp):
    def plant(root):
        a = np.zeros((32, 40, 4), np.uint8)
        a[..., 0] = 120
        a[..., 1] = np.arange(40, dtype=np.uint8)[None, :] * 5
        a[..., 3] = np.arange(32, dtype=np.uint8)[:, None] * 8
        _write(os.path.join(root, "images", "P020_a.png"), _png(a), "wb")
        _mask_for(root, "P020_a")
    _imf_import(tmp, plant, "P020_a")


@probe("images", "image-mask-folder: JPEG bytes in a file named .png")
def _(tmp):
    import io
    from PIL import Image

    def plant(root):
        b = io.BytesIO()
        Image.fromarray(np.full((32, 40), 100, np.uint8)).save(b, format="JPEG")
        _write(os.path.join(root, "images", "P021_a.png"), b.getvalue(), "wb")
        _mask_for(root, "P021_a")
    _imf_import(tmp, plant, "P021_a")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


@probe("images", "image-mask-folder: a zTXt chunk inflating to 100 MB before IDAT")
def _(tmp):
    def plant(root):
        png = _png(np.full((32, 40), 90, np.uint8))
        bomb = _chunk(b"zTXt", b"Comment\x00\x00" + zlib.compress(b"A" * (100 * 2 ** 20), 9))
        _write(os.path.join(root, "images", "P022_a.png"), png[:33] + bomb + png[33:], "wb")  # after IHDR
        _mask_for(root, "P022_a")
    _imf_import(tmp, plant, "P022_a")


def _tiff_header(width, height):
    """A little-endian baseline TIFF whose header claims width x height 8-bit pixels (1 KB of data)."""
    entries = [(256, 4, width), (257, 4, height), (258, 3, 8), (259, 3, 1), (262, 3, 1), (273, 4, 0),
               (277, 3, 1), (278, 4, height), (279, 4, 1024)]
    ifd_size = 2 + 12 * len(entries) + 4
    data_at = 8 + ifd_size
    out = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", len(entries))
    for tag, typ, val in entries:
        if tag == 273:
            val = data_at
        out += struct.pack("<HHI", tag, typ, 1) + (struct.pack("<HH", val, 0) if typ == 3 else struct.pack("<I", val))
    return out + struct.pack("<I", 0) + b"\x00" * 1024


@probe("images", "image-mask-folder: a 2 KB TIFF claiming 1,000,000 x 1,000,000 pixels")
def _(tmp):
    def plant(root):
        _write(os.path.join(root, "images", "P023_a.tif"), _tiff_header(1_000_000, 1_000_000), "wb")
        _mask_for(root, "P023_a")
    _imf_import(tmp, plant, "P023_a", want_reject=True)


def _dicom_bytes(path, rows, cols, pixel_data):
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.PatientID = "pat-bad"
    ds.Modality = "CR"
    ds.Rows, ds.Columns = rows, cols
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.BitsAllocated = ds.BitsStored = 8
    ds.HighBit = 7
    ds.PixelRepresentation = 0
    if pixel_data is not None:
        ds.PixelData = pixel_data
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ds.save_as(path, enforce_file_format=True)


def _siim_bad_dicom(tmp, image_id, rows, cols, pixel_data):
    def plant(root):
        _dicom_bytes(os.path.join(root, "dicom-images-train", "y", f"{image_id}.dcm"), rows, cols, pixel_data)
        with open(os.path.join(root, "train-rle.csv"), "a") as f:
            f.write(f"{image_id}, 1 3\n")
    res, out = _siim(tmp, plant)
    generic(res, out)
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    have = _siim_cases(out)
    require(SIIM_GOOD <= have, f"good cases lost: {sorted(have)}")
    require(f"{image_id}.dcm" not in have, f"{image_id}.dcm became a case")
    rej = [r for r in _table_rows(os.path.join(out, "rejects.parquet")) if image_id in (r.get("item_id") or "")]
    require(rej and rej[0].get("reason"), f"{image_id}.dcm has no reject row")


@probe("images", "siim-rle: a DICOM without pixel data")
def _(tmp):
    _siim_bad_dicom(tmp, "1.2.3.11", 32, 32, None)


@probe("images", "siim-rle: a DICOM header claiming 60000 x 60000, 64 bytes of pixels")
def _(tmp):
    _siim_bad_dicom(tmp, "1.2.3.12", 60000, 60000, b"\x00" * 64)


def _nl_with(tmp, plant, stem, want_reject):
    """nifti-labels fixture, ``plant(root)`` adds img<stem> / label<stem>; the good volumes stay and the
    planted one is a volume or (``want_reject``: must be) a reject with a reason, not a missing label."""
    from tests.fixtures.cohort_layouts import write_nifti_labels
    root = os.path.join(tmp, "nl")
    write_nifti_labels(root)
    plant(root)
    res = _import(tmp, "nifti-labels", root, "--dataset-config", os.path.join(root, "organs.yaml"))
    out = os.path.join(tmp, "out")
    generic(res, out)
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    vols = _table_rows(os.path.join(out, "volumes.parquet"))
    have = json.dumps(vols, default=str)
    require("img0001" in have and "img0002" in have, "good volumes lost")
    rej = [r for r in _table_rows(os.path.join(out, "rejects.parquet")) if f"img{stem}" in (r.get("item_id") or "")]
    if rej:
        require(rej[0].get("reason") and rej[0]["reason"] != "missing label map",
                f"img{stem}: reject {rej[0].get('reason')!r}")
        return
    require(f"img{stem}" in have, f"img{stem}: neither a volume nor a reject")
    # message corrected after the first run (the verdict is unchanged): it read "neither a volume nor
    # a reject" also when the volume was kept where a reject is required
    require(not want_reject, f"img{stem}: kept as a volume, where a reject is required")


@probe("images", "nifti-labels: a gzipped header claiming 30000^3 int16 voxels (54 TB)")
def _(tmp):
    import nibabel as nib
    affine = np.diag([0.8, 0.8, 2.5, 1.0])

    def bomb(path, dtype):
        hdr = nib.Nifti1Header()
        hdr.set_data_dtype(dtype)
        hdr.set_data_shape((30000, 30000, 30000))
        hdr.set_sform(affine, 1)
        hdr.set_qform(affine, 1)
        hdr["vox_offset"] = 352
        _write(path, gzip.compress(hdr.binaryblock + b"\x00" * 4 + b"\x00" * 4096), "wb")

    def plant(root):  # image and label claim the same shape, so only the budget can refuse them
        bomb(os.path.join(root, "imagesTr", "img0020.nii.gz"), np.int16)
        bomb(os.path.join(root, "labelsTr", "label0020.nii.gz"), np.uint8)
    _nl_with(tmp, plant, "0020", want_reject=True)


@probe("images", "nifti-labels: zero voxel size (pixdim 0, no sform or qform)")
def _(tmp):
    import nibabel as nib

    def zero_voxels(arr, path):
        img = nib.Nifti1Image(arr, None)
        img.header["pixdim"][1:4] = 0
        img.header["sform_code"] = 0
        img.header["qform_code"] = 0
        nib.save(img, path)
        raw = gzip.decompress(open(path, "rb").read())  # nibabel's loader would show 1s (below)
        require(struct.unpack("<4f", raw[76:92])[1:] == (0.0, 0.0, 0.0) and raw[252:256] == b"\x00" * 4,
                "setup: header not written as meant")

    def plant(root):
        img = np.full((16, 16, 6), -1000, np.int16)
        img[4:12, 4:12, :] = 40
        zero_voxels(img, os.path.join(root, "imagesTr", "img0021.nii.gz"))
        lab = np.zeros((16, 16, 6), np.uint8)
        lab[4:8, 4:8, 1:4] = 1
        zero_voxels(lab, os.path.join(root, "labelsTr", "label0021.nii.gz"))
    # With no sform or qform the voxel-to-world matrix is diag(pixdim), here singular: the docs'
    # `invalid affine`. nibabel's loader replaces zero pixdims by 1 (a warning only), so a volume kept
    # would carry an invented 1 mm spacing as if the file said so; hence a reject is required.
    _nl_with(tmp, plant, "0021", want_reject=True)


# == config: values of the wrong kind or unit ===================================================
@probe("config", "models file: timeout_s: '30s' (a unit)")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1", timeout_s="30s")
    clean_error(run(eval_args(items, m, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT), "timeout_s")


@probe("config", "models file: max_output_tokens: 1e3 (YAML reads it as text)")
def _(tmp):
    res, out, _s = _good_provider_eval(
        tmp, lambda text: text.replace("max_output_tokens: 12345", "max_output_tokens: 1e3").encode(),
        max_output_tokens=12345)
    error_or(res, ["max_output_tokens"], _four_clean_episodes(out), folder=out)


@probe("config", "dataset config: max_file_bytes: 1GB")
def _(tmp):
    root = cf._imf_root(tmp)
    p = _write(os.path.join(tmp, "site.yaml"), "mask_suffix: _mask\nlimits:\n  max_file_bytes: 1GB\n")
    clean_error(_import(tmp, "image-mask-folder", root, "--dataset-config", p), "max_file_bytes")


@probe("config", "dataset config: whole_mask_frac: 95 (a percentage)")
def _(tmp):
    root = cf._imf_root(tmp)
    p = _write(os.path.join(tmp, "site.yaml"), "mask_suffix: _mask\nwhole_mask_frac: 95\n")
    clean_error(_import(tmp, "image-mask-folder", root, "--dataset-config", p), "whole_mask_frac")


@probe("config", "--dataset limits.max_image_pixels: 5e7 (YAML reads it as text)")
def _(tmp):
    root = cf._imf_root(tmp)
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask, limits: {max_image_pixels: 5e7}}")
    out = os.path.join(tmp, "out")

    def ok():
        have = {os.path.basename(c.get("source_file") or "") for c in _table_rows(os.path.join(out, "cases.parquet"))}
        require({"P001_a.png", "P001_b.png"} <= have, f"good cases lost: {sorted(have)}")
    error_or(res, ["max_image_pixels"], ok, folder=out)


@probe("config", "eval run --budget-usd '1,50' (a decimal comma)")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    argparse_error(run(eval_args(items, m, os.path.join(tmp, "out"), "--budget-usd", "1,50"), timeout=EVAL_TIMEOUT),
                   "budget")


@probe("config", "eval run --max-failed 5% (a percentage)")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    _error_any(run(eval_args(items, m, os.path.join(tmp, "out"), "--max-failed", "5%"), timeout=EVAL_TIMEOUT),
               ["max_failed", "max-failed"])


@probe("config", "score --n-boot 1e3 (scientific notation for a count)")
def _(tmp):
    d = base_run(tmp)
    sc = os.path.join(tmp, "sc")
    res = run(["score", "--episodes", d, "--out", sc, "--n-boot", "1e3"], timeout=180)
    generic(res)
    if res.rc == 2:
        _error_any(res, ["n-boot", "n_boot"])
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(os.path.exists(os.path.join(sc, "metrics.parquet")), "no metrics.parquet")


@probe("config", "train --recipe with lr: 5,0e-3 (a decimal comma)")
def _(tmp):
    text = open(os.path.join(REPO, "configs", "train", "smoke.yaml")).read()
    require("lr: 5.0e-3" in text, "setup: smoke recipe has no 'lr: 5.0e-3'")
    views = write_items(os.path.join(tmp, "views.parquet"))
    r = _write(os.path.join(tmp, "comma-recipe.yaml"), text.replace("lr: 5.0e-3", "lr: 5,0e-3"))
    res = run(["train", "--recipe", r, "--views", views, "--out", os.path.join(tmp, "tr")], timeout=180, cwd=REPO)
    clean_error(res, "lr")


# == env: the shell a job runs in ==============================================================
@probe("env", "eval run with HOME unset")
def _(tmp):
    env = dict(ENV)
    env.pop("HOME", None)
    res, out, _s = _good_provider_eval(tmp, env=env)
    error_or(res, ["HOME"], _four_clean_episodes(out), folder=out)


@probe("env", "eval run with TMPDIR a folder that does not exist")
def _(tmp):
    env = dict(ENV, TMPDIR=os.path.join(tmp, "no-such-tmp"))
    res, out, _s = _good_provider_eval(tmp, env=env)
    error_or(res, ["TMPDIR", "no-such-tmp"], _four_clean_episodes(out), folder=out)


@probe("env", "score with TMPDIR a regular file")
def _(tmp):
    d = base_run(tmp)
    f = _write(os.path.join(tmp, "tmp-is-a-file"), "x")
    sc = os.path.join(tmp, "sc")
    res = run(["score", "--episodes", d, "--out", sc, "--n-boot", "50"], timeout=180, env=dict(ENV, TMPDIR=f))
    error_or(res, ["TMPDIR", "tmp-is-a-file"], lambda: require(os.path.exists(os.path.join(sc, "metrics.parquet")),
                                                                "no metrics.parquet"))


@probe("env", "cohort phantom --out under a read-only parent (as another user)")
def _(tmp):
    ro = os.path.join(tmp, "read-only-parent")
    os.makedirs(ro)
    os.chmod(tmp, 0o755)
    os.chmod(ro, 0o555)
    res = run_nobody(tmp, ["cohort", "phantom", "--out", os.path.join(ro, "ph"), "--cases", "2", "--volumes", "0"])
    clean_error(res, "read-only-parent")


@probe("env", "cohort show from a working folder deleted under the shell")
def _(tmp):
    out, ids = cf.phantom_cohort(tmp, cases=2)
    gone = os.path.join(tmp, "gone")
    os.makedirs(gone)
    res = run(["cohort", "show", out], shell_prefix=f"cd '{gone}' && rmdir '{gone}' &&")
    generic(res)
    if res.rc == 2:
        clean_error(res)
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require('"phantom": 2' in res.out, "the counts are not printed: " + _last(res.out))  # cases.by_source


def _key_env_eval(tmp, key_value):
    """A healthy provider, the key variable set to ``key_value`` (the planted secret pasted badly).
    Clean: the sweep runs on the key as meant (4 episodes) or stops before any request, naming the
    variable; the key is never printed nor written (generic searches for the secret)."""
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT, env=dict(ENV, **{KEY_ENV: key_value}))
    finally:
        srv.close()
    generic(res, out)
    if res.rc == 2:
        clean_error(res, KEY_ENV, folder=out)
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    _four_clean_episodes(out)()


@probe("env", "the key variable ends in a Windows line end (\\r\\n)")
def _(tmp):
    _key_env_eval(tmp, SECRET + "\r\n")


@probe("env", "the key variable pasted with smart quotes (\u201c...\u201d)")
def _(tmp):
    _key_env_eval(tmp, "\u201c" + SECRET + "\u201d")


# == provider: loopback replies not tried before ===============================================
@probe("provider", "content as a list of parts [{type: text, text: yes}]")
def _(tmp):
    body = json.dumps(_completion(content=[{"type": "text", "text": "yes"}])).encode()
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, body))
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "503 with Retry-After an HTTP date in 2099")
def _(tmp):
    def bad(h):
        body = b'{"error": {"message": "overloaded"}}'
        raw(h, b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
               b"retry-after: Thu, 31 Dec 2099 23:59:59 GMT\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "a reply header line of 1 MB")
def _(tmp):
    def bad(h):
        body = json.dumps(_completion()).encode()
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-trace: " + b"a" * (1 << 20)
            + b"\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "a status line that is not HTTP ('HTTP/1.1 2OO OK')")
def _(tmp):
    def bad(h):
        body = json.dumps(_completion()).encode()
        raw(h, b"HTTP/1.1 2OO OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "a 200 HTML sign-in page (an SSO proxy in the way)")
def _(tmp):
    def bad(h):
        body = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body><form>...</form></body></html>"
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: %d\r\n\r\n" % len(body)
            + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "usage: null, under a budget")
def _(tmp):
    import math
    c = _completion()
    c["usage"] = None
    body = json.dumps(c).encode()
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, body), more=("--budget-usd", "1"))
    generic(res, out)
    if os.path.exists(os.path.join(out, "sweep.json")):
        spent = json.load(open(os.path.join(out, "sweep.json"))).get("spent_usd", 0) or 0
        require(math.isfinite(spent) and spent >= 0, f"spent_usd {spent}")
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "base_url https:// at a plain-HTTP server")
def _(tmp):
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url.replace("http://", "https://"))
        out = os.path.join(tmp, "out")
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    generic(res, out)
    if res.rc == 2:
        clean_error(res, folder=out)
        return
    # every unit failed with its reason: exit 4 (no work), each unit an episode error or a reject
    require(res.rc == 4, f"exit {res.rc}, neither 2 nor 4: {_last(res.text)}")
    eps, rej = episodes(out), rejects(out)
    failed = {e["item_id"] for e in eps if e.get("error")} | {r.get("item_id") for r in rej if r.get("reason")}
    require(failed >= {"v000", "v001", "v002", "v003"}, f"units without a reason: {sorted(failed)}")


# == verbs: a table of the wrong kind, outputs changed between verbs ===========================
@probe("verbs", "views show of a cohort folder (cases, no views)")
def _(tmp):
    out, _ = cf.phantom_cohort(tmp, cases=2)
    clean_error(run(["views", "show", out]), out)


@probe("verbs", "compare --metrics a scores.parquet")
def _(tmp):
    sc = _scored(tmp)
    res = run(["compare", "--metrics", os.path.join(sc, "scores.parquet"), "--reference", "m", "--n-boot", "20"])
    # harness correction after the first run: compare reads only the scores beside the --metrics path
    # (its help: "metrics URI of a scored run (its scores.parquet is used)"; pipelines/score.compare_run
    # takes the folder of the path), so a scores.parquet given there is beside the very scores it
    # reads and the comparison is the right one; the first run demanded an error
    # the run holds the one model "m": since the tenth campaign, compare refuses a reference with
    # nothing to compare against (it printed an empty line and exit 0)
    error_or(res, ["nothing to compare"], lambda: require(os.path.exists(os.path.join(sc, "comparisons.parquet")),
                                                          "no comparisons.parquet beside the scores"))


@probe("verbs", "stats mcnemar --scores an eval run never scored")
def _(tmp):
    d = base_run(tmp)
    clean_error(run(["stats", "mcnemar", "--scores", d, "--a", "m", "--b", "m"]), d)


@probe("verbs", "probe build --volumes a cases.parquet (2-D cases)")
def _(tmp):
    out, _ = cf.phantom_cohort(tmp, cases=2)
    res = run(["probe", "build", "--volumes", os.path.join(out, "cases.parquet"), "--out", os.path.join(tmp, "probe")],
              timeout=EVAL_TIMEOUT)
    clean_error(res, "cases.parquet")


@probe("verbs", "export hf --items a cases.parquet")
def _(tmp):
    out, _ = cf.phantom_cohort(tmp, cases=2)
    res = run(["export", "hf", "--items", os.path.join(out, "cases.parquet"), "--out", os.path.join(tmp, "hf"),
               "--license", "cc-by-4.0"])
    clean_error(res, "cases.parquet")


@probe("verbs", "train --views a cases.parquet")
def _(tmp):
    out, _ = cf.phantom_cohort(tmp, cases=2)
    res = run(["train", "--recipe", "configs/train/smoke.yaml", "--views", os.path.join(out, "cases.parquet"),
               "--out", os.path.join(tmp, "tr")], timeout=180, cwd=REPO)
    clean_error(res, "cases.parquet")


@probe("verbs", "answers agreement after audit_sample.jsonl lost a line")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    p = _labels(tmp, out, {r["sample_id"]: r["reading"]["decision"] for r in rows})
    sample = os.path.join(out, "audit_sample.jsonl")
    lines = open(sample).read().splitlines(keepends=True)
    require(len(lines) == 4, f"setup: {len(lines)} sampled lines")
    open(sample, "w").write("".join(lines[:-1]))
    clean_error(_agreement(tmp, run_dir, p), "sample")


@probe("verbs", "cohort show after rejects.parquet became a zero-byte file")
def _(tmp):
    out = _cohort_imported(tmp)
    open(os.path.join(out, "rejects.parquet"), "wb").close()
    clean_error(run(["cohort", "show", out]), "rejects.parquet")


@probe("verbs", "bench scale --cases 0")
def _(tmp):
    argparse_error(run(["bench", "scale", "--cases", "0"], timeout=120), "cases")


@probe("verbs", "crosswalk --sets a PNG file")
def _(tmp):
    from PIL import Image
    p = os.path.join(tmp, "scan.png")
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(p, format="PNG")
    clean_error(run(["crosswalk", "--sets", p]), "scan.png")


def main(argv=None):
    from tests.campaigns.campaign_fourth import run_probes

    return run_probes(PROBES, __doc__.splitlines()[0], "c9-", argv)


if __name__ == "__main__":
    sys.exit(main())
