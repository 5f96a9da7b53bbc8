"""OIDC logins that logged out, so that a logout reaches every page of that login.

Streamlit's OIDC login is a signed cookie (`_streamlit_user`) with no record on the server, and
its logout deletes the cookie in the browser that pressed it, nothing more: another tab's open
page kept acting as the logged-in user, and so did any copy of the cookie, for its 30 days (the
OIDC half of issue 44, item 5; password logins are rows of their own, services/team/access.py).

So the gate (web/gate.py) records each OIDC logout here, as a revoked row of `login_sessions`
(role "oidc", keyed by a hash of the cookies Streamlit reads for that login, web/oidc_cookie.py, kept
past the cookie's own life), closes that login's open websockets, and refuses the cookie from
then on; the pages check it on every `common.viewer()` too. No Streamlit here: the gate and
the pages both ask this module.
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

#: Streamlit's OIDC login cookie; a large one comes in chunks `_streamlit_user_1`, ... (web/oidc_cookie.py)
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


def login_key(read: Mapping[str, str]) -> str | None:
    """A key for one OIDC login: a SHA-256 of the cookies Streamlit's reader read for it, name
    and value (web/oidc_cookie.py notes them: the signed login cookie and its chunks, nothing else).
    Streamlit sets them once, when the login comes back from the provider, so every request and
    websocket of that login carries the same; a new login gets others. None without the cookie."""
    if LOGIN_COOKIE not in read:
        return None
    joined = "\0".join(f"{name}={value}" for name, value in sorted(read.items()))
    return hashlib.sha256(f"oidc\0{joined}".encode("utf-8", "replace")).hexdigest()


def end(key: str, identity: str) -> None:
    """Record that this OIDC login logged out (a second logout of it changes nothing)."""
    now = datetime.now(UTC)
    with _lock:
        _live.pop(key, None)
        _ended.add(key)
    try:
        with session_scope() as db:
            row = db.scalars(select(LoginSession).where(LoginSession.id_hash == key)).first()
            if row is None:
                db.add(_row(key, identity, now, revoked=True))
            elif row.revoked_at is None:  # a login seen live before (`ended`): end it now
                row.revoked_at = now
    except IntegrityError:  # the same login's other tab logged out at the same moment
        pass


def _row(key: str, identity: str, now: datetime, *, revoked: bool) -> LoginSession:
    return LoginSession(
        id_hash=key,
        role=ROLE,
        identity=f"oidc:{identity}"[:200],
        password_fingerprint="",
        created_at=now,
        expires_at=now + KEEP,
        revoked_at=now if revoked else None,
    )


def forget_live() -> None:
    """Forget which logins this process found live: after "log out everywhere" (which revokes
    every row, these too), the next check of each reads the database again."""
    with _lock:
        _live.clear()


def ended(key: str | None, identity: str | None = None) -> bool:
    """Whether this OIDC login logged out (on this server, or another sharing the database).

    With `identity` (the gate, once it checked the cookie's signature), a login seen for the
    first time gets a live row of its own, so that "log out everywhere", which revokes every
    row, ends the OIDC logins it has seen as well as the password ones."""
    if key is None:
        return False
    with _lock:
        if key in _ended:
            return True
        seen = _live.get(key)
    if seen is not None and time.monotonic() - seen < SESSION_RECHECK_S:
        return False
    try:
        with session_scope() as db:
            row = db.execute(
                select(LoginSession.revoked_at).where(
                    LoginSession.id_hash == key, LoginSession.role == ROLE
                )
            ).first()
            if row is None and identity is not None:
                db.add(_row(key, identity, datetime.now(UTC), revoked=False))
    except IntegrityError:  # another request of this login recorded it at the same moment
        row = None
    found = row is not None and row[0] is not None
    with _lock:
        if len(_live) > 10_000 or len(_ended) > 10_000:  # start afresh rather than grow
            _live.clear()
            _ended.clear()
        if not found:
            _live[key] = time.monotonic()
        else:
            _ended.add(key)
    return found
