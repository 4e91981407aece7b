"""Hold chosen requests of a loopback server until the test says what to do with them.

A fault test that kills a worker "while it is busy" must know the worker is busy: a sleep or a
deadline guesses, and guesses wrong on a loaded machine. ``Gate`` makes the busy moment an
event instead: a loopback server (``medscope.testing.providers.FakeProvider``,
``medscope.testing.s3proxy.FailingS3Proxy``) asks the gate about each request; a request the
gate holds waits, in flight, until ``release``, which lets it go on or drops it (the connection
closes unanswered, as when the machine that sent it is gone). ``held`` says what is waiting and
from which client port, so a test can find the process, and the node, that sent it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Held:
    """One request waiting at the gate: what it asked (``what``: a path or a prompt text), its
    method, and the client's port on 127.0.0.1."""

    what: str
    method: str
    client_port: int
    go: threading.Event = field(default_factory=threading.Event, repr=False)
    dropped: bool = False


class Gate:
    def __init__(self):
        self._lock = threading.Lock()
        self._rule: Callable[[str, str], bool] | None = None
        self._after = 0
        self._passed = 0
        self._waiting: list[Held] = []
        self.dropped: list[Held] = []

    def hold(self, match: Callable[[str, str], bool], after: int = 0) -> None:
        """From now on, of the requests ``match(method, what)`` accepts, let the first ``after``
        through and hold every later one until ``release``."""
        with self._lock:
            self._rule, self._after, self._passed = match, after, 0

    def passed(self) -> int:
        """How many matching requests went through before the gate started holding."""
        with self._lock:
            return self._passed

    def held(self) -> list[Held]:
        with self._lock:
            return list(self._waiting)

    def release(self, drop: Callable[[Held], bool] = lambda h: False) -> list[Held]:
        """Stop holding; every waiting request goes on, except those ``drop`` picks, which are
        closed unanswered. Returns the dropped ones."""
        with self._lock:
            self._rule = None
            waiting, self._waiting = self._waiting, []
        out = []
        for h in waiting:
            h.dropped = bool(drop(h))
            if h.dropped:
                out.append(h)
            h.go.set()
        with self._lock:
            self.dropped.extend(out)
        return out

    def admit(self, method: str, what: str, client_port: int) -> bool:
        """Called by the server for each request: blocks while it is held; False: drop it."""
        with self._lock:
            rule = self._rule
            if rule is None or not rule(method, what):
                return True
            if self._passed < self._after:
                self._passed += 1
                return True
            h = Held(what, method, client_port)
            self._waiting.append(h)
        h.go.wait()
        return not h.dropped


def wait_for(condition: Callable[[], object], what: str, deadline_s: float = 300.0, every_s: float = 0.05):
    """Wait until ``condition()`` returns something truthy and return it; after ``deadline_s``
    (generous: it is there only so a broken run ends) raise TimeoutError saying ``what`` it was
    waiting for. The deadline never decides a test's outcome on a working system.

    Parameters
    ----------
    condition : callable
        Called with no arguments, every ``every_s``.
    what : str
        What is awaited, for the timeout's message.
    deadline_s : float, optional
        Seconds before giving up.
    every_s : float, optional
        Seconds between calls.

    Returns
    -------
    object
        The first truthy value ``condition()`` returned.

    Raises
    ------
    TimeoutError
        If ``deadline_s`` passes first.
    """
    end = time.monotonic() + deadline_s
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError(f"gave up after {deadline_s:g}s waiting for {what}")
        time.sleep(every_s)
