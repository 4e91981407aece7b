"""``eval show`` on a run that wrote no episode but rejects (every unit failed or was refused):
the failed units by model and reason, with an example error, instead of "no episodes"."""

from __future__ import annotations

from medscope.io import records
from pipelines.eval import failed_units
from tests.jobs.test_eval_privacy_budget import cli_main


def _reject(run, model, item, status, detail):
    # the rows run_sweep writes for a unit that failed (medscope.io.records.reject_row)
    records.write_part("rejects", [records.reject_row("episodes", model, item, "eval", status, detail)],
                       f"{run}/rejects", f"{model}-{item}-{status}")


def test_eval_show_says_the_failed_units_by_reason_when_no_episode_was_written(tmp_path, capsys):
    run = str(tmp_path / "eval")
    for i in range(3):
        _reject(run, "down", f"v{i}", "retry_later", "APIConnectionError: Connection error to http://u:pw@h:1/v1.")
    _reject(run, "keyless", "v0", "failed", "MedScopeError: model keyless: environment variable K is not set")
    _reject(run, "cloud", "v0", "private_endpoint_not_allowed", "model=cloud condition=plain endpoint not on the item's allow-list")
    assert [(r["model"], r["reason"], r["units"]) for r in failed_units(run)] == [
        ("down", "retry_later: APIConnectionError", 3), ("cloud", "private_endpoint_not_allowed", 1),
        ("keyless", "failed: MedScopeError", 1)]
    assert cli_main(["eval", "show", run]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"no episodes under {run}: 5 unit(s) failed or were refused, none done"
    assert out[1] == "  down: 3 retry_later: APIConnectionError (e.g. APIConnectionError: Connection error to http://***@h:1/v1.)"
    assert out[3] == "  keyless: 1 failed: MedScopeError (e.g. MedScopeError: model keyless: environment variable K is not set)"
    assert "pw" not in "\n".join(out)
    # the same from the episodes folder's path
    assert [r["units"] for r in failed_units(run + "/episodes")] == [3, 1, 1]
