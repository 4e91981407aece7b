"""Loopback HTTP servers speaking the OpenAI, Anthropic, Gemini and Azure OpenAI wire formats.

Each ``FakeProvider`` is a real ``ThreadingHTTPServer`` on 127.0.0.1 in a daemon thread. It
answers with a responder function (request text, image count -> reply text) and can be
scripted, per request or per request text, to fail the way real providers fail: 429 with or
without Retry-After, 500/503, a slow answer past the client's timeout (``slow``: a fixed delay;
``HANG``: no answer until the client gives up, however long its timeout; ``trickle``: the
headers at once, then the body one byte at a time, each byte well inside any read timeout, so
only a deadline on the whole request ends it), a reset connection, a
truncated or non-JSON body, an empty completion, a refusal. Every request is logged (path,
text, images, headers, client port) so tests can count what reached the server; a GET of the
provider's model list (a sweep's pre-flight) answers 200 (401 for a wrong key) and is logged
apart, in ``model_list_requests``. ``gate``
(medscope.testing.gate) can hold requests in flight until the test releases them, so a fault
test knows a request is in flight before it strikes.
"""

from __future__ import annotations

import base64
import json
import re
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from medscope.testing.gate import Gate

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WIRES = ("openai", "anthropic", "gemini")
AZURE = "azure_openai"
# Azure OpenAI: POST /openai/deployments/{deployment}/chat/completions?api-version=..., key in
# an `api-key` header, bodies as OpenAI's chat completions
AZURE_PATH = re.compile(r"^/openai/deployments/(?P<deployment>[^/?]+)/chat/completions\?(?:.*&)?api-version=[^&]+")


@dataclass
class Action:
    """What the server does with one request."""

    # answer | status | slow | hang | trickle | reset | truncated | nonjson | empty | refusal |
    # echo_key (a 400 whose message repeats the caller's key, as a careless proxy might)
    kind: str = "answer"
    status: int = 200
    retry_after: float | None = None
    delay_s: float = 0.0
    text: str | None = None


def answer(text: str | None = None) -> Action:
    """An answer: ``text``, or the provider's responder when None.

    Parameters
    ----------
    text : str or None, optional
        The reply text.

    Returns
    -------
    Action
        An "answer" action.
    """
    return Action("answer", text=text)


def status(code: int, retry_after: float | None = None) -> Action:
    """An error reply with HTTP status ``code`` and the wire's error body.

    Parameters
    ----------
    code : int
        HTTP status, e.g. 429, 500, 503.
    retry_after : float or None, optional
        Seconds sent in a Retry-After header; None sends none.

    Returns
    -------
    Action
        A "status" action.
    """
    return Action("status", status=code, retry_after=retry_after)


def slow(delay_s: float) -> Action:
    """An answer sent after ``delay_s`` seconds.

    Parameters
    ----------
    delay_s : float
        Delay in seconds before answering.

    Returns
    -------
    Action
        A "slow" action.
    """
    return Action("slow", delay_s=delay_s)


def trickle(byte_interval_s: float = 0.05) -> Action:
    """A 200 whose headers arrive at once and whose body follows one byte per ``byte_interval_s``.

    The body is padded to at least 4 KB, so it takes minutes at the default pace: a client
    bounded per read (each byte comes long before any read timeout) is held; one bounded per
    request gives up. ``FakeProvider.trickles`` records, per trickled request, how many body
    bytes were sent before the client closed and how many the body had.

    Parameters
    ----------
    byte_interval_s : float, optional
        Pause between two body bytes (the fault's pace, far below a client's read timeout).

    Returns
    -------
    Action
        A "trickle" action.
    """
    return Action("trickle", delay_s=byte_interval_s)


TRICKLE_MIN_BODY = 4096

RESET, TRUNCATED, NONJSON, EMPTY, REFUSAL, ECHO_KEY, HANG, DEEP = (
    Action(k) for k in ("reset", "truncated", "nonjson", "empty", "refusal", "echo_key", "hang", "deep")
)
DEEP_LEVELS = 100_000  # far past any JSON parser's recursion limit
HANG_LIMIT_S = 300.0  # a client that never gives up: the server closes after this


@dataclass
class Request:
    path: str
    text: str  # all text parts of the request, joined by newlines
    images: int  # image parts that decoded to PNG bytes
    headers: dict
    body: dict
    action: str
    t: float = field(default_factory=time.monotonic)
    client_port: int = 0


def tokens_in(text: str, images: int) -> int:
    """The fake's deterministic usage count for a prompt (tests derive costs from it).

    Parameters
    ----------
    text : str
        The request's text.
    images : int
        Number of images in the request.

    Returns
    -------
    int
        ``len(text) // 4 + 85 * images``.
    """
    return len(text) // 4 + 85 * images


def tokens_out(text: str) -> int:
    """The fake's deterministic usage count for a completion.

    Parameters
    ----------
    text : str
        The reply's text.

    Returns
    -------
    int
        ``len(text) // 4 + 1``.
    """
    return len(text) // 4 + 1


class FakeProvider:
    """A loopback server for one wire format; ``url`` is the base URL to configure."""

    def __init__(
        self,
        wire: str,
        responder: Callable[[str, int], str] | None = None,
        latency_s: float = 0.0,
        expected_key: str | None = None,
    ):
        if wire not in (*WIRES, AZURE):
            raise ValueError(f"wire must be one of {(*WIRES, AZURE)}")
        self.wire = wire
        self.responder = responder or (lambda text, images: "ok")
        self.latency_s = latency_s
        self.expected_key = expected_key
        self.requests: list[Request] = []  # POSTs: the model requests
        self.trickles: list[tuple[int, int]] = []  # (body bytes sent before the client left, body bytes)
        self.trickle_done = threading.Event()  # set when a trickled request ends, whichever side ended it
        self.model_list_requests: list[str] = []  # GETs (a sweep's pre-flight): their paths
        self._script: deque[Action] = deque()
        self._by_text: dict[str, deque[Action]] = {}
        self._lock = threading.Lock()
        self.gate = Gate()  # holds chosen requests (matched on their text) until released
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    # -- scripting -----------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        root = f"http://{host}:{port}"
        return root + "/v1" if self.wire == "openai" else root

    def push(self, *actions: Action) -> None:
        """Queue actions for the next requests, whatever they ask."""
        with self._lock:
            self._script.extend(actions)

    def on(self, substring: str, *actions: Action) -> None:
        """Queue actions for the next requests whose text contains ``substring``."""
        with self._lock:
            self._by_text.setdefault(substring, deque()).extend(actions)

    def count(self, substring: str = "") -> int:
        with self._lock:
            return sum(1 for r in self.requests if substring in r.text)

    def close(self) -> None:
        self.gate.release(drop=lambda h: True)  # nobody left to answer
        self._server.shutdown()
        self._server.server_close()

    def _next_action(self, text: str) -> Action:
        with self._lock:
            for sub, queue in self._by_text.items():
                if queue and sub in text:
                    return queue.popleft()
            if self._script:
                return self._script.popleft()
        return Action("answer")

    # -- wire formats ----------------------------------------------------------------------
    def parse(self, body: dict) -> tuple[str, int]:
        texts: list[str] = []
        images = 0
        if self.wire in ("openai", "azure_openai"):
            for m in body.get("messages", []):
                content = m.get("content")
                if isinstance(content, str):
                    texts.append(content)
                    continue
                for part in content or []:
                    if part.get("type") == "text":
                        texts.append(part["text"])
                    elif part.get("type") == "image_url":
                        url = part["image_url"]["url"]
                        images += _is_png(url.split("base64,", 1)[-1])
        elif self.wire == "anthropic":
            system = body.get("system")
            if isinstance(system, str):
                texts.append(system)
            for m in body.get("messages", []):
                content = m.get("content")
                if isinstance(content, str):
                    texts.append(content)
                    continue
                for part in content:
                    if part.get("type") == "text":
                        texts.append(part["text"])
                    elif part.get("type") == "image":
                        images += _is_png(part["source"]["data"])
        else:
            sys_parts = (body.get("systemInstruction") or body.get("system_instruction") or {}).get("parts", [])
            texts.extend(p["text"] for p in sys_parts if "text" in p)
            for c in body.get("contents", []):
                for part in c.get("parts", []):
                    if "text" in part:
                        texts.append(part["text"])
                    blob = part.get("inlineData") or part.get("inline_data")
                    if blob:
                        images += _is_png(blob["data"])
        return "\n".join(texts), images

    def success_body(self, reply: str, refusal: bool, text_in: str, images: int, model: str) -> dict:
        tin, tout = tokens_in(text_in, images), tokens_out(reply)
        if self.wire in ("openai", "azure_openai"):
            message = {"role": "assistant", "content": None if refusal else reply, "refusal": reply if refusal else None}
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
            }
        if self.wire == "anthropic":
            return {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": reply}] if reply else [],
                "stop_reason": "refusal" if refusal else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": tin, "output_tokens": tout},
            }
        candidate = {"content": {"role": "model", "parts": [{"text": reply}] if reply else []}, "index": 0}
        candidate["finishReason"] = "SAFETY" if refusal else "STOP"
        return {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": tin, "candidatesTokenCount": tout, "totalTokenCount": tin + tout},
            "modelVersion": model,
        }

    def error_body(self, code: int) -> dict:
        kinds = {429: ("rate_limit_error", "RESOURCE_EXHAUSTED"), 500: ("api_error", "INTERNAL"),
                 503: ("overloaded_error", "UNAVAILABLE"), 400: ("invalid_request_error", "INVALID_ARGUMENT"),
                 401: ("authentication_error", "UNAUTHENTICATED"), 404: ("not_found_error", "NOT_FOUND")}
        kind, gstatus = kinds.get(code, ("api_error", "UNKNOWN"))
        message = f"fake {kind} ({code})"
        if self.wire in ("openai", "azure_openai"):
            return {"error": {"message": message, "type": kind, "code": None, "param": None}}
        if self.wire == "anthropic":
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"code": code, "message": message, "status": gstatus}}

    def key_from(self, headers: dict) -> str | None:
        auth = headers.get("authorization", "")
        bearer = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        if self.wire == "openai":
            return bearer
        if self.wire == "azure_openai":
            return headers.get("api-key")
        if self.wire == "anthropic":  # the SDK sends x-api-key or, in recent versions, a bearer token
            return headers.get("x-api-key") or bearer
        return headers.get("x-goog-api-key")


def _is_png(b64: str) -> int:
    try:
        return int(base64.b64decode(b64).startswith(PNG_SIGNATURE))
    except ValueError:
        return 0


def _wait_for_close(conn: socket.socket, limit_s: float) -> None:
    """Return once the peer has closed ``conn`` (or reset it), or after ``limit_s``."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        readable, _, _ = select.select([conn], [], [], 0.2)
        if readable:
            try:
                if not conn.recv(1, socket.MSG_PEEK):
                    return
            except OSError:
                return
            time.sleep(0.05)  # pipelined bytes of a next request: keep waiting for the close


def _peer_closed(conn: socket.socket) -> bool:
    """Whether the client has closed or reset ``conn`` (checked without blocking)."""
    readable, _, _ = select.select([conn], [], [], 0)
    if not readable:
        return False
    try:
        return not conn.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


def _handler_for(fake: FakeProvider):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep test output quiet
            pass

        def do_POST(self):  # noqa: N802 - http.server naming
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {}
            headers = {k.lower(): v for k, v in self.headers.items()}
            text, images = fake.parse(body)
            action = fake._next_action(text)
            with fake._lock:
                fake.requests.append(Request(self.path, text, images, headers, body, action.kind,
                                             client_port=self.client_address[1]))
            if fake.expected_key is not None and fake.key_from(headers) != fake.expected_key:
                return self._json(401, fake.error_body(401))
            if fake.wire == "azure_openai":
                route = AZURE_PATH.match(self.path)
                if route is None:  # Azure answers an unknown deployment path or a missing api-version so
                    return self._json(404, fake.error_body(404))
                body.setdefault("model", route.group("deployment"))
            if not fake.gate.admit("POST", text, self.client_address[1]):
                self.close_connection = True  # dropped at the gate: closed unanswered
                return
            if fake.latency_s:
                time.sleep(fake.latency_s)
            model = body.get("model") or self.path.split("/models/")[-1].split(":")[0]
            kind = action.kind
            if kind == "status":
                extra = {"Retry-After": f"{action.retry_after:.15g}"} if action.retry_after is not None else {}
                return self._json(action.status, fake.error_body(action.status), extra)
            if kind == "echo_key":
                payload = fake.error_body(400)
                payload["error"]["message"] = f"invalid request for key {fake.key_from(headers)}"
                return self._json(400, payload)
            if kind == "reset":
                # SO_LINGER 0 makes close() send RST: the client sees "connection reset by peer".
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            if kind == "hang":
                # past the client's timeout by construction: no answer until the client closes
                # the connection, so the fault does not depend on how busy the machine is
                _wait_for_close(self.connection, HANG_LIMIT_S)
                self.close_connection = True
                return
            if kind == "slow":
                time.sleep(action.delay_s)
            reply = action.text if action.text is not None else fake.responder(text, images)
            if kind == "empty":
                reply = ""
            payload = fake.success_body(reply, kind == "refusal", text, images, model)
            data = json.dumps(payload).encode()
            if kind == "trickle":
                return self._trickle(data.ljust(TRICKLE_MIN_BODY), action.delay_s)
            if kind == "deep":
                # a 200 answer whose unused extra field is nested past the parser's recursion limit
                data = data[:-1] + b', "debug": ' + b"[" * DEEP_LEVELS + b"]" * DEEP_LEVELS + b"}"
            if kind == "nonjson":
                data = b"<html><body>502 Bad Gateway from a proxy</body></html>"
                return self._raw(200, data, "text/html")
            if kind == "truncated":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            return self._raw(200, data, "application/json")

        def _trickle(self, data: bytes, interval_s: float):
            sent = 0
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.flush()
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    sent += 1
                    if _peer_closed(self.connection):
                        break
                    time.sleep(interval_s)  # the fault's pace; the test waits on trickle_done, not on time
            except OSError:
                pass  # the client gave up mid-body
            finally:
                self.close_connection = True
                with fake._lock:
                    fake.trickles.append((sent, len(data)))
                fake.trickle_done.set()

        def do_GET(self):  # noqa: N802 - the model list a sweep's pre-flight asks for
            headers = {k.lower(): v for k, v in self.headers.items()}
            with fake._lock:
                fake.model_list_requests.append(self.path)
            if fake.expected_key is not None and fake.key_from(headers) != fake.expected_key:
                return self._json(401, fake.error_body(401))
            if self.path.split("?")[0].rstrip("/").endswith("/models"):
                return self._json(200, {"object": "list", "data": [], "models": []})
            return self._json(404, fake.error_body(404))

        def _json(self, code: int, payload: dict, extra: dict | None = None):
            self._raw(code, json.dumps(payload).encode(), "application/json", extra)

        def _raw(self, code: int, data: bytes, ctype: str, extra: dict | None = None):
            try:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer

    return Handler
