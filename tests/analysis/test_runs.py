"""The shared view analysis reads view scores only: another protocol's scored run is refused by name,
before any of its tables is read as if it held views."""

import json

from medscope.analysis.runs import read_view_scores
from medscope.io import records
from medscope.analysis import tables  # noqa: F401 - registers the scores table
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


def test_stats_reads_a_scored_run_in_a_fresh_process(tmp_path):
    # a verb's own process imports no protocol: the scores table must be known through the analysis
    import os
    import subprocess
    import sys

    from scipy.stats import binomtest

    run, _ = _scored_counterfactual_run(tmp_path)
    scores = records.read_table("scores", str(run)).to_pandas()
    a, b = sorted(scores.model.unique())[:2]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "stats", "mcnemar", "--scores", str(run), "--a", a,
                           "--b", b, "--metric", "ccr"], cwd=repo, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # by hand: the exact McNemar p is the two-sided binomial test of the discordant pairs at 1/2
    ans = scores[scores.kind.isin(["original", "random_removal"])].pivot_table(
        index="view_id", columns="model", values="correct", aggfunc="first")
    a_only = int((ans[a] & ~ans[b]).sum())
    b_only = int((~ans[a] & ans[b]).sum())
    expected = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
    assert f"a_only {a_only}; b_only {b_only}" in done.stdout
    got = float(done.stdout.rsplit("; p ", 1)[1].split()[0])
    assert got == __import__("pytest").approx(expected)
