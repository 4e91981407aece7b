"""``medscope agent``: prompt rendering, a few episodes on a views table, the tiny VLM writer."""

import pytest

from medscope.io import records
from medscope.protocols.counterfactual import prompts
from medscope.protocols.counterfactual.prompts import few_shot_images
from medscope.images import encode_png
from pipelines import cli


def _views(tmp_path):
    ims = few_shot_images(7)
    base = dict(case_id="c1", tool="telea", edit_mask=None, source="phantom", imaging_type="ct",
                finding="lesion", question="Is there a lesion?", question_kind="presence", critical=False,
                lesion_area_frac=0.02, lesion_bbox=[150, 80, 195, 125], width=256, height=256,
                recipe_hash="r", private=False, endpoint_allowlist=[], passed=True)
    rows = [
        dict(base, view_id="o", kind="original", expected="present", image=encode_png(ims["lesion"])),
        dict(base, view_id="t", kind="target_removal", expected="absent", image=encode_png(ims["erased"])),
        dict(base, view_id="r", kind="random_removal", expected="present", image=encode_png(ims["edited_elsewhere"])),
    ]
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", rows, uri)
    return uri


def test_prompt_verb_prints_the_condition(capsys):
    assert cli.main(["agent", "prompt", "--condition", "cautious"]) == 0
    out = capsys.readouterr().out
    assert prompts.PROMPT_VERSION in out
    assert prompts.load_templates().cautious_warning in out and "[image]" in out


def test_try_verb_runs_the_classical_reader(tmp_path, capsys):
    uri = _views(tmp_path)
    assert cli.main(["agent", "try", "--views", uri, "--model", "classical"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    got = {line.split("\t")[0]: line.split("\t")[4] for line in lines}
    assert got == {"o": "claims=True", "t": "claims=False", "r": "claims=True"}


def test_try_verb_bad_model_is_one_line_error(tmp_path, capsys):
    uri = _views(tmp_path)
    assert cli.main(["agent", "try", "--views", uri, "--model", "oracle"]) == 2
    err = capsys.readouterr().err
    assert "oracle" in err and len(err.strip().splitlines()) == 1


def test_tiny_vlm_verb_writes_a_checkpoint(tmp_path):
    assert cli.main(["agent", "tiny-vlm", "--out", str(tmp_path / "tiny")]) == 0
    assert (tmp_path / "tiny" / "config.json").exists() and (tmp_path / "tiny" / "tokenizer.json").exists()


@pytest.mark.parametrize("arch,model_type", [("qwen2.5-vl", "qwen2_5_vl"), ("gemma3", "gemma3")])
def test_tiny_vlm_verb_writes_each_architecture(tmp_path, arch, model_type):
    import json

    from medscope.models.tiny_vlm import ARCHS

    assert arch in ARCHS
    assert cli.main(["agent", "tiny-vlm", "--arch", arch, "--out", str(tmp_path / arch)]) == 0
    assert json.loads((tmp_path / arch / "config.json").read_text())["model_type"] == model_type


def test_unknown_condition_is_one_line_error(capsys):
    assert cli.main(["agent", "prompt", "--condition", "sideways"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown condition 'sideways'" in err and len(err.splitlines()) == 1
