"""The JSON blocks a benchmark's summary stores and reads back, as TypedDicts: each key a typed
field for mypy, the stored JSON unchanged (a TypedDict is a plain dict at run time, so what an older
version stored reads as it was). Every key may be absent in a block an older run stored.

The blocks with figures read by name (an engine's results, its time split, its engine metrics)
are records in services/bench/results.py; these are the rest: a load's self-check and the run's
verdict (services/bench/selfcheck.py), the SLO search (services/bench/runner), findings, cost and
energy as stored, and an engine's block while services/bench/stats.summarize_engine builds it.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from services.core import stored_json
from services.core.json_types import JsonOut


class FindingJson(TypedDict, total=False):
    """A finding as stored in an engine's block (services/bench/findings.Finding writes and reads
    it; an older run's may lack a key)."""

    check: str
    severity: str
    engine: str
    step: int | None
    field: str | None
    requests: int
    of: int
    reported: int | None
    stream: int | None
    message: str


def findings_json(value: Any) -> list[FindingJson] | None:
    """A block's stored findings, each read as one (Finding.from_json checks them)."""
    if not isinstance(value, list):
        return None
    return [cast(FindingJson, item) for item in stored_json.dicts(value)]


class LagFigures(TypedDict, total=False):
    """A delay's percentiles in ms (the loop's lag, the sends' lateness); {} when none was taken."""

    p50: float | None
    p99: float | None
    max: float | None


class WorkerFigures(TypedDict, total=False):
    """One load-generator worker's share of a self-check (services/bench/selfcheck.report)."""

    worker: int
    host: str
    cpu_share: float
    cpu_share_peak: float
    connections_max: int
    peak_rss_mb: float
    loop_lag_p99_ms: float | None
    loop_lag_samples: int
    wall_s: float
    late_share: float


class HostFigures(TypedDict, total=False):
    """Where a Ray worker ran and its clock against the coordinator's (services/bench/ray_pool)."""

    worker: int
    host: str
    node: str
    clock_offset_s: float
    rtt_s: float
    requests: int


class WeighedLag(TypedDict, total=False):
    """A loop lag weighed against the figures it could distort (selfcheck.weigh)."""

    delay_ms: float
    figures_ms: dict[str, float]
    bound: float
    limit: float


class GeneratorBlock(TypedDict, total=False):
    """A load's self-check as stored, the `generator` key of an engine's block or sweep row
    (services/bench/selfcheck.report writes it, `weigh` and the pools add to it). A block of an
    older run may lack any key: every reader takes it as absent."""

    workers: int
    loop_lag_ms: LagFigures
    loop_lag_samples: int
    loop_lag_calm_samples: int
    loop_late_share: float
    measured_s: float
    send_lateness_ms: LagFigures
    cpu_share: list[float]
    per_worker: list[WorkerFigures]
    open_connections_max: int
    client_bound: bool
    checked: bool
    evidence: list[str]
    unchecked_reason: str
    weighed: WeighedLag
    engine_limit: str
    rest_evidence: str
    worker_failures: list[str]
    ray: str
    hosts: list[HostFigures]


class FlaggedLoad(TypedDict):
    """A load the generator could not keep, with its evidence (a run's `generator.flagged`)."""

    engine: str
    step: int | None
    evidence: list[str]


class UncheckedLoad(TypedDict):
    """A load the generator could not check, with the reason (a run's `generator.unchecked`)."""

    engine: str
    step: int | None
    reason: str


class RunGeneratorBlock(TypedDict, total=False):
    """The run's self-check in one place, the summary's top-level `generator`
    (services/bench/jobs/summarize.generator_verdict); {} for a run stored without one."""

    client_bound: bool
    checked: bool
    flagged: list[FlaggedLoad]
    unchecked: list[UncheckedLoad]
    checked_loads: int


def run_generator_block(value: Any) -> RunGeneratorBlock:
    """A summary's stored run-level self-check ({} for anything but a JSON object)."""
    return cast(RunGeneratorBlock, dict(value)) if isinstance(value, dict) else RunGeneratorBlock()


class SloSearchBlock(TypedDict, total=False):
    """One engine's SLO search (services/bench/runner): the highest load level that met the SLOs,
    the lowest that did not, and the best level's attainment and goodput (a summary's
    `slo_search`, by engine)."""

    dimension: str
    best: float | None
    first_failing: float | None
    attainment: float | None
    goodput_rps: float | None
    slo: str
    required_attainment: float
    reached_maximum: bool


def slo_searches(value: Any) -> dict[str, SloSearchBlock]:
    """A summary's stored `slo_search`: engine name -> its search."""
    return {name: cast(SloSearchBlock, block) for name, block in stored_json.dict_values(value).items()}


def generator_block(value: Any) -> GeneratorBlock | None:
    """A stored self-check: a JSON object read as our own block (a copy, so weighing it leaves
    the stored one as it was); None for anything else."""
    return cast(GeneratorBlock, dict(value)) if isinstance(value, dict) else None


class CostJson(TypedDict, total=False):
    """A step's cost as stored (services/core/cost.Cost writes it; `Cost.from_json` reads it)."""

    usd_per_hour: float | None
    usd_per_1m_output: float | None
    usd_per_1m_total: float | None
    usd_per_1m_output_goodput: float | None


class EnergyJson(TypedDict, total=False):
    """A step's energy as stored (services/telemetry/energy EnergyResult writes it and reads it
    back with `EnergyResult.from_json`): the joules and how, or why it was not measured."""

    measured: bool
    reason: str
    joules: float
    method: str | None
    source: str | None
    devices: list[str]
    scope: str | None
    duration_s: float | None
    engines: list[str]
    j_per_output_token: float | None
    output_tokens_per_j: float | None
    output_tokens: int | None
    warmup_output_tokens: int | None


def cost_json(value: Any) -> CostJson | None:
    """A stored (or just written) cost block, read as one."""
    return cast(CostJson, dict(value)) if isinstance(value, dict) else None


def energy_json(value: Any) -> EnergyJson | None:
    """A stored energy block, read as one (EnergyResult.from_json checks it)."""
    return cast(EnergyJson, dict(value)) if isinstance(value, dict) else None


#: A statistics block as `describe` writes it (services/core/measure.py).
Statistics = dict[str, float | None]


class ReasoningJson(TypedDict):
    """An engine's answer timing beside its TTFT, as `reasoning_block` writes it."""

    ttfat_s: Statistics
    reasoning_tok_s: Statistics
    answer_tok_s: Statistics
    reasoning_tokens: int | None
    answer_tokens: int | None
    reasoning_tokens_source: str | None
    ttft_includes_reasoning: bool


class EngineResultsJson(ReasoningJson, total=False):
    """One engine's block as `summarize_engine` builds it and the run's summary adds to it
    (services/bench/jobs/summarize.py) before it is read as an `EngineResults` and stored. The
    record is the reader; this is the block while it is built."""

    completed: int
    failed: int
    cancelled_requests: int
    sent: int
    warmup: int
    errors_by_class: dict[str, int]
    error_rate: float
    duration_s: float
    request_throughput_rps: float
    input_throughput_tok_s: float
    output_throughput_tok_s: float
    total_token_throughput_tok_s: float
    goodput_rps: float | None
    goodput_output_tok_s: float | None
    slo_attainment: float | None
    ttft_s: Statistics
    tpot_s: Statistics
    itl_s: Statistics
    e2e_s: Statistics
    queue_s: Statistics | None
    client_wait_s: Statistics
    input_tokens: int
    output_tokens: int
    cached_tokens: int | None
    cache_warm_at_start: bool | None
    schema_valid_rate: float | None
    honoured_output_len: bool | None
    short_output_requests: int | None
    concurrency_max: int
    concurrency_mean: float | None
    engine_metrics: JsonOut
    time_split: JsonOut
    # Added by the run's summary (services/bench/jobs/summarize.py).
    findings: list[FindingJson]
    unsupported_options: list[str]
    cancelled: bool
    max_streams: int
    connections_ahead: int
    model: str | None
    started_at_unix: float
    generator: GeneratorBlock
    cost: JsonOut
    energy: JsonOut
    not_run: bool
