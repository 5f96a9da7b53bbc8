"""The load generator's HTTP path: streaming chat over raw asyncio connections.

Why not the shared client's httpx2 path: measured on this machine (2 cores, loopback, the
scripted server, 128 streams of 256 tokens; `benchmarks/bench_client_cpu.py`), httpx2 costs
about 45 µs of client CPU per streamed token, over four times the 10 µs target. This path
costs a few µs: the C HTTP parser of `httptools` (llhttp, the parser of uvicorn and Node.js)
fed straight from `asyncio.Protocol.data_received`, `orjson` for the one JSON parse per event,
and, in the benchmark worker, the `uvloop` event loop. Each chunk is handled synchronously in
the read callback (a timestamp, one parse, three list appends); the request's coroutine wakes
once, when the answer is complete. Read and total timeouts are checked by one watchdog per
pool instead of a timer per chunk.

It fills the shared client's `StreamResult` with the same semantics (TTFT on the first chunk
that carries content, E2E at the last content chunk, [DONE] and a finish reason required,
the same error classes), and `tests/services/bench/test_transport.py` checks both paths
against each other on the same scripted streams and faults. Redirects are rare for an
inference endpoint: a 3xx answer is handed to the shared client, which follows them.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools

from services.client import ChatRequest, ChoiceStream, StreamResult, build_body, build_headers, chat_url

try:
    import orjson

    _loads: Callable[[bytes], Any] = orjson.loads
    _dumps: Callable[[Any], bytes] = orjson.dumps
except ImportError:  # pragma: no cover - orjson is in requirements; json works, only slower
    import json

    _loads = json.loads

    def _dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()


_ERROR_BODY_BYTES = 64 * 1024
_MAX_EVENT_BYTES = 16 * 1024 * 1024
WATCHDOG_INTERVAL_S = 0.25


class _Fault(Exception):
    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.message = message


def _error_detail(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = _loads(body)
    except ValueError:
        return text[:500]
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        if isinstance(error, dict):
            for key in ("message", "detail", "msg"):
                if error.get(key):
                    return str(error[key])[:500]
        elif isinstance(error, str):
            return error[:500]
        for key in ("detail", "message"):
            if parsed.get(key):
                return str(parsed[key])[:500]
    return text[:500]


def _event_data(event: bytes) -> bytes | None:
    data: list[bytes] = []
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value[:1] == b" " else value)
    return b"\n".join(data) if data else None


class _Exchange:
    """One request/response on a connection: parses the stream into a StreamResult."""

    __slots__ = (
        "result", "future", "status", "reason", "content_type", "error_body", "buffer", "streaming",
        "last_data", "deadline", "read_timeout", "finished", "keep_alive", "got_bytes",
    )

    def __init__(self, result: StreamResult, future: asyncio.Future[None], read_timeout: float,
                 deadline: float | None) -> None:
        self.result = result
        self.future = future
        self.status = 0
        self.reason = b""
        self.content_type = b""
        self.error_body = b""
        self.buffer = b""
        self.streaming = False
        self.last_data = time.perf_counter()
        self.deadline = deadline
        self.read_timeout = read_timeout
        self.finished = False
        self.keep_alive = True
        self.got_bytes = False

    def fail(self, error_class: str, message: str) -> None:
        result = self.result
        if result.error_class is None:
            result.ok = False
            result.error_class = error_class
            result.error = message
        if result.end is None:
            result.end = time.perf_counter()
        self.complete()

    def complete(self) -> None:
        self.finished = True
        if not self.future.done():
            self.future.set_result(None)

    # -- body handling ------------------------------------------------------------------
    def body(self, data: bytes, now: float) -> None:
        if not self.streaming:
            if len(self.error_body) < _ERROR_BODY_BYTES:
                self.error_body += data
            return
        if self.result.done:
            return
        buffer = self.buffer + data if self.buffer else data
        if b"\n\n" not in buffer:
            if b"\r" in buffer:
                buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                if b"\n\n" in buffer:
                    self._events(buffer, now)
                    return
            if len(buffer) > _MAX_EVENT_BYTES:
                raise _Fault("invalid_json", "A stream event exceeded 16 MB without ending.")
            self.buffer = buffer
            return
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        self._events(buffer, now)

    def _events(self, buffer: bytes, now: float) -> None:
        events = buffer.split(b"\n\n")
        self.buffer = events.pop()
        result = self.result
        choices = result.choices
        for event in events:
            if event[:6] == b"data: " and b"\n" not in event:
                payload = event[6:]
            else:
                payload = _event_data(event)
                if payload is None:
                    continue
            if payload == b"[DONE]":
                result.done = True
                result.end = now
                self.buffer = b""
                return
            try:
                chunk = _loads(payload)
            except ValueError:
                raise _Fault("invalid_json", "A stream chunk was not valid JSON: "
                             f"{payload[:120].decode('utf-8', 'replace')!r}") from None
            if chunk.__class__ is not dict:
                raise _Fault("invalid_json", "A stream chunk was JSON but not an object.")
            listed = chunk.get("choices")
            if listed:
                for entry in listed:
                    delta = entry.get("delta")
                    if delta:
                        content = delta.get("content") or delta.get("reasoning_content")
                        if content:
                            index = entry.get("index") or 0
                            choice = choices.get(index)
                            if choice is None:
                                choice = choices[index] = ChoiceStream(index)
                            choice.parts.append(content)
                            choice.times.append(now)
                            choice.chars.append(len(content))
                            if result.ttft_s is None:
                                result.ttft_s = now - result.start
                    reason = entry.get("finish_reason")
                    if reason:
                        index = entry.get("index") or 0
                        choice = choices.get(index)
                        if choice is None:
                            choice = choices[index] = ChoiceStream(index)
                        choice.finish_reason = reason
                        result.timings = chunk.get("timings") or result.timings
            usage = chunk.get("usage")
            if usage:
                result.usage = usage
                result.timings = chunk.get("timings") or result.timings
                result.response_id = chunk.get("id")
            elif chunk.get("error"):
                raise _Fault("stream_error", "The engine reported an error mid-stream: "
                             + _error_detail(_dumps(chunk)))

    def end_of_message(self) -> None:
        """The HTTP response ended: judge what the stream carried."""
        result = self.result
        if not self.streaming:
            if result.error_class is None:
                if 300 <= self.status < 400:
                    self.fail("redirect", f"HTTP {self.status}")
                elif self.status >= 400:
                    detail = _error_detail(self.error_body) if self.error_body else "no details in the body"
                    phrase = self.reason.decode("latin-1")
                    self.fail("http_status", f"HTTP {self.status} {phrase}: {detail}".replace(" :", ":"))
                else:
                    shown = self.content_type.decode("latin-1").split(";")[0] or "none"
                    self.fail("wrong_content_type", f"Expected an event stream, got content type {shown}: "
                              f"{self.error_body[:200].decode('utf-8', 'replace')!r}")
            return
        if self.buffer.strip() and not result.done:
            payload = _event_data(self.buffer.replace(b"\r\n", b"\n").strip(b"\n"))
            if payload == b"[DONE]":
                result.done = True
        if result.end is None:
            result.end = time.perf_counter()
        _judge(result)
        self.complete()


def _judge(result: StreamResult) -> None:
    """The shared client's verdict on a stream that ended without a transport error."""
    last = max((c.times[-1] for c in result.choices.values() if c.times), default=None)
    if last is not None:
        result.e2e_s = last - result.start
    if result.error_class is not None:
        return
    has_content = any(c.times for c in result.choices.values())
    finished = bool(result.choices) and all(c.finish_reason for c in result.choices.values())
    if not has_content:
        what = "only usage" if result.usage else "no text"
        _mark(result, "no_content", f"The stream ended with {what}: the engine produced no answer.")
    elif not result.done:
        _mark(result, "stream_cut", "The stream ended before [DONE]: the answer may be incomplete.")
    elif not finished:
        _mark(result, "stream_cut", "The stream ended without a finish reason: the answer may be incomplete.")
    else:
        result.ok = True


def _mark(result: StreamResult, error_class: str, message: str) -> None:
    result.ok = False
    result.error_class = error_class
    result.error = message


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one exchange at a time."""

    def __init__(self, pool: _HostPool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.exchange: _Exchange | None = None
        self.closed = False
        self.parser_complete = False
        self._now = 0.0

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        exchange = self.exchange
        if exchange is None:
            # Bytes outside an exchange (a server talking out of turn): drop the connection.
            self.close()
            return
        exchange.last_data = now
        exchange.got_bytes = True
        self._now = now
        try:
            self.parser.feed_data(data)
        except _Fault as fault:
            exchange.fail(fault.error_class, fault.message)
            self.close()
        except httptools.HttpParserUpgrade:  # pragma: no cover - we never ask for an upgrade
            exchange.fail("protocol_error", "The engine switched protocols.")
            self.close()
        except httptools.HttpParserError as error:
            exchange.fail("protocol_error", f"The HTTP exchange broke the protocol: {error}")
            self.close()
        if exchange.finished:
            self.release()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        exchange = self.exchange
        self.pool.forget(self)
        if exchange is not None and not exchange.finished:
            if exchange.streaming:
                # A cut mid-stream: judge like the shared client (stream_cut when no [DONE]).
                exchange.result.end = exchange.result.end or time.perf_counter()
                _judge(exchange.result)
                if exchange.result.error_class is None and not exchange.result.done:
                    _mark(exchange.result, "stream_cut", "The connection closed before the answer was complete.")
                exchange.complete()
            elif exchange.got_bytes:
                exchange.fail("protocol_error", "The connection broke before the answer's headers were complete.")
            else:
                exchange.fail("connection_reset", "The engine closed the connection without answering.")

    # httptools callbacks
    def on_status(self, status: bytes) -> None:
        if self.exchange is not None:
            self.exchange.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.exchange is not None and name.lower() == b"content-type":
            self.exchange.content_type = value

    def on_headers_complete(self) -> None:
        exchange = self.exchange
        if exchange is None:
            return
        exchange.status = self.parser.get_status_code()
        exchange.result.http_status = exchange.status
        exchange.keep_alive = self.parser.should_keep_alive()
        exchange.streaming = exchange.status < 300 and exchange.content_type.lower().startswith(b"text/event-stream")

    def on_body(self, body: bytes) -> None:
        exchange = self.exchange
        if exchange is None or exchange.finished:
            return
        try:
            exchange.body(body, self._now)
        except _Fault as fault:
            # Raising through httptools would turn it into a parser error: record it instead.
            exchange.fail(fault.error_class, fault.message)

    def on_message_complete(self) -> None:
        self.parser_complete = True
        exchange = self.exchange
        if exchange is not None and not exchange.finished:
            exchange.end_of_message()

    # pool side
    def send(self, payload: bytes, exchange: _Exchange) -> None:
        self.exchange = exchange
        self.parser = httptools.HttpResponseParser(self)
        self.parser_complete = False
        assert self.transport is not None
        self.transport.write(payload)

    def release(self) -> None:
        """After an exchange: keep the connection for the next request only when the HTTP
        message ended cleanly; anything else (errors, Connection: close) closes it."""
        exchange = self.exchange
        self.exchange = None
        if self.closed:
            return
        clean = (
            exchange is not None
            and exchange.keep_alive
            and exchange.result.error_class is None
            and self.parser_complete
        )
        if clean:
            self.pool.active.discard(self)
            self.pool.put_back(self)
        else:
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.pool.forget(self)
            if self.transport is not None:
                self.transport.abort()

    def check(self, now: float) -> None:
        exchange = self.exchange
        if exchange is None or exchange.finished:
            return
        if exchange.deadline is not None and now > exchange.deadline:
            exchange.fail("total_timeout", "The answer took longer than the request's total time limit.")
            self.close()
        elif now - exchange.last_data > exchange.read_timeout:
            exchange.fail("read_timeout", "The engine went silent for longer than the read timeout.")
            self.close()


@dataclass(frozen=True)
class _Target:
    host: str
    port: int
    tls: bool
    path: str
    host_header: str


class _HostPool:
    def __init__(self, target: _Target) -> None:
        self.target = target
        self.idle: deque[_Connection] = deque()
        self.active: set[_Connection] = set()

    def put_back(self, connection: _Connection) -> None:
        self.idle.append(connection)

    def forget(self, connection: _Connection) -> None:
        self.active.discard(connection)
        try:
            self.idle.remove(connection)
        except ValueError:
            pass


class FastChatClient:
    """A pool of raw HTTP/1.1 connections for one run; create and use it inside one event loop.

    `open_connections` is how many connections are live now (the 500-streams check reads it).
    """

    def __init__(self, *, connect_timeout_s: float = 10.0) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.pools: dict[tuple[str, int, bool], _HostPool] = {}
        self._watchdog: asyncio.Task[None] | None = None
        self._fallback: Any = None
        self._ssl: ssl.SSLContext | None = None
        self.closed = False

    @property
    def open_connections(self) -> int:
        return sum(len(pool.active) + len(pool.idle) for pool in self.pools.values())

    @property
    def streams_in_flight(self) -> int:
        return sum(len(pool.active) for pool in self.pools.values())

    def _target(self, url: str) -> _Target:
        parts = urlsplit(url)
        tls = parts.scheme == "https"
        host = parts.hostname or "127.0.0.1"
        port = parts.port or (443 if tls else 80)
        default_port = (tls and port == 443) or (not tls and port == 80)
        host_header = host if default_port else f"{host}:{port}"
        if ":" in host and not host.startswith("["):
            host_header = f"[{host}]" if default_port else f"[{host}]:{port}"
        return _Target(host, port, tls, parts.path or "/", host_header)

    def prepare(self, request: ChatRequest, *, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[_Target, bytes]:
        """The request's target and its exact bytes (build once, send many times)."""
        url = chat_url(request.base_url)
        target = self._target(url)
        if headers is None:
            headers = build_headers(request)
        if body is None:
            body = _dumps(build_body(request))
        lines = [f"POST {target.path} HTTP/1.1", f"host: {target.host_header}", f"content-length: {len(body)}",
                 "connection: keep-alive"]
        lines += [f"{name}: {value}" for name, value in headers.items()
                  if name.lower() not in ("host", "content-length", "connection")]
        return target, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _connect(self, pool: _HostPool) -> _Connection:
        loop = asyncio.get_running_loop()
        target = pool.target
        ssl_context = None
        if target.tls:
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            ssl_context = self._ssl
        _transport, connection = await asyncio.wait_for(
            loop.create_connection(lambda: _Connection(pool), target.host, target.port, ssl=ssl_context),
            self.connect_timeout_s,
        )
        return connection

    def _pool(self, target: _Target) -> _HostPool:
        key = (target.host, target.port, target.tls)
        pool = self.pools.get(key)
        if pool is None:
            pool = self.pools[key] = _HostPool(target)
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch())
        return pool

    async def _watch(self) -> None:
        while not self.closed:
            await asyncio.sleep(WATCHDOG_INTERVAL_S)
            now = time.perf_counter()
            for pool in list(self.pools.values()):
                for connection in list(pool.active):
                    connection.check(now)

    async def connect_ahead(self, base_url: str, count: int) -> int:
        """Open up to `count` idle connections before a run, so that the measured requests
        do not pay for connection set-up; returns how many are idle now."""
        pool = self._pool(self._target(chat_url(base_url)))
        missing = max(0, count - len(pool.idle))
        opened = await asyncio.gather(*(self._connect(pool) for _ in range(missing)), return_exceptions=True)
        for connection in opened:
            if isinstance(connection, _Connection):
                pool.put_back(connection)
        return len(pool.idle)

    async def stream_chat(self, request: ChatRequest, *, payload: tuple[_Target, bytes] | None = None,
                          result: StreamResult | None = None, timing: dict[str, float] | None = None) -> StreamResult:
        """Send one streaming chat completion and time it; never raises for a failed request.

        TTFT and E2E count from the moment the request is handed to the connection; when no
        idle connection was there, that moment is before connecting, so they include the
        set-up (as a real user's would), and `timing["connect_s"]` says how long it took.
        """
        if result is None:
            result = StreamResult()
        try:
            target, data = payload or self.prepare(request)
        except (KeyError, ValueError) as error:
            message = error.args[0] if error.args else str(error)
            result.error_class, result.error, result.end = "config", str(message), time.perf_counter()
            return result
        pool = self._pool(target)
        try:
            for attempt in range(2):
                reused = bool(pool.idle)
                fresh = False
                if reused:
                    connection = pool.idle.pop()
                else:
                    result.start = time.perf_counter()
                    connection = await self._connect(pool)
                    fresh = True
                    if timing is not None:
                        timing["connect_s"] = time.perf_counter() - result.start
                pool.active.add(connection)
                loop = asyncio.get_running_loop()
                future: asyncio.Future[None] = loop.create_future()
                deadline = None
                if not fresh:
                    result.start = time.perf_counter()
                if request.total_timeout_s is not None:
                    deadline = result.start + request.total_timeout_s
                exchange = _Exchange(result, future, request.read_timeout_s, deadline)
                connection.send(data, exchange)
                try:
                    await future
                except asyncio.CancelledError:
                    connection.close()
                    if result.error_class is None:
                        result.ok = False
                        result.error_class, result.error = "cancelled", "Stopped by the user."
                        result.end = result.end or time.perf_counter()
                    raise
                if result.error_class == "connection_reset" and reused and attempt == 0:
                    # A kept-alive connection the server had already closed: retry once, fresh.
                    result.error_class = result.error = None
                    result.end = None
                    continue
                break
        except asyncio.CancelledError:
            raise
        except (TimeoutError, asyncio.TimeoutError):
            return _connect_failure(result, "connect_timeout", "No connection within the connect timeout.")
        except ssl.SSLError as error:
            return _connect_failure(result, "tls", f"The TLS handshake failed: {error}")
        except socket.gaierror:
            return _connect_failure(result, "dns", "The host name does not resolve.")
        except ConnectionRefusedError:
            return _connect_failure(result, "connect_refused", "Nothing listens at that address (connection refused).")
        except OSError as error:
            return _connect_failure(result, "connect_error", f"The connection could not be opened: {error}")
        if result.error_class == "redirect":
            return await self._follow_redirects(request, result)
        if result.error_class == "connection_reset":
            result.error_class = "stream_cut" if result.ttft_s is not None else "protocol_error"
        return result

    async def _follow_redirects(self, request: ChatRequest, result: StreamResult) -> StreamResult:
        from services.client import make_http_client, stream_chat

        if self._fallback is None:
            self._fallback = make_http_client(16, connect_timeout_s=self.connect_timeout_s)
        fresh = StreamResult()
        return await stream_chat(self._fallback, request, result=fresh)

    async def aclose(self) -> None:
        self.closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        for pool in self.pools.values():
            for connection in list(pool.idle) + list(pool.active):
                connection.close()
        if self._fallback is not None:
            await self._fallback.aclose()

    async def __aenter__(self) -> FastChatClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


def _connect_failure(result: StreamResult, error_class: str, message: str) -> StreamResult:
    result.ok = False
    result.error_class = error_class
    result.error = message
    result.end = time.perf_counter()
    return result
