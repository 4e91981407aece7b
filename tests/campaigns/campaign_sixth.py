"""The sixth bad-input campaign (issue 51): kinds none of the earlier campaigns tried (see
docs/cohorts-bad-input.md), written and committed before its first run, each probe driving the
real CLI in a subprocess with a timeout (a hang is a failure).

Not a pytest module (no ``test_`` prefix): run it by hand::

    PYTHONPATH=$PWD .venv/bin/python tests/campaigns/campaign_sixth.py [--only FAMILY] [--json OUT]

The harness is ``campaign_fourth``'s and ``campaign_fresh``'s, imported from them, so every
campaign judges alike: a probe is **clean** when the command ends inside its timeout, prints no
traceback and no secret, and either stops with exit 2 and a ``medscope: error:`` block (headline
and its indented lines) naming the input and the problem, or finishes keeping the other work and
giving the bad input a row with a reason. Where the docs allow both answers the probe accepts
both (``error_or``). A probe that raises anything else is ``ERROR`` (the campaign's own fault
until read), never clean.

Families: ``answers`` (read / audit / agreement), ``runs`` (run folders missing pieces),
``models`` (models-file fields), ``import`` (what a new institution's export looks like),
``flags`` (flags, environment, signals), ``training``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from tests.campaigns import campaign_fresh as cf  # noqa: E402
from tests.campaigns.campaign_fourth import (  # noqa: E402
    ENV, EVAL_TIMEOUT, MEDSCOPE, SECRET, NotClean, RawProvider, _last, base_run, episodes, eval_args, generic,
    models_file, require, run, write_items)
from tests.campaigns.campaign_fresh import _import, _imported, _table_rows, _write, clean_error  # noqa: E402

PROBES: list[tuple[str, str, object]] = []


def probe(family, name):
    def deco(fn):
        PROBES.append((family, name, fn))
        return fn
    return deco


def error_or(res, needles, ok_check, folder=None):
    """Either a clean error naming ``needles`` (exit 2) or exit 0 and ``ok_check()`` holding."""
    generic(res, folder)
    if res.rc == 2:
        clean_error(res, *needles, folder=folder)
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    ok_check()


# == answers ===================================================================================
def _audit(tmp, run_dir, *more):
    out = os.path.join(tmp, "audit")
    return run(["answers", "audit", "--episodes", run_dir, "--out", out, *more], timeout=120), out


def _audited(tmp):
    run_dir = base_run(tmp)
    res, out = _audit(tmp, run_dir, "--sample", "4")
    require(res.rc == 0, "setup: audit " + _last(res.text))
    rows = [json.loads(ln) for ln in open(os.path.join(out, "audit_sample.jsonl")) if ln.strip()]
    return run_dir, out, rows


def _labels(tmp, out, labels, **over):
    doc = {"sample_file": os.path.join(out, "audit_sample.jsonl"), "labels": labels}
    aj = json.load(open(os.path.join(out, "audit.json")))
    doc["sample_hash"] = aj.get("sample_hash") or aj.get("hash")
    doc.update(over)
    return _write(os.path.join(tmp, "labels.json"), json.dumps(doc))


def _agreement(tmp, run_dir, labels):
    return run(["answers", "agreement", "--labels", labels, "--episodes", run_dir,
                "--out", os.path.join(tmp, "agreement.json")], timeout=120)


@probe("answers", "audit --sample larger than the run (100 of 4 replies)")
def _(tmp):
    run_dir = base_run(tmp)
    res, out = _audit(tmp, run_dir, "--sample", "100")

    def ok():
        rows = [ln for ln in open(os.path.join(out, "audit_sample.jsonl")) if ln.strip()]
        require(len(rows) == 4, f"{len(rows)} sampled rows, not all 4 replies")
    error_or(res, ["sample"], ok)


@probe("answers", "audit --sample 0")
def _(tmp):
    run_dir = base_run(tmp)
    res, _ = _audit(tmp, run_dir, "--sample", "0")
    clean_error(res, "sample")


@probe("answers", "audit --episodes a folder with no episodes")
def _(tmp):
    d = os.path.join(tmp, "not-a-run")
    _write(os.path.join(d, "notes.txt"), "x")
    res, _ = _audit(tmp, d)
    clean_error(res, "not-a-run")


@probe("answers", "agreement --labels a JSON list")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    p = _write(os.path.join(tmp, "labels.json"), json.dumps([{"sample_id": rows[0]["sample_id"], "label": "claim"}]))
    clean_error(_agreement(tmp, run_dir, p), "labels.json")


@probe("answers", "agreement --labels for sample ids not in the sample")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    p = _labels(tmp, out, {"no-such-sample-1": "claim", "no-such-sample-2": "deny"})
    clean_error(_agreement(tmp, run_dir, p), "no-such-sample-1")


@probe("answers", "agreement --labels a decision the protocol has not ('maybe')")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    p = _labels(tmp, out, {r["sample_id"]: "maybe" for r in rows})
    clean_error(_agreement(tmp, run_dir, p), "maybe")


@probe("answers", "agreement --labels a missing file")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    clean_error(_agreement(tmp, run_dir, os.path.join(tmp, "nolabels.json")), "nolabels.json")


@probe("answers", "agreement --labels of a zero-byte file")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    p = _write(os.path.join(tmp, "zero-labels.json"), "")
    clean_error(_agreement(tmp, run_dir, p), "zero-labels.json")


@probe("answers", "read --protocol an unknown name")
def _(tmp):
    p = _write(os.path.join(tmp, "replies.jsonl"), json.dumps({"reply": "Yes, there is a nodule."}) + "\n")
    res = run(["answers", "read", "--protocol", "astrology", "--replies", p, "--question", "Is there a nodule?",
               "--finding", "nodule"])
    clean_error(res, "astrology")


@probe("answers", "read --replies a zero-byte file")
def _(tmp):
    p = _write(os.path.join(tmp, "none.jsonl"), "")
    res = run(["answers", "read", "--protocol", "counterfactual", "--replies", p, "--question", "Is there a nodule?",
               "--finding", "nodule"])
    clean_error(res, "none.jsonl")


@probe("answers", "read --replies lines whose reply is a number")
def _(tmp):
    lines = [json.dumps({"reply": "No nodule."}), json.dumps({"reply": 42})]
    p = _write(os.path.join(tmp, "replies.jsonl"), "\n".join(lines) + "\n")
    out = os.path.join(tmp, "readings.jsonl")
    res = run(["answers", "read", "--protocol", "counterfactual", "--replies", p, "--question", "Is there a nodule?",
               "--finding", "nodule", "--out", out])

    def ok():
        rows = [json.loads(ln) for ln in open(out) if ln.strip()]
        require(len(rows) == 2, f"{len(rows)} readings, not 2")
    error_or(res, ["replies.jsonl", "2"], ok)


# == runs: folders missing pieces ==============================================================
@probe("runs", "report --run a run folder without sweep.json")
def _(tmp):
    # harness correction after the first run: `report` reads a scored run (docs/report.md), so an eval
    # run folder without sweep.json is "not a scored run folder", which names the folder and the fix
    d = base_run(tmp)
    os.remove(os.path.join(d, "sweep.json"))
    clean_error(run(["report", "--run", d, "--out", os.path.join(tmp, "rep")], timeout=120), d, "score")


@probe("runs", "report --run an eval run never scored")
def _(tmp):
    d = base_run(tmp)
    res = run(["report", "--run", d, "--out", os.path.join(tmp, "rep")], timeout=120)
    error_or(res, ["score"], lambda: require(os.listdir(os.path.join(tmp, "rep")), "empty report folder"))


@probe("runs", "score on a run folder whose episodes/ is empty")
def _(tmp):
    d = base_run(tmp)
    for f in os.listdir(os.path.join(d, "episodes")):
        p = os.path.join(d, "episodes", f)
        os.remove(p) if os.path.isfile(p) else None
    clean_error(run(["score", "--episodes", d, "--out", os.path.join(tmp, "sc")], timeout=120), "episodes")


@probe("runs", "eval show of a folder with only sweep.json")
def _(tmp):
    d = base_run(tmp)
    only = os.path.join(tmp, "only")
    os.makedirs(only)
    os.rename(os.path.join(d, "sweep.json"), os.path.join(only, "sweep.json"))
    res = run(["eval", "show", only])
    # harness correction: the first run demanded a digit; `eval show` says "no episodes under FOLDER"
    error_or(res, ["only"], lambda: require(f"no episodes under {only}" in res.text, "no line says it is empty"))


@probe("runs", "eval run --items a cases table (the wrong kind)")
def _(tmp):
    out, _ = cf.phantom_cohort(tmp, cases=2)
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    res = run(eval_args(os.path.join(out, "cases.parquet"), m, os.path.join(tmp, "ev")), timeout=EVAL_TIMEOUT)
    clean_error(res, "cases.parquet")


@probe("runs", "score --episodes a file that is not a table (a PNG)")
def _(tmp):
    import numpy as np
    from PIL import Image
    p = os.path.join(tmp, "episodes.parquet")
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(p, format="PNG")
    clean_error(run(["score", "--episodes", p, "--out", os.path.join(tmp, "sc")]), "episodes.parquet")


@probe("runs", "eval compact of a run folder without sweep.json")
def _(tmp):
    d = base_run(tmp)
    os.remove(os.path.join(d, "sweep.json"))
    res = run(["compact", d], timeout=120)  # harness correction: the verb is `medscope compact`, not `eval compact`
    error_or(res, ["sweep.json"], lambda: require(episodes(d) and len(episodes(d)) == 4, "episodes lost"))


# == models file fields ========================================================================
def _eval_with(tmp, **extra):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1", **extra)
    return run(eval_args(items, m, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT)


@probe("models", "timeout_s: 0")
def _(tmp):
    clean_error(_eval_with(tmp, timeout_s=0), "timeout_s")


@probe("models", "timeout_s: -5")
def _(tmp):
    clean_error(_eval_with(tmp, timeout_s=-5), "timeout_s")


@probe("models", "max_attempts: 0")
def _(tmp):
    clean_error(_eval_with(tmp, max_attempts=0), "max_attempts")


@probe("models", "max_attempts: 2.5")
def _(tmp):
    clean_error(_eval_with(tmp, max_attempts=2.5), "max_attempts")


@probe("models", "kind: an unknown provider")
def _(tmp):
    clean_error(_eval_with(tmp, kind="carrier-pigeon"), "carrier-pigeon")


@probe("models", "price_in_per_mtok: 'cheap'")
def _(tmp):
    clean_error(_eval_with(tmp, price_in_per_mtok="cheap"), "price_in_per_mtok")


@probe("models", "an entry without `model`")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = _write(os.path.join(tmp, "models.yaml"), "models:\n  - name: m\n    kind: openai\n"
               "    base_url: http://127.0.0.1:9/v1\n    api_key_env: CAMPAIGN4_KEY\n")
    clean_error(run(eval_args(items, m, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT), "model")


@probe("models", "models file of zero bytes")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = _write(os.path.join(tmp, "zero-models.yaml"), "")
    clean_error(run(eval_args(items, m, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT), "zero-models.yaml")


@probe("models", "--budget-usd 0")
def _(tmp):
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        res = run(eval_args(items, m, out, "--budget-usd", "0"), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    generic(res, out)
    if res.rc == 2:
        clean_error(res, "budget")
        return
    # a zero budget that runs must spend nothing and say the units were not run
    require(not srv.requests, f"{len(srv.requests)} requests sent under a budget of 0")
    require("budget" in res.text.lower(), "nothing says the budget stopped the run: " + _last(res.text))


@probe("models", "RAY_ADDRESS pointing nowhere")
def _(tmp):
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        env = dict(ENV, RAY_ADDRESS="127.0.0.1:9")
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT, env=env)
    finally:
        srv.close()
    generic(res, out)
    if res.rc == 2:
        clean_error(res, "RAY_ADDRESS")
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(len(episodes(out)) == 4, f"{len(episodes(out))} episodes")


# == import: a new institution's export ========================================================
def _imf(tmp):
    return cf._imf_root(tmp)


def _accounted(tmp, needle, out="out"):
    """``needle`` (a file name piece) is a case, a reject or an ignored row: nothing lost silently."""
    cases, rej = _imported(tmp, out)
    text = json.dumps(cases + rej, default=str)
    require(needle in text, f"{needle!r} is in no row (cases {len(cases)}, rejects {len(rej)})")


@probe("import", "image .PNG with mask _mask.png (mixed-case extensions)")
def _(tmp):
    root = _imf(tmp)
    from PIL import Image
    import numpy as np
    Image.fromarray(np.full((32, 40), 90, np.uint8)).save(os.path.join(root, "images", "P010_a.PNG"), format="PNG")
    m = np.zeros((32, 40), np.uint8)
    m[4:10, 4:10] = 255
    Image.fromarray(m).save(os.path.join(root, "masks", "P010_a_mask.png"), format="PNG")
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    _accounted(tmp, "P010_a")


@probe("import", "two images whose names differ only by case (P001_a.png, p001_a.png)")
def _(tmp):
    root = _imf(tmp)
    import shutil as sh
    sh.copy(os.path.join(root, "images", "P001_a.png"), os.path.join(root, "images", "p001_a.png"))
    sh.copy(os.path.join(root, "masks", "P001_a_mask.png"), os.path.join(root, "masks", "p001_a_mask.png"))
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    cases, rej = _imported(tmp)
    ids = [c["case_id"] for c in cases]
    require(len(ids) == len(set(ids)), f"duplicate case ids {ids}")
    _accounted(tmp, "p001_a")
    _accounted(tmp, "P001_a")


@probe("import", "nifti-labels files named .Nii.Gz")
def _(tmp):
    from tests.fixtures.cohort_layouts import write_nifti_labels
    root = os.path.join(tmp, "nl")
    write_nifti_labels(root)
    renamed = None
    for dp, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(".nii.gz") and renamed is None:
                renamed = f[:-7] + ".Nii.Gz"
                os.rename(os.path.join(dp, f), os.path.join(dp, renamed))
    require(renamed, "setup: no .nii.gz")
    res = _import(tmp, "nifti-labels", root)
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    out = os.path.join(tmp, "out")
    text = ""
    for f in os.listdir(out):
        if f.endswith(".parquet"):
            text += json.dumps(_table_rows(os.path.join(out, f)), default=str)
    require(renamed[:-7] in text, f"{renamed} is in no row")


@probe("import", "a mask with no image (masks/ only entry)")
def _(tmp):
    root = _imf(tmp)
    import shutil as sh
    sh.copy(os.path.join(root, "masks", "P001_a_mask.png"), os.path.join(root, "masks", "P099_z_mask.png"))
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    _accounted(tmp, "P099_z")


@probe("import", "an image name ending in a space ('P011_a.png ')")
def _(tmp):
    root = _imf(tmp)
    import shutil as sh
    sh.copy(os.path.join(root, "images", "P001_a.png"), os.path.join(root, "images", "P011_a.png "))
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    _accounted(tmp, "P011_a")


@probe("import", "--format an unknown layout")
def _(tmp):
    root = _imf(tmp)
    # harness correction: argparse's choice error is one line `medscope cohort import: error: argument
    # --format: invalid choice: ...`, exit 2; campaign_fourth's rule (any `: error:` line) reads it
    from tests.campaigns import campaign_fourth as c4
    c4.clean_error(_import(tmp, "dicom-zip-from-pacs", root), "dicom-zip-from-pacs", "--format")


@probe("import", "--path does not exist")
def _(tmp):
    clean_error(_import(tmp, "image-mask-folder", os.path.join(tmp, "no-such-export")), "no-such-export")


@probe("import", "--dataset mask_suffix empty")
def _(tmp):
    root = _imf(tmp)
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: ''}")
    error_or(res, ["mask_suffix"], lambda: _accounted(tmp, "P001_a"))


@probe("import", "--dataset a YAML list")
def _(tmp):
    root = _imf(tmp)
    clean_error(_import(tmp, "image-mask-folder", root, "--dataset", "[1, 2]"), "dataset")


@probe("import", "images and masks in one folder, no masks/")
def _(tmp):
    root = _imf(tmp)
    for f in os.listdir(os.path.join(root, "masks")):
        os.rename(os.path.join(root, "masks", f), os.path.join(root, "images", f))
    os.rmdir(os.path.join(root, "masks"))
    res = _import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    generic(res)
    if res.rc == 2:
        clean_error(res, "masks")
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    _accounted(tmp, "P001_a")


# == flags, environment, signals ===============================================================
@probe("flags", "bench an unknown name")
def _(tmp):
    clean_error(run(["bench", "warp-drive"]), "warp-drive")


@probe("flags", "views build --workers 512 on 2 CPUs")
def _(tmp):
    out, _ = cf.phantom_cohort(tmp, cases=2)
    vo = os.path.join(tmp, "views")
    res = run(["views", "build", "--cases", os.path.join(out, "cases.parquet"), "--out", vo, "--workers", "512",
               "--recipe", "configs/views/demo.yaml"], timeout=300, cwd=REPO)
    error_or(res, ["workers"], lambda: require(os.path.exists(vo), "no views folder"))


@probe("flags", "eval run --backoff-s -1")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    args = eval_args(items, m, os.path.join(tmp, "out"))
    args[args.index("--backoff-s") + 1] = "-1"
    clean_error(run(args, timeout=EVAL_TIMEOUT), "backoff")


@probe("flags", "score --n-boot 'ten'")
def _(tmp):
    d = base_run(tmp)
    res = run(["score", "--episodes", d, "--out", os.path.join(tmp, "sc"), "--n-boot", "ten"])
    generic(res)
    require(res.rc == 2, f"exit {res.rc}")
    require("n-boot" in res.err or "n_boot" in res.err, "error does not name --n-boot: " + _last(res.err))


@probe("flags", "--config a file that does not exist")
def _(tmp):
    clean_error(run(["score", "--config", os.path.join(tmp, "missing-cfg.yaml")]), "missing-cfg.yaml")


@probe("flags", "SIGINT mid-run, then the same command resumes")
def _(tmp):
    import threading
    hold = threading.Event()
    srv = RawProvider(hold=hold)
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url, timeout_s=60)
        out = os.path.join(tmp, "out")
        args = [MEDSCOPE, *eval_args(items, m, out)]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True,
                             errors="replace", start_new_session=True)
        got = srv.first.wait(EVAL_TIMEOUT)
        require(got, "setup: no request reached the provider")
        os.killpg(p.pid, signal.SIGINT)
        hold.set()
        try:
            o, e = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise NotClean("hang: still running 60 s after SIGINT")
        require(SECRET not in o + e, "secret printed")
        require("Traceback (most recent call last)" not in o + e, "traceback after SIGINT: " + _last(e))
        require(p.returncode != 0, "exit 0 after SIGINT")
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT)
    finally:
        hold.set()
        srv.close()
    generic(res, out)
    require(res.rc == 0, f"resume exit {res.rc}: {_last(res.text)}")
    eps = episodes(out)
    ids = sorted(e["item_id"] for e in eps)
    require(ids == ["v000", "v001", "v002", "v003"], f"episodes after resume: {ids}")


# == training ==================================================================================
def _train(tmp, overrides):
    out, _ = cf.phantom_cohort(tmp, cases=2)
    views = os.path.join(tmp, "views.parquet")
    write_items(views)
    return run(["train", "--recipe", "configs/train/smoke.yaml", "--views", views, "--out", os.path.join(tmp, "tr"),
                "--overrides", overrides], timeout=120, cwd=REPO)


@probe("training", "--overrides epochs: 'three'")
def _(tmp):
    clean_error(_train(tmp, "{epochs: three}"), "epochs")


@probe("training", "--overrides batch_size: [1, 2]")
def _(tmp):
    clean_error(_train(tmp, "{batch_size: [1, 2]}"), "batch_size")


@probe("training", "--overrides lr: '1e-3' given as text")
def _(tmp):
    res = _train(tmp, "{lr: '1e-3x'}")
    clean_error(res, "lr")


@probe("training", "--recipe a missing file")
def _(tmp):
    views = write_items(os.path.join(tmp, "views.parquet"))
    res = run(["train", "--recipe", os.path.join(tmp, "nope-recipe.yaml"), "--views", views,
               "--out", os.path.join(tmp, "tr")])
    clean_error(res, "nope-recipe.yaml")


@probe("training", "--views a folder with no views table")
def _(tmp):
    d = os.path.join(tmp, "empty-views")
    os.makedirs(d)
    res = run(["train", "--recipe", "configs/train/smoke.yaml", "--views", d, "--out", os.path.join(tmp, "tr")],
              cwd=REPO)
    clean_error(res, "empty-views")


def main(argv=None):
    from tests.campaigns.campaign_fourth import run_probes

    return run_probes(PROBES, __doc__.splitlines()[0], "c6-", argv)


if __name__ == "__main__":
    sys.exit(main())
