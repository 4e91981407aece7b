"""Each provider adapter against a real loopback server speaking its wire format."""

from __future__ import annotations

import numpy as np
import pytest

from medscope.images import encode_png
from medscope.models.base import Decoding, Message, Part, PermanentModelError, TransientModelError
from medscope.models.config import ModelEntry, ProviderSettings
from medscope.models.guarded import GuardedModel
from medscope.models.ratelimit import RateBucket
from medscope.models.registry import build_model
from medscope.errors import MedScopeError
from medscope.testing import providers as fp

KEY = "adapter-test-key"
PNG = encode_png(np.arange(64, dtype=np.uint8).reshape(8, 8))


@pytest.fixture(params=fp.WIRES)
def server(request, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_ADAPTER_KEY", KEY)
    srv = fp.FakeProvider(request.param, responder=lambda text, images: f"yes, {images} image(s)", expected_key=KEY)
    yield srv
    srv.close()


def model_for(srv, **kw):
    base = dict(name="m", kind=srv.wire, model="fake-model", base_url=srv.url, api_key_env="MEDSCOPE_ADAPTER_KEY",
                timeout_s=10.0)  # ample for a loopback answer on a busy machine
    base.update(kw)
    return build_model(ModelEntry(**base))


def two_image_messages():
    return [Message.text("system", "You read images."),
            Message("user", (Part(png=PNG), Part(png=PNG), Part(text="Compare the two images.")))]


def test_several_images_in_one_request_and_usage(server):
    model = model_for(server)
    c = model.complete(two_image_messages(), Decoding(max_output_tokens=64))
    req = server.requests[-1]
    assert req.images == 2  # both PNGs arrived, decodable, in one request
    assert "You read images." in req.text and "Compare the two images." in req.text
    assert c.text == "yes, 2 image(s)"
    assert (c.input_tokens, c.output_tokens) == (fp.tokens_in(req.text, 2), fp.tokens_out(c.text))
    assert not c.refusal


def test_provider_settings_reach_the_wire(server):
    settings = ProviderSettings(image_detail="high", reasoning_effort="high", thinking_budget=1024,
                                max_output_tokens_multi_image=12000)
    model = model_for(server, settings=settings, temperature=0.0)
    model.complete(two_image_messages(), Decoding(max_output_tokens=6000))
    body = server.requests[-1].body
    if server.wire == "openai":
        assert body["max_completion_tokens"] == 12000  # the multi-image cap (paired-modality paper App. A)
        assert body["reasoning_effort"] == "high" and body["temperature"] == 0.0
        details = [p["image_url"]["detail"] for p in body["messages"][1]["content"] if p["type"] == "image_url"]
        assert details == ["high", "high"]
    elif server.wire == "anthropic":
        assert body["max_tokens"] == 12000 and body["system"] == "You read images."
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    else:
        cfg = body["generationConfig"]
        thinking = cfg["thinkingConfig"]
        assert cfg["maxOutputTokens"] == 12000
        assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 1024  # SDK versions differ
    # One image: the ordinary cap; provider-default sampling sends no temperature.
    model_for(server).complete([Message("user", (Part(png=PNG), Part(text="one")))], Decoding(max_output_tokens=6000))
    body = server.requests[-1].body
    cap = {"openai": lambda b: b["max_completion_tokens"], "anthropic": lambda b: b["max_tokens"],
           "gemini": lambda b: b["generationConfig"]["maxOutputTokens"]}[server.wire](body)
    assert cap == 6000
    assert "temperature" not in body and "temperature" not in body.get("generationConfig", {})


# DEEP: a body nested too deep to parse was a permanent failure, never sent again (tenth campaign)
TRANSIENT = [fp.status(429, retry_after=0.2), fp.status(429), fp.status(500), fp.status(503), fp.HANG,
             fp.RESET, fp.TRUNCATED, fp.NONJSON, fp.DEEP]
HANG_TIMEOUT_S = 3.0  # the client's timeout that ends a hanging request (the fault waits for it)


@pytest.mark.slow
@pytest.mark.parametrize("fault", TRANSIENT, ids=lambda a: f"{a.kind}{a.status if a.kind == 'status' else ''}"
                         f"{'+ra' if a.retry_after else ''}")
def test_transient_faults_are_retried_once_then_answered(server, fault):
    server.push(fault)
    waits = []
    model = model_for(server, **({"timeout_s": HANG_TIMEOUT_S} if fault is fp.HANG else {}))
    guarded = GuardedModel(model, max_attempts=3, backoff_s=0.01, sleep=waits.append)
    c = guarded.complete(two_image_messages(), Decoding())
    assert c.text == "yes, 2 image(s)"
    assert len(server.requests) == 2 and guarded.attempts == 2
    if fault.retry_after:
        assert waits[0] >= fault.retry_after  # never sooner than the provider asked
    else:
        assert waits[0] <= 0.02  # jittered backoff from a 0.01 s base, first retry


@pytest.mark.parametrize("code", [400, 401, 404])
def test_other_4xx_are_permanent_and_not_retried(server, code):
    server.push(fp.status(code))
    guarded = GuardedModel(model_for(server), max_attempts=5, backoff_s=0.01, sleep=lambda s: None)
    with pytest.raises(PermanentModelError, match=f"HTTP {code}"):
        guarded.complete(two_image_messages(), Decoding())
    assert len(server.requests) == 1


def test_empty_completion_and_refusal_are_answers_not_retries(server):
    server.push(fp.EMPTY, fp.REFUSAL)
    model = model_for(server)
    empty = model.complete(two_image_messages(), Decoding())
    refused = model.complete(two_image_messages(), Decoding())
    assert empty.text == "" and not empty.refusal
    assert refused.refusal
    assert len(server.requests) == 2


def test_retries_give_up_after_max_attempts(server):
    server.push(*[fp.status(503)] * 3)
    guarded = GuardedModel(model_for(server), max_attempts=3, backoff_s=0.01, sleep=lambda s: None)
    with pytest.raises(TransientModelError):
        guarded.complete(two_image_messages(), Decoding())
    assert len(server.requests) == 3


def test_key_echoed_by_server_is_scrubbed(server):
    server.push(fp.ECHO_KEY)
    with pytest.raises(PermanentModelError) as info:
        model_for(server).complete(two_image_messages(), Decoding())
    assert KEY not in str(info.value) and "[redacted]" in str(info.value)


def test_missing_key_and_key_in_config_are_clear_errors(monkeypatch):
    monkeypatch.delenv("MEDSCOPE_UNSET_KEY", raising=False)
    with pytest.raises(MedScopeError, match="MEDSCOPE_UNSET_KEY is not set"):
        build_model(ModelEntry(name="m", kind="openai", model="x", base_url="http://127.0.0.1:9", api_key_env="MEDSCOPE_UNSET_KEY"))
    with pytest.raises(ValueError, match="never the key"):
        ModelEntry(name="m", kind="openai", model="x", api_key_env="sk-proj-abcdefghijklmnop")
    with pytest.raises(ValueError):
        ModelEntry(name="m", kind="openai", model="x", api_key="sk-abc")  # no such field: keys live in env


def test_rate_bucket_schedule_by_hand():
    b = RateBucket(rpm=60)  # one request a second
    assert [b.reserve(now=100.0) for _ in range(3)] == [0.0, 1.0, 2.0]
    assert b.reserve(now=110.0) == 0.0  # idle time earns no burst credit
    t = RateBucket(tpm=600)  # 10 tokens a second
    assert t.reserve(50, now=0.0) == 0.0
    assert t.reserve(10, now=0.0) == pytest.approx(5.0)  # the first 50 tokens occupy 5 s
    t.settle(estimated=10, actual=30)  # 20 more tokens than booked: 2 s more
    assert t.reserve(0, now=0.0) == pytest.approx(8.0)
    p = RateBucket(rpm=600)
    p.penalize(3.0, now=0.0)  # Retry-After pauses everyone
    assert p.reserve(now=0.0) == pytest.approx(3.0)


def test_multi_turn_history_keeps_roles_and_images(server):
    """An agent episode's second request: the history with a tool result image as a user turn."""
    history = [
        Message.text("system", "You read images."),
        Message("user", (Part(png=PNG), Part(text="Is there a nodule?"))),
        Message.text("assistant", '<tool>{"name": "zoom", "box": [0, 0, 500, 500]}</tool>'),
        Message("user", (Part(png=PNG), Part(text="zoomed crop"))),
    ]
    model_for(server).complete(history, Decoding())
    req = server.requests[-1]
    assert req.images == 2 and "zoomed crop" in req.text and "zoom" in req.text
    body = req.body
    roles = {
        "openai": lambda b: [m["role"] for m in b["messages"]],
        "anthropic": lambda b: [m["role"] for m in b["messages"]],
        "gemini": lambda b: [c["role"] for c in b["contents"]],
    }[server.wire](body)
    assert roles == {"openai": ["system", "user", "assistant", "user"], "anthropic": ["user", "assistant", "user"],
                     "gemini": ["user", "model", "user"]}[server.wire]


@pytest.mark.parametrize("url, why", [("${PROVIDER_HOST}/v1", "environment reference"),
                                      ("$PROVIDER_HOST/v1", "environment reference"),
                                      ("api.example.org/v1", "not an http:// or https:// URL"),
                                      ("ftp://files.example.org/v1", "not an http:// or https:// URL"),
                                      ("https:///v1", "not an http:// or https:// URL")])
def test_a_base_url_that_is_no_url_is_refused_naming_it(url, why):
    # Fresh campaign (issue 51): '${PROVIDER_HOST}/v1' passed the config and failed only at the
    # pre-flight request, with urllib's "unknown url type".
    with pytest.raises(ValueError, match=f"(?s)base_url.*{why}"):
        ModelEntry(name="m", kind="openai", model="x", base_url=url)
    for good in ("http://127.0.0.1:8000/v1", "https://my-resource.openai.azure.com"):
        assert ModelEntry(name="m", kind="openai", model="x", base_url=good).base_url == good
