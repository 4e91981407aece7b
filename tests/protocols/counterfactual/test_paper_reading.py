"""The counterfactual paper, second reading: each test quotes the paper's sentence and checks the behaviour.

How the paper is read: C3 reads CCR (§5.3, Tables 8 and 10); the held-out tools pool unseen tools
only (§3.7, §5.4, Table 10); a case whose random removal failed keeps no view (§3.3 rule (ii));
``medscope stats seeds --condition`` (§3.9).
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pyarrow as pa
import pytest
import yaml

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.protocols.counterfactual.options import CounterfactualOptions
from medscope.protocols.counterfactual.protocol import CounterfactualProtocol
from medscope.analysis import decision_rules as rules
from medscope.analysis import testsets
from medscope.views.build import CaseContext, build_case_views
from medscope.views.finalize import finalize
from medscope.views.recipe import Recipe, check_heldout, load_recipe
from medscope.views.synthetic_cases import synthetic_cases
from medscope.views.tools import make_eraser
from pipelines import cli

CHECKS = "configs/plans/checks_c1_c4.yaml"


def diff_row(model, ref, test_set, metric, value, lo, hi):
    return {"model": model, "condition": "agent", "test_set": test_set, "breakdown": "all", "metric": metric,
            "value": value, "ci_low": lo, "ci_high": hi, "n_cases": 316, "reference": f"{ref}:agent",
            "p_value": 0.01, "n_boot": 2000}


# -- item 1: C3 ------------------------------------------------------------------------------

def test_c3_tests_ccr_the_metric_the_paper_reports_for_it():
    """§5.3: "The recipe continued with the same preference pass does not gain sensitivity on new
    data (fresh external CCR 0.542 vs 0.560, -0.018 [-0.068, 0.040])"; Table 8: "CCR (unedited
    lesions)". C3's gain condition reads `ccr` (O and R), never the O-only `sensitivity`."""
    plan, _ = rules.load_plan(CHECKS)
    c3 = next(r for r in plan.rules if r.id == "C3")

    def table(ccr_gain, sens_gain):
        rows = []
        for ts in ("fresh_external", "heldout_tools"):
            rows += [diff_row("recipe_dpo", "recipe", ts, "ccr", ccr_gain, ccr_gain - 0.01, ccr_gain + 0.01),
                     diff_row("recipe_dpo", "recipe", ts, "sensitivity", sens_gain, sens_gain - 0.01, sens_gain + 0.01),
                     diff_row("recipe_dpo", "recipe", ts, "erased_claims", 0.0, -0.01, 0.01)]
        return pd.DataFrame(rows)

    # CCR up 0.05 on both sets, O-only sensitivity flat: passes (the verdict follows CCR) ...
    assert rules.apply_rule(c3, table(0.05, 0.0))["verdict"] == "pass"
    # ... and the reverse fails: a sensitivity gain alone is not C3's endpoint
    assert rules.apply_rule(c3, table(0.0, 0.05))["verdict"] == "fail"
    # the paper's own numbers (Table 10, fresh external CCR 0.542 vs 0.560) fail it
    assert rules.apply_rule(c3, table(-0.018, 0.05))["verdict"] == "fail"
    assert "sensitivity" not in plan.endpoints


# -- item 2: held-out tools ------------------------------------------------------------------

def test_heldout_tools_recipe_pools_unseen_tools_and_is_checked_against_training(tmp_path):
    """§3.7: "Telea and diffusion stay unseen"; Table 10: "Held-out tools: Telea and diffusion
    edits of the main test, pooled". The shipped recipe holds those two only, and a held-out
    recipe that shares a tool with its training recipe is refused, naming the tool."""
    held = load_recipe("configs/views/heldout_tools.yaml")
    training = load_recipe("configs/views/training.yaml")
    assert set(held.tools) == set(testsets.HELDOUT_TOOLS) == {"telea", "sd"}
    assert not set(held.all_tools()) & set(training.all_tools())
    bad = yaml.safe_load(open("configs/views/heldout_tools.yaml"))
    bad["tools"] = ["telea", "sd", "transplant"]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(MedScopeError, match=r"uses transplant, which training recipe 'training"):
        load_recipe(str(path))
    # the same check at evaluation time, against the training recipe named there
    with pytest.raises(MedScopeError, match="transplant"):
        check_heldout(["telea", "transplant"], training.all_tools())
    CounterfactualProtocol(CounterfactualOptions(test_set="heldout_tools", training_recipe="configs/views/training.yaml"))
    with pytest.raises(MedScopeError, match="cannot be added"):
        CounterfactualProtocol(CounterfactualOptions(test_set="heldout_tools", tools=["telea", "transplant"]))


def _rows(recipe: Recipe, n: int = 8, split: str = "test") -> list[dict]:
    erasers = {t: make_eraser(t) for t in recipe.all_tools()}
    rows = []
    for case in synthetic_cases(n, seed=11, size=96):
        rows += build_case_views(case, recipe, erasers, CaseContext(split=split), "h")[0]
    return rows


def test_heldout_tools_test_set_reads_only_unseen_tools_edits(tmp_path):
    """Table 10's pooled held-out tools are Telea and diffusion only: a held-out build that also
    holds transplant edits of the same cases gives the test set its Telea (and SD) target and
    random removals, and every O / N / D view, never a transplant edit."""
    recipe = Recipe(edit_detector=False, tools=["telea", "transplant"], tool_mode="all", insertion=False,
                    unmatched_control=False)
    rows = _rows(recipe)
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", records.to_table("views", rows), uri)
    items = CounterfactualProtocol(CounterfactualOptions(test_set="heldout_tools")).load_items(uri, images=False)
    got = sorted(i.item_id for i in items)
    want = sorted(r["view_id"] for r in rows if r["passed"] and (
        r["kind"] in ("original", "natural_negative", "degraded")
        or (r["kind"] in ("target_removal", "random_removal") and r["tool"] == "telea")))
    assert got == want and any("/target_removal/telea" in v for v in got)
    # the main test set reads every tool's edits
    main = CounterfactualProtocol(CounterfactualOptions(test_set="main")).load_items(uri, images=False)
    assert any(i.meta["tool"] == "transplant" for i in main)


# -- item 3: QC rule (ii) --------------------------------------------------------------------

def _with_failure(rows: list[dict], view: str, reason: str) -> pa.Table:
    rows = [dict(r) for r in rows]
    for r in rows:
        if r["view_id"] == view:
            r["passed"], r["reject_reason"] = False, reason
    return records.to_table("views", rows)


def test_a_case_whose_random_removal_failed_keeps_no_view(tmp_path):
    """§3.3: "A case is kept only if (i) the lesion no longer stands out after target removal
    ... (ii) no lesion pixel changed in random removal". A failed control drops the whole case:
    its original, target removal and degraded view too, and qc_report counts it under (ii)."""
    recipe = Recipe(edit_detector=False, tools=["telea"], insertion=False, unmatched_control=False)
    rows = _rows(recipe)
    assert all(r["passed"] for r in rows)
    lesion_cases = sorted({r["case_id"] for r in rows if r["kind"] == "original"})
    victim = lesion_cases[1]
    table = _with_failure(rows, f"{victim}/random_removal/telea", "lesion_pixels_changed")
    out, rejects, report = finalize(table, [], recipe)
    got = {r["view_id"]: (r["passed"], r["reject_reason"]) for r in out.to_pylist()}
    assert got[f"{victim}/target_removal/telea"] == (False, "paired_control_failed")
    assert got[f"{victim}/original/none"] == (False, "case_failed_qc")
    assert got[next(v for v in got if v.startswith(f"{victim}/degraded/"))] == (False, "case_failed_qc")
    assert all(ok for v, (ok, _) in got.items() if not v.startswith(f"{victim}/"))
    k = report["keep_rules"]
    assert k == {"lesion_cases": len(lesion_cases), "kept_by_rules": len(lesion_cases) - 1, "dropped": 1,
                 "dropped_rule_i": 0, "dropped_rule_ii": 1, "dropped_rule_ii_only": 1, "dropped_unpaired": 0}
    # no evaluation set of any split sees a view of the dropped case
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", out, uri)
    for ts in ("main", "heldout_tools"):
        assert not any(i.case_id == victim for i in CounterfactualProtocol(CounterfactualOptions(test_set=ts)).load_items(uri, images=False))
    # and T and R stay equal in number (§3.2: the pair shares tool and shape)
    kinds = [r["kind"] for r in out.to_pylist() if r["passed"]]
    assert kinds.count("target_removal") == kinds.count("random_removal")


def test_with_every_tool_a_failed_control_drops_only_its_tools_pair():
    """§3.2: "Target and random removal share tool and shape": with several tools per case (§5.4),
    one tool's failed control fails that tool's target removal; the case stays on the other."""
    recipe = Recipe(edit_detector=False, tools=["telea", "ns"], tool_mode="all", insertion=False,
                    unmatched_control=False)
    rows = _rows(recipe, n=4)
    case = next(r["case_id"] for r in rows if r["kind"] == "original")
    out, _, report = finalize(_with_failure(rows, f"{case}/random_removal/ns", "lesion_pixels_changed"), [], recipe)
    got = {r["view_id"]: (r["passed"], r["reject_reason"]) for r in out.to_pylist()}
    assert got[f"{case}/target_removal/ns"] == (False, "paired_control_failed")
    assert got[f"{case}/target_removal/telea"] == (True, None) and got[f"{case}/original/none"] == (True, None)
    assert report["keep_rules"]["dropped"] == 0


# -- item 7: stats seeds --condition ---------------------------------------------------------

def test_stats_seeds_names_the_condition_of_a_multi_condition_run(tmp_path, capsys):
    """§3.9: "Seed results are reported as mean ± standard deviation over three seeds". A run
    scored under two prompting conditions has two rows per model; --condition picks one, and
    without it the error says to name one."""
    vals = {"agent": [0.70, 0.74, 0.72], "plain": [0.10, 0.30, 0.20]}
    rows = [{"model": f"r_s{i}", "condition": cond, "test_set": "main", "breakdown": "all", "metric": "esg",
             "value": v, "ci_low": None, "ci_high": None, "n_cases": 3, "reference": None, "p_value": None,
             "n_boot": None} for cond, vs in vals.items() for i, v in enumerate(vs)]
    uri = str(tmp_path / "metrics.parquet")
    records.write_table("metrics", pd.DataFrame(rows).to_dict("records"), uri)
    args = ["stats", "seeds", "--metrics", uri, "--arm", "recipe=r_s0,r_s1,r_s2", "--metric", "esg"]
    assert cli.main(args) == 2
    assert "name one with --condition (agent, plain)" in capsys.readouterr().err
    cli.main(args + ["--condition", "plain"])
    # mean 0.2, sample sd of (0.1, 0.3, 0.2) = 0.1
    assert "main plain: recipe esg 0.200 ± 0.100 (seeds: 0.100, 0.300, 0.200)" in capsys.readouterr().out
    assert cli.main(args + ["--condition", "cautious"]) == 2
    assert "no rows of condition 'cautious'" in capsys.readouterr().err


# -- item 4: captions say what the code computes ---------------------------------------------

@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    from medscope.protocols.counterfactual.scoring import score_run
    from medscope.testing import synthetic_runs as synthetic

    root = tmp_path_factory.mktemp("captions")
    v = synthetic.views(12, 10, 6, seed=4)
    e = synthetic.episodes(v, synthetic.model_zoo(2), seed=4)
    records.write_table("views", v, str(root / "views.parquet"))
    records.write_table("episodes", e, str(root / "episodes.parquet"))
    score_run(str(root / "episodes.parquet"), str(root / "views.parquet"), str(root / "run"), n_boot=50)
    return root


def test_further_metrics_captions_match_the_computed_definitions(scored):
    """§3.8 and Table 10: "Denial: intact lesion denied or referred after a control edit"; CCR and
    referrals are over the answerable views O ∪ R; decision_risk / decision_aurc are ours. Each
    caption is checked against the number the scoring wrote, recomputed by hand from the scores."""
    from medscope.report.build import build_report

    build_report(str(scored / "run"), str(scored / "rep"), reference="model-00", gallery_cases=0)
    md = (scored / "rep" / "report.md").read_text()
    more = md[md.index("## Further metrics"):md.index("## Sensitivity by asked finding")]
    assert "control_denial: 'absent' or refer on R (Table 10's Denial)" in more
    assert "referral_rate: refer on O ∪ R" in more and "decision_aurc (addition)" in more
    assert "decision_risk@c, decision_aurc: addition" in more and "referral rate (all views)" not in md
    scores = records.read_table("scores", str(scored / "run" / "scores.parquet")).to_pandas()
    metrics = records.read_table("metrics", str(scored / "run" / "metrics.parquet")).to_pandas()
    m = scores[scores.model == "model-01"]
    r, a = m[m.kind == "random_removal"], m[m.kind.isin(["original", "random_removal"])]
    by_hand = {"control_denial": ((r.action == "refer") | ((r.action == "answer") & (r.claims_finding == False))).mean(),  # noqa: E712
               "referral_rate": (a.action == "refer").mean()}
    for metric, want in by_hand.items():
        got = metrics[(metrics.model == "model-01") & (metrics.metric == metric) & (metrics.breakdown == "all")
                      & metrics.reference.isna()]["value"].iloc[0]
        assert got == pytest.approx(want)
    # "Tests of §3.9" held tests §3.9 does not name; Fisher is §3.9's, the rest are labelled additions
    tests = md[md.index("## Further tests"):]
    assert "Tests of §3.9" not in md and "are additions, not the counterfactual paper's tests" in tests


def test_direction_paper_prints_table_6_orientation(scored, capsys):
    """Table 6: "MedScope-4B minus each model ... Positive is better for ESG and net utility". The
    stored rows are model − reference; --direction paper prints reference − model, the interval
    negated with its ends swapped, the same p."""
    run = str(scored / "run")
    cli.main(["compare", "--metrics", run, "--reference", "model-00", "--n-boot", "100", "--metric", "esg"])
    model_first = capsys.readouterr().out
    cli.main(["compare", "--metrics", run, "--reference", "model-00", "--n-boot", "100", "--metric", "esg",
              "--direction", "paper"])
    paper = capsys.readouterr().out
    scores = records.read_table("scores", str(scored / "run" / "scores.parquet")).to_pandas()

    def esg(model):
        s = scores[scores.model == model]
        absent = (s.action == "refer") | ((s.action == "answer") & (s.claims_finding == False))  # noqa: E712
        return absent[s.kind == "target_removal"].mean() - absent[s.kind == "random_removal"].mean()

    diff = esg("model-00") - esg("model-01")  # MedScope minus the model, Table 6's way
    assert f"main: model-00:agent - model-01:agent: esg {diff:+.3f}" in paper
    assert f"main: model-01:agent - model-00:agent: esg {-diff:+.3f}" in model_first
    lo, hi = re.search(r"esg [+-]\d\.\d+ \[([+-]\d\.\d+), ([+-]\d\.\d+)\]", model_first).groups()
    assert f"[{-float(hi):+.3f}, {-float(lo):+.3f}]" in paper


# -- item 6: every addition listed, marked where it is set, named in the report ---------------

def test_every_addition_is_listed_in_the_docs_and_marked_where_it_is_set(scored):
    """Developers' guide: "every value the paper does not give is marked `addition:` where it is
    set and listed in the docs". JPEG quality, motion length, the border exclusion, the half-image
    box rule, p_zoom, warm-up, decay, clipping, the alternative matrices' critical penalties, the
    ellipse aspect cap, C4's lr and stage 2's batch are among them (item 6)."""
    from pathlib import Path

    from medscope.protocols.counterfactual.additions import ADDITIONS

    ids = {a.id for a in ADDITIONS}
    assert {"jpeg_quality", "motion_length_frac", "mask_touches_border", "grounded_box_rule", "p_zoom",
            "warmup_frac", "lr_decay", "gradient_clipping", "critical_alternatives", "ellipse_max_aspect",
            "c4_lr", "stage2_batch"} <= ids
    doc = Path("docs/counterfactual.md").read_text()
    table = doc[doc.index("## Additions: values the paper does not give"):]
    for a in ADDITIONS:
        assert f"| `{a.id}` | {a.value} | `{a.where}` |" in table
        assert "addition" in Path(a.where).read_text(), a.where
    # the report's Run section names the additions in force for this run
    md = (scored / "rep" / "report.md").read_text() if (scored / "rep" / "report.md").exists() else None
    if md is None:
        from medscope.report.build import build_report

        build_report(str(scored / "run"), str(scored / "rep"), reference="model-00", gallery_cases=0)
        md = (scored / "rep" / "report.md").read_text()
    run = md[md.index("## Run"):md.index("## Main table")]
    assert "additions in force" in run and "grounded_box_rule" in run and "decision_risk" in run


# -- the offline erasure tools ---------------------------------------------------------------

def test_offline_tools_change_only_the_region_and_continue_its_surroundings():
    """§3.2: "The lesion mask, dilated by 5 pixels, is inpainted" and for the control "No lesion
    pixel changes". Every offline tool changes the region alone; on an image whose two halves
    differ by 100 grey levels, the exemplar tool takes tissue from the matching half, and the
    contrib tools (cv2.xphoto) fill with the surroundings' grey level."""
    import numpy as np

    rng = np.random.default_rng(0)
    gray = np.where(np.arange(96)[None, :] < 48, 60, 160) + rng.normal(0, 6, (96, 96))
    image = np.repeat(np.clip(gray, 0, 255).astype(np.uint8)[:, :, None], 3, axis=2)
    region = np.zeros((96, 96), bool)
    region[40:52, 12:24] = True  # in the dark half
    for tool in ("exemplar", "fsr_fast", "shiftmap"):
        out = make_eraser(tool).fill(image, region, np.random.default_rng(1))
        assert np.array_equal(out[~region], image[~region]), tool
        assert abs(float(out[region].mean()) - 60) < 15, tool
