"""One deadline for a whole provider request: connect, send, headers and the whole body.

An HTTP client's timeout bounds each socket operation, not the request: a provider (or a proxy)
that sends its headers and then one byte every two seconds never trips a 5 s read timeout and
holds the caller for as long as it likes (issue 51). The three SDKs (``openai``, ``anthropic``,
``google-genai``) all send through ``httpx2`` / ``httpcore2``, so the deadline is enforced one
level below them, in the network backend: every connect, read and write is given at most the
time left before the deadline, and one started after it fails at once with a read timeout. A
request therefore ends within its deadline plus one scheduling slice, whatever the server
sends, and the SDK reports it as its ordinary timeout error.

The deadline lives in a context variable set around one adapter call (``request_deadline``),
so the transport can be shared by a client for its whole life while each request carries its
own clock. Outside such a block the backend behaves exactly like httpcore2's own.

The DNS lookup is bounded too: ``getaddrinfo`` takes no timeout, so inside a deadline block the
host is resolved on a small pool of lookup threads and waited for at most the time left; a lookup
that outlives it fails the request as a connect timeout naming the host (its thread finishes, or
not, on its own: a blocked resolver call cannot be cancelled), and the connection is made to the
addresses found, in the resolver's order, with TLS still verified against the host's name.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import ipaddress
import socket
import time
from collections.abc import Iterator

import httpcore2
import httpx2

# Lookups of hosts whose resolver hangs can pile up here; each request still ends by its deadline.
_LOOKUPS = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="medscope-dns")
_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "medscope_request_deadline", default=None)


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[None]:
    """Every request sent through a DeadlineTransport inside this block ends within ``seconds``.

    Parameters
    ----------
    seconds : float
        The whole request's budget (a model entry's ``timeout_s``), counted from entering.

    Yields
    ------
    None
        Inside the block the deadline applies.
    """
    token = _DEADLINE.set((time.monotonic() + float(seconds), float(seconds)))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def deadline_passed() -> bool:
    """Whether the current block's deadline has passed (False outside any block).

    Returns
    -------
    bool
        True once the clock is at or past the deadline.
    """
    current = _DEADLINE.get()
    return current is not None and time.monotonic() >= current[0]


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left; ``error`` when none is left."""
    current = _DEADLINE.get()
    if current is None:
        return timeout
    left = current[0] - time.monotonic()
    if left <= 0:
        raise error(f"request deadline of {current[1]:g} s passed")
    return left if timeout is None else min(timeout, left)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def resolve(host: str, port: int) -> list[str]:
    """The addresses of ``host``, looked up within the current request's deadline.

    Parameters
    ----------
    host : str
        A host name.
    port : int
        The port to connect to (``getaddrinfo`` takes it).

    Returns
    -------
    list of str
        The addresses (IPv4 or IPv6) ``getaddrinfo`` gave for stream sockets, in its order, each once.

    Raises
    ------
    httpcore2.ConnectTimeout
        When the lookup has not answered by the deadline (or the deadline had passed).
    httpcore2.ConnectError
        When the lookup fails (an unknown host).
    """
    left = _bounded(None, httpcore2.ConnectTimeout)
    lookup = _LOOKUPS.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    try:
        infos = lookup.result(timeout=left)
    except concurrent.futures.TimeoutError:
        current = _DEADLINE.get()
        raise httpcore2.ConnectTimeout(f"DNS lookup of {host} did not answer within the request deadline of "
                                       f"{current[1]:g} s") from None
    except OSError as err:
        raise httpcore2.ConnectError(f"DNS lookup of {host} failed: {err}") from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def lookup_failure(err: BaseException) -> str | None:
    """The DNS lookup's own message, where one is in an SDK error's chain of causes.

    Parameters
    ----------
    err : BaseException
        What an SDK raised (its cause and context chain is searched).

    Returns
    -------
    str or None
        ``"DNS lookup of HOST ..."`` as :func:`resolve` raised it, or None.
    """
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if str(err).startswith("DNS lookup of "):
            return str(err)
        err = err.__cause__ or err.__context__
    return None


class DeadlineStream(httpcore2.NetworkStream):
    """A network stream whose every read and write ends by the current deadline."""

    def __init__(self, inner: httpcore2.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore2.NetworkStream:
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                    _bounded(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore2.NetworkBackend):
    """httpcore2's synchronous backend with connects and streams bounded by the deadline."""

    def __init__(self, inner: httpcore2.NetworkBackend | None = None):
        self._inner = inner or httpcore2.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        if _DEADLINE.get() is None or _is_address(host):
            stream = self._inner.connect_tcp(host, port, _bounded(timeout, httpcore2.ConnectTimeout),
                                             local_address, socket_options)
            return DeadlineStream(stream)
        error: Exception | None = None
        for address in resolve(host, port):
            try:
                stream = self._inner.connect_tcp(address, port, _bounded(timeout, httpcore2.ConnectTimeout),
                                                 local_address, socket_options)
                return DeadlineStream(stream)
            except httpcore2.ConnectError as err:  # the next address; a timeout ends the request
                error = err
        raise error or httpcore2.ConnectError(f"no address of {host} to connect to")

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        stream = self._inner.connect_unix_socket(path, _bounded(timeout, httpcore2.ConnectTimeout), socket_options)
        return DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx2.HTTPTransport):
    """httpx2's default transport over a connection pool that uses DeadlineBackend.

    httpx2 does not take a network backend as an argument, so the pool it built is replaced
    by one with the same defaults and this backend (``tests/models/test_request_deadline.py``
    fails if a new httpx2 stops using ``_pool``).
    """

    def __init__(self) -> None:
        super().__init__()
        limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=DeadlineBackend(),
        )
