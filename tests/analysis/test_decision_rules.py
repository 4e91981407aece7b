"""Pre-registered rules on crafted metrics (counterfactual paper §3.6, §3.7 numbers), plan lock and amendments."""

from __future__ import annotations

import argparse
import json

import pandas as pd
import pyarrow as pa
import pytest
import yaml

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.analysis import decision_rules as rules
from medscope.testing import synthetic_runs as synthetic
from pipelines import score as score_job

PLAN = "configs/plans/v4_selection.yaml"


def metric_rows(values: dict, test_set="validation", breakdown="all"):
    return [{"model": m, "condition": "agent", "test_set": test_set, "breakdown": breakdown, "metric": k, "value": v,
             "ci_low": None, "ci_high": None, "n_cases": 540, "reference": None, "p_value": None, "n_boot": None}
            for m, d in values.items() for k, v in d.items()]


def diff_row(model, ref, test_set, metric, value, lo, hi):
    return {"model": model, "condition": "agent", "test_set": test_set, "breakdown": "all", "metric": metric,
            "value": value, "ci_low": lo, "ci_high": hi, "n_cases": 316, "reference": f"{ref}:agent",
            "p_value": 0.01, "n_boot": 2000}


def paper_selection(**over):
    vals = {"stage1": {"net_utility": 0.585, "healthy_claims": 0.136},
            "stage2": {"net_utility": 0.610, "healthy_claims": 0.127},
            "stage3": {"net_utility": 0.613, "healthy_claims": 0.077},
            "v3": {"net_utility": 0.593, "healthy_claims": 0.082}}
    for k, v in over.items():
        vals[k] = {**vals[k], **v}
    rows = metric_rows(vals)
    for m in ("stage1", "stage2", "stage3"):
        rows += metric_rows({m: {"sensitivity": 0.9}}, breakdown="finding=polyp")
        rows += metric_rows({m: {"sensitivity": 0.2 if m == "stage2" else 0.5}}, breakdown="finding=tumour")
    return pd.DataFrame(rows)


def verdicts(table, plan_path=PLAN):
    plan, _ = rules.load_plan(plan_path)
    return {v["id"]: v for v in rules.apply_plan(plan, table)}


def test_stage_selection_as_in_the_paper_and_its_branches():
    v = verdicts(paper_selection())
    assert v["stage-selection"]["verdict"] == "select stage3"  # 0.613 >= 0.590 and 0.077 <= 0.147
    assert any("0.613" in line and "0.590" not in line for line in v["stage-selection"]["lines"])
    # stage 3 raises healthy claims too much -> stage 2 against stage 1
    assert verdicts(paper_selection(stage3={"healthy_claims": 0.150}))["stage-selection"]["verdict"] == "select stage2"
    # ... and stage 2 loses too much utility -> stage 1
    v = verdicts(paper_selection(stage3={"healthy_claims": 0.150}, stage2={"net_utility": 0.560}))
    assert v["stage-selection"]["verdict"] == "select stage1"
    # boundary: exactly U2 - 0.02 still selects stage 3 (>=)
    assert verdicts(paper_selection(stage3={"net_utility": 0.59}))["stage-selection"]["verdict"] == "select stage3"
    # amendment-1 fallback: v3 kept when the chosen stage falls more than 0.02 below it
    assert verdicts(paper_selection(v3={"net_utility": 0.70}))["stage-selection"]["verdict"] == "select v3"
    # §3.6 registers no per-finding sensitivity floor: the plan holds the selection rule only
    assert set(v) == {"stage-selection"}


def test_a_floor_rule_declared_as_an_addition_gates_models_out():
    plan = rules.Plan.model_validate({
        "name": "floor", "registered": "2026-11-30", "test_sets": ["validation"], "endpoints": ["sensitivity"],
        "rules": [{"id": "sensitivity-floor", "kind": "floor", "test_set": "validation", "metric": "sensitivity",
                   "floor": 0.25, "models": ["stage1", "stage2", "stage3"],
                   "addition": "not in the counterfactual paper §3.6; a per-finding floor"}]})
    v = rules.apply_plan(plan, paper_selection())
    assert v[0]["eligible"] == ["stage1", "stage3"]  # stage 2's tumour sensitivity 0.2 < 0.25
    assert "[addition: not in the counterfactual paper §3.6" in rules.format_verdicts(plan, v)


def test_checks_c1_to_c3_with_the_papers_numbers():
    rows = [
        # C1 (Table 10): denial matched 51.2% vs unmatched 31.5% on fresh external; 13.7 vs 12.9 held-out tools
        diff_row("matched", "unmatched", "fresh_external", "control_denial", 0.197, 0.15, 0.24),
        diff_row("matched", "unmatched", "heldout_tools", "control_denial", 0.008, -0.02, 0.04),
        # C1's constraints (Table 10): erased 8.3 vs 27.4 and 11.0 vs 10.5; CCR 0.488 vs 0.670 and 0.859 vs 0.868
        diff_row("matched", "unmatched", "fresh_external", "erased_claims", -0.191, -0.24, -0.14),
        diff_row("matched", "unmatched", "heldout_tools", "erased_claims", 0.005, -0.02, 0.03),
        diff_row("matched", "unmatched", "fresh_external", "ccr", -0.182, -0.24, -0.12),
        diff_row("matched", "unmatched", "heldout_tools", "ccr", -0.009, -0.04, 0.02),
        # C2: ESG +0.012 [-0.053, 0.077]; net utility +0.148 [0.054, 0.247]
        diff_row("recipe", "removal_dpo", "fresh_external", "esg", 0.012, -0.053, 0.077),
        diff_row("recipe", "removal_dpo", "fresh_external", "net_utility", 0.148, 0.054, 0.247),
        # C3: CCR -0.018 [-0.068, 0.040] on fresh external (Table 10: 0.542 vs 0.560)
        diff_row("recipe_dpo", "recipe", "fresh_external", "ccr", -0.018, -0.068, 0.040),
        diff_row("recipe_dpo", "recipe", "heldout_tools", "ccr", 0.027, 0.0, 0.05),
        diff_row("recipe_dpo", "recipe", "fresh_external", "erased_claims", -0.012, -0.04, 0.02),
        diff_row("recipe_dpo", "recipe", "heldout_tools", "erased_claims", 0.080, 0.046, 0.118),
    ]
    plan, _ = rules.load_plan("configs/plans/checks_c1_c4.yaml")
    table = pd.DataFrame(rows)
    got = {r.id: rules.apply_rule(r, table) for r in plan.rules if r.id != "C4"}
    assert got["C1"]["verdict"] == "inconclusive"
    assert got["C2"]["verdict"] == "no difference shown"
    assert got["C3"]["verdict"] == "fail"
    text = rules.format_verdicts(plan, list(got.values()))
    assert "+0.012 [-0.053, +0.077]" in text and "needs >= +0.050, interval excluding 0" in text
    # C2 passes when both differences clear 0.05 with intervals excluding zero
    table.loc[table.metric == "esg", ["value", "ci_low", "ci_high"]] = [0.08, 0.055, 0.11]
    assert rules.apply_rule(plan.rules[1], table)["verdict"] == "recipe beats baseline"
    # C1 "within margins" when both differences are under 5 points
    table.loc[(table.metric == "control_denial") & (table.test_set == "fresh_external"), "value"] = 0.03
    assert rules.apply_rule(plan.rules[0], table)["verdict"] == "within margins"
    with pytest.raises(MedScopeError, match="medscope compare --reference cmcc_control"):
        rules.apply_rule(plan.rules[3], table)


def c1_rows(denial_fe, denial_ht, erased_fe=0.0, ccr_ht=0.0):
    return pd.DataFrame([
        diff_row("matched", "unmatched", "fresh_external", "control_denial", denial_fe, denial_fe - 0.03, denial_fe + 0.03),
        diff_row("matched", "unmatched", "heldout_tools", "control_denial", denial_ht, denial_ht - 0.03, denial_ht + 0.03),
        diff_row("matched", "unmatched", "fresh_external", "erased_claims", erased_fe, erased_fe - 0.02, erased_fe + 0.02),
        diff_row("matched", "unmatched", "heldout_tools", "erased_claims", 0.0, -0.02, 0.02),
        diff_row("matched", "unmatched", "fresh_external", "ccr", 0.0, -0.02, 0.02),
        diff_row("matched", "unmatched", "heldout_tools", "ccr", ccr_ht, ccr_ht - 0.02, ccr_ht + 0.02),
    ])


def test_c1_matters_only_within_its_constraints_on_erased_claims_and_ccr():
    plan, _ = rules.load_plan("configs/plans/checks_c1_c4.yaml")
    c1 = plan.rules[0]
    # matched 8 and 6 points lower on both, intervals excluding zero, constraints held
    assert rules.apply_rule(c1, c1_rows(-0.08, -0.06))["verdict"] == "matching matters"
    # ... but not when it buys that with 5 more points of erased-lesion claims, or 4 points of CCR
    assert rules.apply_rule(c1, c1_rows(-0.08, -0.06, erased_fe=0.05))["verdict"] == "inconclusive"
    assert rules.apply_rule(c1, c1_rows(-0.08, -0.06, ccr_ht=-0.04))["verdict"] == "inconclusive"
    # 4.9 points lower is not "at least 5 points"; it is within margins (under 5 points)
    assert rules.apply_rule(c1, c1_rows(-0.049, -0.06))["verdict"] == "inconclusive"
    assert rules.apply_rule(c1, c1_rows(-0.049, -0.02))["verdict"] == "within margins"
    text = rules.format_verdicts(plan, [rules.apply_rule(c1, c1_rows(-0.08, -0.06))])
    assert "[addition: the paper names a constraint on erased-lesion claims" in text


def c4_rows(seed_diffs, pooled=(-0.03, -0.05, -0.01), esg=0.02, healthy=0.01):
    rows = [diff_row(f"cmcc@seed{i}", f"cmcc_control@seed{i}", "heldout_tools", "erased_claims", d, d - 0.03, d + 0.03)
            for i, d in enumerate(seed_diffs)]
    rows += [diff_row("cmcc", "cmcc_control", "heldout_tools", "erased_claims", *pooled),
             diff_row("cmcc", "cmcc_control", "heldout_tools", "esg", esg, esg - 0.02, esg + 0.02),
             diff_row("cmcc", "cmcc_control", "main", "healthy_claims", healthy, healthy - 0.02, healthy + 0.02),
             diff_row("cmcc", "cmcc_control", "fresh_external", "esg", 0.0, -0.03, 0.03),
             diff_row("cmcc", "cmcc_control", "fresh_external", "net_utility", 0.0, -0.03, 0.03)]
    return pd.DataFrame(rows)


def test_c4_needs_every_seed_pair_lower_and_the_pooled_interval_below_zero():
    plan, _ = rules.load_plan("configs/plans/checks_c1_c4.yaml")
    c4 = plan.rules[3]
    assert rules.apply_rule(c4, c4_rows([-0.02, -0.01, -0.03]))["verdict"] == "pass"
    # the paper's per-seed differences (Table 8: -0.029, +0.059, +0.005) fail the every-seed condition
    assert rules.apply_rule(c4, c4_rows([-0.029, 0.059, 0.005]))["verdict"] == "fail"
    # a tie in one seed is not "lower"
    assert rules.apply_rule(c4, c4_rows([-0.02, 0.0, -0.03]))["verdict"] == "fail"
    # pooled interval reaching zero, ESG lower, or the healthy-image guard (Table 8: +0.052) fail it
    assert rules.apply_rule(c4, c4_rows([-0.02, -0.01, -0.03], pooled=(-0.01, -0.03, 0.01)))["verdict"] == "fail"
    assert rules.apply_rule(c4, c4_rows([-0.02, -0.01, -0.03], esg=-0.001))["verdict"] == "fail"
    assert rules.apply_rule(c4, c4_rows([-0.02, -0.01, -0.03], healthy=0.052))["verdict"] == "fail"
    # a seed pair that was never run is not lower: two seeds of three do not pass
    assert rules.apply_rule(c4, c4_rows([-0.02, -0.01]))["verdict"] == "fail"
    line = next(x for x in rules.apply_rule(c4, c4_rows([-0.029, 0.059, 0.005]))["lines"] if "per seed pair" in x)
    assert "seed 0: -0.029, seed 1: +0.059, seed 2: +0.005" in line and line.startswith("  [ ]")


def test_lower_in_every_seed_pair_on_hand_worked_per_seed_values():
    """§3.7 C4 "lower in every seed pair", from per-seed erased-lesion claim rates worked by hand:
    a seed pair is (C4 arm at seed k) - (its matched-compute control at seed k)."""
    from medscope.analysis.training_seeds import lower_in_every_seed_pair, seed_pair_differences

    # held-out tools, 200 erased views per model: claims counted per seed
    c4 = {0: 20 / 200, 1: 30 / 200, 2: 25 / 200}        # 0.100, 0.150, 0.125
    control = {0: 26 / 200, 1: 31 / 200, 2: 40 / 200}   # 0.130, 0.155, 0.200
    # by hand: -0.030, -0.005, -0.075: every seed lower
    ok, text = lower_in_every_seed_pair({k: c4[k] - control[k] for k in c4})
    assert ok and text == "seed 0: -0.030, seed 1: -0.005, seed 2: -0.075"
    # exactly one seed fails: seed 1's C4 arm claims 32 of 200 (0.160 vs 0.155: +0.005)
    c4_bad = {**c4, 1: 32 / 200}
    ok, text = lower_in_every_seed_pair({k: c4_bad[k] - control[k] for k in c4})
    assert not ok and "seed 1: +0.005" in text
    # the same values through the metrics rows the sweep writes (model <arm>@seed<k>)
    table = pd.DataFrame([diff_row(f"cmcc@seed{k}", f"cmcc_control@seed{k}", "heldout_tools", "erased_claims",
                                   c4_bad[k] - control[k], None, None) for k in c4]
                         + [diff_row("cmcc", "cmcc_control", "heldout_tools", "erased_claims", -0.03, -0.05, -0.01),
                            diff_row("other@seed1", "cmcc_control@seed1", "heldout_tools", "erased_claims", -0.5, None, None)])
    diffs = seed_pair_differences(table, "cmcc", "cmcc_control", "erased_claims", "heldout_tools")
    assert diffs == pytest.approx({0: -0.030, 1: 0.005, 2: -0.075})
    assert lower_in_every_seed_pair(diffs, [0, 2]) == (True, "seed 0: -0.030, seed 2: -0.075")
    assert lower_in_every_seed_pair(diffs, [0, 1, 2])[0] is False
    assert lower_in_every_seed_pair({0: -0.1}, [0, 1]) == (False, "seed 0: -0.100, seed 1: missing")


def test_plan_fields_bind_the_rules(tmp_path):
    base = {"name": "x", "registered": "now", "test_sets": ["main"], "endpoints": ["esg"], "margins": {"m": 0.05},
            "rules": [{"id": "r", "kind": "check", "outcomes": [{"label": "a", "all_of": [
                {"test_set": "main", "metric": "esg", "model": "a", "reference": "b", "direction": "higher",
                 "min_effect": "m"}]}]}]}
    p = tmp_path / "p.yaml"
    write_plan(p, base)
    plan, _ = rules.load_plan(str(p))
    assert plan.rules[0].outcomes[0].all_of[0].min_effect == 0.05  # the margin's value
    for bad, msg in [({"test_set": "fresh_external"}, "not among the plan's test_sets"),
                     ({"metric": "ccr"}, "not among the plan's endpoints"),
                     ({"min_effect": "nope"}, "margins do not define")]:
        data = yaml.safe_load(yaml.safe_dump(base))
        data["rules"][0]["outcomes"][0]["all_of"][0].update(bad)
        write_plan(p, data)
        with pytest.raises(MedScopeError, match=msg):
            rules.load_plan(str(p))


def write_plan(path, data):
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_lock_refuses_a_changed_plan_unless_an_amendment_leads_there(tmp_path):
    plan_path = tmp_path / "plan.yaml"
    data = yaml.safe_load(open(PLAN))
    write_plan(plan_path, data)
    run = tmp_path / "run"
    lock = rules.lock_plan(str(plan_path), str(run))
    metrics_uri = str(run / "metrics.parquet")
    records.write_table("metrics", pa.Table.from_pandas(paper_selection()), metrics_uri)
    out = score_job.apply_rules(str(plan_path), [metrics_uri])
    assert "stage-selection [stage_selection]: select stage3" in out and lock["hash"] in out
    # a second lock keeps the first hash
    data["rules"][0]["harm_tolerance"] = 0.05
    write_plan(plan_path, data)
    assert rules.lock_plan(str(plan_path), str(run))["hash"] == lock["hash"]
    with pytest.raises(MedScopeError, match="changed after its runs began"):
        score_job.apply_rules(str(plan_path), [metrics_uri])
    _, new_hash = rules.load_plan(str(plan_path))
    data["amendments"] = [{"date": "2026-11-02", "reason": "wrong tolerance", "supersedes": "0000", "hash": new_hash}]
    write_plan(plan_path, data)
    with pytest.raises(MedScopeError, match="changed after"):  # an amendment from another hash does not count
        score_job.apply_rules(str(plan_path), [metrics_uri])
    data["amendments"][0]["supersedes"] = lock["hash"]
    write_plan(plan_path, data)
    out = score_job.apply_rules(str(plan_path), [metrics_uri])
    assert "amendment of 2026-11-02 (wrong tolerance)" in out
    # no lock at all: refused unless --unlocked, which the output says
    other = tmp_path / "other" / "metrics.parquet"
    records.write_table("metrics", pa.Table.from_pandas(paper_selection()), str(other))
    with pytest.raises(MedScopeError, match="not locked"):
        score_job.apply_rules(str(plan_path), [str(other)])
    assert "UNLOCKED" in score_job.apply_rules(str(plan_path), [str(other)], unlocked=True)


def test_bad_plan_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.yaml"
    write_plan(p, {"name": "x", "registered": "now", "rules": [{"id": "r", "kind": "check", "outcomes": [
        {"label": "a", "all_of": [{"test_set": "t", "metric": "esg", "model": "m", "direction": "higher"}]}]}]})
    with pytest.raises(MedScopeError, match="reference"):
        rules.load_plan(str(p))


def cli(argv):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="verb")
    score_job.register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def test_score_compare_and_rules_cli_end_to_end(tmp_path, capsys):
    v = synthetic.views(30, 30, 20, seed=9)
    # the validation split: score recomputes the eval run's test set from the views (issue 50)
    v = v.set_column(v.schema.get_field_index("split"), "split", pa.array(["validation"] * v.num_rows))
    zoo = synthetic.model_zoo(3, seed=1)
    e = synthetic.episodes(v, {"stage1": zoo["model-00"], "stage2": zoo["model-01"], "stage3": zoo["model-02"],
                               "v3": zoo["model-01"]}, seed=9)
    records.write_table("views", v, str(tmp_path / "views.parquet"))
    records.write_part("episodes", e, str(tmp_path / "episodes"), "0")
    # the eval run fixed the test set (its sweep.json); score takes it from there, never again
    (tmp_path / "sweep.json").write_text(json.dumps({"protocol": "counterfactual",
                                                     "protocol_options": {"test_set": "validation"}}))
    run = tmp_path / "run"
    with pytest.raises(MedScopeError, match="'test_set' of counterfactual is set at eval, not at score: it was "
                                            "fixed by the eval run"):
        cli(["score", "--episodes", str(tmp_path / "episodes"), "--views", str(tmp_path / "views.parquet"),
             "--out", str(run), "--test-set", "main"])
    cli(["score", "--episodes", str(tmp_path / "episodes"), "--views", str(tmp_path / "views.parquet"),
         "--out", str(run), "--n-boot", "200", "--plan", PLAN])
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 4 * v.num_rows and summary["rejects"] == 0
    assert (run / "plan.lock.json").exists() and (run / "run.json").exists()
    recorded = json.loads((run / "run.json").read_text())["protocol_options"]
    assert (recorded["test_set"], recorded["n_boot"], recorded["plan"]) == ("validation", 200, PLAN)
    m = records.read_table("metrics", str(run / "metrics.parquet")).to_pandas()
    esg = m[(m.model == "stage3") & (m.metric == "esg") & (m.breakdown == "all")].iloc[0]
    assert esg.ci_low <= esg.value <= esg.ci_high and esg.n_boot == 200
    cli(["compare", "--metrics", str(run / "metrics.parquet"), "--reference", "stage1", "--n-boot", "200"])
    printed = capsys.readouterr().out
    assert "validation: stage3:agent - stage1:agent: esg" in printed
    comp = records.read_table("metrics", str(run / "comparisons.parquet")).to_pandas()
    assert set(comp.model) == {"stage2", "stage3", "v3"} and (comp.reference == "stage1:agent").all()
    cli(["rules", "apply", "--plan", PLAN, "--metrics", str(run), str(run / "comparisons.parquet")])
    out = capsys.readouterr().out
    assert "stage-selection [stage_selection]: select" in out and "floor" not in out


def test_label_noise_rerun_through_the_cli(tmp_path, capsys):
    v = synthetic.views(10, 12, 0, seed=4)
    zoo = synthetic.model_zoo(3, seed=4)
    for z in zoo.values():
        z["natural_negative"] = 0.6
    e = synthetic.episodes(v, zoo, seed=4)
    records.write_table("views", v, str(tmp_path / "views.parquet"))
    records.write_table("episodes", e, str(tmp_path / "episodes.parquet"))
    run = tmp_path / "run"
    cli(["score", "--episodes", str(tmp_path / "episodes.parquet"), "--views", str(tmp_path / "views.parquet"),
         "--out", str(run), "--n-boot", "50", "--panel", "model-00,model-01,model-02", "--min-votes", "3"])
    summary = json.loads(capsys.readouterr().out)
    ep = e.to_pandas()
    claims = ep[ep.item_id.str.endswith("natural_negative") & (ep.action == "answer") & ep.claims_finding.fillna(False)]
    expected = sorted(c for c, n in claims.groupby("case_id").model.nunique().items() if n == 3)
    assert summary["disputed_cases"] == len(expected) > 0
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["disputed_cases"] == expected
    m = records.read_table("metrics", str(run / "metrics.parquet")).to_pandas()
    clean = m[(m.test_set == "main-undisputed") & (m.metric == "healthy_claims") & (m.breakdown == "all")]
    assert (clean.n_cases == 12 - len(expected)).all()
    cli(["compare", "--metrics", str(run), "--reference", "model-00", "--n-boot", "50", "--exclude-disputed"])
    comp = records.read_table("metrics", str(run / "comparisons.parquet")).to_pandas()
    assert (comp.n_cases == 22 - len(expected)).all()


def test_rules_lock_says_when_the_run_stays_locked_to_another_plan(tmp_path, capsys):
    from pipelines.score import _lock

    plan_path = tmp_path / "plan.yaml"
    data = yaml.safe_load(open(PLAN))
    write_plan(plan_path, data)
    run = tmp_path / "run"
    _lock(str(plan_path), str(run))
    first = capsys.readouterr()
    assert first.err == "" and json.loads(first.out)["hash"] == rules.load_plan(str(plan_path))[1]
    locked = json.loads(first.out)["hash"]
    _lock(str(plan_path), str(run))  # the same plan again: idempotent, nothing to say
    assert capsys.readouterr().err == ""
    data["rules"][0]["harm_tolerance"] = 0.05
    write_plan(plan_path, data)
    _lock(str(plan_path), str(run))
    again = capsys.readouterr()
    new = rules.load_plan(str(plan_path))[1]
    assert json.loads(again.out)["hash"] == locked != new
    assert f"hash {locked}" in again.err and f"hashes {new}" in again.err and "amendment" in again.err
