"""``medscope eval import --from lmms-eval``: logged samples become an eval run that ``score`` takes, and the
exported task's aggregation gives ``score``'s numbers (docs/interop.md). The logs are written here in
lmms-eval's format, so these tests need no lmms-eval; tests/interop/test_lmms_eval_cli.py runs its CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from medscope.images import encode_png
from medscope.io import records
from medscope.testing import synthetic_runs
from pipelines import cli

pytest.importorskip("datasets", reason="the interop extra (pip install medscope[interop])")

HEADLINE = ("esg", "ccr", "erased_claims", "healthy_claims", "net_utility")
# Replies per view (3 lesion cases x O, T, R; L0000's degraded view; 2 lesion-free cases).
REPLIES = {
    "L0000/original": "Yes, there is a {f}.", "L0001/original": "Yes.", "L0002/original": "Yes.",
    "L0000/target_removal": "No, there is no {f}.", "L0001/target_removal": '<final>{{"action": "refer"}}</final>',
    "L0002/target_removal": "Yes.",
    "L0000/random_removal": "Yes.", "L0001/random_removal": "Yes.", "L0002/random_removal": "No.",
    "L0000/degraded": '<final>{{"action": "clarify"}}</final>',
    "N0000/natural_negative": "No.", "N0001/natural_negative": "Yes.",
}
# By hand under Table 2 (no critical views, no boxes, no tool calls):
# ESG = P(absent or refer | T) - P(absent or refer | R) = 2/3 - 1/3; CCR = correct over O u R = 5/6;
# erased claims = P(claims | T) = 1/3; healthy claims = P(claims | N) = 1/2;
# net utility = (O 1+1+1, T 1+0.5-2, R 1+1-2, D clarify 0.5, N 1-2) / 12 = 2/12.
EXPECTED = {"esg": 1 / 3, "ccr": 5 / 6, "erased_claims": 1 / 3, "healthy_claims": 1 / 2, "net_utility": 2 / 12}


def _views(path):
    kinds = ("original", "target_removal", "random_removal", "natural_negative", "degraded")
    images = {k: encode_png(np.full((24, 32), 40 + 30 * i, np.uint8)) for i, k in enumerate(kinds)}
    table = synthetic_runs.views(n_lesion=3, n_negative=2, n_degraded=1, width=32, height=24, images=images)
    rows = [{**r, "critical": False} for r in table.to_pylist()]
    records.write_table("views", rows, str(path))
    return {r["view_id"]: r for r in rows}


def _sample(doc_id, view_id, reply, logged_reading=True):
    """One line as lmms-eval 0.7's --log_samples writes it for a MedScope task."""
    line = {"doc_id": doc_id, "target": view_id, "filtered_resps": reply,
            "token_counts": [{"input_tokens": 100 + doc_id, "output_tokens": 3, "reasoning_tokens": 0}],
            "input": "question"}
    if logged_reading:
        line["esg"] = {"item_id": view_id, "action": "answer"}
    return line


def _logs(folder, views, extra=()):
    run = folder / "fake-vlm"
    run.mkdir(parents=True)
    lines = [_sample(i, v, REPLIES[v].format(f=views[v]["finding"]), logged_reading=i % 2 == 0)
             for i, v in enumerate(REPLIES)]
    with open(run / "20261205_000000_samples_medscope_counterfactual.jsonl", "w") as fh:
        for line in [*lines, *extra]:
            fh.write(json.dumps(line) + "\n")
    (run / "20261205_000000_results.json").write_text(json.dumps(
        {"model_name": "openai", "config": {"model": "openai", "model_args": "model_version=fake-vlm,base_url=x"}}))
    return folder


def _metrics(scored):
    table = records.read_table("metrics", str(scored)).to_pylist()
    return {r["metric"]: r for r in table if r["breakdown"] == "all"}


def test_logged_replies_become_an_eval_run_that_scores_as_worked_out_by_hand(tmp_path, capsys):
    views = _views(tmp_path / "views.parquet")
    logs = _logs(tmp_path / "logs", views, extra=[
        _sample(90, "L0000/original", "No."),  # a second reply to a view: the first is kept
        _sample(91, "X9999/original", "Yes."),  # a view the items do not hold
        {"doc_id": 92, "filtered_resps": "Yes."},  # no view id at all
    ])
    eval_run = tmp_path / "E"
    assert cli.main(["eval", "import", "--from", "lmms-eval", str(logs), "--items", str(tmp_path / "views.parquet"),
                     "--out", str(eval_run)]) == 0
    summary = json.loads((eval_run / "sweep.json").read_text())
    assert summary["done"] == 12 and summary["rejected"] == 3
    assert summary["rejects_by_reason"] == {"duplicate_reply": 1, "item_not_in_items": 1, "no_item_id": 1}
    episodes = records.read_table("episodes", str(eval_run)).to_pylist()
    assert {e["model"] for e in episodes} == {"fake-vlm"} and {e["condition"] for e in episodes} == {"plain"}
    first = next(e for e in episodes if e["item_id"] == "L0000/original")
    assert first["claims_finding"] is True and first["input_tokens"] == 100  # the first reply, its tokens
    refer = next(e for e in episodes if e["item_id"] == "L0001/target_removal")
    assert (refer["action"], refer["reading"]) == ("refer", "format")

    scored = tmp_path / "S"
    capsys.readouterr()
    assert cli.main(["score", "--episodes", str(eval_run), "--out", str(scored), "--n-boot", "50"]) == 0
    got = _metrics(scored)
    for metric, value in EXPECTED.items():
        assert got[metric]["value"] == pytest.approx(value, abs=1e-12), metric
    assert got["healthy_claims"]["n_cases"] == 2 and got["net_utility"]["n_cases"] == 5


def test_the_exported_tasks_aggregation_gives_scores_numbers(tmp_path):
    """The hooks an lmms-eval run calls (process_results per doc, then each metric's aggregation), fed the
    same replies, give what ``medscope score`` gives, to 1e-12."""
    import importlib.util

    views = _views(tmp_path / "views.parquet")
    task = tmp_path / "task"
    assert cli.main(["export", "lmms-eval", "--items", str(tmp_path / "views.parquet"), "--out", str(task)]) == 0
    spec = importlib.util.spec_from_file_location("medscope_task_utils", task / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    per_metric = {m: [] for m in HEADLINE}
    for view_id, reply in REPLIES.items():
        doc = {k: v for k, v in views[view_id].items() if k != "image"}  # lmms-eval's docs without media
        for metric, value in utils.process_results(doc, [reply.format(f=views[view_id]["finding"])]).items():
            per_metric[metric].append(json.loads(json.dumps(value)))  # as logged: JSON values
    got = {m: getattr(utils, f"aggregate_{m}")(per_metric[m]) for m in HEADLINE}
    for metric, value in EXPECTED.items():
        assert got[metric] == pytest.approx(value, abs=1e-12), metric
    assert not any(math.isnan(v) for v in got.values())


def test_private_views_do_not_become_an_lmms_eval_task_unless_allowed(tmp_path, capsys):
    from medscope.testing.views import write_views

    uri = write_views(str(tmp_path / "views.parquet"), 4, private_every=2)  # v000 and v002 private
    assert cli.main(["export", "lmms-eval", "--items", uri, "--out", str(tmp_path / "t")]) == 2
    assert "2 of 4 views are private" in capsys.readouterr().err
    assert not (tmp_path / "t" / "utils.py").exists()
    assert cli.main(["export", "lmms-eval", "--items", uri, "--out", str(tmp_path / "t2"), "--allow-private"]) == 0
    assert records.read_table("views", str(tmp_path / "t2" / "views.parquet")).num_rows == 4
