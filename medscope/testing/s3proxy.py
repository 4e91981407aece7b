"""A loopback HTTP proxy in front of an S3 server that fails chosen writes, as S3 does under load.

moto cannot inject errors, so faults on write are made on the wire: ``FailingS3Proxy`` forwards
every request to the real (loopback) S3 server, except the first ``fail_puts`` PUTs whose path
contains ``match``: those get ``status`` with S3's XML error body (503 ``SlowDown`` by default)
and never reach the server. Clients (s3fs / botocore in the driver and in Ray workers) take the
proxy's URL as their endpoint and go through their real retry paths. ``gate``
(medscope.testing.gate) holds chosen requests in flight until the test releases or drops them,
and ``puts`` lists the paths of the PUTs the server accepted, in order.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from medscope.testing.gate import Gate

_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class FailingS3Proxy:
    def __init__(self, upstream: str, fail_puts: int = 0, match: str = "", status: int = 503,
                 code: str = "SlowDown"):
        self.upstream = urlsplit(upstream)
        self.fail_puts, self.match, self.status, self.code = fail_puts, match, status, code
        self.failed: list[str] = []  # paths of the PUTs answered with an error
        self.forwarded = 0
        self.puts: list[str] = []  # paths of the PUTs the server answered with success
        self.gate = Gate()  # holds chosen requests (matched on method and path) until released
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _should_fail(self, method: str, path: str) -> bool:
        if method != "PUT" or self.match not in path:
            return False
        with self._lock:
            if len(self.failed) < self.fail_puts:
                self.failed.append(path)
                return True
        return False

    def close(self) -> None:
        self.gate.release(drop=lambda h: True)
        self._server.shutdown()
        self._server.server_close()


def _handler(proxy: FailingS3Proxy):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _relay(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if proxy._should_fail(self.command, self.path):
                payload = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{proxy.code}</Code>'
                           f"<Message>injected by FailingS3Proxy</Message></Error>").encode()
                self.send_response(proxy.status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            if not proxy.gate.admit(self.command, self.path, self.client_address[1]):
                self.close_connection = True  # dropped at the gate: it never reaches the server
                return
            conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                conn.request(self.command, self.path, body=body if length or self.command in ("PUT", "POST") else None,
                             headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                with proxy._lock:
                    proxy.forwarded += 1
                    if self.command == "PUT" and resp.status < 300:
                        proxy.puts.append(self.path)
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in _HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                # a HEAD's Content-Length is the object's size (clients read sizes from it)
                size = resp.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
                self.send_header("Content-Length", size)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

    return Handler
