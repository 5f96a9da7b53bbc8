"""Issue 20: wrong passwords were free (40 tries in 38 s, no log line)."""

from __future__ import annotations

import logging

import pytest

from services.team.throttle import FIRST_LOCKOUT_S, FREE_FAILURES, LoginThrottle


def test_failures_lock_a_client_out_for_longer_each_time(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="shootout.auth")
    for _ in range(FREE_FAILURES):
        assert throttle.failed("10.0.0.9") == 0.0
    assert throttle.wait_s("10.0.0.9") == 0.0
    assert throttle.failed("10.0.0.9") == FIRST_LOCKOUT_S
    assert throttle.wait_s("10.0.0.9") == FIRST_LOCKOUT_S
    assert throttle.wait_s("10.0.0.8") == 0.0  # others are not punished
    now[0] += FIRST_LOCKOUT_S
    assert throttle.failed("10.0.0.9") == 2 * FIRST_LOCKOUT_S
    assert (
        sum("wrong password from 10.0.0.9" in r.getMessage() for r in caplog.records)
        == FREE_FAILURES + 2
    )
    throttle.succeeded("10.0.0.9")
    assert throttle.wait_s("10.0.0.9") == 0.0
