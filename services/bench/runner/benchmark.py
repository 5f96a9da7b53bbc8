"""A whole benchmark (`Benchmark`): engines one after another or together, each sweep step
and the SLO search, each engine's load on the transport its placement asks for (the registry:
`transports.py`), one process's loads sharing one client."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from services.bench.arrivals import LoadSpec
from services.bench.blocks import GeneratorBlock, SloSearchBlock
from services.bench.load.outcome import EngineOutcome, RecordSink, never_stop
from services.bench.load.pacing import MAX_IN_FLIGHT, quiet_gc
from services.bench.load.transport import LoadJob, LoadRun, Placement
from services.bench.pool.plan import auto_workers
from services.bench.results import EngineMetrics, EngineResults
from services.bench.runner.preparation import (
    PREPARE_TIMEOUT_S,
    calibrate_prompt_text,
    discover_model,
)
from services.bench.runner.transports import transport_for
from services.bench.spec import WORKERS_AUTO, BenchSpec, EngineTarget, RequestSettings, SweepSpec
from services.bench.stats import NO_ENGINE_METRICS, SloSpec, summarize_engine
from services.bench.time_split import engine_queue, engine_said_waited
from services.bench.window_counts import Edge, WindowCounts, WindowMeter
from services.bench.workloads import Calibration, PromptText
from services.client import StreamClient, make_http_client
from services.core import units
from services.telemetry.energy.records import EnergyResult


@dataclass(frozen=True)
class Measured:
    """What the meters read over one step: its energy and each engine's own counters, by engine."""

    energy: dict[str, EnergyResult]
    counts: dict[str, WindowCounts]


@dataclass
class StepResult:
    engine: str
    dimension: str | None
    level: float | None
    step: int | None
    phase: str
    outcome: EngineOutcome
    #: The step's figures as the runner saw them (the SLO search and a sweep's stop read them);
    #: the run's summary is built again from the stored records (services/bench/jobs/summarize).
    summary: EngineResults
    #: The energy over the step's window; None: the run measured none (no meter).
    energy: EnergyResult | None = None
    #: The engine's own counters over the step's window (services/bench/window_counts.py).
    counts: WindowCounts | None = None


@dataclass
class BenchOutcome:
    steps: list[StepResult] = field(default_factory=list)
    calibration: Calibration | None = None
    cancelled: bool = False
    models: dict[str, str | None] = field(default_factory=dict)
    slo_search: dict[str, SloSearchBlock] = field(default_factory=dict)
    stopped_early: dict[str, str] = field(default_factory=dict)


class EngineMetricsReader(Protocol):
    def __call__(self, engine: str, wall_start: float, wall_end: float) -> EngineMetrics: ...


class EnergyMeter(Protocol):
    """Counters read at a step's start and end (services.telemetry.energy.meter.EnergyMeter)."""

    def begin(self, engines: list[str]) -> Any: ...

    def end(self, window: Any) -> dict[str, EnergyResult]: ...


def _no_engine_metrics(engine: str, wall_start: float, wall_end: float) -> EngineMetrics:
    return EngineMetrics(dict(NO_ENGINE_METRICS))


class Benchmark:
    """Runs a validated BenchSpec: engines one after another (or together), each sweep step."""

    def __init__(
        self,
        spec: BenchSpec,
        *,
        sink: RecordSink,
        should_stop: Callable[[], bool] = never_stop,
        progress: Callable[[float, str], None] | None = None,
        salt: str = "",
        engine_metrics: EngineMetricsReader = _no_engine_metrics,
        energy: EnergyMeter | None = None,
        window_meter: WindowMeter | None = None,
    ) -> None:
        self.spec = spec
        self.sink = sink
        self.should_stop = should_stop
        self.progress = progress or (lambda fraction, message: None)
        self.salt = salt
        self.engine_metrics = engine_metrics
        self.energy = energy
        self.window_meter = window_meter
        self.result = BenchOutcome()
        self.text = PromptText()
        self._phases_total = 1
        self._phases_done = 0
        self._live: list[LoadRun] = []
        self._last_generator: dict[str, GeneratorBlock] = {}
        self._auto_count: dict[str, int] = {}
        self.cancelled = False

    def _stop(self) -> bool:
        if not self.cancelled and self.should_stop():
            self.cancelled = True
        return self.cancelled

    # progress: finished phases plus the share of the phases now running
    def phase_fraction(self) -> float:
        running = 0.0
        for load in self._live:
            spec = load.load
            parts = []
            if spec.requests:
                parts.append(load.done_count / spec.requests)
            if spec.duration_s and load.measure_start:
                parts.append((time.perf_counter() - load.measure_start) / spec.duration_s)
            running += min(1.0, max(parts, default=0.0))
        return min(1.0, (self._phases_done + running) / max(1, self._phases_total))

    async def run(self) -> BenchOutcome:
        spec = self.spec
        engines = list(spec.engines)
        # The run's request time limit bounds its preparation too: `--timeout 5` against an
        # engine that stalls ended after 24 s, 10 of them in the tokenizer check.
        prepare_s = min(PREPARE_TIMEOUT_S, spec.timeout_s)
        for position, engine in enumerate(engines):
            if not engine.model:
                model = await discover_model(engine, timeout_s=prepare_s)
                engines[position] = replace(engine, model=model)
        self.result.models = {e.name: e.model for e in engines}
        if self.window_meter is not None:
            self.window_meter.serving(engines)
        if spec.calibrate_prompts and spec.workload.kind not in ("file",):
            self.text, self.result.calibration = await calibrate_prompt_text(
                tuple(engines), timeout_s=prepare_s
            )
        else:
            self.result.calibration = Calibration("none")
        with quiet_gc():
            await self._run_levels(engines)
        self.result.cancelled = self.cancelled
        return self.result

    async def _run_levels(self, engines: list[EngineTarget]) -> None:
        spec = self.spec
        async with make_http_client(MAX_IN_FLIGHT, read_timeout_s=spec.timeout_s) as client:
            if spec.sweep.kind == "slo_search":
                await self._slo_search(client, engines)
            elif spec.sweep.active:
                await self._sweep(client, engines)
            else:
                self._phases_total = len(engines)
                await self._level(client, engines, spec.load, None, None, "run")

    async def _level(
        self,
        client: StreamClient,
        engines: list[EngineTarget],
        load: LoadSpec,
        step: int | None,
        level: float | None,
        phase: str,
    ) -> list[StepResult]:
        """Every engine at one load level (one after another, or together)."""
        spec = self.spec
        salt = f"{self.salt}:{step}" if step is not None else self.salt

        def make(engine: EngineTarget) -> LoadRun:
            # The same load, whichever transport carries it: one process, worker processes, Ray.
            placement = Placement(self._workers_for(engine.name, load), spec.ray_address)
            job = LoadJob(
                engine,
                spec.workload,
                load,
                sink=self.sink,
                should_stop=self._stop,
                settings=RequestSettings(
                    salt=salt,
                    text=self.text,
                    timeout_s=spec.timeout_s,
                    temperature=spec.temperature,
                    step=step,
                    connect_ahead=spec.connect_ahead,
                ),
                placement=placement,
            )
            return transport_for(placement).start(job, client)

        results: list[StepResult] = []
        if spec.parallel_engines:
            loads = [make(e) for e in engines]
            self._live = loads
            started = await self._meters_begin([e.name for e in engines])
            outcomes = await asyncio.gather(*(load_.run() for load_ in loads))
            measured = await self._meters_end(started)
            self._live = []
            self._phases_done += len(loads)
            for outcome in outcomes:
                results.append(self._step_result(outcome, load, step, level, phase, measured))
        else:
            for engine in engines:
                if self._stop():
                    break
                engine_load = make(engine)
                self._live = [engine_load]
                self.progress(self.phase_fraction(), f"{engine.name}: {load.label()}")
                started = await self._meters_begin([engine.name])
                outcome = await engine_load.run()
                measured = await self._meters_end(started)
                self._live = []
                self._phases_done += 1
                results.append(self._step_result(outcome, load, step, level, phase, measured))
        self.result.steps.extend(results)
        self.progress(self.phase_fraction(), "")
        return results

    async def _meters_begin(self, engines: list[str]) -> tuple[Any, dict[str, Edge]]:
        """The energy counters, then each engine's own, just before the step's first request."""
        window = await self._energy_begin(engines)
        edges = {}
        if self.window_meter is not None:
            edges = await asyncio.to_thread(self.window_meter.begin, engines)
        return window, edges

    async def _meters_end(self, started: tuple[Any, dict[str, Edge]]) -> Measured:
        """Each engine's own counters, then the energy, just after the step's last request."""
        window, edges = started
        counts = {}
        if self.window_meter is not None and edges:
            counts = await asyncio.to_thread(self.window_meter.end, edges)
        return Measured(await self._energy_end(window), counts)

    async def _energy_begin(self, engines: list[str]) -> Any:
        """The counters at a step's start, read off the event loop (NVML, files, HTTP block)."""
        if self.energy is None:
            return None
        return await asyncio.to_thread(self.energy.begin, engines)

    async def _energy_end(self, window: Any) -> dict[str, EnergyResult]:
        if self.energy is None or window is None:
            return {}
        return await asyncio.to_thread(self.energy.end, window)

    def _workers_for(self, engine: str, load: LoadSpec) -> int:
        """The spec's worker count, or for auto: the self-check's choice, grown after a step
        of this engine that was client-bound."""
        if self.spec.workers != WORKERS_AUTO:
            return self.spec.workers
        previous = self._last_generator.get(engine)
        chosen = auto_workers(load, previous, self._auto_count.get(engine))
        self._auto_count[engine] = chosen
        return chosen

    def _step_result(
        self,
        outcome: EngineOutcome,
        load: LoadSpec,
        step: int | None,
        level: float | None,
        phase: str,
        measured: Measured | None = None,
    ) -> StepResult:
        self._last_generator[outcome.engine] = outcome.generator
        metrics = self.engine_metrics(outcome.engine, outcome.wall_start, outcome.wall_end)
        kind = next((e.kind for e in self.spec.engines if e.name == outcome.engine), None)
        block = summarize_engine(
            engine_queue(outcome.records, kind, engine_said_waited(metrics)),
            slo=self.spec.slo,
            percentiles=self.spec.percentiles,
            fixed_output=self.spec.workload.uses_fixed_output,
            engine_metrics=metrics,
        )
        summary = replace(
            EngineResults.from_json(block),
            unsupported_options=outcome.unsupported,
            cancelled=outcome.cancelled,
            max_streams=outcome.max_streams,
            connections_ahead=outcome.connections_ahead,
            model=outcome.model,
            started_at_unix=outcome.wall_start,
            generator=outcome.generator,
        )
        dimension = self.spec.sweep.dimension if self.spec.sweep.active else None
        energy = measured.energy.get(outcome.engine) if measured else None
        counts = measured.counts.get(outcome.engine) if measured else None
        return StepResult(
            outcome.engine, dimension, level, step, phase, outcome, summary, energy, counts
        )

    def _load_at(self, dimension: str, level: float) -> LoadSpec:
        load = self.spec.load
        if dimension == "concurrency":
            return replace(load, mode="concurrency", concurrency=max(1, round(level)), rate=None)
        capped = load.concurrency if load.mode == "rate" else None
        return replace(load, mode="rate", rate=level, concurrency=capped)

    async def _sweep(self, client: StreamClient, engines: list[EngineTarget]) -> None:
        sweep: SweepSpec = self.spec.sweep
        dimension = sweep.dimension
        values = sorted(sweep.values)
        self._phases_total = len(values) * len(engines)
        active = list(engines)
        history: dict[str, list[EngineResults]] = {e.name: [] for e in engines}
        for step, level in enumerate(values):
            if not active or self._stop():
                break
            results = await self._level(
                client, active, self._load_at(dimension, level), step, level, "sweep"
            )
            for result in results:
                reason = _saturation(history[result.engine], result.summary, sweep)
                history[result.engine].append(result.summary)
                if reason:
                    self.result.stopped_early[result.engine] = f"{reason} at {dimension} {level:g}"
                    active = [e for e in active if e.name != result.engine]
                    self._phases_total -= len(values) - step - 1

    async def _slo_search(self, client: StreamClient, engines: list[EngineTarget]) -> None:
        sweep = self.spec.sweep
        dimension = sweep.dimension
        slo = self.spec.slo
        # Estimate: doubling steps plus the bisections, per engine.
        doubling = 1
        while sweep.start * 2**doubling <= sweep.max_value:
            doubling += 1
        self._phases_total = len(engines) * (doubling + sweep.search_steps)
        step_counter = itertools.count()
        for engine in engines:
            best: float | None = None
            worst: float | None = None
            best_summary: EngineResults | None = None
            level = sweep.start
            while level <= sweep.max_value and not self._stop():
                summary = await self._probe(client, engine, dimension, level, next(step_counter))
                if _meets(summary, slo):
                    best, best_summary = level, summary
                    level *= 2
                else:
                    worst = level
                    break
            low, high = best, worst
            for _ in range(sweep.search_steps):
                if self._stop() or high is None:
                    break
                low_value = low if low is not None else 0.0
                middle = (low_value + high) / 2
                if dimension == "concurrency":
                    middle = round(middle)
                    if middle <= low_value or middle >= high:
                        break
                summary = await self._probe(client, engine, dimension, middle, next(step_counter))
                if _meets(summary, slo):
                    low, best, best_summary = middle, middle, summary
                else:
                    high = middle
            self.result.slo_search[engine.name] = SloSearchBlock(
                dimension=dimension,
                best=best,
                first_failing=high,
                attainment=best_summary.slo_attainment if best_summary else None,
                goodput_rps=best_summary.goodput_rps if best_summary else None,
                slo=slo.label(),
                required_attainment=slo.attainment,
                reached_maximum=best is not None and high is None,
            )

    async def _probe(
        self, client: StreamClient, engine: EngineTarget, dimension: str, level: float, step: int
    ) -> EngineResults:
        results = await self._level(
            client, [engine], self._load_at(dimension, level), step, level, "search"
        )
        return results[0].summary if results else EngineResults()


def _meets(summary: EngineResults, slo: SloSpec) -> bool:
    attainment = summary.slo_attainment
    return attainment is not None and attainment >= slo.attainment


def _p90_ttft(summary: EngineResults) -> float | None:
    return summary.ttft_s.p90 if summary.ttft_s is not None else None


def _saturation(history: list[EngineResults], summary: EngineResults, sweep: SweepSpec) -> str | None:
    """Why an engine's sweep should stop after this step, or None to go on."""
    if summary.cancelled:
        return "cancelled"
    error_rate = summary.error_rate or 0.0
    if error_rate > sweep.max_error_rate:
        return f"error rate {error_rate:.0%} over {sweep.max_error_rate:.0%}"
    first = history[0] if history else None
    if first is not None:
        base = _p90_ttft(first)
        now = _p90_ttft(summary)
        if base and now and now > sweep.latency_factor * base:
            return f"p90 TTFT {units.duration(now)} over {sweep.latency_factor:g}x the first step's"
    if sweep.stop_on_plateau and len(history) >= 2:
        best_before = max(h.request_throughput_rps or 0.0 for h in history[:-1])
        previous = history[-1].request_throughput_rps or 0.0
        current = summary.request_throughput_rps or 0.0
        if previous < 1.05 * best_before and current < 1.05 * max(best_before, previous):
            return "throughput stopped rising (saturated)"
    return None
