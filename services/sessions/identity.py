"""Who someone is in a session, as a hash, and who may present one.

A participant is the one key the app already has for a person (services/votes/participants.py,
the same key their votes carry): the OIDC login, else the password login's session (each
browser that logged in), else the tab's own session of the app on a server without logins. So
a presenter or follower who reloads the page is the same participant (where there is a login)
and gets their seat back, and a vote and a seat can never disagree about who someone is.

Seat hashes are keyed with the session id, so a session's record cannot be joined with
another's, and with SHOOTOUT_SESSION_SECRET where the operator set one (the participant key
itself is keyed with the server's secret too: a team server sets it, docs/team-server.md).
"""

from __future__ import annotations

import hashlib
import hmac

from services.core.config import get_settings
from services.team.access import Viewer


def identity_hash(session_id: int, participant: str) -> str:
    secret = (get_settings().session_secret or "").encode()
    return hmac.new(
        secret, f"shootout-session\0{session_id}\0{participant}".encode(), hashlib.sha256
    ).hexdigest()


def may_present(viewer: Viewer) -> bool:
    """Operators start sessions; a viewer only where the operator allowed them (by login
    identity in SHOOTOUT_SESSION_PRESENTERS, or `*` for every viewer)."""
    if viewer.is_operator:
        return True
    allowed = get_settings().session_presenters
    return "*" in allowed or viewer.account in allowed
