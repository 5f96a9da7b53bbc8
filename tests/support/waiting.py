"""Polling for a condition in tests that watch a worker, a recorder or a detached process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout_s: float = 30.0, step_s: float = 0.05) -> T:
    """Call `predicate` until it returns something truthy and return that; fail the test when
    `timeout_s` passes first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for the condition")
