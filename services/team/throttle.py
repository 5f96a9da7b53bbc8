"""Login throttling for the password gate (no Streamlit here: the gate calls it).

Wrong passwords were free: 40 tries in 38 s, no delay, no log line. Each client may fail
FREE_FAILURES times; after that every failure locks it out for twice as long as the last, up to
MAX_LOCKOUT_S. Every failure is logged with the client's address, so an operator sees an attack
in the server's log.

One counter per client, whatever role it guesses, and only time clears it (issue 44): a right
viewer password used to wipe the failures, so a viewer could guess the operator's password 60
times in a second. A client is its address as `client_key` groups it: all of loopback
(127.0.0.0/8, ::1) is one client, and an IPv6 address counts as its /64 (one host holds a whole
/64 to rotate through). Right passwords are throttled too (`login_wait_s`): a burst of
LOGIN_BURST, then one every 1/LOGINS_PER_S seconds, so a script cannot mint sessions by the
hundred a second.
"""

from __future__ import annotations

import ipaddress
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
#: Right passwords one client may use at once: a room of 100 behind one NAT logging in together,
#: with some retries; after that LOGINS_PER_S.
LOGIN_BURST = 150
LOGINS_PER_S = 1.0
#: Records kept at most: an attacker with many addresses cannot grow this without bound.
MAX_CLIENTS = 100_000

log = logging.getLogger("shootout.auth")


def client_key(address: str | None) -> str:
    """The client an address stands for, for every per-client count of the gate: loopback is
    one client, an IPv6 address its /64, an IPv4-mapped IPv6 address its IPv4 address."""
    if not address:
        return "unknown"
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]").split("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass
class _Record:
    failures: int = 0
    locked_until: float = 0.0
    lockout_s: float = 0.0
    last_failure: float = 0.0


@dataclass
class _Bucket:
    tokens: float
    at: float


class LoginThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}
        self._logins: dict[str, _Bucket] = {}

    def wait_s(self, client: str) -> float:
        """Seconds this client must wait before its next try (0: it may try now)."""
        with self._lock:
            record = self._records.get(client_key(client))
            if record is None:
                return 0.0
            return max(0.0, record.locked_until - self._clock())

    def failed(self, client: str) -> float:
        """Record a wrong password; returns the lockout now in force (seconds, 0 for none)."""
        now = self._clock()
        key = client_key(client)
        with self._lock:
            record = self._records.get(key)
            if record is None or now - record.last_failure > FORGET_AFTER_S:
                if len(self._records) >= MAX_CLIENTS:
                    self._forget_old(now)
                record = self._records[key] = _Record()
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

    def _forget_old(self, now: float) -> None:
        self._records = {
            k: r for k, r in self._records.items() if now - r.last_failure <= FORGET_AFTER_S
        }
        if len(self._records) >= MAX_CLIENTS:  # all recent: drop the oldest half
            kept = sorted(self._records.items(), key=lambda item: item[1].last_failure)
            self._records = dict(kept[len(kept) // 2 :])

    def login_wait_s(self, client: str) -> float:
        """Take one right-password login for this client: 0 when it may log in now, else the
        seconds until it may. A right password does not clear the failures: only time does."""
        now = self._clock()
        key = client_key(client)
        with self._lock:
            bucket = self._logins.get(key)
            if bucket is None:
                if len(self._logins) >= MAX_CLIENTS:
                    self._logins.clear()  # all of them full again in LOGIN_BURST / LOGINS_PER_S
                bucket = self._logins[key] = _Bucket(float(LOGIN_BURST), now)
            bucket.tokens = min(float(LOGIN_BURST), bucket.tokens + (now - bucket.at) * LOGINS_PER_S)
            bucket.at = now
            if bucket.tokens < 1.0:
                wait = (1.0 - bucket.tokens) / LOGINS_PER_S
                log.warning("too many logins from %s: refused for %.0f s", client, wait)
                return wait
            bucket.tokens -= 1.0
        log.info("login from %s", client)
        return 0.0


throttle = LoginThrottle()
