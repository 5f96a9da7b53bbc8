"""SGLang's router, `smg` (Shepherd Model Gateway, successor of `sglang-router`): an OpenAI-compatible
front to several workers (SGLang, vLLM, llama.cpp or any OpenAI-compatible server) that picks a
worker per request (cache-aware by default). Its own answers carry `x-smg-error-code` (every
path it does not serve answers 404 with it) and `GET /get_loads` says `"version": "smg-<v>"`.
Its Prometheus metrics are on a port of their own (`--prometheus-port`, default 29000 on every
interface unless `--prometheus-host` says otherwise).

Fronting HTTP workers (the local llama.cpp servers), the router only forwards bytes: it counts
requests, knows its workers' health and how many requests each runs, and times each request
until the worker's answer begins, which for a streamed answer is its head, not the first token.
Time to first token and per output token (`smg_router_ttft_seconds`, `smg_router_tpot_seconds`)
exist only when it tokenizes itself, in front of gRPC workers (smg's docs: "gRPC mode only")."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from services.core.measure import EngineTimes
from services.engines.base import EngineAdapter, Fields, Headers, ProbeEvidence, TelemetrySignals, Usage
from services.engines.normalise import (
    CounterRate,
    Gauge,
    counters,
    latency_signals,
    metric,
)
from services.engines.registry import get_adapter, register

SMG_VERSION_PREFIX = "smg-"


@register
class RouterAdapter(EngineAdapter):
    kind = "router"
    label = "SGLang router (smg)"
    # Before every engine: a router passes some GETs through to its workers (a llama.cpp
    # worker answered /get_server_info through it), so a worker's traits can show in its answers.
    priority = 70
    metrics_path = "/metrics"  # on the Prometheus port: the metrics URL says where
    metrics_need_url = True
    metrics_hint = (
        "Metrics are on the router's Prometheus port (--prometheus-port, default 29000, bound to "
        "0.0.0.0 unless --prometheus-host 127.0.0.1): set the metrics URL."
    )
    cached_tokens_source = "whatever the chosen worker reports (the router passes it on)"
    engine_times_source = (
        "whatever the chosen worker reports in its stream (vLLM, llama.cpp): the worker's times; "
        "the router's own time is in the rest"
    )

    def engine_times(self, fields: Fields, usage: Usage | None, headers: Headers) -> EngineTimes | None:
        # The router forwards the worker's bytes: its times are the worker's, in its shape,
        # marked as such (the router's own time is in the rest).
        for worker in ("vllm", "llamacpp"):
            found = get_adapter(worker).engine_times(fields, usage, headers)
            if found is not None:
                return replace(found, via="router")
        return None

    # What a request may carry depends on the worker it lands on; the router passes the body on.
    takes_extras = frozenset({"top_k", "min_tokens", "ignore_eos"})
    metric_markers = ("smg_router_", "smg_worker_")
    telemetry_signals: ClassVar[TelemetrySignals] = {
        "requests_running": (Gauge(metric("smg_worker_requests_active")),),
        **latency_signals(
            "ttft", metric("smg_router_ttft_seconds"), note="gRPC workers only: the router tokenizes"
        ),
        **latency_signals(
            "itl",
            metric("smg_router_tpot_seconds"),
            note="time per output token; gRPC workers only: the router tokenizes",
        ),
        "requests_per_s": (CounterRate(counters("smg_router_requests_total")),),
        "workers_healthy": (Gauge(metric("smg_worker_health")),),
        "workers_total": (Gauge(metric("smg_worker_pool_size")),),
        **latency_signals(
            "router_request",
            metric("smg_router_request_duration_seconds"),
            note="until the worker's answer begins: the whole answer unstreamed, its head streamed",
        ),
    }

    def detect(self, evidence: ProbeEvidence) -> bool:
        return bool(evidence.header("x-smg-error-code")) or self.version(evidence) is not None

    def version(self, evidence: ProbeEvidence) -> str | None:
        value = str(evidence.value("/get_loads", "version") or "")
        return value.removeprefix(SMG_VERSION_PREFIX) if value.startswith(SMG_VERSION_PREFIX) else None
