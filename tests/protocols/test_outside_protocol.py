"""A protocol written outside the package: a module on PYTHONPATH, named as
``--protocol myproto:MyProtocol``, with its own item table, its own options model and its own
report section, goes through ``eval run`` -> ``score`` -> ``report`` with no file of medscope/ or
pipelines/ knowing its name.

``eval run`` runs as its own process (the real CLI) attached to the session's Ray, as a job
submitted with ``ray job submit --runtime-env-json`` would be: its workers get PYTHONPATH from the
job's runtime environment and import the module themselves (which registers its table there).
``score`` and ``report`` find the protocol again from what the runs record (sweep.json, run.json).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from statsmodels.stats.proportion import proportion_confint

from medscope.io import layout, records
from medscope.errors import MedScopeError
from medscope.images import encode_png
from pipelines import cli
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT

MODULE = '''
"""A two-answer protocol: "Is there a <thing> in this image?", read as yes / no."""
from typing import Literal

import pyarrow as pa
import pydantic
from scipy.stats import binomtest

from medscope.io import layout, records, storage, tablescan
from medscope.answers.parser import parse_reply
from medscope.models.base import Message, Part
from medscope.protocols.base import EpisodeResult, Item, ProtocolOptions, option
from medscope.render.document import Section, Table

ITEMS = records.register_table("myproto_items", pa.schema([
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("case_id", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("truth", pa.string(), nullable=False),
    pa.field("colour", pa.string(), nullable=False),
    pa.field("image", pa.binary(), nullable=False),
    *records.PRIVACY,
]), declared_by=__name__, enums={"truth": ("yes", "no"), "colour": ("red", "blue")})
SCORES = records.register_table("myproto_scores", pa.schema([
    pa.field("model", pa.string(), nullable=False),
    pa.field("condition", pa.string(), nullable=False),
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("case_id", pa.string(), nullable=False),
    pa.field("truth", pa.string(), nullable=False),
    pa.field("reply", pa.string()),
    pa.field("correct", pa.bool_(), nullable=False),
]), declared_by=__name__, files=("my_scores.parquet",))


class MyOptions(ProtocolOptions):
    colour: Literal["red", "blue"] | None = option(None, verb="eval", description="only the items of this colour")
    caption: str = option("Yes-or-no accuracy", verb="report", description="the report table's title")


class MyProtocol:
    name = "my_outside"
    prompt_version = "my-v1"
    Options = MyOptions

    def __init__(self, options=None):
        self.options = options or MyOptions()

    def load_items(self, uri, ids=None, images=True):
        columns = None if images else tablescan.columns_without("myproto_items", "image")
        rows = tablescan.iter_rows("myproto_items", uri, columns, where=tablescan.id_filter("item_id", ids))
        return [Item(item_id=r["item_id"], case_id=r["case_id"], question=r["question"], truth=r["truth"],
                     images=(r["image"],) if images else (), private=r["private"],
                     endpoint_allowlist=tuple(r["endpoint_allowlist"] or ()), meta={"colour": r["colour"]})
                for r in rows if self.options.colour in (None, r["colour"])]

    def conditions(self):
        return ("plain",)

    def run_episode(self, item, model, condition, decoding):
        done = model.complete([Message("user", (Part(png=item.images[0]), Part(text=item.question)))], decoding)
        final = parse_reply(done.text).final
        answer = final.answer.strip().lower() if final is not None and final.answer else None
        return EpisodeResult(turns=[{"role": "assistant", "text": done.text, "image_ref": None}],
                             raw_text=done.text, action="answer" if answer else "unparseable", answer=answer,
                             input_tokens=done.input_tokens, output_tokens=done.output_tokens, model_turns=1)

    def score(self, episodes_uri, items_uri, out):
        truth = {r["item_id"]: r for r in tablescan.iter_rows("myproto_items", items_uri, ["item_id", "case_id", "truth"])}
        episodes = records.read_table("episodes", episodes_uri).to_pylist()
        rows = [{"model": e["model"], "condition": e["condition"], "item_id": e["item_id"],
                 "case_id": truth[e["item_id"]]["case_id"], "truth": truth[e["item_id"]]["truth"],
                 "reply": e["answer"], "correct": e["answer"] == truth[e["item_id"]]["truth"]} for e in episodes]
        run = layout.ScoredRun(out)
        records.write_table("myproto_scores", rows, run.table("myproto_scores"))
        metrics = []
        for model, condition in sorted({(r["model"], r["condition"]) for r in rows}):
            mine = [r for r in rows if (r["model"], r["condition"]) == (model, condition)]
            k, n = sum(r["correct"] for r in mine), len(mine)
            ci = binomtest(k, n).proportion_ci(0.95, method="exact")
            metrics.append({"model": model, "condition": condition, "test_set": "all", "breakdown": "all",
                            "metric": "accuracy", "value": k / n, "ci_low": ci.low, "ci_high": ci.high,
                            "n_cases": n})
        records.write_table("metrics", metrics, run.metrics)
        summary = {"protocol": self.name, "scored": len(rows), "metrics": run.metrics}
        storage.write_text(run.manifest, __import__("json").dumps(summary))
        return summary

    def report_sections(self, scored_run, work_dir):
        metrics = records.read_table("metrics", layout.ScoredRun(scored_run).metrics).to_pylist()
        table = Table(headers=["model", "accuracy", "95% CI", "n"],
                      rows=[[m["model"], f"{m['value']:.3f}", f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]", m["n_cases"]]
                            for m in metrics])
        return [Section(f"{self.options.caption} (outside protocol)", [table])], {}
'''

# (item, truth, colour): the eval run keeps the red ones (--colour red, a flag from its options model)
ITEMS = [("r1", "yes", "red"), ("r2", "yes", "red"), ("r3", "no", "red"), ("r4", "yes", "red"),
         ("b1", "no", "blue"), ("b2", "no", "blue")]
# Worked out by hand: the constant policies answer "Yes" / "No" to every presence question, so on
# the 4 red items (3 yes, 1 no) always-yes is right 3 times and always-no once.
EXPECTED = {"always-yes": (3, 4), "always-no": (1, 4)}


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """The module in tmp_path (importable here too, for score and report), its item table, a
    models file; the session's table registry and modules are left as they were."""
    from medscope import protocols

    protocols.import_all()  # the shipped protocols' tables are registered in the registry kept, not the copy
    (tmp_path / "myproto.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod, name in ((records, "SCHEMAS"), (records, "ENUMS"), (records, "_DECLARED_BY"), (layout, "TABLE_MEMBERS")):
        monkeypatch.setattr(mod, name, dict(getattr(mod, name)))
    monkeypatch.setattr(layout, "PART_TABLES", set(layout.PART_TABLES))
    monkeypatch.delitem(sys.modules, "myproto", raising=False)
    import myproto

    png = encode_png(__import__("numpy").zeros((8, 8), dtype="uint8"))
    records.write_table("myproto_items", [
        {"item_id": i, "case_id": f"case-{i}", "question": "Is there a polyp in this image?", "truth": t,
         "colour": c, "image": png, "private": False, "endpoint_allowlist": None} for i, t, c in ITEMS],
        str(tmp_path / "items.parquet"))
    (tmp_path / "models.yaml").write_text(
        "models:\n  - {name: always-yes, kind: policy, model: always_present, placement: pool}\n"
        "  - {name: always-no, kind: policy, model: always_absent, placement: pool}\n")
    yield tmp_path
    sys.modules.pop("myproto", None)
    del myproto


@pytest.mark.slow
def test_a_protocol_outside_the_package_runs_eval_score_and_report(outside, ray_cluster):
    tmp = outside
    path = os.pathsep.join([REPO, str(tmp)])
    env = dict(os.environ, PYTHONPATH=path, RAY_ADDRESS=ray_cluster.get_runtime_context().gcs_address,
               RAY_JOB_CONFIG_JSON_ENV_VAR=json.dumps({"runtime_env": {"env_vars": {"PYTHONPATH": path}}}))
    ran = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "eval", "run", "--protocol", "myproto:MyProtocol",
         "--colour", "red", "--items", str(tmp / "items.parquet"), "--models",
         str(tmp / "models.yaml"), "--conditions", "plain", "--workers", "1", "--out", str(tmp / "eval")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    sweep = json.loads((tmp / "eval" / "sweep.json").read_text())
    assert (sweep["protocol"], sweep["protocol_spec"], sweep["done"]) == ("my_outside", "myproto:MyProtocol", 8)
    assert sweep["protocol_options"] == {"colour": "red"}  # its eval options, typed, for score

    assert cli.main(["score", "--episodes", str(tmp / "eval"), "--out", str(tmp / "scored"), "--colour", "blue"]) == 2
    assert cli.main(["score", "--episodes", str(tmp / "eval"), "--out", str(tmp / "scored")]) == 0
    run = json.loads((tmp / "scored" / "run.json").read_text())
    assert run["protocol_spec"] == "myproto:MyProtocol"  # what report loads again
    assert run["protocol_options"]["colour"] == "red"
    scores = records.read_table("myproto_scores", str(tmp / "scored" / "my_scores.parquet")).to_pylist()
    assert sorted(r["item_id"] for r in scores) == sorted(["r1", "r2", "r3", "r4"] * 2)  # the options chose red
    metrics = {r["model"]: r for r in records.read_table("metrics", str(tmp / "scored")).to_pylist()}
    for model, (k, n) in EXPECTED.items():
        low, high = proportion_confint(k, n, alpha=0.05, method="beta")  # Clopper-Pearson
        got = metrics[model]
        assert (got["value"], got["n_cases"]) == (pytest.approx(k / n), n)
        assert (got["ci_low"], got["ci_high"]) == (pytest.approx(low), pytest.approx(high))

    assert cli.main(["report", "--run", str(tmp / "scored"), "--out", str(tmp / "report"),
                     "--caption", "Yes-or-no accuracy"]) == 0  # a report flag from its options model
    md = (tmp / "report" / "report.md").read_text()
    assert "## Yes-or-no accuracy (outside protocol)" in md
    assert "| always-yes | 0.750 |" in md and "| always-no | 0.250 |" in md
    assert "Yes-or-no accuracy (outside protocol)" in (tmp / "report" / "report.html").read_text()

    # its options model refuses what it does not declare, before any unit runs
    from pipelines.eval import load_protocol

    with pytest.raises(MedScopeError, match="protocol option 'shade': unknown key for my_outside"):
        load_protocol("myproto:MyProtocol", {"shade": "red"})

    # nothing shipped knows the protocol's name
    found = subprocess.run(["grep", "-rlI", "myproto", "medscope", "pipelines"], cwd=REPO, capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == ""

