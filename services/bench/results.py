"""One engine's results in a benchmark run (a block of Run.summary's `engines`, or one row of
its `sweep`) as one typed record: each figure a field, read once from stored JSON.

`summarize_engine` (services/bench/stats.py) defines the figures; `EngineResults.from_json`
reads what any version or importer stored (a missing or odd key reads as None, never raises)
and `to_json` writes the block in the format docs/cli-formats.md documents. A figure is added
as a field here, and mypy lists every reader that must show it.

A latency is a `Distribution`: its statistics as fields (mean, p50, p90, p95, p99, min, max,
std) and any other percentile a run asked for by name (`at("p99.9")`).

A reader takes a figure from its field, never by its stored name: the record is no mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from services.bench.blocks import (
    CostJson,
    EnergyJson,
    FindingJson,
    GeneratorBlock,
    cost_json,
    energy_json,
    findings_json,
    generator_block,
)
from services.core import stored_json
from services.core.json_types import ForeignJson, JsonOut
from services.core.stored_json import Stored, stored


@dataclass(frozen=True)
class Distribution:
    """The statistics of one figure over a run's requests (`describe` in services/core/measure.py),
    kept as stored: every statistic None when no request had the figure."""

    values: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self | None:
        return cls(dict(value)) if isinstance(value, dict) else None

    def to_json(self) -> JsonOut:
        return dict(self.values)

    def at(self, key: str) -> float | None:
        """One statistic by its stored name ("mean", "p50", "p99.9", "max"): a finite number or None."""
        return stored_json.number(self.values.get(key))

    @property
    def mean(self) -> float | None:
        return self.at("mean")

    @property
    def p50(self) -> float | None:
        return self.at("p50")

    @property
    def p90(self) -> float | None:
        return self.at("p90")

    @property
    def p95(self) -> float | None:
        return self.at("p95")

    @property
    def p99(self) -> float | None:
        return self.at("p99")

    @property
    def min(self) -> float | None:
        return self.at("min")

    @property
    def max(self) -> float | None:
        return self.at("max")

    @property
    def std(self) -> float | None:
        return self.at("std")

    @property
    def measured(self) -> bool:
        """Whether any request had the figure (an empty distribution's statistics are all None)."""
        return self.mean is not None


@dataclass(frozen=True)
class EngineMetrics:
    """What an engine's own metrics said over a load's window (services/bench/jobs/engine_metrics.py
    summarises them), kept as stored: each figure a number or None (the engine reported no such
    signal), read by name (`at("kv_cache_usage_mean")`) where a reader lists several."""

    values: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        return cls(dict(value)) if isinstance(value, dict) else cls()

    def to_json(self) -> JsonOut:
        return dict(self.values)

    def at(self, key: str) -> float | None:
        """One figure by its stored name: a finite number or None."""
        return stored_json.number(self.values.get(key))

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        return self.at("prefix_cache_hit_rate")

    @property
    def requests_waiting_max(self) -> float | None:
        return self.at("requests_waiting_max")

    @property
    def samples(self) -> int:
        """How many samples the figures are over (0: none recorded, or a run stored before)."""
        return int(self.at("samples") or 0)


def distribution(value: Any) -> Distribution | None:
    return Distribution.from_json(value)


def optional_number(value: Any) -> float | None:
    return stored_json.number(value)


def optional_count(value: Any) -> int | None:
    found = stored_json.number(value)
    return int(found) if found is not None else None


def _level(value: Any) -> float | int | None:
    """A sweep step's load level as stored (a concurrency stays an int)."""
    found = stored_json.number(value)
    if found is None:
        return None
    return int(found) if isinstance(value, int) else found


@dataclass(frozen=True)
class ClampedRests(Stored):
    """A split's rests clamped at 0 (services/bench/time_split.py): in how many requests the
    engine counted more time than the client saw, and by how much at most."""

    KEEP_ABSENT = True

    requests: int | None = stored(optional_count, default=None)
    max_s: float | None = stored(optional_number, default=None)
    extra: JsonOut = field(default_factory=dict)


def _clamped(value: Any) -> ClampedRests | None:
    return ClampedRests.from_json(value) if isinstance(value, dict) else None


def _optional_text(value: Any) -> str | None:
    return stored_json.text(value)


#: The parts of a split the block describes (seconds), by their stored names.
SPLIT_PARTS = ("queue_s", "prefill_s", "decode_s", "engine_s", "ttft_rest_s", "e2e_rest_s")


@dataclass(frozen=True)
class TimeSplitBlock(Stored):
    """Where an engine's time went over a run (services/bench/stats.split_block writes it, as the
    `time_split` key of a block): how many completed requests there were and how many the engine
    timed, whose clock timed them, and each part's statistics over those requests. A block read
    from stored JSON writes back the keys it held, in split_block's order: a run stored before
    engines' times were read (or an import) has none, one whose engine timed nothing only the
    counts, and a part the engine did not report is stored as null."""

    KEEP_ABSENT = True

    #: Completed requests; None: the block says nothing (a run stored before splits, an import).
    requests: int | None = stored(optional_count, default=None)
    #: Of those, the requests the engine timed (each part is over these).
    reported: int | None = stored(optional_count, default=None)
    #: Whose clock timed them ("" when the engine named none).
    source: str | None = stored(_optional_text, default=None)
    #: Every timed request had the engine's own queue time (or llama.cpp's slot wait, read).
    queue_reported: bool | None = stored(stored_json.optional_flag, default=None)
    #: "router": the parts are a router's worker's times, the router's own time in the rests.
    via: str | None = stored(_optional_text, default=None)
    queue_s: Distribution | None = stored(distribution, default=None)
    prefill_s: Distribution | None = stored(distribution, default=None)
    decode_s: Distribution | None = stored(distribution, default=None)
    #: Prefill and decode together (and the queue), for an engine that does not tell them apart.
    engine_s: Distribution | None = stored(distribution, default=None)
    ttft_rest_s: Distribution | None = stored(distribution, default=None)
    e2e_rest_s: Distribution | None = stored(distribution, default=None)
    #: The client's E2E over the timed requests (what the means add up to).
    e2e_s: Distribution | None = stored(distribution, default=None)
    clamped: ClampedRests | None = stored(_clamped, default=None)
    extra: JsonOut = field(default_factory=dict)

    @classmethod
    def empty(cls) -> Self:
        """The block of a run stored without one: reads as nothing and writes `{}`."""
        return cls.from_json({})

    @property
    def timed(self) -> int:
        """The requests the engine timed (0 when the block does not say)."""
        return self.reported or 0

    def part(self, key: str) -> Distribution | None:
        """A part's statistics by its stored name ("queue_s", "e2e_rest_s", "e2e_s"...), for
        tables that list the parts; None for a part the engine did not report, or a name that
        is no part."""
        found = getattr(self, key, None) if key in _SPLIT_KEYS else None
        return found if isinstance(found, Distribution) else None

    def has(self, key: str) -> bool:
        """Whether the part has statistics stored (an empty object counts as none)."""
        found = self.part(key)
        return found is not None and bool(found.values)


_SPLIT_KEYS = frozenset((*SPLIT_PARTS, "e2e_s"))


def _time_split(value: Any) -> TimeSplitBlock:
    return TimeSplitBlock.from_json(value)


#: The latency figures of a block, in the order tables show them.
LATENCIES = ("ttft_s", "tpot_s", "itl_s", "e2e_s")


@dataclass(frozen=True, eq=False)  # equal to another record of the same stored JSON (`__eq__`)
class EngineResults(Stored):
    """One engine's (one sweep step's) results. Fields written "always" are those summarize_engine
    always writes; the rest only when a run or an importer had them. A block read from stored
    JSON writes back the keys it held, no more (an import's block without a figure stays so)."""

    KEEP_ABSENT = True

    # Requests: completed + failed + cancelled_requests = sent; warm-up requests apart.
    completed: int = stored(stored_json.count, default=0)
    failed: int = stored(stored_json.count, default=0)
    cancelled_requests: int = stored(stored_json.count, default=0)
    #: None: the block does not say (an import that counted no requests sent or warm-up).
    sent: int | None = stored(optional_count, default=None)
    warmup: int | None = stored(optional_count, default=None)
    errors_by_class: dict[str, int] = stored(stored_json.counts, factory=dict)
    error_rate: float | None = stored(optional_number, default=None)
    duration_s: float | None = stored(optional_number, default=None)
    # Rates over duration_s.
    request_throughput_rps: float | None = stored(optional_number, default=None)
    input_throughput_tok_s: float | None = stored(optional_number, default=None)
    output_throughput_tok_s: float | None = stored(optional_number, default=None)
    total_token_throughput_tok_s: float | None = stored(optional_number, default=None)
    goodput_rps: float | None = stored(optional_number, default=None)
    goodput_output_tok_s: float | None = stored(optional_number, default=None)
    slo_attainment: float | None = stored(optional_number, default=None)
    # Latencies over the completed requests.
    ttft_s: Distribution | None = stored(distribution, default=None)
    tpot_s: Distribution | None = stored(distribution, default=None)
    itl_s: Distribution | None = stored(distribution, default=None)
    e2e_s: Distribution | None = stored(distribution, default=None)
    ttfat_s: Distribution | None = stored(distribution, default=None)
    reasoning_tok_s: Distribution | None = stored(distribution, default=None)
    answer_tok_s: Distribution | None = stored(distribution, default=None)
    #: The engine's own queue time; None when no request waited in it (or none was timed).
    queue_s: Distribution | None = stored(distribution, default=None)
    #: The client's own wait before sending (scheduled to sent): outside every latency here.
    client_wait_s: Distribution | None = stored(distribution, default=None)
    # Tokens.
    input_tokens: int | None = stored(optional_count, default=None)
    output_tokens: int | None = stored(optional_count, default=None)
    cached_tokens: int | None = stored(optional_count, default=None)
    #: The cache held the workload before the run (services/bench/stats.cache_warm_at_start).
    cache_warm_at_start: bool | None = stored(stored_json.optional_flag, default=None)
    reasoning_tokens: int | None = stored(optional_count, default=None)
    answer_tokens: int | None = stored(optional_count, default=None)
    reasoning_tokens_source: str | None = stored(stored_json.nonempty_text, default=None)
    ttft_includes_reasoning: bool | None = stored(stored_json.optional_flag, default=None)
    schema_valid_rate: float | None = stored(optional_number, default=None)
    honoured_output_len: bool | None = stored(stored_json.optional_flag, default=None)
    short_output_requests: int | None = stored(optional_count, default=None)
    concurrency_max: int | None = stored(optional_count, default=None)
    concurrency_mean: float | None = stored(optional_number, default=None)
    # What the engine's own metrics and clocks said (services/bench/jobs/engine_metrics.py,
    # services/bench/time_split.py).
    engine_metrics: EngineMetrics = stored(EngineMetrics.from_json, factory=EngineMetrics)
    time_split: TimeSplitBlock = stored(_time_split, factory=TimeSplitBlock.empty)
    # What the run knew beside the requests (services/bench/jobs/summarize.py).
    findings: list[FindingJson] | None = stored(findings_json, default=None, write="unless_none")
    unsupported_options: list[str] | None = stored(
        stored_json.optional_text_list, default=None, write="unless_none"
    )
    cancelled: bool | None = stored(stored_json.optional_flag, default=None, write="unless_none")
    max_streams: int | None = stored(optional_count, default=None, write="unless_none")
    connections_ahead: int | None = stored(optional_count, default=None, write="unless_none")
    model: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    started_at_unix: float | None = stored(optional_number, default=None, write="unless_none")
    generator: GeneratorBlock | None = stored(generator_block, default=None, write="unless_none")
    cost: CostJson | None = stored(cost_json, default=None, write="unless_none")
    energy: EnergyJson | None = stored(energy_json, default=None, write="unless_none")
    #: A cancelled run never reached this engine: "not run", never a row of zeros.
    not_run: bool = stored(stored_json.flag, default=False, write="unless_empty")
    #: A sweep's engine block: the step it reports.
    from_step: int | None = stored(stored_json.optional_int, default=None, write="unless_none")
    # A sweep row's place: its engine, step, load level and phase.
    engine: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    step: int | None = stored(stored_json.optional_int, default=None, write="unless_none")
    concurrency: float | int | None = stored(_level, default=None, write="unless_none")
    rate: float | int | None = stored(_level, default=None, write="unless_none")
    phase: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    #: Keys this record does not model (a later version's, an importer's): kept as stored.
    extra: ForeignJson = field(default_factory=dict)

    def latency(self, key: str) -> Distribution | None:
        """A distribution by its stored name ("ttft_s", "queue_s"...), for tables that list several."""
        found = getattr(self, key, None) if key in _DISTRIBUTIONS else None
        return found if isinstance(found, Distribution) else None

    def level(self, dimension: str) -> float | int | None:
        """A sweep row's load level on its dimension ("concurrency" or "rate")."""
        return {"concurrency": self.concurrency, "rate": self.rate}.get(dimension)

    @property
    def ran(self) -> bool:
        return not self.not_run

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EngineResults) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]  # its fields hold dicts: never a key

    def to_json(self) -> JsonOut:
        out = super().to_json()
        # Written in summarize_engine's order where it matters to a reader of the raw JSON:
        # the sweep row's place first.
        place: JsonOut = {k: out.pop(k) for k in ("engine", "step") if k in out}
        return {**place, **out} if place else out


_DISTRIBUTIONS = frozenset(
    (
        "ttft_s",
        "tpot_s",
        "itl_s",
        "e2e_s",
        "ttfat_s",
        "reasoning_tok_s",
        "answer_tok_s",
        "queue_s",
        "client_wait_s",
    )
)


def engine_results(value: Any) -> EngineResults:
    return EngineResults.from_json(value)


def results_by_engine(value: Any) -> dict[str, EngineResults]:
    """A summary's `engines` object read as engine name -> its results (a block already read
    stays as it is; anything but an object is dropped)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(name): EngineResults.from_json(block)
        for name, block in value.items()
        if isinstance(block, (Mapping, EngineResults))
    }


def results_rows(value: Any) -> list[EngineResults]:
    """A summary's `sweep` list read as rows of results (a row already read stays as it is)."""
    if not isinstance(value, list):
        return []
    return [EngineResults.from_json(row) for row in value if isinstance(row, (Mapping, EngineResults))]
