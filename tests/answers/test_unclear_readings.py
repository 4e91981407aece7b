"""Readings that do not commit: the reader says ``unclear`` where its own evidence disagrees, a
wrong-way reading is counted apart from a miss, unclear readings lower n and are counted, and a
user can see how each reply is read (``medscope answers read``).

The reply examples here were written for these tests, not taken from the held-out sets
(``medscope/answers/data/heldout/``), which are scored in ``test_heldout_sets.py``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from medscope.answers.decisions import agrees, is_flip, read_reply_decision
from medscope.io import records
from pipelines.cli import main as cli


@pytest.mark.parametrize("read, label, flip, agree", [
    ("deny", "claim", True, False),
    ("absent", "present", True, False),
    ("unclear", "claim", False, False),  # a miss where a careful reader commits
    ("unclear", "refer", False, True),  # no miss where the reply itself does not commit
    ("unclear", "not_addressed", False, True),
    ("refer", "claims", False, False),  # the development sets' spelling
    ("claim", "claims", False, True),
])
def test_flip_and_agreement_by_the_definitions(read, label, flip, agree):
    assert is_flip(read, label) is flip
    assert agrees(read, label) is agree


def test_also_defensible_labels_agree():
    assert agrees("not_addressed", "absent", ["not_addressed"])
    assert not agrees("present", "absent", ["not_addressed"])


ORGAN_Q = "Is the kidney visible in this CT slice?"


@pytest.mark.parametrize("reply, organ, decision", [
    # a denied denial affirms; a hedged or a triple one commits to nothing
    ("It is simply wrong to claim there is no kidney on this slice.", "kidney", "present"),
    ("I do not believe the kidney is absent here.", "kidney", "present"),
    ("I can't say the kidney is missing.", "kidney", "unclear"),
    # the question echoed first
    ("Is the kidney visible? Nope.", "kidney", "absent"),
    ("Kidney? Yes, clearly.", "kidney", "present"),
    # the organ as a landmark or as the place of a denied property
    ("We are above the level of the kidney, so the kidney is not in this slice.", "kidney", "absent"),
    ("No stones or masses are seen in the kidney.", "kidney", "present"),
    ("No kidney wall abnormality.", "kidney", "present"),
    # other organs only, the other side, an operation
    ("Seen here: spleen, stomach and colon.", "kidney", "not_addressed"),
    ("The right kidney is clearly seen.", "left kidney", "not_addressed"),
    ("Status post nephrectomy.", "kidney", "absent"),
    ("Status post partial nephrectomy; the kidney is seen with a defect.", "kidney", "present"),
    # two verdicts, or none
    ("Yes. The kidney is not visible.", "kidney", "unclear"),
    ("Yes and no.", "kidney", "not_addressed"),
    ("As an AI model I cannot interpret medical images.", "kidney", "not_addressed"),
    # informal, hedged, other languages
    ("yess", "kidney", "present"),
    ("I'd say no.", "kidney", "absent"),
    ("Nein.", "kidney", "absent"),
    ("いいえ、見えません。", "kidney", "absent"),
])
def test_organ_replies(reply, organ, decision):
    got = read_reply_decision("organ_presence", reply, ORGAN_Q.replace("kidney", organ), organ)
    assert got.decision == decision, got
    assert got.evidence  # every reading says what decided it, or why it is unclear


@pytest.mark.parametrize("reply, question, finding, decision", [
    ("Not without a polyp: a 5 mm sessile one sits at 3 o'clock.", "Is there a polyp?", "polyp", "claim"),
    ("Polyp-free segment.", "Is there a polyp?", "polyp", "deny"),
    ("A fold mimicking a polyp; no true polyp.", "Is there a polyp?", "polyp", "deny"),
    ("Nothing to suggest a pneumothorax.", "Is there a pneumothorax?", "pneumothorax", "deny"),
    ("Not normal - a small effusion at the right base.", "Is this chest X-ray normal?", "pleural effusion", "claim"),
    ("Looks fine to me.", "Is this chest X-ray normal?", "pleural effusion", "deny"),
    ("The film is normal, though a pneumothorax cannot be excluded.", "Is this chest X-ray normal?",
     "pneumothorax", "unclear"),
    ("This is an abdominal CT, not a chest radiograph.", "Is there a pneumothorax?", "pneumothorax", "clarify"),
])
def test_lesion_replies(reply, question, finding, decision):
    assert read_reply_decision("counterfactual", reply, question, finding).decision == decision


def test_unclear_episodes_lower_n_and_are_counted():
    from medscope.protocols.counterfactual import costs, rewards
    from medscope.testing import synthetic_runs as synthetic

    views = synthetic.views(6, 4, 0, seed=1)
    eps = synthetic.episodes(views, synthetic.model_zoo(1, seed=1), seed=1).to_pylist()
    for row in eps[:3]:
        row.update(action="unclear", claims_finding=None)
    table = records.to_table("episodes", eps)
    scores, rejects = rewards.score_episodes(table, views, costs.load(costs.DEFAULT))
    assert scores.num_rows == len(eps) - 3 and not rejects
    assert "unclear" not in set(scores.column("action").to_pylist())
    model, cond = eps[0]["model"], eps[0]["condition"]
    assert rewards.unclear_counts(table) == {f"{model}/{cond}": 3}


def test_probe_unclear_rate_and_other_n():
    from medscope.protocols.organ_presence.scoring import probe_metrics

    rows = pd.DataFrame({
        "model": "m", "condition": "free_text:image", "render": "gray", "case_id": ["a", "b", "c", "d"],
        "strategy": "positive", "truth": "present", "verdict": ["present", "unclear", "absent", "present"],
        "clean": True, "hedged": False, "hedge_cue": None, "z": 1, "organ": "liver", "z_distance_mm": np.nan,
        "absent_from_volume": False})
    got = {(r["metric"]): r for r in probe_metrics(rows, b=50)}
    assert got["unclear_rate"]["value"] == pytest.approx(1 / 4)
    assert got["sensitivity"]["value"] == pytest.approx(2 / 3)  # the unclear reply is in no other n


def test_answers_read_writes_every_reading(tmp_path, capsys):
    replies = tmp_path / "r.jsonl"
    replies.write_text("\n".join(json.dumps(r) for r in [
        {"reply": "No polyp is seen."}, {"reply": "Yes. No polyp is seen."},
        {"reply": "Definitely a polyp.", "question": "Any polyp?", "finding": "polyp"}]) + "\n")
    assert cli(["answers", "read", "--protocol", "counterfactual", "--replies", str(replies),
                "--question", "Is there a polyp?", "--finding", "polyp"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "readings.jsonl").read_text().splitlines()]
    assert [r["decision"] for r in rows] == ["deny", "unclear", "claim"]
    assert rows[0]["rule"] == "mention" and rows[0]["evidence"] == "no polyp is seen."
    assert "unclear 2" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"reply": "No."}\n')
    assert cli(["answers", "read", "--protocol", "counterfactual", "--replies", str(bad)]) == 2


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_answers_read_of_a_file_without_replies_is_refused_naming_it(tmp_path, capsys, text):
    # issue 51 (sixth campaign): a zero-byte replies file exited 0 with an empty readings.jsonl
    replies = tmp_path / "none.jsonl"
    replies.write_text(text)
    assert cli(["answers", "read", "--protocol", "counterfactual", "--replies", str(replies),
                "--question", "Is there a polyp?", "--finding", "polyp"]) == 2
    err = capsys.readouterr().err
    assert f"{replies}: no replies to read" in err
    assert not (tmp_path / "readings.jsonl").exists()
