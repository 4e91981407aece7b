"""Requests-per-minute and tokens-per-minute of one provider as one schedule.

Why not ``aiolimiter``: its leaky bucket lives in one asyncio loop of one process, while a
sweep's requests leave from many Ray worker processes that must share one provider quota.
The sweep therefore keeps one ``RateBucket`` per provider inside a Ray actor, and a worker
asks it for a *reservation*: the bucket answers at once with how long to wait, and the worker
sleeps on its own side. No call is held open in the actor, so one slow provider never blocks
another, and a 429's Retry-After pauses every worker of that provider (``penalize``).

The schedule is the generic cell rate algorithm (virtual scheduling): each request occupies
``60 / rpm`` seconds of the request line and ``tokens * 60 / tpm`` seconds of the token line;
it may start when both lines are free. Idle time earns no credit, so the achieved rate never
exceeds the limit, and under load it reaches it.
"""

from __future__ import annotations

import threading
import time


class RateBucket:
    def __init__(self, rpm: float | None = None, tpm: float | None = None):
        if (rpm is not None and rpm <= 0) or (tpm is not None and tpm <= 0):
            raise ValueError("rpm and tpm must be positive (or None for no limit)")
        self.request_s = 60.0 / rpm if rpm else 0.0
        self.token_rate = tpm / 60.0 if tpm else None
        self.next_request = 0.0
        self.next_token = 0.0
        self._lock = threading.Lock()

    def reserve(self, tokens: int = 0, now: float | None = None) -> float:
        """Book one request of about ``tokens`` tokens; returns the seconds to wait before sending."""
        now = time.time() if now is None else now
        with self._lock:
            start = max(now, self.next_request, self.next_token)
            self.next_request = start + self.request_s
            if self.token_rate:
                self.next_token = max(self.next_token, start) + tokens / self.token_rate
            return start - now

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token line once the provider has counted the request's real tokens."""
        if self.token_rate:
            with self._lock:
                self.next_token += (actual - estimated) / self.token_rate

    def penalize(self, seconds: float, now: float | None = None) -> None:
        """A Retry-After from the provider: nobody sends before ``now + seconds``."""
        now = time.time() if now is None else now
        with self._lock:
            self.next_request = max(self.next_request, now + seconds)


def estimate_tokens(texts: list[str], images: int, max_output_tokens: int) -> int:
    """A pessimistic token count before sending: ~4 characters a token, ~800 tokens for a
    768-px image, and the whole output cap (OpenAI counts max_tokens against TPM).

    Parameters
    ----------
    texts : list of str
        The request's text parts.
    images : int
        Number of images.
    max_output_tokens : int
        The request's output cap.

    Returns
    -------
    int
        Estimated tokens.
    """
    return sum(len(t) for t in texts) // 4 + 800 * images + max_output_tokens
