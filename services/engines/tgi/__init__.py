"""Hugging Face TGI: `/info` with `router: "text-generation-router"`."""

from __future__ import annotations

from typing import ClassVar

from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import EngineTimes, milliseconds
from services.engines.base import EngineAdapter, Fields, Headers, ProbeEvidence, TelemetrySignals, Usage
from services.engines.normalise import (
    CounterRate,
    Gauge,
    GaugeRatio,
    counters,
    latency_signals,
    metric,
)
from services.engines.registry import register


@register
class TgiAdapter(EngineAdapter):
    kind = "tgi"
    label = "Hugging Face TGI"
    priority = 45
    version_at = (("/info", "version"),)
    metrics_path = "/metrics"
    supports_n = False  # parsed but unused by TGI's router
    cached_tokens_source = "not reported by TGI"
    metric_markers = ("tgi_",)
    # TGI has no KV, prefix-cache, TTFT, ITL histogram or preemption metric; the KV figure is
    # a proxy and "ITL" is TGI's per-request mean time per token (prefill included).
    telemetry_signals: ClassVar[TelemetrySignals] = {
        "kv_cache_usage": (
            GaugeRatio(
                metric("tgi_batch_current_max_tokens"),
                metric("tgi_batch_max_total_tokens"),
                note="proxy: tokens reserved by the current batch / max total tokens",
            ),
        ),
        "requests_running": (Gauge(metric("tgi_batch_current_size")),),
        "requests_waiting": (Gauge(metric("tgi_queue_size")),),
        "prompt_tokens_per_s": (CounterRate(counters("tgi_request_input_length_sum")),),
        "generation_tokens_per_s": (CounterRate(counters("tgi_request_generated_tokens_sum")),),
        **latency_signals(
            "itl",
            metric("tgi_request_mean_time_per_token_duration"),
            note="per-request mean time per token, prefill included",
        ),
        **latency_signals("e2e", metric("tgi_request_duration")),
    }

    # router/src/server.rs: x-queue-time and x-inference-time (prefill + decode together) in
    # whole milliseconds, with x-prompt-tokens. Headers go out before the body, so TGI sends
    # them with an answer it had finished (not streamed); a streamed answer carries none.
    engine_times_source = "response headers x-queue-time, x-inference-time (answers not streamed)"

    def engine_times(self, fields: Fields, usage: Usage | None, headers: Headers) -> EngineTimes | None:
        times = EngineTimes(
            queue_s=milliseconds(_header_number(headers.get(b"x-queue-time"))),
            inference_s=milliseconds(_header_number(headers.get(b"x-inference-time"))),
            prompt_tokens=_header_whole(headers.get(b"x-prompt-tokens")),
            source="headers",
        )
        return times if times.reports_time else None

    def detect(self, evidence: ProbeEvidence) -> bool:
        return evidence.value("/info", "router") == "text-generation-router"

    def context_length(self, evidence: ProbeEvidence) -> int | None:
        tokens = evidence.value("/info", "max_total_tokens")
        return int(tokens) if isinstance(tokens, int) else None

    def response_format(self, schema: ForeignJson, name: str = "answer") -> JsonOut:
        # TGI's own tagged shape; it rejects OpenAI's json_schema wrapper.
        return {"type": "json", "value": schema}


def _header_number(value: bytes | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _header_whole(value: bytes | None) -> int | None:
    number = _header_number(value)
    return int(number) if number is not None and number.is_integer() and number >= 0 else None
