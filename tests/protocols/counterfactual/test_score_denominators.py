"""``medscope score`` against the test set's fixed denominator (issue 50).

The test set is recomputed from the views table every time, by the rule ``eval run`` selects
its items with (``testsets.outside_reason``): an episode outside it is excluded under that rule,
a view without an episode is a missing unit, shown per model x condition, recorded in run.json
and deciding the exit code as ``eval run --max-failed`` does (3 beyond the allowance).

The small main test below: 4 lesion cases (O, T, R each: 12 views), 6 natural negatives and 4
degraded views: 22 views of 10 cases. Always-refer rewards by hand (Table 2): O, R -0.3 (8
views), T, N +0.5 (10), D 0 (4): (-2.4 + 5) / 22 = 2.6 / 22.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from medscope.io import records
from medscope.reproduce.derive import constant_policy_episodes
from medscope.testing import synthetic_runs as synthetic
from pipelines import cli

N_VIEWS = 22


def _views(planted: bool = False):
    views = synthetic.views(4, 6, 4, seed=0).to_pylist()
    assert len(views) == N_VIEWS
    if planted:
        base = next(v for v in views if v["kind"] == "original")
        for v in views:  # one critical lesion case inside the test set; the planted ones are critical too
            v["critical"] = v["case_id"] == base["case_id"]
        base = dict(base, critical=True)
        views += [
            # a lesion case whose random-removal control failed: rule (ii) drops the whole case
            dict(base, view_id="bad/original", case_id="bad", passed=False, reject_reason="paired_control_failed"),
            dict(base, view_id="bad/random_removal", case_id="bad", kind="random_removal", passed=False,
                 reject_reason="case_failed_qc"),
            # a degraded view that failed its checks, and a train-split case
            dict(base, view_id="bad/degraded", case_id="bad", kind="degraded", passed=False,
                 reject_reason="degradation_failed"),
            dict(base, view_id="train/original", case_id="train", split="train"),
            # a training pool's view
            dict(base, view_id="pool/insertion", case_id="pool", kind="insertion"),
        ]
    return records.to_table("views", views)


def _score(tmp_path, views, episodes, *extra):
    records.write_table("views", views, str(tmp_path / "views.parquet"))
    records.write_table("episodes", episodes, str(tmp_path / "episodes.parquet"))
    out = tmp_path / "run"
    rc = cli.main(["score", "--episodes", str(tmp_path / "episodes.parquet"), "--views", str(tmp_path / "views.parquet"),
                   "--out", str(out), "--n-boot", "20", *extra])
    manifest = json.loads((out / "run.json").read_text())
    metrics = records.read_table("metrics", str(out / "metrics.parquet")).to_pandas()
    return rc, manifest, metrics, out


def _value(metrics, model, metric):
    row = metrics[(metrics["model"] == model) & (metrics["metric"] == metric) & (metrics["breakdown"] == "all")]
    return float(row["value"].iloc[0])


def _refer(views, models=("a", "b")):
    return constant_policy_episodes(views, {m: ("refer", None) for m in models})


def test_a_missing_episode_is_a_failed_unit_against_the_fixed_denominator(tmp_path, capsys):
    views = _views()
    eps = _refer(views).to_pylist()
    gone = sorted(e["item_id"] for e in eps if e["model"] == "b" and "natural_negative" in e["item_id"])[:2]
    eps = [e for e in eps if not (e["model"] == "b" and e["item_id"] in gone)]
    rc, manifest, metrics, out = _score(tmp_path, views, records.to_table("episodes", eps))
    assert rc == 3  # eval run's EXIT_UNITS_FAILED: 2 missing of 44 units, none allowed
    err = capsys.readouterr().err
    assert "2 of 44 episodes are missing (b:agent 2 of 22" in err
    cov = {(r["model"], r["condition"]): r for r in manifest["coverage"]["by_model_condition"]}
    assert manifest["coverage"]["views"] == N_VIEWS and manifest["coverage"]["cases"] == 10
    assert manifest["coverage"]["by_kind"] == {"original": 4, "target_removal": 4, "random_removal": 4,
                                               "natural_negative": 6, "degraded": 4}
    assert (cov[("a", "agent")]["scored"], cov[("a", "agent")]["missing"]) == (22, 0)
    assert (cov[("b", "agent")]["scored"], cov[("b", "agent")]["missing"]) == (20, 2)
    assert sorted(cov[("b", "agent")]["missing_views"]) == gone
    rejects = records.read_table("rejects", str(out / "rejects.parquet")).to_pandas()
    assert sorted(rejects.loc[rejects["reason"] == "missing_episode", "item_id"]) == [f"b/agent/{v}" for v in gone]
    # the numbers are over what was scored, and say so: a's 2.6 / 22, b's (2.6 - 1.0) / 20
    assert _value(metrics, "a", "net_utility") == pytest.approx(2.6 / 22)
    assert _value(metrics, "b", "net_utility") == pytest.approx(1.6 / 20)
    # --max-failed accepts them, as eval run's does (a count, or a fraction of the 44 units)
    assert _score(tmp_path, views, records.to_table("episodes", eps), "--max-failed", "2", "--overwrite")[0] == 0
    assert _score(tmp_path, views, records.to_table("episodes", eps), "--max-failed", "0.04", "--overwrite")[0] == 3
    assert _score(tmp_path, views, records.to_table("episodes", eps), "--max-failed", "0.05", "--overwrite")[0] == 0


def test_episodes_outside_the_test_set_are_excluded_under_their_rule(tmp_path):
    clean = _views()
    planted = _views(planted=True)
    rc, manifest, metrics, out = _score(tmp_path, planted, _refer(planted))
    assert rc == 0  # the planted views are outside the test set: nobody is missing them
    cov = manifest["coverage"]
    assert cov["views"] == N_VIEWS and cov["critical_cases"] == 1  # the failed critical case is not counted
    # per model: 3 failed-QC views (rule (ii), its pair, a failed degraded), 1 train split, 1 pool
    assert cov["excluded_by_rule"] == {"failed_qc": 6, "not_an_evaluation_view": 2, "outside_split": 2}
    rejects = records.read_table("rejects", str(out / "rejects.parquet")).to_pandas()
    why = dict(zip(rejects["item_id"], rejects["detail"]))
    assert "rule (ii)" in why["a/agent/bad/original"]
    assert "split 'train'; test set main reads test" in why["a/agent/train/original"]
    # the same numbers as the clean table's: nothing outside the test set is counted
    (tmp_path / "clean").mkdir()
    _, _, clean_metrics, _ = _score(tmp_path / "clean", clean, _refer(clean))
    for m in ("net_utility", "ccr", "healthy_claims"):
        assert _value(metrics, "a", m) == _value(clean_metrics, "a", m)
    assert _value(metrics, "a", "net_utility") == pytest.approx(2.6 / 22)


def test_a_model_the_eval_run_accounted_for_but_without_episodes_is_missing_everything(tmp_path):
    views = _views()
    eps = _refer(views, models=("a",))
    folder = tmp_path / "eval"
    records.write_table("views", views, str(tmp_path / "views.parquet"))
    records.write_table("episodes", eps, str(folder / "episodes" / "part-00000.parquet"))
    acc = {"done": 22, "failed": 22, "refused": 0, "skipped": 0, "stopped": 0,
           "failed_by_reason": {"failed: APIError": 22}, "refused_endpoints": [],
           "by_model_condition": [{"model": "a", "condition": "agent", "done": 22},
                                  {"model": "b", "condition": "agent", "failed": 22}]}
    (folder / "sweep.json").write_text(json.dumps({"protocol": "counterfactual", "accounting": acc}))
    rc = cli.main(["score", "--episodes", str(folder), "--views", str(tmp_path / "views.parquet"),
                   "--out", str(tmp_path / "run"), "--n-boot", "0"])
    assert rc == 3
    cov = json.loads((tmp_path / "run" / "run.json").read_text())["coverage"]
    assert [(r["model"], r["scored"], r["missing"]) for r in cov["by_model_condition"]] == [("a", 22, 0), ("b", 0, 22)]


def test_load_items_and_score_share_one_definition(tmp_path):
    """eval run's items and score's denominator are the same views, planted ones left out of both."""
    from medscope.protocols.counterfactual.protocol import CounterfactualProtocol
    from medscope.protocols.counterfactual.scoring import test_set_views

    views = _views(planted=True).to_pylist()
    for v in views:
        v["image"] = b"png"
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", views, uri)
    items = {i.item_id for i in CounterfactualProtocol().load_items(uri, images=False)}
    expected = set(test_set_views(records.read_table("views", uri), "main", ("test",))["view_id"])
    assert items == expected and len(items) == N_VIEWS
    assert not any(v.startswith(("bad/", "train/", "pool/")) for v in items)


def test_compare_pairs_over_the_views_both_models_have(tmp_path):
    """Identical decisions, one model missing 2 views: the paired difference is 0, not the
    2.6/22 - 1.6/20 the unpaired numbers differ by."""
    from pipelines.score import compare_run

    views = _views()
    eps = _refer(views).to_pylist()
    gone = sorted(e["item_id"] for e in eps if e["model"] == "b" and "natural_negative" in e["item_id"])[:2]
    eps = [e for e in eps if not (e["model"] == "b" and e["item_id"] in gone)]
    _, _, _, out = _score(tmp_path, views, records.to_table("episodes", eps), "--max-failed", "2")
    table = compare_run(str(out), "a", n_boot=20)
    allrows = table[table["breakdown"] == "all"].set_index("metric")
    assert allrows.loc["net_utility", "value"] == 0.0
    assert allrows.loc["net_utility", "n_cases"] == 8  # the 2 lesion-free cases b lacks are left out
    assert isinstance(table, pd.DataFrame)


def test_an_unclear_reading_is_accounted_for_not_missing(tmp_path):
    """A reply the reader could not read is a done unit (left out of every n, counted as unclear),
    never a missing one; an unclear episode of a view outside the test set is excluded, not counted."""
    views = _views(planted=True)
    eps = _refer(views, models=("a",)).to_pylist()
    for e in eps:
        if e["item_id"] in ("train/original", sorted(x["item_id"] for x in eps if "natural_negative" in x["item_id"])[0]):
            e["action"] = "unclear"
    rc, manifest, metrics, _ = _score(tmp_path, views, records.to_table("episodes", eps))
    assert rc == 0
    row = manifest["coverage"]["by_model_condition"][0]
    assert (row["scored"], row["unclear"], row["missing"]) == (21, 1, 0)
    assert manifest["unclear"] == {"a/agent": 1}
    # 21 views: one natural negative (+0.5) fewer than 2.6 / 22
    assert _value(metrics, "a", "net_utility") == pytest.approx(2.1 / 21)


def test_an_item_table_with_no_view_of_the_test_set_is_an_error_not_metrics_over_nothing(tmp_path, capsys):
    # issue 51: `score --items` a 0-row table exited 0 with metrics over no view
    views = _views()
    records.write_table("episodes", _refer(views), str(tmp_path / "episodes.parquet"))
    records.write_table("views", views.slice(0, 0), str(tmp_path / "empty.parquet"))
    rc = cli.main(["score", "--episodes", str(tmp_path / "episodes.parquet"), "--views", str(tmp_path / "empty.parquet"),
                   "--out", str(tmp_path / "run"), "--n-boot", "20"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"medscope: error: {tmp_path / 'empty.parquet'}: no view of the counterfactual test set "
                          "in this item table (0 views to score")


def test_another_item_table_with_no_view_episoded_names_the_table(tmp_path, capsys):
    # issue 51: `score --items` a table of other ids said "no view of the test set has an episode"
    # without saying which table was read
    views = _views()
    records.write_table("episodes", _refer(views), str(tmp_path / "episodes.parquet"))
    renamed = [dict(v, view_id="other/" + v["view_id"]) for v in views.to_pylist()]
    records.write_table("views", records.to_table("views", renamed), str(tmp_path / "other.parquet"))
    rc = cli.main(["score", "--episodes", str(tmp_path / "episodes.parquet"), "--views", str(tmp_path / "other.parquet"),
                   "--out", str(tmp_path / "run"), "--n-boot", "20"])
    assert rc == 4  # EXIT_NO_WORK, as documented
    err = capsys.readouterr().err
    assert f"score: no view of the test set of {tmp_path / 'other.parquet'} has an episode (a:agent 22 of 22" in err
