"""The evidence an explanation reads from one side's stored results: the engine's own split of
its requests' time (means over the requests it timed, which add up: services/bench/time_split.py),
its metrics over the run's window (services/bench/jobs/engine_metrics.py), its batch cap, and the
names the engine gives each of these (its adapter's declarations)."""

from __future__ import annotations

from dataclasses import dataclass

from services.bench.explain.records import Side
from services.bench.results import Distribution, EngineResults
from services.bench.window_counts import RunSplitMeans
from services.engines import get_adapter

#: The engine's own metric behind each normalised signal, when its kind does not say.
_SIGNAL_WORDS = {
    "requests_waiting": "its count of requests waiting",
    "requests_running": "its count of requests running",
    "prefix_cache_hit_rate": "its prefix-cache hit counters",
    "kv_cache_usage": "its KV-cache usage",
    "preemptions_per_s": "its preemption counter",
    "spec_decode_acceptance": "its speculative-decoding counters",
}


def metric_name(side: Side, signal: str) -> str:
    """The engine's own name of a normalised signal ("vllm:num_requests_waiting"), from the first
    alternative its adapter declares; words when the kind is not known."""
    specs = get_adapter(side.kind).telemetry_signals.get(signal) if side.kind else None
    if specs:
        names = [metric.name for _kind, metric in specs[0].inputs()]
        if names:
            return " / ".join(dict.fromkeys(names))
    return _SIGNAL_WORDS.get(signal, signal)


def run_split(side: Side) -> RunSplitMeans | None:
    """The engine's own run-level split (services/engines/run_split.py), kept only for a side
    whose engine timed none of its requests: the two accounts are never mixed."""
    if side.results.time_split.timed > 0:
        return None
    return RunSplitMeans.from_json(side.results.engine_metrics.values.get("run_split"))


def times_source(side: Side) -> str:
    """Where the engine's per-request times came from, in its words."""
    run = run_split(side)
    if run is not None and run.source:
        return run.source
    declared = get_adapter(side.kind).engine_times_source if side.kind else ""
    stored = side.results.time_split.source
    return declared or stored or "the engine's own per-request times"


@dataclass(frozen=True)
class Split:
    """The means of one side's time split over the requests its engine timed."""

    timed: int
    requests: int
    queue: float | None
    prefill: float | None
    decode: float | None
    ttft_rest: float | None
    e2e_rest: float | None
    e2e: float | None
    queue_reported: bool
    #: The engine's run totals (a mean over every request it counted in the step, the warm-up's
    #: too), not a split of each request.
    run_mean: bool = False

    @property
    def coverage(self) -> str:
        if self.run_mean:
            return f"a run mean over the {self.timed} requests it counted in the step"
        return f"over {self.timed} of {self.requests} requests"


def _mean(part: Distribution | None) -> float | None:
    return part.mean if part is not None else None


def _difference(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def _run_mean_split(run: RunSplitMeans, results: EngineResults) -> Split | None:
    """The split from the engine's run totals: prefill is its first token less its queue, decode
    its whole request less its first token, the rest the client's mean less the engine's."""
    if run.ttft_s is None:
        return None
    return Split(
        timed=run.requests,
        requests=results.completed,
        queue=run.queue_s,
        prefill=_difference(run.ttft_s, run.queue_s or 0.0),
        decode=_difference(run.e2e_s, run.ttft_s),
        ttft_rest=_difference(_mean(results.ttft_s), run.ttft_s),
        e2e_rest=_difference(_mean(results.e2e_s), run.e2e_s),
        e2e=_mean(results.e2e_s),
        queue_reported=run.queue_s is not None,
        run_mean=True,
    )


def split_of(side: Side) -> Split | None:
    """The side's split: from its engine's run totals where `run_split` keeps them, else over the
    requests its engine timed; None when it has neither."""
    run = run_split(side)
    if run is not None:
        return _run_mean_split(run, side.results)
    block = side.results.time_split
    timed = block.timed
    if timed <= 0:
        return None
    return Split(
        timed=timed,
        requests=block.requests or timed,
        queue=_mean(block.queue_s),
        prefill=_mean(block.prefill_s),
        decode=_mean(block.decode_s),
        ttft_rest=_mean(block.ttft_rest_s),
        e2e_rest=_mean(block.e2e_rest_s),
        e2e=_mean(block.e2e_s),
        queue_reported=bool(block.queue_reported),
    )


def engine_metric(side: Side, key: str) -> float | None:
    return side.results.engine_metrics.at(key)


def samples(side: Side) -> int:
    return side.results.engine_metrics.samples


def per_request(side: Side, total: int | None) -> float | None:
    completed = side.results.completed
    return total / completed if completed and total is not None else None


def batch_cap(side: Side) -> tuple[int, str, str] | None:
    """(the cap, its setting's name, where its value was read) when the engine reported it or
    Shootout launched it with it; None otherwise (a remote engine's unreported setting is never
    cited)."""
    cap = get_adapter(side.kind).batch_cap if side.kind else None
    if cap is None:
        return None
    found = cap.value(side.reported, side.command)
    return (found[0], cap.setting, found[1]) if found else None


def hint(side: Side) -> str:
    """How to record what was missing, in the engine's words (its flags)."""
    adapter = get_adapter(side.kind) if side.kind else None
    if adapter is None:
        return ""
    said = [*adapter.engine_times_flags]
    if adapter.metrics_hint:
        said.append(adapter.metrics_hint)
    return "; ".join(said)
