"""Test support for telemetry: a loopback HTTP server whose metrics answer tests control
(it can vanish and come back on the same port), and a vLLM-like metrics generator built
on a real prometheus_client registry."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

FIXTURES = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "metrics"


@dataclass
class Route:
    status: int = 200
    body: str | Callable[[], str] = ""
    content_type: str = "text/plain; version=0.0.4"
    headers: dict[str, str] = field(default_factory=dict)


class MetricsServer:
    """`server.routes["/metrics"] = Route(body=...)`; `server.requests` logs (path, headers)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MetricsServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as real engine servers do (else 40 ms stalls)

            def setup(self) -> None:
                super().setup()
                owner._connections.add(self.connection)

            def finish(self) -> None:
                owner._connections.discard(self.connection)
                super().finish()

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                owner.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                route = owner.routes.get(path) or Route(status=404, body='{"error": "not found"}')
                body = route.body() if callable(route.body) else route.body
                data = body.encode()
                self.send_response(route.status)
                self.send_header("Content-Type", route.content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in route.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop like a dead process: also drop the kept-alive connections."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for connection in list(self._connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
                connection.close()
            except OSError:
                pass
        self._connections.clear()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


TTFT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class VllmLike:
    """vLLM's metric names, written by prometheus_client itself (so every exposition
    detail is the library's). Restart with `restart()`: counters start from zero."""

    def __init__(self, model: str = "m", start_time: float = 1_000.0) -> None:
        self.model = model
        self.start_time = start_time
        self.restart(start_time)

    def restart(self, start_time: float | None = None) -> None:
        if start_time is not None:
            self.start_time = start_time
        registry = self.registry = CollectorRegistry()
        labels = ["engine", "model_name"]
        self.running = Gauge("vllm:num_requests_running", "running", labels, registry=registry)
        self.waiting = Gauge("vllm:num_requests_waiting", "waiting", labels, registry=registry)
        self.kv = Gauge("vllm:kv_cache_usage_perc", "kv", labels, registry=registry)
        self.prompt = Counter("vllm:prompt_tokens", "prompt", labels, registry=registry)
        self.generation = Counter("vllm:generation_tokens", "gen", labels, registry=registry)
        self.queries = Counter("vllm:prefix_cache_queries", "q", labels, registry=registry)
        self.hits = Counter("vllm:prefix_cache_hits", "h", labels, registry=registry)
        self.preemptions = Counter("vllm:num_preemptions", "p", labels, registry=registry)
        self.ttft = Histogram(
            "vllm:time_to_first_token_seconds", "ttft", labels, buckets=TTFT_BUCKETS, registry=registry
        )
        self.itl = Histogram(
            "vllm:inter_token_latency_seconds", "itl", labels, buckets=TTFT_BUCKETS, registry=registry
        )
        self.e2e = Histogram(
            "vllm:e2e_request_latency_seconds", "e2e", labels, buckets=TTFT_BUCKETS, registry=registry
        )
        self.start = Gauge("process_start_time_seconds", "start", registry=registry)
        self.start.set(self.start_time)
        for metric in (
            self.running,
            self.waiting,
            self.kv,
            self.prompt,
            self.generation,
            self.queries,
            self.hits,
            self.preemptions,
            self.ttft,
            self.itl,
            self.e2e,
        ):
            metric.labels(engine="0", model_name=self.model)

    def child(self, metric):  # type: ignore[no-untyped-def]
        return metric.labels(engine="0", model_name=self.model)

    def text(self) -> str:
        return generate_latest(self.registry).decode()
