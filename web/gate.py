"""The gate in front of Streamlit: nothing of the app answers before a login.

A password form inside the Streamlit script came too late: the browser had already opened the
websocket, so a client that never logged in could take its session id and PUT 150 MB files to
`/_stcore/upload_file/...` (all accepted, held in memory), and read `/_stcore/metrics` and
`/_stcore/host-config`. This ASGI middleware runs before Streamlit's own routes, for HTTP and
websocket alike: the login is a plain HTML form served here, the session a signed cookie
(`services.team.access`), and every other path needs that cookie. It also checks the `Host` header
(DNS rebinding) and the `Origin` of websockets and of requests that change state: scheme, host and
port, since browsers send cookies to every port of a host.

A login is a row of `login_sessions` (`services.team.access`): logout (a POST with a token of the
session), "log out everywhere" (operators) and a changed password end it. The websocket's token
(Streamlit's XSRF token, which its frontend reads from the `_streamlit_xsrf` cookie) is derived from
that session and checked here, so a value another port plants in that readable cookie opens nothing.
`web/login.py` serves the login and logout forms; `web/asgi.py` holds the pieces both share.
`web/guard.py` holds what works around the gate: uvicorn's proxy headers off (the gate trusts only
SHOOTOUT_TRUSTED_PROXIES), connections that do not finish their headers or bodies in time closed,
connections per client capped, and the frame headers on every answer. `web/sockets.py` closes the
websockets of logins that have ended.

Open before login: `/login`, `/logout`, `/_stcore/health` (load balancers), and with OIDC the
routes of Streamlit's own login flow (`/auth/login`, `/oauth2callback`, `/auth/logout`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from urllib.parse import quote

from services.team import access, limits, oidc_logins
from web import guard, oidc_cookie
from web.asgi import (
    XSRF_COOKIE,
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    is_https,
    request_cookies,
    request_headers,
    respond,
    xsrf_bytes,
    xsrf_cookie,
    xsrf_value,
)
from web.login import _login, _logout
from web.sockets import LiveSocket, oidc_login_holds, sockets

log = logging.getLogger("shootout.gate")

OPEN_PATHS = frozenset({"/login", "/logout", "/_stcore/health", "/favicon.ico"})
OIDC_PATHS = frozenset({"/auth/login", "/auth/logout", "/oauth2callback"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: An upload that does not say its size counts as Streamlit's largest (its default 200 MB).
UNKNOWN_UPLOAD_SIZE = 200 * 1024 * 1024


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return client[0] if client else None


def _oidc_configured() -> bool:
    try:
        # Streamlit internals, used in its server only: the gate imports without Streamlit.
        from streamlit.runtime.secrets import secrets_singleton

        return "auth" in secrets_singleton
    except Exception:  # noqa: BLE001 - no secrets file, or one that does not parse: no OIDC
        return False


def _oidc_viewer(raw: bytes | None) -> access.Viewer | None:
    """The viewer of Streamlit's own signed login cookie (set by its OIDC callback), as read by
    Streamlit's reader (web/oidc_cookie.py: chunked cookies and its signing secret as Streamlit has them)."""
    if raw is None:
        return None
    try:
        user = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(user, dict) or not user.get("is_logged_in"):
        return None
    role = access.role_for_groups(user.get("groups"))
    if role is None:
        return None
    return access.Viewer(role=role, identity=str(user.get("email") or user.get("sub") or "oidc-user"))


def viewer_for(
    headers: dict[str, str], client: str | None, oidc: bool | None = None
) -> access.Viewer | None:
    """Who this request comes from, or None when it must log in first."""
    oidc = _oidc_configured() if oidc is None else oidc
    cookies = request_cookies(headers)
    if not access.login_required(oidc=oidc):
        return access.anonymous_viewer(client)
    viewer = access.read_session(cookies.get(access.SESSION_COOKIE))
    if viewer is None and oidc:
        login = oidc_cookie.read(cookies)
        viewer = _oidc_viewer(login.value)
        if viewer is not None and oidc_logins.ended(login.key, viewer.identity):
            return None  # that login logged out: its cookie (a copy, another tab's) opens nothing
    return viewer


async def _oidc_logout(headers: dict[str, str]) -> None:
    """Before Streamlit's /auth/logout (which deletes its login cookie in this browser only):
    record that this OIDC login ended and close its open pages (services/team/oidc_logins.py).
    A missing or forged cookie ends nothing."""
    cookies = request_cookies(headers)
    if oidc_logins.LOGIN_COOKIE not in cookies:
        return
    login = await asyncio.to_thread(oidc_cookie.read, cookies)
    viewer = _oidc_viewer(login.value)
    key = login.key
    if viewer is None or key is None:
        return
    await asyncio.to_thread(oidc_logins.end, key, viewer.identity)
    closed = await sockets.close_session(key)
    log.info("%s logged out (%d open pages)", viewer.identity, closed)


def _with_cookie(scope: Scope, name: str, value: str) -> Scope:
    """The scope with the request's cookie `name` replaced (Streamlit compares its XSRF header
    and websocket token with this cookie: it gets the session's value, not a planted one)."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"cookie"]
    cookies = [
        part.strip()
        for k, v in scope.get("headers", [])
        if k.lower() == b"cookie"
        for part in v.decode("latin-1").split(";")
        if part.strip() and part.strip().split("=", 1)[0].strip() != name
    ]
    cookies.append(f"{name}={value}")
    headers.append((b"cookie", "; ".join(cookies).encode("latin-1")))
    return {**scope, "headers": headers}


def _browser_cookie(secure: bool) -> tuple[bytes, bytes]:
    """This browser's id (access.BROWSER_COOKIE): HttpOnly, as no script of the page needs it."""
    flags = "; Secure" if secure else ""
    return (
        b"set-cookie",
        f"{access.BROWSER_COOKIE}={access.new_browser_id()}; Path=/; "
        f"Max-Age={access.BROWSER_COOKIE_MAX_AGE_S}; HttpOnly; SameSite=Strict{flags}".encode(),
    )


class Gate:
    """ASGI middleware: Host and Origin checks, then the login, then Streamlit."""

    def __init__(self, app: ASGIApp, bind_address: str | None = None) -> None:
        self.app = app
        self.bind_address = bind_address

    def _bind(self) -> str | None:
        if self.bind_address is not None:
            return self.bind_address
        try:
            # Streamlit internals, used in its server only: the gate imports without Streamlit.
            from streamlit import config

            return config.get_option("server.address")
        except Exception:  # noqa: BLE001 - outside a Streamlit server (tests of the gate alone)
            return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = request_headers(scope)
        scope = _resolve_client(scope, headers)
        client = _client(scope)
        if scope["type"] == "http":
            # The body deadline and the frame headers, for every answer (web/guard.py).
            request = guard.RequestGuard(scope.get("path", "/"), headers, receive, send)
            receive, send = request.receive, request.send
        hosts = access.allowed_hosts(self._bind())
        if not access.host_allowed(headers.get("host"), hosts):
            log.warning("refused Host %r from %s", headers.get("host"), client)
            await self._refuse(
                scope,
                receive,
                send,
                421,
                "This server does not answer to that host name (SHOOTOUT_ALLOWED_HOSTS).",
            )
            return
        is_websocket = scope["type"] == "websocket"
        method = scope.get("method", "GET")
        origin = headers.get("origin")
        if (
            origin
            and (is_websocket or method not in SAFE_METHODS)
            and not access.origin_allowed(origin, scope.get("scheme", "http"), headers.get("host"))
        ):
            log.warning("refused Origin %r from %s", origin, client)
            await self._refuse(scope, receive, send, 403, "Requests from another site are refused.")
            return
        path = scope.get("path", "/")
        oidc = _oidc_configured()
        if is_websocket and (path in OPEN_PATHS or path in OIDC_PATHS):
            # These are pages and forms: a websocket there is refused, not an error inside the gate.
            await self._refuse(scope, receive, send, 404, "No websocket here.")
            return
        if path == "/login":
            await _login(scope, receive, send, oidc, client or "unknown")
            return
        if path == "/logout":
            await _logout(scope, receive, send, headers)
            return
        if oidc and path == "/auth/logout":
            await _oidc_logout(headers)
        if path in OPEN_PATHS or (oidc and path in OIDC_PATHS):
            await self.app(scope, receive, send)
            return
        # The session is a database row: looked up in a thread, so a slow database (PostgreSQL
        # across a network) holds this request only, not every connection of the server.
        viewer = await asyncio.to_thread(viewer_for, headers, client, oidc)
        if viewer is None:
            await self._refuse(scope, receive, send, 401, "Log in first: /login", login_redirect=True)
            return
        # A password login binds Streamlit's XSRF token (websocket, uploads) to its session.
        cookies = request_cookies(headers)
        secret = access.websocket_secret(cookies.get(access.SESSION_COOKIE))
        if secret is not None:
            if is_websocket and not _presents(headers, secret):
                log.warning("refused a websocket without its session's token from %s", client)
                await self._refuse(
                    scope, receive, send, 403, "The websocket needs this session's token."
                )
                return
            planted = xsrf_bytes(cookies.get(XSRF_COOKIE)) != secret
            scope = _with_cookie(scope, XSRF_COOKIE, xsrf_value(secret))
            if planted and not is_websocket:
                send = _adding_header(send, xsrf_cookie(secret, is_https(scope)))
            if is_websocket:
                # Checked again on every message, closed when the login ends (web/sockets.py).
                socket = LiveSocket(cookies.get(access.SESSION_COOKIE) or "", receive, send)
                sockets.add(socket)
                receive, send = socket.receive, socket.send
        elif is_websocket and oidc and (key := oidc_cookie.login_key(cookies)) is not None:
            # An OIDC login's page: closed when that login logs out, in any tab (web/sockets.py).
            socket = LiveSocket(key, receive, send, holds=oidc_login_holds)
            sockets.add(socket)
            receive, send = socket.receive, socket.send
        if not is_websocket and access.browser_id(cookies.get(access.BROWSER_COOKIE)) is None:
            send = _adding_header(send, _browser_cookie(is_https(scope)))
        if method == "PUT" and path.startswith("/_stcore/upload_file/") and not viewer.is_operator:
            try:
                size = int(headers.get("content-length") or UNKNOWN_UPLOAD_SIZE)
            except ValueError:
                size = UNKNOWN_UPLOAD_SIZE
            refusal = limits.uploads.take(viewer.identity, size)
            if refusal:
                log.warning("refused an upload of %d bytes from %s: %s", size, viewer.identity, refusal)
                await respond(send, 429, refusal)
                return
        await self.app(scope, receive, send)

    async def _refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        status: int,
        text: str,
        login_redirect: bool = False,
    ) -> None:
        if scope["type"] == "websocket":
            # Closing before accepting makes the server answer the handshake with 403: no session exists.
            await receive()
            await send({"type": "websocket.close", "code": 1008})
            return
        wants_page = scope.get("method") in ("GET", "HEAD") and "text/html" in request_headers(
            scope
        ).get("accept", "")
        if login_redirect and wants_page:
            query = scope.get("query_string", b"").decode("latin-1")
            wanted = scope.get("path", "/") + (f"?{query}" if query else "")
            await respond(
                send, 303, "", extra=[(b"location", f"/login?next={quote(wanted, safe='')}".encode())]
            )
            return
        await respond(send, status, text)


def _presents(headers: dict[str, str], secret: bytes) -> bool:
    """Whether a websocket handshake carries this session's token (Streamlit's frontend sends
    `streamlit, <token>[, <session id>]` as its subprotocols)."""
    entries = [e.strip() for e in headers.get("sec-websocket-protocol", "").split(",")]
    supplied = xsrf_bytes(entries[1]) if len(entries) > 1 else None
    return supplied is not None and hmac.compare_digest(supplied, secret)


def _adding_header(send: Send, header: tuple[bytes, bytes]) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), header]}
        await send(message)

    return wrapped


def _resolve_client(scope: Scope, headers: dict[str, str]) -> Scope:
    """The scope with the client (and scheme) a trusted proxy names; uvicorn's own handling is
    off (`harden_uvicorn`), so without SHOOTOUT_TRUSTED_PROXIES this is the socket's peer."""
    found = access.client_of(
        _client(scope),
        scope.get("scheme", "http"),
        headers.get("x-forwarded-for"),
        headers.get("x-forwarded-proto"),
    )
    if found.address == _client(scope) and found.scheme == scope.get("scheme"):
        return scope
    port = (scope.get("client") or (None, 0))[1]
    return {**scope, "client": (found.address, port), "scheme": found.scheme}
