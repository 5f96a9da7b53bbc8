"""TensorRT-LLM's `trtllm-serve`: `owned_by: "tensorrt_llm"`; Prometheus text at
/prometheus/metrics, and a JSON /metrics of iteration stats that each read drains."""

from __future__ import annotations

from services.engines.base import EngineAdapter, ProbeEvidence
from services.engines.registry import register


@register
class TrtllmServeAdapter(EngineAdapter):
    kind = "trtllm"
    label = "TensorRT-LLM (trtllm-serve)"
    priority = 50
    metrics_path = "/prometheus/metrics"
    metrics_format = "prometheus"
    supports_top_k = True
    supports_min_tokens = True
    supports_ignore_eos = True
    metrics_hint = (
        "Set `return_perf_metrics: true` and `enable_iter_perf_stats: true` in the "
        "--extra_llm_api_options YAML; Prometheus text is at /prometheus/metrics."
    )

    def detect(self, evidence: ProbeEvidence) -> bool:
        return evidence.owned_by() == "tensorrt_llm"
