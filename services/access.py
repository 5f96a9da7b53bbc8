"""Who may do what on a shared server: two roles, how a login becomes a session, which hosts
may address the app. No Streamlit and no HTTP framework here: the gate in front of Streamlit
(`web/gate.py`) and the pages both ask this module, so they cannot disagree.

| variable | default | meaning |
|---|---|---|
| SHOOTOUT_OPERATOR_PASSWORD | unset | the operator's password |
| SHOOTOUT_VIEWER_PASSWORD | unset (SHOOTOUT_PASSWORD, its older name) | the viewers' password |
| SHOOTOUT_OPERATOR_GROUP / SHOOTOUT_VIEWER_GROUP | unset | with OIDC (`[auth]` in secrets.toml): the group claim of each role |
| SHOOTOUT_SESSION_SECRET | random per server process | signs session cookies (set it to keep logins across restarts) |
| SHOOTOUT_SESSION_HOURS | 12 | how long a login lasts |
| SHOOTOUT_ALLOW_COMMANDS | unset | `1`: operators may run start/stop command templates from the app (tuning remote or containerised engines; the CLI always may) |
| SHOOTOUT_ALLOWED_HOSTS | loopback names (+ this host's names when bound to all interfaces) | the `Host` values the app answers (DNS rebinding) |

Roles. An **operator** starts and stops the local engines, registers and edits endpoints (with
API key variables), reads paths on the server (GGUF files, JSONL files), points the server at
Prometheus and dcgm-exporter URLs, records telemetry, imports and deletes runs.
A **viewer** watches, sends prompts, runs benchmarks and demos within the per-viewer limits, votes,
writes notes and exports. With nothing configured, a client on the loopback interface is the
operator of its single-user app (as before roles existed) and any other client is a viewer.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import secrets
import socket
from dataclasses import dataclass
from typing import Literal

from itsdangerous import BadSignature, URLSafeTimedSerializer

from services.errors import ValidationError

Role = Literal["operator", "viewer"]
Action = Literal[
    "manage_engines", "read_server_paths", "fetch_urls", "import_runs", "delete_runs", "record_telemetry"
]

SESSION_COOKIE = "shootout_session"
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
    #: Whose limits apply: the OIDC e-mail, else the client's address.
    identity: str

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"

    def may(self, action: Action) -> bool:
        return self.is_operator or action not in OPERATOR_ONLY


def commands_allowed(viewer: Viewer) -> bool:
    """Whether this viewer may have the server run command templates or raw engine flags: an
    operator, on a server started with SHOOTOUT_ALLOW_COMMANDS=1 (off by default: a template
    is a program run on the server)."""
    return viewer.is_operator and os.environ.get("SHOOTOUT_ALLOW_COMMANDS", "").strip() == "1"


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
    env = os.environ.get
    return AuthConfig(
        operator_password=env("SHOOTOUT_OPERATOR_PASSWORD") or None,
        viewer_password=env("SHOOTOUT_VIEWER_PASSWORD") or env("SHOOTOUT_PASSWORD") or None,
        operator_group=env("SHOOTOUT_OPERATOR_GROUP") or None,
        viewer_group=env("SHOOTOUT_VIEWER_GROUP") or None,
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


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(
        os.environ.get("SHOOTOUT_SESSION_SECRET") or _PROCESS_SECRET, salt="shootout-session"
    )


def session_max_age_s() -> int:
    try:
        hours = float(os.environ.get("SHOOTOUT_SESSION_HOURS") or 12)
    except ValueError:
        hours = 12
    return max(60, int(hours * 3600))


def issue_session(role: Role, identity: str) -> str:
    return _serializer().dumps({"role": role, "identity": identity})


def read_session(token: str | None) -> Viewer | None:
    """The viewer a session cookie names, or None when it is missing, forged or expired."""
    if not token:
        return None
    try:
        data = _serializer().loads(token, max_age=session_max_age_s())
    except BadSignature:  # also SignatureExpired, its subclass
        return None
    if not isinstance(data, dict) or data.get("role") not in ("operator", "viewer"):
        return None
    return Viewer(role=data["role"], identity=str(data.get("identity") or "unknown"))


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
    extra = {
        h.strip().lower() for h in os.environ.get("SHOOTOUT_ALLOWED_HOSTS", "").split(",") if h.strip()
    }
    hosts |= extra
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
    """Where to go after login: only a path on this app (never `//evil.example` or a scheme)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
