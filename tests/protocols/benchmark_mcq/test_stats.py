"""The benchmark-MCQ paper statistics against hand-worked values (no Ray).

The two-case designs make every bootstrap distribution enumerable by hand: with cases A and B
resampled with replacement, a resample is AA, AB/BA or BB with probabilities 1/4, 1/2, 1/4, so
each tail probability is 0, 1/4, 3/4 or 1 up to Monte-Carlo error (B = 10,000: SD <= 0.005).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medscope.protocols.benchmark_mcq import accuracy_tests, scoring
from medscope.protocols.benchmark_mcq.replies import mcq_prompt, read_choice
from medscope.render import thin

MC = 0.03  # tolerance on a bootstrap tail share at B = 10,000


def test_accuracy_counts_only_valid_responses():
    est = accuracy_tests.accuracy(["a", "a", "b", "b"], [1, 0, 1, 0], [True, True, True, False], b=200)
    assert est.value == pytest.approx(2 / 3)  # 2 correct of 3 valid; the invalid one is excluded
    assert est.n_items == 3 and est.n_cases == 2


def test_random_baseline_is_mean_of_one_over_k():
    assert accuracy_tests.random_baseline([2, 4, 5]) == pytest.approx((1 / 2 + 1 / 4 + 1 / 5) / 3)
    assert accuracy_tests.random_baseline([4, 4, 4, 4]) == pytest.approx(0.25)


def test_case_clustered_interval_of_two_opposite_cases():
    # Case A: both questions right; case B: both wrong. Resampling cases, accuracy is 1, 0.5 or 0
    # with probabilities 1/4, 1/2, 1/4, so the 95 % percentile interval is [0, 1]; resampling
    # questions instead would give a far narrower interval.
    est = accuracy_tests.accuracy(["A", "A", "B", "B"], [1, 1, 0, 0], [True] * 4, b=10_000, seed=42)
    assert est.value == 0.5
    assert (est.ci_low, est.ci_high) == (0.0, 1.0)


def test_bootstrap_matches_an_explicit_case_resampling_loop():
    rng = np.random.default_rng(7)
    cases = np.repeat([f"c{i}" for i in range(9)], 4)
    correct = rng.integers(0, 2, cases.size)
    est = accuracy_tests.accuracy(cases, correct, np.ones(cases.size, bool), b=500, seed=42)
    uniq = np.unique(cases)
    draws = np.random.default_rng(42).integers(0, len(uniq), size=(500, len(uniq)))
    means = [np.mean(np.concatenate([correct[cases == uniq[j]] for j in row])) for row in draws]
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert est.ci_low == pytest.approx(lo) and est.ci_high == pytest.approx(hi)


def test_paired_delta_p_and_tost_by_hand():
    # A: sighted right, blind wrong on both questions (d = 1, 1); B: both arms agree (d = 0, 0).
    # Δ = 0.5; Δ* is 1, 0.5, 0 with probabilities 1/4, 1/2, 1/4.
    d = accuracy_tests.paired_delta(["A", "A", "B", "B"], [1, 1, 1, 0], [0, 0, 1, 0], b=10_000, seed=42)
    assert d.delta.value == 0.5 and d.sighted == 0.75 and d.blind == 0.25
    assert d.p == pytest.approx(2 * 0.25, abs=2 * MC)  # two-sided: 2 * P(Δ* <= 0)
    assert d.tost_p == pytest.approx(0.75, abs=MC)  # max(P(Δ* <= -0.05) = 0, P(Δ* >= 0.05) = 3/4)
    assert (d.ci90_low, d.ci90_high) == (0.0, 1.0) and not d.equivalent90


def test_tost_declares_equivalence_when_90_interval_inside_margin():
    cases = np.repeat([f"c{i}" for i in range(40)], 5)
    same = np.ones(cases.size)
    d = accuracy_tests.paired_delta(cases, same, same, b=2000)
    assert d.delta.value == 0.0 and d.tost_p == 0.0 and d.equivalent90 and d.p == 1.0


def test_above_chance_one_sided_by_hand():
    # A: two 2-option questions right (1 - 1/2 each); B: two 4-option questions wrong (0 - 1/4).
    est, p = accuracy_tests.above_chance(["A", "A", "B", "B"], [1, 1, 0, 0], [2, 2, 4, 4], b=10_000, seed=42)
    assert est.value == pytest.approx((0.5 + 0.5 - 0.25 - 0.25) / 4)
    assert p == pytest.approx(0.25, abs=MC)  # only the BB resamples (-0.25) fall at or below 0


def test_benjamini_hochberg_by_hand():
    # sorted p: .01 .03 .04 .2 -> p*m/rank: .04 .06 .0533 .2 -> running minimum from the top
    q = accuracy_tests.bh([0.01, 0.04, 0.03, 0.2])
    assert q == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert np.isnan(accuracy_tests.bh([0.01, np.nan])[1])


@pytest.mark.parametrize("q,tq,want", [(0.01, 0.3, "Effect"), (0.3, 0.01, "Equivalent"),
                                        (0.01, 0.01, "Effect (small)"), (0.3, 0.3, "Undetermined")])
def test_verdicts(q, tq, want):
    assert accuracy_tests.verdict(q, tq) == want


def _items():
    rows = []
    for n, (case, k, ans) in enumerate([("A", 2, "A"), ("A", 4, "B"), ("B", 2, "B"), ("B", 3, "C")]):
        rows.append({"item_id": f"i{n}", "case_id": case, "cohort": "c", "qtype": "rads", "subcategory": "s",
                     "k": k, "answer": ans, "options": ["Yes", "No", "x", "y"][:k], "imaging_source": "private",
                     "matched_group": None})
    return rows


def _ep(model, cond, item, text):
    return {"model": model, "condition": cond, "item_id": item, "raw_text": text, "error": None}


def test_scoring_pairs_on_questions_valid_in_both_runs():
    items = {r["item_id"]: r for r in _items()}
    eps = [_ep("m", "sighted", "i0", "A"), _ep("m", "sighted", "i1", "B"), _ep("m", "sighted", "i2", "A"),
           _ep("m", "sighted", "i3", "C"),
           _ep("m", "blind", "i0", "B"), _ep("m", "blind", "i1", "B"), _ep("m", "blind", "i2", "I am not sure"),
           _ep("m", "blind", "i3", "C"), _ep("m", "agent", "i3", "C"),
           {"model": "m", "condition": "blind", "item_id": "i9", "raw_text": "A", "error": None}]
    rows, skipped = scoring.score_rows(eps, items)
    assert skipped == 2  # another protocol's condition, an unknown item
    df = pd.DataFrame(rows)
    m = pd.DataFrame(scoring.metrics_rows(df, pd.DataFrame(_items()), b=200))
    get = lambda metric, cond: m[(m["metric"] == metric) & (m["condition"] == cond)  # noqa: E731
                                 & (m["model"] == "m")]["value"].iloc[0]
    assert get("accuracy", "sighted") == 0.75  # i0, i1, i3 right, i2 wrong
    assert get("accuracy", "blind") == pytest.approx(2 / 3)  # i2 invalid: excluded
    assert get("invalid", "blind") == 1.0
    # paired on i0, i1, i3 only: sighted 3/3, blind 2/3 -> Δ = 1/3
    assert get("accuracy_paired", "sighted") == 1.0 and get("accuracy_paired", "blind") == pytest.approx(2 / 3)
    # each with its case-clustered interval: every resample of three all-right answers is 1
    paired = m[(m["metric"] == "accuracy_paired") & (m["model"] == "m")].set_index("condition")
    assert (paired.loc["sighted", "ci_low"], paired.loc["sighted", "ci_high"]) == (1.0, 1.0)
    assert paired.loc["blind", "ci_low"] <= 2 / 3 <= paired.loc["blind", "ci_high"]
    assert paired.loc["blind", "ci_high"] > paired.loc["blind", "ci_low"]
    assert get("delta", "sighted") == pytest.approx(1 / 3)
    base = m[m["metric"] == "random_baseline"]["value"].iloc[0]
    assert base == pytest.approx((1 / 2 + 1 / 4 + 1 / 2 + 1 / 3) / 4)
    with thin.configure(min_items=1, min_cases=1):  # a four-question cell is thin; this test is about pairing
        tests = pd.DataFrame(scoring.test_rows(df, b=500))
    assert set(tests["family"]) == {"above_chance", "image_effect"}
    assert tests["q_value"].notna().all() and tests.loc[tests["family"] == "image_effect", "verdict"].notna().all()


def test_reply_reader():
    opts = ["right lobe", "left lobe", "both lobes"]
    assert read_choice("B", opts) == "B"
    assert read_choice("The answer is (C).", opts) == "C"
    assert read_choice("C. both lobes", opts) == "C"
    assert read_choice("both lobes", opts) == "C"
    assert read_choice("D", opts) is None  # not an option of a 3-option question
    assert read_choice("I cannot tell", opts) is None
    assert read_choice("", opts) is None
    yes_no = ["No", "Yes"]
    final = '<final>{"action": "answer", "answer": "Abnormality present"}</final>'
    assert read_choice(final, yes_no) == "B"  # a claim reads as Yes
    assert read_choice('<final>{"action": "answer", "answer": "No abnormality"}</final>', yes_no) == "A"
    assert read_choice('<final>{"action": "refer", "reason": "x"}</final>', yes_no) is None
    assert read_choice(final, opts) is None  # free text that is no option of a non-binary item
    text = mcq_prompt("Where?", opts, ["ct"])
    assert "A. right lobe" in text and "C. both lobes" in text and "12 x 12" in text


def test_table3_pairs_public_and_private_cohorts_of_one_matched_group():
    from medscope.protocols.benchmark_mcq.report import table2, table3, table4

    items, eps = [], []
    for cohort, source, blind_right in (("pub", "public", True), ("priv", "private", False)):
        for n in range(4):
            iid = f"{cohort}{n}"
            items.append({"item_id": iid, "case_id": f"{cohort}-case{n % 2}", "cohort": cohort, "qtype": "rads",
                          "subcategory": "s", "k": 2, "answer": "A", "options": ["Yes", "No"],
                          "imaging_source": source, "matched_group": "brain"})
            eps += [_ep("m", "sighted", iid, "A"), _ep("m", "blind", iid, "A" if blind_right else "B")]
    rows, _ = scoring.score_rows(eps, {r["item_id"]: r for r in items})
    df = pd.DataFrame(rows)
    m = pd.DataFrame(scoring.metrics_rows(df, pd.DataFrame(items), b=200))
    gen = {"schema_sha256": "s", "templates_sha256": "t", "extractor": "rules", "seed": 42}
    same = {c: {"generation_record": dict(gen)} for c in ("pub", "priv")}
    t3 = table3(m, df, same)
    got = {(r[0], r[2]): (r[3], r[4], r[5]) for r in t3.rows}
    # each figure with its interval's half-width and what it is over: 4 questions valid in both runs
    # of 2 cases, a thin cell (fewer than 10 items)
    over = "(n=4, 2 cases) †"
    assert got[("pub (public)", "m")] == (f"1.000 ± 0.000 {over}", f"1.000 ± 0.000 {over}", f"+0.000 ± 0.000 {over}")
    assert got[("priv (private)", "m")] == (f"1.000 ± 0.000 {over}", f"0.000 ± 0.000 {over}", f"+1.000 ± 0.000 {over}")
    t2 = {(r[0], r[1]): tuple(r[2:]) for r in table2(m, df).rows}
    assert t2[("priv", "RADS-style")] == (f"0.000 ± 0.000 {over}", f"+1.000 ± 0.000 {over}")
    # the matched_group flag alone is not trusted: records that differ (or are missing) leave the group out
    other = {**same, "priv": {"generation_record": {**gen, "seed": 7}}}
    assert table3(m, df, other).rows == [] and "differs in seed" in table3(m, df, other).caption
    assert table3(m, df, {}).rows == [] and "no build record" in table3(m, df, {}).caption
    from medscope.render import thin

    with thin.configure(min_items=1, min_cases=1):  # the verdict rule itself, on this tiny pool
        t4 = table4(pd.DataFrame(scoring.test_rows(df, b=500)))
    verdicts = {r[0]: r[-1] for r in t4.rows}
    assert verdicts == {"priv": "Effect", "pub": "Equivalent"}
    assert {r[3] for r in t4.rows} == {"run:image_effect (2)"}
    # by default 4 items of 2 cases are a thin cell: never called an effect or equivalent
    t4 = table4(pd.DataFrame(scoring.test_rows(df, b=500)))
    assert {r[0]: r[-1] for r in t4.rows} == {c: "thin (n=4, 2 cases): not tested" for c in ("priv", "pub")}
    assert all(r[4].endswith("(n=4, 2 cases) †") for r in t4.rows)


def test_bh_families_come_from_the_plan_not_from_the_run(tmp_path):
    from statsmodels.stats.multitest import multipletests

    from medscope.errors import MedScopeError
    from medscope.protocols.benchmark_mcq.families import FamilyPlan, describe

    items, eps = [], []
    for cohort, right in (("a", (1, 1, 1, 0, 1, 1)), ("b", (1, 0, 1, 0, 1, 0)), ("c", (1, 1, 1, 1, 1, 0))):
        for n, ok in enumerate(right):
            iid = f"{cohort}{n}"
            items.append({"item_id": iid, "case_id": f"{cohort}-case{n}", "cohort": cohort, "qtype": "rads",
                          "subcategory": "s", "k": 2, "answer": "A", "options": ["Yes", "No"]})
            eps.append(_ep("m", "sighted", iid, "A" if ok else "B"))
    df = pd.DataFrame(scoring.score_rows(eps, {r["item_id"]: r for r in items})[0])
    with thin.configure(min_items=1, min_cases=1):  # six-case cells: this test is about families, not thinness
        _families_from_the_plan(df, multipletests, MedScopeError, FamilyPlan, describe)


def _families_from_the_plan(df, multipletests, MedScopeError, FamilyPlan, describe):
    run_formed = scoring.test_rows(df, b=400)
    p = [r["p_value"] for r in run_formed]
    assert [r["q_value"] for r in run_formed] == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))
    assert {r["family_size"] for r in run_formed} == {3}
    plan = FamilyPlan.model_validate({"families": [
        {"name": "ab", "test": "above_chance", "members": [{"cohort": "a"}, {"cohort": "b"}]}]})
    declared = {r["cohort"]: r for r in scoring.test_rows(df, b=400, plan=plan)}
    assert [declared[c]["q_value"] for c in "ab"] == pytest.approx(
        list(multipletests([declared[c]["p_value"] for c in "ab"], method="fdr_bh")[1]))
    assert declared["c"]["q_value"] is None and declared["c"]["bh_family"] == "undeclared"
    assert describe(list(declared.values()))[0] == "BH family ab (above_chance): 2 test(s): a/rads/m, b/rads/m"
    missing = FamilyPlan.model_validate({"families": [
        {"name": "x", "test": "above_chance", "members": [{"cohort": "a"}, {"cohort": "zzz"}]}]})
    with pytest.raises(MedScopeError, match="matches no above_chance test"):
        scoring.test_rows(df, b=400, plan=missing)


@pytest.mark.parametrize("reply,want", [
    ("Option A is unlikely; the answer is B.", "B"),  # a verdict outranks an earlier mention
    ("b", "B"), ("(c)", "C"), ("Option b", "B"), ("answer: c", "C"),
    ("The answer is a mass in the liver.", None),  # "a" the article, not option A
    ("A and B are possible, but the correct answer is (a).", "A"),
    ("I considered A.\nFinal answer: c", "C"),
    ("The answer is B. On reflection, the answer is C.", "C"),  # the last verdict wins
    ("<think>The answer is A</think>The answer is B", "B"),  # reasoning is not the verdict
    ("Therefore, B.", "B"), ("I would choose option c.", "C"),
    ("The answer is E.", None),  # not an option of a 3-option question
])
def test_reply_reader_verdicts_and_case(reply, want):
    assert read_choice(reply, ["right lobe", "left lobe", "both lobes"]) == want


def test_blind_condition_sends_the_same_text_with_a_gray_blank_of_each_montage_size():
    """The benchmark-MCQ paper's blind arm: the sighted prompt's text, each montage replaced by a uniform gray image
    of its own size (the blank is cached by size: one PNG encode per size, not per episode)."""
    from medscope.images import decode_png, encode_png
    from medscope.models.base import Completion, Decoding
    from medscope.protocols.base import Item
    from medscope.protocols.benchmark_mcq.protocol import BenchmarkMCQProtocol

    sent = []

    class Recorder:
        name, provider, endpoint = "rec", "policy", "local"

        def complete(self, messages, decoding):
            sent.append(messages[-1].parts)
            return Completion(text="B")

    shapes = [(24, 36), (12, 12)]
    images = tuple(encode_png(np.full((*hw, 3), 7 * i + 1, np.uint8)) for i, hw in enumerate(shapes))
    options = ["liver lesion", "no lesion", "cyst"]
    item = Item("q1", "c1", mcq_prompt("What is seen?", options, ["ct", "t1"]), "B", images,
                meta={"sequences": ["ct", "t1"], "sizes": shapes, "options": options})
    proto = BenchmarkMCQProtocol()
    sighted = proto.run_episode(item, Recorder(), "sighted", Decoding())
    blind = proto.run_episode(item, Recorder(), "blind", Decoding())
    again = proto.run_episode(item, Recorder(), "blind", Decoding())
    seen, blanks = [[p.png for p in parts if p.is_image] for parts in sent[:2]]
    assert seen == list(images)
    assert [decode_png(b).shape[:2] for b in blanks] == shapes and all((decode_png(b) == 128).all() for b in blanks)
    assert [p.text for p in sent[0] if p.text] == [p.text for p in sent[1] if p.text] == [item.question]
    assert blind.turns[0]["image_ref"] == "blank:24x36,blank:12x12" and sighted.turns[0]["image_ref"] == "c1:ct,c1:t1"
    assert [p.png for p in sent[2] if p.is_image] == blanks and blind.answer == again.answer == sighted.answer == "B"


def _cohort_rows(cohort: str, right: tuple[int, ...]) -> tuple[list[dict], list[dict]]:
    items, eps = [], []
    for n, ok in enumerate(right):
        iid = f"{cohort}{n}"
        items.append({"item_id": iid, "case_id": f"{cohort}-case{n}", "cohort": cohort, "qtype": "rads",
                      "subcategory": "s", "k": 2, "answer": "A", "options": ["Yes", "No"]})
        eps.append(_ep("m", "sighted", iid, "A" if ok else "B"))
    return items, eps


def test_thin_cells_get_no_p_and_stay_out_of_the_bh_family():
    """Issue 49: a thin cell (3 cases, all right: p = 0) must not enter the family. With it, the
    family has 3 members and BH lowers a's and b's q (p * 3 / rank with a rank-1 zero in front);
    without it, q is statsmodels' fdr_bh over a and b alone."""
    from statsmodels.stats.multitest import multipletests

    from medscope.protocols.benchmark_mcq.families import THIN, describe

    items, eps = [], []
    for cohort, right in (("a", (1,) * 9 + (0,) * 3), ("b", (1,) * 8 + (0,) * 4), ("c", (1, 1, 1))):
        i, e = _cohort_rows(cohort, right)
        items, eps = items + i, eps + e
    df = pd.DataFrame(scoring.score_rows(eps, {r["item_id"]: r for r in items})[0])
    rows = {r["cohort"]: r for r in scoring.test_rows(df, b=2000)}
    assert rows["c"]["p_value"] is None and rows["c"]["q_value"] is None
    assert rows["c"]["bh_family"] == THIN and rows["c"]["verdict"] == "thin (n=3, 3 cases): not tested"
    assert rows["a"]["family_size"] == rows["b"]["family_size"] == 2
    p = [rows[c]["p_value"] for c in "ab"]
    assert [rows[c]["q_value"] for c in "ab"] == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))
    # had c entered with p = 0, the larger of a's and b's q would have been p_max * 3 / 3 = p_max, the smaller
    # min(p_min * 3 / 2, p_max): the family size is what changes
    lines = describe(list(rows.values()))
    assert lines == ["BH family run:above_chance (above_chance): 2 test(s): a/rads/m, b/rads/m",
                     "1 thin cell(s) not tested (no p, in no BH family): c/rads/m"]


@pytest.mark.parametrize("p, b, sides, m, want", [
    (0.0, 10_000, 1, None, "< 1/10000"),  # one-sided: no resample at or below zero
    (0.0, 10_000, 2, None, "< 2/10000"),  # two-sided: twice the smaller tail
    (0.0, 10_000, 1, 3, "< 3/10000"),  # q of that p in a family of 3
    (0.0123, 10_000, 1, None, "0.012"),
    (0.0004, 10_000, 1, None, "4.0e-04"),
    (None, 10_000, 1, None, "–"),
])
def test_p_at_the_bound_prints_as_a_bound(p, b, sides, m, want):
    from medscope.protocols.benchmark_mcq.report import p_text

    assert p_text(p, b, sides, m) == want
