"""Fixtures shared by the model tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.models.fake_openai_server import FakeOpenAIServer, ServerConfig


@pytest.fixture()
def serve() -> Iterator[Any]:
    """``serve(**config)`` starts a fake OpenAI-compatible server; all stop after the test."""
    servers: list[FakeOpenAIServer] = []

    def start(**config: Any) -> FakeOpenAIServer:
        srv = FakeOpenAIServer(ServerConfig(**config)).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()
