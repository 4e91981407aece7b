"""A ChatModel wrapper that waits for the provider's limiter and retries transient failures.

Retries follow the paired-modality paper Appendix A (429 and 5xx retried) and the counterfactual paper §3.10: transient
errors (429, 5xx, timeouts, dropped connections, cut or garbled bodies) are retried with
jittered exponential backoff (tenacity's ``wait_random_exponential``, "full jitter"), never
sooner than a Retry-After; any other 4xx is given up at once. The wrapper counts attempts and
the provider's token counts of the replies it passed on.
"""

from __future__ import annotations

import time
from typing import Protocol

import tenacity

from medscope.models.base import ChatModel, Completion, Decoding, Message, TransientModelError
from medscope.models.ratelimit import estimate_tokens


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
    ):
        self.model = model
        self.name, self.provider, self.endpoint = model.name, model.provider, model.endpoint
        self.limiter = limiter
        self.max_attempts = max_attempts
        self.sleep = sleep
        self._jitter = tenacity.wait_random_exponential(multiplier=backoff_s, max=backoff_max_s)
        self.attempts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.errors: list[str] = []

    def _wait(self, state: tenacity.RetryCallState) -> float:
        err = state.outcome.exception() if state.outcome else None
        floor = getattr(err, "retry_after_s", None) or 0.0
        return max(floor, self._jitter(state))

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(TransientModelError),
            sleep=self.sleep,
            reraise=True,
        )
        return retrying(self._once, messages, decoding)

    def _once(self, messages: list[Message], decoding: Decoding) -> Completion:
        self.attempts += 1
        estimate = 0
        if self.limiter is not None:
            texts = [p.text for m in messages for p in m.parts if p.text]
            images = sum(1 for m in messages for p in m.parts if p.is_image)
            estimate = estimate_tokens(texts, images, decoding.max_output_tokens)
            delay = self.limiter.reserve(estimate)
            if delay > 0:
                self.sleep(delay)
        try:
            completion = self.model.complete(messages, decoding)
        except TransientModelError as err:
            self.errors.append(str(err)[:200])
            if err.retry_after_s and self.limiter is not None:
                self.limiter.penalize(err.retry_after_s)
            if self.limiter is not None:
                self.limiter.settle(estimate, 0)  # a failed request used no tokens
            raise
        if self.limiter is not None:
            self.limiter.settle(estimate, completion.input_tokens + completion.output_tokens)
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        return completion
