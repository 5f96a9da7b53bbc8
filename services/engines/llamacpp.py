"""llama.cpp's `llama-server`: `owned_by: "llamacpp"`, `/props`, `Server: llama.cpp`."""

from __future__ import annotations

from typing import Any

from services.engines.base import EngineAdapter, ProbeEvidence, SamplingParams
from services.engines.registry import register


@register
class LlamaCppAdapter(EngineAdapter):
    kind = "llamacpp"
    label = "llama.cpp"
    priority = 50
    metrics_path = "/metrics"
    metrics_format = "prometheus"
    supports_top_k = True
    supports_ignore_eos = True
    cached_tokens_source = "timings.cache_n (and usage.prompt_tokens_details.cached_tokens)"
    metrics_hint = "Start llama-server with --metrics (else /metrics answers 501); --slots for /slots."

    def detect(self, evidence: ProbeEvidence) -> bool:
        if evidence.owned_by() == "llamacpp":
            return True
        props = evidence.get("/props").json
        if isinstance(props, dict) and ("total_slots" in props or "build_info" in props):
            return True
        return evidence.header("server").lower().startswith("llama.cpp")

    def version(self, evidence: ProbeEvidence) -> str | None:
        props = evidence.get("/props").json
        if isinstance(props, dict) and props.get("build_info"):
            return str(props["build_info"])
        return None

    def context_length(self, evidence: ProbeEvidence) -> int | None:
        props = evidence.get("/props").json
        if isinstance(props, dict):
            settings = props.get("default_generation_settings")
            if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
                return int(settings["n_ctx"])
        return super().context_length(evidence)

    def request_extras(self, params: SamplingParams) -> dict[str, Any]:
        extras = super().request_extras(params)
        # A fair comparison needs the exact output length: llama.cpp stops at
        # max_tokens when told to ignore the end-of-sequence token.
        return extras
