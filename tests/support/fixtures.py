"""Pytest fixtures around the scripted server (imported by tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.scripted_server import ScriptedServer


@pytest.fixture(scope="session")
def scripted_server() -> Iterator[ScriptedServer]:
    """One scripted server process for the whole test session; pick a scenario per request
    through the model name (`scripted_server.model(ttft=50, fault="cut")`)."""
    with ScriptedServer() as server:
        yield server
