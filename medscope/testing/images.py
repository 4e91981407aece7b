"""A loopback HTTP server speaking the OpenAI images API (``/v1/images/generations`` and the
multipart ``/v1/images/edits``), for testing ``medscope pairs generate`` with a provider's image
endpoint. It answers every request with a PNG (by default a procedurally drawn photograph chosen
from the prompt's text) and logs each one (path, prompt, whether a source image came with it)."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ImageRequest:
    path: str
    prompt: str
    has_image: bool
    model: str
    images: int = 0  # image parts sent (an edit's source, then any reference images)
    mask: bytes | None = None  # the edit mask PNG, when one came (transparent = edit here)


def default_painter(prompt: str) -> bytes:
    """A PNG photograph drawn by ``paired_modality.draw.photo``: the first mark the prompt names
    (vesicles, acne, cyanosis, nail polish, ecchymosis, port wine; else none) on the body region
    that mark belongs to ("skin" when none does).

    Parameters
    ----------
    prompt : str
        The image request's prompt; its length seeds the subject.

    Returns
    -------
    bytes
        PNG bytes of a 256 x 256 RGB image.
    """
    from medscope.images import encode_png
    from medscope.protocols.paired_modality import draw

    text = prompt.lower()
    mark = next((m for m in ("vesicles", "acne", "cyanosis", "nail_polish", "ecchymosis", "port_wine")
                 if m.replace("_", " ") in text), "none")
    region = next((r for r, marks in draw.MARKS.items() if mark in marks), "skin")
    return encode_png(draw.photo(region, mark, len(prompt)))


class FakeImageProvider:
    def __init__(self, painter: Callable[[str], bytes] = default_painter, expected_key: str | None = None):
        self.painter = painter
        self.expected_key = expected_key
        self.requests: list[ImageRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _multipart_parts(body: bytes, ctype: str) -> list[tuple[str, bytes]]:
    m = re.search(r"boundary=\"?([^\";]+)\"?", ctype)
    if not m:
        return []
    out = []
    for part in body.split(b"--" + m.group(1).encode()):
        head, _, value = part.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        if name:
            out.append((name.group(1).decode(), value.rstrip(b"\r\n")))
    return out


def _handler(fake: FakeImageProvider):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ctype = self.headers.get("Content-Type", "")
            if ctype.startswith("multipart/"):
                parts = _multipart_parts(raw, ctype)
                fields = dict(parts)
                prompt = fields.get("prompt", b"").decode()
                model = fields.get("model", b"").decode()
                images = sum(1 for k, _ in parts if k.startswith("image"))
                mask = fields.get("mask")
            else:
                body = json.loads(raw or b"{}")
                prompt, model, images, mask = body.get("prompt", ""), body.get("model", ""), 0, None
            with fake._lock:
                fake.requests.append(ImageRequest(self.path, prompt, images > 0, model, images, mask))
            auth = self.headers.get("Authorization", "")
            if fake.expected_key is not None and auth != f"Bearer {fake.expected_key}":
                return self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
            png = fake.painter(prompt)
            self._send(200, {"created": 0, "data": [{"b64_json": base64.b64encode(png).decode()}]})

        def _send(self, code: int, payload: dict):
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
