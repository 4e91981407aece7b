"""The reading path: recorded per episode through a real provider adapter, written
to the episodes table, counted by ``eval show``; older tables without the column still read."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from medscope.io import records
from medscope.protocols.counterfactual.agent_episode import run_episode
from medscope.images import encode_png
from medscope.models.base import Decoding
from medscope.models.config import ModelEntry
from medscope.models.guarded import GuardedModel
from medscope.models.registry import build_model
from medscope.protocols.base import Item
from medscope.protocols.counterfactual.protocol import CounterfactualProtocol
from medscope.testing import providers as fp
from pipelines.eval import show
from pipelines.support.actors import episode_row

KEY = "reading-path-key"
REPLIES = [
    ('Looked. <final>{"action": "answer", "answer": "No pneumothorax is seen."}</final>', "format", False),
    ('{"action": "answer", "answer": "Yes, small apical pneumothorax"}', "json", True),
    ("There doesn't appear to be a pneumothorax.", "rules", False),
    ("I considered a pneumothorax.\nFinal answer: yes", "rules", True),
    ('<final>{"action": "refer", "reason": "cannot decide"}</final>', "format", None),
]


def test_reading_recorded_written_and_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_READING_KEY", KEY)
    srv = fp.FakeProvider("openai", expected_key=KEY)
    try:
        srv.push(*(fp.answer(text) for text, _, _ in REPLIES))
        entry = ModelEntry(name="m", kind="openai", model="fake", base_url=srv.url,
                           api_key_env="MEDSCOPE_READING_KEY", timeout_s=2.0)
        guarded = GuardedModel(build_model(entry))
        protocol = CounterfactualProtocol()
        png = encode_png(np.full((64, 64), 90, dtype=np.uint8))
        rows = []
        for i, (_, reading, claim) in enumerate(REPLIES):
            item = Item(item_id=f"v{i}", case_id=f"c{i}", question="Is there a pneumothorax?", truth="absent",
                        images=(png,), meta={"finding": "pneumothorax", "question_kind": "presence"})
            result = run_episode(item, guarded, "agent", Decoding(max_output_tokens=64))
            assert (result.reading, result.claims_finding) == (reading, claim)
            rows.append(episode_row({"condition": "agent", "key": f"k{i}"}, item, entry, result, guarded,
                                    0.01, None, "run1", protocol))
    finally:
        srv.close()
    records.write_part("episodes", rows, str(tmp_path / "episodes"), "0")
    table = records.read_table("episodes", str(tmp_path / "episodes"))
    assert table.column("reading").to_pylist() == [r for _, r, _ in REPLIES]
    (shown,) = show(str(tmp_path))
    assert shown["read_by"] == "format=2 json=1 rules=2"


def test_table_written_before_the_column_reads_as_null(tmp_path):
    row = {f.name: None for f in records.schema("episodes")}
    row.update(run_id="r", protocol="counterfactual", model="m", condition="agent", item_id="v", case_id="c",
               request_key="k", prompt_version="p", decoding="d", action="answer", tool_calls=0,
               input_tokens=1, output_tokens=1, cost_usd=0.0, latency_s=0.1, attempts=1)
    old = records.to_table("episodes", [row]).drop_columns(["reading"])
    (tmp_path / "episodes").mkdir()
    pq.write_table(old, tmp_path / "episodes" / "part-0.parquet")
    table = records.read_table("episodes", str(tmp_path / "episodes"))
    assert table.column("reading").to_pylist() == [None]
    assert table.column("reading").type == pa.string()
    assert records.read_table("episodes", str(tmp_path / "episodes"), columns=["item_id", "reading"]).num_rows == 1


def test_report_counts_reading_paths(tmp_path):
    from medscope.protocols.counterfactual.report import _reading_blocks

    base = {f.name: None for f in records.schema("episodes")}
    base.update(run_id="r", protocol="counterfactual", condition="plain", case_id="c", request_key="k",
                prompt_version="p", decoding="d", action="answer", tool_calls=0, input_tokens=1, output_tokens=1,
                cost_usd=0.0, latency_s=0.1, attempts=1)
    readings = {"a": ["format", "format", "rules", None], "b": ["json", "rules", "rules", "judge"]}
    rows = [{**base, "model": m, "item_id": f"v{i}", "reading": r} for m, rs in readings.items() for i, r in enumerate(rs)]
    rows[2]["action"] = "unclear"  # model a's rules-read reply: the reader did not commit
    records.write_table("episodes", rows, str(tmp_path / "episodes.parquet"))
    table = _reading_blocks({"episodes": str(tmp_path / "episodes.parquet")})[0]
    assert table.headers == ["model", "condition", "episodes", "format", "json", "rules", "judge", "not recorded",
                             "unclear"]
    assert table.rows == [["a", "plain", "4", "2", "0", "1", "0", "1", "1 of 4 (25.0%)"],
                          ["b", "plain", "4", "0", "1", "2", "1", "0", "0 of 4 (0.0%)"]]
