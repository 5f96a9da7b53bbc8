"""Triton Inference Server with the TensorRT-LLM backend: `GET /v2` names "triton";
metrics on a separate port (8002 by default)."""

from __future__ import annotations

from services.engines.base import EngineAdapter, ProbeEvidence
from services.engines.registry import register


@register
class TritonAdapter(EngineAdapter):
    kind = "triton"
    label = "Triton + TensorRT-LLM"
    priority = 40
    metrics_path = "/metrics"  # on the metrics port: set the engine's metrics URL
    metrics_format = "prometheus"
    supports_n = False
    metrics_hint = "Metrics are on port 8002 (--allow-metrics, --metrics-port); set the metrics URL."

    def detect(self, evidence: ProbeEvidence) -> bool:
        body = evidence.get("/v2").json
        return isinstance(body, dict) and body.get("name") == "triton"

    def version(self, evidence: ProbeEvidence) -> str | None:
        body = evidence.get("/v2").json
        return str(body.get("version")) if isinstance(body, dict) and body.get("version") else None
