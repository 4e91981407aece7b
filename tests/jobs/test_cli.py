"""The medscope command: verbs register, errors are one line, jobs load validated configs."""

import os

import pytest

from medscope.config import StrictModel
from medscope.errors import MedScopeError
from pipelines import cli
from pipelines.support import jobs


def test_every_verb_module_registers():
    parser = cli.build_parser()
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["--help"])
    assert exit_info.value.code == 0


def test_unknown_bench_is_one_clear_line(capsys):
    assert cli.main(["bench", "no-such-bench"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("medscope: error: no benchmark 'no-such-bench'")


def test_unexpected_error_is_one_line_without_traceback(capsys):
    def boom():
        raise FileNotFoundError("cases.parquet")

    assert jobs.guarded(boom) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["medscope: error: FileNotFoundError: cases.parquet (set MEDSCOPE_DEBUG=1 for the traceback)"]


class Cfg(StrictModel):
    name: str
    n: int = 1


def test_job_main_validates_config(tmp_path, capsys):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("name: x\nn: 3\n")
    bad.write_text("name: x\nnn: 3\n")
    seen = []
    assert jobs.job_main("t", Cfg, lambda c: seen.append(c) or {"n": c.n}, ["--config", str(good)]) == 0
    assert seen == [Cfg(name="x", n=3)]
    assert jobs.job_main("t", Cfg, lambda c: {}, ["--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml: invalid Cfg: nn: Extra inputs are not permitted" in err


def test_job_main_set_overrides_config_keys_with_yaml_values(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text("name: x\nn: 3\n")
    seen = []
    argv = ["--config", str(good), "--set", "n=24", "--set", "name=small demo"]
    assert jobs.job_main("t", Cfg, lambda c: seen.append(c) or {}, argv) == 0
    assert seen == [Cfg(name="small demo", n=24)]  # "24" read as YAML: the int the model wants
    # an unknown key is an error naming it, as in the file; a value that is not YAML, and no "="
    assert jobs.job_main("t", Cfg, lambda c: {}, ["--config", str(good), "--set", "cases=24"]) == 2
    assert "with cases set: invalid Cfg: cases: Extra inputs are not permitted" in capsys.readouterr().err
    assert jobs.job_main("t", Cfg, lambda c: {}, ["--config", str(good), "--set", "n=[1"]) == 2
    assert "--set 'n=[1': the value is not YAML" in capsys.readouterr().err
    assert jobs.job_main("t", Cfg, lambda c: {}, ["--config", str(good), "--set", "n"]) == 2
    assert "--set 'n': give KEY=VALUE" in capsys.readouterr().err


def test_guarded_passes_medscope_errors_as_one_line(capsys):
    def fail():
        raise MedScopeError("kvasir/images/1.jpg: unreadable image; re-export it as JPEG or PNG")

    assert jobs.guarded(fail) == 2
    assert capsys.readouterr().err == (
        "medscope: error: kvasir/images/1.jpg: unreadable image; re-export it as JPEG or PNG\n"
    )


def _no_ray(monkeypatch):
    """Ray starting is the event the checks must come before: it fails the test if it happens."""
    from pipelines.support import raycluster

    def started(*a, **k):
        raise AssertionError("Ray was started before the missing model was reported")

    monkeypatch.setattr(raycluster, "ensure_ray", started)


@pytest.mark.timeout(120)
def test_train_with_a_missing_base_model_stops_before_ray_in_one_line(tmp_path, monkeypatch):
    from medscope import config as cfgmod
    from pipelines import train

    _no_ray(monkeypatch)
    missing = tmp_path / "models" / "qwen2-vl-7b"
    job = train.TrainJob(recipe=cfgmod.shipped("train", "smoke.yaml"), views=str(tmp_path / "views.parquet"),
                         out=str(tmp_path / "run"), overrides={"base": str(missing)})
    with pytest.raises(MedScopeError) as err:
        train.run(job)
    message = str(err.value)
    assert "smoke.yaml" in message and str(missing) in message and "does not exist" in message
    assert "\n" not in message and not (tmp_path / "run").exists()


@pytest.mark.timeout(120)
def test_eval_with_a_missing_local_checkpoint_stops_before_ray_naming_the_model(tmp_path, monkeypatch):
    import yaml

    from medscope.testing.views import write_views
    from pipelines.eval import EvalConfig, run_sweep

    _no_ray(monkeypatch)
    views = write_views(str(tmp_path / "views.parquet"), 2)
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [
        {"name": "claims", "kind": "policy", "model": "always-claims"},  # a good entry beside it
        {"name": "mine", "kind": "local_hf", "model": str(tmp_path / "ckpt")}]}))
    with pytest.raises(MedScopeError, match=r"models.yaml: model mine: '.*ckpt' does not exist") as err:
        run_sweep(EvalConfig(items=views, models=str(models), out=str(tmp_path / "eval"), conditions=["plain"]))
    assert "claims" not in str(err.value)
    assert not (tmp_path / "eval").exists()



def test_broken_symlink_out_is_named_with_its_target(tmp_path, capsys):
    # os.makedirs on a dangling link (or one below it) raises a bare "File exists"; the user is
    # told which link, where it points, and what to do (issue 51, tenth campaign)
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    (tmp_path / "loop").symlink_to("loop")

    def makedirs(path):
        return lambda: os.makedirs(path, exist_ok=True)

    assert jobs.guarded(makedirs(str(tmp_path / "out" / "run"))) == 2
    assert capsys.readouterr().err == (
        f"medscope: error: {tmp_path / 'out'} is a dangling symlink (it points to {str(tmp_path / 'gone')!r}, "
        "which does not exist); remove the link, create its target, or give another path\n")
    assert jobs.guarded(makedirs(str(tmp_path / "loop"))) == 2
    assert capsys.readouterr().err == (
        f"medscope: error: {tmp_path / 'loop'} is a symlink loop (it points to 'loop', which leads back to "
        "itself); remove the link or give another path\n")
    # an ordinary missing file is not a link: the generic line stays
    assert jobs.guarded(lambda: open(tmp_path / "absent.txt")) == 2
    assert "FileNotFoundError" in capsys.readouterr().err
