"""The standard-VQA protocol (counterfactual paper §5.6, Table 16): its answer rules by hand, and two constant
policies plus the tiny VLM through the shared Ray sweep on VQA-RAD / SLAKE / PathVQA-layout fixtures."""

import json

import pytest

from tests.fixtures.release_layouts import write_slake
from tests.fixtures.vqa_layouts import write_pathvqa, write_vqa_rad
from medscope import cohorts, protocols
from medscope.io import records
from medscope.models.config import ModelEntry
from medscope.models.tiny_vlm import save_tiny_qwen2vl
from medscope.protocols.standard_vqa.report import table16
from medscope.protocols.standard_vqa.scoring import read_answer
from medscope.protocols.standard_vqa.scoring import closed_correct, token_recall, vqa_metrics
from pipelines.eval import EvalConfig, run_sweep


@pytest.mark.parametrize("reply,answer,want", [
    ("Yes, there is a mass.", "yes", True),
    ("No.", "Yes", False),
    ("I see no effusion; yes it is normal", "no", True),  # first yes/no word decides
    ("MRI, axial T2", "MRI", True),
    ("left or right", "Left", False),  # the answer somewhere in the reply is not enough
    ("The CT", "ct", True),  # articles and case ignored
])
def test_closed_rule(reply, answer, want):
    assert closed_correct(reply, answer) is want


def test_open_recall_and_reply_reading():
    assert token_recall("The liver and the spleen", "liver, spleen") == 1.0
    assert token_recall("liver", "liver, spleen") == 0.5
    assert token_recall("", "liver") == 0.0
    assert read_answer('Looks fine. <final>{"action": "answer", "answer": "No"}</final>') == "No"
    assert read_answer("<think>hmm</think> Liver") == "Liver"
    assert read_answer("") is None


def test_metrics_cluster_by_image():
    rows = [dict(model="m", condition="plain", source="s", answer_type=t, correct=c, token_recall=r, case_id=k)
            for t, c, r, k in [("closed", True, None, "a"), ("closed", False, None, "a"),
                               ("closed", True, None, "b"), ("open", False, 0.5, "b")]]
    got = {r["metric"]: r for r in vqa_metrics(rows, n_boot=200)}
    assert got["accuracy_closed"]["value"] == pytest.approx(2 / 3) and got["accuracy_closed"]["n_cases"] == 2
    assert got["accuracy_open"]["value"] == 0.0 and got["accuracy_all"]["value"] == pytest.approx(0.5)
    assert got["open_token_recall"]["value"] == 0.5
    assert got["accuracy_closed"]["ci_low"] <= 2 / 3 <= got["accuracy_closed"]["ci_high"]


def _items(tmp_path):
    uris = []
    for fmt, writer in (("vqa-rad", write_vqa_rad), ("slake-vqa", write_slake), ("pathvqa", write_pathvqa)):
        writer(tmp_path / fmt)
        table, _ = cohorts.load(fmt, str(tmp_path / fmt))
        uri = str(tmp_path / f"{fmt}.parquet")
        records.write_table("vqa_items", table, uri)
        uris.append(uri)
    return ",".join(uris)


# Worked out from the fixtures' test questions (the constant policies answer "Yes" / "No" to a
# yes/no-style question and "Abnormality present" / "No abnormality" to an open one):
# VQA-RAD test: open "2", closed "yes"; SLAKE test: closed "Yes", open "Liver", closed "yes";
# PathVQA test: closed "yes", open "fibrosis", closed "No". (closed, open, all) accuracy:
EXPECTED = {
    "always-yes": {"vqa-rad": (1.0, 0.0, 0.5), "slake": (1.0, 0.0, 2 / 3), "pathvqa": (0.5, 0.0, 1 / 3)},
    "always-no": {"vqa-rad": (0.0, 0.0, 0.0), "slake": (0.0, 0.0, 0.0), "pathvqa": (0.5, 0.0, 1 / 3)},
}


@pytest.mark.slow
def test_policies_and_tiny_vlm_through_the_sweep(ray_cluster, tmp_path):
    items = _items(tmp_path)
    protocol = protocols.load("standard_vqa")
    assert len(protocol.load_items(items)) == 8  # the test splits: 2 + 3 + 3
    tiny = save_tiny_qwen2vl(tmp_path / "tiny", seed=0)
    models = [ModelEntry(name="always-yes", kind="policy", model="always-claims"),
              ModelEntry(name="always-no", kind="policy", model="always-absent"),
              ModelEntry(name="tiny", kind="local_hf", model=str(tiny), max_output_tokens=8, temperature=0.0,
                         placement="pool")]
    cfg = EvalConfig(views=items, models="unused.yaml", out=str(tmp_path / "eval"), conditions=["plain"], workers=1,
                     protocol="medscope.protocols.standard_vqa.protocol:StandardVQAProtocol")
    summary = run_sweep(cfg, protocol, models)
    assert summary["done"] == 24
    out = str(tmp_path / "scored")
    s = protocols.load("standard_vqa", {"n_boot": 200}).score(str(tmp_path / "eval" / "episodes"), items, out)
    assert s["scored"] == 24 and s["skipped"] == 0
    metrics = records.read_table("metrics", out + "/metrics.parquet").to_pylist()
    got = {(r["model"], r["breakdown"][len("source="):], r["metric"]): r["value"] for r in metrics}
    for model, by_source in EXPECTED.items():
        for source, (closed, open_, all_) in by_source.items():
            assert got[(model, source, "accuracy_closed")] == pytest.approx(closed), (model, source)
            assert got[(model, source, "accuracy_open")] == pytest.approx(open_), (model, source)
            assert got[(model, source, "accuracy_all")] == pytest.approx(all_), (model, source)
    scores = records.read_table("vqa_scores", out + "/vqa_scores.parquet").to_pylist()
    tiny_rows = [r for r in scores if r["model"] == "tiny"]
    assert len(tiny_rows) == 8
    for r in tiny_rows:  # the tiny VLM's random text is scored by the same rules, re-derived here
        want = closed_correct(r["reply"] or "", r["answer"]) if r["answer_type"] == "closed" else \
            token_recall(r["reply"] or "", r["answer"]) == 1.0
        assert r["correct"] is want
    table = table16(metrics)
    assert table.headers[0] == "model" and len(table.rows) == 3
    assert table.rows[0][0] == "always-no (plain)" and table.rows[0][1:] == ["0.500 / 0.000 / 0.333",
                                                                              "0.000 / 0.000 / 0.000",
                                                                              "0.000 / 0.000 / 0.000"]
    sections, _ = protocol.report_sections(out, str(tmp_path))
    title, blocks = sections[0].title, sections[0].blocks
    assert title.startswith("Standard medical VQA") and blocks[0].rows == table.rows


def test_score_counts_every_question_of_the_test_split_against_the_fixed_denominator(tmp_path, capsys):
    """Issue 50: the test set is drawn again from the tables (VQA-RAD's fixture: 2 test questions,
    closed "yes" and open "2", and 1 train question). By hand: model a answers the closed one
    "Yes" and has no episode of the open one; model b answers both "yes", its open call failed
    (no reply); both answer the train question (excluded: outside_test_set), a asks one no table
    holds (not_in_items) and one under another condition (unknown_condition). 2 missing of 2 + 2
    = 4 units: exit 3. a's accuracy is 1/1 over what it answered -- with its missing open question
    counted wrong it would be 1/2 -- so the missing one must stop score, and does."""
    from pipelines import cli
    from medscope.io import storage

    write_vqa_rad(tmp_path / "vqa-rad")
    table, _ = cohorts.load("vqa-rad", str(tmp_path / "vqa-rad"))
    items = str(tmp_path / "vqa.parquet")
    records.write_table("vqa_items", table, items)
    ids = {r["answer"]: r["item_id"] for r in table.select(["item_id", "answer"]).to_pylist()}
    closed, open_, train = ids["yes"], ids["2"], ids["No"]
    base = {**dict.fromkeys(records.schema("episodes").names), "run_id": "t", "protocol": "standard_vqa",
            "case_id": "c", "prompt_version": "svqa-v1", "decoding": "d", "turns": [], "action": "answer",
            "tool_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1}
    plan = [("a", "plain", closed, "Yes"), ("a", "plain", train, "No"), ("a", "plain", "nowhere", "yes"),
            ("a", "agent", closed, "Yes"), ("b", "plain", closed, "yes"), ("b", "plain", open_, None),
            ("b", "plain", train, "No")]
    eps = [dict(base, model=m, condition=c, item_id=i, raw_text=t, request_key=f"{m}|{c}|{i}",
                error="HTTP 500" if t is None else None) for m, c, i, t in plan]
    uri = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", eps, uri)
    args = ["score", "--episodes", uri, "--items", items, "--protocol", "standard_vqa", "--n-boot", "20"]
    assert cli.main([*args, "--out", str(tmp_path / "strict")]) == 3
    err = capsys.readouterr().err
    assert "test set standard_vqa: 2 questions" in err
    assert "2 of 4 episodes are missing (a:plain 1 of 2; b:plain 1 of 2" in err
    run = json.loads(storage.read_utf8(str(tmp_path / "strict" / "run.json")))
    cov = run["coverage"]
    assert cov["excluded_by_rule"] == {"failed_call": 1, "not_in_items": 1, "outside_test_set": 2,
                                       "unknown_condition": 1}
    rows = {r["model"]: r for r in cov["by_model_condition"]}
    assert [rows["a"][k] for k in ("scored", "missing", "excluded", "missing_questions")] == [1, 1, 2, [open_]]
    assert [rows["b"][k] for k in ("scored", "missing", "excluded", "missing_questions")] == [1, 1, 2, [open_]]
    assert run["scored"] == 2
    metrics = records.read_table("metrics", str(tmp_path / "strict" / "metrics.parquet")).to_pylist()
    acc = {(r["model"], r["metric"]): r for r in metrics if r["breakdown"] == "source=vqa-rad"}
    assert (acc[("a", "accuracy_all")]["value"], acc[("a", "accuracy_all")]["n_cases"]) == (1.0, 1)
    assert cli.main([*args, "--out", str(tmp_path / "ok"), "--max-failed", "2"]) == 0


def test_score_excludes_a_second_episode_of_a_question_and_scores_the_first(tmp_path, capsys):
    """Issue 50: VQA-RAD's fixture has 2 test questions, closed "yes" and open "2". By hand: model a
    answers the closed one "No" (wrong) and the open one "2" (right): accuracy_all 1/2. A second
    episode of the closed question answering "Yes" would, scored too, make 2/3; it is excluded as
    duplicate_episode and listed in rejects; both questions stay scored once (exit 0)."""
    from pipelines import cli
    from medscope.io import storage

    write_vqa_rad(tmp_path / "vqa-rad")
    table, _ = cohorts.load("vqa-rad", str(tmp_path / "vqa-rad"))
    items = str(tmp_path / "vqa.parquet")
    records.write_table("vqa_items", table, items)
    ids = {r["answer"]: r["item_id"] for r in table.select(["item_id", "answer"]).to_pylist()}
    closed, open_ = ids["yes"], ids["2"]
    base = {**dict.fromkeys(records.schema("episodes").names), "run_id": "t", "protocol": "standard_vqa",
            "case_id": "c", "prompt_version": "svqa-v1", "decoding": "d", "turns": [], "action": "answer",
            "tool_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1}
    plan = [(closed, "No"), (open_, "2"), (closed, "Yes")]
    eps = [dict(base, model="a", condition="plain", item_id=i, raw_text=t, request_key=f"a|{i}|{k}")
           for k, (i, t) in enumerate(plan)]
    uri = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", eps, uri)
    out = tmp_path / "scored"
    assert cli.main(["score", "--episodes", uri, "--items", items, "--protocol", "standard_vqa", "--n-boot", "20",
                     "--out", str(out)]) == 0
    assert "duplicate_episode 1" in capsys.readouterr().err
    run = json.loads(storage.read_utf8(str(out / "run.json")))
    assert run["coverage"]["excluded_by_rule"] == {"duplicate_episode": 1}
    assert [run["coverage"]["by_model_condition"][0][k] for k in ("scored", "missing", "excluded")] == [2, 0, 1]
    assert run["scored"] == 2
    rejects = records.read_table("rejects", str(out / "rejects.parquet")).to_pylist()
    assert [(r["item_id"], r["reason"]) for r in rejects] == [(f"a/plain/{closed}", "duplicate_episode")]
    metrics = records.read_table("metrics", str(out / "metrics.parquet")).to_pylist()
    acc = {r["metric"]: r for r in metrics if r["model"] == "a" and r["breakdown"] == "source=vqa-rad"}
    assert (acc["accuracy_all"]["value"], acc["accuracy_closed"]["value"]) == (0.5, 0.0)
    assert acc["accuracy_all"]["n_cases"] == 2
