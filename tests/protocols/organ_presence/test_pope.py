"""POPE's summary twice: MedScope's reading and POPE's own rule, against hand-worked counts."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from medscope.protocols.organ_presence.replies import read_reply
from medscope.protocols.organ_presence.report import pope_table
from medscope.protocols.organ_presence.scoring import pope_rule_yes


@pytest.mark.parametrize(
    "reply, yes",
    [
        ("No, the spleen is not visible.", False),
        ("Yes.", True),
        ("The spleen is absent.", True),  # no 'no'/'not' word: POPE reads yes
        ("Not visible.", True),  # capital "Not" is not in POPE's word list
        ("I cannot determine this.", True),  # "cannot" is one word
        ("There is no spleen here. It is not visible", False),
        ("Yes. It is not visible.", True),  # only the first sentence counts
        ("No", False),
        ('{"present": false, "reason": "not seen"}', True),  # JSON: the first "sentence" holds no 'no'
        ("It is not seen, however.", False),
        ("Nope, it's absent.", True),
        ("Spleen: no", False),
        ("no, the spleen", False),  # commas dropped: "no the spleen"
    ],
)
def test_pope_rule_on_hand_written_replies(reply, yes):
    assert pope_rule_yes(reply) is yes


# (reply, truth): hand-worked below
EPISODES = [
    ("Yes, the spleen is visible.", "present"),  # A  POPE yes  MedScope present
    ("No, the spleen is not visible.", "absent"),  # B  no        absent
    ("The spleen is absent.", "absent"),  # C  yes       absent
    ("Not visible.", "absent"),  # D  yes       absent
    ("I cannot determine this.", "absent"),  # E  yes       not addressed
    ("There is no spleen on this slice.", "present"),  # F  no   absent
    ("Yes. The spleen is visible in the left upper quadrant.", "absent"),  # G  yes  present
    ("No", "present"),  # H  no        absent
]


def _scores():
    rows = []
    for reply, truth in EPISODES:
        r = read_reply(reply, "free_text", ["x"], organ="spleen")
        rows.append({"model": "m", "condition": "free_text", "render": "gray", "strategy": "positive"
                     if truth == "present" else "adversarial", "truth": truth, "verdict": r.verdict,
                     "pope_yes": pope_rule_yes(reply)})
    return pd.DataFrame(rows)


def test_pope_summary_twice_matches_hand_counts():
    sc = _scores()
    assert list(sc.verdict) == ["present", "absent", "absent", "absent", "not_addressed", "absent", "present", "absent"]
    pope = pope_table(sc, "pope").set_index("strategy").loc["adversarial"]
    # POPE's rule: TP = A; FP = C, D, E, G; TN = B; FN = F, H
    tp, fp, tn, fn = 1, 4, 1, 2
    assert pope.n == 8
    assert math.isclose(pope.accuracy, (tp + tn) / 8) and math.isclose(pope.precision, tp / (tp + fp))
    assert math.isclose(pope.recall, tp / (tp + fn)) and math.isclose(pope.yes_ratio, 5 / 8)
    assert math.isclose(pope.f1, 2 * 0.2 * (1 / 3) / (0.2 + 1 / 3))  # = 0.25
    ours = pope_table(sc, "medscope").set_index("strategy").loc["adversarial"]
    # MedScope's reading: TP = A; FP = G; TN = B, C, D; FN = F, H; E (not addressed) is neither: left out of n
    tp, fp, tn, fn = 1, 1, 3, 2
    assert ours.n == 7 and ours.left_out == 1 and pope.left_out == 0
    assert math.isclose(ours.accuracy, 4 / 7) and math.isclose(ours.precision, 0.5)
    assert math.isclose(ours.recall, 1 / 3) and math.isclose(ours.yes_ratio, 2 / 7) and math.isclose(ours.f1, 0.4)


def test_report_shows_both_summaries(tmp_path):
    from medscope.io import layout, records
    from medscope.protocols.organ_presence.report import report_sections

    sc = _scores()
    full = [{"run_id": "r", "format": "free_text", "image_mode": "image", "item_id": f"i{i}", "case_id": f"c{i % 3}",
             "z": i, "organ": "spleen", "stratum": "mid", "z_distance_mm": None if t == "present" else 10.0,
             "absent_from_volume": False, "clean": True, "hedged": False, "hedge_cue": None, "correct": None,
             **row} for i, (row, t) in enumerate(zip(sc.to_dict("records"), sc.truth))]
    run = layout.ScoredRun(str(tmp_path))
    records.write_table("probe_scores", full, run.table("probe_scores"))
    records.write_table("metrics", [], run.metrics)
    sections, _ = report_sections(str(tmp_path), str(tmp_path / "w"))
    text = "\n".join(b.markdown for sec in sections for b in sec.blocks if hasattr(b, "markdown"))
    assert "With MedScope's reading" in text and "With POPE's own rule" in text
    assert "| m | free_text | adversarial | 7 | 1 | 0.571 | 0.500 | 0.333 | 0.400 | 0.286 |" in text
    assert "| m | free_text | adversarial | 8 | 0 | 0.250 | 0.200 | 0.333 | 0.250 | 0.625 |" in text
