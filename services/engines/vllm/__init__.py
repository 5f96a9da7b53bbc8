"""vLLM (`vllm serve`): `owned_by: "vllm"` in /v1/models, `/version`, Prometheus /metrics."""

from __future__ import annotations

from typing import ClassVar

from services.engines.base import EngineAdapter, ProbeEvidence, TelemetrySignals
from services.engines.registry import register
from services.telemetry.normalise import (
    CounterRate,
    CounterRatio,
    Gauge,
    counters,
    latency_signals,
    metric,
)


@register
class VllmAdapter(EngineAdapter):
    kind = "vllm"
    label = "vLLM"
    priority = 50
    metrics_path = "/metrics"
    metrics_format = "prometheus"
    supports_top_k = True
    supports_min_tokens = True
    supports_ignore_eos = True
    metrics_hint = (
        "/metrics is always on. Add --enable-prompt-tokens-details for per-request cached tokens."
    )

    metric_markers = ("vllm:",)
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

    def detect(self, evidence: ProbeEvidence) -> bool:
        return evidence.owned_by() == "vllm"
