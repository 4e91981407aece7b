"""An input flag given twice is refused, never silently replaced by the last."""

from __future__ import annotations

import pytest

from pipelines import cli


@pytest.mark.parametrize("argv, flag", [
    (["score", "--episodes", "runA", "--episodes", "runB", "--out", "o"], "--episodes"),
    (["probe", "build", "--volumes", "c1", "--volumes", "c2", "--out", "o"], "--volumes"),
    (["views", "build", "--cases", "c1", "--cases", "c2", "--out", "o"], "--cases"),
])
def test_second_value_of_an_input_flag_is_an_error(argv, flag, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{flag} given twice" in err and "then" in err
    assert not (tmp_path / "o").exists()


def test_accumulating_flags_still_accumulate(tmp_path):
    args = cli.build_parser(["pipelines.report"]).parse_args(
        ["report", "--run", "a", "--run", "b", "--out", str(tmp_path / "r")])
    assert args.run == ["a", "b"]
