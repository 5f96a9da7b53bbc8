"""Every HTTP call the product makes, except the streaming chat client's hot path
(`services/client/`, which has its own deadline and byte limit): probes, detection,
tokenize, metrics scrapes, health checks, dcgm-exporter, Prometheus, fetching imports.

Each call has a *total* deadline (connect, headers, body and redirects together) and a
byte limit on the body. httpx2's own timeouts are per read, so a server that trickles a
byte every two seconds never trips a 5 s timeout; here `asyncio.timeout` bounds the whole
exchange, and the body is read in chunks and refused past `max_bytes` (a Content-Length
over the limit is refused before reading).

Redirects are followed by hand: only to http or https, at most `MAX_REDIRECTS`, and the
Authorization header is dropped once the origin changes (a key must not reach another host).

Sync callers (pages, CLI, the scraper thread) share one event loop in a daemon thread;
async callers (the probe, the benchmark runner) await `fetch_async` directly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias
from urllib.parse import urljoin, urlsplit

import httpx2
import orjson

from services.core.errors import EngineError

#: A URL's query: values by name, or (name, value) pairs where a name comes more than once.
QueryParams: TypeAlias = Mapping[str, str] | tuple[tuple[str, str], ...]

MAX_REDIRECTS = 5
DEFAULT_DEADLINE_S = 10.0
DEFAULT_MAX_BYTES = 8 * 1024 * 1024


class HttpError(EngineError):
    """Any failed HTTP call; `reason` is a short class name for tables and tests."""

    reason = "http_error"

    def __init__(self, message: str, url: str = "") -> None:
        super().__init__(message)
        self.url = url

    @property
    def detail(self) -> str:
        """The message without the URL it starts with (for callers that name the URL themselves)."""
        text = str(self)
        return text.removeprefix(self.url + ": ").removeprefix(self.url + " ") if self.url else text


class HttpUnreachable(HttpError):
    reason = "unreachable"


class HttpDeadlineExceeded(HttpError):
    reason = "deadline"


class HttpBodyTooLarge(HttpError):
    reason = "too_large"


class HttpProtocolError(HttpError):
    reason = "protocol"


class HttpRedirectRefused(HttpError):
    reason = "redirect"


@dataclass
class Reply:
    status: int
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    elapsed_s: float = 0.0
    #: True when the body was cut at `max_bytes` with truncate=True.
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError as error:
            raise HttpProtocolError(
                f"{self.url} answered HTTP {self.status} with a body that is not JSON", self.url
            ) from error


def describe_transport_error(error: BaseException) -> str:
    """Plain words for a transport failure (shared with the probe's per-path answers)."""
    text = str(error) or error.__class__.__name__
    causes: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and len(causes) < 8:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return "connection refused (nothing listens on that port)"
    if isinstance(error, httpx2.ConnectTimeout):
        return "connecting timed out (host down or a firewall drops packets)"
    if isinstance(error, httpx2.ReadTimeout):
        return "the server accepted the connection but did not answer in time"
    if isinstance(error, httpx2.ConnectError):
        lowered = text.lower()
        if "refused" in lowered:
            return "connection refused (nothing listens on that port)"
        if (
            "name or service not known" in lowered
            or "nodename" in lowered
            or "resolution" in lowered
            or "getaddrinfo" in lowered
        ):
            return "the host name does not resolve"
        if "ssl" in lowered or "certificate" in lowered or "tls" in lowered:
            return f"TLS handshake failed ({text})"
        return f"cannot connect ({text})"
    if isinstance(error, httpx2.RemoteProtocolError):
        return f"the server broke the HTTP protocol ({text})"
    return text


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port): a key must not follow a redirect to another one."""
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _human_bytes(count: int) -> str:
    return f"{count / 1024 / 1024:.0f} MiB" if count >= 1024 * 1024 else f"{count // 1024} KiB"


async def _read_body(
    response: httpx2.Response, url: str, max_bytes: int, truncate: bool
) -> tuple[bytes, bool]:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes and not truncate:
        raise HttpBodyTooLarge(
            f"{url} announced a {_human_bytes(int(declared))} body; the limit for this call is {_human_bytes(max_bytes)}",
            url,
        )
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > max_bytes:
            if truncate:
                parts.append(chunk[: max_bytes - size])
                return b"".join(parts), True
            raise HttpBodyTooLarge(
                f"{url} sent more than {_human_bytes(max_bytes)}, the limit for this call", url
            )
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts), False


async def _exchange(
    client: httpx2.AsyncClient,
    method: str,
    url: str,
    headers: dict[str, str],
    content: bytes | None,
    params: QueryParams | None,
    max_bytes: int,
    follow_redirects: bool,
    truncate: bool,
) -> Reply:
    started = time.monotonic()
    first_origin = origin(url)
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        request = client.build_request(method, current, headers=headers, content=content, params=params)
        try:
            response = await client.send(request, stream=True)
        except httpx2.HTTPError as error:
            raise HttpUnreachable(f"{current}: {describe_transport_error(error)}", current) from error
        try:
            if follow_redirects and response.is_redirect and "location" in response.headers:
                target = urljoin(str(response.url), response.headers["location"])
                if urlsplit(target).scheme not in ("http", "https"):
                    raise HttpRedirectRefused(
                        f"{current} redirected to a {urlsplit(target).scheme or 'relative'} address; only http and https are followed",
                        current,
                    )
                if origin(target) != first_origin:
                    headers = {
                        k: v for k, v in headers.items() if k.lower() not in ("authorization", "cookie")
                    }
                if response.status_code == 303 or (
                    response.status_code in (301, 302) and method == "POST"
                ):
                    method, content = "GET", None
                current, params = target, None
                continue
            try:
                body, truncated = await _read_body(response, current, max_bytes, truncate)
            except httpx2.HTTPError as error:
                raise HttpProtocolError(
                    f"{current}: {describe_transport_error(error)}", current
                ) from error
        finally:
            await response.aclose()
        return Reply(
            status=response.status_code,
            url=current,
            headers=dict(response.headers),
            body=body,
            elapsed_s=time.monotonic() - started,
            truncated=truncated,
        )
    raise HttpRedirectRefused(f"{url} redirected more than {MAX_REDIRECTS} times", url)


async def fetch_async(
    method: str,
    url: str,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    headers: dict[str, str] | None = None,
    json: Any = None,
    content: bytes | None = None,
    params: QueryParams | None = None,
    follow_redirects: bool = True,
    truncate: bool = False,
    client: httpx2.AsyncClient | None = None,
) -> Reply:
    """One HTTP exchange, done or failed (an HttpError subclass) within `deadline_s`.
    `truncate=True` keeps the first `max_bytes` of a longer body instead of failing."""
    all_headers = dict(headers or {})
    if json is not None:
        content = orjson.dumps(json)
        all_headers.setdefault("Content-Type", "application/json")
    own = client is None
    http_client = client or httpx2.AsyncClient(
        timeout=httpx2.Timeout(deadline_s), follow_redirects=False
    )
    try:
        async with asyncio.timeout(deadline_s):
            return await _exchange(
                http_client,
                method,
                url,
                all_headers,
                content,
                params,
                max_bytes,
                follow_redirects,
                truncate,
            )
    except TimeoutError as error:
        raise HttpDeadlineExceeded(
            f"{url} did not finish answering within {deadline_s:g} s", url
        ) from error
    finally:
        if own:
            await http_client.aclose()


# ---------------------------------------------------------------- sync callers


class _Loop:
    """One event loop in a daemon thread per process (recreated after a fork)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx2.AsyncClient | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="shootout-http", daemon=True).start()
                self._loop, self._client, self._pid = loop, None, os.getpid()
            return self._loop

    def client(self) -> httpx2.AsyncClient:
        # Called on the loop's own thread only; reused so that a scraper keeps its connection.
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(60.0),
                follow_redirects=False,
                limits=httpx2.Limits(max_connections=64, keepalive_expiry=30),
            )
        return self._client


_shared = _Loop()


def fetch(
    method: str,
    url: str,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    **options: Any,
) -> Reply:
    """`fetch_async` for code that is not async (pages, CLI, threads)."""

    async def run() -> Reply:
        return await fetch_async(
            method,
            url,
            deadline_s=deadline_s,
            max_bytes=max_bytes,
            client=options.pop("client", None) or _shared.client(),
            **options,
        )

    future = asyncio.run_coroutine_threadsafe(run(), _shared.get())
    try:
        # The coroutine bounds itself; the margin only covers a loop that is stuck.
        return future.result(timeout=deadline_s + 5.0)
    except concurrent.futures.TimeoutError as error:
        future.cancel()
        raise HttpDeadlineExceeded(
            f"{url} did not finish answering within {deadline_s:g} s", url
        ) from error
