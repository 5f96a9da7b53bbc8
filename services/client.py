"""The one streaming chat client: HTTP, SSE parsing and timing for the playground and the
load benchmarks, so that the same code measures both.

Hot path (chosen by measurement, see benchmarks/client_cpu_per_token.py): one shared
`StreamClient` per run (a keep-alive pool of asyncio protocol connections whose HTTP/1.1 is
parsed by httptools), the SSE events split on blank lines, one JSON parse per event, and per
content chunk only a timestamp, the text and its length appended to lists, all inside the
protocol's data_received callback. Everything derived (TTFT, inter-token gaps, token
spreading) is computed once, after the stream ends.

Timing: `time.perf_counter` at the send and at each content chunk's arrival (the role-only
chunk and the usage trailer carry no content). TTFT, ITL, TPOT and E2E are derived from
those times and the usage by services/measure.py, the one definition every page uses
(`StreamResult.metrics()`); `ttft_s` and `e2e_s` are also kept live for the Playground.

One request's failure never raises: `stream_chat` returns a `StreamResult` with ok=False,
an `error_class` (keys of `ERROR_CLASSES`) and a plain-words `error`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import socket
import ssl
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from time import perf_counter
from typing import Any
from urllib.parse import urljoin, urlsplit

import httptools
import orjson

from services import http
from services.config import key_env_allowed, key_env_refusal
from services.engines import SamplingParams, get_adapter
from services.measure import RequestMetrics, cached_tokens, measure_stream, output_tokens, token_count

#: error_class -> what it means, in plain words (shown in the UI and in reports).
ERROR_CLASSES: dict[str, str] = {
    "config": "the request could not be built (bad URL or a missing API-key variable)",
    "connect_refused": "nothing listens at that address (connection refused)",
    "dns": "the host name does not resolve",
    "tls": "the TLS (https) handshake failed",
    "connect_error": "the connection could not be opened",
    "connect_timeout": "no connection within the connect timeout",
    "read_timeout": "the engine went silent for longer than the read timeout",
    "write_timeout": "the request could not be sent in time",
    "pool_timeout": "no free connection in the client pool in time",
    "total_timeout": "the answer took longer than the request's total time limit",
    "too_large": "the answer was larger than the request's byte limit",
    "http_status": "the engine answered with an HTTP error status",
    "redirect_loop": "the engine redirected too many times",
    "bad_redirect": "the engine redirected to an address that is not http or https",
    "wrong_content_type": "the engine did not answer with an event stream",
    "invalid_json": "a stream chunk was not valid JSON",
    "stream_error": "the engine sent an error object inside the stream",
    "stream_cut": "the stream ended before the answer was complete",
    "no_content": "the stream carried no text at all",
    "protocol_error": "the HTTP exchange broke the protocol",
    "cancelled": "stopped by the user",
    "error": "an unexpected error",
}

_STANDARD_FIELDS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "n",
        "response_format",
        "frequency_penalty",
        "presence_penalty",
        "logprobs",
        "top_logprobs",
        "user",
        "tools",
        "tool_choice",
    }
)
_MAX_EVENT_BYTES = 16 * 1024 * 1024
#: The JSON parser of the hot path: orjson parses a typical 250-byte chunk in 0.47 µs
#: against 2.2 µs for json.loads (benchmarks/client_cpu_per_token.py --json).
_loads = orjson.loads
#: Content chunks tried for a reusable shape before a stream is read the general way throughout.
_SHAPE_TRIES = 4
_ERROR_BODY_BYTES = 64 * 1024
#: Ten minutes covers a 32k-token answer at 60 tokens/s; benchmarks set their own.
DEFAULT_TOTAL_TIMEOUT_S = 600.0
#: About 200k streamed tokens of SSE (~150 bytes each): far beyond any real answer.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class ChatRequest:
    """Everything needed to send one chat completion. The API key is never held here:
    `api_key_env` names the environment variable read at send time."""

    base_url: str
    model: str
    messages: list[dict[str, Any]]
    params: SamplingParams = SamplingParams()
    kind: str = "openai"
    api_key_env: str | None = None
    response_schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    extra_body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    include_usage: bool = True
    #: Longest silence allowed between two reads, seconds.
    read_timeout_s: float = 300.0
    connect_timeout_s: float = 10.0
    #: Limit on the whole answer in seconds (a never-ending stream stops here).
    total_timeout_s: float | None = DEFAULT_TOTAL_TIMEOUT_S
    #: Limit on the bytes received for one answer, headers included (a stream that never
    #: ends, or one huge chunk, stops here instead of filling memory and the database).
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES


@dataclass(slots=True)
class ChoiceStream:
    """One choice of the answer (n > 1 gives several), with its raw arrival record."""

    index: int
    parts: list[str] = field(default_factory=list)
    #: perf_counter of each content chunk's arrival, and the characters it carried.
    times: list[float] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    finish_reason: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass(slots=True)
class StreamResult:
    """One request's outcome. Times are seconds; `start` is the perf_counter at send."""

    ok: bool = False
    start: float = 0.0
    end: float | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    choices: dict[int, ChoiceStream] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    done: bool = False
    http_status: int | None = None
    error_class: str | None = None
    error: str | None = None
    response_id: str | None = None

    # -- answer ----------------------------------------------------------------------
    def choice(self, index: int = 0) -> ChoiceStream | None:
        return self.choices.get(index)

    @property
    def text(self) -> str:
        first = self.choices.get(0)
        return first.text if first else ""

    @property
    def texts(self) -> list[str]:
        return [self.choices[i].text for i in sorted(self.choices)]

    @property
    def finish_reason(self) -> str | None:
        first = self.choices.get(0)
        return first.finish_reason if first else None

    # -- figures (services/measure.py defines them) ----------------------------------
    def metrics(self) -> RequestMetrics:
        """TTFT, per-token ITL, TPOT, E2E and token counts of the stream so far."""
        return measure_stream(
            self.start, [self.choices[i] for i in sorted(self.choices)], self.usage, self.timings
        )

    @property
    def prompt_tokens(self) -> int | None:
        return token_count(self.usage.get("prompt_tokens")) if self.usage else None

    @property
    def completion_tokens(self) -> int | None:
        return token_count(self.usage.get("completion_tokens")) if self.usage else None

    @property
    def cached_tokens(self) -> int | None:
        return cached_tokens(self.usage, self.timings)

    @property
    def output_tokens(self) -> int:
        return output_tokens(self.usage, sum(len(c.times) for c in self.choices.values()))

    def summary(self) -> dict[str, Any]:
        """Plain JSON-able figures (for storage and reports)."""
        figures = self.metrics()
        return {
            "ok": self.ok,
            "ttft_s": figures.ttft_s,
            "e2e_s": figures.e2e_s,
            "tpot_s": figures.tpot_s,
            "itl_mean_s": figures.itl_mean_s,
            "itl_p90_s": figures.itl_p90_s,
            "output_tokens": figures.output_tokens,
            "prompt_tokens": figures.prompt_tokens,
            "completion_tokens": figures.completion_tokens,
            "cached_tokens": figures.cached_tokens,
            "finish_reason": self.finish_reason,
            "http_status": self.http_status,
            "error_class": self.error_class,
            "error": self.error,
        }


#: Called for each content delta: (choice index, text delta, the result so far).
DeltaCallback = Callable[[int, str, StreamResult], None]


def merge_choice_usage(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Usage of a stream that reports each choice separately: completions add up, the
    prompt (the same for every choice) counts once."""
    completion = (token_count(first.get("completion_tokens")) or 0) + (
        token_count(second.get("completion_tokens")) or 0
    )
    prompt = max(
        token_count(first.get("prompt_tokens")) or 0, token_count(second.get("prompt_tokens")) or 0
    )
    merged = {
        **first,
        "completion_tokens": completion,
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
    }
    merged["usage_reports"] = int(first.get("usage_reports", 1)) + 1
    return merged


# ---------------------------------------------------------------------------------------
# Building the request
# ---------------------------------------------------------------------------------------


def chat_url(base_url: str) -> str:
    """The chat-completions URL from a base URL given with or without /v1."""
    url = base_url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base URL must start with http:// or https:// (got {base_url!r})")
    if url.endswith("/chat/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/chat/completions"
    return url + "/v1/chat/completions"


def build_body(request: ChatRequest) -> dict[str, Any]:
    """The JSON body: OpenAI fields, then the engine adapter's extras, then `extra_body`."""
    params = request.params
    body: dict[str, Any] = {"model": request.model, "messages": request.messages, "stream": True}
    if request.include_usage:
        body["stream_options"] = {"include_usage": True}
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if params.top_p is not None:
        body["top_p"] = params.top_p
    if params.max_tokens is not None:
        body["max_tokens"] = params.max_tokens
    if params.seed is not None:
        body["seed"] = params.seed
    if params.stop:
        body["stop"] = list(params.stop)
    if params.n > 1:
        body["n"] = params.n
    adapter = get_adapter(request.kind)
    body.update(adapter.request_extras(params))
    if request.response_schema is not None:
        body["response_format"] = adapter.response_format(request.response_schema, request.schema_name)
    if request.extra_body:
        body.update(request.extra_body)
    return body


def build_headers(request: ChatRequest, *, resolve_key: bool = True) -> dict[str, str]:
    """Request headers; the API key is read from its environment variable now, never stored."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if request.headers:
        headers.update(request.headers)
    if request.api_key_env and resolve_key:
        if not key_env_allowed(request.api_key_env):
            raise KeyError(key_env_refusal(request.api_key_env))
        key = os.environ.get(request.api_key_env)
        if not key:
            raise KeyError(f"environment variable {request.api_key_env} (the API key) is not set")
        headers["authorization"] = f"Bearer {key}"
    return headers


def make_http_client(
    max_connections: int = 100, *, connect_timeout_s: float = 10.0, read_timeout_s: float = 300.0
) -> StreamClient:
    """The one connection pool of a run. Create it inside the event loop that uses it."""
    return StreamClient(
        max_connections, connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s
    )


# ---------------------------------------------------------------------------------------
# Transport: HTTP/1.1 on asyncio protocols, parsed by httptools (llhttp, in C)
#
# Why not httpx2 here: measured at 128 streams x 256 tokens, httpx2's stack (anyio, httpcore2,
# h11 in pure Python) cost about 54 µs of client CPU per token (openai SDK: 80 µs), five times
# issue 4's budget. Protocol callbacks do the whole per-chunk work synchronously in
# data_received: no coroutine switch per chunk, C chunked decoding, one json.loads per event.
# ---------------------------------------------------------------------------------------

_Key = tuple[str, str, int]


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
        self._idle: dict[_Key, list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._ssl: ssl.SSLContext | None = None
        self.closed = False

    async def __aenter__(self) -> StreamClient:
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
        key = _split_url(url)[0]
        opened = await asyncio.gather(
            *(self._connect(key, timeout_s) for _ in range(count)), return_exceptions=True
        )
        ready = 0
        for connection in opened:
            if not isinstance(connection, BaseException):
                self._put_idle(connection)
                ready += 1
        return ready

    async def _connect(self, key: _Key, timeout_s: float) -> _Connection:
        scheme, host, port = key
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            context = self._ssl
        loop = asyncio.get_running_loop()
        _transport, connection = await asyncio.wait_for(
            loop.create_connection(
                lambda: _Connection(self, key),
                host,
                port,
                ssl=context,
                server_hostname=host if context else None,
            ),
            timeout_s,
        )
        return connection

    def _take_idle(self, key: _Key) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if not connection.lost:
                return connection
        return None

    def _put_idle(self, connection: _Connection) -> None:
        if self.closed or connection.lost:
            connection.close()
            return
        self._idle.setdefault(connection.key, []).append(connection)

    def _forget(self, connection: _Connection) -> None:
        self._open.discard(connection)
        idle = self._idle.get(connection.key)
        if idle and connection in idle:
            idle.remove(connection)


class _Connection(asyncio.Protocol):
    __slots__ = ("exchange", "key", "lost", "pool", "transport")

    def __init__(self, pool: StreamClient, key: _Key) -> None:
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.exchange: _Exchange | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
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


class _Exchange:
    """One request and its response on one connection: the httptools callbacks and the SSE
    hot path. Fills `result`; `finished` resolves when the caller may judge it."""

    __slots__ = (
        "body",
        "buffer",
        "bytes_left",
        "choices",
        "complete",
        "connection",
        "deadline",
        "error_class",
        "event_head",
        "event_tail",
        "finished",
        "headers",
        "location",
        "loop",
        "mode",
        "now",
        "on_delta",
        "parser",
        "read_timeout_s",
        "received_any",
        "result",
        "shape_choice",
        "shape_head",
        "shape_tail",
        "shape_tries",
        "status",
        "timer",
    )

    def __init__(
        self,
        connection: _Connection,
        result: StreamResult,
        on_delta: DeltaCallback | None,
        deadline: float | None,
        read_timeout_s: float,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.connection = connection
        self.bytes_left = max_bytes
        self.parser = httptools.HttpResponseParser(self)
        self.result = result
        self.choices = result.choices
        self.on_delta = on_delta
        self.deadline = deadline
        self.read_timeout_s = read_timeout_s
        self.loop = asyncio.get_running_loop()
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self.now = result.start
        self.received_any = False
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.mode = ""
        self.buffer = b""
        self.body = bytearray()
        self.complete = False
        self.error_class: str | None = None
        self.location: str | None = None
        # The chunk shape (see _learn_shape): the bytes around a plain content chunk's text.
        self.shape_head = self.shape_tail = self.event_head = self.event_tail = b""
        self.shape_choice: ChoiceStream | None = None
        self.shape_tries = _SHAPE_TRIES
        self.timer: asyncio.TimerHandle | None = self.loop.call_later(self._next_check(), self._watchdog)

    # -- timers ----------------------------------------------------------------------
    def _next_check(self) -> float:
        wait = self.read_timeout_s
        if self.deadline is not None:
            wait = min(wait, self.deadline - perf_counter())
        return max(wait, 0.001)

    def _watchdog(self) -> None:
        self.timer = None
        if self.finished.done():
            return
        now = perf_counter()
        if self.deadline is not None and now >= self.deadline:
            self.fault("total_timeout", "The answer took longer than the request's total time limit.")
            return
        if now - self.now >= self.read_timeout_s:
            self.fault(
                "read_timeout",
                f"The engine went silent for more than {self.read_timeout_s:g} s (read timeout).",
            )
            return
        wait = self.read_timeout_s - (now - self.now)
        if self.deadline is not None:
            wait = min(wait, self.deadline - now)
        self.timer = self.loop.call_later(max(wait, 0.001), self._watchdog)

    # -- ending ----------------------------------------------------------------------
    def settle(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.finished.done():
            self.finished.set_result(None)

    def fault(self, error_class: str, message: str) -> None:
        """Stop this exchange with an error; the connection cannot be reused."""
        if self.error_class is None and not self.finished.done():
            self.error_class = error_class
            _fail(self.result, error_class, message)
        self.mode = "ignore"
        self.connection.close()
        self.settle()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.finished.done():
            return
        if not self.status:
            self.fault(
                "protocol_error" if self.received_any else "closed_early",
                "The engine closed the connection before answering.",
            )
        elif self.mode == "sse":
            self.fault("stream_cut", "The connection closed before the answer was complete.")
        else:
            self.complete = True
            self.settle()

    # -- httptools callbacks ---------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        self.status = status = self.parser.get_status_code()
        self.result.http_status = status
        if status >= 300:
            self.mode = "body"
            location = self.headers.get(b"location")
            if 300 <= status < 400 and location:
                self.location = location.decode("latin-1")
        elif self.headers.get(b"content-type", b"").lower().startswith(b"text/event-stream"):
            self.mode = "sse"
        else:
            self.mode = "body"

    def on_message_complete(self) -> None:
        self.complete = True
        connection = self.connection
        if self.parser.should_keep_alive() and self.error_class is None:
            connection.exchange = None
            connection.pool._put_idle(connection)
        else:
            connection.close()
        self.settle()

    def on_body(self, data: bytes) -> None:
        mode = self.mode
        if mode == "sse":
            # Fast path: one whole event shaped like the learnt content chunk (most of a stream).
            choice = self.shape_choice
            if choice is not None and not self.buffer:
                content = _text_between(data, self.event_head, self.event_tail)
                if content is not None:
                    now = self.now
                    choice.parts.append(content)
                    choice.times.append(now)
                    choice.chars.append(len(content))
                    if self.on_delta is not None:
                        self.on_delta(choice.index, content, self.result)
                    if self.deadline is not None and now > self.deadline:
                        self.fault(
                            "total_timeout",
                            "The answer took longer than the request's total time limit.",
                        )
                    return
            try:
                self._sse(data)
            except Exception as error:  # noqa: BLE001 - a callback bug must not kill the parser
                self.fault("error", f"{type(error).__name__}: {error}")
        elif mode == "body":
            self.body += data
            if len(self.body) > _ERROR_BODY_BYTES:
                self.complete = True
                self.mode = "ignore"
                self.connection.close()
                self.settle()

    # -- the hot path ----------------------------------------------------------------
    def _learn_shape(self, payload: bytes, content: str, choice: ChoiceStream, key: str) -> None:
        """Remember the bytes before and after this plain content chunk's text.

        Engines send nearly every token as the same JSON with only the text changed. A later
        payload that is exactly `head + text + tail`, with no quote, backslash or line break in
        `text`, parses to this same chunk with that text (the string cannot end early, nothing
        else differs), so it is taken without a JSON parse: a third of the client's CPU per token.
        Anything else (escapes, usage, finish, several choices) goes the general way.
        """
        self.shape_tries -= 1
        encoded = orjson.dumps(content)
        for pattern in (b'"%s":%s' % (key.encode(), encoded), b'"%s": %s' % (key.encode(), encoded)):
            at = payload.find(pattern)
            if at >= 0 and payload.find(pattern, at + 1) < 0:
                opening = at + len(pattern) - len(encoded)
                head, tail = payload[: opening + 1], payload[opening + len(encoded) - 1 :]
                # Proof by example: another text in that place must give the same chunk otherwise.
                probe = _loads(head + b"probe" + tail)
                try:
                    probe["choices"][0]["delta"][key] = content
                except (KeyError, IndexError, TypeError):
                    return
                if probe != _loads(payload):
                    return
                self.shape_head, self.shape_tail = head, tail
                self.event_head = b"data: " + self.shape_head
                self.event_tail = self.shape_tail + b"\n\n"
                self.shape_choice = choice
                return

    def _sse(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        events = buffer.split(b"\n\n")
        rest = events.pop()
        if rest and len(rest) > _MAX_EVENT_BYTES:
            self.fault("invalid_json", "A stream event exceeded 16 MB without ending.")
            return
        self.buffer = rest
        now = self.now
        result = self.result
        choices = self.choices
        on_delta = self.on_delta
        shape = self.shape_choice
        for event in events:
            if event[:6] == b"data: " and b"\n" not in event:
                payload = event[6:]
            else:
                payload = _event_data(event)
                if payload is None:
                    continue
            if shape is not None:
                content = _text_between(payload, self.shape_head, self.shape_tail)
                if content is not None:
                    shape.parts.append(content)
                    shape.times.append(now)
                    shape.chars.append(len(content))
                    if on_delta is not None:
                        on_delta(shape.index, content, result)
                    continue
            if payload == b"[DONE]":
                result.done = True
                result.end = now
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
                if not self.finished.done():
                    self.finished.set_result(None)
                self.mode = "drain"
                return
            try:
                chunk = _loads(payload)
            except ValueError:
                self.fault(
                    "invalid_json",
                    f"A stream chunk was not valid JSON: {payload[:120].decode('utf-8', 'replace')!r}",
                )
                return
            if chunk.__class__ is not dict:
                self.fault("invalid_json", "A stream chunk was JSON but not an object.")
                return
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
                            if on_delta is not None:
                                on_delta(index, content, result)
                            if (
                                shape is None
                                and self.shape_tries
                                and len(listed) == 1
                                and not entry.get("finish_reason")
                                and not chunk.get("usage")
                                and not chunk.get("error")
                            ):
                                self._learn_shape(
                                    payload,
                                    content,
                                    choice,
                                    "content" if delta.get("content") else "reasoning_content",
                                )
                                shape = self.shape_choice
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
                # llama.cpp sends one usage trailer per choice when n > 1; vLLM one for all
                # (and, with continuous_usage_stats, a running total on every chunk).
                previous = result.usage
                if (
                    previous is not None
                    and len(choices) > 1
                    and previous.get("usage_reports", 1) < len(choices)
                ):
                    result.usage = merge_choice_usage(previous, usage)
                else:
                    result.usage = usage
                result.timings = chunk.get("timings") or result.timings
                result.response_id = chunk.get("id")
            elif chunk.get("error"):
                message = _error_message(json.dumps(chunk).encode())
                self.fault("stream_error", f"The engine reported an error mid-stream: {message}")
                return
        if self.deadline is not None and now > self.deadline:
            self.fault("total_timeout", "The answer took longer than the request's total time limit.")


# ---------------------------------------------------------------------------------------
# Sending and reading
# ---------------------------------------------------------------------------------------


def _fail(result: StreamResult, error_class: str, message: str) -> StreamResult:
    result.ok = False
    result.error_class = error_class
    result.error = message
    if result.end is None:
        result.end = perf_counter()
    return result


def _error_message(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
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
        if parsed.get("detail"):
            return str(parsed["detail"])[:500]
        if parsed.get("message"):
            return str(parsed["message"])[:500]
    return text[:500]


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


def _split_url(url: str) -> tuple[_Key, str, str]:
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


def _request_bytes(host_header: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
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
    try:
        url = chat_url(request.base_url)
        if headers is None:
            headers = build_headers(request)
        if body is None:
            body = json.dumps(build_body(request)).encode()
    except (KeyError, ValueError) as error:
        return _fail(result, "config", str(error.args[0] if error.args else error))
    async with client._slots:
        result.start = perf_counter()
        deadline = (
            result.start + request.total_timeout_s if request.total_timeout_s is not None else None
        )
        for _hop in range(_MAX_REDIRECTS + 1):
            exchange = await _send(client, url, body, headers, request, result, on_delta, deadline)
            if exchange is None:
                return result
            if exchange.location is None or exchange.error_class is not None:
                break
            target = urljoin(url, exchange.location)
            if urlsplit(target).scheme not in ("http", "https"):
                return _fail(
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
            return _fail(
                result, "redirect_loop", "The engine redirected too many times (a redirect loop)."
            )
    if result.error_class is not None:
        return result
    if exchange.mode == "body" or exchange.location is not None:
        raw = bytes(exchange.body)
        status = exchange.status
        if status >= 400:
            detail = _error_message(raw) if raw.strip() else "no details in the body"
            phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
            return _fail(result, "http_status", f"HTTP {status} {phrase}: {detail}".replace(" :", ":"))
        content_type = (
            exchange.headers.get(b"content-type", b"").decode("latin-1").split(";")[0] or "none"
        )
        return _fail(
            result,
            "wrong_content_type",
            f"Expected an event stream, got content type {content_type}: "
            f"{raw[:200].decode('utf-8', 'replace')!r}",
        )
    return _finish(result)


async def _send(
    client: StreamClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    request: ChatRequest,
    result: StreamResult,
    on_delta: DeltaCallback | None,
    deadline: float | None,
) -> _Exchange | None:
    """One HTTP exchange (a stale keep-alive connection is retried once on a fresh one)."""
    key, host_header, path = _split_url(url)
    payload = _request_bytes(host_header, path, body, headers)
    for attempt in range(2):
        connection = client._take_idle(key) if attempt == 0 else None
        if connection is None:
            try:
                connection = await client._connect(key, request.connect_timeout_s)
            except asyncio.CancelledError:
                _fail(result, "cancelled", "Stopped by the user.")
                raise
            except Exception as error:  # noqa: BLE001 - one request's failure never escapes
                _fail(result, *classify_exception(error))
                return None
            fresh = True
        else:
            fresh = False
        exchange = _Exchange(
            connection, result, on_delta, deadline, request.read_timeout_s, request.max_response_bytes
        )
        connection.exchange = exchange
        assert connection.transport is not None
        connection.transport.write(payload)
        try:
            await exchange.finished
        except asyncio.CancelledError:
            # Awaiting `finished` cancelled it too, so mark the result here, then drop the connection.
            _fail(result, "cancelled", "Stopped by the user.")
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


def _text_between(data: bytes, head: bytes, tail: bytes) -> str | None:
    """The text of a chunk of the learnt shape (see _Exchange._learn_shape): `data` is exactly
    `head + text + tail` and `text` holds no quote, backslash or line break; else None."""
    if not (data.startswith(head) and data.endswith(tail)):
        return None
    text = data[len(head) : len(data) - len(tail)]
    if not text or b'"' in text or b"\\" in text or b"\n" in text or b"\r" in text:
        return None
    try:
        return text.decode()
    except UnicodeDecodeError:
        return None


def _event_data(event: bytes) -> bytes | None:
    """The data of a general SSE event (several data lines, comments, event/id fields)."""
    data: list[bytes] = []
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value[:1] == b" " else value)
    return b"\n".join(data) if data else None


def _finish(result: StreamResult) -> StreamResult:
    """Judge a stream that ended without a transport error, and fix its E2E."""
    last = max((c.times[-1] for c in result.choices.values() if c.times), default=None)
    if last is not None:
        result.e2e_s = last - result.start
    has_content = any(c.times for c in result.choices.values())
    finished = bool(result.choices) and all(c.finish_reason for c in result.choices.values())
    if not has_content:
        what = "only usage" if result.usage else "no text"
        return _fail(
            result, "no_content", f"The stream ended with {what}: the engine produced no answer."
        )
    if not result.done:
        return _fail(
            result, "stream_cut", "The stream ended before [DONE]: the answer may be incomplete."
        )
    if not finished:
        return _fail(
            result,
            "stream_cut",
            "The stream ended without a finish reason: the answer may be incomplete.",
        )
    result.ok = True
    return result


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop (its per-read cost is a fraction of asyncio's, see
    benchmarks/client_cpu_per_token.py --loop), else the standard one."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is in requirements.txt
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run_blocking(coroutine: Any) -> Any:
    """Run a coroutine to completion on a fresh fast event loop (worker threads, CLI)."""
    # The answer is handed over outside the task: in the main thread, Python 3.11's Runner
    # ends by formatting an error message that holds the repr of its SIGINT handler, whose
    # arguments include the task and so the repr of the task's result. For a benchmark that
    # result is every request with every inter-token gap: 0.1 s per 512 requests, about
    # 1 µs per streamed token, spent on a string nobody reads.
    answer: list[Any] = []

    async def main() -> None:
        answer.append(await coroutine)

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(main())
    return answer[0]


async def run_chat(
    request: ChatRequest, *, on_delta: DeltaCallback | None = None, result: StreamResult | None = None
) -> StreamResult:
    """One request with a client of its own (playground, CLI checks)."""
    async with make_http_client(
        4, connect_timeout_s=request.connect_timeout_s, read_timeout_s=request.read_timeout_s
    ) as client:
        return await stream_chat(client, request, on_delta=on_delta, result=result)


async def run_many(requests: Iterable[ChatRequest], *, concurrency: int = 32) -> list[StreamResult]:
    """Send requests with at most `concurrency` in flight over one pool; results in order."""
    pending = list(requests)
    results: list[StreamResult] = [StreamResult() for _ in pending]
    semaphore = asyncio.Semaphore(concurrency)
    async with make_http_client(concurrency) as client:

        async def one(position: int) -> None:
            async with semaphore:
                await stream_chat(client, pending[position], result=results[position])

        await asyncio.gather(*(one(i) for i in range(len(pending))))
    return results


# ---------------------------------------------------------------------------------------
# The openai SDK reading the same stream, and "copy as code"
# ---------------------------------------------------------------------------------------


@dataclass
class SdkReading:
    """What the openai SDK made of a stream: text per choice, usage, finish reasons."""

    texts: dict[int, str]
    finish_reasons: dict[int, str | None]
    usage: dict[str, Any] | None
    error: str | None = None


def _sdk_kwargs(request: ChatRequest) -> dict[str, Any]:
    body = build_body(request)
    kwargs = {k: v for k, v in body.items() if k in _STANDARD_FIELDS}
    extra = {k: v for k, v in body.items() if k not in _STANDARD_FIELDS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


async def read_with_openai_sdk(request: ChatRequest) -> SdkReading:
    """Read the same request with `openai.AsyncOpenAI` (the reference our reader is tested against)."""
    import openai

    api_key = os.environ.get(request.api_key_env or "", "") or "none"
    base = chat_url(request.base_url).removesuffix("/chat/completions")
    texts: dict[int, str] = {}
    reasons: dict[int, str | None] = {}
    usage: dict[str, Any] | None = None
    async with openai.AsyncOpenAI(
        base_url=base, api_key=api_key, max_retries=0, timeout=request.read_timeout_s
    ) as sdk:
        try:
            async with asyncio.timeout(request.total_timeout_s):
                stream = await sdk.chat.completions.create(
                    **_sdk_kwargs(request), extra_headers=request.headers or None
                )
                async for chunk in stream:
                    for choice in chunk.choices:
                        if choice.delta and choice.delta.content:
                            texts[choice.index] = texts.get(choice.index, "") + choice.delta.content
                        if choice.finish_reason:
                            reasons[choice.index] = choice.finish_reason
                    if chunk.usage is not None:
                        usage = chunk.usage.model_dump(exclude_none=True)
        except Exception as error:  # noqa: BLE001 - compared, not raised
            return SdkReading(texts, reasons, usage, error=f"{type(error).__name__}: {error}")
    return SdkReading(texts, reasons, usage)


def as_curl(request: ChatRequest) -> str:
    """The exact request as a curl command (the key stays in its environment variable)."""
    lines = [
        f"curl -N {shlex.quote(chat_url(request.base_url))}",
        "  -H 'Content-Type: application/json'",
    ]
    if request.api_key_env:
        lines.append(f'  -H "Authorization: Bearer ${request.api_key_env}"')
    for name, value in (request.headers or {}).items():
        lines.append(f"  -H {shlex.quote(f'{name}: {value}')}")
    lines.append(f"  -d {shlex.quote(json.dumps(build_body(request), indent=2, ensure_ascii=False))}")
    return " \\\n".join(lines)


def as_openai_python(request: ChatRequest) -> str:
    """The exact request as openai-python code (extras through `extra_body`)."""
    base = chat_url(request.base_url).removesuffix("/chat/completions")
    key = f'os.environ["{request.api_key_env}"]' if request.api_key_env else '"none"'
    kwargs = _sdk_kwargs(request)
    if request.headers:
        kwargs["extra_headers"] = request.headers
    arguments = "\n".join(f"    {name}={_py(value)}," for name, value in kwargs.items())
    return (
        "import os\n\n"
        "from openai import OpenAI\n\n"
        f"client = OpenAI(base_url={base!r}, api_key={key})\n"
        "stream = client.chat.completions.create(\n"
        f"{arguments}\n"
        ")\n"
        "for chunk in stream:\n"
        "    if chunk.choices and chunk.choices[0].delta.content:\n"
        '        print(chunk.choices[0].delta.content, end="", flush=True)\n'
        "    if chunk.usage:\n"
        "        print()\n"
        "        print(chunk.usage)\n"
    )


def _py(value: Any) -> str:
    """A Python literal for JSON-like data (True/False/None, not true/false/null)."""
    import pprint

    return pprint.pformat(value, indent=1, width=100, sort_dicts=False).replace("\n", "\n    ")
