"""Provider replies that a sweep must not take at face value (issue 51, fourth campaign): a redirect
to another host and a usage block with negative token counts."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from medscope.models.base import Decoding, Message, PermanentModelError, TransientModelError
from medscope.models.config import ModelEntry
from medscope.models.guarded import GuardedModel
from medscope.models.registry import build_model
from medscope.testing import providers as fp

KEY = "replies-test-key-0123456789"


class RawServer:
    """A loopback server whose every POST gets ``reply(handler)``; GETs get an empty model list."""

    def __init__(self, reply):
        self.posts = 0

        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length") or 0))
                owner.posts += 1
                reply(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def root(self) -> str:
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def model_on(wire: str, base_url: str):
    return build_model(ModelEntry(name="m", kind=wire, model="fake-model", base_url=base_url,
                                  api_key_env="MEDSCOPE_REPLIES_KEY", timeout_s=5.0))


@pytest.mark.parametrize("wire", fp.WIRES)
def test_a_redirect_to_another_host_is_not_followed(wire, monkeypatch):
    monkeypatch.setenv("MEDSCOPE_REPLIES_KEY", KEY)
    other = fp.FakeProvider(wire, expected_key=KEY)  # would answer, and would see the images and the key

    def redirect(handler):
        handler.send_response(307)
        handler.send_header("location", other.url.rstrip("/") + handler.path)
        handler.send_header("content-length", "0")
        handler.end_headers()

    first = RawServer(redirect)
    try:
        base = first.root + ("/v1" if wire == "openai" else "")
        with pytest.raises(PermanentModelError) as caught:
            model_on(wire, base).complete([Message.text("user", "is there a nodule?")], Decoding(max_output_tokens=8))
        assert first.posts == 1
        assert len(other.requests) == 0  # nothing reached the other host
        message = str(caught.value)
        assert message.startswith("HTTP 307: the endpoint redirected to http://127.0.0.1:")
        assert "not followed" in message and KEY not in message
    finally:
        first.close()
        other.close()


def test_negative_usage_is_a_failed_attempt_that_costs_nothing(monkeypatch):
    monkeypatch.setenv("MEDSCOPE_REPLIES_KEY", KEY)
    body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "fake-model",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": -50_000_000, "completion_tokens": -1, "total_tokens": -50_000_001}}
                      ).encode()

    def negative(handler):
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    srv = RawServer(negative)
    try:
        waits: list[float] = []
        guarded = GuardedModel(model_on("openai", srv.root + "/v1"), max_attempts=2, sleep=waits.append)
        with pytest.raises(TransientModelError, match=r"negative token usage \(input -50000000, output -1\)"):
            guarded.complete([Message.text("user", "x")], Decoding(max_output_tokens=8))
        # both attempts were sent, and neither added to the tokens the sweep prices
        assert srv.posts == 2 and guarded.attempts == 2
        assert (guarded.input_tokens, guarded.output_tokens) == (0, 0)
    finally:
        srv.close()


def _one_reply_server(body: bytes):
    def reply(handler):
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return RawServer(reply)


def _completion_body(content_json: str, usage: dict) -> bytes:
    # content_json is spliced in as written, so a raw JSON escape such as "\ud800" reaches the client
    return ('{"id": "x", "object": "chat.completion", "created": 0, "model": "fake-model", "choices": [{"index": 0, '
            '"message": {"role": "assistant", "content": ' + content_json + '}, "finish_reason": "stop"}], '
            '"usage": ' + json.dumps(usage) + '}').encode()


def test_a_usage_past_any_context_is_a_failed_attempt_not_an_overflow(monkeypatch):
    # issue 51, the eighth campaign: usage of 10**30 tokens stopped the whole sweep with
    # "OverflowError: Python int too large to convert to C long" when the episode was written
    monkeypatch.setenv("MEDSCOPE_REPLIES_KEY", KEY)
    srv = _one_reply_server(_completion_body('"yes"', {"prompt_tokens": 10**30, "completion_tokens": 1,
                                                       "total_tokens": 10**30 + 1}))
    try:
        guarded = GuardedModel(model_on("openai", srv.root + "/v1"), max_attempts=2, sleep=lambda s: None)
        with pytest.raises(TransientModelError,
                           match=r"impossible token usage \(input 10{30}, output 1\); each count lies in 0\.\.1,000,000,000"):
            guarded.complete([Message.text("user", "x")], Decoding(max_output_tokens=8))
        assert srv.posts == 2 and (guarded.input_tokens, guarded.output_tokens) == (0, 0)
    finally:
        srv.close()


def test_a_billion_tokens_is_still_a_count():
    # the cap is inclusive: 10**9 is the documented maximum, one more is refused
    from medscope.models.base import Completion
    from medscope.models.guarded import MAX_REPLY_TOKENS

    class Fixed:
        name, provider, endpoint = "m", "policy", "local"

        def __init__(self, n):
            self.n = n

        def complete(self, messages, decoding):
            return Completion(text="yes", input_tokens=self.n, output_tokens=0)

    assert MAX_REPLY_TOKENS == 10**9
    g = GuardedModel(Fixed(10**9), max_attempts=1)
    assert g.complete([Message.text("user", "x")], Decoding()).text == "yes" and g.input_tokens == 10**9
    with pytest.raises(TransientModelError, match="impossible token usage"):
        GuardedModel(Fixed(10**9 + 1), max_attempts=1).complete([Message.text("user", "x")], Decoding())


def test_a_lone_surrogate_in_a_reply_becomes_a_replacement_character(monkeypatch):
    # issue 51, the eighth campaign: "yes \ud800" (a JSON escape of half a UTF-16 pair) could not be
    # written as UTF-8 and stopped the sweep with a UnicodeEncodeError; the reply is kept, the one
    # character that cannot exist in UTF-8 replaced by U+FFFD
    monkeypatch.setenv("MEDSCOPE_REPLIES_KEY", KEY)
    srv = _one_reply_server(_completion_body('"yes \\ud800 and \\udfff."', {"prompt_tokens": 5,
                                                                            "completion_tokens": 2,
                                                                            "total_tokens": 7}))
    try:
        guarded = GuardedModel(model_on("openai", srv.root + "/v1"), max_attempts=1)
        text = guarded.complete([Message.text("user", "x")], Decoding(max_output_tokens=8)).text
        assert text == "yes \ufffd and \ufffd."
        text.encode("utf-8")  # writable
        assert (guarded.input_tokens, guarded.output_tokens) == (5, 2)
    finally:
        srv.close()
