"""The benchmark-MCQ demo's inputs (no Ray): the approved schema, each cohort's build settings, the
totals of a build. The build itself runs in `medscope demo` (tests/test_docs_blocks.py, the workstation runbook)."""

from __future__ import annotations

from medscope.benchgen import demo_inputs
from medscope.benchgen import schema as sch
from medscope.benchgen.questions import REPORT_PROMPT
from pipelines.benchgen import BuildConfig


def test_demo_schema_passes_the_build_approval_check(tmp_path):
    uri = demo_inputs.write_approved_demo_schema(str(tmp_path))
    assert uri.endswith("liver_schema.yaml")
    record = sch.require_approved(uri, REPORT_PROMPT)
    assert all(record[cp]["by"] == demo_inputs.DEMO_APPROVER for cp in sch.CHECKPOINTS)


def test_every_cohort_after_the_first_appends_to_the_one_build():
    cohorts = [("a", {"reports": "ra.csv", "volumes": "va"}, "public"),
               ("b", {"reports": "rb.csv", "volumes": "vb"}, "private")]
    gen = {"name": "author-llm", "kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1"}
    settings = demo_inputs.demo_build_settings(cohorts, "s.yaml", "/tmp/build", "http://127.0.0.1:1", gen)
    assert [s["append"] for s in settings] == [False, True]
    assert {s["out"] for s in settings} == {"/tmp/build"}
    assert {s["matched_group"] for s in settings} == {demo_inputs.DEMO_MATCHED_GROUP}
    assert [s["imaging_source"] for s in settings] == ["public", "private"]
    for s in settings:  # what the verb validates: the settings are build's own keys
        cfg = BuildConfig.model_validate(s)
        assert cfg.endpoint_allowlist == ["http://127.0.0.1:1"] and cfg.private


def test_totals_sum_over_cohorts():
    per = {"a": {"items": {"rads": 3, "report": 2}, "studies_built": 2},
           "b": {"items": {"rads": 1, "report": 0}, "studies_built": 1}}
    assert demo_inputs.demo_totals(per) == {"items": {"rads": 4, "report": 2}, "studies_built": 3}
