"""OIDC logins that logged out, so that a logout reaches every page of that login.

Streamlit's OIDC login is a signed cookie (`_streamlit_user`) with no record on the server, and
its logout deletes the cookie in the browser that pressed it, nothing more: another tab's open
page kept acting as the logged-in user, and so did any copy of the cookie, for its 30 days (the
OIDC half of issue 44, item 5; password logins are rows of their own, services/team/access.py).

So the gate (web/gate.py) records each OIDC logout here, as a revoked row of `login_sessions`
(role "oidc", keyed by a hash of the login's cookie, kept past the cookie's own life), closes
that login's open websockets, and refuses the cookie from then on; the pages check it on every
`common.viewer()` too. No Streamlit here: the gate and the pages both ask this module.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from db.models import LoginSession
from db.session import session_scope
from services.team.access import SESSION_RECHECK_S

#: Streamlit's OIDC login cookie; a large one comes in chunks `_streamlit_user__1`, ...
LOGIN_COOKIE = "_streamlit_user"
#: The role of the rows that record an ended OIDC login (never a role anyone logs in with).
ROLE = "oidc"
#: How long an ended login's row is kept: past Streamlit's 30-day cookie, with a margin.
KEEP = timedelta(days=31)

#: Logins found live in the last SESSION_RECHECK_S (every message of every page asks); an
#: ended one stays ended, so it is remembered for good (up to a bound).
_live: dict[str, float] = {}
_ended: set[str] = set()
_lock = threading.Lock()


def login_key(cookies: Mapping[str, str]) -> str | None:
    """A key for one OIDC login: a SHA-256 of Streamlit's signed login cookie as the browser
    sends it (its chunks in order). Streamlit sets the cookie once, when the login comes back
    from the provider, so every request and websocket of that login carries the same; a new
    login gets another. None without the cookie."""
    parts = sorted(
        (name, value)
        for name, value in cookies.items()
        if name == LOGIN_COOKIE or name.startswith(LOGIN_COOKIE + "__")
    )
    if not parts:
        return None
    joined = "\0".join(f"{name}={value}" for name, value in parts)
    return hashlib.sha256(f"oidc\0{joined}".encode("utf-8", "replace")).hexdigest()


def end(key: str, identity: str) -> None:
    """Record that this OIDC login logged out (a second logout of it changes nothing)."""
    now = datetime.now(UTC)
    with _lock:
        _live.pop(key, None)
        _ended.add(key)
    try:
        with session_scope() as db:
            if db.scalar(select(LoginSession.id).where(LoginSession.id_hash == key)) is None:
                db.add(
                    LoginSession(
                        id_hash=key,
                        role=ROLE,
                        identity=identity[:200],
                        password_fingerprint="",
                        created_at=now,
                        expires_at=now + KEEP,
                        revoked_at=now,
                    )
                )
    except IntegrityError:  # the same login's other tab logged out at the same moment
        pass


def ended(key: str | None) -> bool:
    """Whether this OIDC login logged out (on this server, or another sharing the database)."""
    if key is None:
        return False
    with _lock:
        if key in _ended:
            return True
        seen = _live.get(key)
    if seen is not None and time.monotonic() - seen < SESSION_RECHECK_S:
        return False
    with session_scope() as db:
        found = db.scalar(
            select(LoginSession.id).where(
                LoginSession.id_hash == key,
                LoginSession.role == ROLE,
                LoginSession.revoked_at.is_not(None),
            )
        )
    with _lock:
        if len(_live) > 10_000 or len(_ended) > 10_000:  # start afresh rather than grow
            _live.clear()
            _ended.clear()
        if found is None:
            _live[key] = time.monotonic()
        else:
            _ended.add(key)
    return found is not None
