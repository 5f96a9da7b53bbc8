"""A benchmark run's summary (Run.summary) as one typed record.

services/bench/jobs/summarize.py builds it from the stored requests and writes `to_json()`; every
reader goes through `BenchSummary.from_json`, which takes what any version stored (old runs,
imports, a run still writing its live counts) and never raises on a missing or odd key. The
stored JSON keeps its shape: `from_json(s).to_json() == s` for every summary written so far,
keys unknown here included.

Each engine's block (latency statistics, throughputs, counts, the generator's self-check) is an
`EngineResults` record (services/bench/results.py), as is each sweep row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict, cast

from services.bench.blocks import (
    GeneratorBlock,
    RunGeneratorBlock,
    SloSearchBlock,
    run_generator_block,
    slo_searches,
)
from services.bench.findings import Finding, stored_findings
from services.bench.results import EngineResults, results_by_engine, results_rows
from services.bench.selfcheck import (
    CLIENT_BOUND,
    KEPT_UP,
    UNCHECKED,
    CheckState,
    RunCheck,
    load_check,
    run_flagged,
    state,
    weighed,
)
from services.bench.workloads.vocabulary import CalibrationJson
from services.core import stored_json
from services.core.json_types import ForeignJson, JsonOut
from services.core.stored_json import Stored, stored
from services.telemetry.origins import start_times

EngineBlock = EngineResults


class LiveCounts(TypedDict, total=False):
    """A running benchmark's counts so far (services/bench/jobs/writer.py writes them on each
    beat): requests by outcome per engine, what it is doing, when it said so."""

    engines: dict[str, dict[str, int]]
    message: str
    updated: float


def live_counts(value: Any) -> LiveCounts | None:
    return cast(LiveCounts, dict(value)) if isinstance(value, dict) else None


def calibration_json(value: Any) -> CalibrationJson:
    return cast(CalibrationJson, dict(value)) if isinstance(value, dict) else CalibrationJson()


def served_models(value: Any) -> dict[str, str | None] | None:
    """A summary's `models` as stored (kept whole: `served_model` checks each name is text)."""
    return cast(dict[str, str | None], dict(value)) if isinstance(value, dict) else None


@dataclass(frozen=True)
class BenchSummary(Stored):
    """Optional parts are stored only when present, as build_summary always wrote them."""

    #: Engine name -> its block; a sweep's shows the step reported (`from_step`). Written
    #: also when empty, except beside a running benchmark's `live` counts.
    engines: dict[str, EngineResults] = stored(results_by_engine, factory=dict)
    #: A sweep's rows, one per (engine, step), each with its load level.
    sweep: list[EngineResults] = stored(results_rows, factory=list, write="unless_empty")
    slo_search: dict[str, SloSearchBlock] = stored(slo_searches, factory=dict, write="unless_empty")
    stopped_early: dict[str, str] = stored(stored_json.texts, factory=dict, write="unless_empty")
    prompt_calibration: CalibrationJson = stored(
        calibration_json, factory=CalibrationJson, write="unless_empty"
    )
    #: None: the runner did not say (a partial summary rebuilt after an interruption).
    #: Engine name -> the model it said it served (None where it did not say).
    models: dict[str, str | None] | None = stored(served_models, default=None, write="unless_none")
    load: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    workload: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    percentiles: list[float] | None = stored(
        stored_json.optional_list, default=None, write="unless_none"
    )
    ttft_includes_connect: bool | None = stored(
        stored_json.optional_flag, default=None, write="unless_none"
    )
    #: Some engine's TTFT is its first thinking token (services/core/measure.py); None: not said
    #: (a run stored before reasoning was told apart).
    ttft_includes_reasoning: bool | None = stored(
        stored_json.optional_flag, default=None, write="unless_none"
    )
    slo: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    data_attribution: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    engines_run: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    generator: RunGeneratorBlock = stored(
        run_generator_block, factory=RunGeneratorBlock, write="unless_empty"
    )
    #: A running benchmark's counts so far (replaced by the summary when it ends).
    live: LiveCounts | None = stored(live_counts, default=None, write="unless_none")
    #: Keys this record does not model (a later version's, an importer's): kept as stored.
    extra: ForeignJson = stored(stored_json.mapping, factory=dict)

    def to_json(self) -> JsonOut:
        out = super().to_json()
        if not self.engines and self.live is not None:
            del out["engines"]
        return out

    @property
    def has_results(self) -> bool:
        """Whether the summary holds engine results (its live counts are not results).

        The one rule for "does this run have results" as far as a summary tells it:
        services/runs' RunDetail.has_measurements adds the run's stored rows to it.
        """
        return bool(self.engines)

    @property
    def client_bound(self) -> bool:
        """Whether the generator limited the run's figures (any engine or step): could it keep
        the load it was asked for? False is not "kept up": see `self_check`."""
        return self.self_check == CLIENT_BOUND

    @property
    def self_check(self) -> CheckState | None:
        """The generator's verdict on the whole run: client-bound when any engine or step was,
        could not check when any other could not be checked, kept up when every one kept up;
        None for a run without a self-check (an import)."""
        states = {state(block) for _, block in self.self_checks()}
        # The loads' own verdicts (weighed) decide; the run's stored flag only where no load has one.
        if CLIENT_BOUND in states or (not states - {None} and run_flagged(self.generator)):
            return CLIENT_BOUND
        if UNCHECKED in states:
            return UNCHECKED
        return KEPT_UP if KEPT_UP in states else None

    @property
    def sweep_dimension(self) -> str:
        """What a sweep varied ("concurrency" or "rate"); "" for a single-step run."""
        first = self.sweep[0] if self.sweep else None
        if first is None:
            return ""
        return (
            "concurrency" if first.concurrency is not None else "rate" if first.rate is not None else ""
        )

    def engine(self, name: str) -> EngineBlock | None:
        return self.engines.get(name)

    def served_model(self, name: str) -> str | None:
        """The model the engine said it served (None: the run did not record it)."""
        model = (self.models or {}).get(name)
        return model if isinstance(model, str) and model else None

    def steps_of(self, name: str) -> list[EngineBlock]:
        """One engine's sweep rows, in the order they ran."""
        return [row for row in self.sweep if row.engine == name]

    def reported_step(self, name: str) -> EngineBlock | None:
        """The sweep row an engine's block reports (highest throughput, or the SLO search's answer)."""
        block = self.engines.get(name)
        if block is None or block.from_step is None:
            return None
        return next((row for row in self.steps_of(name) if row.step == block.from_step), None)

    def run_check(self, step_labels: dict[int, str] | None = None) -> RunCheck:
        """The run's self-check: its verdict, and each engine's (each sweep step's, named by
        `step_labels`, by default the sweep's own load levels)."""
        loads = tuple(
            found
            for label, block in self.self_checks(step_labels)
            if (found := load_check(label, block)) is not None
        )
        return RunCheck(self.self_check, loads)

    def self_checks(self, step_labels: dict[int, str] | None = None) -> list[tuple[str, GeneratorBlock]]:
        """The generator's self-check per engine (per step of a sweep), each with its label,
        weighed against that load's figures (a run stored before weighing is weighed here)."""
        labels: dict[Any, str] = dict(self.step_labels() if step_labels is None else step_labels)
        return [
            (f"{name} at {labels.get(step, f'step {step}')}" if self.sweep else name, check)
            for name, step, check in self._load_checks()
        ]

    def _load_checks(self) -> list[tuple[str, int | None, GeneratorBlock]]:
        """(engine, sweep step or None, its weighed self-check) for every load of the run."""
        if self.sweep:
            return [
                (str(row.engine), row.step, weighed(_copy(row.generator), row)) for row in self.sweep
            ]
        return [
            (name, None, weighed(_copy(block.generator), block)) for name, block in self.engines.items()
        ]

    def client_bound_engines(self) -> set[str]:
        """The engines the generator could not keep the load of (at any step)."""
        return {name for name, _step, check in self._load_checks() if state(check) == CLIENT_BOUND}

    def start_times(self) -> dict[tuple[str, int | None], float]:
        """Unix time each engine (each sweep step) started (services/telemetry/origins.py)."""
        # The one rule lives below the benchmark (telemetry reads raw summaries with it).
        return start_times(
            [row.to_json() for row in self.sweep],
            {name: block.to_json() for name, block in self.engines.items()},
        )

    def findings(self, engine: str | None = None) -> list[Finding]:
        """What the run's requests showed that its figures must not hide (services/bench/
        findings.py): every engine's, or one engine's, over every sweep step; [] for a run
        stored before findings."""
        blocks = self.sweep if self.sweep else list(self.engines.values())
        found = [finding for block in blocks for finding in stored_findings(block)]
        return [finding for finding in found if engine is None or finding.engine == engine]

    @property
    def failed_requests(self) -> int:
        return sum(block.failed for block in self.engines.values())

    def engines_that_ran(self) -> dict[str, EngineBlock]:
        """The blocks of engines that ran (a "not run" engine is a note, not a row of zeros)."""
        return {name: block for name, block in self.engines.items() if block.ran}

    def step_labels(self) -> dict[int, str]:
        """Sweep step -> its load level in words ("concurrency 4", "rate 2.5")."""
        labels: dict[int, str] = {}
        for row in self.sweep:
            for dimension, level in (("concurrency", row.concurrency), ("rate", row.rate)):
                if row.step is not None and level is not None:
                    labels[row.step] = f"{dimension} {level:g}"
        return labels


def _copy(check: GeneratorBlock | None) -> GeneratorBlock:
    """A load's stored self-check to weigh, apart from the stored one ({} when it has none)."""
    return check.copy() if check is not None else GeneratorBlock()
