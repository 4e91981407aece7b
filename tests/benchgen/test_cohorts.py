"""Several cohorts in one analysis (benchmark-MCQ paper Tables 1 and 3), on real local Ray through
the CLI: ``benchgen build --append`` (refused without it), cohorts sharing case ids kept apart in
one build, a one-text-field report export, ``eval run --items A --items B``, ``score --plan``
with declared BH families, Table 1 with a column per cohort and Table 3 from build records."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from medscope.io import records, storage
from medscope.benchgen import phantom
from medscope.benchgen import schema as sch
from medscope.benchgen.questions import REPORT_PROMPT
from medscope.render import thin
from pipelines import cli


def _one_text_field(reports_jsonl: str, out_csv: str) -> None:
    """The phantom's reports re-exported as a RIS would: case_id + one report text."""
    rows = [json.loads(x) for x in open(reports_jsonl) if x.strip()]
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "report"])
        for r in rows:
            w.writerow([r["case_id"], f"CLINICAL HISTORY: staging.\nFINDINGS:\n{r['findings']}\n\nCONCLUSION:\n"
                                      f"{r['impression']}"])
        w.writerow(["phantom-999", "Liver lesion, no headers at all."])


@pytest.mark.slow
def test_two_cohorts_one_build_one_eval_tables_1_and_3(ray_cluster, tmp_path, capsys):
    schema = str(tmp_path / "liver.yaml")
    shutil.copyfile(sch.shipped_path("liver"), schema)
    for cp in sch.CHECKPOINTS:
        sch.approve(schema, cp, "test reviewer", REPORT_PROMPT)
    a = phantom.phantom_cohort(str(tmp_path / "a"), n_cases=2, shape=(40, 40, 12), seed=0)
    b = phantom.phantom_cohort(str(tmp_path / "b"), n_cases=2, shape=(40, 40, 12), seed=5)  # same case ids
    c = phantom.phantom_cohort(str(tmp_path / "c"), n_cases=2, shape=(40, 40, 12), seed=9)
    c_csv = str(tmp_path / "c_reports.csv")
    _one_text_field(c["reports"], c_csv)
    build, other = str(tmp_path / "build"), str(tmp_path / "build_c")
    common = ["--schema", schema, "--no-report-questions"]

    def bg(src, reports, out, cohort, *extra):
        return cli.main(["benchgen", "build", "--reports", reports, "--volumes", src["volumes"], "--out", out,
                         "--cohort", cohort, *common, *extra])

    assert bg(a, a["reports"], build, "site_a", "--matched-group", "g", "--imaging-source", "public") == 0
    items_a = records.read_table("mcq_items", storage.join(build, "items")).to_pylist()
    assert bg(b, b["reports"], build, "site_b", "--matched-group", "g") != 0  # refused without --append
    assert "--append" in capsys.readouterr().err
    assert bg(b, b["reports"], build, "site_b", "--matched-group", "g", "--append") == 0
    assert bg(c, c_csv, other, "site_c") == 0  # a one-text-field export builds

    items = records.read_table("mcq_items", storage.join(build, "items")).to_pylist()
    assert [i for i in items if i["cohort"] == "site_a"] == items_a  # the append deleted nothing of site_a
    assert {i["cohort"] for i in items} == {"site_a", "site_b"}
    assert {i["case_id"] for i in items if i["cohort"] == "site_a"} == {i["case_id"] for i in items
                                                                        if i["cohort"] == "site_b"}
    manifest = json.loads(storage.read_utf8(storage.join(build, "build.json")))
    assert set(manifest["cohorts"]) == {"site_a", "site_b"}
    rej_c = records.read_table("rejects", storage.join(other, "rejects")).to_pylist()
    assert ("phantom-999", "no_sections_found") in {(r["item_id"], r["reason"]) for r in rej_c}

    # montages keyed by cohort: a site_b item shows site_b's image of the shared case id
    from medscope.protocols.benchmark_mcq.protocol import BenchmarkMCQProtocol

    mont = records.read_table("montages", storage.join(build, "montages")).to_pylist()
    by_key = {(m["cohort"], m["case_id"], m["sequence"]): m["image"] for m in mont}
    loaded = BenchmarkMCQProtocol().load_items(f"{build},{other}")
    assert {i.meta["cohort"] for i in loaded} == {"site_a", "site_b", "site_c"}
    for it in loaded:
        if it.meta["cohort"] != "site_c":
            assert it.images[0] == by_key[(it.meta["cohort"], it.case_id, it.meta["sequences"][0])]
    assert by_key[("site_a", "phantom-000", "ct")] != by_key[("site_b", "phantom-000", "ct")]

    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - {name: claims, kind: policy, model: always-claims}\n")
    ev = str(tmp_path / "eval")
    assert cli.main(["eval", "run", "--protocol", "benchmark_mcq", "--items", build, "--items", other,
                     "--models", str(models), "--conditions", "sighted,blind", "--out", ev, "--workers", "1"]) == 0
    plan = tmp_path / "families.yaml"
    plan.write_text("families:\n  - name: matched\n    test: image_effect\n    members:\n"
                    "      - {cohort: site_a, qtype: rads}\n      - {cohort: site_b, qtype: rads}\n")
    scored = str(tmp_path / "scored")
    capsys.readouterr()
    with thin.configure(min_items=1, min_cases=1):  # phantom cohorts are thin; this test is about the plan
        assert cli.main(["score", "--episodes", ev, "--out", scored, "--plan", str(plan), "--n-boot", "200",
                         "--n-boot-tests", "300"]) == 0
    assert "BH family matched (image_effect): 2 test(s): site_a/rads/claims, site_b/rads/claims" in capsys.readouterr().out
    tests = records.read_table("mcq_tests", storage.join(scored, "tests.parquet")).to_pylist()
    assert {t["family_size"] for t in tests if t["bh_family"] == "matched"} == {2}
    assert all(t["q_value"] is None for t in tests if t["bh_family"] == "undeclared")

    from medscope.protocols.benchmark_mcq.protocol import BenchmarkMCQProtocol as P

    sections, _ = P().report_sections(scored, str(tmp_path / "rep"))
    tables = {b.caption.split(".")[0]: b for b in sections[0].blocks if getattr(b, "caption", "").startswith("Table")}
    assert tables["Table 1"].headers == ["", "site_a", "site_b", "site_c"]
    t3 = tables["Table 3"]
    assert {r[0] for r in t3.rows} == {"site_a (public)", "site_b (private)"}


def test_append_guard_and_multi_items_refusal_without_ray(tmp_path):
    from medscope.errors import MedScopeError
    from pipelines.benchgen import BuildConfig, check_append
    from medscope.models.config import ModelEntry
    from pipelines.eval import EvalConfig, run_sweep

    out = str(tmp_path / "b")
    storage.write_text(storage.join(out, "build.json"), json.dumps({"cohorts": {"site_a": {"cohort": "site_a"}}}))

    def cfg(cohort, append=False):
        return BuildConfig.model_validate({"reports": "r.csv", "volumes": "v", "schema": "liver", "out": out,
                                           "cohort": cohort, "append": append})

    with pytest.raises(MedScopeError, match="already holds cohort\\(s\\) site_a; add cohort 'site_b' to it with --append"):
        check_append(cfg("site_b"))
    check_append(cfg("site_b", append=True))  # added
    check_append(cfg("site_a"))  # a rebuild (resume) of the cohort it holds needs no flag

    class OneTable:  # a protocol that reads one item table
        name = "one_table"

        def conditions(self):
            return ("plain",)

    with pytest.raises(MedScopeError, match="reads one item table; --items named 2"):
        run_sweep(EvalConfig(items="a,b", models="(inline)", out=str(tmp_path / "e"), conditions=["plain"]),
                  protocol=OneTable(), entries=[ModelEntry.model_validate({"name": "x", "kind": "policy",
                                                                           "model": "always-claims"})])


def test_eval_items_repeat_and_accumulate():
    from pipelines.support.flags import config_from_args

    args = cli.build_parser().parse_args(["eval", "run", "--items", "a", "--items", "b,c", "--views", "d",
                                          "--models", "m", "--out", "o"])
    assert config_from_args(args).items == "a,b,c,d"
    args = cli.build_parser().parse_args(["eval", "run", "--items", "a", "--models", "m", "--out", "o"])
    assert config_from_args(args).items == "a"
