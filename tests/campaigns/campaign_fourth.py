"""The fourth bad-input campaign (issue 51): the families its last bullet names, each probe driving
the real CLI in a subprocess with a timeout (a hang is a failure).

Not a pytest module (no ``test_`` prefix): run it by hand, it prints one line per probe and the
clean figure per family::

    PYTHONPATH=$PWD .venv/bin/python tests/campaigns/campaign_fourth.py [--only FAMILY] [--json OUT]

A probe is **clean** when the command ends inside its timeout, prints no Python traceback and no
secret (the provider key is planted in every run), and either stops with exit 2 and a one-line
``medscope: error:`` naming the input and the problem, or finishes keeping the other work and
giving the bad input a reject row (or an episode error) with a reason. Everything else is not
clean: a hang, a traceback, a generic message that does not name the input, a silent loss (exit 0
with the bad input simply gone or counted as good), or something unsafe (a key sent to another
host, spend pushed below zero).

Provider faults use loopback servers: ``medscope.testing.providers.FakeProvider`` where its
scripted faults fit, and a raw ``ThreadingHTTPServer`` here for the replies it does not script
(chunked garbage, huge bodies, non-UTF-8, a 200 carrying an error, a redirect, negative usage).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from medscope.io import records  # noqa: E402
from medscope.testing import providers as fp  # noqa: E402
from medscope.testing.views import views_rows  # noqa: E402

MEDSCOPE = os.path.join(REPO, ".venv", "bin", "medscope")
SECRET = "sk-CAMPAIGN4-7e1d0b9a3c55f2e8d4"
KEY_ENV = "CAMPAIGN4_KEY"
ENV = dict(os.environ, PYTHONPATH=REPO, **{KEY_ENV: SECRET})
ENV.pop("RAY_ADDRESS", None)
EVAL_TIMEOUT = 150
SHORT_TIMEOUT = 90


# -- running and classifying ------------------------------------------------------------------
class Result:
    def __init__(self, rc, out, err, timed_out, seconds):
        self.rc, self.out, self.err, self.timed_out, self.seconds = rc, out, err, timed_out, seconds

    @property
    def text(self) -> str:
        return self.out + "\n" + self.err

    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.startswith("medscope: error:") or ": error:" in ln]


def run(args, timeout=SHORT_TIMEOUT, env=None, shell_prefix=None, cwd=None) -> Result:
    cmd = [MEDSCOPE, *args]
    if shell_prefix:
        cmd = ["bash", "-c", shell_prefix + ' exec "$@"', "bash", *cmd]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or ENV, text=True,
                         errors="replace", start_new_session=True, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
        return Result(p.returncode, out, err, False, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return Result(None, out, err, True, time.monotonic() - t0)


class NotClean(Exception):
    pass


def require(cond, why):
    if not cond:
        raise NotClean(why)


def generic(res: Result, folder: str | None = None):
    """The checks every probe shares: ended in time, no traceback, no secret anywhere."""
    require(not res.timed_out, f"hang: killed after {res.seconds:.0f}s")
    require("Traceback (most recent call last)" not in res.text, "Python traceback: " + _last(res.text))
    require(SECRET not in res.text, "secret printed")
    if folder and os.path.isdir(folder):
        for root, _, files in os.walk(folder):
            for f in files:
                p = os.path.join(root, f)
                try:
                    if SECRET.encode() in open(p, "rb").read():
                        raise NotClean(f"secret written to {p}")
                except OSError:
                    pass


def clean_error(res: Result, *needles: str, folder=None):
    """Exit 2 and one ``medscope: error:`` line naming every needle (case-insensitive)."""
    generic(res, folder)
    lines = res.error_lines()
    require(res.rc == 2, f"exit {res.rc}, not 2: {_last(res.text)}")
    require(lines, "no error line: " + _last(res.text))
    joined = " ".join(lines).lower()
    missing = [n for n in needles if n.lower() not in joined]
    require(not missing, f"error does not name {missing}: {lines[-1][:300]}")
    require("(set medscope_debug=1 for the traceback)" not in joined or not any(
        t in joined for t in ("typeerror", "keyerror", "attributeerror", "indexerror", "unicodedecodeerror",
                              "valueerror: ", "zerodivisionerror", "assertionerror")),
        "generic handler's Python message: " + lines[-1][:300])


def _last(text: str, n=300) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:n]


# -- inputs -------------------------------------------------------------------------------------
def write_items(path: str, n: int = 4, question_suffix: str = "") -> str:
    rows = views_rows(n)
    for i, r in enumerate(rows):
        r["question"] = f"Is there a nodule near marker Q{i}?{question_suffix}"
    records.write_table("views", rows, path)
    return path


def models_file(path: str, base_url: str, **extra) -> str:
    entry = {"name": "m", "kind": "openai", "model": "fake-1", "base_url": base_url, "api_key_env": KEY_ENV,
             "price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0, "timeout_s": 5, "max_attempts": 2}
    entry.update(extra)
    with open(path, "w") as f:
        yaml.safe_dump({"models": [entry]}, f)
    return path


def eval_args(items, models, out, *more):
    return ["eval", "run", "--items", items, "--models", models, "--conditions", "plain", "--out", out,
            "--backoff-s", "0.05", *more]


def episodes(out: str) -> list[dict]:
    if not os.path.isdir(os.path.join(out, "episodes")):
        return []
    return records.read_table("episodes", out + "/episodes").to_pylist()


def rejects(out: str) -> list[dict]:
    if not os.path.isdir(os.path.join(out, "rejects")):
        return []
    return records.read_table("rejects", out + "/rejects").to_pylist()


def ok_body(text="yes", prompt_tokens=50, completion_tokens=2) -> bytes:
    return json.dumps({
        "id": "chatcmpl-raw", "object": "chat.completion", "created": int(time.time()), "model": "fake-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}}).encode()


class RawProvider:
    """OpenAI-wire loopback server: good replies, except requests whose body holds ``marker``,
    which get ``bad(handler)`` (raw bytes written by the probe)."""

    def __init__(self, bad=None, marker=b"marker Q1?", host="127.0.0.1", hold: threading.Event | None = None):
        self.bad, self.marker, self.hold = bad, marker, hold
        self.requests: list[dict] = []
        self.first = threading.Event()
        owner = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                body = json.dumps({"object": "list", "data": [{"id": "fake-1", "object": "model"}]}).encode()
                self._send(200, body)

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                owner.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                owner.first.set()
                if owner.hold is not None:
                    owner.hold.wait(120)
                if owner.bad and owner.marker in body:
                    try:
                        owner.bad(self)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    self.close_connection = True
                    return
                self._send(200, ok_body())

            def _send(self, code, body, ctype="application/json"):
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer((host, 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def root(self):
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def url(self):
        return self.root + "/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def raw(handler, data: bytes):
    handler.wfile.write(data)
    handler.wfile.flush()


def one_bad_unit(tmp, bad, expect_answered_ok=False, models_extra=None, more=()):
    """An eval run of 4 items in which item v001 gets ``bad``; returns (result, out, provider)."""
    srv = RawProvider(bad)
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        models = models_file(os.path.join(tmp, "models.yaml"), srv.url, **(models_extra or {}))
        out = os.path.join(tmp, "out")
        res = run(eval_args(items, models, out, *more), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    return res, out, srv


def check_bad_unit_kept_apart(res, out, allow_answer=False):
    """The three good units are episodes without error; v001 is a failed unit with a reason (an
    episode error or a reject row), never a plain answer or unparseable reply (or, where
    ``allow_answer``, a correctly read answer)."""
    generic(res, out)
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    eps = episodes(out)
    good = sorted(e["item_id"] for e in eps if not e.get("error") and e["item_id"] != "v001")
    require(good == ["v000", "v002", "v003"], f"good units kept: {good}")
    bad_eps = [e for e in eps if e["item_id"] == "v001"]
    bad_rej = [r for r in rejects(out) if r.get("item_id") == "v001"]
    if allow_answer and bad_eps and not bad_eps[0].get("error") and bad_eps[0].get("answer") is not None:
        return
    if bad_eps and bad_eps[0].get("error"):
        return
    if bad_rej and (bad_rej[0].get("reason") or bad_rej[0].get("error")):
        return
    raise NotClean("v001 not a failed unit with a reason: episode "
                   + repr({k: bad_eps[0].get(k) for k in ("action", "answer", "raw_text", "error")} if bad_eps else None)
                   + f", rejects {len(bad_rej)}")


# -- a base eval run reused by score / compact / read-only probes ------------------------------
_BASE: dict = {}


def base_run(tmp) -> str:
    """A finished 4-unit eval run copied into ``tmp``."""
    if "out" not in _BASE:
        d = tempfile.mkdtemp(prefix="c4base-")
        os.chmod(d, 0o755)  # the read-only probes read its items table as another user
        srv = fp.FakeProvider("openai", responder=lambda t, i: "yes", expected_key=SECRET)
        items = write_items(os.path.join(d, "views.parquet"))
        os.chmod(items, 0o644)  # tables are written owner-only (0600); the read-only probes read it as nobody
        models = models_file(os.path.join(d, "models.yaml"), srv.url)
        res = run(eval_args(items, models, os.path.join(d, "out")), timeout=EVAL_TIMEOUT)
        srv.close()
        assert res.rc == 0, res.text
        _BASE.update(out=os.path.join(d, "out"), items=items, dir=d)
    dst = os.path.join(tmp, "run")
    shutil.copytree(_BASE["out"], dst)
    return dst


PROBES: list[tuple[str, str, object]] = []


def probe(family, name):
    def deco(fn):
        PROBES.append((family, name, fn))
        return fn
    return deco


# == provider replies ===========================================================================
@probe("provider", "chunked garbage")
def _(tmp):
    def bad(h):
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
               b"zz-not-hex\r\n{\"choices\r\n0\r\n\r\n")
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "chunked body cut mid-chunk")
def _(tmp):
    def bad(h):
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
               b"400\r\n{\"id\": \"x\", \"choices\": [")
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "huge body (200 MB)")
def _(tmp):
    def bad(h):
        size = 200 * 1024 * 1024
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % size)
        head = b'{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "'
        h.wfile.write(head)
        chunk = b"a" * (1024 * 1024)
        for _ in range(size // len(chunk) - 1):
            h.wfile.write(chunk)
        h.wfile.write(b"a" * (len(chunk) - len(head) - 4) + b'"}}]')
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)
    eps = [e for e in episodes(out) if e["item_id"] == "v001"]
    require(not eps or len(eps[0].get("raw_text") or "") < 10_000_000, "a 200 MB reply stored as an episode")


@probe("provider", "non-UTF-8 body")
def _(tmp):
    def bad(h):
        body = ok_body("yes, caf\u00e9 \u00e9l\u00e8ve").decode().encode("latin-1")
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out, allow_answer=True)


@probe("provider", "binary (non-text) body")
def _(tmp):
    def bad(h):
        body = bytes(range(256)) * 64
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "200 with an error body")
def _(tmp):
    def bad(h):
        body = json.dumps({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                                     "code": "insufficient_quota"}}).encode()
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "200 with choices: []")
def _(tmp):
    def bad(h):
        body = json.dumps({"id": "x", "object": "chat.completion", "choices": [],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}}).encode()
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad)
    check_bad_unit_kept_apart(res, out)


@probe("provider", "redirect to another host")
def _(tmp):
    other = RawProvider(host="127.0.0.2")
    try:
        def bad(h):
            h.send_response(307)
            h.send_header("location", other.root + "/v1/chat/completions")
            h.send_header("content-length", "0")
            h.end_headers()
        res, out, _s = one_bad_unit(tmp, bad)
    finally:
        other.close()
    leaked = [r for r in other.requests if SECRET in json.dumps(r["headers"])]
    require(not leaked, f"the key was sent to the other host ({len(leaked)} requests)")
    check_bad_unit_kept_apart(res, out)


@probe("provider", "negative usage against a budget")
def _(tmp):
    def bad(h):
        body = ok_body("yes", prompt_tokens=-50_000_000, completion_tokens=-1)
        raw(h, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    res, out, _s = one_bad_unit(tmp, bad, more=("--budget-usd", "1"))
    generic(res, out)
    sweep = json.load(open(os.path.join(out, "sweep.json")))
    require(sweep.get("spent_usd", 0) >= 0, f"spent_usd {sweep.get('spent_usd')} below zero")
    for e in episodes(out):
        for k in ("input_tokens", "output_tokens", "cost_usd"):
            require((e.get(k) or 0) >= 0, f"episode {e['item_id']} {k}={e.get(k)}")
    check_bad_unit_kept_apart(res, out)


# == empty item tables ===========================================================================
def empty_items(path):
    import pyarrow.parquet as pq
    table = records.arrow_table("views", views_rows(1)) if hasattr(records, "arrow_table") else None
    if table is None:
        write_items(path, 1)
        table = pq.read_table(path)
    pq.write_table(table.slice(0, 0), path)
    return path


@probe("empty-items", "eval run on a 0-row views table")
def _(tmp):
    items = empty_items(os.path.join(tmp, "views.parquet"))
    models = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    res = run(eval_args(items, models, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT)
    clean_error(res, "views.parquet")


@probe("empty-items", "eval run on an empty folder")
def _(tmp):
    os.makedirs(os.path.join(tmp, "views"))
    models = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    res = run(eval_args(os.path.join(tmp, "views"), models, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT)
    clean_error(res, "views")


@probe("empty-items", "score --items a 0-row table")
def _(tmp):
    run_dir = base_run(tmp)
    items = empty_items(os.path.join(tmp, "empty.parquet"))
    res = run(["score", "--episodes", run_dir, "--items", items, "--out", os.path.join(tmp, "scored")])
    clean_error(res, "empty.parquet")


@probe("empty-items", "probe build on a 0-row volumes table")
def _(tmp):
    r = run(["cohort", "phantom", "--out", os.path.join(tmp, "ph"), "--cases", "1", "--volumes", "1"])
    require(r.rc == 0, "setup: " + _last(r.text))
    import pyarrow.parquet as pq
    p = os.path.join(tmp, "ph", "volumes.parquet")
    pq.write_table(pq.read_table(p).slice(0, 0), p)
    res = run(["probe", "build", "--volumes", p, "--out", os.path.join(tmp, "probe")], timeout=EVAL_TIMEOUT)
    clean_error(res, "volumes.parquet")


# == two sweeps into one folder ================================================================
@probe("two-sweeps", "second sweep while the first is running")
def _(tmp):
    hold = threading.Event()
    srv = RawProvider(hold=hold)
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        models = models_file(os.path.join(tmp, "models.yaml"), srv.url, timeout_s=60)
        out = os.path.join(tmp, "out")
        first = subprocess.Popen([MEDSCOPE, *eval_args(items, models, out)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=ENV, text=True, start_new_session=True)
        require(srv.first.wait(EVAL_TIMEOUT), "first sweep sent no request")
        second = run(eval_args(items, models, out), timeout=EVAL_TIMEOUT)
        hold.set()
        try:
            o, e = first.communicate(timeout=EVAL_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(first.pid, signal.SIGKILL)
            raise NotClean("first sweep hung")
    finally:
        hold.set()
        srv.close()
    clean_error(second, out)
    require(first.returncode == 0, f"first sweep exit {first.returncode}: {_last(o + e)}")
    ids = sorted(x["item_id"] for x in episodes(out))
    require(ids == ["v000", "v001", "v002", "v003"], f"episodes {ids}")


@probe("two-sweeps", "second sweep, other items with the same ids, same folder")
def _(tmp):
    srv = fp.FakeProvider("openai", responder=lambda t, i: "yes", expected_key=SECRET)
    try:
        a = write_items(os.path.join(tmp, "a.parquet"))
        b = write_items(os.path.join(tmp, "b.parquet"), question_suffix=" (second table)")
        models = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        r1 = run(eval_args(a, models, out), timeout=EVAL_TIMEOUT)
        require(r1.rc == 0, "setup: " + _last(r1.text))
        res = run(eval_args(b, models, out), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    generic(res, out)
    if res.rc == 2:
        clean_error(res, out)
        return
    keys = [(e["item_id"], e["model"], e["condition"]) for e in episodes(out)]
    require(len(keys) == len(set(keys)), f"exit {res.rc} and {len(keys) - len(set(keys))} item ids twice in one run")


# == budgets =================================================================================
@probe("budget", "--budget-usd nan")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    models = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    res = run(eval_args(items, models, os.path.join(tmp, "out"), "--budget-usd", "nan"), timeout=EVAL_TIMEOUT)
    clean_error(res, "budget")


@probe("budget", "--budget-usd -5")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    models = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    res = run(eval_args(items, models, os.path.join(tmp, "out"), "--budget-usd", "-5"), timeout=EVAL_TIMEOUT)
    clean_error(res, "budget")


@probe("budget", "budget_usd: .nan in the config YAML")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    models = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    cfg = os.path.join(tmp, "eval.yaml")
    open(cfg, "w").write(f"items: {items}\nmodels: {models}\nout: {tmp}/out\nconditions: [plain]\nbudget_usd: .nan\n")
    res = run(["eval", "run", "--config", cfg], timeout=EVAL_TIMEOUT)
    clean_error(res, "budget")


@probe("budget", "price_in_per_mtok: -1 in the models file")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    models = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1", price_in_per_mtok=-1.0)
    res = run(eval_args(items, models, os.path.join(tmp, "out"), "--budget-usd", "1"), timeout=EVAL_TIMEOUT)
    clean_error(res, "models.yaml", "price_in_per_mtok")


# == file-size limits during a sweep ============================================================
def _fsize_then_rerun(tmp, blocks):
    srv = fp.FakeProvider("openai", responder=lambda t, i: "yes", expected_key=SECRET)
    try:
        items = write_items(os.path.join(tmp, "views.parquet"), 12)
        models = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        limited = run(eval_args(items, models, out), timeout=EVAL_TIMEOUT, shell_prefix=f"ulimit -f {blocks};")
        again = run(eval_args(items, models, out), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    generic(limited, out)
    if limited.rc != 0:
        require(limited.error_lines(), f"exit {limited.rc} with no error line: {_last(limited.text)}")
    generic(again, out)
    require(again.rc == 0, f"rerun exit {again.rc}: {_last(again.text)}")
    keys = [(e["item_id"], e["condition"]) for e in episodes(out)]
    require(len(keys) == 12 and len(set(keys)) == 12, f"after the rerun {len(keys)} episodes, {len(set(keys))} distinct")


@probe("fsize", "eval run under ulimit -f 16 KB, then rerun")
def _(tmp):
    _fsize_then_rerun(tmp, 16)


@probe("fsize", "eval run under ulimit -f 200 KB, then rerun")
def _(tmp):
    _fsize_then_rerun(tmp, 200)


@probe("fsize", "score under ulimit -f 4 KB, then rerun")
def _(tmp):
    run_dir = base_run(tmp)
    scored = os.path.join(tmp, "scored")
    limited = run(["score", "--episodes", run_dir, "--out", scored], shell_prefix="ulimit -f 4;")
    generic(limited)
    require(limited.rc != 0 and limited.error_lines(), f"exit {limited.rc}: {_last(limited.text)}")
    again = run(["score", "--episodes", run_dir, "--out", scored])
    generic(again)
    require(again.rc == 0, f"rerun exit {again.rc}: {_last(again.text)}")


# == compact interrupted and tampered with =====================================================
def _compacted(run_dir):
    res = run(["compact", run_dir])
    require(res.rc == 0, "setup compact: " + _last(res.text))
    files = glob.glob(os.path.join(run_dir, "episodes", "part-compacted-*.parquet"))
    manifest = os.path.join(run_dir, "episodes", "compaction.json")
    require(files and os.path.exists(manifest), "setup: no compacted file")
    return files[0], manifest


@probe("compact", "compacted file deleted, then score")
def _(tmp):
    run_dir = base_run(tmp)
    f, _m = _compacted(run_dir)
    os.remove(f)
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored")])
    clean_error(res, os.path.basename(f))


@probe("compact", "compacted file with flipped bytes, compact --verify")
def _(tmp):
    run_dir = base_run(tmp)
    f, _m = _compacted(run_dir)
    data = bytearray(open(f, "rb").read())
    mid = len(data) // 2
    data[mid:mid + 16] = bytes(b ^ 0xFF for b in data[mid:mid + 16])
    open(f, "wb").write(bytes(data))
    res = run(["compact", "--verify", run_dir])
    generic(res)
    require(res.rc not in (0, None), f"verify passed a tampered file (exit {res.rc})")
    require(os.path.basename(f) in res.text, "verify does not name the file: " + _last(res.text))


@probe("compact", "compacted file with flipped bytes, then score")
def _(tmp):
    run_dir = base_run(tmp)
    f, _m = _compacted(run_dir)
    data = bytearray(open(f, "rb").read())
    mid = len(data) // 2
    data[mid:mid + 16] = bytes(b ^ 0xFF for b in data[mid:mid + 16])
    open(f, "wb").write(bytes(data))
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored")])
    clean_error(res, os.path.basename(f))


@probe("compact", "manifest truncated, then score")
def _(tmp):
    run_dir = base_run(tmp)
    _f, m = _compacted(run_dir)
    text = open(m).read()
    open(m, "w").write(text[: len(text) // 2])
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored")])
    clean_error(res, "compaction.json")


@probe("compact", "manifest is a list, then compact again")
def _(tmp):
    run_dir = base_run(tmp)
    _f, m = _compacted(run_dir)
    open(m, "w").write("[1, 2, 3]\n")
    res = run(["compact", run_dir])
    clean_error(res, "compaction.json")


@probe("compact", "compact interrupted by a file-size limit, then rerun")
def _(tmp):
    run_dir = base_run(tmp)
    limited = run(["compact", run_dir], shell_prefix="ulimit -f 2;")
    generic(limited)
    require(limited.rc != 0 and limited.error_lines(), f"exit {limited.rc}: {_last(limited.text)}")
    again = run(["compact", run_dir])
    generic(again)
    require(again.rc == 0, f"rerun exit {again.rc}: {_last(again.text)}")
    ids = sorted(e["item_id"] for e in episodes(run_dir))
    require(ids == ["v000", "v001", "v002", "v003"], f"episodes after {ids}")


@probe("compact", "compact on a folder with no parts")
def _(tmp):
    os.makedirs(os.path.join(tmp, "empty"))
    res = run(["compact", os.path.join(tmp, "empty")])
    clean_error(res, "empty")


# == read-only run folders =====================================================================
def as_nobody(tmp):
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    os.chmod(home, 0o777)
    os.chmod(tmp, 0o755)
    env = dict(ENV, HOME=home, TMPDIR=home, RAY_TMPDIR=home)
    return env, "setpriv --reuid 65534 --regid 65534 --clear-groups"


def run_nobody(tmp, args, timeout=SHORT_TIMEOUT):
    env, pre = as_nobody(tmp)
    cmd = ["bash", "-c", pre + ' "$@"', "bash", MEDSCOPE, *args]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return Result(p.returncode, out, err, False, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return Result(None, out, err, True, time.monotonic() - t0)


def _make_read_only(path):
    for root, dirs, files in os.walk(path):
        for f in files:
            os.chmod(os.path.join(root, f), 0o444)
        os.chmod(root, 0o555)


@probe("read-only", "score --out a read-only folder")
def _(tmp):
    run_dir = base_run(tmp)
    ro = os.path.join(tmp, "ro")
    os.makedirs(ro)
    _make_read_only(ro)
    _make_read_only(run_dir)
    res = run_nobody(tmp, ["score", "--episodes", run_dir, "--out", os.path.join(ro, "scored")])
    clean_error(res, "ro")


@probe("read-only", "score of a read-only run folder")
def _(tmp):
    run_dir = base_run(tmp)
    _make_read_only(run_dir)
    scored = os.path.join(tmp, "scored")
    os.makedirs(scored)
    os.chmod(scored, 0o777)
    res = run_nobody(tmp, ["score", "--episodes", run_dir, "--out", scored])
    generic(res)
    require(res.rc == 0, f"exit {res.rc}: {_last(res.text)}")


@probe("read-only", "compact a read-only run folder")
def _(tmp):
    run_dir = base_run(tmp)
    _make_read_only(run_dir)
    res = run_nobody(tmp, ["compact", run_dir])
    clean_error(res, run_dir)
    require(len(glob.glob(os.path.join(run_dir, "episodes", "*.parquet"))) == 4, "parts lost")


@probe("read-only", "eval run resumed into a read-only run folder")
def _(tmp):
    srv = fp.FakeProvider("openai", responder=lambda t, i: "yes", expected_key=SECRET)
    try:
        run_dir = base_run(tmp)
        items = write_items(os.path.join(tmp, "views.parquet"), 6)
        models = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        _make_read_only(run_dir)
        os.chmod(items, 0o644)
        os.chmod(models, 0o644)
        res = run_nobody(tmp, eval_args(items, models, run_dir), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    clean_error(res, run_dir)


# == score with wrong --items or bad --n-boot ===================================================
@probe("score", "--items another table (other ids)")
def _(tmp):
    run_dir = base_run(tmp)
    rows = views_rows(4)
    for r in rows:
        r["view_id"] = "other-" + r["view_id"]
    other = os.path.join(tmp, "other.parquet")
    records.write_table("views", rows, other)
    res = run(["score", "--episodes", run_dir, "--items", other, "--out", os.path.join(tmp, "scored")])
    if res.rc == 4:  # documented: no view of the test set has an episode (EXIT_NO_WORK)
        res.rc = 2
    clean_error(res, "other.parquet")


@probe("score", "--items a path that does not exist")
def _(tmp):
    run_dir = base_run(tmp)
    res = run(["score", "--episodes", run_dir, "--items", os.path.join(tmp, "nope.parquet"),
               "--out", os.path.join(tmp, "scored")])
    clean_error(res, "nope.parquet")


@probe("score", "--items a text file")
def _(tmp):
    run_dir = base_run(tmp)
    p = os.path.join(tmp, "items.parquet")
    open(p, "w").write("view_id,question\nv000,hi\n")
    res = run(["score", "--episodes", run_dir, "--items", p, "--out", os.path.join(tmp, "scored")])
    clean_error(res, "items.parquet")


@probe("score", "--n-boot 0")
def _(tmp):
    # documented: 0 gives point estimates only (analysis/view_metrics.compute)
    run_dir = base_run(tmp)
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored"), "--n-boot", "0"])
    generic(res)
    require(res.rc == 0 and os.path.exists(os.path.join(tmp, "scored", "metrics.parquet")),
            f"exit {res.rc}: {_last(res.text)}")


@probe("score", "--n-boot -5")
def _(tmp):
    run_dir = base_run(tmp)
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored"), "--n-boot", "-5"])
    clean_error(res, "n_boot")


@probe("score", "--n-boot 1000000000000")
def _(tmp):
    run_dir = base_run(tmp)
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored"), "--n-boot", "1000000000000"],
              timeout=60)
    clean_error(res, "n_boot")


@probe("score", "--n-boot 2.5")
def _(tmp):
    run_dir = base_run(tmp)
    res = run(["score", "--episodes", run_dir, "--out", os.path.join(tmp, "scored"), "--n-boot", "2.5"])
    clean_error(res, "n_boot")


# == benchgen reports ===========================================================================
_BG: dict = {}


def bg_setup(tmp):
    if "dir" not in _BG:
        d = tempfile.mkdtemp(prefix="c4bg-")
        r = run(["benchgen", "phantom", "--out", d + "/bg", "--cases", "3"])
        assert r.rc == 0, r.text
        for args in (["schema", "init", "liver", "--out", d + "/liver.yaml"],
                     ["schema", "approve", d + "/liver.yaml", "--checkpoint", "schema", "--by", "A"],
                     ["schema", "approve", d + "/liver.yaml", "--checkpoint", "templates", "--by", "A"]):
            r = run(["benchgen", *args])
            assert r.rc == 0, r.text
        _BG["dir"] = d
    lines = open(_BG["dir"] + "/bg/reports.jsonl").read().splitlines()
    return _BG["dir"], [json.loads(x) for x in lines]


def bg_build(tmp, reports_path):
    d, _ = bg_setup(tmp)
    return run(["benchgen", "build", "--reports", reports_path, "--volumes", d + "/bg/volumes",
                "--schema", d + "/liver.yaml", "--out", os.path.join(tmp, "bench"), "--no-report-questions"],
               timeout=EVAL_TIMEOUT)


def bg_items_cases(tmp):
    p = os.path.join(tmp, "bench", "items")
    if not os.path.isdir(p):
        return set()
    import pyarrow.dataset as ds
    return set(ds.dataset(p, format="parquet").to_table(columns=["case_id"]).column("case_id").to_pylist())


def bg_rejects(tmp):
    p = os.path.join(tmp, "bench", "rejects")
    if not os.path.isdir(p):
        return []
    import pyarrow.dataset as ds
    return ds.dataset(p, format="parquet").to_table().to_pylist()


@probe("benchgen", "empty reports file")
def _(tmp):
    p = os.path.join(tmp, "reports.jsonl")
    open(p, "w").close()
    clean_error(bg_build(tmp, p), "reports.jsonl")


@probe("benchgen", "one 10 MB line")
def _(tmp):
    _, reps = bg_setup(tmp)
    reps[1]["findings"] = "LIVER: " + "normal " * (10 * 1024 * 1024 // 7)
    p = os.path.join(tmp, "reports.jsonl")
    open(p, "w").write("\n".join(json.dumps(r) for r in reps) + "\n")
    res = bg_build(tmp, p)
    generic(res)
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    cases = bg_items_cases(tmp)
    require({"phantom-000", "phantom-002"} <= cases, f"other reports lost: items for {sorted(cases)}")
    require("phantom-001" in cases or any("phantom-001" in json.dumps(r, default=str) for r in bg_rejects(tmp)),
            "the 10 MB report is neither an item nor a reject")


@probe("benchgen", "duplicate case ids")
def _(tmp):
    _, reps = bg_setup(tmp)
    dup = dict(reps[1], impression="1. A different impression entirely.")
    p = os.path.join(tmp, "reports.jsonl")
    open(p, "w").write("\n".join(json.dumps(r) for r in [*reps, dup]) + "\n")
    res = bg_build(tmp, p)
    generic(res)
    if res.rc == 2:
        clean_error(res, "phantom-001")
        return
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    require(any("phantom-001" in json.dumps(r, default=str) and "duplicate" in json.dumps(r, default=str).lower()
                for r in bg_rejects(tmp)), "no duplicate reject for phantom-001")
    require({"phantom-000", "phantom-002"} <= bg_items_cases(tmp), "other reports lost")


@probe("benchgen", "findings is a number, case_id an int")
def _(tmp):
    _, reps = bg_setup(tmp)
    reps[1]["findings"] = 42
    reps.append({"case_id": 7, "study": "CT", "findings": "LIVER: normal.", "impression": "x"})
    p = os.path.join(tmp, "reports.jsonl")
    open(p, "w").write("\n".join(json.dumps(r) for r in reps) + "\n")
    res = bg_build(tmp, p)
    generic(res)
    if res.rc == 2:
        clean_error(res, "reports.jsonl")
        return
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    rej = json.dumps(bg_rejects(tmp), default=str)
    require("phantom-001" in rej, "the numeric findings report has no reject row")
    require({"phantom-000", "phantom-002"} <= bg_items_cases(tmp), "other reports lost")


@probe("benchgen", "a line that is a JSON list")
def _(tmp):
    _, reps = bg_setup(tmp)
    p = os.path.join(tmp, "reports.jsonl")
    lines = [json.dumps(r) for r in reps]
    lines.insert(1, json.dumps(["phantom-009", "CT", "LIVER: normal."]))
    open(p, "w").write("\n".join(lines) + "\n")
    res = bg_build(tmp, p)
    generic(res)
    if res.rc == 2:
        clean_error(res, "reports.jsonl")
        return
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    require(len(bg_rejects(tmp)) >= 1, "the list line left no reject row")
    require({"phantom-000", "phantom-001", "phantom-002"} <= bg_items_cases(tmp), "other reports lost")


# == pairs photo linking outside its set =========================================================
def pairs_set(tmp):
    s = os.path.join(tmp, "set")
    r = run(["pairs", "embedded", "--out", s])
    require(r.rc == 0, "setup: " + _last(r.text))
    return s


def _pairs_check_rejects(tmp, s, first_image_note):
    res = run(["pairs", "check", s])
    generic(res)
    require(res.rc in (0, 1, 3), f"exit {res.rc}: {_last(res.text)}")
    rej = os.path.join(s, "manifest_rejects.parquet")
    require(os.path.exists(rej), "no manifest_rejects.parquet")
    import pyarrow.parquet as pq
    rows = pq.read_table(rej).to_pylist()
    require(any(first_image_note in json.dumps(r, default=str) for r in rows),
            f"the outside photo has no reject row ({len(rows)} rows)")
    require(len(rows) <= 2, f"{len(rows)} rejects: other photos lost")


@probe("pairs", "photo path ../outside.png")
def _(tmp):
    s = pairs_set(tmp)
    shutil.copy(os.path.join(s, "photos", sorted(os.listdir(os.path.join(s, "photos")))[0]),
                os.path.join(tmp, "outside.png"))
    m = yaml.safe_load(open(os.path.join(s, "manifest.yaml")))
    m["conditions"][0]["matched"]["image"] = "../outside.png"
    yaml.safe_dump(m, open(os.path.join(s, "manifest.yaml"), "w"), sort_keys=False)
    _pairs_check_rejects(tmp, s, "outside.png")


@probe("pairs", "photo is a symlink out of the set")
def _(tmp):
    s = pairs_set(tmp)
    m = yaml.safe_load(open(os.path.join(s, "manifest.yaml")))
    rel = m["conditions"][0]["matched"]["image"]
    target = os.path.join(tmp, "elsewhere.png")
    shutil.copy(os.path.join(s, rel), target)
    os.remove(os.path.join(s, rel))
    os.symlink(target, os.path.join(s, rel))
    _pairs_check_rejects(tmp, s, os.path.basename(rel))


@probe("pairs", "radiograph at an absolute path")
def _(tmp):
    # documented (docs/paired-modality.md): "relative to the manifest, or any URI": read, not rejected
    s = pairs_set(tmp)
    m = yaml.safe_load(open(os.path.join(s, "manifest.yaml")))
    shutil.copy(os.path.join(s, m["conditions"][0]["radiograph"]), os.path.join(tmp, "abs.png"))
    m["conditions"][0]["radiograph"] = os.path.join(tmp, "abs.png")
    yaml.safe_dump(m, open(os.path.join(s, "manifest.yaml"), "w"), sort_keys=False)
    res = run(["pairs", "check", s])
    generic(res)
    require(res.rc == 0 and '"photos": 12' in res.out, f"exit {res.rc}: {_last(res.text)}")


# == corrupt volumes in probe build =============================================================
def probe_with(tmp, corrupt):
    r = run(["cohort", "phantom", "--out", os.path.join(tmp, "ph"), "--cases", "1", "--volumes", "2"])
    require(r.rc == 0, "setup: " + _last(r.text))
    import pyarrow.parquet as pq
    vols = pq.read_table(os.path.join(tmp, "ph", "volumes.parquet")).to_pylist()
    victim = vols[0]
    touched = corrupt(victim)
    res = run(["probe", "build", "--volumes", os.path.join(tmp, "ph"), "--out", os.path.join(tmp, "probe")],
              timeout=EVAL_TIMEOUT)
    generic(res)
    if res.rc == 2:
        clean_error(res, os.path.basename(touched))
        return
    require(res.rc in (0, 3), f"exit {res.rc}: {_last(res.text)}")
    rej = os.path.join(tmp, "probe", "rejects.parquet")  # one file (docs/probe.md), not a part folder
    rows = []
    if os.path.exists(rej):
        import pyarrow.parquet as pq
        rows = pq.read_table(rej).to_pylist()
    require(any(victim["case_id"] in json.dumps(r, default=str) for r in rows),
            f"the corrupt volume has no reject row ({len(rows)} rows)")
    items = glob.glob(os.path.join(tmp, "probe", "probe_items", "**", "*.parquet"), recursive=True)
    import pyarrow.dataset as ds
    kept = set(ds.dataset(items, format="parquet").to_table().column("case_id").to_pylist()) if items else set()
    require(vols[1]["case_id"] in kept, f"the good volume left no items ({sorted(kept)})")


@probe("probe", "truncated .nii.gz image")
def _(tmp):
    def image_truncated(v):
        data = open(v["image_uri"], "rb").read()
        open(v["image_uri"], "wb").write(data[: len(data) // 3])
        return v["image_uri"]
    probe_with(tmp, image_truncated)


@probe("probe", "zero-byte label map")
def _(tmp):
    def label_empty(v):
        open(v["label_uri"], "wb").close()
        return v["label_uri"]
    probe_with(tmp, label_empty)


@probe("probe", "label map of random bytes")
def _(tmp):
    def label_garbage(v):
        open(v["label_uri"], "wb").write(os.urandom(4096))
        return v["label_uri"]
    probe_with(tmp, label_garbage)


@probe("probe", "image gzip valid, NIfTI header garbage")
def _(tmp):
    def image_header(v):
        open(v["image_uri"], "wb").write(gzip.compress(b"\x00" * 348 + os.urandom(2048)))
        return v["image_uri"]
    probe_with(tmp, image_header)


@probe("probe", "image file deleted")
def _(tmp):
    def image_gone(v):
        os.remove(v["image_uri"])
        return v["image_uri"]
    probe_with(tmp, image_gone)


# == training overrides and recipe folders ======================================================
def train_args(tmp, *more, recipe=None):
    views = os.path.join(tmp, "views.parquet")
    if not os.path.exists(views):
        write_items(views, 4)
    return ["train", "--recipe", recipe or os.path.join(REPO, "configs", "train", "smoke.yaml"),
            "--views", views, "--out", os.path.join(tmp, "train"), *more]


@probe("training", "--overrides '{lr: -1}'")
def _(tmp):
    clean_error(run(train_args(tmp, "--overrides", "{lr: -1}"), timeout=EVAL_TIMEOUT), "lr")


@probe("training", "--overrides '{lr: .nan}'")
def _(tmp):
    clean_error(run(train_args(tmp, "--overrides", "{lr: .nan}"), timeout=EVAL_TIMEOUT), "lr")


@probe("training", "--overrides unknown key")
def _(tmp):
    clean_error(run(train_args(tmp, "--overrides", "{learnign_rate: 0.1}"), timeout=EVAL_TIMEOUT), "learnign_rate")


@probe("training", "--overrides not YAML")
def _(tmp):
    clean_error(run(train_args(tmp, "--overrides", "{lr: [1, 2"), timeout=EVAL_TIMEOUT), "overrides")


@probe("training", "--overrides a list")
def _(tmp):
    clean_error(run(train_args(tmp, "--overrides", "[1, 2]"), timeout=EVAL_TIMEOUT), "overrides")


@probe("training", "--overrides '{epochs: 0}'")
def _(tmp):
    clean_error(run(train_args(tmp, "--overrides", "{epochs: 0}"), timeout=EVAL_TIMEOUT), "epochs")


@probe("training", "--recipe an empty folder")
def _(tmp):
    os.makedirs(os.path.join(tmp, "recipes"))
    clean_error(run(train_args(tmp, recipe=os.path.join(tmp, "recipes")), timeout=EVAL_TIMEOUT), "recipes")


@probe("training", "--recipe an empty file")
def _(tmp):
    p = os.path.join(tmp, "recipe.yaml")
    open(p, "w").close()
    clean_error(run(train_args(tmp, recipe=p), timeout=EVAL_TIMEOUT), "recipe.yaml")


@probe("training", "train-select --run an empty folder")
def _(tmp):
    os.makedirs(os.path.join(tmp, "stage1"))
    res = run(["train-select", "--run", "stage1=" + os.path.join(tmp, "stage1"), "--out", os.path.join(tmp, "sel")])
    clean_error(res, "stage1")


@probe("training", "sweep --arms an empty file")
def _(tmp):
    p = os.path.join(tmp, "arms.yaml")
    open(p, "w").close()
    write_items(os.path.join(tmp, "views.parquet"), 4)
    res = run(["sweep", "--arms", p, "--views", os.path.join(tmp, "views.parquet"), "--out", os.path.join(tmp, "sw")],
              timeout=EVAL_TIMEOUT)
    clean_error(res, "arms.yaml")


# -- main ---------------------------------------------------------------------------------------
def main(argv=None):
    return run_probes(PROBES, __doc__.splitlines()[0], "c4-", argv)


def run_probes(probes, description: str, prefix: str, argv=None) -> int:
    """Run ``probes`` ((family, name, fn) each, fn given a fresh temporary folder), print one line
    per probe and the clean figure per family; every campaign runs through this one loop, so all
    count alike. ``--only FAMILY`` / ``name:SUBSTRING`` picks probes, ``--json OUT`` keeps the verdicts."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--only", help="run one family (or name:SUBSTRING, the probes whose name holds it)")
    ap.add_argument("--json", help="write the verdicts here")
    args = ap.parse_args(argv)
    verdicts = []
    for family, name, fn in probes:
        if args.only and args.only != family and not (args.only.startswith("name:") and args.only[5:] in name):
            continue
        tmp = tempfile.mkdtemp(prefix=prefix)
        t0 = time.monotonic()
        try:
            fn(tmp)
            verdict, why = "clean", ""
        except NotClean as e:
            verdict, why = "NOT", str(e)
        except Exception as e:  # the campaign's own failure: reported, never counted clean
            verdict, why = "ERROR", f"campaign error: {type(e).__name__}: {e} | {traceback.format_exc().splitlines()[-3:]}"
        dt = time.monotonic() - t0
        verdicts.append({"family": family, "probe": name, "verdict": verdict, "why": why, "seconds": round(dt, 1)})
        print(f"{verdict:5} {family:12} {name:62} {dt:5.1f}s {why[:260]}", flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
    fams: dict[str, list[int]] = {}
    for v in verdicts:
        c = fams.setdefault(v["family"], [0, 0])
        c[0] += v["verdict"] == "clean"
        c[1] += 1
    print()
    for fam, (c, n) in fams.items():
        print(f"{fam:12} {c}/{n}")
    total = sum(c for c, _ in fams.values()), sum(n for _, n in fams.values())
    print(f"{'total':12} {total[0]}/{total[1]} ({100 * total[0] / max(total[1], 1):.1f} %)")
    if args.json:
        json.dump({"verdicts": verdicts, "families": fams}, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
