"""Each protocol's one typed Options model: the verbs generate their flags from it,
validate it with errors naming the key, and an option set at one verb is never given again at
another (docs/evaluation.md, "Protocol options")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from medscope import protocols
from medscope.io import records
from medscope.errors import MedScopeError
from medscope.images import encode_png
from medscope.protocols.base import VERBS, ProtocolOptions, option, verb_of
from pipelines import cli

REPO = Path(__file__).resolve().parents[2]

# one option of each protocol given a value of the wrong type (hand-picked from its model)
WRONG_TYPE = {
    "counterfactual": ("max_turns", "many"),
    "organ_presence": ("probe_config", {"formats": ["telepathy"]}),
    "benchmark_mcq": ("n_boot_tests", "lots"),
    "paired_modality": ("judge_workers", "four"),
    "standard_vqa": ("sample", {"slake": "all of them"}),
    "edit_rating": ("splits", 3),
}


def test_every_shipped_protocol_has_a_typed_options_model():
    assert set(WRONG_TYPE) == set(protocols.names())
    for name in protocols.names():
        model = protocols.options_class(protocols.protocol_class(name))
        assert issubclass(model, ProtocolOptions)
        assert all(verb_of(f) in VERBS for f in model.model_fields.values()), name
        assert isinstance(protocols.load(name).options, model)


@pytest.mark.parametrize("name", sorted(WRONG_TYPE))
def test_unknown_key_and_wrong_type_are_one_error_naming_the_key(name):
    with pytest.raises(MedScopeError) as err:
        protocols.load(name, {"tset": "main"})
    msg = str(err.value)
    assert msg.startswith(f"protocol option 'tset': unknown key for {name}; known: ") and "n_boot" in msg
    key, value = WRONG_TYPE[name]
    with pytest.raises(MedScopeError) as err:
        protocols.load(name, {key: value})
    assert str(err.value).startswith(f"protocol option '{key}") and f" of {name}: " in str(err.value)
    assert str(err.value).count("protocol option") == 1  # one error, not one per union member


def test_an_option_without_its_verb_is_refused_when_the_model_is_written():
    with pytest.raises(TypeError, match=r"declare \['judge'\] with medscope.protocols.base.option"):
        class Loose(ProtocolOptions):
            judge: str = "rule"
    with pytest.raises(ValueError, match="option verb must be one of"):
        option(1, verb="train", description="x")


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main(argv + ["--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(--[a-z][a-z0-9-]+)", text))


@pytest.mark.parametrize("name", sorted(WRONG_TYPE))
def test_each_protocols_flags_are_on_eval_run_and_score_help(name, capsys):
    model = protocols.options_class(protocols.protocol_class(name))
    flag = lambda f: "--" + f.replace("_", "-")  # noqa: E731
    eval_help = _flags(_help(["eval", "run", "--protocol", name], capsys))
    assert {flag(f) for f in model.fields_at("eval")} <= eval_help
    assert not {flag(f) for f in model.fields_at("score")} & eval_help  # score's are not eval's
    score_help = _flags(_help(["score", "--protocol", name], capsys))
    assert {flag(f) for f in model.fields_at("score")} <= score_help
    assert not {flag(f) for f in model.fields_at("eval")} & score_help
    report_help = _flags(_help(["report"], capsys))  # no run named yet: every shipped protocol's
    assert {flag(f) for f in model.fields_at("report")} <= report_help


def test_options_of_another_verb_or_protocol_are_refused_with_the_reason(tmp_path):
    with pytest.raises(MedScopeError, match="'cost_matrix' of counterfactual is set at score, not at eval$"):
        cli_main(["eval", "run", "--items", "v", "--models", "m", "--out", str(tmp_path / "o"),
                  "--cost-matrix", "table2"])
    with pytest.raises(MedScopeError, match="--test-set is an option of protocol .*, which this command is not about"):
        cli_main(["eval", "run", "--protocol", "organ_presence", "--items", "v", "--models", "m",
                  "--out", str(tmp_path / "o"), "--test-set", "main"])
    with pytest.raises(MedScopeError, match="'gallery_cases' of counterfactual is set at report, not at score$"):
        cli_main(["score", "--protocol", "counterfactual", "--episodes", "e", "--out", str(tmp_path / "s"),
                  "--gallery-cases", "2"])
    with pytest.raises(MedScopeError, match="protocol option 'tset': unknown key for counterfactual"):
        cli_main(["eval", "run", "--items", "v", "--models", "m", "--out", str(tmp_path / "o"),
                  "--protocol-options", "{tset: main}"])


def cli_main(argv):
    """The verb's function itself (cli.main turns a MedScopeError into exit code 2 and one line)."""
    args = cli.build_parser().parse_args(argv)
    return args.func(args)


def test_no_signature_inspection_in_the_sweep():
    text = (REPO / "pipelines" / "eval.py").read_text()
    assert "inspect" not in text and "signature" not in text


def _views(path: Path) -> str:
    from medscope.testing import synthetic_runs as synthetic

    png = encode_png(__import__("numpy").full((32, 32, 3), 90, dtype="uint8"))
    kinds = ("original", "target_removal", "random_removal", "natural_negative", "degraded")
    table = synthetic.views(3, 2, 1, seed=5, width=32, height=32, images={k: png for k in kinds})
    uri = str(path / "views.parquet")
    records.write_table("views", table, uri)
    return uri


@pytest.mark.slow
def test_eval_options_go_through_sweep_json_to_score_and_report(ray_cluster, tmp_path, capsys):
    """eval run --test-set/--splits/--max-turns -> sweep.json -> score (which may not take them
    again) -> run.json -> report; the scores carry the eval run's test set."""
    views = _views(tmp_path)
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - {name: always-present, kind: policy, model: always_present}\n")
    ev, scored = str(tmp_path / "eval"), str(tmp_path / "scored")
    assert cli.main(["eval", "run", "--items", views, "--models", str(models), "--out", ev, "--conditions", "agent",
                     "--workers", "1", "--test-set", "fresh_external", "--splits", "test", "--max-turns", "2",
                     "--protocol-options", "{max_turns: 4, resize_long_side: 64}"]) == 0
    sweep = json.loads((Path(ev) / "sweep.json").read_text())
    recorded = sweep["protocol_options"]
    # the flag wins over the same key of --protocol-options; every eval option is recorded, typed
    assert (recorded["test_set"], recorded["splits"], recorded["max_turns"], recorded["resize_long_side"]) == \
        ("fresh_external", ["test"], 2, 64)
    assert set(recorded) == set(protocols.options_class(protocols.protocol_class("counterfactual")).fields_at("eval"))
    assert sweep["protocol_spec"] == "counterfactual"
    capsys.readouterr()
    assert cli.main(["score", "--episodes", ev, "--out", scored, "--n-boot", "20", "--test-set", "main"]) == 2
    assert "fixed by the eval run" in capsys.readouterr().err
    assert cli.main(["score", "--episodes", ev, "--out", scored, "--n-boot", "20", "--cost-matrix", "table2"]) == 0
    run = json.loads((Path(scored) / "run.json").read_text())
    assert run["protocol_options"]["test_set"] == "fresh_external" and run["protocol_options"]["n_boot"] == 20
    assert run["test_set"] == "fresh_external"
    scores = records.read_table("scores", str(Path(scored) / "scores.parquet")).column("test_set").to_pylist()
    assert scores and set(scores) == {"fresh_external"}
    assert cli.main(["report", "--run", scored, "--out", str(tmp_path / "rep"), "--gallery-cases", "0"]) == 0
    assert "fresh_external" in (tmp_path / "rep" / "report.md").read_text()


def test_an_unknown_protocol_or_unreadable_run_is_one_line_not_a_traceback(tmp_path, capsys):
    assert cli.main(["eval", "run", "--protocol", "nosuch", "--items", "v", "--models", "m",
                     "--out", str(tmp_path / "o")]) == 2
    assert "unknown protocol 'nosuch'" in capsys.readouterr().err
    assert cli.main(["score", "--episodes", str(tmp_path / "missing"), "--out", str(tmp_path / "s")]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(WRONG_TYPE))
def test_n_boot_past_the_cap_is_refused_naming_it(name):
    # issue 51: --n-boot 1000000000000 reached numpy and ended in a 14.6 TiB MemoryError
    with pytest.raises(MedScopeError) as err:
        protocols.load(name, {"n_boot": 10**12})
    assert str(err.value).startswith(f"protocol option 'n_boot' of {name}: Input should be less than or equal "
                                     "to 100000")
    assert protocols.load(name, {"n_boot": 100_000}).options.n_boot == 100_000


@pytest.mark.parametrize("name", sorted(WRONG_TYPE))
def test_a_negative_seed_is_refused_naming_it(name):
    # issue 51, the eighth campaign: `score --seed -1` reached numpy and ended in a bare
    # "ValueError: expected non-negative integer" that named no option
    with pytest.raises(MedScopeError) as err:
        protocols.load(name, {"seed": -1})
    assert str(err.value).startswith(f"protocol option 'seed' of {name}: Input should be greater than or equal to 0")
    assert protocols.load(name, {"seed": 0}).options.seed == 0
