"""The medscope command: verbs register, errors are one line, jobs load validated configs."""

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


def test_guarded_passes_medscope_errors_as_one_line(capsys):
    def fail():
        raise MedScopeError("kvasir/images/1.jpg: unreadable image; re-export it as JPEG or PNG")

    assert jobs.guarded(fail) == 2
    assert capsys.readouterr().err == (
        "medscope: error: kvasir/images/1.jpg: unreadable image; re-export it as JPEG or PNG\n"
    )
