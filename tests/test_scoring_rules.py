"""Pre-registered rules on crafted metrics (seed 000 §3.6, §3.7 numbers), plan lock and amendments."""

from __future__ import annotations

import argparse
import json

import pandas as pd
import pyarrow as pa
import pytest
import yaml

from medscope import records
from medscope.errors import MedScopeError
from medscope.scoring import rules, synthetic
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
    # the sensitivity floor per finding gates stage 2 out
    assert v["sensitivity-floor"]["eligible"] == ["stage1", "stage3"]


def test_checks_c1_to_c3_with_the_papers_numbers():
    rows = [
        # C1 (Table 10): denial matched 51.2% vs unmatched 31.5% on fresh external; 13.7 vs 12.9 held-out tools
        diff_row("matched", "unmatched", "fresh_external", "control_denial", 0.197, 0.15, 0.24),
        diff_row("matched", "unmatched", "heldout_tools", "control_denial", 0.008, -0.02, 0.04),
        # C2: ESG +0.012 [-0.053, 0.077]; net utility +0.148 [0.054, 0.247]
        diff_row("recipe", "removal_dpo", "fresh_external", "esg", 0.012, -0.053, 0.077),
        diff_row("recipe", "removal_dpo", "fresh_external", "net_utility", 0.148, 0.054, 0.247),
        # C3: sensitivity -0.018 [-0.068, 0.040] on fresh external
        diff_row("recipe_dpo", "recipe", "fresh_external", "sensitivity", -0.018, -0.068, 0.040),
        diff_row("recipe_dpo", "recipe", "heldout_tools", "sensitivity", 0.027, 0.0, 0.05),
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
    zoo = synthetic.model_zoo(3, seed=1)
    e = synthetic.episodes(v, {"stage1": zoo["model-00"], "stage2": zoo["model-01"], "stage3": zoo["model-02"],
                               "v3": zoo["model-01"]}, seed=9)
    records.write_table("views", v, str(tmp_path / "views.parquet"))
    records.write_part("episodes", e, str(tmp_path / "episodes"), "0")
    run = tmp_path / "run"
    cli(["score", "--episodes", str(tmp_path / "episodes"), "--views", str(tmp_path / "views.parquet"),
         "--out", str(run), "--test-set", "validation", "--n-boot", "200", "--plan", PLAN])
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 4 * v.num_rows and summary["rejects"] == 0
    assert (run / "plan.lock.json").exists() and (run / "run.json").exists()
    m = records.read_table("metrics", str(run / "metrics.parquet")).to_pandas()
    esg = m[(m.model == "stage3") & (m.metric == "esg") & (m.breakdown == "all")].iloc[0]
    assert esg.ci_low <= esg.value <= esg.ci_high and esg.n_boot == 200
    cli(["compare", "--metrics", str(run / "metrics.parquet"), "--reference", "stage1", "--n-boot", "200"])
    printed = capsys.readouterr().out
    assert "validation: stage3 - stage1:agent: esg" in printed
    comp = records.read_table("metrics", str(run / "comparisons.parquet")).to_pandas()
    assert set(comp.model) == {"stage2", "stage3", "v3"} and (comp.reference == "stage1:agent").all()
    cli(["rules", "apply", "--plan", PLAN, "--metrics", str(run), str(run / "comparisons.parquet")])
    out = capsys.readouterr().out
    assert "stage-selection [stage_selection]: select" in out and "sensitivity-floor [floor]: eligible" in out


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
    claims = ep[ep.view_id.str.endswith("natural_negative") & (ep.action == "answer") & ep.claims_finding.fillna(False)]
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
