"""Triton Inference Server, whatever backend serves its models: `GET /v2` names "triton"; the
repository index and each model's config say which backend (Python, TensorRT-LLM, ...), so the
label says what it is. Metrics on a separate port (8002 by default).

Requests go to Triton's generate extension (`POST /v2/models/<model>/generate_stream`, one SSE
event per response of a decoupled model), not OpenAI chat: the chat goes as JSON in the
`messages` input and the model applies its chat template (the local Python-backend model does).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from services.core.json_types import ForeignJson, JsonOut
from services.engines.base import EngineAdapter, ProbeEvidence, SamplingParams, TelemetrySignals
from services.engines.normalise import (
    CounterRate,
    CounterRatio,
    Gauge,
    Metric,
    counters,
    latency_signals,
    metric,
)
from services.engines.registry import register
from services.engines.run_split import RunSplit, WindowMean

#: The probe's POST of the repository index, kept in the evidence under this key.
REPOSITORY_INDEX = "POST /v2/repository/index"

#: How Triton names its backends (a model config's "backend", or "platform" for ensembles).
BACKEND_NAMES = {
    "python": "Python backend",
    "tensorrtllm": "TensorRT-LLM backend",
    "ensemble": "ensemble",
    "onnxruntime": "ONNX Runtime backend",
    "pytorch": "PyTorch backend",
    "vllm": "vLLM backend",
}

#: The Python-backend model's own counters (scripts/triton_model.py): Triton counts requests
#: and durations itself, not tokens nor what generates now.
_MODEL_METRICS = "shootout_llm_"
#: What a figure read from those counters says beside it: Shootout's script counts, not Triton.
FROM_MODEL_SCRIPT = "counted by Shootout's model script (scripts/triton_model.py), not by Triton"


def _python_backend_signals(model: str | None) -> TelemetrySignals:
    """A Python-backend model's nv_inference_* series (and its own token counters): of
    `model` when given, else summed over the repository's models."""

    def of(name: str, scale: float = 1.0) -> Metric:
        return metric(name, scale, model=model) if model else metric(name, scale)

    return {
        "requests_running": (Gauge(of(f"{_MODEL_METRICS}requests_running"), note=FROM_MODEL_SCRIPT),),
        "requests_waiting": (
            Gauge(
                of("nv_inference_pending_request_count"),
                note="requests in Triton's queue, awaiting the model",
            ),
        ),
        "prompt_tokens_per_s": (
            CounterRate((of(f"{_MODEL_METRICS}prompt_tokens_total"),), note=FROM_MODEL_SCRIPT),
        ),
        "generation_tokens_per_s": (
            CounterRate((of(f"{_MODEL_METRICS}generation_tokens_total"),), note=FROM_MODEL_SCRIPT),
        ),
        "e2e_mean_s": (
            CounterRatio(
                (of("nv_inference_request_duration_us", 1e-6),),
                (of("nv_inference_request_success"),),
                note="Triton's request duration / successful requests",
            ),
        ),
    }


#: TensorRT-LLM behind Triton (fixture-tested: it needs an NVIDIA GPU). Backend gauges carry a
#: category label; latencies are in ms (histogram) and the user-facing model is the "ensemble"
#: (else the bare "tensorrt_llm" model).
_TRTLLM_SIGNALS: TelemetrySignals = {
    "kv_cache_usage": (
        Gauge(metric("nv_trt_llm_kv_cache_block_metrics", kv_cache_block_type="fraction"), agg="max"),
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


def _run_split(model: str) -> RunSplit:
    """Triton's own totals of one model (core src/infer_stats.cc: each successful request adds
    one to its success count and its whole duration, in µs, to its total). An ensemble and each
    model it calls count the same request, each in its own series: only the served model's is
    read, never a sum over the repository. Its first response is known only where Triton keeps
    the opt-in histogram (`--metrics-config histogram_latencies=true`, decoupled models; the
    local 2.51 has none): else that part is left out, never estimated.

    No queue part: `nv_inference_queue_duration_us` is Triton's scheduler's wait, right for a
    Python-backend model but next to none for an ensemble (its steps wait in their models) and
    blind to TensorRT-LLM's in-flight batcher, which takes each request at once and keeps its
    wait where Triton does not see it. The split knows the model's name, not its backend: a 0
    read as "no queue" would put the wait in the prefill, so the queue is not known instead."""

    def of(name: str, scale: float = 1.0) -> Metric:
        return metric(name, scale, model=model)

    succeeded = of("nv_inference_request_success")
    return RunSplit(
        ttft=WindowMean(histogram=of("nv_inference_first_response_histogram_ms", 0.001)),
        e2e=WindowMean(total=of("nv_inference_request_duration_us", 1e-6), count=succeeded),
        source=(
            "Triton's nv_inference_request_duration_us over nv_inference_request_success, and "
            f'nv_inference_first_response_histogram_ms where kept, of model "{model}" only'
        ),
    )


def _merge(*maps: TelemetrySignals) -> dict[str, tuple[Any, ...]]:
    """Each signal's alternatives from every map, the earlier maps' first."""
    merged: dict[str, tuple[Any, ...]] = {}
    for signal_map in maps:
        for name, specs in signal_map.items():
            merged[name] = merged.get(name, ()) + tuple(specs)
    return merged


@register
class TritonAdapter(EngineAdapter):
    kind = "triton"
    label = "Triton"
    priority = 40
    wire = "triton_generate"
    health_path = "/v2/health/ready"
    version_at = (("/v2", "version"),)
    metrics_path = "/metrics"  # on the metrics port: set the engine's metrics URL
    supports_n = False
    takes_extras = frozenset({"ignore_eos"})
    reports_logprobs = False
    reports_top_logprobs = False
    metrics_hint = "Metrics are on port 8002 (--allow-metrics, --metrics-port); set the metrics URL."
    metrics_need_url = True
    metric_markers = ("nv_inference_", "nv_trt_llm_")
    # TensorRT-LLM's series first (an ensemble's), then a Python-backend model's.
    telemetry_signals: ClassVar[TelemetrySignals] = _merge(
        _TRTLLM_SIGNALS, _python_backend_signals(None)
    )

    def signals_for(self, model: str | None) -> TelemetrySignals:
        if not model:
            return self.telemetry_signals
        # This model's series only: summing a repository's models would count an ensemble's
        # steps as requests of their own.
        return _merge(_TRTLLM_SIGNALS, _python_backend_signals(model))

    def run_split_for(self, model: str | None) -> RunSplit | None:
        # Without the served model's name there is no series of its own to read: a sum over the
        # repository counts an ensemble's request once in it and once in each model it calls.
        return _run_split(model) if model else None

    def detect(self, evidence: ProbeEvidence) -> bool:
        return evidence.value("/v2", "name") == "triton"

    def models(self, evidence: ProbeEvidence) -> list[str]:
        """The ready models of the repository index (else an OpenAI frontend's list)."""
        index = evidence.get(REPOSITORY_INDEX).json
        if isinstance(index, list):
            return [
                str(m["name"])
                for m in index
                if isinstance(m, dict) and m.get("name") and m.get("state", "READY") == "READY"
            ]
        return super().models(evidence)

    def extra_probes(self, evidence: ProbeEvidence) -> list[tuple[str, str]]:
        """(method, path) asked once `/v2` said triton: the repository index, then (see
        `more_probes`) each ready model's config."""
        if not self.detect(evidence):
            return []
        return [("POST", "/v2/repository/index"), ("GET", self.health_path)]

    def more_probes(self, evidence: ProbeEvidence) -> list[tuple[str, str]]:
        return [("GET", f"/v2/models/{name}/config") for name in self.models(evidence)[:8]]

    def backends(self, evidence: ProbeEvidence) -> dict[str, str]:
        """Model name -> the backend serving it, from the models' configs."""
        found: dict[str, str] = {}
        for name in self.models(evidence):
            config = evidence.get(f"/v2/models/{name}/config").json
            if isinstance(config, dict):
                backend = config.get("backend") or config.get("platform")
                if backend:
                    found[name] = str(backend)
        return found

    def describe(self, evidence: ProbeEvidence) -> str:
        """ "Triton (Python backend)", "Triton (TensorRT-LLM backend)", ...; an ensemble is named
        by the backends of its steps."""
        backends = set(self.backends(evidence).values())
        if len(backends) > 1:
            backends.discard("ensemble")
        if not backends:
            return self.label
        names = sorted(BACKEND_NAMES.get(b, f"{b} backend") for b in backends)
        return f"{self.label} ({', '.join(names)})"

    # --- requests: Triton's generate extension ---------------------------------------

    def stream_path(self, model: str) -> str | None:
        return f"/v2/models/{model}/generate_stream"

    def stream_body(self, model: str, messages: list[ForeignJson], params: SamplingParams) -> JsonOut:
        """The generate_stream body: the chat as JSON (the model applies its chat template)
        and the sampling parameters as the model's optional inputs."""
        body: JsonOut = {"messages": json.dumps(messages, ensure_ascii=False), "stream": True}
        if params.max_tokens is not None:
            body["max_tokens"] = params.max_tokens
        if params.temperature is not None:
            body["temperature"] = params.temperature
        if params.top_p is not None:
            body["top_p"] = params.top_p
        if params.seed is not None:
            body["seed"] = params.seed
        if params.ignore_eos:
            body["ignore_eos"] = True
        return body

    def unsupported(self, params: SamplingParams) -> list[str]:
        missing = super().unsupported(params)
        if params.stop:
            missing.append("stop")
        return missing
