"""What the served app (serve.py) does around the gate: at the connection, before a request's
headers are in, and around a request's body. `harden_uvicorn` installs the connection parts while
uvicorn loads serve.py; the gate (`web/gate.py`) wraps every request in the rest.

- **Headers in time**: a connection whose request headers are not complete
  SHOOTOUT_HEADER_TIMEOUT_S after it opened or after its last response is closed. An ASGI
  middleware only runs once headers are in, so this is uvicorn's protocol, subclassed.
- **Connections per client** (issue 44): 1,030 slow-body POSTs to /login took the server down at
  the common 1,024-file limit. One client (`services.team.throttle.client_key`: all of loopback,
  an IPv6 /64) may hold SHOOTOUT_CONNECTIONS_PER_CLIENT open connections, websockets included;
  more are closed as they open. A trusted proxy (SHOOTOUT_TRUSTED_PROXIES) is exempt: it carries
  many clients. The server also raises its open-file limit to the hard limit.
- **A body in time** (issue 44): the login and logout forms must arrive within
  SHOOTOUT_BODY_TIMEOUT_S (10 s); any other body within that plus its length at MIN_BODY_RATE
  (a 200 MB upload: 53 minutes), and no body may pause longer than SHOOTOUT_BODY_TIMEOUT_S.
  Else the answer is 408 and the connection is closed.
- **No framing by other origins** (issue 44): every HTTP answer carries `X-Frame-Options:
  SAMEORIGIN` and `Content-Security-Policy: frame-ancestors 'self'`, so a page of another port
  of the same host cannot frame the app and have the operator click in it.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from services.core.config import get_settings
from services.team import access
from services.team.throttle import client_key

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger("shootout.gate")

#: Bytes per second a request body must keep up, on top of SHOOTOUT_BODY_TIMEOUT_S.
MIN_BODY_RATE = 64 * 1024
#: Paths whose body is a small form, which must arrive within SHOOTOUT_BODY_TIMEOUT_S in all.
FORM_PATHS = frozenset({"/login", "/logout"})
FRAME_HEADERS = [
    (b"x-frame-options", b"SAMEORIGIN"),
    (b"content-security-policy", b"frame-ancestors 'self'"),
]
#: The open-file limit the server asks for when the hard limit is unlimited.
WANTED_FILES = 65536


def header_timeout_s() -> float:
    return max(0.5, get_settings().header_timeout_s)


def body_timeout_s() -> float:
    return max(0.5, get_settings().body_timeout_s)


class Connections:
    """Open connections per client, in the server's event loop (no lock: one thread)."""

    def __init__(self) -> None:
        self._held: dict[str, set[object]] = {}
        self._key: dict[object, str] = {}
        self._warned: set[str] = set()

    def admit(self, transport: asyncio.BaseTransport) -> bool:
        """Count this connection for its client; False when the client already holds its cap
        (the caller closes it). A transport counted before (a websocket upgraded from a counted
        HTTP connection) is admitted again without counting twice."""
        if transport in self._key:
            return True
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else None
        if access.is_trusted_proxy(address):
            return True
        key = client_key(address)
        held = self._held.setdefault(key, set())
        cap = get_settings().connections_per_client
        if len(held) >= cap:
            if key not in self._warned:  # once per crossing, not once per refused connection
                self._warned.add(key)
                log.warning(
                    "refused connections from %s: %d open (SHOOTOUT_CONNECTIONS_PER_CLIENT)", key, cap
                )
            return False
        held.add(transport)
        self._key[transport] = key
        return True

    def release(self, transport: object) -> None:
        key = self._key.pop(transport, None)
        if key is None:
            return
        held = self._held.get(key, set())
        held.discard(transport)
        if not held:
            self._held.pop(key, None)
        self._warned.discard(key)

    def open_for(self, address: str | None) -> int:
        return len(self._held.get(client_key(address), ()))


connections = Connections()


def guarded_http(base: type[asyncio.Protocol], timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, counting its connection for its client (and closing it over the
    cap), and closing a connection whose request headers are not complete `timeout_s` after it
    opened or after its last response."""

    class GuardedHTTPProtocol(base):  # type: ignore[misc, valid-type]  # uvicorn's protocol class
        _header_timer: asyncio.TimerHandle | None = None
        _armed_cycle: object = None

        def _arm_header_timer(self) -> None:
            self._disarm_header_timer()
            self._armed_cycle = self.cycle
            self._header_timer = self.loop.call_later(timeout_s, self._header_timeout)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self) -> None:
            self._header_timer = None
            transport = self.transport
            if transport.is_closing() or transport.get_protocol() is not self:
                return  # closed, or now a websocket
            if self.cycle is self._armed_cycle:  # no request's headers since the timer started
                log.warning(
                    "closed a connection from %s: no request headers in %.0f s", self.client, timeout_s
                )
                transport.close()

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            if not connections.admit(transport):
                transport.close()
                return
            self._arm_header_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_timer()
            if self.transport.get_protocol() is self:  # else the websocket protocol releases it
                connections.release(self.transport)
            super().connection_lost(exc)

    return GuardedHTTPProtocol


def counted_websocket(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """uvicorn's websocket protocol, releasing its connection's count when it closes (an
    upgraded connection no longer reaches the HTTP protocol's connection_lost)."""

    class CountedWebSocketProtocol(base):  # type: ignore[misc, valid-type]  # uvicorn's protocol class
        _counted: asyncio.BaseTransport | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self._counted = transport
            connections.admit(transport)
            super().connection_made(transport)

        def connection_lost(self, exc: Exception | None) -> None:
            connections.release(self._counted)
            super().connection_lost(exc)

    return CountedWebSocketProtocol


def raise_file_limit() -> None:
    """The open-file soft limit up to the hard one (often 1,024 against 524,288): connections
    are files."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = WANTED_FILES if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as error:
            log.warning("could not raise the open-file limit from %d: %s", soft, error)


def harden_uvicorn() -> bool:
    """Called while uvicorn imports serve.py (Streamlit builds uvicorn's Config before that, with
    uvicorn's defaults): turns off uvicorn's proxy headers, which it believes from loopback, and
    installs the connection guards above. The Config is found on the call stack, since Streamlit
    passes no settings of ours to it; False (and a log line) when it is not there."""
    # uvicorn's internals: loaded in the server that imports serve.py; the gate alone does not need them.
    from uvicorn.config import Config

    raise_file_limit()
    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Config):
            break
        frame = frame.f_back  # type: ignore[assignment]  # None ends the loop
    else:
        log.warning("serve.py was not loaded by uvicorn: proxy headers and connection guards unchanged")
        return False
    # load() wraps the app in ProxyHeadersMiddleware after this import, and the server makes its
    # protocols from http_protocol_class and ws_protocol_class after load(): both read what is set here.
    candidate.proxy_headers = False
    candidate.http_protocol_class = guarded_http(candidate.http_protocol_class, header_timeout_s())
    if candidate.ws_protocol_class is not None:
        candidate.ws_protocol_class = counted_websocket(candidate.ws_protocol_class)
    return True


class RequestGuard:
    """One HTTP request's receive and send, with the body deadline and the frame headers."""

    def __init__(self, path: str, headers: dict[str, str], receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        limit = body_timeout_s()
        self._idle_s = limit
        try:
            length = max(0, int(headers.get("content-length") or 0))
        except ValueError:
            length = 0
        total = limit if path in FORM_PATHS else limit + length / MIN_BODY_RATE
        self._deadline = time.monotonic() + total
        self._body_done = False
        self._started = False
        self.timed_out = False

    async def receive(self) -> Message:
        if self.timed_out:
            return {"type": "http.disconnect"}
        if self._body_done:
            return await self._receive()
        wait = min(self._idle_s, self._deadline - time.monotonic())
        try:
            message = await asyncio.wait_for(self._receive(), max(0.0, wait))
        except TimeoutError:
            self.timed_out = True
            log.warning("closed a request whose body did not arrive in time")
            if not self._started:
                await self._answer_timeout()
            return {"type": "http.disconnect"}
        if message["type"] != "http.request" or not message.get("more_body"):
            self._body_done = True
        return message

    async def _answer_timeout(self) -> None:
        body = b"The request body did not arrive in time."
        self._started = True
        await self._send(
            {
                "type": "http.response.start",
                "status": 408,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                    *FRAME_HEADERS,
                ],
            }
        )
        await self._send({"type": "http.response.body", "body": body})

    async def send(self, message: Message) -> None:
        if self.timed_out:
            return  # the 408 went out: what the app says after it goes nowhere
        if message["type"] == "http.response.start":
            self._started = True
            present = {k.lower() for k, _ in message.get("headers", [])}
            extra = [(k, v) for k, v in FRAME_HEADERS if k not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await self._send(message)
