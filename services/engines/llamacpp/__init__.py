"""llama.cpp's `llama-server`: `owned_by: "llamacpp"`, `/props`, `Server: llama.cpp`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from services.core.json_types import JsonOut
from services.core.measure import EngineTimes, milliseconds, token_count
from services.engines.base import (
    BatchCap,
    EngineAdapter,
    Fields,
    Headers,
    ProbeEvidence,
    TelemetrySignals,
    UntimedQueue,
    Usage,
)
from services.engines.normalise import (
    CounterRate,
    CounterRatio,
    Gauge,
    counters,
    metric,
)
from services.engines.registry import register


@register
class LlamaCppAdapter(EngineAdapter):
    kind = "llamacpp"
    label = "llama.cpp"
    priority = 50
    owned_by = "llamacpp"
    version_at = (("/props", "build_info"),)
    metrics_path = "/metrics"
    # ignore_eos: a fair comparison needs the exact output length, and llama.cpp stops at
    # max_tokens when told to ignore the end-of-sequence token.
    takes_extras = frozenset({"top_k", "ignore_eos"})
    cached_tokens_source = "timings.cache_n (and usage.prompt_tokens_details.cached_tokens)"
    metrics_hint = "Start llama-server with --metrics (else /metrics answers 501); --slots for /slots."
    metric_markers = ("llamacpp:",)
    # llama-server draws its multimodal marker at random at every start (`<__media_…__>`, unless
    # LLAMA_MEDIA_MARKER sets it) and says it in /props: a new value per process, not a setting.
    volatile_settings = frozenset({"/props.media_marker"})
    # Its slots: a request beyond them waits for one to free (`untimed_queue`).
    batch_cap = BatchCap(
        "--parallel", reported=(("/props", "total_slots"),), flags=("--parallel", "-np")
    )
    # The *_tokens_seconds gauges reset their window on every read (a second scraper would
    # corrupt them), so every rate comes from counters. Newer builds count cached prompt
    # tokens apart from prompt_tokens_total; older ones include them.
    telemetry_signals: ClassVar[TelemetrySignals] = {
        "kv_cache_usage": (
            Gauge(metric("llamacpp:kv_cache_usage_ratio"), note="builds before May 2025"),
        ),
        "prefix_cache_hit_rate": (
            CounterRatio(
                counters("llamacpp:prompt_tokens_cached"),
                counters("llamacpp:prompt_tokens", "llamacpp:prompt_tokens_cached"),
            ),
        ),
        "requests_running": (Gauge(metric("llamacpp:requests_processing")),),
        "requests_waiting": (Gauge(metric("llamacpp:requests_deferred")),),
        "prompt_tokens_per_s": (
            CounterRate(
                counters("llamacpp:prompt_tokens", "llamacpp:prompt_tokens_cached"),
                note="includes cached tokens",
            ),
            CounterRate(counters("llamacpp:prompt_tokens")),
        ),
        "generation_tokens_per_s": (CounterRate(counters("llamacpp:tokens_predicted")),),
        "itl_mean_s": (
            CounterRatio(
                counters("llamacpp:tokens_predicted_seconds"),
                counters("llamacpp:tokens_predicted"),
                note="generation seconds per generated token (all slots)",
            ),
        ),
        "spec_decode_acceptance": (
            CounterRatio(
                counters("llamacpp:spec_decode_num_accepted_tokens"),
                counters("llamacpp:spec_decode_num_draft_tokens"),
            ),
        ),
    }

    tokenize_path = "/tokenize"

    # tools/server/server-common.cpp `server_slot_stats::to_json`, on the last chunk: prompt_ms
    # is the prompt's processing (to the first token's logits), predicted_ms the generation
    # after it; prompt_n counts only the tokens processed, cache_n those reused. A request
    # that waits for a free slot is not timed (the task is deferred, and its slot's clock starts
    # when a slot takes it): `untimed_queue` reads that wait on the client's clock.
    engine_times_source = (
        "`timings` on the last chunk (always on); its wait for a free slot, which it does not "
        "time, from the client's clock"
    )
    untimed_queue = UntimedQueue(
        what="the wait for a free slot", waiting_metric="llamacpp:requests_deferred"
    )

    def engine_times(self, fields: Fields, usage: Usage | None, headers: Headers) -> EngineTimes | None:
        timings = fields.get("timings")
        if not isinstance(timings, Mapping):
            return None
        processed, cached = token_count(timings.get("prompt_n")), token_count(timings.get("cache_n"))
        times = EngineTimes(
            prefill_s=milliseconds(timings.get("prompt_ms")),
            decode_s=milliseconds(timings.get("predicted_ms")),
            prompt_tokens=processed + (cached or 0) if processed is not None else None,
            cached_tokens=cached,
            source="timings",
        )
        return times if times.reports_time else None

    def models(self, evidence: ProbeEvidence) -> list[str]:
        """Started without `--alias`, llama-server lists its GGUF *path* as the model id; the
        file's name says what it is (a single-model llama-server takes any model name)."""
        return [_file_name(model) for model in super().models(evidence)]

    def tokenize_body(self, text: str, model: str | None) -> JsonOut:
        return {"content": text, "add_special": False}

    def detect(self, evidence: ProbeEvidence) -> bool:
        if super().detect(evidence):
            return True
        props = evidence.get("/props").json
        if isinstance(props, dict) and ("total_slots" in props or "build_info" in props):
            return True
        return evidence.header("server").lower().startswith("llama.cpp")

    def context_length(self, evidence: ProbeEvidence) -> int | None:
        n_ctx = evidence.value("/props", "default_generation_settings", "n_ctx")
        return int(n_ctx) if isinstance(n_ctx, int) else super().context_length(evidence)


def _file_name(model: str) -> str:
    if model.lower().endswith(".gguf") and ("/" in model or "\\" in model):
        return model.replace("\\", "/").rsplit("/", 1)[-1]
    return model
