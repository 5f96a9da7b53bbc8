"""Issue 20: wrong passwords were free (40 tries in 38 s, no log line)."""

from __future__ import annotations

import logging

import pytest

from services.team.throttle import (
    FIRST_LOCKOUT_S,
    FORGET_AFTER_S,
    FREE_FAILURES,
    LOGIN_BURST,
    LOGINS_PER_S,
    LoginThrottle,
    client_key,
)


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
    # A right password (of any role) clears nothing: only time does (issue 44).
    assert throttle.login_wait_s("10.0.0.9") == 0.0
    assert throttle.wait_s("10.0.0.9") == 2 * FIRST_LOCKOUT_S
    now[0] += FORGET_AFTER_S + 1
    assert throttle.failed("10.0.0.9") == 0.0  # forgotten after an hour without a failure


def test_a_client_is_all_of_loopback_or_an_ipv6_64() -> None:
    """Issue 44: 127.0.0.2 and ::1 were other clients than 127.0.0.1, and each address of an
    IPv6 /64 its own."""
    assert {client_key(a) for a in ("127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1")} == {
        "loopback"
    }
    assert client_key("2001:db8:1:2::5") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::5") != client_key("2001:db8:1:2::5")
    assert client_key("::ffff:10.0.0.9") == client_key("10.0.0.9") == "10.0.0.9"
    assert client_key("10.0.0.9") != client_key("10.0.0.8")
    now = [0.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    for i in range(FREE_FAILURES):
        throttle.failed(f"2001:db8::{i + 1}")
    assert throttle.failed("2001:db8::ffff") == FIRST_LOCKOUT_S
    assert throttle.wait_s("2001:db8::1234") == FIRST_LOCKOUT_S


def test_right_passwords_are_throttled_after_a_burst() -> None:
    """Issue 44: 300 logins in 2.3 s, each kept a day."""
    now = [0.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    assert all(throttle.login_wait_s("10.0.0.9") == 0.0 for _ in range(LOGIN_BURST))
    assert throttle.login_wait_s("10.0.0.9") == pytest.approx(1 / LOGINS_PER_S)
    assert throttle.login_wait_s("10.0.0.8") == 0.0  # others are not punished
    now[0] += 1 / LOGINS_PER_S
    assert throttle.login_wait_s("10.0.0.9") == 0.0
