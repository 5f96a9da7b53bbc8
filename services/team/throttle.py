"""Login throttling for the password gate (no Streamlit here: the page calls it).

Wrong passwords were free: 40 tries in 38 s, no delay, no log line. Each client (its IP
address, as the server sees it) may fail FREE_FAILURES times; after that every failure
locks it out for twice as long as the last, up to MAX_LOCKOUT_S. Every failure is logged
with the client's address, so an operator sees an attack in the server's log.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 5
FIRST_LOCKOUT_S = 30.0
MAX_LOCKOUT_S = 15 * 60.0
#: A client that has not failed for this long starts afresh.
FORGET_AFTER_S = 3600.0

log = logging.getLogger("shootout.auth")


@dataclass
class _Record:
    failures: int = 0
    locked_until: float = 0.0
    lockout_s: float = 0.0
    last_failure: float = 0.0


class LoginThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}

    def wait_s(self, client: str) -> float:
        """Seconds this client must wait before its next try (0: it may try now)."""
        with self._lock:
            record = self._records.get(client)
            if record is None:
                return 0.0
            return max(0.0, record.locked_until - self._clock())

    def failed(self, client: str) -> float:
        """Record a wrong password; returns the lockout now in force (seconds, 0 for none)."""
        now = self._clock()
        with self._lock:
            record = self._records.get(client)
            if record is None or now - record.last_failure > FORGET_AFTER_S:
                record = self._records[client] = _Record()
            record.failures += 1
            record.last_failure = now
            if record.failures > FREE_FAILURES:
                record.lockout_s = min(
                    MAX_LOCKOUT_S, record.lockout_s * 2 if record.lockout_s else FIRST_LOCKOUT_S
                )
                record.locked_until = now + record.lockout_s
            lockout = record.lockout_s if record.failures > FREE_FAILURES else 0.0
            failures = record.failures
        log.warning(
            "wrong password from %s (%d failures in a row%s)",
            client,
            failures,
            f"; locked out for {lockout:.0f} s" if lockout else "",
        )
        return lockout

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._records.pop(client, None)
        log.info("login from %s", client)


throttle = LoginThrottle()
