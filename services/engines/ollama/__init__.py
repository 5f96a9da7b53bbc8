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
    cached_tokens_source = "not reported by Ollama"

    def detect(self, evidence: ProbeEvidence) -> bool:
        root = evidence.get("/")
        version = evidence.get("/api/version").json
        return bool(root.ok and "Ollama is running" in (root.text or "")) and isinstance(version, dict)

    def version(self, evidence: ProbeEvidence) -> str | None:
        body = evidence.get("/api/version").json
        return str(body["version"]) if isinstance(body, dict) and body.get("version") else None
