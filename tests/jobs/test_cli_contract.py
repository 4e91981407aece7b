"""What every verb promises: flags that match its config model, the folder a previous verb
wrote accepted in place of the table, and exit code 0 on success, every time."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from pipelines import cli

from tests.conftest import REPO_ROOT
from tests.fixtures.bad_input import _err

# Verbs whose flags other engineers are converting in this round; the lead empties this set at
# merge. (eval run / score / report: their own settings come from EvalConfig / ScoreConfig /
# ReportConfig; each protocol's Options model adds its protocol flags when the command line names
# the protocol, pipelines/support/protocol_flags.py, tests/protocols/test_options.py.)
EXEMPT: set[tuple[str, ...]] = set()

# --append / --overwrite: the --out guard every writing verb shares (pipelines/support/outguard.py);
# help, config: argparse's own and the one --config FILE of every verb
_PLUMBING = {"help", "config", "append", "overwrite"}


def _subparsers(parser):
    action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    return {} if action is None else action.choices


def _leaves(parser, path=()):
    """(path, parser) of every verb and action that takes flags (``cohort import``, ``demo``)."""
    subs = _subparsers(parser)
    if not subs:
        yield path, parser
    seen = set()
    for name, sub in subs.items():
        if id(sub) not in seen:  # an action's aliases (reader analyse | analyze) once
            seen.add(id(sub))
            yield from _leaves(sub, path + (name,))


def _all_leaves():
    out = []
    for verb, module in cli.VERBS.items():
        out += [(path, leaf) for path, leaf in _leaves(_subparsers(cli.build_parser([module]))[verb], (verb,))]
    return out


LEAVES = _all_leaves()


def _model_of(path, leaf):
    model = leaf.get_default("_config_model")
    assert model is not None, f"medscope {' '.join(path)}: flags not generated from a model (pipelines/support/flags.py)"
    return model


def _dests(parser, model) -> set[str]:
    plumbing = _PLUMBING - set(model.model_fields)  # benchgen build's append is its own field
    return {a.dest for a in parser._actions if a.dest not in plumbing}


def test_the_walk_finds_every_verb_and_the_exemptions_are_real():
    paths = {p for p, _ in LEAVES}
    assert {p[0] for p in paths} == set(cli.VERBS)
    assert EXEMPT <= paths  # an exemption that names no verb is stale: drop it
    assert {("cohort", "import"), ("benchgen", "build"), ("stats", "tost"), ("rules", "apply")} <= paths


@pytest.mark.parametrize("path,leaf", [(p, lf) for p, lf in LEAVES if p not in EXEMPT],
                         ids=[" ".join(p) for p, _ in LEAVES if p not in EXEMPT])
def test_every_flag_is_a_field_of_the_verbs_model(path, leaf):
    """Each flag maps to a field, each field has a flag, and the field's description is the help."""
    import pydantic

    from medscope.errors import MedScopeError
    from pipelines.support.flags import key_of

    model = _model_of(path, leaf)
    assert _dests(leaf, model) == set(model.model_fields), f"medscope {' '.join(path)}"
    assert any(a.dest == "config" and "--config" in a.option_strings for a in leaf._actions)
    for action in leaf._actions:
        if action.dest in model.model_fields:
            field = model.model_fields[action.dest]
            assert field.description, f"{model.__name__}.{action.dest} has no description (it is the help text)"
            assert action.help.replace("%%", "%").startswith(field.description), action.dest
    # --config FILE: a YAML of the model's keys, validated by the model: one error naming the key
    parser = cli.build_parser([cli.VERBS[path[0]]])
    name, field = next(iter(model.model_fields.items()))
    wrong = "not a mapping" if "dict" in str(field.annotation) else {"not": ["this", "type"]}
    for data, key in (({"no_such_key": 1}, "no_such_key"), ({key_of(name, field): wrong}, key_of(name, field))):
        cfg = _tmp_yaml(data)
        args = parser.parse_args([*path, "--config", cfg])
        with pytest.raises(MedScopeError, match=key) as err:
            args.func(args)
        assert "\n" not in str(err.value) and isinstance(err.value, MedScopeError)
    assert issubclass(model, pydantic.BaseModel)


_TMP = []


def _tmp_yaml(data: dict) -> str:
    import tempfile

    import yaml

    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    yaml.safe_dump(data, f)
    f.close()
    _TMP.append(f.name)
    return f.name


# `python -m pipelines.<verb> --config F` (the Ray job entry) and `medscope <verb> --config F`
# take the same file: the job's model is the verb's, or (cohort) holds both actions' keys.
JOB_ENTRIES = {"pipelines.views": [("views", "build")], "pipelines.probe": [("probe", "build")],
               "pipelines.train": [("train",)], "pipelines.sweep": [("sweep",)], "pipelines.demo": [("demo",)],
               "pipelines.benchgen": [("benchgen", "build")], "pipelines.crosswalk": [("crosswalk",)],
               "pipelines.cohort": [("cohort", "import"), ("cohort", "phantom")]}


def test_each_job_entry_takes_its_verbs_config_file():
    import importlib
    import re
    from pathlib import Path

    found = {}
    for py in sorted(Path(REPO_ROOT, "pipelines").glob("*.py")):
        m = re.search(r"job_main\(\"[^\"]+\", (\w+), ", py.read_text())
        if m:
            found[f"pipelines.{py.stem}"] = getattr(importlib.import_module(f"pipelines.{py.stem}"), m.group(1))
    assert set(found) - {"pipelines.eval"} == set(JOB_ENTRIES)  # eval run: see EXEMPT
    leaves = dict(LEAVES)
    for module, paths in JOB_ENTRIES.items():
        job = found[module]
        for path in paths:
            verb_model = _model_of(path, leaves[path])
            assert verb_model is job or set(verb_model.model_fields) <= set(job.model_fields), (module, path)


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
    read = ("from medscope.io import records; t = records.read_table('cases', %r); "
            "print(t.num_rows, records.read_table('rejects', %r).num_rows)" % (out, out))
    codes = [subprocess.run([sys.executable, "-c", read], env=env, capture_output=True, text=True,
                            timeout=120).returncode for _ in range(12)]
    assert codes == [0] * 12
    shows = [subprocess.run([sys.executable, "-m", "pipelines.cli", "cohort", "show", out], env=env,
                            capture_output=True, text=True, timeout=300) for _ in range(4)]
    assert [s.returncode for s in shows] == [0] * 4
    assert json.loads(shows[0].stdout)["cases"]["n"] == 16


def test_the_verb_registry_names_the_module_that_registers_each_verb():
    """`medscope VERB` imports only VERBS[VERB]: the one registry must match what the modules register."""
    for verb, module in cli.VERBS.items():
        assert verb in _subparsers(cli.build_parser([module])), verb
    assert set(_subparsers(cli.build_parser())) == set(cli.VERBS)
    assert cli.VERB_MODULES == list(dict.fromkeys(cli.VERBS.values()))
    assert cli._verb_of(["-v", "cohort", "show", "x"]) == "cohort" and cli._verb_of(["--help"]) is None
    assert isinstance(cli.build_parser([cli.VERBS["train-select"]]), argparse.ArgumentParser)


def test_generated_flags_read_as_their_fields_say(tmp_path):
    """Repeatable, several-value, aliased, negated and positional flags, over a --config file."""
    from pipelines.support.flags import config_from_args

    parse = cli.build_parser().parse_args
    build = tmp_path / "build.yaml"
    build.write_text("reports: r.jsonl\nvolumes: vols\nschema: liver.yaml\nout: b\ngrid: 6\nmax_side: 900\n")
    cfg = config_from_args(parse(["benchgen", "build", "--config", str(build), "--max-side", "512", "--no-private",
                                  "--allow-endpoint", "http://a/v1", "--allow-endpoint", "http://b/v1",
                                  "--generator", "writer", "--no-report-questions"]))
    assert (cfg.schema_, cfg.grid, cfg.max_side, cfg.private, cfg.report_questions) == ("liver.yaml", 6, 512, False, False)
    assert (cfg.endpoint_allowlist, cfg.generator_name) == (["http://a/v1", "http://b/v1"], "writer")
    cfg = config_from_args(parse(["cohort", "remove", "--cases", "c1,c2", "--from", "f1", "f2"]))
    assert (cfg.cases, cfg.folders, cfg.reason) == ("c1,c2", ["f1", "f2"], "withdrawn consent")
    cfg = config_from_args(parse(["stats", "seeds", "--metrics", "m1", "m2", "--arm", "r=a,b", "--arm", "w=c,d"]))
    assert (cfg.metrics, cfg.arm, cfg.metric) == (["m1", "m2"], ["r=a,b", "w=c,d"], [])
    assert config_from_args(parse(["cohort", "show", "folder"])).uri == "folder"
    # a bare argument may come from the file instead; the flag then is not needed
    show = tmp_path / "show.yaml"
    show.write_text("uri: from-file\n")
    assert config_from_args(parse(["cohort", "show", "--config", str(show)])).uri == "from-file"


def test_cohort_job_files_are_the_cohort_verbs_files():
    """configs/cohort/*.yaml (python -m pipelines.cohort) read the same under cohort import / phantom."""
    from medscope import config as cfgmod
    from pipelines.cohort import CohortJobConfig
    from pipelines.support.flags import config_from_args

    for name, action in (("kvasir-import.yaml", "import"), ("phantom.yaml", "phantom")):
        uri = os.path.join(REPO_ROOT, "configs", "cohort", name)
        job = cfgmod.load(CohortJobConfig, uri)
        verb = config_from_args(cli.build_parser().parse_args(["cohort", action, "--config", uri]))
        assert {k: getattr(job, k) for k in type(verb).model_fields} == verb.model_dump()


@pytest.mark.timeout(120)
def test_sweep_json_with_bom_is_read(tmp_path):
    from pipelines.score import items_of

    (tmp_path / "episodes").mkdir()
    (tmp_path / "sweep.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"items": "items.parquet"}).encode())
    assert items_of(str(tmp_path / "episodes")) == "items.parquet"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("text", ['{"items": "it', "[1, 2, 3]"])
def test_bad_sweep_json_names_the_file(tmp_path, text):
    from pipelines.score import items_of

    (tmp_path / "episodes").mkdir()
    (tmp_path / "sweep.json").write_text(text)
    assert "sweep.json" in _err(lambda: items_of(str(tmp_path / "episodes")))


@pytest.mark.timeout(120)
def test_zero_byte_episode_part_is_named_by_score(tmp_path):
    from pipelines.score import score

    (tmp_path / "episodes").mkdir()
    (tmp_path / "episodes" / "part-k1.parquet").write_bytes(b"")
    (tmp_path / "sweep.json").write_text(json.dumps({"items": "x.parquet", "done": 1}))
    assert "part-k1.parquet" in _err(lambda: score(str(tmp_path), str(tmp_path / "scored")))


STOPS_ITS_RAY = r"""
import sys, ray
from pipelines import cli
from medscope.testing.views import write_views
out = sys.argv[1]
views = write_views(out + "/views.parquet", 4)
open(out + "/models.yaml", "w").write("models:\n  - {name: always-absent, kind: policy, model: always_absent}\n")
argv = ["eval", "run", "--items", views, "--models", out + "/models.yaml", "--conditions", "plain",
        "--protocol", "medscope.testing.protocols:SingleTurnProtocol", "--out", out + "/run"]
rc = cli.main(argv)
print(rc, ray.is_initialized())
"""


@pytest.mark.slow
def test_a_command_stops_the_ray_it_started_before_the_interpreter_exits(tmp_path):
    """Issue 55: Ray's core worker threads left to Ray's atexit hook run during interpreter teardown;
    a command that started Ray shuts it down itself (a Ray that was already up is the caller's)."""
    r = subprocess.run([sys.executable, "-c", STOPS_ITS_RAY, str(tmp_path)], env=dict(os.environ, PYTHONPATH=REPO_ROOT),
                       capture_output=True, text=True, timeout=600, cwd=REPO_ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["0", "False"], r.stdout + r.stderr


def test_a_ray_the_caller_started_is_left_up(ray_cluster, tmp_path):
    import ray

    assert cli.main(["cohort", "phantom", "--out", str(tmp_path / "c"), "--cases", "4", "--volumes", "0"]) == 0
    assert ray.is_initialized()
