"""The ``medscope cohort`` verbs and the cohort job, end to end through pipelines.cli.main."""

import json
import os

import yaml

from tests.fixtures.cohort_layouts import write_busi, write_kvasir, write_nifti_labels
from medscope.io import records, storage
from pipelines import cohort as cohort_job
from pipelines.cli import main
from pipelines.demo import DemoContext, step_cohort
from tests.conftest import REPO_ROOT


def run_json(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_import_kvasir_to_s3_and_show(tmp_path, capsys, s3_bucket):
    good, bad = write_kvasir(tmp_path / "kvasir")
    out = f"{s3_bucket}/cohorts/kvasir"
    summary = run_json(capsys, ["cohort", "import", "--format", "kvasir-seg", "--path", str(tmp_path / "kvasir"), "--out", out])
    assert summary["cases"] == len(good) and summary["rejects"] == len(bad)
    assert summary["rejects_by_reason"] == {reason: 1 for reason in bad.values()}
    cases = records.read_table("cases", f"{out}/cases.parquet")
    assert sorted(cases.column("source_file").to_pylist()) == sorted(good)
    rejects = records.read_table("rejects", f"{out}/rejects.parquet")
    assert sorted(rejects.column("item_id").to_pylist()) == sorted(bad)

    shown = run_json(capsys, ["cohort", "show", out])
    n = len(good)
    assert shown["cases"]["n"] == n and shown["cases"]["lesion"] == n and shown["cases"]["lesion_free"] == 0
    assert shown["cases"]["by_imaging_type"] == {"colonoscopy": n}
    assert shown["cases"]["by_split"] == {"(none)": n}
    assert shown["rejects"]["by_reason"] == {reason: 1 for reason in bad.values()}
    # the file itself works too, and finds the rejects beside it
    assert run_json(capsys, ["cohort", "show", f"{out}/cases.parquet"])["rejects"]["n"] == len(bad)


def test_import_reads_a_dataset_from_s3(tmp_path, capsys, s3_bucket):
    local = tmp_path / "busi"
    good, bad = write_busi(local)
    for dirpath, _, files in os.walk(local):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), local)
            storage.write_bytes(f"{s3_bucket}/raw/busi/{rel}", (local / rel).read_bytes())
    summary = run_json(
        capsys, ["cohort", "import", "--format", "busi", "--path", f"{s3_bucket}/raw/busi", "--out", str(tmp_path / "out")]
    )
    assert summary["cases"] == len(good) and summary["rejects"] == len(bad)
    assert summary["lesion_free"] == sum(v is None for v in good.values())


def test_import_nifti_with_organ_config_and_show_volumes(tmp_path, capsys):
    good, bad = write_nifti_labels(tmp_path / "btcv")
    out = str(tmp_path / "out")
    summary = run_json(
        capsys,
        ["cohort", "import", "--format", "nifti-labels", "--path", str(tmp_path / "btcv"), "--out", out,
         "--dataset-config", str(tmp_path / "btcv" / "organs.yaml")],
    )
    assert summary["volumes"] == len(good) and summary["rejects"] == len(bad)
    assert storage.exists(f"{out}/volumes.parquet") and not storage.exists(f"{out}/cases.parquet")
    shown = run_json(capsys, ["cohort", "show", out])
    assert shown["volumes"]["n"] == 2 and shown["volumes"]["organs"] == ["aorta", "liver", "spleen"]
    assert shown["rejects"]["by_reason"]["corrupt NIfTI"] == 2


def test_phantom_verb(tmp_path, capsys):
    out = str(tmp_path / "ph")
    summary = run_json(capsys, ["cohort", "phantom", "--out", out, "--cases", "9", "--seed", "3", "--volumes", "1"])
    assert summary["cases"] == f"{out}/cases.parquet"
    assert summary["summary"]["cases"]["n"] == 9
    assert summary["summary"]["volumes"]["n"] == 1
    assert summary["summary"]["rejects"]["n"] == 0


def test_a_phantom_batch_grows_the_cohort_in_out_without_append(tmp_path, capsys):
    # the rule lives with the action (pipelines/cohort.py), not in the dispatcher: --batch 2 adds to
    # what --out holds; a first batch into a used --out is refused like any run
    out = str(tmp_path / "ph")
    run_json(capsys, ["cohort", "phantom", "--out", out, "--cases", "4", "--seed", "3", "--volumes", "1"])
    grown = run_json(capsys, ["cohort", "phantom", "--out", out, "--cases", "4", "--seed", "3", "--batch", "2"])
    # by hand: 4 new cases and a near-copy of an earlier one join the first 4
    assert grown["summary"]["cases"]["n"] == 4 + 4 + 1
    capsys.readouterr()
    assert main(["cohort", "phantom", "--out", out, "--cases", "4", "--seed", "4", "--volumes", "1"]) == 2
    assert "--append" in capsys.readouterr().err


def test_errors_are_one_line(tmp_path, capsys):
    capsys.readouterr()
    assert main(["cohort", "import", "--format", "busi", "--path", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("medscope: error:") and "BUSI class folders" in err and "\n" not in err
    assert main(["cohort", "show", str(tmp_path / "missing.parquet")]) == 2
    assert "no cohort at" in capsys.readouterr().err
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text("imaging_typo: x\n")
    write_kvasir(tmp_path / "kv")
    assert main(["cohort", "import", "--format", "kvasir-seg", "--path", str(tmp_path / "kv"), "--out", str(tmp_path / "o"),
                 "--dataset-config", str(bad_cfg)]) == 2
    assert "imaging_typo" in capsys.readouterr().err


def test_cohort_job_entry(tmp_path, capsys):
    good, bad = write_busi(tmp_path / "busi")
    cfg = tmp_path / "job.yaml"
    cfg.write_text(yaml.safe_dump({
        "format": "busi", "path": str(tmp_path / "busi"), "out": str(tmp_path / "out"),
        "dataset": {"source": "busi-site-a", "private": True, "endpoint_allowlist": ["local"]},
    }))
    capsys.readouterr()
    assert cohort_job.main(["--config", str(cfg)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["source"] == "busi-site-a" and summary["cases"] == len(good)
    cases = records.read_table("cases", str(tmp_path / "out" / "cases.parquet"))
    assert set(cases.column("private").to_pylist()) == {True}
    assert cases.column("endpoint_allowlist").to_pylist()[0] == ["local"]
    cfg.write_text(yaml.safe_dump({"format": "busi", "out": str(tmp_path / "o2")}))
    assert cohort_job.main(["--config", str(cfg)]) == 2
    assert "needs path" in capsys.readouterr().err


def test_demo_cohort_step(tmp_path):
    ctx = DemoContext(out=str(tmp_path / "demo"), cases=12)
    step_cohort(ctx)
    assert ctx.paths["cases"].endswith("cases.parquet") and storage.exists(ctx.paths["volumes"])
    assert ctx.summary["cohort"]["cases"]["n"] == 12


def test_phantom_to_s3(capsys, s3_bucket):
    out = f"{s3_bucket}/phantom"
    summary = run_json(capsys, ["cohort", "phantom", "--out", out, "--cases", "6", "--volumes", "1"])
    vols = records.read_table("volumes", summary["volumes"]).to_pylist()
    assert vols[0]["image_uri"] == f"{out}/volumes/imagesTr/ct001.nii.gz"
    assert storage.exists(vols[0]["label_uri"])
    assert records.read_table("cases", summary["cases"]).num_rows == 6
    assert cohort_job.show_summary(out)["cases"]["n"] == 6


def test_shipped_configs_validate():
    import glob

    from medscope import config
    from medscope.cohorts import FORMATS, dataset_config

    for fmt in FORMATS:
        assert dataset_config(fmt).source  # configs/datasets/<format>.yaml parses
    btcv = dataset_config("nifti-labels")
    assert len(btcv.organ_map) == 13 and btcv.organ_map[6] == "liver"
    assert dataset_config("siim-rle").critical is True
    jobs = glob.glob(os.path.join(REPO_ROOT, "configs", "cohort", "*.yaml"))
    assert jobs
    for path in jobs:
        config.load(cohort_job.CohortJobConfig, path)
