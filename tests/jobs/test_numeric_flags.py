"""Numeric flags are checked before any cluster starts (issue 51, fourth round).

Before: ``views build --workers 0`` (or ``-3``) was not refused; 0 fell through to "all CPUs"
and -3 reached Ray. Each command names inputs that do not exist: the only way to exit 2 naming
the flag is the check of the flag itself, made before anything is read or any cluster starts
(``ray.init`` is replaced by a function that fails the test).
"""

from __future__ import annotations

import pytest

from pipelines import cli


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch):
    import ray

    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started before the flags were checked")

    monkeypatch.setattr(ray, "init", refuse)


@pytest.mark.parametrize("argv, flag", [
    (["views", "build", "--cases", "nowhere", "--out", "{out}", "--workers", "0"], "workers"),
    (["views", "build", "--cases", "nowhere", "--out", "{out}", "--workers", "-3"], "workers"),
    (["eval", "run", "--items", "nowhere", "--models", "none.yaml", "--out", "{out}", "--workers", "0"], "workers"),
    (["eval", "run", "--items", "nowhere", "--models", "none.yaml", "--out", "{out}", "--concurrency", "-1"],
     "concurrency"),
    (["train", "--recipe", "none.yaml", "--out", "{out}", "--num-workers", "0"], "num_workers"),
    (["judge-replies", "--episodes", "nowhere", "--items", "nowhere", "--models", "none.yaml", "--judge", "j",
      "--out", "{out}", "--workers", "0"], "workers"),
])
def test_bad_numeric_flag_is_one_line_before_anything_runs(tmp_path, capsys, argv, flag):
    argv = [a.replace("{out}", str(tmp_path / "out")) for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and "greater than" in err, err
    assert "nowhere" not in err and "none.yaml" not in err  # refused before any input was opened


@pytest.mark.parametrize("flag, value, limit", [("--cases", "1000000000", "10000"), ("--cases", "10001", "10000"),
                                                ("--volumes", "1001", "1000")])
def test_a_phantom_past_its_cap_is_one_line_before_anything_is_generated(tmp_path, capsys, monkeypatch, flag,
                                                                        value, limit):
    # issue 51, the eighth campaign: `cohort phantom --cases 1000000000` grew to 5 GB in a minute
    # and ran until killed; the caps (10,000 cases, 1,000 volumes) are checked before generating
    from medscope.cohorts import phantom

    def refuse(*args, **kwargs):
        raise AssertionError("the phantom was generated before its size was checked")
    monkeypatch.setattr(phantom, "generate", refuse)
    monkeypatch.setattr(phantom, "phantom_batch", refuse)
    argv = ["cohort", "phantom", "--out", str(tmp_path / "c"), "--cases", "2", "--volumes", "0"]
    argv[argv.index(flag) + 1] = value
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag.strip("-") in err and f"less than or equal to {limit}" in err, err
    assert not (tmp_path / "c").exists()
