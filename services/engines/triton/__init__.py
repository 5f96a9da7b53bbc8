"""Triton Inference Server with the TensorRT-LLM backend: `GET /v2` names "triton";
metrics on a separate port (8002 by default)."""

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
class TritonAdapter(EngineAdapter):
    kind = "triton"
    label = "Triton + TensorRT-LLM"
    priority = 40
    metrics_path = "/metrics"  # on the metrics port: set the engine's metrics URL
    metrics_format = "prometheus"
    supports_n = False
    metrics_hint = "Metrics are on port 8002 (--allow-metrics, --metrics-port); set the metrics URL."
    metrics_need_url = True
    metric_markers = ("nv_inference_", "nv_trt_llm_")
    # Backend gauges carry a category label; latencies are in ms (histogram) and the
    # user-facing model is the "ensemble" (else the bare "tensorrt_llm" model).
    telemetry_signals: ClassVar[TelemetrySignals] = {
        "kv_cache_usage": (
            Gauge(
                metric("nv_trt_llm_kv_cache_block_metrics", kv_cache_block_type="fraction"), agg="max"
            ),
        ),
        "requests_running": (Gauge(metric("nv_trt_llm_request_metrics", request_type="active")),),
        "requests_waiting": (Gauge(metric("nv_trt_llm_request_metrics", request_type="waiting")),),
        "prompt_tokens_per_s": (CounterRate(counters("nv_llm_input_token_len_sum")),),
        "generation_tokens_per_s": (CounterRate(counters("nv_llm_output_token_len_sum")),),
        **latency_signals(
            "ttft",
            metric("nv_inference_first_response_histogram_ms", 0.001, model="ensemble"),
            metric("nv_inference_first_response_histogram_ms", 0.001, model="tensorrt_llm"),
            note="first response (opt-in histogram_latencies=true)",
        ),
        "e2e_mean_s": (
            CounterRatio(
                (metric("nv_inference_request_duration_us", 1e-6, model="ensemble"),),
                (metric("nv_inference_request_success", model="ensemble"),),
            ),
        ),
    }

    def detect(self, evidence: ProbeEvidence) -> bool:
        body = evidence.get("/v2").json
        return isinstance(body, dict) and body.get("name") == "triton"

    def version(self, evidence: ProbeEvidence) -> str | None:
        body = evidence.get("/v2").json
        return str(body.get("version")) if isinstance(body, dict) and body.get("version") else None
