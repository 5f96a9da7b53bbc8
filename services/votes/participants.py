"""Who a voter is, as stored: a keyed hash, never the login.

Each participant votes once per exchange, so a vote needs a key that is the same for one person
and different for two. On a team server with OIDC that is the login (the e-mail). A password
login is shared by the whole room (one password per role, and the identity the gate stores is
the client's address, shared behind a NAT), so there it is the login session: each browser that
logged in. With no login at all it is the browser, by the random id the gate keeps in a cookie
(access.BROWSER_COOKIE): two tabs of one browser are one voter, and a reload is the same one.
The same key is who someone is in a team session (services/sessions/identity.py).

The key is an HMAC-SHA256 with the server's secret (SHOOTOUT_SESSION_SECRET): a copy of the
database does not say who voted, and a guessed e-mail cannot be checked against it without the
secret. Without SHOOTOUT_SESSION_SECRET the secret is new in each server process, so after a
restart the same login is a new voter: a team server sets it (docs/team-server.md).
"""

from __future__ import annotations

from services.core.errors import ValidationError
from services.team import access
from services.team.throttle import client_key

_PURPOSE = "voter"


def address_key(address: str | None) -> str | None:
    """The stored key of a client's address (an HMAC, as a voter's): how many ballots came from
    one address, never which. None when the address is unknown. Addresses are grouped as the
    gate's per-client counts group them (`throttle.client_key`): all of loopback is one address
    (a reverse proxy on this host that SHOOTOUT_TRUSTED_PROXIES does not name carries everyone),
    an IPv6 address counts as its /64 (one host holds a whole /64 to rotate through)."""
    return access.keyed_hash("address", client_key(address)) if address else None


def participant_key(
    *, oidc_identity: str | None = None, login_session: str | None = None, browser: str | None = None
) -> str:
    """The stored voter key: from the OIDC login when there is one, else from the password login
    session, else from the browser's session of the app."""
    for kind, value in (("oidc", oidc_identity), ("login", login_session), ("browser", browser)):
        if value:
            return access.keyed_hash(_PURPOSE, f"{kind}:{value}")
    raise ValidationError("A vote needs to know who casts it: log in, or reload the page.")
