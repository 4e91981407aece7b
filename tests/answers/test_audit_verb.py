"""``medscope answers audit`` / ``agreement`` end to end on a tiny synthetic run whose replies are
real text: the sample and page in the eval run folder, labels made from what each reply meant
(never from its reading), agreement.json, the report's line, and bad labels as exit 2."""

from __future__ import annotations

import json

import pytest

from medscope.answers import audit as aud
from medscope.io import records
from medscope.testing.synthetic_runs import reply_run
from pipelines.cli import main as cli


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    made = reply_run(str(root))
    assert cli(["answers", "audit", "--episodes", made["eval"], "--sample", "16", "--seed", "1"]) == 0
    return root, made


def _labels_file(path, folder, labels, **extra):
    path.write_text(json.dumps({"sample_file": str(folder / "audit_sample.jsonl"), "labels": labels, **extra}))
    return str(path)


def test_audit_then_agreement_then_the_report_line(run, tmp_path, capsys):
    root, made = run
    folder = root / "eval" / "answers_audit"  # the default: inside the eval run, where the report looks
    manifest = json.loads((folder / "audit.json").read_text())
    sample = aud.read_sample(str(folder))
    assert manifest["drawn"] == len(sample) == 16 and manifest["replies_in_run"] == 4 * 2 * (8 * 3 + 6)
    cells = {(r["model"], r["condition"]) for r in sample}
    assert len(cells) == 8  # 4 models x 2 conditions
    page = (folder / "label.html").read_text()
    assert not any(m in page for m in ("always-present", "always-absent", "pixel-reader", "chatty"))
    # the labeller: what each reply meant (synthetic_runs.REPLY_MODELS), two left unsure
    labels = {r["sample_id"]: made["intent"][(r["model"], r["condition"], r["item_id"])] for r in sample}
    unsure = sorted(labels)[:2]
    labels.update({sid: "unsure" for sid in unsure})
    labels_uri = _labels_file(tmp_path / "labels.json", folder, labels,
                              sample_hash=manifest["sample_hash"], labeller="t")
    capsys.readouterr()
    assert cli(["answers", "agreement", "--labels", labels_uri, "--episodes", made["eval"]]) == 0
    printed = capsys.readouterr()
    result = json.loads((folder / "agreement.json").read_text())
    o = result["overall"]
    assert (o["n"], o["unsure"], o["flips"]) == (14, 2, 0)
    assert o["agree"] == 14  # plain replies: the reader reads every one as it was meant
    assert printed.out.splitlines()[0].split()[:3] == ["model", "n", "agree"]
    assert any(ln.startswith("all ") for ln in printed.out.splitlines())
    assert "over the run (each labelled stratum weighted by its" in printed.out
    assert result["line"] in printed.err and result["labels"] == labels_uri
    assert sum(m["n"] for m in result["per_model"]) == 14
    assert result["run_weighted"]["agreement"] == 1.0 and result["run_weighted"]["flip_rate"] == 0.0
    # the report's "How replies were read" shows it
    from medscope.report.build import build_report
    from pipelines.score import score

    score(made["eval"], str(root / "scored"), n_boot=50)
    build_report(str(root / "scored"), str(root / "report"))
    md = (root / "report" / "report.md").read_text()
    assert "Reply reading checked on 14 replies (4 models): agreement 14/14 = 1.00" in md
    assert "flips 0 (95% CI 0.00–0.22), unclear 0; 2 more labelled unsure, left out" in md


def _one_line_error(capsys, args) -> str:
    capsys.readouterr()
    assert cli(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_bad_labels_and_another_run_are_clear_errors(run, tmp_path, capsys):
    root, made = run
    folder = root / "eval" / "answers_audit"
    sample = aud.read_sample(str(folder))
    good = {r["sample_id"]: "claim" for r in sample}
    args = ["answers", "agreement", "--episodes", made["eval"], "--out", str(tmp_path / "agreement.json"), "--labels"]
    err = _one_line_error(capsys, args + [_labels_file(tmp_path / "a.json", folder, {**good, "abc123": "deny"})])
    assert "not in the sample" in err and "'abc123'" in err
    err = _one_line_error(capsys, args + [_labels_file(tmp_path / "b.json", folder, {**good, sample[0]["sample_id"]:
                                                                                     "yes"})])
    assert f"sample {sample[0]['sample_id']}: unknown decision 'yes'" in err
    err = _one_line_error(capsys, args + [_labels_file(tmp_path / "c.json", folder, good, sample_hash="0" * 64)])
    assert "another sample" in err
    # the run's replies changed since the audit: the labels are about another run
    other = reply_run(str(tmp_path / "other"), n_lesion=3, n_negative=2)
    err = _one_line_error(capsys, ["answers", "agreement", "--episodes", other["eval"], "--labels",
                                   _labels_file(tmp_path / "d.json", folder, good)])
    assert "sampled replies are not in this run" in err
    assert not (tmp_path / "agreement.json").exists()
    # a second, different sample into the folder a labeller may hold: refused unless --overwrite
    again = ["answers", "audit", "--episodes", other["eval"], "--sample", "8"]
    assert cli(again) == 0 and cli(again) == 0  # the same sample again is a rerun
    assert "holds another sample" in _one_line_error(capsys, again[:-1] + ["9"])
    assert cli(again[:-1] + ["9", "--overwrite"]) == 0


def test_a_run_of_another_protocol_is_refused(tmp_path, capsys):
    row = {f.name: None for f in records.schema("episodes")}
    row.update(run_id="r", protocol="benchmark_mcq", model="m", condition="sighted", item_id="q1", case_id="c",
               request_key="k", prompt_version="p", decoding="d", raw_text="B", action="answer", tool_calls=0,
               input_tokens=0, output_tokens=0, cost_usd=0.0, latency_s=0.0, attempts=1)
    records.write_part("episodes", [row], str(tmp_path / "eval" / "episodes"), "0")
    err = _one_line_error(capsys, ["answers", "audit", "--episodes", str(tmp_path / "eval"), "--sample", "5"])
    assert "counterfactual, organ_presence" in err and "'benchmark_mcq'" in err
