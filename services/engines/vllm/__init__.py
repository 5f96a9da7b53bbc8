"""vLLM (`vllm serve`): `owned_by: "vllm"` in /v1/models, `/version`, Prometheus /metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from services.core.measure import EngineTimes, cached_tokens, milliseconds, token_count
from services.engines.base import BatchCap, EngineAdapter, Fields, Headers, TelemetrySignals, Usage
from services.engines.normalise import (
    CounterRate,
    CounterRatio,
    Gauge,
    counters,
    latency_signals,
    metric,
)
from services.engines.registry import register


@register
class VllmAdapter(EngineAdapter):
    kind = "vllm"
    label = "vLLM"
    priority = 50
    owned_by = "vllm"
    metrics_path = "/metrics"
    takes_extras = frozenset({"top_k", "min_tokens", "ignore_eos"})
    metrics_hint = (
        "/metrics is always on. Add --enable-prompt-tokens-details for per-request cached tokens."
    )

    metric_markers = ("vllm:",)
    # Not in what vLLM reports of itself: known only when Shootout launched it.
    batch_cap = BatchCap("--max-num-seqs", flags=("--max-num-seqs",))
    # Names per release from guide/engines.md §3.3: V1 >=0.9 first, then 0.8.x / V0 names.
    telemetry_signals: ClassVar[TelemetrySignals] = {
        "kv_cache_usage": (
            Gauge(metric("vllm:kv_cache_usage_perc"), agg="max"),
            Gauge(metric("vllm:gpu_cache_usage_perc"), agg="max"),
        ),
        "prefix_cache_hit_rate": (
            CounterRatio(counters("vllm:prefix_cache_hits"), counters("vllm:prefix_cache_queries")),
            CounterRatio(
                counters("vllm:gpu_prefix_cache_hits"), counters("vllm:gpu_prefix_cache_queries")
            ),
            Gauge(metric("vllm:gpu_prefix_cache_hit_rate"), agg="max", note="V0 gauge, since start"),
        ),
        "requests_running": (Gauge(metric("vllm:num_requests_running")),),
        "requests_waiting": (Gauge(metric("vllm:num_requests_waiting")),),
        "prompt_tokens_per_s": (
            CounterRate(counters("vllm:prompt_tokens"), note="includes cached tokens"),
        ),
        "generation_tokens_per_s": (CounterRate(counters("vllm:generation_tokens")),),
        **latency_signals("ttft", metric("vllm:time_to_first_token_seconds")),
        **latency_signals(
            "itl",
            metric("vllm:inter_token_latency_seconds"),
            metric("vllm:time_per_output_token_seconds"),
        ),
        **latency_signals("e2e", metric("vllm:e2e_request_latency_seconds")),
        "preemptions_per_s": (CounterRate(counters("vllm:num_preemptions")),),
        "spec_decode_acceptance": (
            CounterRatio(
                counters("vllm:spec_decode_num_accepted_tokens"),
                counters("vllm:spec_decode_num_draft_tokens"),
            ),
        ),
    }

    tokenize_path = "/tokenize"

    # vllm/entrypoints/generate/base/serving.py build_per_request_timing_metrics (0.32): queue =
    # scheduled - queued, time_to_first_token = first token - scheduled (no queue in it),
    # generation = last token - first token. Streamed, they ride on the usage chunk (so only
    # with include_usage, which the client always asks for), and not at all when n > 1.
    engine_times_source = "the usage chunk's `metrics` (--enable-per-request-metrics)"
    engine_times_flags = ("--enable-per-request-metrics",)

    def engine_times(self, fields: Fields, usage: Usage | None, headers: Headers) -> EngineTimes | None:
        metrics = fields.get("metrics")
        if not isinstance(metrics, Mapping):
            return None
        times = EngineTimes(
            queue_s=milliseconds(metrics.get("queue_time_ms")),
            prefill_s=milliseconds(metrics.get("time_to_first_token_ms")),
            decode_s=milliseconds(metrics.get("generation_time_ms")),
            prompt_tokens=token_count(usage.get("prompt_tokens")) if usage else None,
            cached_tokens=cached_tokens(usage),
            source="metrics",
        )
        return times if times.reports_time else None
