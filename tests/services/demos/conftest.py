"""Fixtures of the demo tests: the demo variant of the scripted server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.services.demos.demo_server import DemoServer


@pytest.fixture(scope="session")
def demo_server() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server
