"""The gate's own pages: the password login form and its POST (throttled per address), the
logout form and its POST (this login, or every login for an operator). `web/gate.py` routes
`/login` and `/logout` here before anything of Streamlit answers."""

from __future__ import annotations

import asyncio
import html
import logging
from urllib.parse import parse_qs, quote

from services.core.config import get_settings
from services.team import access, oidc_logins
from services.team.throttle import client_key, throttle
from web.asgi import (
    XSRF_COOKIE,
    Receive,
    Scope,
    Send,
    is_https,
    read_body,
    request_cookies,
    respond,
    xsrf_cookie,
)
from web.sockets import sockets

log = logging.getLogger("shootout.gate")


#: The login form is a few fields; a bigger body is not a login.
MAX_LOGIN_BODY = 4096


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


async def _login(scope: Scope, receive: Receive, send: Send, oidc: bool, client: str) -> None:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if scope["method"] in ("GET", "HEAD"):
        await respond(
            send,
            200,
            _login_page(access.safe_next(query.get("next", ["/"])[0]), oidc=oidc),
            "text/html; charset=utf-8",
        )
        return
    if scope["method"] != "POST" or not access.auth_config().passwords:
        await respond(send, 405, "Log in with the form at /login.")
        return
    body = await read_body(receive, MAX_LOGIN_BODY)
    if body is None:
        await respond(send, 413, "That is not a login form.")
        return
    form = parse_qs(body.decode("utf-8", "replace"))
    next_path = access.safe_next(form.get("next", ["/"])[0])
    wait = throttle.wait_s(client)
    if wait:
        await respond(
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
        await respond(
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
        await respond(send, 429, _login_page(next_path, refusal, oidc), "text/html; charset=utf-8")
        return
    log.info("%s logged in as %s", client, role)
    token = await asyncio.to_thread(access.issue_session, role, f"ip:{client}")
    secure = is_https(scope)
    extra = [
        (b"location", next_path.encode()),
        _session_cookie(token, access.session_max_age_s(), secure),
    ]
    secret = access.websocket_secret(token)
    if secret:
        extra.append(xsrf_cookie(secret, secure))
    await respond(send, 303, "", extra=extra)


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
    token = request_cookies(headers).get(access.SESSION_COOKIE)
    viewer = await asyncio.to_thread(access.read_session, token)
    if viewer is None:
        await respond(send, 303, "", extra=_logged_out(is_https(scope)))
        return
    if scope["method"] in ("GET", "HEAD"):
        await respond(send, 200, _logout_page(token, viewer), "text/html; charset=utf-8")
        return
    if scope["method"] != "POST":
        await respond(send, 405, "Log out with the form at /logout.")
        return
    body = await read_body(receive, MAX_LOGIN_BODY)
    form = parse_qs((body or b"").decode("utf-8", "replace"))
    supplied = form.get("token", [""])[0]
    everywhere = form.get("everywhere", [""])[0] == "1"
    purpose = "logout-everywhere" if everywhere else "logout"
    if not access.form_token_valid(token, purpose, supplied) or (everywhere and not viewer.is_operator):
        await respond(
            send,
            403,
            _logout_page(token, viewer, "That logout form is not this session's: use this one."),
            "text/html; charset=utf-8",
        )
        return
    if everywhere:
        ended = await asyncio.to_thread(access.end_all_sessions, viewer)
        oidc_logins.forget_live()  # the OIDC logins' rows were revoked with the rest
        closed = await sockets.close_all()
        log.warning("%s logged out every session (%d, %d open pages)", viewer.identity, ended, closed)
    else:
        await asyncio.to_thread(access.end_session, token)
        closed = await sockets.close_session(token)
        log.info("%s logged out (%d open pages)", viewer.identity, closed)
    await respond(send, 303, "", extra=_logged_out(is_https(scope)))
