"""``medscope score`` of benchmark-MCQ runs against the builds' questions (issue 50): a missing
episode or a failed call is a failed unit per model x condition, episodes of questions outside the
builds or of other conditions are excluded with the rule, and the exit code follows eval run's
--max-failed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from medscope.images import encode_png
from medscope.io import layout, records
from medscope.protocols import benchmark_mcq  # noqa: F401 - registers mcq_items and montages
from pipelines import cli

ANSWERS = ("A", "B", "A", "B")  # q0..q3, two options each


def _rows(name: str, n: int, fill) -> list[dict]:
    return [{**dict.fromkeys(records.schema(name).names), **fill(i)} for i in range(n)]


def _build(tmp_path):
    build = layout.BenchgenBuild(str(tmp_path / "build"))
    records.write_part("mcq_items", _rows("mcq_items", 4, lambda i: dict(
        item_id=f"q{i}", case_id=f"c{i % 2}", cohort="x", qtype="rads", subcategory="s", question=f"Q{i}?",
        options=["yes", "no"], answer=ANSWERS[i], k=2, sequences=["t1"], private=False,
        endpoint_allowlist=[])), build.items, "a")
    records.write_part("montages", _rows("montages", 2, lambda i: dict(
        case_id=f"c{i}", sequence="t1", image=encode_png(np.full((4, 4), 20 * i, np.uint8)), height=4,
        width=4, slices=3)), build.montages, "a")
    return build.root


def _episode(model, condition, item, text, error=None):
    return {**dict.fromkeys(records.schema("episodes").names), "run_id": "t", "protocol": "benchmark_mcq",
            "model": model, "condition": condition, "item_id": item, "case_id": "c0", "raw_text": text,
            "request_key": f"{model}|{condition}|{item}", "prompt_version": "v", "decoding": "d", "turns": [],
            "action": "answer", "tool_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
            "latency_s": 0.0, "attempts": 1, "error": error}


def test_a_missing_question_is_a_failed_unit_against_the_builds_questions(tmp_path, capsys):
    """By hand: sighted, m answers q0 A (right), q1 A (wrong), q2 A (right) and has no episode of
    q3; blind, q0..q2 B (1 of 3 right) and q3's call failed. Plus a question not in the build and an "agent"
    episode. 4 questions per condition: sighted 3 scored 1 missing, blind 3 scored 1 missing (also
    excluded as failed_call); 2 missing of 6 + 2 = 8 units. Sighted accuracy 2/3 over the 3
    answered; had q3 counted as answered right it would be 3/4, as wrong 2/4: it is in no n, and the
    exit code says so."""
    build = _build(tmp_path)
    eps = [_episode("m", "sighted", q, "A") for q in ("q0", "q1", "q2")]
    eps += [_episode("m", "blind", q, "B") for q in ("q0", "q1", "q2")]
    eps += [_episode("m", "blind", "q3", None, error="HTTP 500"), _episode("m", "sighted", "q9", "A"),
            _episode("m", "agent", "q0", "A")]
    uri = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", eps, uri)
    args = ["score", "--episodes", uri, "--items", build, "--n-boot", "20", "--n-boot-tests", "20"]
    assert cli.main([*args, "--out", str(tmp_path / "strict")]) == 3
    err = capsys.readouterr().err
    assert "test set mcq: 4 questions" in err
    assert "2 of 8 episodes are missing (m:blind 1 of 4; m:sighted 1 of 4" in err
    cov = json.loads((tmp_path / "strict" / "run.json").read_text())["coverage"]
    assert (cov["questions"], cov["scored"], cov["missing"]) == (4, 6, 2)
    assert cov["excluded_by_rule"] == {"failed_call": 1, "not_in_items": 1, "unknown_condition": 1}
    rows = {r["condition"]: r for r in cov["by_model_condition"]}
    assert set(rows) == {"sighted", "blind"}
    assert [rows["sighted"][k] for k in ("scored", "missing", "excluded", "missing_questions")] == [3, 1, 1, ["q3"]]
    assert [rows["blind"][k] for k in ("scored", "missing", "excluded", "missing_questions")] == [3, 1, 1, ["q3"]]
    rejects = records.read_table("rejects", str(tmp_path / "strict" / "rejects.parquet")).to_pylist()
    assert sorted(r["item_id"] for r in rejects) == ["m/blind/q3", "m/sighted/q3"]
    metrics = records.read_table("metrics", str(tmp_path / "strict" / "metrics.parquet")).to_pandas()
    acc = metrics[(metrics["metric"] == "accuracy") & (metrics["breakdown"] == "qtype=rads")].set_index("condition")
    assert acc.loc["sighted", "value"] == pytest.approx(2 / 3)
    assert acc.loc["blind", "value"] == pytest.approx(1 / 3)
    assert cli.main([*args, "--out", str(tmp_path / "one"), "--max-failed", "1"]) == 3
    assert cli.main([*args, "--out", str(tmp_path / "two"), "--max-failed", "2"]) == 0


def test_a_second_episode_of_a_question_is_excluded_and_the_first_is_scored(tmp_path, capsys):
    """By hand: sighted, m answers q0 A (right), q1 A (wrong), q2 B (wrong), q3 B (right): 2/4;
    then a second episode of q1 answering B (right), which scored too would make 3/5 = 0.6 over 5
    replies. Blind, q0's call fails and its retry answers A (right; not a duplicate: the failed
    call is no answer), q1 B (right), q2 B (wrong), q3 B (right): 3/4. The duplicate is excluded as duplicate_episode
    (1), listed in rejects, and no question is missing."""
    build = _build(tmp_path)
    eps = [_episode("m", "sighted", q, a) for q, a in (("q0", "A"), ("q1", "A"), ("q2", "B"), ("q3", "B"))]
    eps += [_episode("m", "blind", "q0", None, error="HTTP 500")]
    eps += [_episode("m", "blind", q, a) for q, a in (("q0", "A"), ("q1", "B"), ("q2", "B"), ("q3", "B"))]
    eps += [_episode("m", "sighted", "q1", "B")]
    uri = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", eps, uri)
    out = tmp_path / "scored"
    assert cli.main(["score", "--episodes", uri, "--items", build, "--n-boot", "20", "--n-boot-tests", "20",
                     "--out", str(out)]) == 0
    assert "duplicate_episode 1 (a second episode of the same model x condition x item" in capsys.readouterr().err
    cov = json.loads((out / "run.json").read_text())["coverage"]
    assert (cov["questions"], cov["scored"], cov["missing"]) == (4, 8, 0)
    assert cov["excluded_by_rule"] == {"duplicate_episode": 1, "failed_call": 1}
    rows = {r["condition"]: r for r in cov["by_model_condition"]}
    assert [rows["sighted"][k] for k in ("scored", "missing", "excluded")] == [4, 0, 1]
    rejects = records.read_table("rejects", str(out / "rejects.parquet")).to_pylist()
    assert [(r["item_id"], r["reason"]) for r in rejects] == [("m/sighted/q1", "duplicate_episode")]
    scores = records.read_table("mcq_scores", str(out / "mcq_scores.parquet")).to_pylist()
    assert [(r["item_id"], r["chosen"]) for r in scores if r["condition"] == "sighted"] == [
        ("q0", "A"), ("q1", "A"), ("q2", "B"), ("q3", "B")]
    metrics = records.read_table("metrics", str(out / "metrics.parquet")).to_pandas()
    cell = metrics[metrics["breakdown"] == "qtype=rads"].set_index(["condition", "metric"])
    assert cell.loc[("sighted", "accuracy"), "value"] == pytest.approx(2 / 4)
    assert cell.loc[("sighted", "valid"), "value"] == 4
    assert cell.loc[("blind", "accuracy"), "value"] == pytest.approx(3 / 4)
    assert cell.loc[("blind", "valid"), "value"] == 4
