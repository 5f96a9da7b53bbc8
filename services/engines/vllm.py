"""vLLM (`vllm serve`): `owned_by: "vllm"` in /v1/models, `/version`, Prometheus /metrics."""

from __future__ import annotations

from services.engines.base import EngineAdapter, ProbeEvidence
from services.engines.registry import register


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

    def detect(self, evidence: ProbeEvidence) -> bool:
        return evidence.owned_by() == "vllm"
