"""Who may do what on a shared server: two roles, how a login becomes a session, which hosts
may address the app. No Streamlit and no HTTP framework here: the gate in front of Streamlit
(`web/gate.py`) and the pages both ask this module, so they cannot disagree.

Its settings (passwords, OIDC groups, session secret and length, allowed hosts and origins,
trusted proxies, command templates) are SHOOTOUT_* attributes of services/core/config `Settings`;
their defaults and meanings are in docs/configuration.md.

Roles. An **operator** starts and stops the local engines, registers and edits endpoints (with
API key variables), reads paths on the server (GGUF files, JSONL files), points the server at
Prometheus and dcgm-exporter URLs, records telemetry, imports and deletes runs.
A **viewer** watches, sends prompts, runs benchmarks and demos within the per-viewer limits, votes,
writes notes and exports. With nothing configured, a client on the loopback interface is the
operator of its single-user app (as before roles existed) and any other client is a viewer.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from urllib.parse import urlsplit

from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import delete, select, update

from db.models import LoginSession
from db.session import session_scope
from services.core.config import get_settings
from services.core.errors import ValidationError

Role = Literal["operator", "viewer"]
Action = Literal[
    "manage_engines", "read_server_paths", "fetch_urls", "import_runs", "delete_runs", "record_telemetry"
]

SESSION_COOKIE = "shootout_session"
#: Between a password login's address and its session's hash in `Viewer.identity`.
LOGIN_PART = " login:"
#: A random id per browser, set by the gate (web/gate.py) on every server, with logins or
#: without: who a participant is where no login tells people apart (services/votes/participants.py),
#: and what lets a reloaded tab take its session seat back.
BROWSER_COOKIE = "shootout_browser"
BROWSER_COOKIE_MAX_AGE_S = 400 * 24 * 3600  # browsers cap a cookie's life at 400 days
#: Operators may do everything; viewers none of these.
OPERATOR_ONLY: frozenset[Action] = frozenset(
    (
        "manage_engines",
        "read_server_paths",
        "fetch_urls",
        "import_runs",
        "delete_runs",
        "record_telemetry",
    )
)
_WHAT = {
    "manage_engines": "start, stop, add, edit or remove engines",
    "read_server_paths": "read files on the server by path",
    # The server fetches what it is pointed at (Prometheus, dcgm-exporter): a viewer's URL would
    # make it a proxy into the network it sits in.
    "fetch_urls": "point the server at URLs of your choosing",
    "import_runs": "import results",
    "delete_runs": "delete runs",
    "record_telemetry": "record telemetry",
}

#: One per server process unless the operator sets SHOOTOUT_SESSION_SECRET: the gate and the
#: pages run in the same process, so both see the same value.
_PROCESS_SECRET = secrets.token_urlsafe(32)


class PermissionDenied(ValidationError):
    """A viewer asked for an operator's action."""


@dataclass(frozen=True)
class Viewer:
    role: Role
    #: Who this is, for a viewer's limits and the runs they own: the OIDC login (its e-mail,
    #: else its subject), else the password login's session (`login_identity`: a room behind
    #: one NAT is many people, each with a share of their own), else, with no login
    #: configured, the client's address (a trusted proxy's X-Forwarded-For, `client_of`).
    identity: str

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"

    @property
    def account(self) -> str:
        """The identity without a password login's session part: the OIDC login, or the
        address a password login came from (what SHOOTOUT_SESSION_PRESENTERS names)."""
        return self.identity.split(LOGIN_PART, 1)[0]

    def may(self, action: Action) -> bool:
        return self.is_operator or action not in OPERATOR_ONLY


def commands_allowed(viewer: Viewer) -> bool:
    """Whether this viewer may have the server run command templates or raw engine flags: an
    operator, on a server started with SHOOTOUT_ALLOW_COMMANDS=1 (off by default: a template
    is a program run on the server)."""
    return viewer.is_operator and get_settings().allow_commands


def describe(action: Action) -> str:
    return _WHAT[action]


def require(viewer: Viewer, action: Action) -> None:
    if not viewer.may(action):
        raise PermissionDenied(
            f"Only an operator may {_WHAT[action]} on this server; you are logged in as a viewer."
        )


@dataclass(frozen=True)
class AuthConfig:
    operator_password: str | None
    viewer_password: str | None
    operator_group: str | None
    viewer_group: str | None

    @property
    def passwords(self) -> bool:
        return bool(self.operator_password or self.viewer_password)


def auth_config() -> AuthConfig:
    settings = get_settings()
    return AuthConfig(
        operator_password=settings.operator_password,
        viewer_password=settings.viewer_password,
        operator_group=settings.operator_group,
        viewer_group=settings.viewer_group,
    )


def role_for_password(typed: str, config: AuthConfig | None = None) -> Role | None:
    """The role a typed password opens, compared in constant time; None for a wrong one."""
    config = config or auth_config()
    typed_bytes = typed.encode()
    found: Role | None = None
    # Both comparisons always run, so the time taken does not say which password was close.
    for role, password in (("viewer", config.viewer_password), ("operator", config.operator_password)):
        if password and secrets.compare_digest(typed_bytes, password.encode()):
            found = role  # type: ignore[assignment]  # the tuple's literal strings are Role values
    return found


def role_for_groups(groups: object, config: AuthConfig | None = None) -> Role | None:
    """The role of an OIDC user from the group claim; with no groups configured every logged-in
    user is a viewer (the operator runs the CLI on the server, or sets SHOOTOUT_OPERATOR_GROUP)."""
    config = config or auth_config()
    names = (
        {groups}
        if isinstance(groups, str)
        else set(groups)
        if isinstance(groups, list | tuple)
        else set()
    )
    if config.operator_group and config.operator_group in names:
        return "operator"
    if config.viewer_group:
        return "viewer" if config.viewer_group in names else None
    return "viewer"


def _secret() -> str:
    return get_settings().session_secret or _PROCESS_SECRET


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(_secret(), salt="shootout-session")


def _mac(purpose: str, value: str) -> str:
    return hmac.new(_secret().encode(), f"{purpose}\0{value}".encode(), hashlib.sha256).hexdigest()


def keyed_hash(purpose: str, value: str) -> str:
    """An HMAC-SHA256 of `value` with the server's secret (hex): a stable key for a login that
    never stores the login (a voter), and worthless without the secret."""
    return _mac(purpose, value)


def session_max_age_s() -> int:
    return max(60, int(get_settings().session_hours * 3600))


def password_fingerprint(role: Role, config: AuthConfig | None = None) -> str:
    """What a session remembers of its role's password: an HMAC with the signing secret (never
    the password), so a changed password no longer matches and ends the sessions it opened."""
    config = config or auth_config()
    password = config.operator_password if role == "operator" else config.viewer_password
    return _mac("password", password or "")


def _id_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def issue_session(role: Role, identity: str) -> str:
    """A new login session: stored (its id's hash only) and returned as the signed cookie value."""
    session_id = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    with session_scope() as db:
        # Rows of expired sessions say nothing any more; a day's grace keeps them for a look.
        db.execute(delete(LoginSession).where(LoginSession.expires_at < now - timedelta(days=1)))
        db.add(
            LoginSession(
                id_hash=_id_hash(session_id),
                role=role,
                identity=identity[:200],
                password_fingerprint=password_fingerprint(role),
                created_at=now,
                expires_at=now + timedelta(seconds=session_max_age_s()),
            )
        )
    return _serializer().dumps({"sid": session_id})


def live_session_identities() -> list[str]:
    """The identity of every password login that is neither revoked nor expired (the gate caps
    them per client)."""
    with session_scope() as db:
        return list(
            db.scalars(
                select(LoginSession.identity).where(
                    LoginSession.revoked_at.is_(None), LoginSession.expires_at > datetime.now(UTC)
                )
            )
        )


def new_browser_id() -> str:
    return secrets.token_urlsafe(24)


def browser_id(value: str | None) -> str | None:
    """The browser id a cookie carries, None for anything that is not one the gate would set."""
    if not value or len(value) != 32:
        return None
    return value if all(c.isascii() and (c.isalnum() or c in "-_") for c in value) else None


def session_id(token: str | None) -> str | None:
    """The session id a cookie carries when its signature holds and it has not expired."""
    if not token:
        return None
    try:
        data = _serializer().loads(token, max_age=session_max_age_s())
    except BadSignature:  # also SignatureExpired, its subclass
        return None
    sid = data.get("sid") if isinstance(data, dict) else None
    return sid if isinstance(sid, str) and sid else None


@dataclass(frozen=True)
class _Checked:
    viewer: Viewer
    fingerprint: str
    expires: datetime
    checked_at: float


#: Sessions found valid in the last SESSION_RECHECK_S, by id hash: a page load makes dozens of
#: requests, each of which would otherwise read the database (about 2 ms each). A logout or
#: "log out everywhere" in this process clears it at once; one made by another server process
#: sharing the database takes effect here within SESSION_RECHECK_S.
SESSION_RECHECK_S = 1.0
_checked: dict[str, _Checked] = {}
_checked_lock = threading.Lock()


def _forget_checked() -> None:
    with _checked_lock:
        _checked.clear()


def read_session(token: str | None) -> Viewer | None:
    """The viewer a session cookie names, or None when it is missing, forged, expired, logged
    out, or opened with a password that has changed since."""
    sid = session_id(token)
    if sid is None:
        return None
    key = _id_hash(sid)
    now = datetime.now(UTC)
    with _checked_lock:
        seen = _checked.get(key)
    if (
        seen is not None
        and time.monotonic() - seen.checked_at < SESSION_RECHECK_S
        and seen.expires > now
        and hmac.compare_digest(seen.fingerprint, password_fingerprint(seen.viewer.role))
    ):
        return seen.viewer
    with session_scope() as db:
        row = db.scalars(select(LoginSession).where(LoginSession.id_hash == key)).first()
        if row is None or row.revoked_at is not None or row.role not in ("operator", "viewer"):
            return None
        expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=UTC)
        if expires <= now:
            return None
        role: Role = "operator" if row.role == "operator" else "viewer"
        if not hmac.compare_digest(row.password_fingerprint, password_fingerprint(role)):
            return None
        found = Viewer(role=role, identity=login_identity(row.identity or "unknown", key))
    with _checked_lock:
        if len(_checked) > 10_000:  # many logins within a second: start afresh rather than grow
            _checked.clear()
        _checked[key] = _Checked(found, row.password_fingerprint, expires, time.monotonic())
    return found


def login_identity(stored: str, id_hash: str) -> str:
    """A password login's viewer: its own session, so two logins from one address (a room behind
    one NAT) have a share each of the per-viewer limits, and own their runs apart. It keeps the
    address it logged in from, for the log, then the start of the session's stored hash
    ("ip:10.0.0.7 login:1f2e..."), never the session id (it is stored as a run's owner). What
    bounds one person's many logins is the login throttle and the server's own limits."""
    return f"{stored}{LOGIN_PART}{id_hash[:16]}"


def end_session(token: str | None) -> bool:
    """Log this session out (True when there was one to end)."""
    sid = session_id(token)
    if sid is None:
        return False
    _forget_checked()
    with session_scope() as db:
        ended = db.execute(
            update(LoginSession)
            .where(LoginSession.id_hash == _id_hash(sid), LoginSession.revoked_at.is_(None))
            .values(revoked_at=datetime.now(UTC))
        )
    _forget_checked()  # again: a check that read the row before the update may have cached it
    return bool(getattr(ended, "rowcount", 0))


def end_all_sessions(by: Viewer) -> int:
    """Log out everywhere: ends every password login on this server, the caller's too (a
    leaked cookie of either role stops working at once). Operators only."""
    if not by.is_operator:
        raise PermissionDenied("Only an operator may log out every session on this server.")
    _forget_checked()
    with session_scope() as db:
        ended = db.execute(
            update(LoginSession)
            .where(LoginSession.revoked_at.is_(None))
            .values(revoked_at=datetime.now(UTC))
        )
    _forget_checked()  # again: a check that read the row before the update may have cached it
    return int(getattr(ended, "rowcount", 0) or 0)


def form_token(token: str | None, purpose: str) -> str:
    """A token for a form of this session (logout): a page of another origin cannot read it, and
    it is worthless with any other session."""
    sid = session_id(token)
    return _mac(f"form:{purpose}", sid) if sid else ""


def form_token_valid(token: str | None, purpose: str, supplied: str | None) -> bool:
    expected = form_token(token, purpose)
    return bool(expected and supplied) and hmac.compare_digest(expected, supplied or "")


def websocket_secret(token: str | None) -> bytes | None:
    """The 16 bytes the websocket handshake must present (as Streamlit's XSRF token) for this
    session: derived from the session id, so a value another port planted in the readable
    `_streamlit_xsrf` cookie, or one of another login, does not match."""
    sid = session_id(token)
    return bytes.fromhex(_mac("websocket", sid))[:16] if sid else None


def is_loopback(address: str | None) -> bool:
    if not address:
        return False
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return address == "localhost"


def anonymous_viewer(client_address: str | None) -> Viewer:
    """With no login configured: the loopback user runs the app, everyone else watches."""
    if is_loopback(client_address):
        return Viewer(role="operator", identity="local")
    return Viewer(role="viewer", identity=f"ip:{client_address or 'unknown'}")


def login_required(config: AuthConfig | None = None, oidc: bool = False) -> bool:
    return oidc or (config or auth_config()).passwords


def allowed_hosts(bind_address: str | None) -> set[str]:
    """Host names (without port) this app answers to. Anything else is a DNS-rebinding attempt
    or a misconfigured proxy: SHOOTOUT_ALLOWED_HOSTS adds names (comma-separated, `*` for any)."""
    hosts = {"localhost", "127.0.0.1", "::1", "[::1]"}
    hosts |= set(get_settings().allowed_hosts)
    bind = (bind_address or "").strip().lower()
    if bind and bind not in ("0.0.0.0", "::"):
        hosts.add(bind)
    elif bind:
        hosts |= _this_machine()
    return hosts


@functools.cache
def _this_machine() -> frozenset[str]:
    """This machine's own names and addresses: the expected hosts of an app bound to every
    interface. Looked up once per process: the gate asks on every request, and getfqdn and
    getaddrinfo may each wait on DNS."""
    found: set[str] = set()
    for name in {socket.gethostname(), socket.getfqdn()}:
        found.add(name.lower())
        try:
            found |= {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
        except OSError:
            pass
    return frozenset(found)


def host_allowed(host_header: str | None, hosts: set[str]) -> bool:
    if "*" in hosts:
        return True
    if not host_header:
        return False
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[: host.find("]") + 1]
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return host in hosts


def safe_next(target: str | None) -> str:
    """Where to go after login: only a plain path on this app. Browsers drop tabs and newlines
    from a URL and read a backslash as a slash, so `/<TAB>/evil.example` would land on
    `//evil.example`: any control character, whitespace or backslash, and anything that parses
    with a scheme or a host, sends the user to `/` instead."""
    if not target or not target.startswith("/") or "\\" in target:
        return "/"
    if any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in target):
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or target.startswith("//"):
        return "/"
    return target


def _port(scheme: str, port: int | None) -> int:
    return port if port is not None else (443 if scheme == "https" else 80)


def _origin_parts(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url.strip().lower())
        port = parts.port
    except ValueError:  # a port that is no number
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, _port(parts.scheme, port)


def allowed_origins() -> set[str]:
    """SHOOTOUT_ALLOWED_ORIGINS: origins a proxy serves the app at, when the `Host` the app sees
    is not the one the browser typed."""
    return set(get_settings().allowed_origins)


def origin_allowed(origin: str, scheme: str, host_header: str | None) -> bool:
    """Whether a browser's `Origin` is this app's own: scheme, host and port equal to the address
    the request came to (`scheme://Host`), or listed in SHOOTOUT_ALLOWED_ORIGINS. Host names alone
    are not enough: browsers send this app's cookies to every port of its host, so a page served
    from another port of it (any local program) would otherwise pass."""
    seen = _origin_parts(origin)
    if seen is None:
        return False
    served_scheme = "https" if scheme in ("https", "wss") else "http"
    if host_header and _origin_parts(f"{served_scheme}://{host_header}") == seen:
        return True
    return any(_origin_parts(allowed) == seen for allowed in allowed_origins())


def trusted_proxies() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return list(get_settings().trusted_proxies)


def _trusted(address: str, networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]").split("%")[0])
    except ValueError:
        return False
    return any(ip in network for network in networks)


def is_trusted_proxy(address: str | None) -> bool:
    """Whether this peer is one of SHOOTOUT_TRUSTED_PROXIES (its connections carry many clients)."""
    networks = trusted_proxies()
    return bool(address and networks and _trusted(address, networks))


@dataclass(frozen=True)
class Client:
    """Who is at the other end: the address the login lockout, the log and a viewer's share
    follow, and the scheme the browser used (for the Origin check)."""

    address: str | None
    scheme: str


def client_of(
    peer: str | None, scheme: str, forwarded_for: str | None, forwarded_proto: str | None
) -> Client:
    """The socket's peer, unless it is a proxy the operator named in SHOOTOUT_TRUSTED_PROXIES:
    then the nearest address in `X-Forwarded-For` that is not such a proxy (the ones left of it
    the client wrote itself), and `X-Forwarded-Proto`. Loopback is not trusted by default: every
    local program, and any client through an unconfigured local proxy, is loopback."""
    networks = trusted_proxies()
    if not peer or not networks or not _trusted(peer, networks):
        return Client(peer, scheme)
    address = peer
    for hop in reversed([h.strip() for h in (forwarded_for or "").split(",") if h.strip()]):
        address = hop
        if not _trusted(hop, networks):
            break
    proto = (forwarded_proto or "").split(",")[0].strip().lower()
    if proto in ("http", "https"):
        scheme = {"http": "ws", "https": "wss"}[proto] if scheme in ("ws", "wss") else proto
    return Client(address, scheme)
