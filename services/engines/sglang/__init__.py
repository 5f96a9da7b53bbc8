"""SGLang (`python -m sglang.launch_server`): `owned_by: "sglang"`, `/server_info`, `GET /`."""

from __future__ import annotations

from typing import ClassVar

from services.engines.base import BatchCap, EngineAdapter, ProbeEvidence, TelemetrySignals
from services.engines.normalise import (
    CounterRate,
    CounterRatio,
    Gauge,
    counters,
    latency_signals,
    metric,
)
from services.engines.registry import register
from services.engines.run_split import RunSplit, WindowMean


@register
class SglangAdapter(EngineAdapter):
    kind = "sglang"
    label = "SGLang"
    priority = 60  # before Ollama: SGLang can answer "Ollama is running" on GET /
    owned_by = "sglang"
    version_at = (("/server_info", "version"), ("/version", "version"))
    metrics_path = "/metrics"
    takes_extras = frozenset({"top_k", "min_tokens", "ignore_eos"})
    metrics_hint = "Start with --enable-metrics (else /metrics answers 404)."
    # http_server.py: POST /v1/tokenize (and a hidden /tokenize), TokenizeRequest {model, prompt,
    # add_special_tokens} -> {tokens, count, max_model_len}; older releases answer 404 and the
    # benchmark falls back to its word estimate.
    tokenize_path = "/v1/tokenize"
    metric_markers = ("sglang:",)
    batch_cap = BatchCap(
        "--max-running-requests",
        reported=(("/server_info", "max_running_requests"),),
        flags=("--max-running-requests",),
    )
    # A streamed chat carries no per-request times (below), but its histograms count every
    # request's queue, first token and whole time: their means over a step are its own split.
    # The first-token and whole times start when the request arrives, so the queue is in both.
    run_split = RunSplit(
        queue=WindowMean(histogram=metric("sglang:queue_time_seconds")),
        ttft=WindowMean(histogram=metric("sglang:time_to_first_token_seconds")),
        e2e=WindowMean(histogram=metric("sglang:e2e_request_latency_seconds")),
        source=(
            "sglang:queue_time_seconds, time_to_first_token_seconds and e2e_request_latency_seconds"
        ),
    )
    # Gauges are per scheduler rank (and some carry a pid label): ratios take the max.
    telemetry_signals: ClassVar[TelemetrySignals] = {
        "kv_cache_usage": (Gauge(metric("sglang:token_usage"), agg="max"),),
        "prefix_cache_hit_rate": (
            CounterRatio(
                (
                    metric(
                        "sglang:prefill_effective_tokens", mode=("device_hit", "host_hit", "storage_hit")
                    ),
                ),
                counters("sglang:prefill_effective_tokens"),
            ),
            CounterRatio(
                (metric("sglang:cached_tokens", cache_source="total"),), counters("sglang:prompt_tokens")
            ),
            CounterRatio(counters("sglang:cached_tokens"), counters("sglang:prompt_tokens")),
        ),
        "requests_running": (Gauge(metric("sglang:num_running_reqs")),),
        "requests_waiting": (Gauge(metric("sglang:num_queue_reqs")),),
        "prompt_tokens_per_s": (CounterRate(counters("sglang:prompt_tokens")),),
        "generation_tokens_per_s": (CounterRate(counters("sglang:generation_tokens")),),
        **latency_signals("ttft", metric("sglang:time_to_first_token_seconds")),
        **latency_signals("itl", metric("sglang:inter_token_latency_seconds")),
        **latency_signals("e2e", metric("sglang:e2e_request_latency_seconds")),
        "preemptions_per_s": (
            CounterRate(counters("sglang:num_retracted_requests"), note="retracted requests"),
        ),
        "spec_decode_acceptance": (
            Gauge(
                metric("sglang:spec_accept_rate"),
                agg="mean",
                note="SGLang's own gauge, last log interval",
            ),
        ),
    }

    # entrypoints/openai/serving_chat.py (0.5.23): a streamed chat carries usage (cached tokens
    # with --enable-cache-report) and `sglext` token details, never times; its `meta_info`
    # (e2e_latency) is for /generate, and return_meta_info is refused with streaming.
    engine_times_source = ""

    def detect(self, evidence: ProbeEvidence) -> bool:
        if super().detect(evidence) or evidence.says("/", "SGLang is running"):
            return True
        info = evidence.get("/server_info").json
        return isinstance(info, dict) and "version" in info and "tp_size" in info
