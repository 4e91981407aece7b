"""The paper's verification call (benchmark-MCQ paper: a second language-model call checks that the report
supports each key), layered on the offline report-grounded check: verdict reading, the reject
reasons, and a build with ``verify: llm`` against a loopback OpenAI-wire server on real Ray --
the verifier's NOT SUPPORTED removes a question the rules kept, an unreadable verdict removes
one too, and a rerun asks nothing again."""

from __future__ import annotations

import json

import pytest

from medscope.io import records, storage
from medscope.benchgen import questions
from medscope.benchgen.verification import read_verdict, verification_key
from medscope.errors import MedScopeError
from medscope.testing.benchgen_author import author_responder
from medscope.testing.providers import FakeProvider
from tests.benchgen.test_build import _cfg, cohort  # noqa: F401 - the cohort fixture, shared

FINDINGS = "LIVER: Two hypoattenuating lesions in the right hepatic lobe, the largest 3.1 cm. SPLEEN: Normal."
IMPRESSION = "Hepatic lesions suspicious for metastatic disease."


@pytest.mark.parametrize("text, expected", [
    ("VERDICT: SUPPORTED\nThe report states 3.1 cm.", (True, "The report states 3.1 cm")),
    ("Verdict: NOT SUPPORTED. The report says the spleen is normal.", (False, "The report says the spleen is normal")),
    ("**Verdict:** Supported - stated in the impression", (True, "stated in the impression")),
    ("VERDICT: SUPPORTED\nOn reflection, VERDICT: NOT SUPPORTED\nonly a differential", (False, "only a differential")),
    ("verdict = unsupported", (False, "")),
    ("I think the answer is probably right.", (None, "")),
    ("", (None, "")),
])
def test_read_verdict_takes_the_last_verdict_line(text, expected):
    assert read_verdict(text) == expected


def _reply(qs):
    return json.dumps({"questions": qs})


def test_rule_kept_question_needs_a_supported_verdict():
    q = {"question": "What is the size of the largest liver lesion?", "options": ["3.1 cm", "1.2 cm", "6.5 cm"],
         "answer": 0, "level": "characterization", "evidence": ""}
    reply = _reply([q])
    kept, rejects = questions.report_questions("c1", reply, FINDINGS, IMPRESSION)
    assert len(kept) == 1 and rejects == []  # the rules keep it
    key = verification_key("c1", q["question"], "3.1 cm", FINDINGS, IMPRESSION)
    assert questions.report_questions("c1", reply, FINDINGS, IMPRESSION, verdicts={key: (True, "stated")})[0] == kept
    for verdicts, why, detail in [({key: (False, "the report gives 3.1 cm for another lesion")},
                                   "verification:not_supported", "the report gives 3.1 cm for another lesion"),
                                  ({key: (None, "")}, "verification:unreadable", ""),
                                  ({}, "verification:no_verdict", "")]:  # the call failed or was refused
        got, rej = questions.report_questions("c1", reply, FINDINGS, IMPRESSION, verdicts=verdicts)
        assert got == [] and rej == [("c1/report/0", why, detail)]
    # the key hashes the question, its key and the report: an edited report is a new verification
    assert key != verification_key("c1", q["question"], "3.1 cm", FINDINGS + " ", IMPRESSION)


def _verifier(schema):
    """The author double, plus a verifier that rejects the gallbladder keys and mumbles on the spleen."""
    author = author_responder(schema)

    def respond(text, images):
        if "PROPOSED ANSWER:" not in text:
            return author(text, images)
        question = text.split("QUESTION:", 1)[1].split("\n", 1)[0]
        if "gallbladder" in question:
            return "VERDICT: NOT SUPPORTED\nThe report does not describe the gallbladder that way."
        if "spleen" in question:
            return "Hard to say."
        return "VERDICT: SUPPORTED\nStated in the findings."
    return respond


@pytest.mark.slow
def test_build_with_llm_verification(cohort, ray_cluster, tmp_path):  # noqa: F811
    from medscope.benchgen import schema as sch
    from pipelines.benchgen import build

    fake = FakeProvider("openai", responder=_verifier(sch.load_schema(cohort["schema"])))
    plain, verified = str(tmp_path / "plain"), str(tmp_path / "verified")
    try:
        base = build(_cfg(cohort, plain, fake.url, [fake.url]))
        cfg = _cfg(cohort, verified, fake.url, [fake.url]).model_copy(update={"verify": "llm"})
        first = build(cfg)
        asked = fake.count("PROPOSED ANSWER:")
        calls = fake.count()
        again = build(cfg)
        assert fake.count() == calls and again["items"] == first["items"]  # resumed: nothing asked twice
    finally:
        fake.close()
    kept = records.read_table("mcq_items", storage.join(plain, "items")).to_pylist()
    report = [it for it in kept if it["qtype"] == "report"]
    gallbladder = [it for it in report if "gallbladder" in it["question"]]
    spleen = [it for it in report if "spleen" in it["question"]]
    assert gallbladder and spleen  # the author writes both about every phantom study
    assert asked == len(report)  # one verification per question the rules kept, none for rejected ones
    assert first["items"]["report"] == len(report) - len(gallbladder) - len(spleen)
    assert first["items"]["rads"] == base["items"]["rads"]  # schema-driven questions are not verified
    assert first["rejects"]["verification:not_supported"] == len(gallbladder)
    assert first["rejects"]["verification:unreadable"] == len(spleen)
    rej = records.read_table("rejects", storage.join(verified, "rejects")).to_pylist()
    details = {r["detail"] for r in rej if r["reason"] == "verification:not_supported"}
    assert details == {"The report does not describe the gallbladder that way"}
    assert first["verification"]["done"] == len(report) and first["accounting"]["failed"] == 0
    # the verification sweep is an ordinary eval folder beside the generation calls
    assert storage.exists(storage.join(verified, "verification", "sweep.json"))


def test_verify_llm_without_a_model_is_refused(cohort, tmp_path):  # noqa: F811
    from pipelines.benchgen import BuildConfig, verifier_of

    cfg = BuildConfig.model_validate({"reports": cohort["reports"], "volumes": cohort["volumes"],
                                      "schema": cohort["schema"], "out": str(tmp_path / "b"), "verify": "llm"})
    with pytest.raises(MedScopeError, match="verify: llm needs a verifier model"):
        verifier_of(cfg, None)
