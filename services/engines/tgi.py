"""Hugging Face TGI: `/info` with `router: "text-generation-router"`."""

from __future__ import annotations

from typing import Any

from services.engines.base import EngineAdapter, ProbeEvidence
from services.engines.registry import register


@register
class TgiAdapter(EngineAdapter):
    kind = "tgi"
    label = "Hugging Face TGI"
    priority = 45
    metrics_path = "/metrics"
    metrics_format = "prometheus"
    supports_n = False  # parsed but unused by TGI's router
    cached_tokens_source = "not reported by TGI"

    def detect(self, evidence: ProbeEvidence) -> bool:
        info = evidence.get("/info").json
        return isinstance(info, dict) and info.get("router") == "text-generation-router"

    def version(self, evidence: ProbeEvidence) -> str | None:
        info = evidence.get("/info").json
        return str(info["version"]) if isinstance(info, dict) and info.get("version") else None

    def context_length(self, evidence: ProbeEvidence) -> int | None:
        info = evidence.get("/info").json
        if isinstance(info, dict) and isinstance(info.get("max_total_tokens"), int):
            return int(info["max_total_tokens"])
        return None

    def response_format(self, schema: dict[str, Any], name: str = "answer") -> dict[str, Any]:
        # TGI's own tagged shape; it rejects OpenAI's json_schema wrapper.
        return {"type": "json", "value": schema}
