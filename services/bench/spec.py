"""The full description of a benchmark run, stored as `Run.config` and read back by the worker.

A `BenchSpec` is plain data (dataclasses of numbers and strings): `to_dict()` gives the JSON
that is stored, `BenchSpec.from_dict()` reads it back (unknown keys ignored, so older
stored runs keep loading), and `validate()` raises one `ValidationError` with a message fit
for a user, for the page and for the CLI alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from services.bench.arrivals import LoadSpec
from services.bench.stats import SloSpec
from services.bench.workloads import PromptText, WorkloadSpec
from services.core import stored_json
from services.core.errors import ValidationError
from services.core.json_types import JsonOut
from services.core.measure import DEFAULT_PERCENTILES

if TYPE_CHECKING:
    from services.engines.endpoints import EngineRecord

SWEEP_KINDS = ("none", "concurrency", "rate", "slo_search")
#: BenchSpec.workers: this value lets the self-check choose the count (`--workers auto`).
WORKERS_AUTO = 0
MAX_WORKERS = 64


@dataclass(frozen=True)
class EngineTarget:
    """The endpoint one part of a run talks to (a snapshot: later edits of the engine do not change it).

    Its metrics are read through a `services.telemetry.scraper.ScrapeTarget` built from the
    same fields; the stored endpoint itself is `services.engines.endpoints.EngineRecord`.
    """

    name: str
    base_url: str
    kind: str = "openai"
    model: str | None = None
    api_key_env: str | None = None
    metrics_url: str | None = None
    #: The price per hour when the run started (services/core/cost.py): stored with the run so a
    #: later price edit does not rewrite its cost. None: not priced.
    usd_per_hour: float | None = None

    @classmethod
    def from_record(cls, record: EngineRecord) -> EngineTarget:
        """The stored endpoint, as it is now."""
        return cls(
            name=record.name,
            base_url=record.base_url,
            kind=record.kind,
            model=record.model,
            api_key_env=record.api_key_env,
            metrics_url=record.resolved_metrics_url,
            usd_per_hour=record.usd_per_hour,
        )


@dataclass(frozen=True)
class RequestSettings:
    """How each request of a load is made and recorded, whichever transport carries the load
    (one process, worker processes, Ray actors): one record handed through, not the same
    seven parameters on each of them."""

    #: Seeds the conversations (a step of a sweep gets its own, so its prompts differ).
    salt: str = ""
    text: PromptText = field(default_factory=PromptText)
    timeout_s: float = 600.0
    temperature: float | None = 0.0
    #: The sweep step the records belong to.
    step: int | None = None
    connect_ahead: bool = True
    #: Extra headers per request index; with worker processes or Ray it travels to the
    #: workers, so a picklable callable (a module-level function or a functools.partial of one).
    request_headers: Callable[[int], dict[str, str]] | None = None


@dataclass(frozen=True)
class SweepSpec:
    """Several load levels in one run.

    concurrency / rate: step through `values` (each a full sub-run with the base load's bound),
    stopping an engine early when its error rate passes `max_error_rate`, its p90 TTFT grows
    past `latency_factor` times the first step's, or (with `stop_on_plateau`) its request
    throughput gains under 5% twice in a row: it is saturated.
    slo_search: the highest `search_over` level (rate or concurrency) at which at least
    `slo.attainment` of the requests meet the SLOs: doubling from `start` up to `max_value`,
    then bisecting `search_steps` times.
    """

    kind: str = "none"
    values: tuple[float, ...] = ()
    search_over: str = "rate"
    start: float = 1.0
    max_value: float = 64.0
    search_steps: int = 4
    max_error_rate: float = 0.1
    latency_factor: float = 10.0
    stop_on_plateau: bool = True

    @property
    def active(self) -> bool:
        return self.kind != "none"

    @property
    def dimension(self) -> str:
        """What changes between steps: "concurrency" or "rate"."""
        return self.search_over if self.kind == "slo_search" else self.kind


@dataclass(frozen=True)
class BenchSpec:
    engines: tuple[EngineTarget, ...]
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    load: LoadSpec = field(default_factory=LoadSpec)
    slo: SloSpec = field(default_factory=SloSpec)
    sweep: SweepSpec = field(default_factory=SweepSpec)
    name: str = ""
    #: Engines one after another (fair on shared hardware) or all at once.
    parallel_engines: bool = False
    #: Limit on one request's whole answer, seconds.
    timeout_s: float = 600.0
    temperature: float | None = 0.0
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    #: Check the prompt vocabulary against the engine's tokenizer (exact prompt lengths).
    calibrate_prompts: bool = True
    #: Open the connections before the measured requests (TTFT then excludes connecting).
    connect_ahead: bool = True
    record_engine_metrics: bool = True
    #: Load-generator processes on this host (services/bench/pool/); WORKERS_AUTO = choose.
    workers: int = 1
    #: A Ray cluster's address: the workers run as Ray actors over its nodes (services/bench/ray_pool/).
    ray_address: str = ""
    notes: str = ""
    tags: tuple[str, ...] = ()

    # -- validation -------------------------------------------------------------------
    def validate(self) -> BenchSpec:
        if not self.engines:
            raise ValidationError("Choose at least one engine to benchmark.")
        names = [e.name for e in self.engines]
        if len(set(names)) != len(names):
            raise ValidationError("An engine appears twice in the run; each engine once, please.")
        for engine in self.engines:
            if not engine.base_url.startswith(("http://", "https://")):
                raise ValidationError(
                    f"Engine {engine.name!r}: the URL must start with http:// or https://."
                )
        workload = self.workload.validate()
        load = self.load.validate()
        if load.mode == "trace" and workload.kind != "trace":
            raise ValidationError(
                "Trace replay needs the trace workload (its arrival times come from the trace)."
            )
        if not self.timeout_s > 0:
            raise ValidationError("The request timeout must be above 0 seconds.")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ValidationError("Temperature must be between 0 and 2.")
        for q in self.percentiles:
            if not 0 < q < 100:
                raise ValidationError(f"Percentile {q} is not between 0 and 100.")
        slo = self.slo
        for label, value in slo.limits():
            if value is not None and not value > 0:
                raise ValidationError(f"The {label} SLO must be above 0 ms.")
        if not 0 < slo.attainment <= 1:
            raise ValidationError("The SLO attainment must be between 0 and 1 (for example 0.9).")
        if not isinstance(self.workers, int) or not WORKERS_AUTO <= self.workers <= MAX_WORKERS:
            raise ValidationError(f"Workers must be 1 to {MAX_WORKERS}, or auto.")
        if self.ray_address and (
            len(self.ray_address) > 200 or any(c.isspace() for c in self.ray_address)
        ):
            raise ValidationError("The Ray address is HOST:PORT (or ray://HOST:PORT), without spaces.")
        self._validate_sweep(load)
        return replace(self, workload=workload, load=load)

    def _validate_sweep(self, load: LoadSpec) -> None:
        sweep = self.sweep
        if sweep.kind not in SWEEP_KINDS:
            raise ValidationError(
                f"Unknown sweep {sweep.kind!r}; choose one of {', '.join(SWEEP_KINDS)}."
            )
        if not sweep.active:
            return
        if load.mode == "trace":
            raise ValidationError("Sweeps change the concurrency or the rate; trace replay has neither.")
        if sweep.kind in ("concurrency", "rate"):
            if not sweep.values:
                raise ValidationError("A sweep needs its load levels (for example 1, 2, 4, 8).")
            if any(not v > 0 for v in sweep.values):
                raise ValidationError("Sweep levels must be above 0.")
            if len(sweep.values) > 64:
                raise ValidationError("A sweep has at most 64 levels.")
        if sweep.kind == "slo_search":
            if not self.slo.active:
                raise ValidationError("The SLO search needs at least one SLO (TTFT, TPOT or E2E).")
            if sweep.search_over not in ("rate", "concurrency"):
                raise ValidationError("The SLO search runs over the rate or the concurrency.")
            if not 0 < sweep.start <= sweep.max_value:
                raise ValidationError("The SLO search needs 0 < start <= maximum.")
            if not 0 <= sweep.search_steps <= 12:
                raise ValidationError("The SLO search bisects 0 to 12 times.")
        if not 0 <= sweep.max_error_rate <= 1:
            raise ValidationError("The sweep's error-rate limit is between 0 and 1.")
        if not sweep.latency_factor > 1:
            raise ValidationError("The sweep's latency factor must be above 1.")

    # -- storage ----------------------------------------------------------------------
    def to_dict(self) -> JsonOut:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> BenchSpec:
        """A stored Run.config (`to_dict` of this version or an older one) back as a spec: keys
        it does not know are ignored, a part it lacks takes its defaults."""
        config = stored_json.mapping(data)
        parts = {
            "engines": tuple(_build(EngineTarget, e) for e in _engines(config.get("engines"))),
            "workload": _build(WorkloadSpec, config.get("workload")),
            "load": _build(LoadSpec, config.get("load")),
            "slo": _build(SloSpec, config.get("slo")),
            "sweep": _build(SweepSpec, config.get("sweep")),
        }
        scalars = {k: v for k, v in config.items() if k in _SCALAR_FIELDS}
        return _build(BenchSpec, {**scalars, **parts})

    @property
    def label(self) -> str:
        engines = ", ".join(e.name for e in self.engines)
        return self.name or f"{engines}: {self.load.label()}"


T = TypeVar("T")

_SCALAR_FIELDS = {f.name for f in dataclasses.fields(BenchSpec)} - {
    "engines",
    "workload",
    "load",
    "slo",
    "sweep",
}


def _tuple_if_list(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _engines(value: object) -> list[object]:
    """The engines of a config: a list as stored, a tuple as `to_dict` gives it in memory."""
    return list(value) if isinstance(value, (list, tuple)) else []


def slo_of(config: object) -> SloSpec:
    """The SLOs of a stored run's config, whatever else it holds (a table printed from part of one)."""
    return _build(SloSpec, stored_json.mapping(config).get("slo"))


def _build(cls: type[T], data: object) -> T:
    """A part of a stored config as its dataclass: its known keys (a list read as a tuple, the
    schema as stored); nothing stored, or not an object: its defaults."""
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]  # always a dataclass
    values = stored_json.mapping(data).items()
    return cls(**{k: _tuple_if_list(v) if k != "schema" else v for k, v in values if k in known})
