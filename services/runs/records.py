"""The run history's and the comparison's records, the metrics they name, and how a value reads."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal

import numpy as np

from services.bench.comparability import Comparability, ComparabilityReport
from services.bench.results import EngineResults, TimeSplitBlock
from services.bench.summary import BenchSummary
from services.bench.time_split import PART_TITLES
from services.core import cost, units
from services.core.ids import parse_id
from services.core.json_types import JsonOut
from services.runstate.lifecycle import RunKind
from services.runstate.stored import StoredEngine
from services.telemetry.energy.records import ENERGY_METRICS, format_energy

RUN_KINDS = tuple(kind.value for kind in RunKind)
LATENCY_METRICS: dict[str, str] = {
    "ttft_s": "TTFT",
    "tpot_s": "TPOT",
    "itl_s": "ITL",
    "e2e_s": "E2E latency",
}
#: A reasoning model's answer timing (services/core/measure.py): compared only when some engine's
#: TTFT includes thinking (otherwise it is the TTFT row again).
ANSWER_METRICS: dict[str, str] = {"ttfat_s": "Time to first answer token"}
#: A reasoning model's rates per request (services/core/measure.py), compared beside TTFAT: label.
#: Higher is better.
REASONING_RATES: dict[str, str] = {
    "reasoning_tok_s": "Reasoning tokens/s",
    "answer_tok_s": "Answer tokens/s",
}
#: A reasoning model's token counts over the run: label. Shown, not judged (more thinking is
#: neither better nor worse by itself).
REASONING_COUNTS: dict[str, str] = {
    "reasoning_tokens": "Reasoning tokens",
    "answer_tokens": "Answer tokens",
}
#: Where the time went (services/bench/time_split.py): the engine's own queue, prefill and
#: decode and the rest of TTFT and E2E outside its clock, from each engine's `time_split` block.
SPLIT_METRICS: dict[str, str] = {key: title[0].upper() + title[1:] for key, title in PART_TITLES.items()}
#: Their statistics in a comparison: percentiles read one part at a time (only means add up).
SPLIT_STATS = ("p50", "p99")
#: Throughput-like metrics of an engine summary: label, unit. Higher is better.
THROUGHPUT_METRICS: dict[str, tuple[str, str]] = {
    "request_throughput_rps": ("Request throughput", "req/s"),
    "output_throughput_tok_s": ("Output throughput", "tok/s"),
    "total_token_throughput_tok_s": ("Total token throughput", "tok/s"),
    "goodput_rps": ("Goodput", "req/s"),
}
#: What a million tokens cost at the price the run stored (services/core/cost.py): label. Lower is better.
COST_METRICS: dict[str, str] = {
    "usd_per_1m_output": "Cost per 1M output tokens",
    "usd_per_1m_total": "Cost per 1M total tokens",
    "usd_per_1m_output_goodput": "Cost per 1M output tokens at goodput",
}
#: Answer quality of a parity run's engine summary (services/parity): label. Shares, higher is better.
QUALITY_METRICS: dict[str, str] = {
    "task_score": "Task score",
    "exact_match_rate": "Exact match vs the reference",
    "token_agreement_mean": "Token agreement vs the reference",
}
STATS = ("mean", "p50", "p90", "p95", "p99", "min", "max")
TABLE_STATS = ("mean", "p50", "p90", "p95", "p99")
STAT_LABELS = {
    "mean": "mean",
    "p50": "p50",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "min": "min",
    "max": "max",
}
MAX_PAGE_SIZE = 500
#: The orders the history list offers: newest first, or by a result (the best engine of each
#: run; runs without that result come last).
RUN_SORTS: dict[str, str] = {
    "newest": "Newest first",
    "output_tok_s": "Best output tok/s",
    "ttft_p50": "Best TTFT p50",
}
RunSort = Literal["newest", "output_tok_s", "ttft_p50"]
MAX_COMPARED_RUNS = 12
MAX_REPEATS = 30
#: Below this relative difference two values are called equal, not better or worse.
EQUAL_TOLERANCE = 0.005
NOISE_P_VALUE = 0.05
BOOTSTRAP_RESAMPLES = 300
BOOTSTRAP_MAX_SAMPLES = 4000
MIN_BOOTSTRAP_SAMPLES = 20
#: Per-request values loaded per series; beyond this, every k-th request (see load_samples).
MAX_SAMPLES_PER_SERIES = 20_000
SETTING_VALUE_MAX_CHARS = 300

# ---------------------------------------------------------------- records


@dataclass(frozen=True)
class RunFilter:
    """What the history list shows. Empty fields do not filter."""

    kinds: tuple[str, ...] = ()
    engine: str | None = None
    model: str | None = None
    workload: str | None = None
    tag: str | None = None
    since: date | None = None
    until: date | None = None
    text: str | None = None
    archived: Literal["hide", "include", "only"] = "hide"


@dataclass(frozen=True)
class RunListItem:
    id: int
    kind: str
    name: str
    status: str
    created_at: datetime
    engine_names: tuple[str, ...]
    model: str | None
    workload: str | None
    tags: tuple[str, ...]
    notes: str
    archived: bool
    headline: str
    #: The highest output rate of the run's engines, tokens/s; None when none reported one.
    best_output_tok_s: float | None = None
    #: The lowest median TTFT of the run's engines, seconds; None when none reported one.
    best_ttft_p50_s: float | None = None

    @property
    def label(self) -> str:
        return f"#{self.id} {self.name or self.kind}"


@dataclass(frozen=True)
class RunPage:
    items: list[RunListItem]
    total: int
    page: int
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.page_size))


@dataclass(frozen=True)
class FilterOptions:
    kinds: list[str]
    engines: list[str]
    models: list[str]
    workloads: list[str]
    tags: list[str]


@dataclass(frozen=True)
class RunDetail:
    id: int
    kind: str
    name: str
    status: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    model: str | None
    workload: str | None
    engine_names: tuple[str, ...]
    notes: str
    tags: tuple[str, ...]
    archived: bool
    error: str | None
    #: The config as stored, for the raw view, the report and the exports: read through its
    #: kind's reader (services/runstate/stored.bench_config, blind.sent_blind...), never by key.
    config: JsonOut
    #: The summary as stored, for the raw view and the exports: read it through `results` (or
    #: its kind's summary record), never by key.
    summary: JsonOut
    engines: list[StoredEngine]
    request_count: int
    exchange_count: int
    sample_count: int
    repeat_ids: tuple[int, ...]
    #: Who started it (Run.requested_by): whether a viewer may change it (runs.may_change).
    requested_by: str | None = None
    #: A blind exchange before its reveal (services/runstate/blind.py): engines, model, summary
    #: and the config's engines are left out of this record.
    hidden: bool = False

    @property
    def label(self) -> str:
        return f"#{self.id} {self.name or self.kind}"

    @property
    def has_measurements(self) -> bool:
        """Whether the run holds engine results to compare: stored engine summaries, request
        rows or playground exchanges. The one test the page, the CLI and the reports share; a
        summary's own part of it is BenchSummary.has_results."""
        return self.results.has_results or self.request_count > 0 or self.exchange_count > 0

    @property
    def results(self) -> BenchSummary:
        """The summary, typed (`summary` is the stored JSON, as the raw view shows it)."""
        return BenchSummary.from_json(self.summary)


@dataclass(frozen=True)
class DeleteResult:
    run_id: int
    requests: int
    exchanges: int
    samples: int


@dataclass
class Series:
    """One engine of one run, as the comparison sees it."""

    run_id: int
    engine: str
    label: str
    run_name: str
    kind: str
    created_at: datetime
    model: str | None
    workload: str | None
    #: metric -> statistic -> value (seconds for latencies)
    stats: dict[str, dict[str, float]]
    #: throughput metric -> value
    rates: dict[str, float]
    completed: int | None
    failed: int | None
    #: metric -> per-request values of successful, non-warm-up requests (ITL: every gap)
    samples: dict[str, np.ndarray]
    #: A sweep's steps of this engine ([] for a single-load run).
    sweep: list[EngineResults]
    engine_info: StoredEngine
    #: 1 when `samples` holds every request, k when it holds every k-th (very large runs)
    sampled_every: int = 1
    #: Its TTFT is its first thinking token (the run's summary says so; services/core/measure.py).
    ttft_includes_reasoning: bool = False
    repeat_run_ids: tuple[int, ...] = ()
    #: "metric.stat" -> one value per repeated run (this run included)
    repeat_values: dict[str, list[float]] = field(default_factory=dict)
    #: "metric.stat" -> the run each of `repeat_values` came from, in the same order
    repeat_value_runs: dict[str, list[int]] = field(default_factory=dict)
    #: Per successful measured request: e2e seconds, output tokens, input tokens (N x 3); the
    #: gate's within-run interval of a rate. None when the run stored no request rows.
    request_rates: np.ndarray | None = None
    #: A closed loop's concurrency (its slots): the within-run interval of a rate replays the
    #: resampled requests through that many slots, so the run's end (slots idle while the last
    #: requests finish) moves as it does from run to run. None for an open loop or a trace.
    closed_loop_slots: int | None = None
    #: How its figures were produced (services.bench.comparability).
    fingerprint: Comparability = field(default_factory=Comparability)
    #: Its summary's `time_split` block as stored ({} for a run stored without one, or an import).
    time_split: TimeSplitBlock = field(default_factory=TimeSplitBlock.empty)
    #: Its engine's kind in words ("vLLM"), for "not reported by vLLM"; its name when unknown.
    engine_label: str = ""
    #: The engine's stored results (None: a run without a block for it, a Playground run's).
    results: EngineResults | None = None
    #: The generator could not keep this engine's load (any step of it).
    client_bound: bool = False
    #: The run's engines ran together on one machine.
    ran_together: bool = False

    @property
    def key(self) -> str:
        return f"{self.run_id}:{self.engine}"

    @property
    def multi_step(self) -> bool:
        """A sweep: its requests span several load steps, its headline numbers one step."""
        return len(self.sweep) > 1


@dataclass(frozen=True)
class MetricRow:
    metric: str
    stat: str | None
    label: str
    unit: str
    higher_is_better: bool
    values: tuple[float | None, ...]
    #: value - baseline, per series (None for the baseline or a missing value)
    deltas: tuple[float | None, ...]
    #: per cent change against the baseline
    changes: tuple[float | None, ...]
    #: "better", "worse", "same" or None, per series
    marks: tuple[str | None, ...]
    #: Why a series has no value, per series, when words say it better than "—" ("not
    #: reported by SGLang"); () when no series needs one.
    notes: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class NoiseCheck:
    status: Literal["beyond", "within", "unknown"]
    method: Literal["repeats", "bootstrap", "none"]
    detail: str


@dataclass(frozen=True)
class Verdict:
    metric: str
    label: str
    text: str
    winner: str | None
    runner_up: str | None
    #: how many times better the winner is (latency: slower/faster; throughput: higher/lower)
    factor: float | None
    noise: NoiseCheck


@dataclass(frozen=True)
class SettingRow:
    key: str
    values: tuple[str | None, ...]
    differs: bool


@dataclass
class Comparison:
    series: list[Series]
    baseline: int
    rows: list[MetricRow]
    verdicts: list[Verdict]
    settings: list[SettingRow]
    run_ids: tuple[int, ...]
    #: Each series' fingerprint against the baseline's; when not comparable and not
    #: overridden, `verdicts` is empty: no winner is named.
    comparability: ComparabilityReport = field(default_factory=ComparabilityReport)
    #: Series that look like repeats of the baseline and are not: what differs (services/runs/repeats.py).
    repeat_notes: list[str] = field(default_factory=list)

    @property
    def baseline_series(self) -> Series:
        return self.series[self.baseline]


def parse_run_ids(text: str | Iterable[str] | None) -> list[int]:
    """`"12,13 14"` (or repeated query values) -> [12, 13, 14], in order, without duplicates."""
    if text is None:
        return []
    parts: list[str] = []
    for chunk in [text] if isinstance(text, str) else list(text):
        parts.extend(str(chunk).replace(",", " ").split())
    found: list[int] = []
    for part in parts:
        value = parse_id(part)
        if value not in found:
            found.append(value)
    return found


def format_value(metric: str, value: float | None, unit: units.TimeUnit | None = None) -> str:
    """A value as a person reads it (services.core.units): latencies in ms under a second, else
    in s (`unit`: the one unit of the latencies read beside it), rates with their unit."""
    if metric in COST_METRICS and value is None and metric != "usd_per_1m_output_goodput":
        # No price is "not priced", never $0 (at goodput, no figure may also mean no SLOs).
        return cost.NOT_PRICED
    value = units.number(value)
    if value is None:
        return units.MISSING
    if metric in COST_METRICS:
        return units.usd(value)
    if metric in LATENCY_METRICS or metric in ANSWER_METRICS or metric in SPLIT_METRICS:
        return units.duration(value, unit)
    if metric in REASONING_RATES:
        return units.rate(value, "tok/s")
    if metric in THROUGHPUT_METRICS:
        return units.rate(value, THROUGHPUT_METRICS[metric][1])
    if metric in ENERGY_METRICS:
        return format_energy(metric, value)
    if metric in ("completed", "failed") or metric in REASONING_COUNTS:
        return units.count(value)
    if metric == "error_rate" or metric in QUALITY_METRICS:
        return f"{value * 100:.1f}%"
    return f"{value:,.3g}"


def split_engine_names(engine_names: str | None) -> tuple[str, ...]:
    return tuple(name for name in (engine_names or "").split(",") if name)
