"""A ChatModel wrapper that waits for the provider's limiter and retries transient failures.

Retries follow the paired-modality paper Appendix A (429 and 5xx retried) and the counterfactual paper §3.10: transient
errors (429, 5xx, timeouts, dropped connections, cut or garbled bodies) are retried with
jittered exponential backoff (tenacity's ``wait_random_exponential``, "full jitter"), never
sooner than a Retry-After; any other 4xx is given up at once. The wrapper counts attempts and
the provider's token counts of the replies it passed on, and keeps two clocks apart: the time
from each request sent to its reply (``request_s``, the provider's latency, every attempt) and
the time spent waiting for the shared rate limiter before sending (``queued_s``). A sweep whose
limiter books requests minutes ahead would otherwise report those minutes as the provider's
latency. The back-off sleeps between attempts are in neither.

No wait is longer than MAX_RETRY_WAIT_S: a Retry-After beyond it (a provider answering
``Retry-After: 999999999`` would park the worker for 31 years, issue 51) ends the unit at once
as a failed attempt whose reason names the header and the cap; the sweep records it as
``retry_later`` and a rerun tries again.
"""

from __future__ import annotations

import time
from typing import Protocol

import tenacity

from medscope.models.base import ChatModel, Completion, Decoding, Message, TransientModelError
from medscope.models.ratelimit import estimate_tokens

# addition: the longest wait between two attempts, and the most a Retry-After may ask for; no
# source paper gives one. Two minutes covers every documented provider back-off (OpenAI and
# Anthropic ask for seconds to a minute) while a worker never idles much longer than a request.
MAX_RETRY_WAIT_S = 120.0

# addition: the most tokens one reply may report for its input or its output; no source paper gives
# one. No model's context holds a billion tokens, and a count past it (a usage of 10**30 stopped a
# whole sweep with an OverflowError in the episodes table, issue 51) is a malformed response.
MAX_REPLY_TOKENS = 10**9


class RetryAfterOverCap(TransientModelError):
    """A Retry-After longer than MAX_RETRY_WAIT_S: not waited for, the unit ends (retry later)."""


class Limiter(Protocol):
    def reserve(self, tokens: int) -> float: ...
    def settle(self, estimated: int, actual: int) -> None: ...
    def penalize(self, seconds: float) -> None: ...


class GuardedModel:
    """Rate limiting + retries around one ChatModel, for one episode (it counts attempts)."""

    def __init__(
        self,
        model: ChatModel,
        limiter: Limiter | None = None,
        max_attempts: int = 6,
        backoff_s: float = 0.5,
        backoff_max_s: float = 30.0,
        sleep=time.sleep,
        max_wait_s: float = MAX_RETRY_WAIT_S,
        clock=time.monotonic,
    ):
        self.model = model
        self.name, self.provider, self.endpoint = model.name, model.provider, model.endpoint
        self.limiter = limiter
        self.max_attempts = max_attempts
        self.sleep = sleep
        self.clock = clock
        self.max_wait_s = max_wait_s
        self._jitter = tenacity.wait_random_exponential(multiplier=backoff_s, max=min(backoff_max_s, max_wait_s))
        self.attempts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.request_s = 0.0
        self.queued_s = 0.0
        self.errors: list[str] = []

    def _wait(self, state: tenacity.RetryCallState) -> float:
        err = state.outcome.exception() if state.outcome else None
        floor = getattr(err, "retry_after_s", None) or 0.0
        # _once has already refused a Retry-After over the cap; min() keeps the bound explicit
        return min(self.max_wait_s, max(floor, self._jitter(state)))

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(
                lambda err: isinstance(err, TransientModelError) and not isinstance(err, RetryAfterOverCap)),
            sleep=self.sleep,
            reraise=True,
        )
        return retrying(self._once, messages, decoding)

    def _timed(self, messages: list[Message], decoding: Decoding) -> Completion:
        sent = self.clock()
        try:
            return self.model.complete(messages, decoding)
        finally:  # a failed attempt waited on the provider too
            self.request_s += self.clock() - sent

    def _once(self, messages: list[Message], decoding: Decoding) -> Completion:
        self.attempts += 1
        estimate = 0
        if self.limiter is not None:
            texts = [p.text for m in messages for p in m.parts if p.text]
            images = sum(1 for m in messages for p in m.parts if p.is_image)
            estimate = estimate_tokens(texts, images, decoding.max_output_tokens)
            asked = self.clock()
            delay = self.limiter.reserve(estimate)
            if delay > 0:
                self.sleep(delay)
            self.queued_s += self.clock() - asked  # the booking's round trip is queueing too
        try:
            completion = self._timed(messages, decoding)
        except TransientModelError as err:
            self.errors.append(str(err)[:200])
            if err.retry_after_s and self.limiter is not None:
                # the shared limiter holds every worker of this provider: never past the cap
                self.limiter.penalize(min(err.retry_after_s, self.max_wait_s))
            if self.limiter is not None:
                self.limiter.settle(estimate, 0)  # a failed request used no tokens
            if err.retry_after_s and err.retry_after_s > self.max_wait_s:
                raise RetryAfterOverCap(
                    f"the provider asked to retry after {err.retry_after_s:.15g} s (Retry-After), over the "
                    f"{self.max_wait_s:g} s cap on one wait (MAX_RETRY_WAIT_S): not waited for; {err}"[:500],
                    retry_after_s=err.retry_after_s) from None
            raise
        usage = (completion.input_tokens, completion.output_tokens)
        if any(not isinstance(n, int) or n < 0 or n > MAX_REPLY_TOKENS for n in usage):
            # a negative count would lower the spend and let a sweep run past --budget-usd; one past
            # any context overflows the episodes table's int64 columns (issue 51)
            if self.limiter is not None:
                self.limiter.settle(estimate, 0)
            what = "negative" if any(isinstance(n, int) and n < 0 for n in usage) else "impossible"
            self.errors.append(f"{what} token usage {usage}"[:200])
            raise TransientModelError(f"malformed response: {what} token usage (input {str(usage[0])[:40]}, output "
                                      f"{str(usage[1])[:40]}); each count lies in 0..{MAX_REPLY_TOKENS:,}; the reply "
                                      "is not kept and costs nothing")
        completion.text = _without_lone_surrogates(completion.text)
        if self.limiter is not None:
            self.limiter.settle(estimate, completion.input_tokens + completion.output_tokens)
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        return completion


def _without_lone_surrogates(text):
    """``text`` with each lone UTF-16 surrogate (a JSON ``"\\ud800"`` escape decodes to one) replaced
    by U+FFFD: such a string cannot be written as UTF-8, and one reply holding it stopped a whole
    sweep with a UnicodeEncodeError (issue 51). The rest of the reply is kept as sent."""
    if not isinstance(text, str):
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
