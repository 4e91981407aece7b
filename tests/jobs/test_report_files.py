"""The report: files exist, the HTML is self-contained, tables hold the metrics' numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from medscope import images
from medscope.io import records
from medscope.report.build import build_report
from medscope.render import palette
from medscope.render.document import md_to_html
from medscope.testing import synthetic_runs as synthetic
from pipelines import demo
from medscope.protocols.counterfactual.scoring import score_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("rep")
    rng = np.random.default_rng(0)
    img = (rng.random((48, 48)) * 255).astype(np.uint8)
    mask = np.zeros((48, 48), bool)
    mask[10:20, 10:20] = True
    pix = {k: images.encode_png(img) for k in ("original", "target_removal", "random_removal", "degraded",
                                                "natural_negative")}
    pix["target_removal_mask"] = images.encode_png(mask)
    pix["random_removal_mask"] = images.encode_png(np.roll(mask, 20, axis=1))
    v = synthetic.views(15, 15, 8, seed=1, width=48, height=48, images=pix)
    e = synthetic.episodes(v, synthetic.model_zoo(3), seed=1)
    records.write_table("views", v, str(root / "views.parquet"))
    records.write_table("episodes", e, str(root / "episodes.parquet"))
    score_run(str(root / "episodes.parquet"), str(root / "views.parquet"), str(root / "run"), n_boot=200)
    return root


def test_report_files_self_contained_html_and_numbers(run):
    out = run / "report"
    probe_md = "| organ | accuracy |\n|---|---|\n| liver | 0.812 |"
    before = {p: p.stat().st_mtime_ns for p in (run / "run").rglob("*")}
    written = build_report(str(run / "run"), str(out), reference="model-00",
                           extra_sections=[("Volumetric probe", probe_md)])
    html = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    assert (out / "transcripts.md").exists() and len(list((out / "transcripts").glob("*.jsonl"))) == 3
    assert (out / "images" / "esg_by_size.png").exists() and (out / "images" / "risk_coverage.png").exists()
    # self-contained: every src is an inline image, every href an in-page anchor that exists
    srcs = re.findall(r'\ssrc="([^"]*)"', html)
    hrefs = re.findall(r'\shref="([^"]*)"', html)
    assert len(srcs) >= 2 + 3 * 3 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert hrefs and all(h.startswith("#") for h in hrefs)
    ids = set(re.findall(r'\sid="([^"]*)"', html))
    assert {h[1:] for h in hrefs} <= ids
    assert "<link" not in html and "<script" not in html and "@import" not in html
    # the main table shows the metrics table's numbers
    m = records.read_table("metrics", str(run / "run" / "metrics.parquet")).to_pandas()
    for model in ("model-00", "model-01", "model-02"):
        row = lambda k: m[(m.model == model) & (m.metric == k) & (m.breakdown == "all")].iloc[0]  # noqa: E731
        esg, nu = row("esg"), row("net_utility")
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {model} |") and "[" in ln)
        assert f"{esg.value:.3f} [{esg.ci_low:.3f}, {esg.ci_high:.3f}] ({esg.n_cases} cases)" in line
        assert f"{nu.value:.3f} [{nu.ci_low:.3f}, {nu.ci_high:.3f}]" in line
        erased = row('erased_claims')  # a rate with its interval and the cases it is over, as every value
        assert (f"| {100 * erased.value:.1f} [{100 * erased.ci_low:.1f}, {100 * erased.ci_high:.1f}] "
                f"({erased.n_cases} cases) |") in line
    # a report writes nothing into the run it reads: the comparisons it made lie beside it
    assert {p: p.stat().st_mtime_ns for p in (run / "run").rglob("*")} == before
    assert written["comparisons"] == str(out / "comparisons.parquet")
    # paired differences: model minus the chosen reference
    comp = records.read_table("metrics", written["comparisons"]).to_pandas()
    d = comp[(comp.model == "model-02") & (comp.metric == "esg")].iloc[0]
    assert d.reference == "model-00:agent" and f"{d.value:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}]" in md
    # rankings under all five matrices, the gallery and the extra section
    for name in ("table2", "wrong_1", "wrong_0.5", "refer_free_negatives", "refer_minus_0.3"):
        assert f"| {name}" in md or f" {name} |" in md
    assert "Volumetric probe" in html and "<td>0.812</td>" in html
    assert html.count("<details") >= 3 * 3 and written["reference"] == "model-00"
    # the transcripts close the report, after every other section (an extra one included), so
    # that they push nothing down the page
    titles = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert titles[-1] == "## Transcripts" and titles.index("## Volumetric probe") < len(titles) - 1
    assert html.rindex("<h2") == html.index('<h2 id="transcripts"')
    # the size table: each cell's ESG and erased-lesion claims with the interval of the metrics row
    size = md.split("## ESG by lesion-size quartile", 1)[1].split("\n## ", 1)[0]
    for q in ("Q1", "Q4"):
        r = {k: m[(m.model == "model-01") & (m.metric == k) & (m.breakdown == f"size_quartile={q}")].iloc[0]
             for k in ("esg", "erased_claims")}
        cell = " / ".join(f"{x.value:.3f} [{x.ci_low:.3f}, {x.ci_high:.3f}]" for x in r.values())
        row = next(ln for ln in size.splitlines() if ln.startswith(f"| {q} "))
        assert cell in row, (cell, row)
    # the further metrics too: each with its interval and the cases it is over
    more = md.split("## Further metrics", 1)[1].split("\n## ", 1)[0]
    row = next(ln for ln in more.splitlines() if ln.startswith("| model-01"))
    for k in ("strict_esg", "grounded_accuracy", "decision_aurc"):
        r = m[(m.model == "model-01") & (m.metric == k) & (m.breakdown == "all")].iloc[0]
        assert f"| {r.value:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] ({r.n_cases} cases)" in row, (k, row)


def test_gallery_shows_evaluated_cases_and_the_tests_of_section_3_9(run, tmp_path):
    """Half the cases were never evaluated: the gallery picks from the evaluated ones only, so
    every decision cell holds a decision; the §3.9 section lists the exact tests."""
    v = records.read_table("views", str(run / "views.parquet"))
    import pyarrow as pa
    import pyarrow.compute as pc

    e = records.read_table("episodes", str(run / "episodes.parquet"))
    evaluated = sorted(set(e.column("case_id").to_pylist()))[1::2]
    part = e.filter(pc.is_in(e.column("case_id"), value_set=pa.array(evaluated)))
    records.write_table("episodes", part, str(tmp_path / "ep.parquet"))
    records.write_table("views", v, str(tmp_path / "views.parquet"))
    score_run(str(tmp_path / "ep.parquet"), str(tmp_path / "views.parquet"), str(tmp_path / "run"), n_boot=50)
    build_report(str(tmp_path / "run"), str(tmp_path / "rep"), reference="model-00", gallery_cases=3)
    md = (tmp_path / "rep" / "report.md").read_text()
    gallery = md[md.index("## Gallery"):md.index("## Transcripts")]
    cells = [ln for ln in gallery.splitlines() if ln.startswith("| original") or ln.startswith("| target_removal")]
    assert len(cells) == 2 * 3 and all("–" not in ln for ln in cells)
    shown = re.findall(r"\*\*(L\d{4})\*\*", gallery)
    assert shown and set(shown) <= set(evaluated)
    # every panel has its caption under it, in the words of the shared palette
    lines = gallery.splitlines()
    panels = [i for i, ln in enumerate(lines) if ln.startswith("![")]
    assert len(panels) == 3 * 3
    for i in panels:
        kind = re.search(r"_(original|target_removal|random_removal)\.png\)$", lines[i])[1]
        assert lines[i + 1] == f"*{palette.PANEL_CAPTIONS[kind]}*"
    html = (tmp_path / "rep" / "report.html").read_text()
    figures = re.findall(r"<figure><img alt=\"[^\"]+\" src=\"data:image/png;base64,[^\"]+\"><figcaption>([^<]+)</figcaption>",
                         html)
    assert len(figures) == 3 * 3 and set(figures) == set(palette.PANEL_CAPTIONS.values())
    tests = md[md.index("## Further tests"):]
    assert "McNemar CCR vs model-00" in tests and "Fisher erased" in tests and "TOST CCR" in tests
    assert "## By source (Table 15)" in md and "## By erasure tool (Table 12)" in md


def test_md_to_html_escapes_and_keeps_only_anchor_links():
    out = md_to_html("# T\n\n<script>x</script> [a](#b) [c](http://x.org)\n- one\n| h |\n|---|\n| 1 |")
    assert "&lt;script&gt;" in out and '<a href="#b">a</a>' in out and "http://x.org" not in re.findall(
        r'href="([^"]*)"', out) and "<li>one</li>" in out and "<td>1</td>" in out


def test_demo_score_and_report_steps(run, tmp_path):
    ctx = demo.DemoContext(out=str(tmp_path / "demo"))
    ctx.paths.update(episodes=str(run / "episodes.parquet"), views=str(run / "views.parquet"))
    ctx.report_sections.append(("Probe", "probe text"))
    demo.step_score(ctx)
    demo.step_report(ctx)
    assert ctx.paths["report"].endswith("report.html") and "probe text" in open(ctx.paths["report"]).read()
    assert ctx.summary["score"]["models"] == 3


def test_a_test_set_without_lesion_views_still_reports(tmp_path):
    """A small cohort whose test split kept only lesion-free views after QC: the metrics over
    lesion views are undefined, and the report says so in its cells instead of failing."""
    v = synthetic.views(0, 6, 0, seed=3)
    e = synthetic.episodes(v, synthetic.model_zoo(2), seed=3)
    records.write_table("views", v, str(tmp_path / "views.parquet"))
    records.write_table("episodes", e, str(tmp_path / "episodes.parquet"))
    score_run(str(tmp_path / "episodes.parquet"), str(tmp_path / "views.parquet"), str(tmp_path / "run"), n_boot=50)
    written = build_report(str(tmp_path / "run"), str(tmp_path / "rep"), gallery_cases=2)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert written["html"].endswith("report.html") and "## Further tests" in md
