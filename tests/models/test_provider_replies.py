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
