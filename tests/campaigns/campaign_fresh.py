"""The fresh bad-input campaign after the fourth (issue 51): kinds none of the earlier campaigns
tried, written and committed before its first run, each probe driving the real CLI in a
subprocess with a timeout (a hang is a failure).

Not a pytest module (no ``test_`` prefix): run it by hand, it prints one line per probe and the
clean figure per family::

    PYTHONPATH=$PWD .venv/bin/python tests/campaigns/campaign_fresh.py [--only FAMILY] [--json OUT]

The harness (subprocess runner, the clean / not-clean rules, the planted provider key, the raw
loopback provider) is ``campaign_fourth``'s, imported from it, so both campaigns judge alike: a
probe is **clean** when the command ends inside its timeout, prints no traceback and no secret,
and either stops with exit 2 and one ``medscope: error:`` line naming the input and the problem,
or finishes keeping the other work and giving the bad input a row (a reject or an episode
error) with a reason. A probe that raises anything else is counted ``ERROR`` (the campaign's own
fault until read), never clean.

Families: ``ids`` (``cohort remove`` id lists), ``config`` (models, dataset, recipe YAML),
``tables`` (item and report tables as other tools write them), ``images`` (``cohort import``
files), ``provider`` (loopback replies), ``runs`` (eval run folders), ``flags``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from medscope.testing import providers as fp  # noqa: E402
from tests.campaigns.campaign_fourth import (  # noqa: E402
    EVAL_TIMEOUT, SECRET, _last, base_run, check_bad_unit_kept_apart, episodes, eval_args, generic,
    models_file, one_bad_unit, raw, require, run, write_items)

PROBES: list[tuple[str, str, object]] = []


def clean_error(res, *needles, folder=None):
    """campaign_fourth's rule, reading the error's indented detail lines too.

    Harness correction after the first run: ``eval run``'s pre-flight names each failing model
    on an indented line under its ``medscope: error:`` headline (one line per model), which the
    fourth campaign's rule, reading the headline only, missed.
    """
    from tests.campaigns import campaign_fourth as c4
    c4.generic(res, folder)
    require(res.rc == 2, f"exit {res.rc}, not 2: {_last(res.text)}")
    block, inside = [], False
    for ln in res.err.splitlines():
        if ln.startswith("medscope: error:"):
            block.append(ln)
            inside = True
        elif inside and ln.startswith("  "):
            block.append(ln)
        else:
            inside = False
    require(block, "no error line: " + _last(res.text))
    joined = " ".join(block).lower()
    missing = [n for n in needles if n.lower() not in joined]
    require(not missing, f"error does not name {missing}: {block[-1][:300]}")


def probe(family, name):
    def deco(fn):
        PROBES.append((family, name, fn))
        return fn
    return deco


def _write(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)
    return path


def _table_rows(path):
    import pyarrow.parquet as pq
    return pq.read_table(path).to_pylist() if os.path.exists(path) else []


# == ids: cohort remove ========================================================================
def phantom_cohort(tmp, cases=4):
    out = os.path.join(tmp, "cohort")
    r = run(["cohort", "phantom", "--out", out, "--cases", str(cases), "--volumes", "0"])
    require(r.rc == 0, "setup: " + _last(r.text))
    ids = sorted(r["case_id"] for r in _table_rows(os.path.join(out, "cases.parquet")))
    require(len(ids) == cases, f"setup: {len(ids)} cases")
    return out, ids


def _case_ids(out):
    return sorted(r["case_id"] for r in _table_rows(os.path.join(out, "cases.parquet")))


def remove(cohort, cases):
    return run(["cohort", "remove", "--cases", cases, "--folders", cohort])


def _nothing_removed(out, before):
    require(_case_ids(out) == before, f"cases changed though the command failed: {len(_case_ids(out))} left")


@probe("ids", "an id with a Cyrillic look-alike letter")
def _(tmp):
    out, ids = phantom_cohort(tmp)
    look_alike = ids[1].replace("a", "\u0430", 1).replace("o", "\u043e", 1)
    require(look_alike != ids[1], "setup: no a/o in the id")
    res = remove(out, f"{ids[0]},{look_alike}")
    clean_error(res, look_alike)
    _nothing_removed(out, ids)


@probe("ids", "the same id twice in one @file")
def _(tmp):
    out, ids = phantom_cohort(tmp)
    p = _write(os.path.join(tmp, "ids.txt"), f"{ids[2]}\n{ids[2]}\n")
    res = remove(out, "@" + p)
    generic(res, out)
    if res.rc == 2:
        clean_error(res, ids[2])
        _nothing_removed(out, ids)
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(_case_ids(out) == [i for i in ids if i != ids[2]], f"cases left {_case_ids(out)}")


@probe("ids", "@file that is a folder")
def _(tmp):
    out, ids = phantom_cohort(tmp)
    d = os.path.join(tmp, "idlist")
    os.makedirs(d)
    clean_error(remove(out, "@" + d), "idlist")
    _nothing_removed(out, ids)


@probe("ids", "@file that is empty")
def _(tmp):
    out, ids = phantom_cohort(tmp)
    p = _write(os.path.join(tmp, "empty-ids.txt"), "")
    clean_error(remove(out, "@" + p), "empty-ids.txt")
    _nothing_removed(out, ids)


@probe("ids", "@file of 80 MB of ids that match nothing")
def _(tmp):
    out, ids = phantom_cohort(tmp)
    p = os.path.join(tmp, "huge-ids.txt")
    with open(p, "w") as f:
        line = "".join(f"nobody-{i:08d}\n" for i in range(100_000))
        for _ in range(int(80e6 // len(line)) + 1):
            f.write(line)
    res = remove(out, "@" + p)
    clean_error(res)
    require(len(res.err) < 100_000, f"the error is {len(res.err)} characters long")
    _nothing_removed(out, ids)


@probe("ids", "--cases an empty string")
def _(tmp):
    out, ids = phantom_cohort(tmp)
    clean_error(remove(out, ""), "cases")
    _nothing_removed(out, ids)


@probe("ids", "--folders a folder medscope did not write")
def _(tmp):
    out, ids = phantom_cohort(tmp)
    other = os.path.join(tmp, "holiday-photos")
    _write(os.path.join(other, "beach.txt"), "sand")
    res = run(["cohort", "remove", "--cases", ids[0], "--folders", other])
    clean_error(res, "holiday-photos")


# == config: YAML =============================================================================
def _models_yaml(tmp, text):
    return _write(os.path.join(tmp, "models.yaml"), text)


def _eval_with_models(tmp, models):
    items = write_items(os.path.join(tmp, "views.parquet"))
    return run(eval_args(items, models, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT)


BOMB = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@probe("config", "models file: an alias bomb (billion laughs)")
def _(tmp):
    m = _models_yaml(tmp, BOMB + "models:\n  - {name: m, kind: openai, model: f, base_url: 'http://127.0.0.1:9/v1', "
                     "api_key_env: CAMPAIGN4_KEY, options: {x: *i}}\n")
    clean_error(_eval_with_models(tmp, m), "models.yaml")


@probe("config", "models file: a key twice in one entry")
def _(tmp):
    m = _models_yaml(tmp, "models:\n  - name: m\n    kind: openai\n    model: fake-1\n    model: fake-2\n"
                          "    base_url: http://127.0.0.1:9/v1\n    api_key_env: CAMPAIGN4_KEY\n")
    clean_error(_eval_with_models(tmp, m), "models.yaml", "model")


@probe("config", "models file: misspelt key 'temprature'")
def _(tmp):
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1", temprature=0)
    clean_error(_eval_with_models(tmp, m), "temprature")


@probe("config", "models file: api_key_env names an unset variable")
def _(tmp):
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_VAR_51")
    clean_error(_eval_with_models(tmp, m), "NO_SUCH_KEY_VAR_51")


@probe("config", "models file: base_url '${PROVIDER_HOST}/v1' (an unset env reference)")
def _(tmp):
    m = models_file(os.path.join(tmp, "models.yaml"), "${PROVIDER_HOST}/v1")
    clean_error(_eval_with_models(tmp, m), "base_url")


@probe("config", "models file: settings.thinking_budget a string, nested")
def _(tmp):
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1", settings={"thinking_budget": "lots"})
    clean_error(_eval_with_models(tmp, m), "thinking_budget")


@probe("config", "models file: options value a nested mapping")
def _(tmp):
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1", options={"extra": {"deep": [1, 2]}})
    clean_error(_eval_with_models(tmp, m), "options")


@probe("config", "models file: merge key '<<' of an undefined anchor")
def _(tmp):
    m = _models_yaml(tmp, "models:\n  - <<: *defaults\n    name: m\n    kind: openai\n")
    clean_error(_eval_with_models(tmp, m), "models.yaml")


@probe("config", "eval run --config: a YAML list")
def _(tmp):
    p = _write(os.path.join(tmp, "job.yaml"), "- items: a.parquet\n- models: m.yaml\n")
    clean_error(run(["eval", "run", "--config", p], timeout=EVAL_TIMEOUT), "job.yaml")


def _imf_root(tmp):
    from tests.fixtures.cohort_layouts import write_image_mask_folder
    root = os.path.join(tmp, "imf")
    write_image_mask_folder(root)
    return root


def _import(tmp, fmt, root, *more, out="out"):
    return run(["cohort", "import", "--format", fmt, "--path", root, "--out", os.path.join(tmp, out), *more])


@probe("config", "dataset config: tab-indented")
def _(tmp):
    root = _imf_root(tmp)
    p = _write(os.path.join(tmp, "site.yaml"), "limits:\n\tmax_file_bytes: 1000\n")
    clean_error(_import(tmp, "image-mask-folder", root, "--dataset-config", p), "site.yaml")


@probe("config", "dataset config: organ_map value a list, nested")
def _(tmp):
    from tests.fixtures.cohort_layouts import write_nifti_labels
    root = os.path.join(tmp, "nl")
    write_nifti_labels(root)
    p = _write(os.path.join(tmp, "organs.yaml"), "organ_map:\n  1: [spleen, liver]\n  2: liver\n")
    clean_error(_import(tmp, "nifti-labels", root, "--dataset-config", p), "organ_map")


# == tables ===================================================================================
def _items_with(tmp, mutate, name="views.parquet"):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = write_items(os.path.join(tmp, name))
    t = pq.read_table(path)
    t = mutate(t, pa)
    pq.write_table(t, path)
    return path


def _set_column(t, pa, name, values, typ=None):
    i = t.schema.get_field_index(name)
    return t.set_column(i, pa.field(name, typ or pa.array(values).type), pa.array(values, type=typ))


def _eval_items(tmp, items, url="http://127.0.0.1:9/v1"):
    m = models_file(os.path.join(tmp, "models.yaml"), url)
    return run(eval_args(items, m, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT)


def _eval_items_good_provider(tmp, items):
    srv = fp.FakeProvider("openai", responder=lambda t, i: "yes", expected_key=SECRET)
    try:
        return _eval_items(tmp, items, srv.url)
    finally:
        srv.close()


@probe("tables", "views: question column int64")
def _(tmp):
    items = _items_with(tmp, lambda t, pa: _set_column(t, pa, "question", [1, 2, 3, 4]))
    clean_error(_eval_items(tmp, items), "views.parquet", "question")


@probe("tables", "views: lesion_area_frac +inf")
def _(tmp):
    items = _items_with(tmp, lambda t, pa: _set_column(t, pa, "lesion_area_frac", [0.0, float("inf"), 0.0, 0.0]))
    clean_error(_eval_items(tmp, items), "views.parquet", "lesion_area_frac")


@probe("tables", "views: view_id v001 twice")
def _(tmp):
    items = _items_with(tmp, lambda t, pa: _set_column(t, pa, "view_id", ["v000", "v001", "v001", "v003"]))
    res = _eval_items(tmp, items)
    clean_error(res, "v001")


@probe("tables", "views: parquet cut off before its footer")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    data = open(items, "rb").read()
    open(items, "wb").write(data[: len(data) * 2 // 3])
    clean_error(_eval_items(tmp, items), "views.parquet")


@probe("tables", "views: strings as large_string, images as large_binary (polars style)")
def _(tmp):
    def big(t, pa):
        fields = []
        for f in t.schema:
            typ = pa.large_string() if f.type == pa.string() else pa.large_binary() if f.type == pa.binary() else f.type
            fields.append(pa.field(f.name, typ, f.nullable))
        return t.cast(pa.schema(fields))
    items = _items_with(tmp, big)
    res = _eval_items_good_provider(tmp, items)
    generic(res, os.path.join(tmp, "out"))
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(len(episodes(os.path.join(tmp, "out"))) == 4, "not 4 episodes")


@probe("tables", "views: string columns dictionary-encoded (pandas category)")
def _(tmp):
    def cat(t, pa):
        for name in ("split", "finding", "kind", "source"):
            i = t.schema.get_field_index(name)
            col = t.column(name).dictionary_encode()
            t = t.set_column(i, pa.field(name, col.type), col)
        return t
    items = _items_with(tmp, cat)
    res = _eval_items_good_provider(tmp, items)
    generic(res, os.path.join(tmp, "out"))
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(len(episodes(os.path.join(tmp, "out"))) == 4, "not 4 episodes")


@probe("tables", "views build --cases a 0-row cases table")
def _(tmp):
    out, _ids = phantom_cohort(tmp)
    import pyarrow.parquet as pq
    p = os.path.join(out, "cases.parquet")
    pq.write_table(pq.read_table(p).slice(0, 0), os.path.join(tmp, "nocases.parquet"))
    res = run(["views", "build", "--cases", os.path.join(tmp, "nocases.parquet"), "--out", os.path.join(tmp, "v"),
               "--engine", "local"], timeout=EVAL_TIMEOUT)
    clean_error(res, "nocases.parquet")


@probe("tables", "answers read --replies: a trailing partial line")
def _(tmp):
    p = os.path.join(tmp, "replies.jsonl")
    _write(p, '{"reply": "Yes, there is a nodule."}\n{"reply": "No."}\n{"reply": "Yes, cle')
    res = run(["answers", "read", "--protocol", "counterfactual", "--replies", p, "--question",
               "Is there a nodule?", "--finding", "nodule", "--out", os.path.join(tmp, "readings.jsonl")])
    generic(res)
    if res.rc == 2:
        clean_error(res, "replies.jsonl", "3")
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    lines = [json.loads(x) for x in open(os.path.join(tmp, "readings.jsonl")) if x.strip()]
    require(len(lines) >= 2, f"{len(lines)} readings")
    require(len(lines) == 2 or any("error" in json.dumps(x).lower() or "reject" in json.dumps(x).lower()
                                   for x in lines[2:]), "the partial line was read as a reply")
    require("line 3" in res.text.lower() or len(lines) == 3, "the partial line was dropped without a word")


@probe("tables", "benchgen reports.jsonl: a trailing partial line")
def _(tmp):
    from tests.campaigns.campaign_fourth import bg_build, bg_items_cases, bg_rejects, bg_setup
    _, reps = bg_setup(tmp)
    p = os.path.join(tmp, "reports.jsonl")
    text = "\n".join(json.dumps(r) for r in reps)
    text = text[: len(text) - 25]  # the last report cut mid-line, no newline
    _write(p, text)
    res = bg_build(tmp, p)
    generic(res)
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    require({"phantom-000", "phantom-001"} <= bg_items_cases(tmp), "the whole reports lost")
    require(len(bg_rejects(tmp)) >= 1, "the cut line left no reject row")


@probe("tables", "score --items: a views table of the right ids, width -5 and height 10^12")
def _(tmp):
    run_dir = base_run(tmp)
    items = _items_with(tmp, lambda t, pa: _set_column(_set_column(t, pa, "width", [16, -5, 16, 16]), pa,
                                                       "height", [16, 10**12, 16, 16]), name="sizes.parquet")
    res = run(["score", "--episodes", run_dir, "--items", items, "--out", os.path.join(tmp, "scored")])
    clean_error(res, "sizes.parquet")
    require("width" in res.err or "height" in res.err, "the error names neither size column")  # harness correction


# == images / volumes: cohort import ===========================================================
def _imported(tmp, out="out"):
    o = os.path.join(tmp, out)
    cases = _table_rows(os.path.join(o, "cases.parquet")) or _table_rows(os.path.join(o, "volumes.parquet"))
    rej = _table_rows(os.path.join(o, "rejects.parquet"))
    return cases, rej


def _row_for(tmp, needle, want_reject=False):
    """The planted file has a row: a case, or a reject with a reason; the two good cases stay."""
    cases, rej = _imported(tmp)
    blob_c = [c for c in cases if needle in json.dumps(c, default=str)]
    blob_r = [r for r in rej if needle in json.dumps(r, default=str)]
    if want_reject:
        require(blob_r and blob_r[0].get("reason"), f"{needle}: no reject row (cases {len(blob_c)})")
    else:
        require(blob_c or (blob_r and blob_r[0].get("reason")), f"{needle}: neither a case nor a reject")
    return cases, rej


def _imf_import(tmp, plant, needle, want_reject=False):
    root = _imf_root(tmp)
    plant(root)
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    generic(res, os.path.join(tmp, "out"))
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    cases, _ = _row_for(tmp, needle, want_reject)
    good = {"P001_a.png", "P001_b.png"}
    have = {os.path.basename(c.get("source_file") or "") for c in cases}  # harness correction: not image_uri
    require(good <= have, f"good cases lost: {sorted(have)}")


def _png_bytes(arr, mode=None):
    import io
    from PIL import Image
    b = io.BytesIO()
    Image.fromarray(arr, mode=mode).save(b, format="PNG")
    return b.getvalue()


def _mask_for(root, stem, h=32, w=40):
    m = np.zeros((h, w), np.uint8)
    m[5:15, 5:15] = 255
    _write(os.path.join(root, "masks", f"{stem}_mask.png"), _png_bytes(m), "wb")


@probe("images", "PNG bytes in a file named .tif")
def _(tmp):
    def plant(root):
        from tests.fixtures.cohort_layouts import gray_image
        _write(os.path.join(root, "images", "P010_a.tif"), _png_bytes(gray_image(32, 40, 9)), "wb")
        _mask_for(root, "P010_a")
    _imf_import(tmp, plant, "P010_a")


@probe("images", "PNG whose IDAT zlib stream is garbage (CRCs fixed)")
def _(tmp):
    def plant(root):
        import struct
        import zlib
        from tests.fixtures.cohort_layouts import gray_image
        data = _png_bytes(gray_image(32, 40, 9))
        i = data.index(b"IDAT")
        n = struct.unpack(">I", data[i - 4:i])[0]
        body = bytes((b ^ 0x5A) for b in data[i + 4:i + 4 + n])
        chunk = struct.pack(">I", n) + b"IDAT" + body + struct.pack(">I", zlib.crc32(b"IDAT" + body))
        data = data[:i - 4] + chunk + data[i + 8 + n:]
        _write(os.path.join(root, "images", "P011_a.png"), data, "wb")
        _mask_for(root, "P011_a")
    _imf_import(tmp, plant, "P011_a", want_reject=True)


@probe("images", "a 40000 x 40000 PNG of 60 KB (pixel bomb)")
def _(tmp):
    def plant(root):
        import struct
        import zlib
        w = h = 40000
        raw_rows = zlib.compressobj(9)
        row = b"\x00" + b"\x00" * (w // 8)
        comp = b"".join(raw_rows.compress(row) for _ in range(h)) + raw_rows.flush()

        def chunk(kind, payload):
            return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
        data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0))
                + chunk(b"IDAT", comp) + chunk(b"IEND", b""))
        _write(os.path.join(root, "images", "P012_a.png"), data, "wb")
        _mask_for(root, "P012_a")
    _imf_import(tmp, plant, "P012_a", want_reject=True)


@probe("images", "a FIFO named .png (a read would block)")
def _(tmp):
    def plant(root):
        os.mkfifo(os.path.join(root, "images", "P013_a.png"))
        _mask_for(root, "P013_a")
    _imf_import(tmp, plant, "P013_a")


@probe("images", "an image that is a symlink loop")
def _(tmp):
    def plant(root):
        p = os.path.join(root, "images", "P014_a.png")
        os.symlink(p, p)
        _mask_for(root, "P014_a")
    _imf_import(tmp, plant, "P014_a")


@probe("images", "images/ folder empty")
def _(tmp):
    root = os.path.join(tmp, "imf")
    os.makedirs(os.path.join(root, "images"))
    os.makedirs(os.path.join(root, "masks"))
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    clean_error(res, "imf")


@probe("images", "--path a file, not a folder")
def _(tmp):
    p = _write(os.path.join(tmp, "export.zip"), "PK\x03\x04 not really")
    clean_error(_import(tmp, "image-mask-folder", p), "export.zip")


@probe("images", "siim-rle: a text file named .dcm")
def _(tmp):
    from tests.fixtures.cohort_layouts import write_siim
    root = os.path.join(tmp, "siim")
    write_siim(root)
    p = os.path.join(root, "dicom-images-train", "1.2.9", "1.2.9.1", "1.2.3.9.dcm")
    _write(p, "This study was exported as text by mistake.\nPatient: see chart.\n")
    with open(os.path.join(root, "train-rle.csv"), "a") as f:
        f.write("1.2.3.9, -1\n")
    res = _import(tmp, "siim-rle", root)
    generic(res, os.path.join(tmp, "out"))
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    _row_for(tmp, "1.2.3.9", want_reject=True)
    cases, _ = _imported(tmp)
    require(any("1.2.3.1" in json.dumps(c, default=str) for c in cases), "good DICOM lost")


def _nl(tmp, name, image=None, label=None):
    import nibabel as nib
    from tests.fixtures.cohort_layouts import write_nifti_labels
    root = os.path.join(tmp, "nl")
    write_nifti_labels(root)
    affine = np.diag([0.8, 0.8, 2.5, 1.0])
    if image is not None:
        nib.save(nib.Nifti1Image(image, affine), os.path.join(root, "imagesTr", f"img{name}.nii.gz"))
    if label is not None:
        nib.save(nib.Nifti1Image(label, affine), os.path.join(root, "labelsTr", f"label{name}.nii.gz"))
    res = _import(tmp, "nifti-labels", root, "--dataset-config", os.path.join(root, "organs.yaml"))
    generic(res, os.path.join(tmp, "out"))
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    cases, _ = _imported(tmp)
    have = json.dumps(cases, default=str)
    require("img0001" in have and "img0002" in have, "good volumes lost")
    return root


def _label(shape=(16, 16, 6)):
    lab = np.zeros(shape, np.uint8)
    lab[(slice(4, 8), slice(4, 8), slice(1, 4))[:len(shape)]] = 1  # harness correction: 2-D shapes too
    return lab


@probe("images", "nifti-labels: an all-zero image")
def _(tmp):
    _nl(tmp, "0020", image=np.zeros((16, 16, 6), np.int16), label=_label())
    _row_for(tmp, "img0020")


@probe("images", "nifti-labels: NaN voxels in a float label map")
def _(tmp):
    lab = _label().astype(np.float32)
    lab[0, 0, 0] = np.nan
    _nl(tmp, "0021", image=np.full((16, 16, 6), 40, np.int16), label=lab)
    _row_for(tmp, "img0021", want_reject=True)


@probe("images", "nifti-labels: a 4-D image of 3 frames")
def _(tmp):
    _nl(tmp, "0022", image=np.full((16, 16, 6, 3), 40, np.int16), label=_label())
    _row_for(tmp, "img0022", want_reject=True)


@probe("images", "nifti-labels: a 2-D image and label")
def _(tmp):
    _nl(tmp, "0023", image=np.full((16, 16), 40, np.int16), label=_label((16, 16)))
    _row_for(tmp, "img0023")


# == provider replies ============================================================================
def _reply(h, head: bytes, body: bytes):
    raw(h, head + body)


@probe("provider", "SSE stream that never sends [DONE] and stays open")
def _(tmp):
    def bad(h):
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n")
        raw(h, b'data: {"choices":[{"index":0,"delta":{"content":"ye"}}]}\n\n')
        time.sleep(40)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "429 with no Retry-After, every time")
def _(tmp):
    def bad(h):
        body = b'{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}'
        raw(h, b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
            % len(body) + body)
    res, out, srv = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)
    n = sum(b"marker Q1?" in r["body"] for r in srv.requests)
    require(n <= 10, f"{n} requests for the rate-limited unit")


@probe("provider", "Content-Length larger than the body, then close")
def _(tmp):
    def bad(h):
        body = ok_body_text()
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % (len(body) + 500)
            + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


def ok_body_text():
    from tests.campaigns.campaign_fourth import ok_body
    return ok_body("yes")


@probe("provider", "content-encoding gzip over garbage")
def _(tmp):
    def bad(h):
        body = b"\x1f\x8b\x08\x00" + os.urandom(300)
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
               b"content-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "gzip bomb: 1 MB that inflates to 1 GB")
def _(tmp):
    import io
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9) as g:
        chunk = b" " * (1 << 20)
        for _ in range(1024):
            g.write(chunk)
    body = buf.getvalue()

    def bad(h):
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
               b"content-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "5 MB of whitespace")
def _(tmp):
    def bad(h):
        body = b" \n\t" * (5 * 1024 * 1024 // 3)
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "JSON with 'content' twice (yes, then no)")
def _(tmp):
    def bad(h):
        body = (b'{"id":"x","object":"chat.completion","model":"fake-1","choices":[{"index":0,"message":'
                b'{"role":"assistant","content":"yes","content":"no"},"finish_reason":"stop"}],'
                b'"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}')
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "message content null, finish_reason content_filter")
def _(tmp):
    def bad(h):
        body = json.dumps({"id": "x", "object": "chat.completion", "model": "fake-1", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}}).encode()
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "a proxy's 502 HTML page")
def _(tmp):
    def bad(h):
        body = b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>" \
               b"</center><hr><center>nginx</center></body></html>"
        raw(h, b"HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


# == run folders ================================================================================
@probe("runs", "episodes of another run's part mixed in")
def _(tmp):
    run_dir = base_run(tmp)
    other = os.path.join(tmp, "other")
    srv = fp.FakeProvider("openai", responder=lambda t, i: "no", expected_key=SECRET)
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        r = run(eval_args(items, m, other), timeout=EVAL_TIMEOUT)
        require(r.rc == 0, "setup: " + _last(r.text))
    finally:
        srv.close()
    part = sorted(os.listdir(os.path.join(other, "episodes")))[0]
    shutil.copy(os.path.join(other, "episodes", part), os.path.join(run_dir, "episodes", "part-zz-" + part[5:]))
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored")])
    generic(res)
    if res.rc == 2:
        clean_error(res, "episodes")
        return
    # harness correction: score's documented answer is a rejects row per duplicate unit
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    rej = _table_rows(os.path.join(tmp, "scored", "rejects.parquet"))
    require(any("duplicate" in (r.get("reason") or "") for r in rej), "the foreign episodes left no reject row")


@probe("runs", "sweep.json names a protocol this version does not know")
def _(tmp):
    run_dir = base_run(tmp)
    p = os.path.join(run_dir, "sweep.json")
    d = json.load(open(p))
    d["protocol"] = "counterfactual_v9"
    json.dump(d, open(p, "w"))
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored")])
    generic(res)
    if res.rc == 2:
        clean_error(res, "counterfactual_v9")
        return
    # harness correction: every episode names its protocol, and score reads it there
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    ran = json.load(open(os.path.join(tmp, "scored", "run.json")))
    require(ran.get("protocol") == "counterfactual", f"scored as {ran.get('protocol')}")


@probe("runs", "run folder given through a symlink")
def _(tmp):
    run_dir = base_run(tmp)
    link = os.path.join(tmp, "latest")
    os.symlink(run_dir, link)
    res = run(["score", "--episodes", link, "--out", os.path.join(tmp, "scored")])
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")


@probe("runs", "sweep.json's items table moved away")
def _(tmp):
    run_dir = base_run(tmp)
    p = os.path.join(run_dir, "sweep.json")
    d = json.load(open(p))
    d["items"] = os.path.join(tmp, "moved", "views.parquet")
    json.dump(d, open(p, "w"))
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored")])
    clean_error(res, "views.parquet")


@probe("runs", "score --out under a path that is a regular file")
def _(tmp):
    run_dir = base_run(tmp)
    blocker = _write(os.path.join(tmp, "results"), "not a folder")
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(blocker, "scored")])
    clean_error(res, "results")


# == flags ======================================================================================
@probe("flags", "score --out equal to --episodes")
def _(tmp):
    run_dir = base_run(tmp)
    res = run(["score", "--episodes", run_dir, "--out", run_dir])
    clean_error(res, "run")
    require(len(episodes(run_dir)) == 4, "the run's episodes were harmed")


@probe("flags", "eval run --out equal to --items")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    before = open(items, "rb").read()
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    res = run(eval_args(items, m, items), timeout=EVAL_TIMEOUT)
    clean_error(res, "views.parquet")
    require(open(items, "rb").read() == before, "the items table was changed")


@probe("flags", "cohort import --append and --overwrite together")
def _(tmp):
    root = _imf_root(tmp)
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}", "--append", "--overwrite")
    clean_error(res, "append", "overwrite")


@probe("flags", "paths with spaces and accents (Données patients/)")
def _(tmp):
    from tests.fixtures.cohort_layouts import write_image_mask_folder
    root = os.path.join(tmp, "Données patients", "export 2024")
    write_image_mask_folder(root)
    res = run(["cohort", "import", "--format", "image-mask-folder", "--path", root, "--out",
               os.path.join(tmp, "sortie été"), "--dataset", "{mask_suffix: _mask}"])
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(len(_table_rows(os.path.join(tmp, "sortie été", "cases.parquet"))) == 2, "not 2 cases")


@probe("flags", "--out with a newline in its name")
def _(tmp):
    root = _imf_root(tmp)
    out = os.path.join(tmp, "out\nput")
    res = run(["cohort", "import", "--format", "image-mask-folder", "--path", root, "--out", out,
               "--dataset", "{mask_suffix: _mask}"])
    generic(res)
    if res.rc == 2:
        clean_error(res, "out")
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(len(_table_rows(os.path.join(out, "cases.parquet"))) == 2, "not 2 cases where --out said")


@probe("flags", "eval run --conditions an unknown name")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    args = eval_args(items, m, os.path.join(tmp, "out"))
    args[args.index("--conditions") + 1] = "plain,blurry"
    clean_error(run(args, timeout=EVAL_TIMEOUT), "blurry")


# -- main ---------------------------------------------------------------------------------------
def main(argv=None):
    from tests.campaigns.campaign_fourth import run_probes

    return run_probes(PROBES, __doc__.splitlines()[0], "c51f-", argv)


if __name__ == "__main__":
    sys.exit(main())
