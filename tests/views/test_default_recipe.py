"""``views build`` without ``--recipe``: the paper's training recipe (LaMa + transplant) where LaMa's weights
are at hand, else its offline stand-in (transplant + graft); never Telea, a held-out tool (§5.4)."""

from __future__ import annotations

import json

from medscope.views.recipe import check_heldout, default_recipe, load_recipe
from pipelines import cli


def test_without_lama_weights_the_offline_stand_in(monkeypatch, tmp_path):
    monkeypatch.delenv("LAMA_MODEL", raising=False)
    uri, why = default_recipe()
    recipe = load_recipe(uri)
    assert uri.endswith("offline.yaml") and recipe.name == "offline"
    assert recipe.tools == ["transplant", "graft"] and "telea" not in recipe.all_tools()
    assert {recipe.control_tool_for("graft"), recipe.control_tool_for("transplant")} == {"transplant", "graft"}
    assert "LAMA_MODEL is not set" in why and "configs/views/training.yaml" in why
    # the held-out recipe shares no tool with it
    check_heldout(load_recipe("configs/views/heldout_tools.yaml").all_tools(), recipe.all_tools())
    # a LAMA_MODEL that names no file is said so, and the stand-in is used
    uri, why = default_recipe(str(tmp_path / "big-lama.pt"))
    assert uri.endswith("offline.yaml") and "is not a file" in why


def test_with_lama_weights_the_papers_training_recipe(tmp_path, monkeypatch):
    weights = tmp_path / "big-lama.pt"
    weights.write_bytes(b"torchscript")
    monkeypatch.setenv("LAMA_MODEL", str(weights))
    uri, why = default_recipe()
    recipe = load_recipe(uri)
    assert uri.endswith("training.yaml") and recipe.tools == ["lama", "transplant"]
    assert str(weights) in why


def test_the_build_says_which_recipe_it_used(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("LAMA_MODEL", raising=False)
    assert cli.main(["cohort", "phantom", "--out", str(tmp_path / "c"), "--cases", "6", "--volumes", "0"]) == 0
    assert cli.main(["views", "build", "--cases", str(tmp_path / "c"), "--out", str(tmp_path / "v"),
                     "--engine", "local"]) == 0
    assert "views build: no --recipe: configs/views/offline.yaml" in capsys.readouterr().err
    recorded = json.loads((tmp_path / "v" / "recipe.json").read_text())["recipe"]
    assert recorded["name"] == "offline" and recorded["tools"] == ["transplant", "graft"]


def test_an_unknown_tools_value_is_named_as_the_flags_not_the_recipes(tmp_path, capsys):
    # issue 51 (seventh campaign): `--tools crayon` was reported as "configs/views/demo.yaml: invalid
    # Recipe: tools.0: ..." -- the recipe file blamed, the bad value never named
    import pytest
    from medscope.errors import MedScopeError
    with pytest.raises(MedScopeError) as err:
        load_recipe("configs/views/demo.yaml", ["transplant", "crayon"])
    assert str(err.value).startswith("--tools crayon: unknown erasure tool(s) (one of: telea, ns, ")
    assert "demo.yaml" not in str(err.value)
    assert load_recipe("configs/views/demo.yaml", ["telea"]).tools == ["telea"]  # a known tool still overrides
    assert cli.main(["views", "build", "--cases", str(tmp_path / "absent"), "--out", str(tmp_path / "v"),
                     "--recipe", "configs/views/demo.yaml", "--tools", "crayon", "--engine", "local"]) == 2
    assert "medscope: error: --tools crayon: unknown erasure tool(s)" in capsys.readouterr().err


def test_recipes_held_out_from_each_other_are_one_named_error(tmp_path, monkeypatch):
    # a held out from b, b held out from a: one line naming the chain, not Python's recursion limit
    import pytest
    from medscope.errors import MedScopeError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("name: a\ntools: [telea]\nheldout_from: b.yaml\n")
    (tmp_path / "b.yaml").write_text("name: b\ntools: [transplant]\nheldout_from: a.yaml\n")
    with pytest.raises(MedScopeError) as err:
        load_recipe(str(tmp_path / "a.yaml"))
    msg = str(err.value)
    assert "cycle" in msg and f"{tmp_path / 'a.yaml'} -> b.yaml -> a.yaml" in msg
    (tmp_path / "c.yaml").write_text("name: c\ntools: [telea]\nheldout_from: c.yaml\n")  # names itself
    with pytest.raises(MedScopeError, match="cycle"):
        load_recipe("c.yaml")
    (tmp_path / "b.yaml").write_text("name: b\ntools: [transplant]\n")  # the chain ends: a loads
    assert load_recipe(str(tmp_path / "a.yaml")).heldout_from == "b.yaml"
