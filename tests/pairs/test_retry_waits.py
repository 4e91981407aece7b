"""A retry asked for beside a still-pending sibling is said, not silently dropped."""

from __future__ import annotations

import yaml

from medscope import config as cfgmod
from medscope.pairs import review as rv
from medscope.pairs.embedded import embedded_spec
from medscope.pairs.generators import ProceduralGenerator
from medscope.pairs.spec import PairsSpec
from pipelines import cli
from pipelines.support.accounting import EXIT_NO_WORK


def test_retry_waiting_on_a_pending_sibling_is_named_and_exits_non_zero(tmp_path, capsys):
    spec = embedded_spec().model_dump(exclude_unset=True)  # only the options the procedural generator takes
    spec["conditions"] = spec["conditions"][:1]
    spec["candidates_per_round"] = 2
    spec = cfgmod.parse(PairsSpec, spec)
    work = str(tmp_path / "work")
    assert rv.generate_round(spec, work, ProceduralGenerator(spec.generator))["generated"] == 4
    matched = [c["id"] for c in rv.load_review(work)["candidates"] if c["photo_type"] == "matched"]
    rv.decide(work, [matched[0]], "retry", feedback="smaller mark")  # matched[1] stays pending
    again = rv.generate_round(spec, work, ProceduralGenerator(spec.generator))
    assert again["generated"] == 0
    assert again["retries_waiting_on_pending"] == [{"retry": matched[0], "pending": [matched[1]]}]
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec.model_dump(mode="json", exclude_unset=True)))
    capsys.readouterr()
    assert cli.main(["pairs", "generate", "--spec", str(spec_file), "--work", work]) == EXIT_NO_WORK
    err = capsys.readouterr().err
    assert f"retry of {matched[0]} not generated" in err and matched[1] in err and "--approve/--reject" in err
    # once the sibling is decided, the retry is generated
    rv.decide(work, [matched[1]], "reject")
    assert cli.main(["pairs", "generate", "--spec", str(spec_file), "--work", work]) == 0
