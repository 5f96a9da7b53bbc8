"""The gate in front of Streamlit: nothing of the app answers before a login.

A password form inside the Streamlit script came too late: the browser had already opened the
websocket, so a client that never logged in could take its session id and PUT 150 MB files to
`/_stcore/upload_file/...` (all accepted, held in memory), and read `/_stcore/metrics` and
`/_stcore/host-config`. This ASGI middleware runs before Streamlit's own routes, for HTTP and
websocket alike: the login is a plain HTML form served here, the session a signed cookie
(`services.access`), and every other path needs that cookie. It also checks the `Host` header
(DNS rebinding) and the `Origin` of websockets and of requests that change state.

Open before login: `/login`, `/logout`, `/_stcore/health` (load balancers), and with OIDC the
routes of Streamlit's own login flow (`/auth/login`, `/oauth2callback`, `/auth/logout`).
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from services import access, limits
from services.auth import throttle

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
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: An upload that does not say its size counts as Streamlit's largest (its default 200 MB).
UNKNOWN_UPLOAD_SIZE = 200 * 1024 * 1024


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _cookies(headers: dict[str, str]) -> dict[str, str]:
    from http.cookies import CookieError, SimpleCookie

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
        from streamlit.runtime.secrets import secrets_singleton

        return "auth" in secrets_singleton
    except Exception:  # noqa: BLE001 - no secrets file, or one that does not parse: no OIDC
        return False


def _oidc_viewer(cookies: dict[str, str]) -> access.Viewer | None:
    """The viewer of Streamlit's own signed login cookie (set by its OIDC callback)."""
    # Streamlit's reader, so chunked cookies and its signing secret are handled as Streamlit does.
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
    return viewer


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
        from streamlit.auth_util import encode_provider_token

        return "/auth/login?provider=" + quote(encode_provider_token("default"))
    except Exception:  # noqa: BLE001 - Authlib missing or the [auth] section incomplete: Streamlit says why there
        return "/auth/login"


def _session_cookie(token: str, max_age: int) -> tuple[bytes, bytes]:
    # SameSite=Strict: no other site can make the browser send it, which covers
    # cross-site form posts and websockets along with the Origin check.
    return (
        b"set-cookie",
        f"{access.SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; "
        f"Max-Age={max_age}".encode(),
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


async def _login(scope: Scope, receive: Receive, send: Send, oidc: bool) -> None:
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
    client = _client(scope) or "unknown"
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
    throttle.succeeded(client)
    log.info("%s logged in as %s", client, role)
    token = access.issue_session(role, f"ip:{client}")
    await _respond(
        send,
        303,
        "",
        extra=[(b"location", next_path.encode()), _session_cookie(token, access.session_max_age_s())],
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
            from streamlit import config

            return config.get_option("server.address")
        except Exception:  # noqa: BLE001 - outside a Streamlit server (tests of the gate alone)
            return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        hosts = access.allowed_hosts(self._bind())
        if not access.host_allowed(headers.get("host"), hosts):
            log.warning("refused Host %r from %s", headers.get("host"), _client(scope))
            await self._refuse(
                scope,
                receive,
                send,
                421,
                "This server does not answer to that host name (SHOOTOUT_ALLOWED_HOSTS).",
            )
            return
        method = scope.get("method", "GET")
        origin = headers.get("origin")
        if (
            origin
            and (scope["type"] == "websocket" or method not in SAFE_METHODS)
            and not access.host_allowed(urlsplit(origin).netloc or "", hosts)
        ):
            log.warning("refused Origin %r from %s", origin, _client(scope))
            await self._refuse(scope, receive, send, 403, "Requests from another site are refused.")
            return
        path = scope.get("path", "/")
        oidc = _oidc_configured()
        if path == "/login":
            await _login(scope, receive, send, oidc)
            return
        if path == "/logout":
            await _respond(
                send,
                303,
                "",
                extra=[
                    (b"location", b"/login"),
                    (b"set-cookie", f"{access.SESSION_COOKIE}=; Path=/; Max-Age=0".encode()),
                ],
            )
            return
        if path in OPEN_PATHS or (oidc and path in OIDC_PATHS):
            await self.app(scope, receive, send)
            return
        viewer = viewer_for(headers, _client(scope), oidc)
        if viewer is None:
            await self._refuse(scope, receive, send, 401, "Log in first: /login", login_redirect=True)
            return
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
