"""A job never writes results where they vanish: under `ray job submit` a relative
--out / out: is refused with a message naming what to pass; every verb says where results went."""

from __future__ import annotations

import os
import pytest

from medscope.errors import MedScopeError
from pipelines.support import outputs

RAY_CWD = "/tmp/ray/session_x/runtime_resources/working_dir_files/_ray_pkg_abc"
JOB_ENV = {outputs.JOB_ENV_VAR: '{"runtime_env": {}}'}


def test_outside_a_ray_job_a_relative_out_is_resolved_against_the_cwd():
    assert outputs.check_out("demo-out", environ={}, cwd="/home/u/proj") == "/home/u/proj/demo-out"
    assert outputs.check_out("s3://b/run", environ={}, cwd="/x") == "s3://b/run"


@pytest.mark.parametrize("environ,cwd", [(JOB_ENV, "/home/u/proj"), ({}, RAY_CWD)])
def test_under_a_ray_job_a_relative_out_is_refused_naming_what_to_pass(environ, cwd):
    with pytest.raises(MedScopeError) as err:
        outputs.check_out("demo-out", environ=environ, cwd=cwd)
    msg = str(err.value)
    assert "'demo-out'" in msg and "absolute path" in msg and "s3://" in msg
    assert os.path.join(cwd, "demo-out") in msg  # where it would have gone


def test_under_a_ray_job_absolute_and_object_store_outputs_pass():
    assert outputs.check_out("/data/run1", environ=JOB_ENV, cwd=RAY_CWD) == "/data/run1"
    assert outputs.check_out("file:///data/run1", environ=JOB_ENV, cwd=RAY_CWD) == "/data/run1"
    assert outputs.check_out("s3://bucket/run1", environ=JOB_ENV, cwd=RAY_CWD) == "s3://bucket/run1"
    # an absolute path that points into Ray's working-dir copy vanishes all the same
    with pytest.raises(MedScopeError):
        outputs.check_out(RAY_CWD + "/demo-out", environ=JOB_ENV, cwd="/")


def test_cli_verb_job_and_config_out_all_refuse_under_a_job_and_announce_otherwise(tmp_path, monkeypatch, capsys):
    from pipelines import cli, cohort

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(outputs.JOB_ENV_VAR, JOB_ENV[outputs.JOB_ENV_VAR])
    cfg = tmp_path / "cohort.yaml"
    cfg.write_text("format: phantom\nout: rel-out\ncases: 3\nvolumes: 0\n")
    (tmp_path / "views.yaml").write_text("cases: nowhere\nout: rel-views\n")
    # a verb's --out flag, a job's out: from its config, and a --config file read by flags
    for run in (lambda: cli.main(["cohort", "phantom", "--out", "rel-out", "--cases", "3", "--volumes", "0"]),
                lambda: cohort.main(["--config", str(cfg)]),
                lambda: cli.main(["views", "build", "--config", str(tmp_path / "views.yaml")])):
        assert run() == 2
        err = capsys.readouterr().err
        assert "absolute path" in err and "s3://" in err, err
        assert not (tmp_path / "rel-out").exists() and not (tmp_path / "rel-views").exists()
    # the job's --out override (what cluster/submit.sh passes for OUT=) is accepted and announced
    assert cohort.main(["--config", str(cfg), "--out", str(tmp_path / "kept")]) == 0
    assert f"medscope: results in {tmp_path / 'kept'}" in capsys.readouterr().err
    assert (tmp_path / "kept" / "cases.parquet").exists()
    # outside a job the relative out is fine and is named as the absolute folder it became
    monkeypatch.delenv(outputs.JOB_ENV_VAR)
    assert cli.main(["cohort", "phantom", "--out", "rel-out", "--cases", "3", "--volumes", "0"]) == 0
    assert f"medscope: results in {tmp_path / 'rel-out'}" in capsys.readouterr().err
