"""The ASGI pieces the gate (`web/gate.py`) and its login pages (`web/login.py`) share: the
types, reading headers and cookies, Streamlit's XSRF cookie, a plain answer and a bounded body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import cookie_parser

Scope = MutableMapping[str, Any]

Message = MutableMapping[str, Any]

Receive = Callable[[], Awaitable[Message]]

Send = Callable[[Message], Awaitable[None]]

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

XSRF_COOKIE = "_streamlit_xsrf"


def request_headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def request_cookies(headers: dict[str, str]) -> dict[str, str]:
    """The request's cookies as Streamlit reads them (`st.context.cookies`, its login cookie):
    Starlette's parser, which skips a malformed cookie and keeps the others. `SimpleCookie`
    dropped the whole header for one cookie without a value, which any page of the same host
    can set: it logged out every login of this server in that browser (issue 57)."""
    return cookie_parser(headers.get("cookie", ""))


def is_https(scope: Scope) -> bool:
    """Whether the browser came by HTTPS: the socket's own TLS, or a trusted proxy's
    `X-Forwarded-Proto` (the scope's scheme is already resolved: `gate._resolve_client`)."""
    return scope.get("scheme") in ("https", "wss")


def xsrf_value(secret: bytes) -> str:
    # Streamlit internals, used in its server only: the gate imports without Streamlit.
    from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

    # A fixed timestamp: the same session always gets the same cookie value.
    return generate_xsrf_token_string(secret, 0)


def xsrf_bytes(value: str | None) -> bytes | None:
    # Streamlit internals, used in its server only: the gate imports without Streamlit.
    from streamlit.web.server.starlette.starlette_app_utils import decode_xsrf_token_string

    return decode_xsrf_token_string(value)[0] if value else None


def xsrf_cookie(secret: bytes, secure: bool) -> tuple[bytes, bytes]:
    # Not HttpOnly: Streamlit's frontend reads it and sends it with the websocket handshake.
    flags = "; Secure" if secure else ""
    return (
        b"set-cookie",
        f"{XSRF_COOKIE}={xsrf_value(secret)}; Path=/; SameSite=Strict{flags}".encode(),
    )


async def respond(
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


async def read_body(receive: Receive, limit: int) -> bytes | None:
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
