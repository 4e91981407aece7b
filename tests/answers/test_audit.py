"""The reading check on a run's own replies (medscope.answers.audit): the stratified sample, the
blinded labelling page, and agreement / kappa / flips against the labels, worked by hand."""

from __future__ import annotations

import json
import math
import re

import pytest

from medscope.answers import audit as aud
from medscope.answers.decisions import ReplyReading
from medscope.errors import MedScopeError
from medscope.testing.scripted_labeller import intended_decision, scripted_labels


def _rows(spec: dict) -> list[dict]:
    """Reply rows of (model, condition) -> {decision: count}; replies name their index."""
    rows = []
    for (model, condition), decisions in spec.items():
        i = 0
        for decision, count in decisions.items():
            for _ in range(count):
                rows.append({"protocol": "counterfactual", "model": model, "condition": condition,
                             "item_id": f"v{i:03d}", "question": "Is there a polyp?", "finding": "polyp",
                             "question_kind": "presence", "reply": f"reply number {len(rows)}",
                             "reading": {"decision": decision, "rule": f"rule-{decision}", "evidence": "e"}})
                i += 1
    return rows


RUN = {("model-a", "agent"): {"claim": 40, "deny": 30, "unclear": 1},
       ("model-a", "blind"): {"refer": 50},
       ("model-b", "agent"): {"claim": 20, "deny": 55, "clarify": 2},
       ("model-b", "blind"): {"deny": 60, "unparseable": 3}}


def test_the_sample_draws_from_every_model_condition_and_every_decision_rare_ones_first():
    rows = _rows(RUN)
    sample, strata = aud.stratified_sample(rows, 20, seed=3)
    assert len(sample) == 20 and len({r["sample_id"] for r in sample}) == 20
    got = {(r["model"], r["condition"], r["reading"]["decision"]) for r in sample}
    assert {(m, c) for m, c, _ in got} == set(RUN)  # every model x condition
    assert {d for *_, d in got} == {"claim", "deny", "unclear", "refer", "clarify", "unparseable"}
    assert len(got) == len(strata) == 9  # every stratum, the single unclear reply included
    # round 3: 20 - 9 = 11 slots in proportion to what is left (largest remainder): 39 29 49 19 54 1 59 2
    # of 252 left -> quotas 1.70 1.27 2.14 0.83 2.36 0.04 2.58 0.09 -> 1 1 2 0 2 0 2 0 (+ 3 by remainder:
    # 0.83, 0.70, 0.58 -> model-b/agent/claim, model-a/agent/claim, model-b/blind/deny)
    drawn = {(s["model"], s["condition"], s["decision"]): s["drawn"] for s in strata}
    assert drawn == {("model-a", "agent", "claim"): 3, ("model-a", "agent", "deny"): 2,
                     ("model-a", "agent", "unclear"): 1, ("model-a", "blind", "refer"): 3,
                     ("model-b", "agent", "claim"): 2, ("model-b", "agent", "clarify"): 1,
                     ("model-b", "agent", "deny"): 3, ("model-b", "blind", "deny"): 4,
                     ("model-b", "blind", "unparseable"): 1}
    for r in sample:  # each row knows its stratum's size and draw, for a weighted estimate
        key = tuple(r["stratum"].split("|"))
        assert (r["stratum_size"], r["stratum_drawn"]) == (len([x for x in rows if (x["model"], x["condition"],
                                                               x["reading"]["decision"]) == key]), drawn[key])
    # the same run and seed: the same sample; another seed: other replies
    assert aud.stratified_sample(rows, 20, seed=3)[0] == sample
    assert {r["item_id"] for r in aud.stratified_sample(rows, 20, seed=4)[0]} != {r["item_id"] for r in sample}
    # fewer slots than strata: one per model x condition (its rarest decision), then rare decisions first
    small, _ = aud.stratified_sample(rows, 6, seed=0)
    assert {(r["model"], r["condition"]) for r in small} == set(RUN)
    assert {r["reading"]["decision"] for r in small} == {"unclear", "refer", "clarify", "unparseable", "claim"}
    assert len(aud.stratified_sample(rows, 10_000)[0]) == len(rows)  # the whole run when it is smaller


def test_a_sample_smaller_than_the_cells_is_refused():
    with pytest.raises(MedScopeError, match="fewer than the run's 4 model x condition cells"):
        aud.stratified_sample(_rows(RUN), 3)


def _page_data(page: str) -> dict:
    text = re.search(r'<script type="application/json" id="sample-data">(.*?)</script>', page, re.S).group(1)
    return json.loads(text.replace("<\\/", "</"))


def test_the_page_shows_question_and_reply_only(tmp_path):
    rows = _rows(RUN)
    rows[0]["reply"] = "A reply that tries </script><script>alert(1)</script> to break out"
    manifest = aud.write_audit(rows, str(tmp_path / "a"), n=12, seed=0, protocol="counterfactual",
                               episodes="eval/episodes")
    page = (tmp_path / "a" / "label.html").read_text()
    data = _page_data(page)
    assert {tuple(sorted(i)) for i in data["items"]} == {("finding", "id", "question", "reply")}
    assert data["sample_hash"] == manifest["sample_hash"] and len(data["items"]) == 12
    assert [c["value"] for c in data["choices"]] == ["claim", "deny", "refer", "clarify", "unparseable", "unsure"]
    # no model, condition, reading rule or evidence anywhere in the page
    for word in ("model-a", "model-b", "agent", "blind", "rule-", "stratum", "reading"):
        assert word not in page, word
    # the reading is kept beside it, in the sample file
    sample = aud.read_sample(str(tmp_path / "a"))
    assert {r["sample_id"] for r in sample} == {i["id"] for i in data["items"]}
    assert all(r["reading"]["rule"].startswith("rule-") for r in sample)
    assert page.count("</script>") == 2  # the reply's "</script>" stays text inside the data
    # a different sample into the same folder is refused: a labeller may hold its page
    with pytest.raises(MedScopeError, match="holds another sample"):
        aud.write_audit(rows, str(tmp_path / "a"), n=12, seed=1, protocol="counterfactual", episodes="e")
    (tmp_path / "a" / "agreement.json").write_text("{}")
    aud.write_audit(rows, str(tmp_path / "a"), n=12, seed=1, protocol="counterfactual", episodes="e", overwrite=True)
    assert not (tmp_path / "a" / "agreement.json").exists()  # it was about the old sample


# The hand-worked example: 12 labelled replies of two models, two of them labelled unsure.
#   label    read       agrees  flip
#   claim    claim      yes             x3 (model a)
#   deny     deny       yes             x2 (model a)
#   deny     claim      no      yes     (model a)
#   refer    refer      yes             (model b)
#   refer    unclear    yes (the label does not commit)   (model b)
#   claim    unclear    no (a miss, not a flip)            (model b)
#   clarify  clarify    yes             (model b)
#   unsure   -          left out, counted                  x2 (model b)
EXAMPLE = [("a", "claim", "claim")] * 3 + [("a", "deny", "deny")] * 2 + [("a", "deny", "claim"), ("b", "refer", "refer"),
           ("b", "refer", "unclear"), ("b", "claim", "unclear"), ("b", "clarify", "clarify"),
           ("b", "unsure", "claim"), ("b", "unsure", "deny")]


def _example():
    sample, labels, reads = [], {}, {}
    for i, (model, label, read) in enumerate(EXAMPLE):
        sid = f"s{i:02d}"
        sample.append({"sample_id": sid, "protocol": "counterfactual", "model": model, "condition": "agent",
                       "item_id": f"v{i}", "question": "Is there a polyp?", "finding": "polyp",
                       "question_kind": "presence", "reply": sid, "reading": {"decision": read, "rule": "r"}})
        labels[sid] = label
        reads[sid] = read
    return sample, labels, lambda protocol, reply, q, f, k: ReplyReading(reads[reply], "scripted")


def test_agreement_kappa_and_flips_by_hand():
    sample, labels, read = _example()
    result = aud.agreement(sample, labels, read=read)
    o = result["overall"]
    # n = 10 (2 unsure apart); agrees: 3 + 2 + 0 + 1 + 1 + 0 + 1 = 8; one flip (deny read as claim); 2 unclear
    assert (o["n"], o["agree"], o["flips"], o["unclear"], o["unsure"]) == (10, 8, 1, 2, 2)
    assert o["agreement"] == 0.8
    # Cohen's kappa over the decisions as categories (label rows x reading columns):
    #   exact matches 3 + 2 + 1 + 1 = 7 of 10 -> p_o = 0.7
    #   label marginals claim .4 deny .3 refer .2 clarify .1; reading marginals claim .4 deny .2
    #   refer .1 clarify .1 unclear .2 -> p_e = .4*.4 + .3*.2 + .2*.1 + .1*.1 = .25
    #   kappa = (.7 - .25) / (1 - .25) = 0.6
    assert o["kappa"] == pytest.approx(0.6)
    # its 95% interval: kappa -+ 1.96 SE, the large-sample SE of Fleiss, Cohen and Everitt (1969)
    cats = ["claim", "deny", "refer", "clarify", "unclear"]
    n = 10
    table = [[0] * 5 for _ in cats]
    for _, label, r in EXAMPLE[:10]:
        table[cats.index(label)][cats.index(r)] += 1
    p = [[c / n for c in row] for row in table]
    row = [sum(r) for r in p]
    col = [sum(p[i][j] for i in range(5)) for j in range(5)]
    k, pe = 0.6, 0.25
    a = sum(p[i][i] * (1 - (row[i] + col[i]) * (1 - k)) ** 2 for i in range(5))
    b = (1 - k) ** 2 * sum(p[i][j] * (col[i] + row[j]) ** 2 for i in range(5) for j in range(5) if i != j)
    se = math.sqrt((a + b - (k - pe * (1 - k)) ** 2) / ((1 - pe) ** 2 * n))
    assert o["kappa_ci"] == pytest.approx([0.6 - 1.959964 * se, 0.6 + 1.959964 * se], abs=1e-5)
    # flips 1 of 10, Wilson 95%: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    z = 1.959964
    centre, half = (0.1 + z * z / 20) / (1 + z * z / 10), z * math.sqrt(0.09 / 10 + z * z / 400) / (1 + z * z / 10)
    assert o["flip_ci"] == pytest.approx([centre - half, centre + half], abs=1e-5)
    assert o["flip_ci"] == pytest.approx([0.017875, 0.404150], abs=1e-5)
    by = {m["model"]: m for m in result["per_model"]}
    assert (by["a"]["n"], by["a"]["agree"], by["a"]["flips"], by["a"]["unsure"]) == (6, 5, 1, 0)
    assert (by["b"]["n"], by["b"]["agree"], by["b"]["unclear"], by["b"]["unsure"]) == (4, 3, 2, 2)
    assert result["confusion"]["deny"] == {"claim": 1, "deny": 2}
    assert [(m["label"], m["read"]) for m in result["misses"]] == [("deny", "claim"), ("claim", "unclear")]
    line = aud.check_line(result)
    assert line.startswith("Reply reading checked on 10 replies (2 models): agreement 8/10 = 0.80, Cohen's κ 0.60 [")
    assert "flips 1 (95% CI 0.02–0.40), unclear 2; 2 more labelled unsure" in line


def test_unsure_labels_are_left_out_and_counted_and_unlabelled_ones_reported():
    sample, labels, read = _example()
    labels = {k: v for k, v in labels.items() if v == "unsure" or k == "s00"}
    result = aud.agreement(sample, labels, read=read)
    assert (result["overall"]["n"], result["overall"]["unsure"], result["unlabelled"]) == (1, 2, 9)
    assert result["models"] == ["a"]  # model b has only unsure labels: no reply of it is in n
    assert [m["model"] for m in result["per_model"]] == ["a", "b"]


def test_a_label_for_a_sample_not_in_the_sample_or_an_unknown_decision_is_an_error():
    sample, labels, read = _example()
    with pytest.raises(MedScopeError, match="not in the sample .*'nope'"):
        aud.agreement(sample, {**labels, "nope": "claim"}, read=read)
    with pytest.raises(MedScopeError, match="sample s00: unknown decision 'maybe'; choose one of claim, deny"):
        aud.agreement(sample, {**labels, "s00": "maybe"}, read=read)
    with pytest.raises(MedScopeError, match="unknown decision 'present'"):  # another protocol's decision
        aud.agreement(sample, {**labels, "s00": "present"}, read=read)
    # hand spellings of the labelled tables are read ("Claims" -> claim)
    assert aud.agreement(sample, {"s00": "Claims"}, read=read)["overall"]["agree"] == 1


def test_the_report_line_says_checked_or_how_to_check(tmp_path):
    eval_run = tmp_path / "eval"
    (eval_run / "episodes").mkdir(parents=True)
    (eval_run / "episodes" / "part-0.parquet").write_bytes(b"")
    line = aud.reading_check_line(str(eval_run / "episodes"))
    assert line.startswith("Reply reading not checked on this run's replies: medscope answers audit --episodes "
                           + str(eval_run))
    sample, labels, read = _example()
    (eval_run / "answers_audit").mkdir()
    (eval_run / "answers_audit" / "agreement.json").write_text(json.dumps(aud.agreement(sample, labels, read=read)))
    assert aud.reading_check_line(str(eval_run)).startswith("Reply reading checked on 10 replies (2 models)")


def test_the_scripted_labeller_labels_by_intent_not_by_reading():
    final = 'Pixel reading. <final>{"action": "answer", "answer": "No", "confidence": 0.6}</final>'
    # a constant policy's name decides, whatever the text or its reading says
    rows = [{"sample_id": "x", "protocol": "counterfactual", "model": "always-present", "reply": "No.",
             "question_kind": "presence", "reading": {"decision": "deny"}},
            {"sample_id": "y", "protocol": "counterfactual", "model": "classical-reader", "reply": final,
             "question_kind": "health", "reading": {"decision": "deny"}}]
    # the classical reader's "No" to a health question ("is this image healthy?") means it saw the finding
    assert scripted_labels(rows) == {"x": "claim", "y": "claim"}
    assert intended_decision("organ_presence", "organ-reader", '{"present": false, "reason": "r"}') == "absent"
    assert intended_decision("organ_presence", "organ-reader", "There is no image to read. I cannot answer.") \
        == "not_addressed"
    assert intended_decision("counterfactual", "someone-else", "I think there may be a polyp") == "unsure"


def test_the_run_weighted_estimate_weights_each_stratum_by_its_size():
    # stratum A stands for 100 replies, 2 labelled: 1 agrees, 1 flip; stratum B for 10, 2 labelled, both agree
    pairs = [{"sample_id": "a1", "agrees": True, "flip": False}, {"sample_id": "a2", "agrees": False, "flip": True},
             {"sample_id": "b1", "agrees": True, "flip": False}, {"sample_id": "b2", "agrees": True, "flip": False}]
    rows = {p["sample_id"]: {"stratum": f"m|c|{p['sample_id'][0]}", "stratum_size": 100 if p["sample_id"][0] == "a"
                             else 10} for p in pairs}
    w = aud.run_weighted(pairs, rows)
    # agreement (100 * 1/2 + 10 * 2/2) / 110 = 60/110; flips (100 * 1/2 + 10 * 0) / 110 = 50/110
    assert (w["agreement"], w["flip_rate"], w["covered"]) == (round(60 / 110, 6), round(50 / 110, 6), 110)
    assert aud.run_weighted(pairs, {k: {} for k in rows}) is None  # rows without their stratum


def test_the_command_names_a_standalone_episodes_table_itself(tmp_path):
    (tmp_path / "episodes.parquet").write_bytes(b"")
    line = aud.reading_check_line(str(tmp_path / "episodes.parquet"))
    assert f"--episodes {tmp_path / 'episodes.parquet'} --sample" in line
