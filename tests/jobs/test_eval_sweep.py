"""The evaluation sweep on a real local Ray cluster against loopback provider servers."""

from __future__ import annotations

import threading
import time

import pytest

from medscope.io import records, storage
from medscope.models.config import ModelEntry
from pipelines.eval import EvalConfig, run_sweep, show
from medscope.testing import providers as fp
from medscope.testing.gate import wait_for
from medscope.testing.protocols import SingleTurnProtocol, unit_tag
from medscope.testing.views import write_views

KEY_ENV = "MEDSCOPE_TEST_OPENAI_KEY"


@pytest.fixture
def openai_server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key-openai")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes" if images else "no",
                             expected_key="test-key-openai")
    yield server
    server.close()


def entry(server, name="gpt-fake", **kw) -> ModelEntry:
    base = dict(name=name, kind=server.wire, model="fake-1", base_url=server.url, api_key_env=KEY_ENV,
                price_in_per_mtok=2.0, price_out_per_mtok=8.0, timeout_s=5.0)
    base.update(kw)
    return ModelEntry(**base)


def cfg(views, out, **kw) -> EvalConfig:
    return EvalConfig(views=views, models="unused.yaml", out=out, backoff_s=0.05, **kw)


@pytest.mark.slow
def test_sweep_writes_every_episode_to_s3_and_resumes_without_requests(ray_cluster, s3_bucket, openai_server):
    views = write_views(f"{s3_bucket}/views.parquet", 6)
    out = f"{s3_bucket}/eval"
    protocol = SingleTurnProtocol()
    # 240 rpm: one limiter shared by both workers books a request every 0.25 s. Each worker has
    # one request slot, and the provider holds the first two requests (one per worker), so every
    # later request is booked after the test releases them: the j-th to arrive after the release
    # (j = 0, 1, ...) came no sooner than j x 0.25 s after it. A busy machine only adds to that
    # bound; two limiters (one per worker), or none, would break it.
    openai_server.gate.hold(lambda method, text: True)
    config = cfg(views, out, conditions=["agent", "blind"], workers=2, concurrency=1)
    summary: dict = {}
    # the held requests wait as long as the test takes to see both: a client timeout must not end them
    limited = entry(openai_server, rpm=240, timeout_s=300.0)
    sweeper = threading.Thread(target=lambda: summary.update(run_sweep(config, protocol, [limited])))
    sweeper.start()
    try:
        wait_for(lambda: len(openai_server.gate.held()) == 2, "both workers' first request held at the provider")
        released = time.monotonic()
    finally:
        openai_server.gate.release()
        sweeper.join(timeout=300)
    assert summary["done"] == 12 and summary["to_run"] == 12
    after = sorted(r.t - released for r in openai_server.requests if r.t > released)
    assert len(after) == 10
    assert all(t >= j * 0.25 - 0.01 for j, t in enumerate(after)), after  # 0.01 s: two clocks' rounding
    table = records.read_table("episodes", f"{out}/episodes")
    # latency runs from the request sent to its reply: a request the provider held until the
    # release waited at least from its arrival to the release; the limiter's wait is apart
    latency = {(r["item_id"], r["condition"]): r["latency_s"] for r in table.to_pylist()}
    held = [r for r in openai_server.requests if r.t <= released]
    assert len(held) == 2
    for r in held:
        (unit,) = [u for u in latency if unit_tag(*u) in r.text]
        assert latency[unit] >= released - r.t - 0.01, (unit, latency[unit], released - r.t)
    assert all(q is not None and q >= 0.0 for q in table.column("queued_s").to_pylist())
    assert table.num_rows == 12
    assert len(set(table.column("request_key").to_pylist())) == 12
    # One request per unit, each carrying its own tag.
    for i in range(6):
        for cond in ("agent", "blind"):
            assert openai_server.count(unit_tag(f"v{i:03d}", cond)) == 1
    rows = table.to_pylist()
    by_cond = {c: [r for r in rows if r["condition"] == c] for c in ("agent", "blind")}
    # The responder says yes only when an image arrived: blind episodes got no image.
    assert all(r["answer"] == "yes" for r in by_cond["agent"])
    assert all(r["answer"] == "no" for r in by_cond["blind"])
    # Cost from the price table and the server's token counts, worked out independently.
    for r in rows:
        user_text = [req for req in openai_server.requests if unit_tag(r["item_id"], r["condition"]) in req.text][0]
        tin, tout = fp.tokens_in(user_text.text, user_text.images), fp.tokens_out(r["raw_text"])
        assert (r["input_tokens"], r["output_tokens"]) == (tin, tout)
        assert r["cost_usd"] == pytest.approx((tin * 2.0 + tout * 8.0) / 1e6)
        assert r["attempts"] == 1 and r["error"] is None
    assert summary["spent_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows), abs=1e-6)

    before = len(openai_server.requests)
    again = run_sweep(cfg(views, out, conditions=["agent", "blind"]), protocol, [entry(openai_server)])
    assert again["to_run"] == 0 and again["skipped_finished"] == 12
    assert len(openai_server.requests) == before  # a resumed sweep sends nothing for finished keys
    assert records.read_table("episodes", f"{out}/episodes").num_rows == 12

    shown = {r["condition"]: r for r in show(out)}
    assert shown["agent"]["episodes"] == 6 and shown["blind"]["episodes"] == 6
    assert shown["agent"]["unparseable_rate"] == 0.0 and shown["agent"]["errors"] == 0
    assert shown["agent"]["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in by_cond["agent"]), abs=1e-6)
    assert storage.exists(f"{out}/sweep.json")


def test_request_key_is_stable_and_changes_with_every_component():
    from medscope.protocols.base import Item
    from medscope.models.config import ProviderSettings
    from pipelines.eval import request_key

    item = Item("v1", "c1", "Is there a nodule?", "present")
    base = ModelEntry(name="m", kind="openai", model="x", base_url="http://h/v1", api_key_env="K")
    key = request_key(SingleTurnProtocol(), item, base, "agent")
    assert key == request_key(SingleTurnProtocol(), Item("v1", "c1", "other text", "absent"), base, "agent")
    variants = [
        request_key(SingleTurnProtocol(SingleTurnProtocol.Options(prompt_version="st-2")), item, base, "agent"),  # prompt version
        request_key(SingleTurnProtocol(), Item("v2", "c1", "q", "present"), base, "agent"),  # item
        request_key(SingleTurnProtocol(), item, base.model_copy(update={"name": "m2"}), "agent"),  # model
        request_key(SingleTurnProtocol(), item, base.model_copy(update={"model": "y"}), "agent"),  # model id
        request_key(SingleTurnProtocol(), item, base, "plain"),  # condition
        request_key(SingleTurnProtocol(), item, base.model_copy(update={"temperature": 0.0}), "agent"),
        request_key(SingleTurnProtocol(), item, base.model_copy(update={"max_output_tokens": 100}), "agent"),
        request_key(SingleTurnProtocol(), item, base.model_copy(
            update={"settings": ProviderSettings(image_detail="high")}), "agent"),  # provider setting
    ]
    assert len({key, *variants}) == len(variants) + 1


def test_shipped_model_configs_parse_and_name_env_variables():
    import glob

    from medscope import config
    from medscope.models.config import ModelsConfig

    files = sorted(glob.glob("configs/models/*.yaml"))
    assert len(files) >= 3
    for f in files:
        for m in config.load(ModelsConfig, f).models:
            if m.kind in ("openai", "anthropic", "gemini"):
                assert m.api_key_env and m.api_key_env.isupper() and m.base_url


def test_sweep_rejects_unknown_conditions_and_duplicate_items(tmp_path):
    from medscope.errors import MedScopeError

    views = write_views(str(tmp_path / "views.parquet"), 2)
    model = ModelEntry(name="m", kind="openai", model="x", base_url="http://127.0.0.1:9/v1", api_key_env="K")
    with pytest.raises(MedScopeError, match="no condition"):
        run_sweep(cfg(views, str(tmp_path / "o"), conditions=["telepathy"]), SingleTurnProtocol(), [model])

    class Twice(SingleTurnProtocol):
        def load_items(self, uri, ids=None, images=True):
            return super().load_items(uri, ids, images) * 2

    with pytest.raises(MedScopeError, match="unique"):
        run_sweep(cfg(views, str(tmp_path / "o")), Twice(), [model])
