"""The eighth bad-input campaign (issue 51): kinds none of the earlier campaigns tried (see
docs/cohorts-bad-input.md), written and committed before its first run, each probe driving the
real CLI in a subprocess with a timeout (a hang is a failure).

Not a pytest module (no ``test_`` prefix): run it by hand::

    PYTHONPATH=$PWD .venv/bin/python tests/campaigns/campaign_eighth.py [--only FAMILY] [--json OUT]

The harness is the fourth's, fresh's, sixth's and seventh's, imported from them, so every campaign
judges alike: a probe is **clean** when the command ends inside its timeout, prints no traceback
and no secret (the planted provider key is also searched for in every file of the run folder),
and either stops with exit 2 and a ``medscope: error:`` block naming the input and the problem
(``clean_error``; ``argparse_error``: the fourth's rule, which also reads argparse's one-line
``medscope <verb>: error: ...``), or finishes keeping the other work and giving the bad input a
row with a reason. Where the docs allow both answers the probe accepts both (``error_or``). A
probe that raises anything else is ``ERROR`` (the campaign's own fault until read), never clean.

Every probe's good-input premise (the verb, its flags, the columns and files it reads, the
documented exit code) was run on good input before this file was committed; no bad input was.

Families: ``files`` (hostile bytes and special files where a verb reads a file: deep nesting,
NUL bytes, binary, FIFOs, ``/dev/zero``, UTF-16, one huge line, ``/dev/full`` as output),
``provider`` (loopback replies of shapes not tried before, a key echoed back), ``ids`` (id lists
as spreadsheets and editors write them), ``repeat`` (the same run twice, runs at once into one
folder, interrupted writes then a rerun), ``tampered`` (outputs of an earlier verb edited before
the next reads them), ``flags`` (values out of range on verbs earlier campaigns left alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from tests.campaigns import campaign_fresh as cf  # noqa: E402
from tests.campaigns.campaign_fourth import (  # noqa: E402
    ENV, EVAL_TIMEOUT, MEDSCOPE, RawProvider, Result, _last, base_run, bg_items_cases, bg_setup,
    check_bad_unit_kept_apart, episodes, eval_args, generic, models_file, one_bad_unit, raw, require, run, write_items)
from tests.campaigns.campaign_fresh import _table_rows, _write, clean_error  # noqa: E402
from tests.campaigns.campaign_sixth import _agreement, _audit, _audited, _labels, error_or  # noqa: E402
from tests.campaigns.campaign_seventh import argparse_error  # noqa: E402

PROBES: list[tuple[str, str, object]] = []


def probe(family, name):
    def deco(fn):
        PROBES.append((family, name, fn))
        return fn
    return deco


def _eval_models(tmp, path):
    items = write_items(os.path.join(tmp, "views.parquet"))
    out = os.path.join(tmp, "out")
    return run(eval_args(items, path, out), timeout=EVAL_TIMEOUT), out


def _nested(depth):
    return "[" * depth + "]" * depth


def _utf16(text):
    return "\ufeff".encode("utf-16-le") + text.encode("utf-16-le")


def _read_replies(tmp, replies, out=None):
    out = out or os.path.join(tmp, "readings.jsonl")
    return run(["answers", "read", "--protocol", "counterfactual", "--replies", replies, "--question",
                "Is there a nodule?", "--finding", "nodule", "--out", out], timeout=90), out


def _readings(out):
    return [json.loads(x) for x in open(out) if x.strip()] if os.path.exists(out) else []


# == files: hostile bytes and special files ====================================================
@probe("files", "models file nested 5000 levels deep")
def _(tmp):
    p = _write(os.path.join(tmp, "deep-models.yaml"), "models: " + _nested(5000) + "\n")
    res, _ = _eval_models(tmp, p)
    clean_error(res, "deep-models.yaml")


@probe("files", "models file with a NUL byte inside")
def _(tmp):
    import yaml
    text = yaml.safe_dump({"models": [{"name": "m", "kind": "openai", "model": "fake-1",
                                        "base_url": "http://127.0.0.1:9/v1", "api_key_env": "CAMPAIGN4_KEY"}]})
    data = text.encode().replace(b"fake-1", b"fake\x00-1")
    p = _write(os.path.join(tmp, "nul-models.yaml"), data, "wb")
    res, _ = _eval_models(tmp, p)
    clean_error(res, "nul-models.yaml")


@probe("files", "models file that is a PNG")
def _(tmp):
    import numpy as np
    from PIL import Image
    p = os.path.join(tmp, "png-models.yaml")
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(p, format="PNG")
    res, _ = _eval_models(tmp, p)
    clean_error(res, "png-models.yaml")


@probe("files", "models file that is a FIFO (a read would block)")
def _(tmp):
    p = os.path.join(tmp, "fifo-models.yaml")
    os.mkfifo(p)
    res, _ = _eval_models(tmp, p)
    clean_error(res, "fifo-models.yaml")


@probe("files", "eval run --items /dev/zero")
def _(tmp):
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    clean_error(run(eval_args("/dev/zero", m, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT), "/dev/zero")


@probe("files", "rules hash --plan /dev/zero")
def _(tmp):
    clean_error(run(["rules", "hash", "--plan", "/dev/zero"], timeout=60), "/dev/zero")


@probe("files", "answers read --replies a FIFO (a read would block)")
def _(tmp):
    p = os.path.join(tmp, "fifo-replies.jsonl")
    os.mkfifo(p)
    res, _ = _read_replies(tmp, p)
    clean_error(res, "fifo-replies.jsonl")


@probe("files", "answers read --replies UTF-16 with a BOM and CRLF")
def _(tmp):
    text = '{"reply": "Yes, there is a nodule."}\r\n{"reply": "No."}\r\n'
    p = _write(os.path.join(tmp, "u16-replies.jsonl"), _utf16(text), "wb")
    res, out = _read_replies(tmp, p)

    def ok():
        got = [r.get("decision") for r in _readings(out)]
        require(got == ["claim", "deny"], f"decisions {got}, not ['claim', 'deny']")
    error_or(res, ["u16-replies.jsonl"], ok)


@probe("files", "answers read --replies one line of 20 MB")
def _(tmp):
    big = json.dumps({"reply": "No. " + "The lungs are clear. " * (20 * 1024 * 1024 // 21)})
    p = _write(os.path.join(tmp, "big-replies.jsonl"), json.dumps({"reply": "Yes, there is a nodule."}) + "\n" + big + "\n")
    res, out = _read_replies(tmp, p)

    def ok():
        rows = _readings(out)
        require(len(rows) == 2, f"{len(rows)} readings, not 2")
        require(rows[0].get("decision") == "claim", f"first reading {rows[0].get('decision')}")
    error_or(res, ["big-replies.jsonl"], ok)


@probe("files", "answers read --out /dev/full (no space left)")
def _(tmp):
    p = _write(os.path.join(tmp, "replies.jsonl"), json.dumps({"reply": "No."}) + "\n")
    res, _ = _read_replies(tmp, p, out="/dev/full")
    clean_error(res, "/dev/full")


@probe("files", "answers agreement --labels nested 5000 levels deep")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    p = _write(os.path.join(tmp, "labels.json"), '{"labels": ' + _nested(5000) + "}")
    clean_error(_agreement(tmp, run_dir, p), "labels.json")


@probe("files", "report --run: run.json with a UTF-8 BOM and CRLF")
def _(tmp):
    sc = _scored(tmp)
    p = os.path.join(sc, "run.json")
    text = open(p, encoding="utf-8").read().replace("\n", "\r\n")
    open(p, "wb").write(("\ufeff" + text).encode("utf-8"))
    rep = os.path.join(tmp, "rep")
    res = run(["report", "--run", sc, "--out", rep], timeout=180)
    error_or(res, ["run.json"], lambda: require(os.path.exists(os.path.join(rep, "report.md")), "no report.md"))


@probe("files", "cohort show: import.json with the key 'status' twice")
def _(tmp):
    out = _cohort_imported(tmp)
    p = os.path.join(out, "import.json")
    text = open(p).read()
    require('"status": "complete"' in text, "setup: import.json holds no status")
    open(p, "w").write(text.replace('"status": "complete"', '"status": "writing", "status": "complete"', 1))
    clean_error(run(["cohort", "show", out]), "import.json")


@probe("files", "benchgen build --schema a PNG")
def _(tmp):
    import numpy as np
    from PIL import Image
    d, _ = bg_setup(tmp)
    s = os.path.join(tmp, "png-schema.yaml")
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(s, format="PNG")
    res = run(["benchgen", "build", "--reports", d + "/bg/reports.jsonl", "--volumes", d + "/bg/volumes",
               "--schema", s, "--out", os.path.join(tmp, "bench"), "--no-report-questions"], timeout=EVAL_TIMEOUT)
    clean_error(res, "png-schema.yaml")


# == provider: reply shapes not tried before ===================================================
def _json_reply(h, body: bytes, status=b"200 OK"):
    raw(h, b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
        + body)


def _completion(message=None, usage=None, content="yes"):
    msg = message if message is not None else {"role": "assistant", "content": content}
    return {"id": "x", "object": "chat.completion", "model": "fake-1",
            "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
            "usage": usage or {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}


@probe("provider", "200 whose body is JSON null")
def _(tmp):
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, b"null"))
    check_bad_unit_kept_apart(res, out)


@probe("provider", "choices[0].message is a string, not an object")
def _(tmp):
    body = json.dumps(_completion(message="yes")).encode()
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, body))
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "content holds a lone surrogate escape (\\ud800)")
def _(tmp):
    body = json.dumps(_completion(content="yes PLACEHOLDER")).encode().replace(b"PLACEHOLDER", b"\\ud800")
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, body))
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "content holds NUL characters")
def _(tmp):
    body = json.dumps(_completion(content="yes\u0000\u0000 there is")).encode()
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, body))
    # harness correction after the first run: the provider did answer, and the reply kept word for
    # word (NULs included) with the reader's `unparseable` (counted in every table's unparseable
    # rate, docs/answers.md) is the unit kept with its reason; the first run accepted only a failed
    # call or a committed answer
    eps = [e for e in episodes(out) if e["item_id"] == "v001"]
    if eps and not eps[0].get("error") and eps[0].get("raw_text") == "yes\x00\x00 there is":
        generic(res, out)
        require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
        good = sorted(e["item_id"] for e in episodes(out) if not e.get("error") and e["item_id"] != "v001")
        require(good == ["v000", "v002", "v003"], f"good units kept: {good}")
        return
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "accepts the connection and never answers")
def _(tmp):
    res, out, _s = one_bad_unit(tmp, lambda h: time.sleep(30))
    check_bad_unit_kept_apart(res, out)


@probe("provider", "closes the connection at once, every time")
def _(tmp):
    res, out, _s = one_bad_unit(tmp, lambda h: None)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "401 whose body echoes the whole key back")
def _(tmp):
    def bad(h):
        key = h.headers.get("authorization", "")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}).encode()
        _json_reply(h, body, b"401 Unauthorized")
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)  # generic() also searches every file of the run for the key


@probe("provider", "usage of 10^30 tokens")
def _(tmp):
    body = json.dumps(_completion(usage={"prompt_tokens": 10**30, "completion_tokens": 10**30,
                                         "total_tokens": 2 * 10**30})).encode()
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, body))
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "usage counts as strings, under a budget")
def _(tmp):
    import math
    body = json.dumps(_completion(usage={"prompt_tokens": "50", "completion_tokens": "2",
                                         "total_tokens": "52"})).encode()
    res, out, _s = one_bad_unit(tmp, lambda h: _json_reply(h, body), more=("--budget-usd", "1"))
    generic(res, out)
    if os.path.exists(os.path.join(out, "sweep.json")):
        spent = json.load(open(os.path.join(out, "sweep.json"))).get("spent_usd", 0) or 0
        require(math.isfinite(spent) and spent >= 0, f"spent_usd {spent}")
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "models file timeout_s: 1e30 with a good provider")
def _(tmp):
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url, timeout_s=1e30)
        out = os.path.join(tmp, "out")
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    error_or(res, ["timeout_s"], lambda: require(len(episodes(out)) == 4 and not any(e.get("error") for e in
                                                                                        episodes(out)),
                                                 f"{len(episodes(out))} episodes, or some failed"), folder=out)


# == ids: id lists as spreadsheets and editors write them ========================================
def _removed_exactly(out, ids, gone):
    def ok():
        left = cf._case_ids(out)
        require(left == [i for i in ids if i not in gone], f"cases left {left}, expected all but {gone}")
    return ok


def _remove_or(tmp, cases_arg, gone, needles):
    """Either exactly ``gone`` removed (exit 0), or nothing removed and a clean error naming any one of
    ``needles`` (the list file, or the first id as it was written: both say which input is wrong)."""
    out, ids = cf.phantom_cohort(tmp)
    res = cf.remove(out, cases_arg(ids))
    generic(res, out)
    if res.rc == 2:
        cf._nothing_removed(out, ids)
        clean_error(res)
        text = res.err.lower()
        require(any(n.lower() in text for n in needles(ids)), f"the error names none of {needles(ids)}: "
                + _last(res.err))
        return
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    _removed_exactly(out, ids, gone(ids))()


@probe("ids", "@ids.csv from a European spreadsheet (case_id;note, semicolons)")
def _(tmp):
    def arg(ids):
        return "@" + _write(os.path.join(tmp, "ids.csv"), f"case_id;note\r\n{ids[0]};withdrew\r\n{ids[1]};withdrew\r\n")
    _remove_or(tmp, arg, lambda ids: ids[:2], lambda ids: ["ids.csv", ids[0]])


@probe("ids", "--cases 'a;b' (semicolons on the command line)")
def _(tmp):
    _remove_or(tmp, lambda ids: f"{ids[0]};{ids[1]}", lambda ids: ids[:2], lambda ids: [ids[0]])


@probe("ids", "@ids.txt in UTF-16 LE without a BOM")
def _(tmp):
    def arg(ids):
        return "@" + _write(os.path.join(tmp, "ids.txt"), f"{ids[0]}\r\n{ids[1]}\r\n".encode("utf-16-le"), "wb")
    _remove_or(tmp, arg, lambda ids: ids[:2], lambda ids: ["ids.txt"])


@probe("ids", "@ids.xlsx (a zip, not text)")
def _(tmp):
    import zipfile
    out, ids = cf.phantom_cohort(tmp)
    p = os.path.join(tmp, "ids.xlsx")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("xl/worksheets/sheet1.xml", f"<sheetData><row><c><v>{ids[0]}</v></c></row></sheetData>")
    clean_error(cf.remove(out, "@" + p), "ids.xlsx")
    cf._nothing_removed(out, ids)


@probe("ids", "--cases ids in double quotes, as pasted from a spreadsheet")
def _(tmp):
    _remove_or(tmp, lambda ids: f'"{ids[0]}","{ids[1]}"', lambda ids: ids[:2], lambda ids: [ids[0]])


@probe("ids", "@ids.txt: trailing tabs, a cp1252 comment line")
def _(tmp):
    def arg(ids):
        text = f"# withdrawn \u2019til further notice\n{ids[0]}\t\t\n{ids[1]}\t\n"
        return "@" + _write(os.path.join(tmp, "ids.txt"), text.encode("cp1252"), "wb")
    _remove_or(tmp, arg, lambda ids: ids[:2], lambda ids: ["ids.txt"])


# == repeat: the same run twice, runs at once, interrupted writes ================================
@probe("repeat", "the same eval run twice (the second sends nothing)")
def _(tmp):
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        first = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT)
        require(first.rc == 0, "setup: " + _last(first.text))
        sent = len(srv.requests)
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    generic(res, out)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(len(srv.requests) == sent, f"{len(srv.requests) - sent} requests sent again")
    require(sorted(e["item_id"] for e in episodes(out)) == ["v000", "v001", "v002", "v003"], "episodes changed")


@probe("repeat", "eval run again after compact (sends nothing, keeps 4)")
def _(tmp):
    srv = RawProvider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        first = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT)
        require(first.rc == 0, "setup: " + _last(first.text))
        c = run(["compact", out])
        require(c.rc == 0, "setup compact: " + _last(c.text))
        sent = len(srv.requests)
        res = run(eval_args(items, m, out), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    generic(res, out)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")
    require(len(srv.requests) == sent, f"{len(srv.requests) - sent} requests sent again")
    require(sorted(e["item_id"] for e in episodes(out)) == ["v000", "v001", "v002", "v003"], "episodes changed")


def _popen(args):
    return subprocess.Popen([MEDSCOPE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True,
                            errors="replace", start_new_session=True)


def _finish(p, timeout=180):
    import signal
    t0 = time.monotonic()
    try:
        o, e = p.communicate(timeout=timeout)
        return Result(p.returncode, o, e, False, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        o, e = p.communicate()
        return Result(None, o, e, True, time.monotonic() - t0)


def _both_ok_or_one_refused(a, b):
    for r in (a, b):
        generic(r)
        if r.rc != 0:
            require(r.rc == 2 and r.error_lines(), f"exit {r.rc} with no clean error: {_last(r.text)}")
    require(0 in (a.rc, b.rc), f"neither finished: {_last(a.text)} / {_last(b.text)}")


@probe("repeat", "two score runs into one --out at once")
def _(tmp):
    d = base_run(tmp)
    sc = os.path.join(tmp, "sc")
    args = ["score", "--episodes", d, "--out", sc, "--n-boot", "50"]
    a, b = _popen(args), _popen(args)
    ra, rb = _finish(a), _finish(b)
    _both_ok_or_one_refused(ra, rb)
    ran = json.load(open(os.path.join(sc, "run.json")))
    require(ran.get("coverage", {}).get("scored") == 4, f"run.json scored {ran.get('coverage', {}).get('scored')}")
    require(len(_table_rows(os.path.join(sc, "scores.parquet"))) >= 4, "scores.parquet lost rows")


@probe("repeat", "two report runs into one --out at once")
def _(tmp):
    sc = _scored(tmp)
    rep = os.path.join(tmp, "rep")
    args = ["report", "--run", sc, "--out", rep]
    a, b = _popen(args), _popen(args)
    ra, rb = _finish(a), _finish(b)
    _both_ok_or_one_refused(ra, rb)
    md = os.path.join(rep, "report.md")
    require(os.path.exists(md) and os.path.getsize(md) > 0, "no report.md")


@probe("repeat", "report under a file-size limit (8 KB), then rerun")
def _(tmp):
    sc = _scored(tmp)
    rep = os.path.join(tmp, "rep")
    limited = run(["report", "--run", sc, "--out", rep], timeout=180, shell_prefix="ulimit -f 8;")
    generic(limited)
    require(limited.rc != 0 and limited.error_lines(), f"exit {limited.rc}: {_last(limited.text)}")
    again = run(["report", "--run", sc, "--out", rep], timeout=180)
    generic(again)
    require(again.rc == 0, f"rerun exit {again.rc}: {_last(again.text)}")
    require(os.path.getsize(os.path.join(rep, "report.md")) > 0, "empty report.md")


@probe("repeat", "benchgen build under a file-size limit (64 KB), then rerun")
def _(tmp):
    d, _ = bg_setup(tmp)
    args = ["benchgen", "build", "--reports", d + "/bg/reports.jsonl", "--volumes", d + "/bg/volumes",
            "--schema", d + "/liver.yaml", "--out", os.path.join(tmp, "bench"), "--no-report-questions"]
    limited = run(args, timeout=EVAL_TIMEOUT, shell_prefix="ulimit -f 64;")
    generic(limited)
    if limited.rc != 0:
        require(limited.error_lines(), f"exit {limited.rc} with no error line: {_last(limited.text)}")
    again = run(args, timeout=EVAL_TIMEOUT)
    generic(again)
    require(again.rc == 0, f"rerun exit {again.rc}: {_last(again.text)}")
    require({"phantom-000", "phantom-001", "phantom-002"} <= bg_items_cases(tmp),
            f"items for {sorted(bg_items_cases(tmp))}")


@probe("repeat", "answers audit again into one --out with another --seed")
def _(tmp):
    run_dir, out, rows = _audited(tmp)
    before = open(os.path.join(out, "audit_sample.jsonl"), "rb").read()
    res, _ = _audit(tmp, run_dir, "--sample", "4", "--seed", "9")
    # docs/answers.md: a different sample is never written over one a labeller may hold
    clean_error(res, "audit")
    require(open(os.path.join(out, "audit_sample.jsonl"), "rb").read() == before, "the first sample was changed")


# == tampered: outputs of an earlier verb edited before the next reads them ======================
def _scored(tmp):
    d = base_run(tmp)
    sc = os.path.join(tmp, "scored")
    r = run(["score", "--episodes", d, "--out", sc, "--n-boot", "50"], timeout=180)
    require(r.rc == 0, "setup: score " + _last(r.text))
    return sc


def _cohort_imported(tmp):
    root = cf._imf_root(tmp)
    r = cf._import(tmp, "image-mask-folder", root, "--dataset", "{mask_suffix: _mask}")
    require(r.rc == 0, "setup: import " + _last(r.text))
    return os.path.join(tmp, "out")


@probe("tampered", "rules apply after the plan was edited since rules lock")
def _(tmp):
    sc = _scored(tmp)
    plan = _write(os.path.join(tmp, "selection.yaml"), open(os.path.join(REPO, "configs", "plans",
                                                                          "v4_selection.yaml")).read())
    r = run(["rules", "lock", "--plan", plan, "--run", sc])
    require(r.rc == 0, "setup: lock " + _last(r.text))
    text = open(plan).read()
    require("utility_tolerance: 0.02" in text, "setup: no utility_tolerance in the plan")
    open(plan, "w").write(text.replace("utility_tolerance: 0.02", "utility_tolerance: 0.2"))
    res = run(["rules", "apply", "--plan", plan, "--metrics", os.path.join(sc, "metrics.parquet")])
    clean_error(res, "changed")


@probe("tampered", "answers agreement after a sampled reply was edited in the run")
def _(tmp):
    import glob
    import pyarrow as pa
    import pyarrow.parquet as pq
    run_dir, out, rows = _audited(tmp)
    p = _labels(tmp, out, {r["sample_id"]: r["reading"]["decision"] for r in rows})
    part = sorted(glob.glob(os.path.join(run_dir, "episodes", "*.parquet")))[0]
    t = pq.read_table(part)
    item = t.column("item_id")[0].as_py()
    i = t.schema.get_field_index("raw_text")
    t = t.set_column(i, t.schema.field(i), pa.array(["no"] * t.num_rows, type=t.schema.field(i).type))
    pq.write_table(t, part)
    res = _agreement(tmp, run_dir, p)
    sid = [r["sample_id"] for r in rows if r["item_id"] == item]
    generic(res)
    require(res.rc == 2 and res.error_lines(), f"exit {res.rc}: {_last(res.text)}")
    text = " ".join(res.error_lines())
    require(item in text or any(s in text for s in sid) or run_dir in text,
            "the error names neither the run, the item nor the sample: " + _last(res.text))


@probe("tampered", "cohort show: import.json complete, cases.parquet deleted")
def _(tmp):
    out = _cohort_imported(tmp)
    os.remove(os.path.join(out, "cases.parquet"))
    clean_error(run(["cohort", "show", out]), "cases.parquet")


@probe("tampered", "score: one episode's item_id changed to an id not in the views")
def _(tmp):
    import glob
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = base_run(tmp)
    for part in glob.glob(os.path.join(d, "episodes", "*.parquet")):
        t = pq.read_table(part)
        if t.column("item_id").to_pylist() == ["v001"]:
            i = t.schema.get_field_index("item_id")
            t = t.set_column(i, t.schema.field(i), pa.array(["v999"], type=t.schema.field(i).type))
            pq.write_table(t, part)
    sc = os.path.join(tmp, "sc")
    res = run(["score", "--episodes", d, "--out", sc, "--n-boot", "50"], timeout=180)
    generic(res)
    if res.rc == 2:
        clean_error(res, "v999")
        return
    # docs/scoring-and-report.md: v999 is excluded (`view_missing`), v001 a missing unit, exit 3
    require(res.rc == 3, f"exit {res.rc}, not 3: {_last(res.text)}")
    rej = json.dumps(_table_rows(os.path.join(sc, "rejects.parquet")), default=str)
    require("v999" in rej and "view_missing" in rej, "v999 is not a view_missing reject")
    require("v001" in rej and "missing_episode" in rej, "v001 is not a missing_episode reject")


@probe("tampered", "benchgen build with a question reworded after approval")
def _(tmp):
    d, _ = bg_setup(tmp)
    s = os.path.join(tmp, "liver.yaml")
    text = open(d + "/liver.yaml").read()
    old = "Is there a focal liver observation (lesion or mass) in this study?"
    require(old in text, "setup: the question is not in the schema")
    open(s, "w").write(text.replace(old, "Is there any liver lesion at all?"))
    _write(s + ".approval.json", open(d + "/liver.yaml.approval.json").read())
    res = run(["benchgen", "build", "--reports", d + "/bg/reports.jsonl", "--volumes", d + "/bg/volumes",
               "--schema", s, "--out", os.path.join(tmp, "bench"), "--no-report-questions"], timeout=EVAL_TIMEOUT)
    clean_error(res, "liver.yaml")
    require(not bg_items_cases(tmp), "items were built from an unapproved schema")


@probe("tampered", "report --run: scores.parquet deleted from the scored run")
def _(tmp):
    sc = _scored(tmp)
    os.remove(os.path.join(sc, "scores.parquet"))
    clean_error(run(["report", "--run", sc, "--out", os.path.join(tmp, "rep")], timeout=180), "scores.parquet")


# == flags: out of range, on verbs earlier campaigns left alone ==================================
@probe("flags", "cohort phantom --cases 1000000000")
def _(tmp):
    argparse_error(run(["cohort", "phantom", "--out", os.path.join(tmp, "c"), "--cases", "1000000000",
                        "--volumes", "0"], timeout=90), "cases")


@probe("flags", "export lmms-eval --task '../../escaped' (a path in a name)")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    out = os.path.join(tmp, "a", "b", "task")
    res = run(["export", "lmms-eval", "--items", items, "--out", out, "--task", "../../escaped"])

    def ok():
        a = os.path.join(tmp, "a")
        outside = [f for f in os.listdir(a) if f != "b"] if os.path.isdir(a) else []
        require(not outside, f"written outside --out: {outside}")
    error_or(res, ["task"], ok)
    ok()
    outside = [f for f in os.listdir(tmp) if f.startswith("escaped")]
    require(not outside, f"written outside --out: {outside}")


@probe("flags", "benchgen schema induce --sample -1")
def _(tmp):
    d, _ = bg_setup(tmp)
    res = run(["benchgen", "schema", "induce", "--reports", d + "/bg/reports.jsonl", "--out",
               os.path.join(tmp, "induced.yaml"), "--sample", "-1"])
    argparse_error(res, "sample")


@probe("flags", "compare --reference a model not in the run")
def _(tmp):
    sc = _scored(tmp)
    clean_error(run(["compare", "--metrics", os.path.join(sc, "metrics.parquet"), "--reference", "ghost-model",
                     "--n-boot", "20"]), "ghost-model")


@probe("flags", "stats mcnemar --a a model not in the run")
def _(tmp):
    sc = _scored(tmp)
    clean_error(run(["stats", "mcnemar", "--scores", sc, "--a", "ghost-model", "--b", "m"]), "ghost-model")


@probe("flags", "answers audit --sample -3")
def _(tmp):
    d = base_run(tmp)
    res, _ = _audit(tmp, d, "--sample", "-3")
    argparse_error(res, "sample")


@probe("flags", "score --seed -1")
def _(tmp):
    d = base_run(tmp)
    sc = os.path.join(tmp, "sc")
    res = run(["score", "--episodes", d, "--out", sc, "--n-boot", "20", "--seed", "-1"], timeout=180)
    error_or(res, ["seed"], lambda: require(os.path.exists(os.path.join(sc, "metrics.parquet")), "no metrics"))


def main(argv=None):
    from tests.campaigns.campaign_fourth import run_probes

    return run_probes(PROBES, __doc__.splitlines()[0], "c8-", argv)


if __name__ == "__main__":
    sys.exit(main())
