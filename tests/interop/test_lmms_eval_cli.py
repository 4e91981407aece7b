"""The exported task run by lmms-eval's own CLI (``--include_path``), its OpenAI-compatible model against a
loopback provider: the requests are MedScope's plain-condition messages, and lmms-eval's numbers are
``medscope score``'s on the same replies, to 1e-12 (docs/interop.md)."""

from __future__ import annotations

import base64
import glob
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from medscope.images import decode_png
from medscope.io import records
from medscope.protocols.counterfactual import prompts
from medscope.protocols.counterfactual.agent_episode import Episode
from medscope.protocols.counterfactual.protocol import CounterfactualProtocol
from medscope.testing.providers import FakeProvider
from pipelines import cli
from tests.interop.test_lmms_import import EXPECTED, HEADLINE, REPLIES, _metrics, _views

pytestmark = [
    pytest.mark.slow,  # one lmms-eval run: its imports take 10-40 s on two busy cores
    pytest.mark.skipif(importlib.util.find_spec("lmms_eval") is None,
                       reason="lmms-eval is not installed (bash cluster/setup-env.sh --dev installs it)"),
]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _lmms_eval_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "lmms-eval")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "lmms_eval"]


def test_lmms_eval_runs_the_task_with_medscopes_messages_and_gives_scores_numbers(tmp_path):
    views_uri = tmp_path / "views.parquet"
    views = _views(views_uri)
    # one question per view, so the loopback provider knows which view a request is about
    rows = [{**r, "question": f"Is there a {r['finding']} in image {i}?"} for i, r in enumerate(views.values())]
    records.write_table("views", rows, str(views_uri))
    reply_of = {r["question"]: REPLIES[r["view_id"]].format(f=r["finding"]) for r in rows}
    task = tmp_path / "task"
    assert cli.main(["export", "lmms-eval", "--items", str(views_uri), "--out", str(task), "--task", "ms_cf"]) == 0

    def respond(text: str, images: int) -> str:
        return next(reply for question, reply in reply_of.items() if text.endswith(question))

    provider = FakeProvider("openai", responder=respond)
    try:
        env = {**os.environ, "PYTHONPATH": REPO, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_HOME": str(tmp_path / "hf_home"), "OPENAI_API_KEY": "loopback"}
        run = subprocess.run(
            [*_lmms_eval_command(), "--model", "openai", "--model_args",
             f"model_version=fake-vlm,base_url={provider.url},api_key=loopback,max_retries=1",
             "--tasks", "ms_cf", "--include_path", str(task), "--log_samples", "--output_path", str(tmp_path / "logs")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=540)
        assert run.returncode == 0, run.stderr[-3000:]
        requests = list(provider.requests)
    finally:
        provider.close()

    # every view asked once, with MedScope's plain-condition messages: system prompt, then image and question
    assert len(requests) == len(rows)
    items = {i.item_id: i for i in CounterfactualProtocol().load_items(str(views_uri))}
    by_question = {r["question"]: r["view_id"] for r in rows}
    for request in requests:
        system, user = request.body["messages"]
        assert system == {"role": "system", "content": [{"type": "text", "text": prompts.system_prompt("plain")}]}
        image, question = user["content"]
        episode = Episode(items[by_question[question["text"]]], "plain")
        sent_png = base64.b64decode(image["image_url"]["url"].split("base64,", 1)[1])
        medscope_png = episode.messages[-1].parts[0].png
        assert np.array_equal(decode_png(sent_png), decode_png(medscope_png))
        assert question["text"] == episode.messages[-1].parts[1].text

    # lmms-eval's aggregation and `medscope score` on the logged replies agree, and both are the hand values
    results = json.loads(open(glob.glob(str(tmp_path / "logs" / "*" / "*_results.json"))[0]).read())["results"]["ms_cf"]
    assert cli.main(["eval", "import", "--from", "lmms-eval", str(tmp_path / "logs"), "--items", str(views_uri),
                     "--out", str(tmp_path / "E")]) == 0
    assert cli.main(["score", "--episodes", str(tmp_path / "E"), "--out", str(tmp_path / "S"), "--n-boot", "20"]) == 0
    scored = _metrics(tmp_path / "S")
    for metric in HEADLINE:
        assert results[f"{metric},none"] == pytest.approx(scored[metric]["value"], abs=1e-12), metric
        assert results[f"{metric},none"] == pytest.approx(EXPECTED[metric], abs=1e-12), metric
    # and the imported run reports: its model under the name lmms-eval logged, ESG as scored
    assert cli.main(["report", "--run", str(tmp_path / "S"), "--out", str(tmp_path / "R")]) == 0
    report = (tmp_path / "R" / "report.md").read_text()
    assert "fake-vlm" in report and f"{EXPECTED['esg']:.3f}" in report
