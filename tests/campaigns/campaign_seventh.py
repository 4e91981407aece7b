"""The seventh bad-input campaign (issue 51): kinds none of the earlier campaigns tried (see
docs/cohorts-bad-input.md), written and committed before its first run, each probe driving the
real CLI in a subprocess with a timeout (a hang is a failure).

Not a pytest module (no ``test_`` prefix): run it by hand::

    PYTHONPATH=$PWD .venv/bin/python tests/campaigns/campaign_seventh.py [--only FAMILY] [--json OUT]

The harness is the fourth's, fresh's and sixth's, imported from them, so every campaign judges
alike: a probe is **clean** when the command ends inside its timeout, prints no traceback and no
secret, and either stops with exit 2 and an error naming the input and the problem
(``clean_error``: a ``medscope: error:`` block; ``argparse_error``: the fourth's rule, which also
reads argparse's one-line ``medscope <verb>: error: ...``), or finishes keeping the other work and
giving the bad input a row with a reason. Where the docs allow both answers the probe accepts
both (``error_or``). A probe that raises anything else is ``ERROR`` (the campaign's own fault
until read), never clean.

Families: ``config`` (config and models files: encodings, shapes, duplicate keys, strings for
numbers), ``eval`` (eval run flags), ``outputs`` (``--out`` where it cannot or should not go),
``runs`` (score / report on the wrong inputs), ``views`` (recipes and cases tables),
``training``, ``cohort``.
"""

from __future__ import annotations

import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from tests.campaigns import campaign_fourth as c4  # noqa: E402
from tests.campaigns import campaign_fresh as cf  # noqa: E402
from tests.campaigns.campaign_fourth import (  # noqa: E402
    EVAL_TIMEOUT, KEY_ENV, SECRET, _last, base_run, episodes, eval_args, models_file, require, run,
    write_items)
from tests.campaigns.campaign_fresh import _import, _imf_root, _table_rows, _write, clean_error  # noqa: E402
from tests.campaigns.campaign_sixth import error_or  # noqa: E402
from medscope.testing import providers as fp  # noqa: E402

PROBES: list[tuple[str, str, object]] = []


def probe(family, name):
    def deco(fn):
        PROBES.append((family, name, fn))
        return fn
    return deco


def argparse_error(res, *needles, folder=None):
    """The fourth campaign's rule: exit 2 and any ``: error:`` line (argparse's own included)."""
    c4.clean_error(res, *needles, folder=folder)


def _good_provider():
    return fp.FakeProvider("openai", responder=lambda t, i: "yes", expected_key=SECRET)


def _entry(url, **extra):
    e = {"name": "m", "kind": "openai", "model": "fake-1", "base_url": url, "api_key_env": KEY_ENV,
         "price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0, "timeout_s": 5, "max_attempts": 2}
    e.update(extra)
    return e


def _eval_models_text(tmp, text, name="models.yaml", mode="w"):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = _write(os.path.join(tmp, name), text, mode)
    out = os.path.join(tmp, "out")
    return run(eval_args(items, m, out), timeout=EVAL_TIMEOUT), out


def _four_episodes(out):
    return lambda: require(len(episodes(out)) == 4, f"{len(episodes(out))} episodes, not 4")


# == config ====================================================================================
@probe("config", "models file with a UTF-8 BOM and CRLF line ends")
def _(tmp):
    import yaml
    srv = _good_provider()
    try:
        text = yaml.safe_dump({"models": [_entry(srv.url)]}).replace("\n", "\r\n")
        res, out = _eval_models_text(tmp, ("\ufeff" + text).encode("utf-8"), "bom-models.yaml", "wb")
    finally:
        srv.close()
    error_or(res, ["bom-models.yaml"], _four_episodes(out), folder=out)


@probe("config", "models file `models: []` (no model)")
def _(tmp):
    res, out = _eval_models_text(tmp, "models: []\n", "empty-list-models.yaml")
    clean_error(res, "model")


@probe("config", "models file `models:` a mapping, not a list")
def _(tmp):
    import yaml
    res, out = _eval_models_text(tmp, yaml.safe_dump({"models": {"m": _entry("http://127.0.0.1:9/v1")}}))
    clean_error(res, "models")


@probe("config", "models file: two entries with the same name")
def _(tmp):
    import yaml
    e = _entry("http://127.0.0.1:9/v1", name="twin")
    res, out = _eval_models_text(tmp, yaml.safe_dump({"models": [e, dict(e, model="fake-2")]}))
    clean_error(res, "twin")


@probe("config", "models file: name ''")
def _(tmp):
    import yaml
    res, out = _eval_models_text(tmp, yaml.safe_dump({"models": [_entry("http://127.0.0.1:9/v1", name="")]}))
    clean_error(res, "name")


@probe("config", "models file: rpm -1")
def _(tmp):
    import yaml
    res, out = _eval_models_text(tmp, yaml.safe_dump({"models": [_entry("http://127.0.0.1:9/v1", rpm=-1)]}))
    clean_error(res, "rpm")


@probe("config", "models file: timeout_s at the top level and in the entry (a key at two depths)")
def _(tmp):
    import yaml
    srv = _good_provider()
    try:
        text = "timeout_s: 0\n" + yaml.safe_dump({"models": [_entry(srv.url)]})
        res, out = _eval_models_text(tmp, text, "two-depth-models.yaml")
    finally:
        srv.close()
    # the top-level key is not a models-file key: refused naming it, or the run goes on under the
    # entry's own timeout_s (5) and all 4 units are answered
    error_or(res, ["timeout_s"], _four_episodes(out), folder=out)


@probe("config", "eval run --budget-usd 'ten dollars'")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    argparse_error(run(eval_args(items, m, os.path.join(tmp, "out"), "--budget-usd", "ten dollars"),
                       timeout=EVAL_TIMEOUT), "budget")


@probe("config", "eval run --config with budget_usd: 'ten dollars'")
def _(tmp):
    import yaml
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    cfg = _write(os.path.join(tmp, "run.yaml"), yaml.safe_dump(
        {"items": items, "models": m, "out": os.path.join(tmp, "out"),
         "budget_usd": "ten dollars"}))
    argparse_error(run(["eval", "run", "--config", cfg, "--conditions", "plain"], timeout=EVAL_TIMEOUT), "budget")


@probe("config", "score --config with a BOM and CRLF line ends")
def _(tmp):
    d = base_run(tmp)
    sc = os.path.join(tmp, "sc")
    # harness correction after the first run: `n_boot` is a protocol option; in a --config it sits under
    # `protocol_options` (docs/scoring-and-report.md), and the first run's top-level key was refused
    text = f"episodes: {d}\r\nout: {sc}\r\nprotocol_options: {{n_boot: 50}}\r\n"
    cfg = _write(os.path.join(tmp, "bom-score.yaml"), ("\ufeff" + text).encode("utf-8"), "wb")
    res = run(["score", "--config", cfg], timeout=180)
    error_or(res, ["bom-score.yaml"], lambda: require(os.path.exists(os.path.join(sc, "run.json")),
                                                       "no run.json in the scored folder"))


@probe("config", "score --config with `out:` given twice")
def _(tmp):
    d = base_run(tmp)
    text = f"episodes: {d}\nout: {os.path.join(tmp, 'a')}\nout: {os.path.join(tmp, 'b')}\n"
    cfg = _write(os.path.join(tmp, "twice.yaml"), text)
    clean_error(run(["score", "--config", cfg], timeout=180), "out")


# == eval flags ================================================================================
@probe("eval", "eval run --models-filter a name not in the models file")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    clean_error(run(eval_args(items, m, os.path.join(tmp, "out"), "--models-filter", "ghost-model"),
                    timeout=EVAL_TIMEOUT), "ghost-model")


@probe("eval", "eval run --conditions ''")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    args = eval_args(items, m, os.path.join(tmp, "out"))
    args[args.index("--conditions") + 1] = ""
    argparse_error(run(args, timeout=EVAL_TIMEOUT), "conditions")


@probe("eval", "eval run --concurrency 0")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    argparse_error(run(eval_args(items, m, os.path.join(tmp, "out"), "--concurrency", "0"),
                       timeout=EVAL_TIMEOUT), "concurrency")


@probe("eval", "eval run --items the same table twice")
def _(tmp):
    srv = _good_provider()
    try:
        items = write_items(os.path.join(tmp, "views.parquet"))
        m = models_file(os.path.join(tmp, "models.yaml"), srv.url)
        out = os.path.join(tmp, "out")
        res = run(eval_args(items, m, out, "--items", items), timeout=EVAL_TIMEOUT)
    finally:
        srv.close()
    # either refused naming the table, or each item evaluated once (4 episodes, not 8)
    error_or(res, ["views.parquet"], _four_episodes(out), folder=out)


@probe("eval", "eval run --items a Windows path (C:\\data\\views.parquet)")
def _(tmp):
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    clean_error(run(eval_args("C:\\data\\views.parquet", m, os.path.join(tmp, "out")), timeout=EVAL_TIMEOUT),
                "views.parquet")


@probe("eval", "eval run --max-failed -1")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    argparse_error(run(eval_args(items, m, os.path.join(tmp, "out"), "--max-failed", "-1"),
                       timeout=EVAL_TIMEOUT), "max_failed")  # harness correction: the error names the key


# == outputs ===================================================================================
def _file_parent(tmp):
    return os.path.join(_write(os.path.join(tmp, "a-file"), "x"), "sub")


@probe("outputs", "eval run --out under a regular file")
def _(tmp):
    items = write_items(os.path.join(tmp, "views.parquet"))
    m = models_file(os.path.join(tmp, "models.yaml"), "http://127.0.0.1:9/v1")
    clean_error(run(eval_args(items, m, _file_parent(tmp)), timeout=EVAL_TIMEOUT), "a-file")


@probe("outputs", "cohort import --out under a regular file")
def _(tmp):
    root = _imf_root(tmp)
    res = run(["cohort", "import", "--format", "image-mask-folder", "--path", root, "--out", _file_parent(tmp),
               "--dataset", "{mask_suffix: _mask}"])
    clean_error(res, "a-file")


@probe("outputs", "cohort phantom --out under a regular file")
def _(tmp):
    clean_error(run(["cohort", "phantom", "--out", _file_parent(tmp), "--cases", "2", "--volumes", "0"]), "a-file")


@probe("outputs", "report --out under a regular file")
def _(tmp):
    sc = _scored(tmp)
    clean_error(run(["report", "--run", sc, "--out", _file_parent(tmp)], timeout=180), "a-file")


@probe("outputs", "report --out inside the scored run folder")
def _(tmp):
    sc = _scored(tmp)
    before = sorted(os.listdir(sc))
    res = run(["report", "--run", sc, "--out", os.path.join(sc, "rep")], timeout=180)

    def ok():
        after = [f for f in sorted(os.listdir(sc)) if f != "rep"]
        require(after == before, f"scored run's files changed: {before} -> {after}")
        require(os.path.exists(os.path.join(sc, "rep", "report.md")), "no report.md")
    error_or(res, ["rep"], ok)


@probe("outputs", "score --out inside the eval run folder")
def _(tmp):
    d = base_run(tmp)
    n = len(episodes(d))
    res = run(["score", "--episodes", d, "--out", os.path.join(d, "scored"), "--n-boot", "50"], timeout=180)

    def ok():
        require(len(episodes(d)) == n, f"episodes {n} -> {len(episodes(d))}")
        require(os.path.exists(os.path.join(d, "scored", "run.json")), "no run.json")
    error_or(res, ["scored"], ok)


# == runs ======================================================================================
def _scored(tmp):
    d = base_run(tmp)
    sc = os.path.join(tmp, "scored")
    r = run(["score", "--episodes", d, "--out", sc, "--n-boot", "50"], timeout=180)
    require(r.rc == 0, "setup: score " + _last(r.text))
    return sc


@probe("runs", "score --items a cases table (another kind of table)")
def _(tmp):
    d = base_run(tmp)
    out, _ = cf.phantom_cohort(tmp, cases=2)
    res = run(["score", "--episodes", d, "--items", os.path.join(out, "cases.parquet"),
               "--out", os.path.join(tmp, "sc")], timeout=180)
    clean_error(res, "cases.parquet")


@probe("runs", "score --items a views table sharing none of the run's item ids")
def _(tmp):
    import pyarrow.parquet as pq
    import pyarrow as pa
    d = base_run(tmp)
    p = write_items(os.path.join(tmp, "other-views.parquet"))
    t = pq.read_table(p)
    i = t.schema.get_field_index("view_id")
    t = t.set_column(i, "view_id", pa.array([f"zz{k}" for k in range(t.num_rows)]))
    pq.write_table(t, p)
    res = run(["score", "--episodes", d, "--items", p, "--out", os.path.join(tmp, "sc")], timeout=180)
    # harness correction after the first run: "no view of the test set has an episode" is exit 4 (no
    # work), naming the table read (docs/scoring-and-report.md); the first run demanded exit 2
    c4.generic(res)
    require(res.rc == 4, f"exit {res.rc}, not 4: {_last(res.text)}")
    require(any(ln.startswith("medscope: error:") and "other-views.parquet" in ln for ln in res.err.splitlines()),
            "no error line naming the table: " + _last(res.text))


@probe("runs", "report --run the same scored run twice")
def _(tmp):
    sc = _scored(tmp)
    rep = os.path.join(tmp, "rep")
    res = run(["report", "--run", sc, "--run", sc, "--out", rep], timeout=180)
    error_or(res, ["scored"], lambda: require(os.path.exists(os.path.join(rep, "report.md")), "no report.md"))


# == views =====================================================================================
def _views(tmp, *more, cases=None):
    if cases is None:
        out, _ = cf.phantom_cohort(tmp, cases=2)
        cases = os.path.join(out, "cases.parquet")
    vo = os.path.join(tmp, "views")
    return run(["views", "build", "--cases", cases, "--out", vo, "--engine", "local", *more], timeout=300,
               cwd=REPO), vo


@probe("views", "views build --recipe a missing file")
def _(tmp):
    res, _ = _views(tmp, "--recipe", os.path.join(tmp, "no-such-recipe.yaml"))
    clean_error(res, "no-such-recipe.yaml")


@probe("views", "views build --recipe with tools: []")
def _(tmp):
    p = _write(os.path.join(tmp, "notools.yaml"), "name: notools\nseed: 0\ntools: []\n")
    res, _ = _views(tmp, "--recipe", p)
    clean_error(res, "tools")


@probe("views", "views build --tools an unknown tool")
def _(tmp):
    res, _ = _views(tmp, "--recipe", "configs/views/demo.yaml", "--tools", "crayon")
    clean_error(res, "crayon")


@probe("views", "views build --recipe split_fractions summing to 1.5")
def _(tmp):
    p = _write(os.path.join(tmp, "split.yaml"), "name: split\nseed: 0\ntools: [transplant, graft]\n"
               "split_fractions: {train: 0.5, validation: 0.5, test: 0.5}\n")
    res, _ = _views(tmp, "--recipe", p)
    clean_error(res, "split_fractions")


@probe("views", "views build --recipe a YAML list")
def _(tmp):
    p = _write(os.path.join(tmp, "list-recipe.yaml"), "- transplant\n- graft\n")
    res, _ = _views(tmp, "--recipe", p)
    clean_error(res, "list-recipe.yaml")


@probe("views", "views build --cases a cases table with a case id twice")
def _(tmp):
    import pyarrow as pa
    import pyarrow.parquet as pq
    out, ids = cf.phantom_cohort(tmp, cases=3)
    p = os.path.join(out, "cases.parquet")
    t = pq.read_table(p)
    t = pa.concat_tables([t, t.slice(0, 1)])
    dup = t.column("case_id")[0].as_py()
    pq.write_table(t, p)
    res, vo = _views(tmp, "--recipe", "configs/views/demo.yaml", cases=p)

    def ok():
        text = ""
        for dp, _, fs in os.walk(vo):
            for f in fs:
                if f.endswith(".parquet") and "reject" in os.path.join(dp, f):
                    text += json.dumps(_table_rows(os.path.join(dp, f)), default=str)
        require(dup in text, f"duplicated case {dup} is in no rejects row")
    error_or(res, [dup], ok, folder=vo)


# == training ==================================================================================
def _train_recipe(tmp, text, name="recipe.yaml"):
    views = write_items(os.path.join(tmp, "views.parquet"))
    r = _write(os.path.join(tmp, name), text)
    return run(["train", "--recipe", r, "--views", views, "--out", os.path.join(tmp, "tr")], timeout=180, cwd=REPO)


@probe("training", "--recipe an empty YAML list")
def _(tmp):
    clean_error(_train_recipe(tmp, "[]\n", "empty-list-recipe.yaml"), "empty-list-recipe.yaml")


@probe("training", "--recipe a zero-byte file")
def _(tmp):
    clean_error(_train_recipe(tmp, "", "zero-recipe.yaml"), "zero-recipe.yaml")


@probe("training", "--overrides max_steps: -3")
def _(tmp):
    views = write_items(os.path.join(tmp, "views.parquet"))
    res = run(["train", "--recipe", "configs/train/smoke.yaml", "--views", views, "--out", os.path.join(tmp, "tr"),
               "--overrides", "{max_steps: -3}"], timeout=180, cwd=REPO)
    clean_error(res, "max_steps")


@probe("training", "--overrides a misspelt key (lerning_rate)")
def _(tmp):
    views = write_items(os.path.join(tmp, "views.parquet"))
    res = run(["train", "--recipe", "configs/train/smoke.yaml", "--views", views, "--out", os.path.join(tmp, "tr"),
               "--overrides", "{lerning_rate: 0.1}"], timeout=180, cwd=REPO)
    clean_error(res, "lerning_rate")


@probe("training", "--num-workers 0")
def _(tmp):
    views = write_items(os.path.join(tmp, "views.parquet"))
    res = run(["train", "--recipe", "configs/train/smoke.yaml", "--views", views, "--out", os.path.join(tmp, "tr"),
               "--num-workers", "0"], timeout=180, cwd=REPO)
    argparse_error(res, "workers")


# == cohort ====================================================================================
@probe("cohort", "cohort phantom --cases 0")
def _(tmp):
    argparse_error(run(["cohort", "phantom", "--out", os.path.join(tmp, "c"), "--cases", "0", "--volumes", "0"]),
                   "cases")


@probe("cohort", "cohort import --path with Windows separators (C:\\exports\\site1)")
def _(tmp):
    clean_error(_import(tmp, "image-mask-folder", "C:\\exports\\site1"), "site1")


@probe("cohort", "cohort show of a folder that does not exist")
def _(tmp):
    argparse_error(run(["cohort", "show", os.path.join(tmp, "no-such-cohort")]), "no-such-cohort")


def main(argv=None):
    from tests.campaigns.campaign_fourth import run_probes

    return run_probes(PROBES, __doc__.splitlines()[0], "c7-", argv)


if __name__ == "__main__":
    sys.exit(main())
