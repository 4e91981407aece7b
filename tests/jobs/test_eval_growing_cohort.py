"""A growing cohort through evaluation: after a second batch, the sweep sends
requests only for the new views (resume by request key), scoring covers every view, and a
withdrawn case leaves no episode or score behind; the removal says which scored runs to redo."""

from __future__ import annotations

import json

import pytest

from medscope.io import layout, records, storage
from medscope.cohorts import phantom
from medscope.cohorts.removal import remove_cases
from medscope.models.config import ModelEntry
from medscope.protocols.counterfactual.scoring import score_run
from medscope.testing import providers as fp
from medscope.testing.protocols import SingleTurnProtocol, unit_tag
from pipelines.eval import EvalConfig, run_sweep
from pipelines.views import build_views
from tests.cohorts.test_growing import RECIPE as GROWING_RECIPE

# every case in the test split: score recomputes the main test from the views table (issue 50),
# so the views this sweep evaluates must be the main test's for "scoring covers all" to hold
RECIPE = GROWING_RECIPE.model_copy(update={"split_fractions": {"train": 0.0, "validation": 0.0, "test": 1.0}})
KEY_ENV = "MEDSCOPE_TEST_GROW_KEY"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k-grow")
    s = fp.FakeProvider("openai", responder=lambda text, images: "yes" if images else "no", expected_key="k-grow")
    yield s
    s.close()


def _sweep(views: str, out: str, server) -> dict:
    entry = ModelEntry(name="fake", kind="openai", model="fake-1", base_url=server.url, api_key_env=KEY_ENV,
                       timeout_s=5.0)
    return run_sweep(EvalConfig(views=views, models="unused.yaml", out=out, conditions=["agent"], backoff_s=0.05),
                     SingleTurnProtocol(), [entry])


@pytest.mark.slow
def test_new_views_only_are_evaluated_scoring_covers_all_and_removal_reaches_episodes_and_scores(
        ray_cluster, server, tmp_path):
    cohort, views, run, scored = (str(tmp_path / n) for n in ("cohort", "views", "eval", "scored"))
    batch1, _ = phantom.phantom_cases(8, seed=0)
    records.write_table("cases", batch1, layout.Cohort(cohort).cases)
    build_views(cohort, views, RECIPE, engine="local", quiet=True)
    first_views = set(records.read_table("views", views).column("view_id").to_pylist())
    first = _sweep(views, run, server)
    assert first["to_run"] == len(first_views)
    sent_before = len(server.requests)

    batch2 = phantom.phantom_batch(2, seed=0, batch=2, copies_of=batch1[:1])
    records.write_table("cases", batch1 + batch2, layout.Cohort(cohort).cases)
    build_views(cohort, views, RECIPE, engine="local", quiet=True)
    all_views = set(records.read_table("views", views).column("view_id").to_pylist())
    new_views = all_views - first_views
    assert first_views < all_views and new_views
    second = _sweep(views, run, server)
    assert second["to_run"] == len(new_views) and second["skipped_finished"] == len(first_views)
    sent = server.requests[sent_before:]
    assert len(sent) == len(new_views)  # nothing re-sent (nor re-billed) for earlier views
    assert all(any(unit_tag(v, "agent") in r.text for r in sent) for v in new_views)

    score_run(run, views, scored, n_boot=20)
    scores = records.read_table("scores", layout.ScoredRun(scored).scores)
    assert set(scores.column("view_id").to_pylist()) == all_views  # the rescoring covers all
    assert storage.exists(layout.ScoredRun(scored).metrics)

    gone = [batch2[0]["case_id"], batch1[1]["case_id"]]
    gone_views = {r["view_id"] for r in records.read_table("views", views, columns=["view_id", "case_id"]).to_pylist()
                  if r["case_id"] in gone}
    summary = remove_cases(gone, [cohort, views, run, scored])
    assert summary["rescore"] == [scored]
    episodes = records.read_table("episodes", layout.EvalRun(run).episodes)
    assert set(episodes.column("item_id").to_pylist()) == all_views - gone_views
    assert not set(episodes.column("case_id").to_pylist()) & set(gone)
    scores = records.read_table("scores", layout.ScoredRun(scored).scores)
    assert set(scores.column("view_id").to_pylist()) == all_views - gone_views
    assert not storage.exists(layout.ScoredRun(scored).metrics)  # held the withdrawn cases: recomputed below
    record = json.loads(storage.read_utf8(storage.join(run, layout.REMOVALS)).splitlines()[-1])
    assert record["cases"] == sorted(gone) and record["removed"]["rows"]

    # a resumed sweep after the removal sends nothing; rescoring covers exactly what is left
    before = len(server.requests)
    third = _sweep(views, run, server)
    assert third["to_run"] == 0 and len(server.requests) == before
    score_run(run, views, scored, n_boot=20)
    again = records.read_table("scores", layout.ScoredRun(scored).scores)
    assert set(again.column("view_id").to_pylist()) == all_views - gone_views
