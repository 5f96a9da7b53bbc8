"""Ollama: `GET /` says "Ollama is running", `/api/version`; no Prometheus endpoint."""

from __future__ import annotations

from services.engines.base import EngineAdapter, ProbeEvidence
from services.engines.registry import register


@register
class OllamaAdapter(EngineAdapter):
    kind = "ollama"
    label = "Ollama"
    priority = 30
    supports_n = False
    version_at = (("/api/version", "version"),)
    cached_tokens_source = "not reported by Ollama"

    def detect(self, evidence: ProbeEvidence) -> bool:
        version = evidence.get("/api/version").json
        return evidence.says("/", "Ollama is running") and isinstance(version, dict)
