"""The report's opening summary and reference rows: written from the numbers, a model
whose ESG interval excludes 0 is named as following the image, constant policies as image-blind
and never ranked; POPE's summary against hand-counted values."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from medscope import images
from medscope.io import records
from medscope.protocols.counterfactual.scoring import score_run
from medscope.protocols.organ_presence.report import pope_summary, pope_table
from medscope.protocols.counterfactual import summary
from medscope.report.build import build_report
from medscope.testing import synthetic_runs as synthetic

S = summary


def _line(lines, start):
    hit = [ln for ln in lines if ln.startswith(start)]
    return hit[0] if hit else ""


def test_verdicts_follow_the_esg_interval_and_constant_policies_are_image_blind():
    assert S.verdict(S.ModelRow("a", 0.40, 0.10, 0.70)) == S.FOLLOWS
    assert S.verdict(S.ModelRow("b", 0.10, -0.10, 0.30)) == S.UNCLEAR
    assert S.verdict(S.ModelRow("b0", 0.10, 0.0, 0.30)) == S.UNCLEAR  # an interval touching 0 does not exclude it
    assert S.verdict(S.ModelRow("c", -0.30, -0.50, -0.10)) == S.AGAINST
    assert S.verdict(S.ModelRow("d", 0.20)) == S.UNCLEAR  # no interval: no evidence
    # a constant policy is image-blind whatever its numbers say
    assert S.verdict(S.ModelRow("always-present", 0.0, 0.0, 0.0, constant=True)) == S.CONSTANT
    assert S.verdict(S.ModelRow("odd", 0.5, 0.2, 0.8, constant=True)) == S.CONSTANT


def test_summary_names_followers_blind_policies_differences_and_caveats():
    rows = [S.ModelRow("reader-a", 0.446, 0.166, 0.727, 0.40, 0.063),
            S.ModelRow("reader-b", 0.05, -0.12, 0.21, 0.55, -0.20),
            S.ModelRow("always-present", 0.0, 0.0, 0.0, 1.0, -0.42, constant=True),
            S.ModelRow("always-refer", 0.0, 0.0, 0.0, 0.0, 0.093, constant=True)]
    diffs = [S.Difference("reader-b", "reader-a", "esg", -0.396, -0.6, -0.2, 0.0005, 1000),
             S.Difference("reader-b", "reader-a", "net_utility", -0.263, -0.5, 0.01, 0.062, 1000)]
    lines = S.summary_lines(rows, diffs, S.RunFacts(45, 103, ["phantom"], "main", "table2"))
    follow = _line(lines, "- **Follow the image**")
    assert "reader-a" in follow and "0.446 [0.166, 0.727]" in follow
    assert "reader-b" not in follow and "always" not in follow
    assert "reader-b" in _line(lines, "- **No evidence either way**")
    blind = _line(lines, "- **Image-blind by construction**")
    assert "always-present" in blind and "always-refer" in blind and "reader" not in blind
    head = _line(lines, "- **reader-b minus reader-a**")
    assert "ESG -0.396 [-0.600, -0.200], p < 0.001" in head
    assert "net utility -0.263 [-0.500, +0.010], p = 0.062" in head
    # always-refer out-earns both readers under this matrix: said, naming them
    cost = _line(lines, "- **Caveat, cost matrix**")
    assert "always-refer" in cost and "0.093" in cost and "reader-a" in cost and "reader-b" in cost
    run = _line(lines, "- **Run**")
    assert "45 cases, 103 views" in run and "fewer than 100 cases" in run and "phantom" in run


def test_a_condition_that_shows_no_image_is_never_filed_among_models_that_may_read_it():
    # a blind condition's ESG interval may include 0 or even exclude it (the question's wording
    # differs by view kind); either way it gets its own line, never "Follow" / "No evidence"
    rows = [S.ModelRow("m [agent]", 0.30, 0.10, 0.50),
            S.ModelRow("m [blind]", 0.02, -0.05, 0.09, shown="no image"),
            S.ModelRow("n [blank]", 0.20, 0.05, 0.35, shown="a grey image"),
            S.ModelRow("n [agent]", 0.01, -0.10, 0.12)]
    assert S.verdict(rows[1]) == S.verdict(rows[2]) == S.BLIND_BY_DESIGN
    lines = S.summary_lines(rows, [], S.RunFacts(200, 400))
    follow, unclear = _line(lines, "- **Follow the image**"), _line(lines, "- **No evidence either way**")
    blind = _line(lines, "- **Image-blind by design**")
    assert "m [agent]" in follow and "[blind]" not in follow and "[blank]" not in follow
    assert "n [agent]" in unclear and "[blind]" not in unclear and "[blank]" not in unclear
    assert "m [blind] (no image) ESG 0.020 [-0.050, 0.090]" in blind
    assert "n [blank] (a grey image) ESG 0.200 [0.050, 0.350]" in blind
    # a constant policy in the blind condition stays on the constant line (it is both)
    assert S.verdict(S.ModelRow("r [blind]", 0.0, 0.0, 0.0, constant=True, shown="no image")) == S.CONSTANT


def test_summary_without_a_follower_says_so_and_large_real_runs_have_no_small_n_caveat():
    rows = [S.ModelRow("m", 0.02, -0.03, 0.07, 0.5, 0.4), S.ModelRow("always-absent", 0.0, 0, 0, 0, -0.8, True)]
    lines = S.summary_lines(rows, [], S.RunFacts(507, 1115, ["kvasir", "busi"]))
    assert lines[0].startswith("- **No model is shown to follow the image**")
    assert not _line(lines, "- **Caveat, cost matrix**")  # the constant policy earns less than the model
    run = _line(lines, "- **Run**")
    assert "fewer than" not in run and "phantom" not in run


def test_constant_policies_are_found_from_the_decisions():
    sc = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4 + ["c"] * 4,
                       "condition": ["agent"] * 12,
                       "action": ["answer"] * 4 + ["answer", "refer", "answer", "answer"] + ["refer"] * 4,
                       "claims_finding": [True] * 4 + [True, None, True, True] + [None] * 4})
    assert S.constant_policies(sc) == {("a", "agent"), ("c", "agent")}


def test_pope_summary_against_hand_counts():
    # truth: 3 present, 4 absent; said present on 2 of the present and 1 of the absent
    got = pope_summary(np.array([1, 1, 1, 0, 0, 0, 0], bool), np.array([1, 1, 0, 1, 0, 0, 0], bool))
    assert got["n"] == 7
    assert got["accuracy"] == pytest.approx(5 / 7)
    assert got["precision"] == pytest.approx(2 / 3) and got["recall"] == pytest.approx(2 / 3)
    assert got["f1"] == pytest.approx(2 / 3)
    assert got["yes_ratio"] == pytest.approx(3 / 7)
    never = pope_summary(np.array([1, 0], bool), np.array([0, 0], bool))
    assert np.isnan(never["precision"]) and never["recall"] == 0 and never["yes_ratio"] == 0


def test_pope_table_pairs_every_positive_with_each_strategys_negatives():
    sc = pd.DataFrame({
        "model": ["m"] * 6, "condition": ["c"] * 6, "render": ["gray"] * 6,
        "truth": ["present", "present", "absent", "absent", "absent", "absent"],
        "strategy": ["positive", "positive", "random", "random", "adversarial", "popular"],
        "verdict": ["present", "absent", "absent", "present", "present", "not_addressed"]})
    t = pope_table(sc).set_index("strategy")
    assert t.loc["random", "n"] == 4 and t.loc["random", "accuracy"] == pytest.approx(2 / 4)
    assert t.loc["adversarial", "n"] == 3 and t.loc["adversarial", "precision"] == pytest.approx(1 / 2)
    # not addressed is neither "yes" nor "no" in MedScope's reading: left out of n (2 present questions remain)
    assert t.loc["popular", "n"] == 2 and t.loc["popular", "left_out"] == 1
    assert t.loc["popular", "accuracy"] == pytest.approx(1 / 2)
    assert t.loc["popular", "yes_ratio"] == pytest.approx(1 / 2)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A report of a small synthetic run: three random policies (one also in the blind condition)
    and one constant policy."""
    root = tmp_path_factory.mktemp("sum")
    img = (np.random.default_rng(0).random((32, 32)) * 255).astype(np.uint8)
    pix = {k: images.encode_png(img) for k in ("original", "target_removal", "random_removal", "degraded",
                                                "natural_negative")}
    v = synthetic.views(30, 20, 6, seed=2, width=32, height=32, images=pix)
    zoo = synthetic.model_zoo(3, seed=2)
    zoo["model-02"].update(original=0.97, random_removal=0.97, target_removal=0.02)  # reads the image
    zoo["always-present"] = {k: 1.0 for k in ("original", "random_removal", "target_removal", "natural_negative",
                                              "degraded")}
    e = synthetic.episodes(v, zoo, seed=2)
    # model-00 also ran blind (no image): the same random policy, filed as image-blind by design
    blind = e.filter(pc.equal(e["model"], "model-00"))
    i = e.schema.get_field_index("condition")
    e = pa.concat_tables([e, blind.set_column(i, e.schema.field(i), pa.array(["blind"] * blind.num_rows))])
    records.write_table("views", v, str(root / "views.parquet"))
    records.write_table("episodes", e, str(root / "episodes.parquet"))
    score_run(str(root / "episodes.parquet"), str(root / "views.parquet"), str(root / "run"), n_boot=200)
    build_report(str(root / "run"), str(root / "report"), gallery_cases=1)
    return root


def test_report_opens_with_the_summary_and_never_ranks_the_constant_policy(report):
    md = (report / "report" / "report.md").read_text()
    sections = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert sections[0].startswith("## Summary") and sections[1] == "## Key figures"
    summ = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    m = records.read_table("metrics", str(report / "run" / "metrics.parquet")).to_pandas()
    esg = m[(m.model == "model-02") & (m.metric == "esg") & (m.breakdown == "all")].iloc[0]
    assert esg.ci_low > 0  # the fixture's image reader
    follow = _line(summ.splitlines(), "- **Follow the image**")
    assert f"**model-02 [agent]** ESG {esg.value:.3f} [{esg.ci_low:.3f}, {esg.ci_high:.3f}]" in follow
    assert "always-present" not in follow and "always-present" in _line(summ.splitlines(), "- **Image-blind by construction")
    assert "[blind]" not in follow and "[blind]" not in _line(summ.splitlines(), "- **No evidence either way**")
    assert "model-00 [blind] (no image) ESG" in _line(summ.splitlines(), "- **Image-blind by design**")
    # rankings: the constant policy is a reference row, never rank 1
    ranks = md.split("## Rankings under every cost matrix", 1)[1].split("\n## ", 1)[0]
    row = next(ln for ln in ranks.splitlines() if ln.startswith("| always-present"))
    assert "ref." in row and "| 1 (" not in row
    # selective risk / AURC are not given for the constant policy
    more = md.split("## Further metrics", 1)[1].split("\n## ", 1)[0]
    row = next(ln for ln in more.splitlines() if ln.startswith("| always-present"))
    # selective risk @1.00, @0.70 and AURC are undefined for it (one confidence tie); the decision
    # risk over every view that expects an answer is defined: a constant policy sits at its error rate
    assert "| n/a | n/a | n/a |" in row and not row.rstrip(" |").endswith("n/a")
    assert (report / "report" / "images" / "forest.png").exists()
    assert (report / "report" / "images" / "claims_vs_ccr.png").exists()


def test_probe_section_draws_readers_marks_constant_policies_and_skips_an_empty_plot(tmp_path):
    from medscope.protocols.organ_presence.report import probe_report_section

    def row(model, strategy, v, lo, hi):
        return {"model": model, "condition": "verdict_json", "breakdown": f"strategy={strategy};render=gray",
                "metric": "specificity", "value": v, "ci_low": lo, "ci_high": hi, "n_cases": 12}

    reader = [row("reader", s, v, v - 0.1, v + 0.1) for s, v in (("random", 0.9), ("popular", 0.7),
                                                                  ("adversarial", 0.5))]
    blind = [row("always-absent", s, 1.0, 1.0, 1.0) for s in ("random", "popular", "adversarial")]
    constant = {("always-absent", "verdict_json")}
    _, md, pngs = probe_report_section(reader + blind, constant)
    assert len(pngs) == 1 and pngs["probe_specificity.png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert "| always-absent (constant) | verdict_json |" in md
    # every cell says what it is over (12 cases, not thin)
    assert ("| reader | verdict_json | – | 0.900 [0.800, 1.000] (12 cases) | 0.700 [0.600, 0.800] (12 cases) | "
            "0.500 [0.400, 0.600] (12 cases)") in md
    _, _, pngs = probe_report_section(blind, constant)
    assert pngs == {}  # nothing but constant policies: no plot of reference lines alone


def test_probe_summary_puts_each_reader_beside_its_no_image_control():
    from medscope.protocols.organ_presence.report import summary_lines

    spec = [{"model": "reader", "condition": "verdict_json", "render": "gray", "adversarial": (0.8, 0.7, 0.9, 10)},
            {"model": "reader", "condition": "verdict_json+no_image", "render": "gray",
             "adversarial": (0.3, 0.2, 0.4, 10)},
            {"model": "always-absent", "condition": "verdict_json", "render": "gray",
             "adversarial": (1.0, 1.0, 1.0, 10)}]
    # the reader declines every no-image question (constant THERE): still not a constant policy
    lines = summary_lines(spec, {("always-absent", "verdict_json"), ("reader", "verdict_json+no_image")})
    reader = [ln for ln in lines if ln.startswith("- reader")]
    assert reader == ["- reader · verdict_json: adversarial specificity 0.800 [0.700, 0.900] (10 cases), "
                      "no-image control 0.300 [0.200, 0.400] (10 cases)."]
    assert any(ln.startswith("- Constant policies") and "always-absent" in ln and "reader" not in ln for ln in lines)
    assert not any("always-absent · " in ln for ln in lines)


def test_one_p_value_format_by_hand():
    from medscope.stats.bootstrap import p_text

    assert p_text(0.0123) == "p = 0.012" and p_text(0.062, 1000) == "p = 0.062"
    assert p_text(0.0004) == "p < 0.001" and p_text(0.0005, 1000) == "p < 0.001"
    # no resample crossed zero: below 2/B, its smallest non-zero value
    assert p_text(0.0, 2000) == "p < 0.001" and p_text(0.0, 200) == "p < 0.01" and p_text(0.0, 400) == "p < 0.005"
    assert p_text(float("nan")) == p_text(None) == "p n/a" and p_text(1.0) == "p = 1.000"


def test_report_details_b_used_no_nan_one_p_format_and_rates_with_n(report):
    md = (report / "report" / "report.md").read_text()
    # the paired caption names the B these comparisons used (the run's 200), not the paper's 2,000
    paired = md.split("## Paired differences", 1)[1].split("\n## ", 1)[0]
    assert "here B = 200: p < 0.01" in paired and "2,000" not in paired
    assert not re.search(r"\bnan\b", md, re.IGNORECASE)
    # every p-value written one way: "p = 0.012", "p < 0.001" (or "p < 2/B" of this run's B)
    ps = re.findall(r"\bp (?:[=<] )?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?", md)
    assert ps and all(re.fullmatch(r"p (= [01]\.\d{3}|< 0\.001|< 0\.01)", p) for p in ps), sorted(set(ps))
    # the reference against itself: no test, said so
    tests = md.split("## Further tests", 1)[1].split("\n## ", 1)[0]
    ref = next(ln for ln in tests.splitlines() if ln.startswith("| model-02 [agent]"))
    assert "– (reference)" in ref
    # CCR and the claim rates carry their interval and the cases they are over (from the metrics rows)
    m = records.read_table("metrics", str(report / "run" / "metrics.parquet")).to_pandas()
    main = md.split("## Main table", 1)[1].split("\n## ", 1)[0]
    row = next(ln for ln in main.splitlines() if ln.startswith("| model-02 [agent]"))
    for metric in ("ccr", "erased_claims", "healthy_claims"):
        r = m[(m.model == "model-02") & (m.condition == "agent") & (m.metric == metric) & (m.breakdown == "all")
              & m.reference.isna()].iloc[0]
        scale, digits = (100, 1) if metric.endswith("claims") else (1, 3)
        shown = " ".join([f"{scale * r.value:.{digits}f}", f"[{scale * r.ci_low:.{digits}f},",
                          f"{scale * r.ci_high:.{digits}f}]"])
        assert f"| {shown} ({r.n_cases} cases)" in row, (metric, row)
    # the summary's ESG says the cases it is over
    esg = m[(m.model == "model-02") & (m.condition == "agent") & (m.metric == "esg") & (m.breakdown == "all")
            & m.reference.isna()].iloc[0]
    summ = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert f"ESG {esg.value:.3f} [{esg.ci_low:.3f}, {esg.ci_high:.3f}] ({esg.n_cases} cases)" in summ
