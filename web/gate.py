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
import html
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, quote

from services.core.config import get_settings
from services.team import access, limits, oidc_logins
from services.team.throttle import client_key, throttle
from web import guard
from web.sockets import LiveSocket, oidc_login_holds, sockets

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("shootout.gate")

OPEN_PATHS = frozenset({"/login", "/logout", "/_stcore/health", "/favicon.ico"})
OIDC_PATHS = frozenset({"/auth/login", "/auth/logout", "/oauth2callback"})
#: The login form is a few fields; a bigger body is not a login.
MAX_LOGIN_BODY = 4096
XSRF_COOKIE = "_streamlit_xsrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: An upload that does not say its size counts as Streamlit's largest (its default 200 MB).
UNKNOWN_UPLOAD_SIZE = 200 * 1024 * 1024


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _cookies(headers: dict[str, str]) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


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


def _oidc_viewer(cookies: dict[str, str]) -> access.Viewer | None:
    """The viewer of Streamlit's own signed login cookie (set by its OIDC callback)."""
    # Streamlit's reader, so chunked cookies and its signing secret are handled as Streamlit does;
    # imported here, as its other internals are, so the gate imports without Streamlit.
    from streamlit.web.server.starlette.starlette_websocket import _get_signed_cookie_with_chunks

    raw = _get_signed_cookie_with_chunks(cookies, "_streamlit_user")
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
    cookies = _cookies(headers)
    if not access.login_required(oidc=oidc):
        return access.anonymous_viewer(client)
    viewer = access.read_session(cookies.get(access.SESSION_COOKIE))
    if viewer is None and oidc:
        viewer = _oidc_viewer(cookies)
        if viewer is not None and oidc_logins.ended(oidc_logins.login_key(cookies)):
            return None  # that login logged out: its cookie (a copy, another tab's) opens nothing
    return viewer


async def _oidc_logout(headers: dict[str, str]) -> None:
    """Before Streamlit's /auth/logout (which deletes its login cookie in this browser only):
    record that this OIDC login ended and close its open pages (services/team/oidc_logins.py).
    A missing or forged cookie ends nothing."""
    cookies = _cookies(headers)
    key = oidc_logins.login_key(cookies)
    viewer = await asyncio.to_thread(_oidc_viewer, cookies) if key else None
    if viewer is None or key is None:
        return
    await asyncio.to_thread(oidc_logins.end, key, viewer.identity)
    closed = await sockets.close_session(key)
    log.info("%s logged out (%d open pages)", viewer.identity, closed)


async def _respond(
    send: Send,
    status: int,
    body: str,
    content_type: str = "text/plain; charset=utf-8",
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    data = body.encode()
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _login_page(next_path: str, message: str = "", oidc: bool = False) -> str:
    form = ""
    if access.auth_config().passwords:
        form = (
            f'<form method="post" action="/login"><input type="hidden" name="next" value="{html.escape(next_path)}">'
            '<label>Password <input type="password" name="password" autofocus required></label> '
            '<button type="submit">Log in</button></form>'
        )
    if oidc:
        form += f'<p><a href="{html.escape(_oidc_login_url())}">Log in with your organisation</a></p>'
    note = f'<p role="alert" class="error">{html.escape(message)}</p>' if message else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Shootout: log in</title>"
        "<meta name=viewport content='width=device-width'><style>body{font-family:sans-serif;max-width:28rem;"
        "margin:4rem auto;color:#262730}input{padding:.4rem}button{padding:.4rem .9rem}.error{color:#b00020}"
        f"</style></head><body><h1>Shootout</h1>{note}{form}</body></html>"
    )


def _oidc_login_url() -> str:
    try:
        # Streamlit internals, used in its server only: the gate imports without Streamlit.
        from streamlit.auth_util import encode_provider_token

        return "/auth/login?provider=" + quote(encode_provider_token("default"))
    except Exception:  # noqa: BLE001 - Authlib missing or the [auth] section incomplete: Streamlit says why there
        return "/auth/login"


def _xsrf_value(secret: bytes) -> str:
    # Streamlit internals, used in its server only: the gate imports without Streamlit.
    from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

    # A fixed timestamp: the same session always gets the same cookie value.
    return generate_xsrf_token_string(secret, 0)


def _xsrf_bytes(value: str | None) -> bytes | None:
    # Streamlit internals, used in its server only: the gate imports without Streamlit.
    from streamlit.web.server.starlette.starlette_app_utils import decode_xsrf_token_string

    return decode_xsrf_token_string(value)[0] if value else None


def _xsrf_cookie(secret: bytes, secure: bool) -> tuple[bytes, bytes]:
    # Not HttpOnly: Streamlit's frontend reads it and sends it with the websocket handshake.
    flags = "; Secure" if secure else ""
    return (
        b"set-cookie",
        f"{XSRF_COOKIE}={_xsrf_value(secret)}; Path=/; SameSite=Strict{flags}".encode(),
    )


def _https(scope: Scope) -> bool:
    """Whether the browser came by HTTPS: the socket's own TLS, or a trusted proxy's
    `X-Forwarded-Proto` (the scope's scheme is already resolved: `_resolve_client`)."""
    return scope.get("scheme") in ("https", "wss")


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


def _session_cookie(token: str, max_age: int, secure: bool) -> tuple[bytes, bytes]:
    # SameSite=Strict: no other site can make the browser send it, which covers
    # cross-site form posts and websockets along with the Origin check. Secure behind HTTPS
    # (a trusted proxy's X-Forwarded-Proto included): never sent over plain HTTP then.
    flags = "; Secure" if secure else ""
    return (
        b"set-cookie",
        f"{access.SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; "
        f"Max-Age={max_age}{flags}".encode(),
    )


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body"):
            return body


async def _login(scope: Scope, receive: Receive, send: Send, oidc: bool, client: str) -> None:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if scope["method"] in ("GET", "HEAD"):
        await _respond(
            send,
            200,
            _login_page(access.safe_next(query.get("next", ["/"])[0]), oidc=oidc),
            "text/html; charset=utf-8",
        )
        return
    if scope["method"] != "POST" or not access.auth_config().passwords:
        await _respond(send, 405, "Log in with the form at /login.")
        return
    body = await _read_body(receive, MAX_LOGIN_BODY)
    if body is None:
        await _respond(send, 413, "That is not a login form.")
        return
    form = parse_qs(body.decode("utf-8", "replace"))
    next_path = access.safe_next(form.get("next", ["/"])[0])
    wait = throttle.wait_s(client)
    if wait:
        await _respond(
            send,
            429,
            _login_page(
                next_path,
                f"Too many wrong passwords from this address: try again in {wait:.0f} s.",
                oidc,
            ),
            "text/html; charset=utf-8",
        )
        return
    # One failure counter per client across roles, which a right password does not clear.
    role = access.role_for_password(form.get("password", [""])[0])
    if role is None:
        lockout = throttle.failed(client)
        await _respond(
            send,
            401,
            _login_page(
                next_path,
                "Wrong password." + (f" Locked out for {lockout:.0f} s." if lockout else ""),
                oidc,
            ),
            "text/html; charset=utf-8",
        )
        return
    refusal = await _too_many_logins(client)
    if refusal:
        await _respond(send, 429, _login_page(next_path, refusal, oidc), "text/html; charset=utf-8")
        return
    log.info("%s logged in as %s", client, role)
    token = await asyncio.to_thread(access.issue_session, role, f"ip:{client}")
    secure = _https(scope)
    extra = [
        (b"location", next_path.encode()),
        _session_cookie(token, access.session_max_age_s(), secure),
    ]
    secret = access.websocket_secret(token)
    if secret:
        extra.append(_xsrf_cookie(secret, secure))
    await _respond(send, 303, "", extra=extra)


async def _too_many_logins(client: str) -> str | None:
    """Why this client may not log in again now (issue 44: 300 logins in 2.3 s, each kept a
    day): too many right passwords in a short time, or SHOOTOUT_LOGIN_SESSIONS_PER_CLIENT
    logins of its address still live. None when it may."""
    wait = throttle.login_wait_s(client)
    if wait:
        return f"Too many logins from this address: try again in {max(1.0, wait):.0f} s."
    key = client_key(client)
    live = await asyncio.to_thread(access.live_session_identities)
    held = sum(1 for identity in live if identity.startswith("ip:") and client_key(identity[3:]) == key)
    if held >= get_settings().login_sessions_per_client:
        log.warning("refused a login from %s: %d live logins from its address", client, held)
        return (
            f"This address already has {held} live logins (SHOOTOUT_LOGIN_SESSIONS_PER_CLIENT): "
            "log out of one, or ask the operator."
        )
    return None


def _logout_page(token: str | None, viewer: access.Viewer | None, message: str = "") -> str:
    forms = (
        '<form method="post" action="/logout">'
        f'<input type="hidden" name="token" value="{access.form_token(token, "logout")}">'
        '<button type="submit">Log out</button></form>'
    )
    if viewer is not None and viewer.is_operator:
        forms += (
            '<form method="post" action="/logout"><input type="hidden" name="everywhere" value="1">'
            f'<input type="hidden" name="token" value="{access.form_token(token, "logout-everywhere")}">'
            "<p>Or end every login on this server, yours and everyone else's (a password or a cookie "
            'may have leaked): <button type="submit">Log out everywhere</button></p></form>'
        )
    note = f'<p role="alert" class="error">{html.escape(message)}</p>' if message else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Shootout: log out</title>"
        "<meta name=viewport content='width=device-width'><style>body{font-family:sans-serif;max-width:28rem;"
        "margin:4rem auto;color:#262730}button{padding:.4rem .9rem}.error{color:#b00020}"
        f"</style></head><body><h1>Shootout</h1>{note}{forms}</body></html>"
    )


def _logged_out(secure: bool) -> list[tuple[bytes, bytes]]:
    flags = "; Secure" if secure else ""
    return [
        (b"location", b"/login"),
        (b"set-cookie", f"{access.SESSION_COOKIE}=; Path=/; Max-Age=0{flags}".encode()),
        (b"set-cookie", f"{XSRF_COOKIE}=; Path=/; Max-Age=0{flags}".encode()),
    ]


async def _logout(scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
    """GET shows the logout form (a link or another site cannot log anyone out); its POST, with
    the session's token, ends the session on the server, not only the cookie in this browser."""
    token = _cookies(headers).get(access.SESSION_COOKIE)
    viewer = await asyncio.to_thread(access.read_session, token)
    if viewer is None:
        await _respond(send, 303, "", extra=_logged_out(_https(scope)))
        return
    if scope["method"] in ("GET", "HEAD"):
        await _respond(send, 200, _logout_page(token, viewer), "text/html; charset=utf-8")
        return
    if scope["method"] != "POST":
        await _respond(send, 405, "Log out with the form at /logout.")
        return
    body = await _read_body(receive, MAX_LOGIN_BODY)
    form = parse_qs((body or b"").decode("utf-8", "replace"))
    supplied = form.get("token", [""])[0]
    everywhere = form.get("everywhere", [""])[0] == "1"
    purpose = "logout-everywhere" if everywhere else "logout"
    if not access.form_token_valid(token, purpose, supplied) or (everywhere and not viewer.is_operator):
        await _respond(
            send,
            403,
            _logout_page(token, viewer, "That logout form is not this session's: use this one."),
            "text/html; charset=utf-8",
        )
        return
    if everywhere:
        ended = await asyncio.to_thread(access.end_all_sessions, viewer)
        closed = await sockets.close_all()
        log.warning("%s logged out every session (%d, %d open pages)", viewer.identity, ended, closed)
    else:
        await asyncio.to_thread(access.end_session, token)
        closed = await sockets.close_session(token)
        log.info("%s logged out (%d open pages)", viewer.identity, closed)
    await _respond(send, 303, "", extra=_logged_out(_https(scope)))


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
        headers = _headers(scope)
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
        cookies = _cookies(headers)
        secret = access.websocket_secret(cookies.get(access.SESSION_COOKIE))
        if secret is not None:
            if is_websocket and not _presents(headers, secret):
                log.warning("refused a websocket without its session's token from %s", client)
                await self._refuse(
                    scope, receive, send, 403, "The websocket needs this session's token."
                )
                return
            planted = _xsrf_bytes(cookies.get(XSRF_COOKIE)) != secret
            scope = _with_cookie(scope, XSRF_COOKIE, _xsrf_value(secret))
            if planted and not is_websocket:
                send = _adding_header(send, _xsrf_cookie(secret, _https(scope)))
            if is_websocket:
                # Checked again on every message, closed when the login ends (web/sockets.py).
                socket = LiveSocket(cookies.get(access.SESSION_COOKIE) or "", receive, send)
                sockets.add(socket)
                receive, send = socket.receive, socket.send
        elif is_websocket and oidc and (key := oidc_logins.login_key(cookies)) is not None:
            # An OIDC login's page: closed when that login logs out, in any tab (web/sockets.py).
            socket = LiveSocket(key, receive, send, holds=oidc_login_holds)
            sockets.add(socket)
            receive, send = socket.receive, socket.send
        if not is_websocket and access.browser_id(cookies.get(access.BROWSER_COOKIE)) is None:
            send = _adding_header(send, _browser_cookie(_https(scope)))
        if method == "PUT" and path.startswith("/_stcore/upload_file/") and not viewer.is_operator:
            try:
                size = int(headers.get("content-length") or UNKNOWN_UPLOAD_SIZE)
            except ValueError:
                size = UNKNOWN_UPLOAD_SIZE
            refusal = limits.uploads.take(viewer.identity, size)
            if refusal:
                log.warning("refused an upload of %d bytes from %s: %s", size, viewer.identity, refusal)
                await _respond(send, 429, refusal)
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
        wants_page = scope.get("method") in ("GET", "HEAD") and "text/html" in _headers(scope).get(
            "accept", ""
        )
        if login_redirect and wants_page:
            query = scope.get("query_string", b"").decode("latin-1")
            wanted = scope.get("path", "/") + (f"?{query}" if query else "")
            await _respond(
                send, 303, "", extra=[(b"location", f"/login?next={quote(wanted, safe='')}".encode())]
            )
            return
        await _respond(send, status, text)


def _presents(headers: dict[str, str], secret: bytes) -> bool:
    """Whether a websocket handshake carries this session's token (Streamlit's frontend sends
    `streamlit, <token>[, <session id>]` as its subprotocols)."""
    entries = [e.strip() for e in headers.get("sec-websocket-protocol", "").split(",")]
    supplied = _xsrf_bytes(entries[1]) if len(entries) > 1 else None
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
