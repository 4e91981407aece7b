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
    written = records.read_table("metrics", str(run / "comparisons.parquet")).to_pandas()
    assert set(zip(written.model, written.condition, written.reference)) == {("m", "agent", "m:blind")}
