"""Fingerprints built from what a run stored: its config (the BenchSpec, or an import's setup
keys), its summary and its engines' snapshots.

A benchmark stores its engines' fingerprints in its summary when it finishes
(`summary["comparability"]`, see `stored_fingerprints`), an import stores what its file says;
a run from before either reads what its config and summary still tell, the rest unknown.
"""

from __future__ import annotations

from typing import Any

from services.bench.comparability.fingerprint import (
    MAX_SETTINGS,
    WARM_CACHE_SHARE,
    Comparability,
    PrefixCache,
    TokenCounter,
)
from services.bench.comparability.hardware import hardware_names
from services.bench.comparability.imported import imported_fingerprint
from services.bench.comparability.weights import weights_of
from services.bench.results import EngineResults
from services.bench.summary import BenchSummary
from services.core import stored_json
from services.core.json_types import ForeignJson, JsonOut
from services.runstate.stored import (
    StoredBenchConfig,
    StoredEngine,
    StoredLoad,
    StoredWorkload,
    bench_config,
    engine_named,
)

SUMMARY_KEY = "comparability"
SHOOTOUT = "Shootout"
#: Workloads whose prompts share prefixes by design (groups, or a conversation's history).
SHARING_WORKLOADS = ("shared_prefix", "multi_turn")
#: Workloads whose requests ask for one length (a mean for distributions).
ASKED_LENGTH_WORKLOADS = ("synthetic", "long_prompt", "structured", "shared_prefix", "multi_turn")


def _per_request(block: EngineResults, total: int | None) -> float | None:
    """A token total of the block per completed request."""
    if not block.completed or total is None:
        return None
    return total / block.completed


def _token_counter(block: EngineResults) -> TokenCounter | None:
    """Prompt tokens come only from the engine's usage: completed requests with none counted
    had no usage, so their output tokens were the stream's content chunks (services.core.measure)."""
    if not block.completed:
        return None
    prompt = block.input_tokens
    if prompt is None:
        return None
    return "engine usage" if prompt > 0 else "text chunks"


def _prefix_cache(
    block: EngineResults, workload_kind: str | None
) -> tuple[PrefixCache | None, float | None]:
    served, cached = block.input_tokens, block.cached_tokens
    share = cached / served if cached is not None and served else None
    if share is not None and not 0 <= share <= 1:
        # Impossible counters (services/core/counts.py refuses them per request): unknown.
        share = None
    if workload_kind in SHARING_WORKLOADS:
        return "shared prefixes", share
    if share is None:
        # The engine's own counter includes the warm-up: a weaker witness, still a witness.
        rate = block.engine_metrics.prefix_cache_hit_rate
        if rate is None:
            return None, None
        return ("warm" if rate >= WARM_CACHE_SHARE else "cold"), None
    return ("warm" if share >= WARM_CACHE_SHARE else "cold"), share


def _level(
    config: StoredBenchConfig, summary: BenchSummary, engine: str
) -> tuple[str | None, str | None]:
    load = config.get("load", StoredLoad())
    mode = stored_json.nonempty_text(load.get("mode"))
    loop = {"concurrency": "closed", "rate": "open", "trace": "trace replay"}.get(mode or "")
    step = summary.reported_step(engine)
    if step is not None:
        for dimension in ("concurrency", "rate"):
            value = step.concurrency if dimension == "concurrency" else step.rate
            if value is not None:
                loop = "closed" if dimension == "concurrency" else "open"
                return loop, f"{dimension} {value:g}" + (" req/s" if dimension == "rate" else "")
    if mode == "concurrency" and stored_json.number(load.get("concurrency")) is not None:
        return loop, f"concurrency {load['concurrency']:g}"
    if mode == "rate" and stored_json.number(load.get("rate")) is not None:
        cap = stored_json.number(load.get("concurrency"))
        return loop, f"rate {load['rate']:g} req/s" + (f", cap {cap:g}" if cap else "")
    if mode == "trace":
        speed = stored_json.number(load.get("trace_speed"))
        return loop, f"trace x{speed:g}" if speed is not None else None
    return loop, None


def from_benchmark(config: StoredBenchConfig, summary: BenchSummary, engine: str) -> Comparability:
    """A Shootout benchmark's engine, from its stored spec and summary."""
    block = summary.engine(engine) or EngineResults()
    workload = config.get("workload", StoredWorkload())
    kind = stored_json.nonempty_text(workload.get("kind")) if workload else None
    fixed: bool | None = None
    if workload:
        fixed = bool(workload.get("fixed_output", True)) and kind != "structured"
    output_asked = (
        stored_json.number(workload.get("output_len")) if kind in ASKED_LENGTH_WORKLOADS else None
    )
    load = config.get("load", StoredLoad())
    # Without the spec's load, the block's count; a block that sent nothing (an old or odd
    # summary) says nothing of its warm-up.
    warmup = (
        stored_json.number(load.get("warmup_requests")) if load else block.warmup if block.sent else None
    )
    loop, level = _level(config, summary, engine)
    prefix, share = _prefix_cache(block, kind)
    temperature = config.get("temperature", "unset") if config else "unset"
    sampling = None
    if temperature is None:
        sampling = "engine default temperature"
    elif stored_json.number(temperature) is not None:
        sampling = f"temperature {temperature:g}"
    connect = summary.ttft_includes_connect
    timing = None
    if connect is not None:
        timing = f"{SHOOTOUT} streaming client, " + (
            "TTFT includes connecting" if connect else "connections opened ahead"
        )
    asked = requested_input_tokens(config) if workload else None
    return Comparability(
        source=SHOOTOUT if config or summary.engines else None,
        model=block.model or summary.served_model(engine),
        input_len_asked=float(asked) if asked is not None else None,
        input_len_served=_per_request(block, block.input_tokens),
        output_len_asked=output_asked,
        output_len_served=_per_request(block, block.output_tokens),
        fixed_output=fixed,
        fixed_output_honoured=block.honoured_output_len,
        warmup_requests=int(warmup) if warmup is not None else None,
        loop=loop,
        level=level,
        prefix_cache=prefix,
        cached_share=share,
        cache_warm_at_start=block.cache_warm_at_start,
        sampling=sampling,
        token_counter=_token_counter(block),
        timing=timing,
        ttft_includes_reasoning=_reasoning(block, summary),
        hardware=_hardware(config, summary, block.extra),
    )


def _reasoning(block: EngineResults, summary: BenchSummary) -> bool | None:
    """`ttft_includes_reasoning` as the benchmark stored it (the engine's block, else the
    run's); runs from before it was recorded: unknown."""
    if block.ttft_includes_reasoning is not None:
        return block.ttft_includes_reasoning
    return summary.ttft_includes_reasoning


def _hardware(*places: Any) -> str | None:
    blocks = [p.extra if isinstance(p, BenchSummary) else stored_json.mapping(p) for p in places]
    names = list(dict.fromkeys(hardware_names(*blocks)))
    return ", ".join(names) if names else None


def _flatten(prefix: str, value: Any, out: dict[str, str], depth: int = 0) -> None:
    if len(out) >= MAX_SETTINGS:
        return
    if isinstance(value, dict) and depth < 4:
        for key in sorted(value, key=str):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], out, depth + 1)
    elif value is not None:
        out[prefix] = str(value)[:200]


def from_snapshot(snapshot: StoredEngine | None) -> Comparability:
    """What the engine's snapshot (Run.engines) says of it: kind, version, settings, hardware."""
    snapshot = snapshot or StoredEngine()
    reported = stored_json.mapping(snapshot.get("reported"))
    # The weights first: a capped, alphabetical flattening must never leave out Q4_1 vs BF16.
    settings: dict[str, str] = weights_of(snapshot)
    _flatten("", {k: v for k, v in reported.items() if k != "version"}, settings)
    version = snapshot.get("version") or reported.get("version")
    return Comparability(
        model=stored_json.nonempty_text(snapshot.get("model")),
        engine_kind=stored_json.nonempty_text(snapshot.get("kind")),
        engine_version=str(version) if version else None,
        engine_settings=settings,
        hardware=_hardware(reported, stored_json.mapping(snapshot.get("info"))),
    )


def stored_fingerprints(summary: BenchSummary) -> dict[str, Comparability]:
    """The fingerprints a summary stored, per engine (none for a run from before them)."""
    stored = stored_json.mapping(BenchSummary.from_json(summary).extra.get(SUMMARY_KEY))
    return {str(name): Comparability.from_json(data) for name, data in stored.items()}


def fingerprints_to_store(config: Any, summary: BenchSummary) -> JsonOut:
    """The summary's `comparability` value for a benchmark that just finished (`config`: its
    stored spec)."""
    spec = bench_config(config)
    return {name: from_benchmark(spec, summary, name).to_json() for name in summary.engines_that_ran()}


def run_fingerprint(
    config: Any, summary: Any, snapshots: list[Any] | None, engine: str
) -> Comparability:
    """One engine of a stored run: what it stored when it finished, else what its config and
    summary tell (an import: what its file said), then its snapshot's engine facts."""
    config = stored_json.mapping(config)
    results = BenchSummary.from_json(summary)
    stored = stored_fingerprints(results).get(engine)
    tool = stored_json.nonempty_text(stored_json.mapping(config.get("import")).get("tool")) or ""
    # A Shootout run exported and imported again is still Shootout's measurement.
    imported = bool(tool) and not tool.startswith(SHOOTOUT)
    derived = (
        from_imported(config, results, engine)
        if imported
        else from_benchmark(bench_config(config), results, engine)
    )
    found = stored.merged_over(derived) if stored is not None else derived
    return found.merged_over(from_snapshot(engine_named(snapshots, engine)))


def from_imported(config: ForeignJson, summary: BenchSummary, engine: str) -> Comparability:
    """An imported run's engine: what the other tool's file said (its setup keys, kept in the
    run's config), the served lengths from its numbers; the rest unknown."""
    return imported_fingerprint(config, summary, engine)


def requested_input_tokens(config: Any) -> int | None:
    """The prompt length a benchmark asked for (mean tokens per request, before the chat
    template), or None where the workload does not fix one (traces, files, growing turns);
    `config`: its stored spec."""
    workload = bench_config(config).get("workload", StoredWorkload())
    kind = workload.get("kind", "synthetic")
    input_len = stored_json.number(workload.get("input_len"))
    if input_len is None or kind not in ("synthetic", "structured", "shared_prefix"):
        return None
    if kind == "shared_prefix":
        prefix = stored_json.number(workload.get("prefix_len"))
        return int(input_len) + int(prefix) if prefix is not None else None
    return int(input_len)
