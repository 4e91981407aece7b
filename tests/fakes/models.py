"""Chat models for tests that run in this process or in Ray workers (kind "tests.fakes.models:X")."""

from __future__ import annotations

import os
import uuid

from medscope.models.base import Completion, Decoding, Message


class HeldModel:
    """Stands in for local weights: built once per actor; every reply names its instance and
    process, so a test can tell whether one actor held one model for every episode."""

    provider = "local"
    endpoint = "local"

    def __init__(self, entry):
        self.name = entry.name
        self.instance = uuid.uuid4().hex[:8]

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        return Completion(text=f"yes instance={self.instance} pid={os.getpid()}", input_tokens=10, output_tokens=3)
