"""Pytest fixtures over the loopback provider servers; import them into a test module
(``from tests.fakes.fixtures import fake_provider``) to use them."""

from __future__ import annotations

import pytest

from medscope.testing.providers import FakeProvider


@pytest.fixture
def fake_provider():
    """A factory: ``fake_provider("openai" | "anthropic" | "gemini", responder=..., ...)``;
    every server it made is closed after the test."""
    made: list[FakeProvider] = []

    def make(wire: str, **kwargs) -> FakeProvider:
        server = FakeProvider(wire, **kwargs)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()
