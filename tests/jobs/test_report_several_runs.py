"""A report of several counterfactual runs keeps each run's anchors, images and files apart, and the
rankings table carries net utility with its interval under every cost matrix."""

from __future__ import annotations

import collections
import re

import numpy as np
import pytest

from medscope.io import records
from medscope.protocols.counterfactual import costs, rewards
from medscope.protocols.counterfactual.scoring import score_run
from medscope.report.build import build_report
from medscope.testing import synthetic_runs as synthetic


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("several")
    for name, seed, n_models in (("run_a", 1, 3), ("run_b", 2, 2)):
        v = synthetic.views(12, 12, 6, seed=seed, width=32, height=32)
        e = synthetic.episodes(v, synthetic.model_zoo(n_models), seed=seed)
        records.write_table("views", v, str(root / f"{name}_views.parquet"))
        records.write_table("episodes", e, str(root / f"{name}_episodes.parquet"))
        score_run(str(root / f"{name}_episodes.parquet"), str(root / f"{name}_views.parquet"), str(root / name),
                  n_boot=200)
    build_report([str(root / "run_a"), str(root / "run_b")], str(root / "report"), gallery_cases=1)
    return root


def test_every_element_id_once_and_every_link_lands(two_runs):
    html = (two_runs / "report" / "report.html").read_text()
    ids = re.findall(r'\sid="([^"]*)"', html)
    assert [i for i, n in collections.Counter(ids).items() if n > 1] == []
    hrefs = {h[1:] for h in re.findall(r'\shref="(#[^"]*)"', html)}
    assert hrefs and hrefs <= set(ids)
    # both runs' summaries, each named, and the second run's links go to its own sections
    h2 = re.findall(r"<h2 id=\"([^\"]*)\">([^<]*)</h2>", html)
    summaries = [(i, t) for i, t in h2 if t.startswith("Summary: which models")]
    assert [t.rsplit("(", 1)[-1] for _, t in summaries] == ["run-a)", "run-b)"]
    assert {i for i, _ in summaries} == {"summary", "summary-run-b"}
    assert 'href="#paired-run-b"' in html and 'id="paired-run-b"' in html


def test_markdown_images_and_transcripts_of_both_runs_exist(two_runs):
    rep = two_runs / "report"
    md = (rep / "report.md").read_text()
    links = re.findall(r"\]\(([^)#\s][^)\s]*)\)", md)
    images = [p for p in links if p.startswith("images/")]
    assert len(images) == len(set(images)) and all((rep / p).exists() for p in images)
    assert "images/run-b-forest.png" in images and "images/forest.png" in images
    assert (rep / "images" / "forest.png").read_bytes() != (rep / "images" / "run-b-forest.png").read_bytes()
    assert "transcripts.md" in links and "run-b/transcripts.md" in links
    assert len(list((rep / "transcripts").glob("*.jsonl"))) == 3
    assert len(list((rep / "run-b" / "transcripts").glob("*.jsonl"))) == 2


def _rankings_rows(md: str, anchor_title: str) -> list[list[str]]:
    part = md.split(f"## {anchor_title}", 1)[1].split("\n## ", 1)[0]
    rows = [r.strip("|").split("|") for r in part.splitlines() if r.startswith("| ")]
    return [[c.strip() for c in r] for r in rows]


def test_rankings_interval_matches_main_table_and_point_matches_rescore(two_runs):
    md = (two_runs / "report" / "report.md").read_text()
    rows = _rankings_rows(md, "Rankings under every cost matrix (run-a)")
    header, body = rows[0], rows[1:]
    assert header[:2] == ["Model", "n views"] and "table2" in header
    metrics = records.read_table("metrics", str(two_runs / "run_a" / "metrics.parquet")).to_pandas()
    scores_t = records.read_table("scores", str(two_runs / "run_a" / "scores.parquet"))
    scores = scores_t.to_pandas()
    main = (scores.test_set == "main").to_numpy()
    matrices = {m.name: m for m in costs.load_all()}
    for r in body:
        model = r[0]
        assert int(r[1]) == int(((scores.model == model) & main).sum())
        # the run's own matrix: the same interval as the main table's net utility (one bootstrap)
        m = metrics[(metrics.model == model) & (metrics.metric == "net_utility") & (metrics.breakdown == "all")
                    & (metrics.test_set == "main")].iloc[0]
        rank, v, lo, hi = re.match(r"(\S+) \((\S+) \[(\S+), (\S+)\]\)", r[header.index("table2")]).groups()
        assert (float(v), float(lo), float(hi)) == pytest.approx((m.value, m.ci_low, m.ci_high), abs=6e-4)
        # another matrix: the point is the mean of that matrix's rewards over the model's main views
        name = "wrong_1"
        reward = rewards.rescore(scores_t, matrices[name])
        want = reward[(scores.model == model).to_numpy() & main].mean()
        _, v, lo, hi = re.match(r"(\S+) \((\S+) \[(\S+), (\S+)\]\)", r[header.index(name)]).groups()
        assert float(v) == pytest.approx(want, abs=6e-4) and float(lo) <= float(v) <= float(hi)
        assert np.isfinite(float(lo)) and float(lo) < float(hi)
