"""TensorRT-LLM's `trtllm-serve`: `owned_by: "tensorrt_llm"`; Prometheus text at
/prometheus/metrics, and a JSON /metrics of iteration stats that each read drains."""

from __future__ import annotations

from typing import Any, ClassVar

from services.engines.base import EngineAdapter, JsonMetricsState, TelemetrySignals
from services.engines.normalise import (
    CounterRate,
    CounterRatio,
    Gauge,
    GaugeRatio,
    counters,
    latency_signals,
    metric,
)
from services.engines.prometheus import Families
from services.engines.registry import register
from services.engines.run_split import RunSplit, WindowMean


@register
class TrtllmServeAdapter(EngineAdapter):
    kind = "trtllm"
    label = "TensorRT-LLM (trtllm-serve)"
    priority = 50
    owned_by = "tensorrt_llm"
    metrics_path = "/prometheus/metrics"
    takes_extras = frozenset({"top_k", "min_tokens", "ignore_eos"})
    metrics_hint = (
        "Set `return_perf_metrics: true` and `enable_iter_perf_stats: true` in the "
        "--extra_llm_api_options YAML; Prometheus text is at /prometheus/metrics."
    )
    json_metrics_path = "/metrics"
    metric_markers = ("trtllm_", "request_success_total", "e2e_request_latency_seconds")
    # Three generations of names (guide/engines.md §5.1): trtllm_-prefixed first, then the
    # unprefixed first version; "trtllm_json:" series come from the JSON iteration stats.
    # trtllm-serve's request histograms (fixture: trtllm_serve_prometheus.txt; it needs an NVIDIA
    # GPU, so this is read from its documented exposition, never run here).
    run_split = RunSplit(
        queue=WindowMean(histogram=metric("trtllm_request_queue_time_seconds")),
        ttft=WindowMean(histogram=metric("trtllm_time_to_first_token_seconds")),
        e2e=WindowMean(histogram=metric("trtllm_e2e_request_latency_seconds")),
        source=(
            "trtllm_request_queue_time_seconds, trtllm_time_to_first_token_seconds and "
            "trtllm_e2e_request_latency_seconds"
        ),
    )
    telemetry_signals: ClassVar[TelemetrySignals] = {
        "kv_cache_usage": (
            Gauge(metric("trtllm_kv_cache_utilization"), agg="max"),
            GaugeRatio(metric("trtllm_kv_cache_used_blocks"), metric("trtllm_kv_cache_max_blocks")),
            GaugeRatio(metric("trtllm_json:kv_used_blocks"), metric("trtllm_json:kv_max_blocks")),
        ),
        "prefix_cache_hit_rate": (
            CounterRatio(
                counters("trtllm_kv_cache_reused_blocks"),
                counters("trtllm_kv_cache_reused_blocks", "trtllm_kv_cache_missed_blocks"),
                note="KV blocks reused / (reused + missed)",
            ),
            CounterRatio(counters("trtllm_prompt_cached_tokens"), counters("trtllm_prompt_tokens")),
            CounterRatio(
                counters("trtllm_json:kv_reused_blocks"),
                counters("trtllm_json:kv_reused_blocks", "trtllm_json:kv_missed_blocks"),
                note="KV blocks reused / (reused + missed)",
            ),
        ),
        "requests_running": (
            Gauge(metric("trtllm_num_requests_running")),
            Gauge(metric("trtllm_json:active_requests")),
        ),
        "requests_waiting": (
            Gauge(metric("trtllm_num_requests_waiting")),
            Gauge(metric("trtllm_json:queued_requests")),
        ),
        "prompt_tokens_per_s": (
            CounterRate(counters("trtllm_prompt_tokens")),
            CounterRate(
                counters("trtllm_json:context_tokens"), note="context tokens scheduled per iteration"
            ),
        ),
        "generation_tokens_per_s": (
            CounterRate(counters("trtllm_generation_tokens")),
            CounterRate(
                counters("trtllm_json:generation_tokens"),
                note="generation requests x decoded tokens per iteration",
            ),
        ),
        **latency_signals(
            "ttft", metric("trtllm_time_to_first_token_seconds"), metric("time_to_first_token_seconds")
        ),
        **latency_signals(
            "itl",
            metric("trtllm_time_per_output_token_seconds"),
            metric("time_per_output_token_seconds"),
            note="per-request mean time per output token",
        ),
        **latency_signals(
            "e2e", metric("trtllm_e2e_request_latency_seconds"), metric("e2e_request_latency_seconds")
        ),
        "spec_decode_acceptance": (
            CounterRatio(
                counters("trtllm_spec_decode_num_accepted_tokens"),
                counters("trtllm_spec_decode_num_draft_tokens"),
            ),
            CounterRatio(
                counters("trtllm_json:spec_accepted_tokens"), counters("trtllm_json:spec_draft_tokens")
            ),
        ),
    }

    def telemetry_from_json(self, payload: Any, state: JsonMetricsState) -> Families:
        """`GET /metrics` drains a queue of per-iteration stats: each read returns only the
        iterations since the previous read. Per-iteration amounts are summed into running
        counters kept in `state.totals`; gauges come from the newest iteration. No iteration since
        the last read means the executor is idle: nothing running or queued."""
        families = Families()
        iterations = (
            [item for item in payload if isinstance(item, dict)] if isinstance(payload, list) else []
        )
        for item in iterations:
            batching = item.get("inflightBatchingStats") or {}
            state.totals["context_tokens"] = state.totals.get("context_tokens", 0.0) + float(
                batching.get("numCtxTokens") or 0
            )
            state.totals["generation_tokens"] = state.totals.get("generation_tokens", 0.0) + float(
                batching.get("numGenRequests") or 0
            ) * float(batching.get("avgNumDecodedTokensPerIter") or 1.0)
            spec = item.get("specDecodingStats") or {}
            if spec:
                state.totals["spec_draft"] = state.totals.get("spec_draft", 0.0) + float(
                    spec.get("numDraftTokens") or 0
                )
                state.totals["spec_accepted"] = state.totals.get("spec_accepted", 0.0) + float(
                    spec.get("numAcceptedTokens") or 0
                )
        if iterations:
            newest = iterations[-1]
            kv = newest.get("kvCacheStats") or {}
            state.kv = {
                "kv_used_blocks": kv.get("usedNumBlocks"),
                "kv_max_blocks": kv.get("maxNumBlocks"),
                "kv_reused_blocks": kv.get("reusedBlocks"),
                "kv_missed_blocks": kv.get("missedBlocks"),
            }
            families.add("trtllm_json:active_requests", float(newest.get("numActiveRequests") or 0))
            families.add("trtllm_json:queued_requests", float(newest.get("numQueuedRequests") or 0))
        elif state.kv is not None:
            families.add("trtllm_json:active_requests", 0.0)
            families.add("trtllm_json:queued_requests", 0.0)
        for name, value in (state.kv or {}).items():
            if value is not None:
                families.add(f"trtllm_json:{name}", float(value))
        for key, name in (
            ("context_tokens", "context_tokens"),
            ("generation_tokens", "generation_tokens"),
            ("spec_draft", "spec_draft_tokens"),
            ("spec_accepted", "spec_accepted_tokens"),
        ):
            if key in state.totals:
                families.add(f"trtllm_json:{name}_total", state.totals[key])
        return families
