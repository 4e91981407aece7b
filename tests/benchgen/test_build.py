"""benchgen build on real local Ray (sweep actors + Ray Data) against a loopback OpenAI-wire
server: privacy refusal, resume without repeated generation calls, and the built benchmark
evaluated sighted and blind through the shared sweep (benchmark-MCQ paper)."""

from __future__ import annotations

import csv

import os
import shutil

import pytest

from medscope.io import records, storage
from medscope.benchgen import phantom
from medscope.benchgen import schema as sch
from medscope.benchgen.questions import REPORT_PROMPT
from medscope.errors import MedScopeError
from medscope.models.config import ModelEntry
from medscope.testing.benchgen_author import author_responder
from medscope.testing.providers import FakeProvider

KEY_ENV = "MEDSCOPE_TEST_LOCAL_KEY"


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    d = tmp_path_factory.mktemp("bg")
    out = phantom.phantom_cohort(str(d / "cohort"), n_cases=3, shape=(48, 48, 16))
    schema = str(d / "liver.yaml")
    shutil.copyfile(sch.shipped_path("liver"), schema)
    for cp in sch.CHECKPOINTS:
        sch.approve(schema, cp, "test reviewer", REPORT_PROMPT)
    os.environ[KEY_ENV] = "local"
    return {**out, "schema": schema, "dir": d}


def _cfg(cohort, out, url, allow):
    from pipelines.benchgen import BuildConfig

    gen = {"name": "writer", "kind": "openai", "model": "local-writer", "base_url": url, "api_key_env": KEY_ENV,
           "max_attempts": 1}
    return BuildConfig.model_validate({"reports": cohort["reports"], "volumes": cohort["volumes"],
                                       "schema": cohort["schema"], "out": out, "cohort": "ph",
                                       "endpoint_allowlist": allow, "generator_entry": gen, "extractor": "llm"})


def test_private_cohort_refuses_endpoint_off_allow_list(cohort, tmp_path):
    from pipelines.benchgen import build

    fake = FakeProvider("openai", responder=author_responder(sch.load_schema(cohort["schema"])))
    try:
        with pytest.raises(MedScopeError, match="not on cohort ph's endpoint allow-list"):
            build(_cfg(cohort, str(tmp_path / "b"), fake.url, ["http://127.0.0.1:1/v1"]))
        assert fake.count() == 0  # refused before any report text left
    finally:
        fake.close()


@pytest.mark.slow
def test_build_resumes_without_repeating_generation_and_evaluates(cohort, ray_cluster, tmp_path):
    from pipelines.benchgen import MCQ_PROTOCOL, build, show
    from pipelines.eval import EvalConfig, run_sweep
    from medscope.protocols.benchmark_mcq import PROTOCOL

    fake = FakeProvider("openai", responder=author_responder(sch.load_schema(cohort["schema"])))
    out = str(tmp_path / "bench")
    try:
        first = build(_cfg(cohort, out, fake.url, [fake.url]))
        calls = fake.count()
        assert calls == 3 * 2  # one question-writing and one extraction call per study
        assert first["studies_built"] == 3 and first["items"]["rads"] > 0 and first["items"]["report"] > 0
        assert first["rejects"]["grounding:contradicted_by_report"] == 3  # the hallucinated splenomegaly
        assert first["rejects"]["structure:option_count_outside_2_5"] == 3
        # every rejected question is in the review CSV with its reason, the question and its key
        review = list(csv.DictReader(open(storage.join(out, "review_rejects.csv"))))
        spleen = [r for r in review if r["reason"] == "grounding:contradicted_by_report"]
        assert len(spleen) == 3 and all(" -> " in r["detail"] and r["radiologist_agrees"] == "" for r in spleen)
        again = build(_cfg(cohort, out, fake.url, [fake.url]))
        assert fake.count() == calls  # resumed: no generation call repeated
        assert again["studies_resumed"] == 3 and again["items"] == first["items"]
    finally:
        fake.close()
    items = records.read_table("mcq_items", storage.join(out, "items")).to_pylist()
    assert all(it["private"] and it["endpoint_allowlist"] == [fake.url] for it in items)
    assert all(2 <= it["k"] <= 5 and it["answer"] in "ABCDE"[: it["k"]] for it in items)
    mont = records.read_table("montages", storage.join(out, "montages")).to_pylist()
    assert {(m["height"], m["width"]) for m in mont} == {(12 * 48, 12 * 48)}
    assert show(out)["subcategories"]

    models = [ModelEntry.model_validate({"name": "yes", "kind": "policy", "model": "always-claims"}),
              ModelEntry.model_validate({"name": "no", "kind": "policy", "model": "always-absent"})]
    ev = str(tmp_path / "eval")
    summary = run_sweep(EvalConfig(views=out, models="(inline)", conditions=["sighted", "blind"], out=ev,
                                   protocol=MCQ_PROTOCOL, workers=1), entries=models)
    assert summary["done"] == len(items) * 4
    proto = PROTOCOL(PROTOCOL.Options(n_boot=200, n_boot_tests=500))
    scored = str(tmp_path / "scored")
    proto.score(storage.join(ev, "episodes"), out, scored)
    scores = records.read_table("mcq_scores", storage.join(scored, "mcq_scores.parquet")).to_pandas()
    binary = scores[scores["k"] == 2]
    # a constant policy on Yes/No items: always valid; on other items: invalid and excluded
    assert binary["valid"].all() and not scores[scores["k"] > 2]["valid"].any()
    sections, _ = proto.report_sections(scored, str(tmp_path / "rep"))
    captions = [getattr(b, "caption", "") for b in sections[0].blocks]
    assert sum(c.startswith("Table") for c in captions) == 4
