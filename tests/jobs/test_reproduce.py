"""``medscope reproduce``: the registry names every numbered table and figure of the four papers,
every derivable cell matches the paper, and the values are checked here against scipy /
statsmodels and hand-worked sums, independently of the code that computes them."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as sps
import yaml

from medscope.errors import MedScopeError
from medscope.reproduce import check, derive, registry
from pipelines import cli

# The papers sit in shared/ beside the checkout (as CI lays it out), or where MEDSCOPE_SEEDS says.
_BESIDE = Path(__file__).resolve().parents[3] / "shared" / "seeds"
SEEDS = Path(os.environ.get("MEDSCOPE_SEEDS") or (_BESIDE if _BESIDE.is_dir() else "/work/shared/seeds"))
NUMBERED = re.compile(r"(Supplementary\s+)?\b(Table|Figure|Fig\.)\s*(\d+)\b")


@pytest.fixture(scope="module")
def papers():
    return {p: registry.load(p) for p in registry.PAPER_IDS}


@pytest.fixture(scope="module")
def results(papers):
    ctx = derive.Context()
    try:
        yield check.check_papers(list(papers.values()), ctx=ctx), ctx
    finally:
        ctx.close()


def _numbered_in(text: str) -> set[str]:
    found = set()
    for m in NUMBERED.finditer(text):
        kind = "Figure" if m.group(2).startswith("Fig") else "Table"
        found.add(f"{'Supplementary ' if m.group(1) else ''}{kind} {m.group(3)}")
    return found


@pytest.mark.parametrize("paper_id", registry.PAPER_IDS)
def test_every_numbered_table_and_figure_has_an_entry(papers, paper_id):
    paper = papers[paper_id]
    path = SEEDS / paper.source
    if not path.exists():
        pytest.skip(f"the paper text {path} is not here (set MEDSCOPE_SEEDS)")
    text = path.read_text(encoding="utf-8")
    # the PDF extraction sets some captions word by word in bold: "**Table** **1.**"
    text = re.sub(r"\*\*(Table|Figure)\*\*\s*\*\*(\d+)", r"\1 \2", text)
    numbered = _numbered_in(text)
    ids = {registry.norm_id(e.id) for e in paper.entries}
    missing = sorted(n for n in numbered if registry.norm_id(n) not in ids)
    assert not missing, f"seed {paper_id}: no registry entry for {missing}"
    # and no entry names a table or figure the paper does not have
    invented = [e.id for e in paper.entries if NUMBERED.fullmatch(e.id) and e.id not in numbered]
    assert not invented, invented
    expected = {"000": 20, "001": 8, "002": 5, "003": 0}[paper_id]  # counted by hand in the texts
    assert len(numbered) == expected


def test_every_entry_says_how_it_is_regenerated(papers):
    for p in papers.values():
        for e in p.entries:
            assert e.status in ("derivable", "partly derivable", "needs data", "qualitative")
            if e.needs_data:
                assert e.needs_data.reason and all(c.startswith("medscope ") for c in e.needs_data.commands), e.id
    # the minimum: the counterfactual paper Tables 2 and 5, the paired-modality paper Table 1 (all 36 intervals) and §5.2
    cells = {(p.paper, e.id): e.cells for p in papers.values() for e in p.entries}
    assert len(cells[("000", "Table 2")]) == 22 and len(cells[("000", "Table 5")]) == 15
    intervals = [c for c in cells[("002", "Table 1")] if c.id.endswith("CI low")]
    assert len(intervals) == 36
    assert len(cells[("002", "§5.2 McNemar")]) == 7


def test_every_derivable_cell_matches_the_paper(results):
    res, _ = results
    bad = check.failures(res)
    assert not bad, [(r.paper, r.entry, r.cell, r.printed, r.ours, r.detail) for r in bad]
    assert sum(len(v) for v in res.values()) > 300


# -- the values, checked independently ------------------------------------------------------------------------


def test_paired_modality_intervals_against_scipy(papers, results):
    _, ctx = results
    for cell in papers["002"].entry("Table 1").cells:
        k, n = cell.args["k"], cell.args["n"]
        ours = derive.compute(ctx, cell.compute, cell.args)
        if cell.compute == "proportion":
            assert ours == k / n
            continue
        ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert ours == pytest.approx(ci.low if cell.args["side"] == "low" else ci.high, abs=1e-9)
        # and to the paper's one decimal, as printed
        assert round(100 * ours, 1) == float(cell.paper)


def test_paired_modality_mcnemar_against_the_binomial(papers, results):
    _, ctx = results
    for cell in papers["002"].entry("§5.2 McNemar").cells:
        a = cell.args
        b = sum(a["b"])
        c = sum(ka - kb + bb for kb, ka, bb in zip(a["k_before"], a["k_after"], a["b"]))  # c = k_after - (k_before - b)
        expected = sps.binomtest(min(b, c), b + c, 0.5).pvalue if b + c else 1.0
        assert derive.compute(ctx, cell.compute, a) == pytest.approx(min(1.0, expected), rel=1e-9)
    # hand-worked: GPT-6 Astra, mismatched FP, b = 1, c = 9: 2 x (1 + 10) / 2**10
    assert derive.mcnemar_p(ctx, [15], [23], [1]) == pytest.approx(22 / 1024)


def test_counterfactual_table5_and_cost_matrix_cells_by_hand(results):
    _, ctx = results
    # Table 5's trivial rows, the sums worked by hand (tests/protocols/counterfactual/test_table5.py explains them)
    assert derive.constant_policy(ctx, "always_claims", "net_utility") == pytest.approx(-533.5 / 1115)
    assert derive.constant_policy(ctx, "always_absent", "net_utility") == pytest.approx(-945 / 1115)
    assert derive.constant_policy(ctx, "always_refers", "net_utility") == pytest.approx(122.1 / 1115)
    assert derive.constant_policy(ctx, "always_claims", "esg") == 0.0
    # §5.5: O and R views refer at -0.3 (438), lesion-free T and N paid 0 (507), D 0 (170); then -0.3 everywhere
    assert derive.constant_policy_net_utility(ctx, "always_refers", "refer_free_negatives") == pytest.approx(-131.4 / 1115)
    assert derive.constant_policy_net_utility(ctx, "always_refers", "refer_minus_0.3") == pytest.approx(-0.3)
    assert derive.table2_reward(ctx, "degraded", "correct") == 0.25
    assert derive.table2_reward(ctx, "original", "wrong", critical=True) == -4.0


def _hand_bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg step-up, written out: q_(i) = min over j >= i of p_(j) m / j."""
    m = len(p)
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.empty(m)
    q[order] = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    return q


def test_benchmark_mcq_bh_against_a_hand_written_step_up(papers, results):
    _, ctx = results
    cells = [c for c in papers["001"].entry("Table 4").cells if c.compute == "bh_q"]
    families = {tuple(c.args["p"]) for c in cells}
    assert len(families) == 2  # the p-values and the TOST p-values, 30 tests each
    for cell in cells:
        printed_p = cell.args["p"]
        # the unrounded p-values lie within the rounding: q at the two ends brackets the hand q of the midpoints
        mid = np.array([float(v) if "<" not in v else 0.0005 for v in printed_p])
        lo, hi = derive.compute(ctx, "bh_q", cell.args)
        assert lo - 1e-12 <= _hand_bh(mid)[cell.args["index"]] <= hi + 1e-12
        assert hi - lo < 0.02  # narrow enough to test the printed q to its third decimal


def test_organ_presence_always_present_has_no_specificity(results):
    _, ctx = results
    for strategy in ("random", "popular", "adversarial"):
        assert derive.constant_probe_metric(ctx, "Yes, the {organ} is present.", strategy) == 0.0
    # the same reader gives the opposite policy full specificity: the reply is read, not assumed
    assert derive.constant_probe_metric(ctx, "No, the {organ} is not visible.", "adversarial") == 1.0


# -- judging a cell ------------------------------------------------------------------------------------------


def _cell(paper, scale=1.0):
    return registry.Cell(id="x", paper=paper, compute="total", scale=scale)


def test_a_cell_matches_within_its_printed_rounding_only():
    assert check.judge(_cell("0.110"), 0.1104)[2] == "match"
    assert check.judge(_cell("0.110"), 0.1106)[2] == "MISMATCH"
    assert check.judge(_cell("\u22120.848"), -0.8475)[2] == "match"
    assert check.judge(_cell("12.7", scale=100), 0.1274)[2] == "match"
    assert check.judge(_cell("12.7", scale=100), 0.1276)[2] == "MISMATCH"
    assert check.judge(_cell("< 0.001"), 0.0009)[2] == "match"
    assert check.judge(_cell("< 0.001"), 0.0011)[2] == "MISMATCH"
    assert check.judge(_cell("Effect"), "Effect (small)")[2] == "MISMATCH"
    # an interval from rounded inputs matches when it meets the printed value's own interval
    assert check.judge(_cell("-0.521"), (-0.521, -0.519))[2] == "match"
    assert check.judge(_cell("-0.523"), (-0.521, -0.519))[2] == "MISMATCH"


# -- the command ---------------------------------------------------------------------------------------------


def test_the_flags_are_the_config_models_fields():
    from pipelines.reproduce import ReproduceConfig

    parser = cli.build_parser(["pipelines.reproduce"])
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices["reproduce"]
    dests = {a.dest for a in sub._actions} - {"help", "config", "append", "overwrite"}  # the shared --out guard
    assert dests == set(ReproduceConfig.model_fields)


def test_check_passes_and_writes_a_self_contained_page(tmp_path, capsys):
    rc = cli.main(["reproduce", "--paper", "paired_modality", "--check", "--out", str(tmp_path / "rep")])
    out = capsys.readouterr().out
    assert rc == 0
    # the headline says what its cells are: arithmetic on printed values, no model result among them
    assert out.splitlines()[-1] == ("reproduce: arithmetic on the papers' printed values: 115 of 115 cells match; "
                                    "model results: need data (6 of 6 tables and figures; the commands under each "
                                    "'needs data')")
    assert re.search(r"GPT-6 Astra / Photo only / matched FP / CI high\s+paper\s+26\.8\s+ours\s+26\.8", out)
    assert "$ medscope eval run --protocol paired_modality" in out  # the needs-data commands
    html = (tmp_path / "rep" / "reproduce.html").read_text()
    md = (tmp_path / "rep" / "reproduce.md").read_text()
    assert "<html" in html and not re.search(r"""(src|href)=["'](https?:|//)""", html) and "<link" not in html
    assert "§5.2 McNemar" in md and "| GPT-6 Astra / Photo only / matched FP / CI high | 26.8 |" in md


def test_quiet_prints_the_headline_alone_on_a_scored_table(capfd):
    # Table 5 scores the image-blind policies through the scoring code, which reports progress on stderr
    assert cli.main(["reproduce", "--paper", "counterfactual", "--table", "Table 5", "--quiet"]) == 0
    printed = capfd.readouterr()
    assert printed.err == ""
    assert printed.out.splitlines() == [
        "reproduce: arithmetic on the papers' printed values: 15 of 15 cells match; model results: need data "
        "(1 of 1 tables and figures; `medscope reproduce` without --quiet prints the commands)"]


def _commands(entry) -> list[list[str]]:
    """An entry's needs-data commands as argv lists, as printed ('# ...' comments dropped)."""
    import shlex

    return [shlex.split(c, comments=True) for c in (entry.needs_data.commands if entry.needs_data else [])]


def test_every_printed_command_runs_as_printed(papers):
    """Each command parses with medscope's own parser, and a ``GROUP show P`` reads a folder that
    an earlier command of the same group wrote (``cohort show`` of a views folder refuses it)."""
    import contextlib
    import io

    seen = 0
    for paper in papers.values():
        for e in paper.entries:
            written = {}  # folder -> the verb group whose command wrote it
            for argv in _commands(e):
                where = f"{paper.paper} {e.id}: {' '.join(argv)}"
                assert argv[0] == "medscope", where
                words = argv[1:]
                verb = cli._verb_of(words)
                err = io.StringIO()
                try:
                    with contextlib.redirect_stderr(err):
                        cli.build_parser([cli.VERBS[verb]] if verb else None).parse_args(words)
                except SystemExit:
                    pytest.fail(f"{where}: {err.getvalue().strip().splitlines()[-1]}")
                if words[1:2] == ["show"] and words[2].rstrip("/") in written:
                    assert written[words[2].rstrip("/")] == words[0], where
                if "--out" in words:
                    written[words[words.index("--out") + 1].rstrip("/")] = words[0]
                seen += 1
    assert seen > 50


def _alter(tmp_path, monkeypatch, paper_id, entry_id, cell_id, printed_was, printed_now):
    """A copy of the registry with one printed value changed, put where ``reproduce`` reads it."""
    data = yaml.safe_load(registry.registry_path(paper_id).read_text(encoding="utf-8"))
    cell = next(c for e in data["entries"] if e["id"] == entry_id for c in e["cells"] if c["id"] == cell_id)
    assert cell["paper"] == printed_was
    cell["paper"] = printed_now
    shutil.copytree(registry.PAPERS_DIR, tmp_path / "papers")
    (tmp_path / "papers" / registry.registry_path(paper_id).name).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    monkeypatch.setattr(registry, "PAPERS_DIR", tmp_path / "papers")


@pytest.mark.slow
def test_an_altered_paper_value_fails_the_check(tmp_path, monkeypatch, capsys):
    # the paired-modality paper Table 1: Claude Fable 5.1, photo only, matched FP: 25.0 (12.7-41.2) -> upper end 41.3
    _alter(tmp_path, monkeypatch, "002", "Table 1", "Claude Fable 5.1 / Photo only / matched FP / CI high", "41.2", "41.3")
    rc = cli.main(["reproduce", "--paper", "002", "--table", "T1", "--check", "--quiet"])
    captured = capsys.readouterr()
    assert rc != 0
    assert "Claude Fable 5.1 / Photo only / matched FP / CI high: paper 41.3" in captured.out
    assert "1 derivable cell(s) differ" in captured.err
    # without --check the same run reports it and exits 0
    assert cli.main(["reproduce", "--paper", "002", "--table", "T1", "--quiet"]) == 0


def test_an_altered_table5_value_fails_the_check(tmp_path, monkeypatch, capsys):
    _alter(tmp_path, monkeypatch, "000", "Table 5", "always_refers / net_utility", "0.110", "0.112")
    rc = cli.main(["reproduce", "--paper", "counterfactual", "--table", "Table 5", "--check", "--quiet"])
    assert rc != 0 and "always_refers / net_utility: paper 0.112" in capsys.readouterr().out


def test_bad_requests_are_one_clear_line(capsys, tmp_path):
    assert cli.main(["reproduce", "--table", "Table 5"]) == 2
    assert "--table needs --paper" in capsys.readouterr().err
    assert cli.main(["reproduce", "--paper", "003", "--table", "Table 1"]) == 2
    assert "organ-presence paper has no entry 'Table 1'" in capsys.readouterr().err
    bad = tmp_path / "benchmark_mcq.yaml"
    bad.write_text(yaml.safe_dump({"paper": "001", "title": "t", "source": "s", "entries": [{"id": "Table 9", "title": "x"}]}))
    with pytest.raises(MedScopeError, match="give derivable cells, a needs_data block"):
        registry.load("001", bad)
    unknown = registry.Cell(id="c", paper="1", compute="no_such_thing")
    entry = registry.Entry(id="Table 1", title="t", derivation="d", cells=[unknown])
    paper = registry.Paper(paper="001", title="t", source="s", entries=[entry])
    rows = check.check_entry(paper, entry, derive.Context())
    assert rows[0].status == "error" and "no derivation 'no_such_thing'" in rows[0].detail


def test_the_demo_step_checks_and_links_the_page(tmp_path):
    from pipelines.demo import DemoContext, step_reproduce

    ctx = DemoContext(out=str(tmp_path / "demo"))
    step_reproduce(ctx)
    assert ctx.summary["reproduce"]["mismatched"] == 0 and ctx.summary["reproduce"]["cells"] > 300
    assert os.path.exists(ctx.paths["reproduce"]) and ctx.paths["reproduce"].endswith("reproduce/reproduce.html")
    title, body = ctx.report_sections[-1]
    assert title == "Paper reproduction"
    assert "(../reproduce/reproduce.html)" in body["markdown"] and 'href="../reproduce/reproduce.html"' in body["html"]
    # the link, followed from the report folder, reaches the page
    assert os.path.exists(os.path.normpath(os.path.join(str(tmp_path / "demo" / "report"), "../reproduce/reproduce.html")))


def test_the_docs_list_every_entry(papers):
    from tests.conftest import REPO_ROOT

    from medscope.reproduce.registry import PAPER_NAMES

    doc = Path(REPO_ROOT, "docs", "reproduce.md").read_text(encoding="utf-8")
    for p in papers.values():
        heading = PAPER_NAMES[p.paper][0].upper() + PAPER_NAMES[p.paper][1:]
        section = doc.split(f"### {heading}:", 1)[1].split("\n### ", 1)[0]
        for e in p.entries:
            assert f"| {e.id}: {e.title} | {e.status} |" in section, (p.paper, e.id)
            if e.needs_data:
                assert e.needs_data.reason in section


def test_the_selection_cell_follows_the_rule_not_a_constant(results):
    _, ctx = results
    stages = {"stage1": {"U": "0.585", "H": "13.6"}, "stage2": {"U": "0.610", "H": "12.7"},
              "stage3": {"U": "0.613", "H": "7.7"}}
    assert derive.stage_selection(ctx, stages, {"U": "0.593", "H": "8.2"}) == "stage3"
    # by hand: H3 15.0% > H2 + 2 points (14.7%) fails stage 3; stage 2 passes against stage 1
    worse = dict(stages, stage3={"U": "0.613", "H": "15.0"})
    assert derive.stage_selection(ctx, worse, {"U": "0.593", "H": "8.2"}) == "stage2"
    # amendment 1: a previous release 0.02 above the chosen stage's U is kept instead
    assert derive.stage_selection(ctx, stages, {"U": "0.640", "H": "8.2"}) == "previous"
