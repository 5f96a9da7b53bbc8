"""Benchmark statistics: throughput, goodput, the run summary, charts' series.

Pure functions over plain records, so every number in a report can be checked by hand
(tests pin exact values). Per-request figures (TTFT, ITL, TPOT, E2E) and percentiles are
defined once, in services/core/measure.py, for every page and command.

Definitions of the run's figures:
- Duration: first measured request sent -> last measured request ended. Throughputs divide
  completed requests and their tokens by it; goodput counts only requests that met every SLO.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.bench.blocks import EngineResultsJson, ReasoningJson
from services.bench.pickling import pickled_as_fields
from services.bench.results import SPLIT_PARTS, EngineMetrics, EngineResults
from services.core.counts import Refusal
from services.core.json_types import JsonOut
from services.core.measure import (
    DEFAULT_PERCENTILES,
    EngineTimes,
    TimeSplit,
    answer_rate,
    describe,
    reasoning_rate,
    time_split,
    tpot,
)

METRIC_KEYS = ("ttft_s", "tpot_s", "itl_s", "e2e_s")


@dataclass(frozen=True)
class SloSpec:
    """Service-level objectives in milliseconds; None = not constrained."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    #: On time to first answer token: a reasoning model's user waits for the answer, not
    #: for its first thinking token (TTFT).
    ttfat_ms: float | None = None
    #: Share of requests that must meet every SLO for a load level to "meet the SLOs".
    attainment: float = 0.9

    @property
    def active(self) -> bool:
        return any(
            value is not None for value in (self.ttft_ms, self.tpot_ms, self.e2e_ms, self.ttfat_ms)
        )

    def limits(self) -> list[tuple[str, float | None]]:
        """(name, limit in ms) of every objective, set or not."""
        return [
            ("TTFT", self.ttft_ms),
            ("TTFAT", self.ttfat_ms),
            ("TPOT", self.tpot_ms),
            ("E2E", self.e2e_ms),
        ]

    def label(self) -> str:
        parts = [f"{name} <= {value:g} ms" for name, value in self.limits() if value is not None]
        return ", ".join(parts) or "none"


@pickled_as_fields
@dataclass(slots=True)
class RequestRecord:
    """One finished (or failed) request as the statistics see it. Times in seconds from the run start."""

    engine: str
    index: int
    ok: bool
    warmup: bool = False
    scheduled_s: float | None = None
    start_s: float | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    requested_output_tokens: int | None = None
    error_class: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    schema_valid: bool | None = None
    step: int | None = None
    #: Time to first answer token (services/core/measure.py): TTFT for a model that does not think.
    ttfat_s: float | None = None
    reasoning_tokens: int | None = None
    #: Who counted them: "usage" (the engine) or "stream" (the thinking deltas).
    reasoning_source: str | None = None
    ttft_includes_reasoning: bool = False
    #: The engine's own times of this request, as its adapter read them (None: not reported).
    engine_times: EngineTimes | None = None
    #: The tokens the stream itself proved, the usage counters refused (never published: the
    #: figures above use the stream's count) and whether the stream itself ran past the
    #: max_tokens asked (services/core/counts.py; services/bench/findings.py reads them).
    stream_tokens: int | None = None
    refused: tuple[Refusal, ...] = ()
    over_max_tokens: bool = False
    #: Digests of the answer and of the prompt (the identical-answers finding compares them).
    answer_digest: str | None = None
    prompt_digest: str | None = None

    @property
    def tpot_s(self) -> float | None:
        return tpot(self.ttft_s, self.e2e_s, self.output_tokens)

    @property
    def answer_tokens(self) -> int | None:
        """Output tokens less reasoning tokens; None when it thought but nobody counted how
        much (an imported file with a first output token but no reasoning count)."""
        if self.output_tokens is None or (
            self.ttft_includes_reasoning and self.reasoning_tokens is None
        ):
            return None
        return max(0, self.output_tokens - (self.reasoning_tokens or 0))

    @property
    def reasoning_tok_s(self) -> float | None:
        return reasoning_rate(self.ttft_s, self.ttfat_s, self.reasoning_tokens)

    @property
    def answer_tok_s(self) -> float | None:
        return answer_rate(self.ttfat_s, self.e2e_s, self.answer_tokens)

    @property
    def time_split(self) -> TimeSplit | None:
        """Where this request's time went: the engine's queue, prefill and decode and the rest."""
        return time_split(self.ttft_s, self.e2e_s, self.engine_times) if self.ok else None

    @property
    def end_s(self) -> float | None:
        if self.start_s is None:
            return None
        return self.start_s + (self.e2e_s or 0.0)

    @property
    def queue_s(self) -> float | None:
        if self.scheduled_s is None or self.start_s is None:
            return None
        return max(0.0, self.start_s - self.scheduled_s)


def cdf_points(values: Iterable[float], max_points: int = 400) -> tuple[list[float], list[float]]:
    """(x, F(x)) of the empirical CDF, thinned to at most `max_points` points for charts."""
    ordered = sorted(values)
    count = len(ordered)
    if count == 0:
        return [], []
    step = max(1, count // max_points)
    indices = list(range(0, count, step))
    if indices[-1] != count - 1:
        indices.append(count - 1)
    return [ordered[i] for i in indices], [(i + 1) / count for i in indices]


# ---------------------------------------------------------------------------------------
# Per run
# ---------------------------------------------------------------------------------------


def meets_slo(record: RequestRecord, slo: SloSpec) -> bool:
    """A completed request within every set limit (TPOT is undefined for one-token answers)."""
    return record.ok and within_slo(slo, record.ttft_s, record.tpot_s, record.e2e_s, record.ttfat_s)


def within_slo(
    slo: SloSpec,
    ttft_s: float | None,
    tpot_s: float | None,
    e2e_s: float | None,
    ttfat_s: float | None = None,
) -> bool:
    """A completed request's times within every set limit: goodput's one definition, for the
    benchmark's records and for stored rows (the gate's within-run interval of goodput)."""
    if slo.ttft_ms is not None and (ttft_s is None or ttft_s * 1000 > slo.ttft_ms):
        return False
    if slo.e2e_ms is not None and (e2e_s is None or e2e_s * 1000 > slo.e2e_ms):
        return False
    if slo.ttfat_ms is not None and (ttfat_s is None or ttfat_s * 1000 > slo.ttfat_ms):
        return False
    return not (slo.tpot_ms is not None and tpot_s is not None and tpot_s * 1000 > slo.tpot_ms)


def block_meets_slo(block: EngineResults | EngineResultsJson, slo: SloSpec) -> bool:
    """A step (a summary block) meets the SLOs: it completed requests and, with SLOs set, at
    least the required share of its requests met every limit. Tune's winner and the cheapest
    step or configuration are chosen among these."""
    results = EngineResults.from_json(block)
    if not results.completed:
        return False
    if not slo.active:
        return True
    return results.slo_attainment is not None and results.slo_attainment >= slo.attainment


def concurrency_timeline(records: Iterable[RequestRecord]) -> list[tuple[float, int]]:
    """(time, requests in flight from then on) at every start and end, in time order."""
    events: list[tuple[float, int]] = []
    for record in records:
        if record.start_s is None:
            continue
        events.append((record.start_s, 1))
        events.append((record.end_s or record.start_s, -1))
    events.sort(key=lambda e: (e[0], e[1]))
    timeline: list[tuple[float, int]] = []
    level = 0
    for time, change in events:
        level += change
        if timeline and timeline[-1][0] == time:
            timeline[-1] = (time, level)
        else:
            timeline.append((time, level))
    return timeline


def time_weighted_mean(timeline: Sequence[tuple[float, int]]) -> float | None:
    if len(timeline) < 2:
        return None
    area = 0.0
    for (t0, level), (t1, _) in itertools.pairwise(timeline):
        area += level * (t1 - t0)
    span = timeline[-1][0] - timeline[0][0]
    return area / span if span > 0 else None


#: The engine metrics of a load whose engine's metrics were not recorded.
NO_ENGINE_METRICS: dict[str, float | None] = {"prefix_cache_hit_rate": None, "kv_cache_usage_max": None}


#: The error class of a request stopped by the user (services/client.ERROR_CLASSES).
CANCELLED = "cancelled"


def summarize_engine(
    records: Sequence[RequestRecord],
    *,
    slo: SloSpec | None = None,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    fixed_output: bool = False,
    engine_metrics: EngineMetrics | None = None,
) -> EngineResultsJson:
    """One engine's block of Run.summary (format documented in docs/cli-formats.md) from its records."""
    measured = [r for r in records if not r.warmup]
    done = [r for r in measured if r.ok]
    # Requests the user stopped in flight are their own class, not the engine's failures:
    # completed + failed + cancelled = sent, and the error rate counts failures only.
    cancelled = [r for r in measured if not r.ok and r.error_class == CANCELLED]
    failed = [r for r in measured if not r.ok and r.error_class != CANCELLED]
    errors: dict[str, int] = {}
    for record in failed:
        key = record.error_class or "unknown"
        errors[key] = errors.get(key, 0) + 1
    started = [r for r in measured if r.start_s is not None]
    if started:
        begin = min(r.start_s for r in started if r.start_s is not None)
        end = max(r.end_s or 0.0 for r in started)
        duration = max(0.0, end - begin)
    else:
        duration = 0.0
    input_tokens = sum(r.input_tokens or 0 for r in done)
    output_tokens = sum(r.output_tokens or 0 for r in done)
    cached_values = [r.cached_tokens for r in done if r.cached_tokens is not None]
    per_second = (lambda amount: amount / duration) if duration > 0 else (lambda amount: 0.0)

    goodput = None
    goodput_tokens = None
    attainment = None
    if slo is not None and slo.active:
        within = [r for r in done if meets_slo(r, slo)]
        good = len(within)
        goodput = per_second(good)
        # Over the same duration as the throughput: the rate of the tokens that count (cost at goodput).
        goodput_tokens = per_second(sum(r.output_tokens or 0 for r in within))
        attainment = good / len(measured) if measured else None

    schema_checked = [r.schema_valid for r in done if r.schema_valid is not None]
    honoured = None
    short = 0
    if fixed_output:
        short = sum(
            1
            for r in done
            if r.requested_output_tokens and (r.output_tokens or 0) < r.requested_output_tokens
        )
        honoured = short == 0 if done else None

    timeline = concurrency_timeline(started)
    queue = [q for q in (r.queue_s for r in done) if q is not None]
    itl = [gap for r in done for gap in r.itl_s]
    summary: EngineResultsJson = {
        "completed": len(done),
        "failed": len(failed),
        "cancelled_requests": len(cancelled),
        "sent": len(measured),
        "warmup": len(records) - len(measured),
        "errors_by_class": errors,
        "error_rate": len(failed) / (len(done) + len(failed)) if done or failed else 0.0,
        "duration_s": duration,
        "request_throughput_rps": per_second(len(done)),
        "input_throughput_tok_s": per_second(input_tokens),
        "output_throughput_tok_s": per_second(output_tokens),
        "total_token_throughput_tok_s": per_second(input_tokens + output_tokens),
        "goodput_rps": goodput,
        "goodput_output_tok_s": goodput_tokens,
        "slo_attainment": attainment,
        "ttft_s": describe((r.ttft_s for r in done if r.ttft_s is not None), percentiles),
        "tpot_s": describe((t for t in (r.tpot_s for r in done) if t is not None), percentiles),
        "itl_s": describe(itl, percentiles),
        "e2e_s": describe((r.e2e_s for r in done if r.e2e_s is not None), percentiles),
        **reasoning_block(done, percentiles),
        "queue_s": describe(queue, percentiles) if any(queue) else None,
        # The client's own wait, from when a request was due to when it was sent (an open loop
        # capped by its concurrency holds requests here): never in TTFT, never the engine's.
        "client_wait_s": describe(
            (
                max(0.0, r.start_s - r.scheduled_s)
                for r in done
                if r.start_s is not None and r.scheduled_s is not None
            ),
            percentiles,
        ),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_tokens": sum(cached_values) if cached_values else None,
        "cache_warm_at_start": cache_warm_at_start(records),
        "schema_valid_rate": (sum(schema_checked) / len(schema_checked)) if schema_checked else None,
        "honoured_output_len": honoured,
        "short_output_requests": short if fixed_output else None,
        "concurrency_max": max((level for _, level in timeline), default=0),
        "concurrency_mean": time_weighted_mean(timeline),
        "engine_metrics": engine_metrics.to_json()
        if engine_metrics is not None and engine_metrics.values
        else dict(NO_ENGINE_METRICS),
        "time_split": split_block(done, percentiles),
    }
    return summary


#: A cache that serves more than this share of the first prompt a run sends held some of the
#: workload before the run began (an earlier identical run, a warm-up outside it): the margin
#: within which two cached shares count as the same (comparability's CACHED_SHARE_POINTS).
WARM_AT_START_SHARE = 0.10


def cache_warm_at_start(records: Sequence[RequestRecord]) -> bool | None:
    """Whether the engine's cache held this workload before the run: the first request the run
    sent (its warm-up included) found more than `WARM_AT_START_SHARE` of its prompt cached. A cache
    filled by the run's own requests is the engine's property to explain; one filled before it
    is not the engine's merit. None when the engine reported no cached tokens."""
    started = [r for r in records if r.ok and r.start_s is not None and r.input_tokens]
    if not started:
        return None
    first = min(started, key=lambda r: r.start_s or 0.0)
    if first.cached_tokens is None or not first.input_tokens:
        return None
    return first.cached_tokens > WARM_AT_START_SHARE * first.input_tokens


def reasoning_block(
    done: Sequence[RequestRecord], percentiles: Sequence[float] = DEFAULT_PERCENTILES
) -> ReasoningJson:
    """An engine's answer timing beside its TTFT: time to first answer token, reasoning and
    answer tokens and their rates (per request, services/core/measure.py), who counted the
    reasoning tokens, and whether any TTFT includes thinking (then it is not comparable with
    that of a model that answers at once)."""
    sources = sorted({r.reasoning_source for r in done if r.reasoning_tokens and r.reasoning_source})
    uncounted = any(r.ttft_includes_reasoning and r.reasoning_tokens is None for r in done)
    return {
        "ttfat_s": describe((r.ttfat_s for r in done if r.ttfat_s is not None), percentiles),
        "reasoning_tok_s": describe(
            (v for v in (r.reasoning_tok_s for r in done) if v is not None), percentiles
        ),
        "answer_tok_s": describe(
            (v for v in (r.answer_tok_s for r in done) if v is not None), percentiles
        ),
        # Unknown, not 0, when some request thought and nobody counted its thinking.
        "reasoning_tokens": None if uncounted else sum(r.reasoning_tokens or 0 for r in done),
        "answer_tokens": None if uncounted else sum(r.answer_tokens or 0 for r in done),
        "reasoning_tokens_source": "+".join(sources) if sources else None,
        "ttft_includes_reasoning": any(r.ttft_includes_reasoning for r in done),
    }


def reasoning_keys(
    ttfat_s: float | None, reasoning_tokens: int | None, source: str | None, includes: bool
) -> JsonOut:
    """The `extra` keys of a request's answer timing (ours or an imported one): time to first
    answer token always (so a reader never has to guess that it equals TTFT), the reasoning
    tokens and who counted them when there were any, and the flag when TTFT includes thinking."""
    extra: JsonOut = {}
    if ttfat_s is not None:
        extra["ttfat_s"] = ttfat_s
    if reasoning_tokens:
        extra["reasoning_tokens"] = reasoning_tokens
        extra["reasoning_source"] = source
    if includes:
        extra["ttft_includes_reasoning"] = True
    return extra


def token_arrival_times(record: RequestRecord) -> list[float]:
    """When each output token of a request arrived, seconds from the run start: the first
    at start + TTFT, the rest by its per-token gaps. Without the gaps (a live view reads
    requests without them) the tokens are spread evenly between the first token and the end."""
    if record.start_s is None or record.ttft_s is None or not record.output_tokens:
        return []
    first = record.start_s + record.ttft_s
    count = record.output_tokens
    if record.itl_s and len(record.itl_s) == count - 1:
        times = [first]
        for gap in record.itl_s:
            times.append(times[-1] + gap)
        return times
    end = record.end_s if record.end_s is not None else first
    if count == 1 or end <= first:
        return [first] * count
    step = (end - first) / (count - 1)
    return [first + i * step for i in range(count)]


def throughput_series(records: Iterable[RequestRecord], bucket_s: float = 1.0) -> list[dict[str, float]]:
    """Output tokens/s over time in even buckets, by when the tokens *arrived* (not when
    their request finished), from the first request's start to the last one's end, empty
    buckets included as zeros. Completed requests only, as in the results table, so the
    buckets add up to the table's output tokens and average to its output tokens/s."""
    done = [r for r in records if r.ok and r.start_s is not None]
    if not done:
        return []
    begin = min(r.start_s for r in done if r.start_s is not None)
    end = max(r.end_s or 0.0 for r in done)
    count = max(1, math.ceil((end - begin) / bucket_s - 1e-9))
    totals = [0] * count
    for record in done:
        for t in token_arrival_times(record):
            totals[min(count - 1, max(0, int((t - begin) // bucket_s)))] += 1
    return [{"t_s": begin + i * bucket_s, "output_tok_s": n / bucket_s} for i, n in enumerate(totals)]


def split_block(
    done: Sequence[RequestRecord], percentiles: Sequence[float] = DEFAULT_PERCENTILES
) -> JsonOut:
    """The `time_split` block of an engine's summary from its completed requests: how many
    the engine timed, where it said so, and each part's statistics over those requests."""
    timed = [
        (record, split)
        for record in done
        if (split := record.time_split) is not None and split.e2e_rest_s is not None
    ]
    block: JsonOut = {"requests": len(done), "reported": len(timed)}
    if not timed:
        return block
    block["source"] = ", ".join(
        sorted({record.engine_times.source for record, _ in timed if record.engine_times})
    )
    block["queue_reported"] = all(split.queue_s is not None for _, split in timed)
    if any(split.via for _, split in timed):
        block["via"] = ", ".join(sorted({split.via for _, split in timed if split.via}))
    for key in SPLIT_PARTS:
        values = [value for _, split in timed if (value := getattr(split, key)) is not None]
        block[key] = describe(values, percentiles) if values else None
    block["e2e_s"] = describe([record.e2e_s or 0.0 for record, _ in timed], percentiles)
    over = [split.overcount_s for _, split in timed if split.overcount_s > 0]
    if over:
        block["clamped"] = {"requests": len(over), "max_s": max(over)}
    return block


# ---------------------------------------------------------------------------------------
# Tail events
# ---------------------------------------------------------------------------------------

#: A wait (a request's TTFT, a gap between two of its tokens, its whole E2E) is a tail event, a
#: stall, when it is this many times the run's own p90 of that wait ...
TAIL_FACTOR = 10.0
#: ... and at least this much longer than that p90: a 40 ms hiccup beside a 3 ms ITL is a
#: loaded machine, not an engine that stopped (a user sees a pause of a second).
TAIL_MIN_EXCESS_S = 1.0


def tail_limit_s(p90_s: float) -> float:
    """The longest wait that is not yet a tail event, for a run whose waits of one kind (TTFT,
    ITL or E2E) have this p90: the one definition of a stall, read by the gate's stall finding
    and by its rate interval, which keeps a run's tail requests in every resample."""
    return max(TAIL_FACTOR * p90_s, p90_s + TAIL_MIN_EXCESS_S)
