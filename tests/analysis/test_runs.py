"""The shared view analysis reads view scores only: another protocol's scored run is refused by name,
before any of its tables is read as if it held views."""

import json

from medscope.analysis.runs import read_view_scores
from medscope.io import records
from medscope.protocols.counterfactual import tables  # noqa: F401 - registers the scores table
from medscope.testing import synthetic_runs as synthetic
from pipelines import cli


def _scored_counterfactual_run(root):
    views = synthetic.views(4, 4, 0, seed=1)
    records.write_table("views", views, str(root / "views.parquet"))
    episodes = synthetic.episodes(views, synthetic.model_zoo(2, seed=1), seed=1)
    records.write_table("episodes", episodes, str(root / "episodes.parquet"))
    assert cli.main(["score", "--episodes", str(root / "episodes.parquet"), "--views", str(root / "views.parquet"),
                     "--out", str(root / "run"), "--n-boot", "0"]) == 0
    return root / "run", episodes.num_rows


def test_a_counterfactual_run_reads_by_folder_and_by_file(tmp_path):
    run, n = _scored_counterfactual_run(tmp_path)
    assert read_view_scores(str(run)).num_rows == n
    assert read_view_scores(str(run / "scores.parquet")).num_rows == n


def test_another_protocols_run_is_refused_by_stats_and_compare(tmp_path, capsys):
    run = tmp_path / "mcq"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"protocol": "benchmark_mcq"}))
    capsys.readouterr()
    assert cli.main(["stats", "mcnemar", "--scores", str(run), "--a", "m1", "--b", "m2", "--metric", "ccr"]) == 2
    err = capsys.readouterr().err
    assert f"{run} is a benchmark_mcq run: medscope stats reads the view scores of counterfactual runs" in err
    (run / "metrics.parquet").write_bytes(b"")
    assert cli.main(["compare", "--metrics", str(run), "--reference", "m1", "--scores", str(run)]) == 2
    assert "is a benchmark_mcq run: medscope compare" in capsys.readouterr().err
