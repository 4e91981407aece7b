"""Paired differences within one model: ``--reference MODEL:CONDITION`` compares the model's other
conditions with that one (sighted minus blind says whether a single model reads the image)."""

import pyarrow.compute as pc

from medscope.analysis import paired_differences as cmp
from medscope.io import records
from medscope.protocols.counterfactual import costs, rewards
from medscope.testing import synthetic_runs as synthetic
from pipelines import cli

# a model that reads the image when it sees it, and one that cannot (blind): P(claims) per view kind
SIGHTED = {"original": 0.9, "target_removal": 0.1, "random_removal": 0.9, "natural_negative": 0.1}
BLIND = {"original": 0.6, "target_removal": 0.6, "random_removal": 0.6, "natural_negative": 0.6}


def _one_model_two_conditions():
    views = synthetic.views(40, 20, 0, seed=5)
    sighted = synthetic.episodes(views, {"m": SIGHTED}, seed=5)
    blind = synthetic.episodes(views, {"m": BLIND}, seed=6)
    blind = blind.set_column(blind.schema.get_field_index("condition"), "condition",
                             pc.cast(pc.binary_replace_slice(blind["condition"], 0, 99, "blind"), "string"))
    blind = blind.set_column(blind.schema.get_field_index("request_key"), "request_key",
                             pc.binary_join_element_wise(blind["request_key"], "blind", ":"))
    episodes = records.to_table("episodes", sighted.to_pylist() + blind.to_pylist())
    scores, rejects = rewards.score_episodes(episodes, views, costs.load("table2"))
    assert rejects == []
    return views, episodes, scores


def _esg_by_hand(df, cond):
    part = df[df.condition == cond]
    absent_or_refer = ((part.action == "answer") & ~part.claims_finding.fillna(False).astype(bool)) | (part.action == "refer")
    return absent_or_refer[part.kind == "target_removal"].mean() - absent_or_refer[part.kind == "random_removal"].mean()


def test_a_models_condition_against_its_blind_condition():
    _, _, scores = _one_model_two_conditions()
    table = cmp.compare(scores, "m:blind", n_boot=200).to_pandas()
    esg = table[(table.metric == "esg") & (table.breakdown == "all")]
    assert list(zip(esg.model, esg.condition, esg.reference)) == [("m", "agent", "m:blind")]
    df = scores.to_pandas()
    by_hand = _esg_by_hand(df, "agent") - _esg_by_hand(df, "blind")
    assert abs(esg.value.iloc[0] - by_hand) < 1e-9
    assert esg.n_cases.iloc[0] == df.case_id.nunique()  # every case was seen in both conditions
    assert esg.ci_low.iloc[0] <= esg.value.iloc[0] <= esg.ci_high.iloc[0]
    # a reference without a condition still compares other models only: here there are none
    assert cmp.compare(scores, "m", n_boot=50).num_rows == 0


def test_compare_through_the_cli_writes_the_within_model_rows(tmp_path, capsys):
    views, episodes, _ = _one_model_two_conditions()
    records.write_table("views", views, str(tmp_path / "views.parquet"))
    records.write_table("episodes", episodes, str(tmp_path / "episodes.parquet"))
    run = tmp_path / "run"
    assert cli.main(["score", "--episodes", str(tmp_path / "episodes.parquet"), "--views", str(tmp_path / "views.parquet"),
                     "--out", str(run), "--n-boot", "0"]) == 0
    capsys.readouterr()
    assert cli.main(["compare", "--metrics", str(run), "--reference", "m:blind", "--n-boot", "100"]) == 0
    out = capsys.readouterr().out
    assert "main: m:agent - m:blind: esg +" in out
    # a reference without a condition compares other models only, and this run has none: said and
    # exit 2, not an empty line and exit 0
    assert cli.main(["compare", "--metrics", str(run), "--reference", "m", "--n-boot", "100"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("medscope: error: nothing to compare with the reference 'm': the run holds no other model")
    written = records.read_table("metrics", str(run / "comparisons.parquet")).to_pandas()
    assert set(zip(written.model, written.condition, written.reference)) == {("m", "agent", "m:blind")}


def test_stats_verbs_take_and_print_model_condition_as_compare_does(tmp_path, capsys):
    """``--a m:agent --b m:blind``: the stats verbs read each side's own condition and print both
    sides as MODEL:CONDITION, as compare's lines do (issue 50). McNemar's discordant counts and
    Fisher's successes are counted here by hand from the scores."""
    from scipy.stats import binomtest

    views, episodes, scores = _one_model_two_conditions()
    records.write_table("views", views, str(tmp_path / "views.parquet"))
    records.write_table("episodes", episodes, str(tmp_path / "episodes.parquet"))
    run = tmp_path / "run"
    assert cli.main(["score", "--episodes", str(tmp_path / "episodes.parquet"), "--views", str(tmp_path / "views.parquet"),
                     "--out", str(run), "--n-boot", "0"]) == 0
    df = scores.to_pandas()
    ccr = {c: df[(df.condition == c) & df.kind.isin(["original", "random_removal"])].set_index("view_id")["correct"]
           for c in ("agent", "blind")}
    agent_only = int((ccr["agent"] & ~ccr["blind"].reindex(ccr["agent"].index)).sum())
    blind_only = int((~ccr["agent"] & ccr["blind"].reindex(ccr["agent"].index)).sum())
    p = binomtest(min(agent_only, blind_only), agent_only + blind_only, 0.5).pvalue
    capsys.readouterr()
    assert cli.main(["stats", "mcnemar", "--scores", str(run), "--a", "m:agent", "--b", "m:blind", "--metric", "ccr"]) == 0
    out = capsys.readouterr().out
    assert "a m:agent; b m:blind;" in out and f"a_only {agent_only}; b_only {blind_only};" in out
    assert f"p {min(1.0, p):.4g}" in out
    assert cli.main(["stats", "fisher", "--scores", str(run), "--a", "m:agent", "--b", "m:blind", "--metric", "ccr"]) == 0
    out = capsys.readouterr().out
    assert f"success_a {int(ccr['agent'].sum())}; n_a 80; success_b {int(ccr['blind'].sum())}; n_b 80" in out
    # a side without a condition takes --condition; one that names its own keeps it
    assert cli.main(["stats", "chance", "--scores", str(run), "--model", "m", "--condition", "blind"]) == 0
    assert "model m:blind;" in capsys.readouterr().out
    assert cli.main(["stats", "tost", "--scores", str(run), "--a", "m:agent", "--b", "m:blind", "--metric", "esg",
                     "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    by_hand = _esg_by_hand(df, "agent") - _esg_by_hand(df, "blind")
    assert "a m:agent; b m:blind;" in out and f"diff {by_hand:.4g};" in out
    # without a condition on a model that has two, the error names them
    assert cli.main(["stats", "chance", "--scores", str(run), "--model", "m"]) == 2
    assert "several conditions" in capsys.readouterr().err
