"""Transport: a keep-alive pool of HTTP/1.1 connections on asyncio protocols, and
`stream_chat`, which sends one request through it (redirects, one retry on a stale
keep-alive connection, judging the ended stream). Never raises for a failed request.

HTTP/1.1 on asyncio protocols, parsed by httptools (llhttp, in C). Why not httpx2 here:
measured at 128 streams x 256 tokens, httpx2's stack (anyio, httpcore2, h11 in pure Python)
cost about 54 µs of client CPU per token (openai SDK: 80 µs), five times issue 4's budget.
Protocol callbacks do the whole per-chunk work synchronously in data_received (see
`services.client.stream`): no coroutine switch per chunk, C chunked decoding, one JSON parse
per event.
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import ssl
from http import HTTPStatus
from time import perf_counter
from typing import Self
from urllib.parse import urljoin, urlsplit

import httptools

from services.client.records import ChatRequest, DeltaCallback, StreamResult, fail_result
from services.client.request import build_body, build_headers, request_url
from services.client.stream import Exchange, TritonExchange, error_message
from services.core import http
from services.engines import get_adapter


def make_http_client(
    max_connections: int = 100, *, connect_timeout_s: float = 10.0, read_timeout_s: float = 300.0
) -> StreamClient:
    """The one connection pool of a run. Create it inside the event loop that uses it."""
    return StreamClient(
        max_connections, connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s
    )


#: A pool's key for a connection: (scheme, host, port).
ConnectionKey = tuple[str, str, int]


class StreamClient:
    """A keep-alive connection pool (per scheme, host and port) with at most
    `max_connections` requests in flight. Use as `async with make_http_client(n) as client`."""

    def __init__(
        self,
        max_connections: int = 100,
        *,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 300.0,
    ) -> None:
        self.max_connections = max_connections
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[ConnectionKey, list[Connection]] = {}
        self._open: set[Connection] = set()
        self._ssl: ssl.SSLContext | None = None
        self.closed = False

    async def __aenter__(self) -> Self:
        return self

    @property
    def open_connections(self) -> int:
        """Connections open now, busy or idle (the generator's self-check reports the most)."""
        return len(self._open)

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self.closed = True
        for connection in list(self._open):
            connection.close()
        self._idle.clear()

    async def open_ahead(self, url: str, count: int, timeout_s: float = 10.0) -> int:
        """Open up to `count` keep-alive connections to `url`'s host now, so that the requests
        that follow do not pay for connection set-up; returns how many are ready (a host that
        refuses gets none: its requests will say why)."""
        key = split_url(url)[0]
        opened = await asyncio.gather(
            *(self._connect(key, timeout_s) for _ in range(count)), return_exceptions=True
        )
        ready = 0
        for connection in opened:
            if not isinstance(connection, BaseException):
                self._put_idle(connection)
                ready += 1
        return ready

    async def _connect(self, key: ConnectionKey, timeout_s: float) -> Connection:
        scheme, host, port = key
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            context = self._ssl
        loop = asyncio.get_running_loop()
        _transport, connection = await asyncio.wait_for(
            loop.create_connection(
                lambda: Connection(self, key),
                host,
                port,
                ssl=context,
                server_hostname=host if context else None,
            ),
            timeout_s,
        )
        return connection

    def _take_idle(self, key: ConnectionKey) -> Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if not connection.lost:
                return connection
        return None

    def _put_idle(self, connection: Connection) -> None:
        if self.closed or connection.lost:
            connection.close()
            return
        self._idle.setdefault(connection.key, []).append(connection)

    def _forget(self, connection: Connection) -> None:
        self._open.discard(connection)
        idle = self._idle.get(connection.key)
        if idle and connection in idle:
            idle.remove(connection)


class Connection(asyncio.Protocol):
    __slots__ = ("exchange", "key", "lost", "pool", "transport")

    def __init__(self, pool: StreamClient, key: ConnectionKey) -> None:
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a socket's transport here
        self.pool._open.add(self)

    def data_received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None:  # bytes while idle: the connection is out of step, drop it
            self.close()
            return
        exchange.now = perf_counter()
        exchange.received_any = True
        exchange.bytes_left -= len(data)
        if exchange.bytes_left < 0:
            exchange.fault(
                "too_large", "The answer was larger than the request's byte limit; stopped reading it."
            )
            return
        try:
            exchange.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            exchange.fault("protocol_error", "The engine tried to switch protocols.")
        except httptools.HttpParserError as error:
            if exchange.error_class is None:
                exchange.fault(
                    "protocol_error", f"The engine's HTTP answer could not be parsed: {error}"
                )

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.pool._forget(self)
        exchange = self.exchange
        if exchange is not None:
            exchange.connection_lost(exc)

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.abort()

    def release(self) -> None:
        """The exchange ended cleanly and the engine keeps the connection: back to the pool."""
        self.exchange = None
        self.pool._put_idle(self)


def classify_exception(error: BaseException) -> tuple[str, str]:
    """(error_class, plain message) for an exception raised while connecting."""
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, (ssl.SSLError, ssl.CertificateError)) for e in chain):
        return "tls", f"The TLS (https) handshake failed: {error}"
    if any(isinstance(e, socket.gaierror) for e in chain) or "name or service not known" in text:
        return "dns", "The host name does not resolve."
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "connect_refused", "Nothing listens at that address (connection refused)."
    if isinstance(error, TimeoutError):
        return "connect_timeout", "No connection within the connect timeout."
    if isinstance(error, OSError):
        return "connect_error", f"The connection could not be opened: {error.strerror or error}"
    return "error", f"{type(error).__name__}: {error}"


@functools.lru_cache(maxsize=256)
def split_url(url: str) -> tuple[ConnectionKey, str, str]:
    """(pool key, Host header, request target) of a URL; cached, since a run sends every
    request to the same few URLs and working one out costs a few µs (issue 15)."""
    parts = urlsplit(url)
    scheme = parts.scheme
    host = parts.hostname or ""
    port = parts.port or (443 if scheme == "https" else 80)
    default = (scheme == "https" and port == 443) or (scheme == "http" and port == 80)
    host_header = host if default else f"{host}:{port}"
    if ":" in host and not default:
        host_header = f"[{host}]:{port}"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return (scheme, host, port), host_header, path


def request_bytes(host_header: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    """The whole HTTP/1.1 POST as written to the socket (our Host, length and agent win)."""
    lines = [
        f"POST {path} HTTP/1.1",
        f"host: {host_header}",
        f"content-length: {len(body)}",
        "user-agent: shootout",
    ]
    lines.extend(
        f"{name}: {value}"
        for name, value in headers.items()
        if name.lower() not in ("host", "content-length", "user-agent")
    )
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


_MAX_REDIRECTS = 5


async def stream_chat(
    client: StreamClient,
    request: ChatRequest,
    *,
    on_delta: DeltaCallback | None = None,
    result: StreamResult | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> StreamResult:
    """Send one streaming chat completion through `client` and time it. Never raises for a
    failed request (only re-raises task cancellation after marking the result "cancelled").

    `result` may be passed in to watch it fill (the playground keeps it to persist partial
    answers); `body`/`headers` may be passed pre-built by a load generator.
    """
    if result is None:
        result = StreamResult()
    result.max_tokens = request.params.max_tokens
    try:
        url = request_url(request)
        exchange_class = (
            TritonExchange if get_adapter(request.kind).wire == "triton_generate" else Exchange
        )
        if headers is None:
            headers = build_headers(request)
        if body is None:
            body = json.dumps(build_body(request)).encode()
    except (KeyError, ValueError) as error:
        return fail_result(result, "config", str(error.args[0] if error.args else error))
    async with client._slots:
        result.start = perf_counter()
        deadline = (
            result.start + request.total_timeout_s if request.total_timeout_s is not None else None
        )
        for _hop in range(_MAX_REDIRECTS + 1):
            exchange = await _send(
                client, url, body, headers, request, result, on_delta, deadline, exchange_class
            )
            if exchange is None:
                return result
            if exchange.location is None or exchange.error_class is not None:
                break
            target = urljoin(url, exchange.location)
            if urlsplit(target).scheme not in ("http", "https"):
                return fail_result(
                    result,
                    "bad_redirect",
                    f"The engine redirected to a {urlsplit(target).scheme or 'schemeless'} "
                    "address; only http and https are followed.",
                )
            if http.origin(target) != http.origin(url):
                # The key was meant for the engine's host, not for wherever it points us.
                headers = {
                    k: v for k, v in headers.items() if k.lower() not in ("authorization", "cookie")
                }
            url = target
        else:
            return fail_result(
                result, "redirect_loop", "The engine redirected too many times (a redirect loop)."
            )
    if result.error_class is not None:
        return result
    if exchange.mode == "body" or exchange.location is not None:
        raw = bytes(exchange.body)
        status = exchange.status
        if status >= 400:
            detail = error_message(raw) if raw.strip() else "no details in the body"
            phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
            return fail_result(
                result, "http_status", f"HTTP {status} {phrase}: {detail}".replace(" :", ":")
            )
        content_type = (
            exchange.headers.get(b"content-type", b"").decode("latin-1").split(";")[0] or "none"
        )
        return fail_result(
            result,
            "wrong_content_type",
            f"Expected an event stream, got content type {content_type}: "
            f"{raw[:200].decode('utf-8', 'replace')!r}",
        )
    read_engine_times(result, request.kind, exchange.headers)
    return _finish(result)


def read_engine_times(result: StreamResult, kind: str, headers: dict[bytes, bytes]) -> None:
    """The engine's own times of an ended stream, read by its kind's adapter from the closing
    chunks' fields and the response headers: once per request, never per chunk."""
    try:
        result.engine_times = get_adapter(kind).engine_times(
            result.engine_fields or {}, result.usage, headers
        )
    except Exception:  # noqa: BLE001 - an odd report is "not reported", never a lost answer
        result.engine_times = None


async def _send(
    client: StreamClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    request: ChatRequest,
    result: StreamResult,
    on_delta: DeltaCallback | None,
    deadline: float | None,
    exchange_class: type[Exchange] = Exchange,
) -> Exchange | None:
    """One HTTP exchange (a stale keep-alive connection is retried once on a fresh one)."""
    key, host_header, path = split_url(url)
    payload = request_bytes(host_header, path, body, headers)
    for attempt in range(2):
        connection = client._take_idle(key) if attempt == 0 else None
        if connection is None:
            try:
                connection = await client._connect(key, request.connect_timeout_s)
            except asyncio.CancelledError:
                fail_result(result, "cancelled", "Stopped by the user.")
                raise
            except Exception as error:  # noqa: BLE001 - one request's failure never escapes
                fail_result(result, *classify_exception(error))
                return None
            fresh = True
        else:
            fresh = False
        exchange = exchange_class(
            connection, result, on_delta, deadline, request.read_timeout_s, request.max_response_bytes
        )
        connection.exchange = exchange
        assert connection.transport is not None
        connection.transport.write(payload)
        try:
            await exchange.finished
        except asyncio.CancelledError:
            # Awaiting `finished` cancelled it too, so mark the result here, then drop the connection.
            fail_result(result, "cancelled", "Stopped by the user.")
            exchange.fault("cancelled", "Stopped by the user.")
            raise
        if exchange.error_class == "closed_early" and not fresh:
            result.error_class = result.error = None
            result.end = None
            continue
        if exchange.error_class == "closed_early":
            result.error_class = "protocol_error"
        return exchange
    return exchange


def _finish(result: StreamResult) -> StreamResult:
    """Judge a stream that ended without a transport error, and fix its E2E."""
    last = max((c.times[-1] for c in result.choices.values() if c.times), default=None)
    if last is not None:
        result.e2e_s = last - result.start
    has_content = any(c.times for c in result.choices.values())
    finished = bool(result.choices) and all(c.finish_reason for c in result.choices.values())
    if not has_content:
        what = "only usage" if result.usage else "no text"
        return fail_result(
            result, "no_content", f"The stream ended with {what}: the engine produced no answer."
        )
    if not result.done:
        return fail_result(
            result, "stream_cut", "The stream ended before [DONE]: the answer may be incomplete."
        )
    if not finished:
        return fail_result(
            result,
            "stream_cut",
            "The stream ended without a finish reason: the answer may be incomplete.",
        )
    result.ok = True
    return result
