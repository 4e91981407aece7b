"""The demo's numbers the docs quote are read from a demo run, not typed by hand: each is marked
where it stands (``<!--demo:NAME-->value<!--/demo-->``) and compared with ``NAME``'s measure on a
run of the demo's own steps that make it (tests/fixtures/demo_numbers.py)."""

from __future__ import annotations

import pytest

from tests.fixtures import demo_numbers as dn


def test_every_marked_number_names_a_measure_and_every_measure_is_quoted():
    quotes = dn.quoted()
    files = {f for f, _, _, _ in quotes}
    assert {"README.md", "docs/evaluation.md", "docs/benchmarks.md"} <= files
    unknown = [f"{f}:{ln}: {n}" for f, ln, n, _ in quotes if n not in dn.MEASURES]
    assert not unknown, f"marked numbers with no measure: {unknown}"
    assert set(dn.MEASURES) == {n for _, _, n, _ in quotes}, "a measure no page quotes"
    # one name, one value, wherever it is quoted
    values: dict[str, set] = {}
    for _, _, n, v in quotes:
        values.setdefault(n, set()).add(v)
    assert all(len(v) == 1 for v in values.values()), {n: v for n, v in values.items() if len(v) > 1}


def test_rewrite_sets_each_marked_value_and_leaves_the_rest(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("ESG <!--demo:esg_reader-->0.714 [0.333, 1.000]<!--/demo--> on "
                                        "<!--demo:test_cases-->33<!--/demo--> cases, 0.714 elsewhere\n")
    (tmp_path / "docs" / "a.md").write_text("<!--demo:test_cases-->33<!--/demo-->\n")
    changed = dn.rewrite(str(tmp_path), {"esg_reader": "0.364 [0.167, 0.588]", "test_cases": "48"})
    assert changed == 3
    assert (tmp_path / "README.md").read_text() == ("ESG <!--demo:esg_reader-->0.364 [0.167, 0.588]<!--/demo--> on "
                                                    "<!--demo:test_cases-->48<!--/demo--> cases, 0.714 elsewhere\n")
    assert dn.quoted(str(tmp_path)) == [("README.md", 1, "esg_reader", "0.364 [0.167, 0.588]"),
                                        ("README.md", 1, "test_cases", "48"), ("docs/a.md", 1, "test_cases", "48")]


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.timeout(1800)  # the demo's cohort, views, reader fit, evaluation and scoring at full size
def test_the_docs_quote_the_demo(ray_cluster, tmp_path):
    from pipelines import demo

    ctx = demo.run(demo.DemoContext(out=str(tmp_path / "demo")), ["score"])  # and the steps it needs
    values = dn.measured(ctx.out, dn.MEASURES)
    stale = [f"{f}:{ln}: {n} is {values[n]} in the demo, the page says {v}"
             for f, ln, n, v in dn.quoted() if values[n] != v]
    assert not stale, ("docs quote stale demo numbers (run the demo, then `python -m tests.fixtures.demo_numbers "
                       "OUT --write`):\n" + "\n".join(stale))
