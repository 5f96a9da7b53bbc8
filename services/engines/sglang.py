"""SGLang (`python -m sglang.launch_server`): `owned_by: "sglang"`, `/server_info`, `GET /`."""

from __future__ import annotations

from services.engines.base import EngineAdapter, ProbeEvidence
from services.engines.registry import register


@register
class SglangAdapter(EngineAdapter):
    kind = "sglang"
    label = "SGLang"
    priority = 60  # before Ollama: SGLang can answer "Ollama is running" on GET /
    metrics_path = "/metrics"
    metrics_format = "prometheus"
    supports_top_k = True
    supports_min_tokens = True
    supports_ignore_eos = True
    metrics_hint = "Start with --enable-metrics (else /metrics answers 404)."

    def detect(self, evidence: ProbeEvidence) -> bool:
        if evidence.owned_by() == "sglang":
            return True
        root = evidence.get("/")
        if root.ok and "SGLang is running" in (root.text or ""):
            return True
        info = evidence.get("/server_info").json
        return isinstance(info, dict) and "version" in info and "tp_size" in info

    def version(self, evidence: ProbeEvidence) -> str | None:
        info = evidence.get("/server_info").json
        if isinstance(info, dict) and info.get("version"):
            return str(info["version"])
        return super().version(evidence)
