"""The optional judge reading: a judge model behind a real loopback provider reads
free-text replies beside the rules; agreement per model, flips, the cache, privacy."""

from __future__ import annotations

import json
import re

import yaml

from medscope.io import records
from medscope.answers.judge import agreement_by_model, judge_prompt, read_judgement, rubric
from medscope.testing import providers as fp
from medscope.testing.views import write_views
from pipelines.cli import main as cli

KEY = "judge-test-key"
# reply -> what the scripted judge answers (a careful reader's decision, except where noted)
JUDGE_SAYS = {
    "There doesn't appear to be a nodule.": "deny",
    "Possible nodule in the right apex.": "claim",
    "I considered a nodule.\nFinal answer: no": "deny",
    "Too blurry to tell.": "clarify",
    "A nodule is seen.": "deny",  # the judge disagrees: a claim/denial flip
    "Hmm.": None,  # the judge's reply is unreadable
    "A private nodule reply.": "claim",  # never asked: its item is private
    "A nodule. No nodule.": "refer",  # the rules read it as unclear
}


def _judge(text: str, images: int) -> str:
    reply = re.search(r"<<<\n(.*)\n>>>", text, re.S).group(1)
    decision = JUDGE_SAYS[reply]
    if decision is None:
        return "I am not sure how to answer."
    return f'Evidence first. {{"evidence": "{reply[:10]}", "decision": "{decision}"}}'


def _episode(model, view_id, reply, action, claim, reading="rules"):
    row = {f.name: None for f in records.schema("episodes")}
    row.update(run_id="r", protocol="counterfactual", model=model, condition="plain", item_id=view_id,
               case_id="c", request_key=f"{model}-{view_id}", prompt_version="p", decoding="d", raw_text=reply,
               action=action, claims_finding=claim, tool_calls=0, input_tokens=1, output_tokens=1, cost_usd=0.0,
               latency_s=0.1, attempts=1, reading=reading)
    return row


def test_judge_replies_agreement_cache_and_privacy(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_JUDGE_KEY", KEY)
    views = write_views(str(tmp_path / "views.parquet"), 6, private_every=5)  # v000 and v005 are private
    episodes = [
        _episode("a", "v000", "A private nodule reply.", "answer", True),  # private: never sent to the judge
        _episode("a", "v001", "There doesn't appear to be a nodule.", "answer", False),
        _episode("a", "v002", "Possible nodule in the right apex.", "answer", True),
        _episode("a", "v003", "A nodule is seen.", "answer", True),
        _episode("b", "v001", "I considered a nodule.\nFinal answer: no", "answer", False),
        _episode("b", "v002", "Too blurry to tell.", "clarify", None),
        _episode("b", "v003", "Hmm.", "unparseable", None),
        _episode("b", "v004", '<final>{"action": "answer", "answer": "Yes"}</final>', "answer", True, "format"),
    ]
    records.write_part("episodes", episodes, str(tmp_path / "episodes"), "0")
    srv = fp.FakeProvider("openai", responder=_judge, expected_key=KEY)
    try:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [{"name": "judge", "kind": "openai", "model": "fake-judge",
                                                       "base_url": srv.url, "api_key_env": "MEDSCOPE_JUDGE_KEY",
                                                       "timeout_s": 5.0}]}))
        args = ["judge-replies", "--episodes", str(tmp_path / "episodes"), "--items", views, "--models", str(models),
                "--judge", "judge", "--out", str(tmp_path / "out"), "--workers", "2"]
        # one reply the judge could not read (failed) and one private reply withheld (refused): exit 3
        assert cli(args) == 3
        assert len(srv.requests) == 6  # 7 free-text replies, one private; the <final> reply is not judged
        assert not any("A private nodule reply." in r.text for r in srv.requests)
        summary = json.loads((tmp_path / "out" / "reply_judge.json").read_text())
        assert summary["withheld_private"] == 1 and summary["asked"] == 6 and summary["rubric"] == rubric()["version"]
        acc = summary["accounting"]
        assert (acc["done"], acc["failed"], acc["refused"]) == (5, 1, 1)
        assert acc["refused_endpoints"][0]["endpoint"] == srv.url
        by = {m["model"]: m for m in summary["per_model"]}
        # model a: deny/deny, claim/claim, claim/deny (flip) -> 2 of 3 agree, 1 flip
        assert (by["a"]["agree"], by["a"]["replies"], by["a"]["flips"]) == (2, 3, 1)
        # model b: deny/deny, clarify/clarify, judge unreadable -> 2 of 2 read agree, 1 failure
        assert (by["b"]["agree"], by["b"]["judge_failed"], by["b"]["flips"]) == (2, 1, 0)
        table = records.read_table("reply_judgements", str(tmp_path / "out" / "reply_judgements.parquet")).to_pylist()
        assert sorted((r["model"], r["item_id"], r["rules_decision"], r["judge_decision"]) for r in table) == [
            ("a", "v001", "deny", "deny"), ("a", "v002", "claim", "claim"), ("a", "v003", "claim", "deny"),
            ("b", "v001", "deny", "deny"), ("b", "v002", "clarify", "clarify"), ("b", "v003", "unparseable", None)]
        # a rerun asks nothing: every judgement comes from the cache; it can also write the
        # episodes under the judge reading
        assert cli(args + ["--write-episodes", str(tmp_path / "judged"), "--max-failed", "2"]) == 0
        judged = {(r["model"], r["item_id"]): r for r in
                  records.read_table("episodes", str(tmp_path / "judged")).to_pylist()}
        assert len(judged) == 8
        assert (judged[("a", "v003")]["action"], judged[("a", "v003")]["claims_finding"],
                judged[("a", "v003")]["reading"]) == ("answer", False, "judge")
        assert (judged[("b", "v002")]["action"], judged[("b", "v002")]["reading"]) == ("clarify", "judge")
        assert judged[("b", "v003")]["reading"] == "rules"  # the judge could not read it: rules kept
        assert judged[("a", "v000")]["reading"] == "rules"  # private, never judged
        assert judged[("b", "v004")]["reading"] == "format"
        assert len(srv.requests) == 6
        assert json.loads((tmp_path / "out" / "reply_judge.json").read_text())["cached"] == 6
    finally:
        srv.close()


def test_only_the_unclear_replies_are_judged_beside_the_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_JUDGE_KEY", KEY)
    views = write_views(str(tmp_path / "views.parquet"), 4)
    episodes = [_episode("a", "v001", "A nodule is seen.", "answer", True),
                _episode("a", "v002", "A nodule. No nodule.", "unclear", None)]
    records.write_part("episodes", episodes, str(tmp_path / "episodes"), "0")
    srv = fp.FakeProvider("openai", responder=_judge, expected_key=KEY)
    try:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [{"name": "judge", "kind": "openai", "model": "fake-judge",
                                                       "base_url": srv.url, "api_key_env": "MEDSCOPE_JUDGE_KEY",
                                                       "timeout_s": 5.0}]}))
        assert cli(["judge-replies", "--episodes", str(tmp_path / "episodes"), "--items", views, "--models",
                    str(models), "--judge", "judge", "--out", str(tmp_path / "out"), "--only-unclear"]) == 0
        assert len(srv.requests) == 1
        table = records.read_table("reply_judgements", str(tmp_path / "out" / "reply_judgements.parquet")).to_pylist()
        assert [(r["item_id"], r["rules_decision"], r["judge_decision"]) for r in table] == [("v002", "unclear", "refer")]
    finally:
        srv.close()


def test_prompt_states_question_polarity_and_reply():
    p = judge_prompt("Yes.", "Is this image healthy?", "liver lesion", "health")
    assert "NOT there" in p and "<<<\nYes.\n>>>" in p and "Asked finding: liver lesion" in p


def test_read_judgement_takes_first_known_decision():
    assert read_judgement('{"decision": "maybe"} {"evidence": "x", "decision": "Refer"}').decision == "refer"
    assert read_judgement("no json here").decision is None


def test_agreement_by_model_counts_by_hand():
    rows = [{"model": "m", "rules": "claim", "judge": "claim"}, {"model": "m", "rules": "deny", "judge": "claim"},
            {"model": "m", "rules": "refer", "judge": "deny"}, {"model": "m", "rules": "deny", "judge": None}]
    (m,) = agreement_by_model(rows)
    assert (m["replies"], m["judge_failed"], m["agree"], m["flips"]) == (4, 1, 1, 1)
    assert abs(m["agreement"] - 1 / 3) < 1e-12
