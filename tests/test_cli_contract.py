"""What every verb promises: flags that match its config model, the folder a previous verb
wrote accepted in place of the table, and exit code 0 on success, every time."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipelines import cli
from tests.conftest import REPO_ROOT

# --append / --overwrite: the --out guard every writing verb shares (pipelines/support/outguard.py)
_PLUMBING = {"help", "config", "func", "verb", "verbose", "_config_model", "_config_skip", "append", "overwrite"}


def _subparser(parser, *path):
    for name in path:
        action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = action.choices[name]
    return parser


def _dests(parser) -> set[str]:
    return {a.dest for a in parser._actions if a.dest not in _PLUMBING and not a.dest.endswith("_verb")
            and a.dest not in ("views_cmd", "cohort_verb", "eval_verb")}


def _models():
    from pipelines.demo import DemoConfig
    from pipelines.eval import EvalConfig
    from pipelines.sweep import SweepJob
    from pipelines.train import TrainJob
    from pipelines.views import BuildViewsConfig
    from medscope.volumes.config import ProbeConfig

    return [(("views", "build"), BuildViewsConfig, set()), (("eval", "run"), EvalConfig, set()),
            (("probe", "build"), ProbeConfig, set()), (("sweep",), SweepJob, set()), (("demo",), DemoConfig, set()),
            (("train",), TrainJob, {"seed", "init_adapter", "eval_views"})]


@pytest.mark.parametrize("path,model,shorthands", _models(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_flags_are_the_config_models_fields(path, model, shorthands):
    sub = _subparser(cli.build_parser(), *path)
    assert _dests(sub) == set(model.model_fields) | shorthands
    # --config F then flags: the flags win, the file fills the rest, and the model validates
    assert any(a.dest == "config" for a in sub._actions)


def test_cohort_import_flags_name_fields_of_its_job_config():
    from pipelines.cohort import CohortJobConfig

    sub = _subparser(cli.build_parser(), "cohort", "import")
    renamed = {"config": "dataset_config"}
    fields = {renamed.get(a.dest, a.dest) for a in sub._actions if a.dest not in ("help", "func", "append", "overwrite")}
    assert fields <= set(CohortJobConfig.model_fields)


def test_flags_override_the_config_file(tmp_path):
    from pipelines.support.flags import config_from_args

    cfg = tmp_path / "eval.yaml"
    cfg.write_text("views: a.parquet\nmodels: m.yaml\nout: o\nconditions: [agent]\nworkers: 3\n")
    args = cli.build_parser().parse_args(["eval", "run", "--config", str(cfg), "--conditions", "agent,blind",
                                          "--protocol-options", "{max_turns: 2}"])
    got = config_from_args(args)
    assert (got.items, got.workers, got.conditions, got.protocol_options) == ("a.parquet", 3, ["agent", "blind"],
                                                                              {"max_turns": 2})
    # the file names the items by the field's other name (views:); the flag still wins
    args = cli.build_parser().parse_args(["eval", "run", "--config", str(cfg), "--items", "b.parquet"])
    assert config_from_args(args).items == "b.parquet"
    args = cli.build_parser().parse_args(["eval", "run", "--items", "a", "--models", "m", "--out", "o", "--workers", "x"])
    with pytest.raises(Exception, match="workers"):
        config_from_args(args)


@pytest.mark.slow
def test_verbs_that_read_tables_exit_0_every_time(tmp_path):
    """pyarrow 26.0.1 aborted at interpreter exit (134) after threaded reads of in-memory buffers
    in a share of runs; every read now goes through records.read_parquet (no thread pool)."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    out = str(tmp_path / "cohort")
    r = subprocess.run([sys.executable, "-m", "pipelines.cli", "cohort", "phantom", "--out", out, "--cases", "16",
                        "--volumes", "0"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    read = ("from medscope import records; t = records.read_table('cases', %r); "
            "print(t.num_rows, records.read_table('rejects', %r).num_rows)" % (out, out))
    codes = [subprocess.run([sys.executable, "-c", read], env=env, capture_output=True, text=True,
                            timeout=120).returncode for _ in range(12)]
    assert codes == [0] * 12
    shows = [subprocess.run([sys.executable, "-m", "pipelines.cli", "cohort", "show", out], env=env,
                            capture_output=True, text=True, timeout=300) for _ in range(4)]
    assert [s.returncode for s in shows] == [0] * 4
    assert json.loads(shows[0].stdout)["cases"]["n"] == 16


def test_the_verb_table_names_the_module_that_registers_each_verb():
    """`medscope VERB` imports only VERBS[VERB]: the table must match what the modules register."""
    import argparse

    for verb, module in cli.VERBS.items():
        assert verb in _choices(cli.build_parser([module])), verb
    assert set(_choices(cli.build_parser())) == set(cli.VERBS)
    assert cli._verb_of(["-v", "cohort", "show", "x"]) == "cohort" and cli._verb_of(["--help"]) is None
    assert isinstance(cli.build_parser([cli.VERBS["train-select"]]), argparse.ArgumentParser)


def _choices(parser) -> list[str]:
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return list(action.choices)
