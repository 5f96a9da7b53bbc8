"""Who someone is in a session, as a hash, and who may start one.

A login with a personal identity (an OIDC e-mail) is that person in every tab. Where the
identity is shared (the loopback user "local" of a server without logins, a password login's
"ip:<address>", which every browser behind one address shares), each browser tab is its own
participant through a random token the page keeps: otherwise a room behind one NAT, or three
browsers on one machine, would be one participant.

Hashes are keyed with the session id, so a session's record cannot be joined with another's,
and with SHOOTOUT_SESSION_SECRET where the operator set one, so a copy of the database does not
give away who took part to someone who tries e-mail addresses. (Not the random per-process
secret used when it is unset: a restart would turn every seat into a stranger.)
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from services.core.config import get_settings
from services.team.access import Viewer

#: Identities that name an address or the machine rather than a person.
_SHARED_PREFIXES = ("ip:",)
_SHARED = frozenset({"local", "unknown", ""})


def new_tab_token() -> str:
    return secrets.token_urlsafe(16)


def personal(identity: str) -> bool:
    return identity not in _SHARED and not identity.startswith(_SHARED_PREFIXES)


def participant_key(viewer: Viewer, tab_token: str) -> str:
    """The identity a session counts: the login's own where it is personal, else this tab's."""
    return f"login:{viewer.identity}" if personal(viewer.identity) else f"tab:{tab_token}"


def identity_hash(session_id: int, key: str) -> str:
    secret = (get_settings().session_secret or "").encode()
    return hmac.new(
        secret, f"shootout-session\0{session_id}\0{key}".encode(), hashlib.sha256
    ).hexdigest()


def may_present(viewer: Viewer) -> bool:
    """Operators start sessions; a viewer only where the operator allowed them (by login
    identity in SHOOTOUT_SESSION_PRESENTERS, or `*` for every viewer)."""
    if viewer.is_operator:
        return True
    allowed = get_settings().session_presenters
    return "*" in allowed or viewer.identity in allowed
