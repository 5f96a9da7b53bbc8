"""A benchmark as the user chose it, and the one translation of those choices into a spec.

`BenchForm` holds what a person picks on the Benchmarks page or types as `shootout bench`
flags, with the defaults of both in one place: the page's widgets and the CLI's argparse
defaults are read from `BenchForm()`. `to_spec` turns a form into the validated
`BenchSpec` (ValidationError with a message for the user), so the same choices give the
same run whichever way they came in. `from_widgets` reads the page's widget values; the
CLI's flags are read in commands/bench.py.

Defaults that used to differ between the page (P) and the CLI (C), and the one kept:

- concurrency: P 8, C 1. Kept 8: a closed loop at 1 measures latency, not load, and it is
  the value the page has always shown. `--concurrency 0` is now an error, not a silent 1.
- warm-up requests: P 2, C 0. Kept 2: a cold first request (connections, caches, graphs)
  otherwise lands in the measured p99 of a small run.
- gamma burstiness: P 0.5, C 1.0. Kept 0.5: gamma at 1.0 is Poisson. A run whose arrivals
  are not gamma stores the neutral 1.0, as both did.
- request rate: P 4.0, C none (the CLI takes its open loop from --rate itself). Kept 4.0.
- sweep levels: P 1, 2, 4, 8, 16, C none. Kept for the page; the CLI asks for --sweep-values,
  as it asks for --requests or --duration (P: 100 requests): a script says what it measures.
- run name: P stripped, C as typed. Kept stripped (a name of spaces is no name).
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from services.bench.arrivals import LoadSpec
from services.bench.spec import MAX_WORKERS, WORKERS_AUTO, BenchSpec, EngineTarget, SweepSpec
from services.bench.stats import SloSpec
from services.bench.workloads import WorkloadSpec
from services.core.errors import ValidationError

#: The page's seconds box when the user bounds a run by time (the form's bound is requests).
SUGGESTED_DURATION_S = 60.0
#: Where the form has no opinion of its own, its defaults are the spec's.
_WORKLOAD = WorkloadSpec()


@dataclass(frozen=True)
class BenchForm:
    """The user's choices for one benchmark; fields that do not apply to a choice are ignored
    (the rate of a closed loop, the prefix of a synthetic workload)."""

    engines: tuple[str, ...] = ()
    #: Ask the engines for this model instead of each one's registered model.
    model: str | None = None
    parallel: bool = False
    # -- workload
    workload: str = "synthetic"
    input_len: int = _WORKLOAD.input_len
    output_len: int = _WORKLOAD.output_len
    length_dist: str = _WORKLOAD.length_dist
    range_ratio: float = _WORKLOAD.range_ratio
    max_input_len: int | None = _WORKLOAD.max_input_len
    max_output_len: int | None = _WORKLOAD.max_output_len
    prefix_groups: int = _WORKLOAD.prefix_groups
    prefix_len: int = _WORKLOAD.prefix_len
    turns: int = _WORKLOAD.turns
    #: JSON schema text for the structured workload (empty: the workload's small default).
    schema_text: str = ""
    prompts_file: str = ""
    trace: str = "conversation"
    length_scale: float = 1.0
    fixed_output: bool = True
    # -- load: "concurrency" (closed loop), "rate" (open loop) or "trace" (replay)
    mode: str = "concurrency"
    concurrency: int = 8
    rate: float = 4.0
    #: With a rate or a trace replay: the cap on requests in flight (None: no cap).
    max_concurrency: int | None = None
    arrival: str = "poisson"
    burstiness: float = 0.5
    trace_speed: float = 1.0
    requests: int | None = 100
    duration_s: float | None = None
    warmup: int = 2
    ramp_up_s: float = 0.0
    seed: int = 0
    # -- sweep and SLOs
    sweep: str = "none"
    sweep_values: tuple[float, ...] = (1, 2, 4, 8, 16)
    search_over: str = "rate"
    search_start: float = 1.0
    search_max: float = 64.0
    search_steps: int = 4
    slo_ttft_ms: float | None = None
    slo_ttfat_ms: float | None = None
    slo_tpot_ms: float | None = None
    slo_e2e_ms: float | None = None
    slo_attainment: float = 0.9
    # -- measuring
    timeout_s: float = BenchSpec.timeout_s
    temperature: float = 0.0
    percentiles: tuple[float, ...] = BenchSpec.percentiles
    calibrate_prompts: bool = BenchSpec.calibrate_prompts
    connect_ahead: bool = BenchSpec.connect_ahead
    record_engine_metrics: bool = BenchSpec.record_engine_metrics
    workers: int = BenchSpec.workers
    ray_address: str = BenchSpec.ray_address
    # -- output
    name: str = ""
    tags: tuple[str, ...] = ()


def to_spec(form: BenchForm, targets: Sequence[EngineTarget] | None = None) -> BenchSpec:
    """The validated spec of `form`. `targets` are the endpoints when the caller resolved
    them (an unregistered URL); otherwise `form.engines` are looked up by name."""
    if targets is None:
        targets = _registered_targets(form)
    schema = None
    if form.schema_text.strip():
        # jsonschema costs 0.05-0.1 s (CLI start): only a structured workload's schema needs it.
        from services.core import json_schema

        schema = json_schema.parse_schema(form.schema_text)
    workload = WorkloadSpec(
        kind=form.workload,
        input_len=form.input_len,
        output_len=form.output_len,
        length_dist=form.length_dist,
        range_ratio=form.range_ratio,
        max_input_len=form.max_input_len,
        max_output_len=form.max_output_len,
        prefix_groups=form.prefix_groups,
        prefix_len=form.prefix_len,
        turns=form.turns,
        schema=schema,
        prompts_file=form.prompts_file.strip() or None,
        trace=form.trace,
        length_scale=form.length_scale,
        seed=form.seed,
        fixed_output=form.fixed_output,
    )
    load = LoadSpec(
        mode=form.mode,
        concurrency=form.concurrency if form.mode == "concurrency" else form.max_concurrency,
        rate=form.rate if form.mode == "rate" else None,
        arrival=form.arrival,
        # Only gamma arrivals have a shape; the others store the neutral 1.0 (Poisson).
        burstiness=form.burstiness if form.arrival == "gamma" else 1.0,
        ramp_up_s=form.ramp_up_s,
        requests=form.requests,
        duration_s=form.duration_s,
        warmup_requests=form.warmup,
        trace_speed=form.trace_speed,
        seed=form.seed,
    )
    slo = SloSpec(
        ttft_ms=form.slo_ttft_ms,
        ttfat_ms=form.slo_ttfat_ms,
        tpot_ms=form.slo_tpot_ms,
        e2e_ms=form.slo_e2e_ms,
        attainment=form.slo_attainment,
    )
    sweep = SweepSpec(
        kind=form.sweep,
        values=form.sweep_values if form.sweep in ("concurrency", "rate") else (),
        search_over=form.search_over,
        start=form.search_start,
        max_value=form.search_max,
        search_steps=form.search_steps,
    )
    return BenchSpec(
        engines=tuple(targets),
        workload=workload,
        load=load,
        slo=slo,
        sweep=sweep,
        name=form.name.strip(),
        parallel_engines=form.parallel,
        timeout_s=form.timeout_s,
        temperature=form.temperature,
        percentiles=form.percentiles,
        calibrate_prompts=form.calibrate_prompts,
        connect_ahead=form.connect_ahead,
        record_engine_metrics=form.record_engine_metrics,
        workers=form.workers,
        ray_address=form.ray_address.strip(),
        tags=form.tags,
    ).validate()


def _registered_targets(form: BenchForm) -> tuple[EngineTarget, ...]:
    if not form.engines:
        raise ValidationError("Choose at least one engine.")
    # CLI start: the jobs package adds 0.17 s to `shootout bench`, and only registered names need it.
    from services.bench.jobs import engine_target

    targets = tuple(engine_target(name) for name in form.engines)
    if form.model:
        targets = tuple(replace(target, model=form.model) for target in targets)
    return targets


def parse_levels(text: str) -> tuple[float, ...]:
    """Load levels as typed ("1, 2 4;8"): numbers separated by commas, spaces or semicolons;
    nan and inf are not levels (an infinite rate reached an int() as an OverflowError)."""
    refusal = f"Sweep levels must be numbers separated by commas (got {text[:80]!r})."
    try:
        levels = tuple(
            float(part) for part in text.replace(";", ",").replace(" ", ",").split(",") if part
        )
    except ValueError:
        raise ValidationError(refusal) from None
    if not all(math.isfinite(level) for level in levels):
        raise ValidationError(refusal)
    return levels


def parse_workers(value: object) -> int:
    """A worker count as typed (a number, or "auto") as BenchSpec.workers."""
    text = str(value).strip().lower()
    if text == "auto":
        return WORKERS_AUTO
    if not text.isdigit() or not 1 <= int(text) <= MAX_WORKERS:
        raise ValidationError(
            f"Workers: a number from 1 to {MAX_WORKERS}, or auto (got {str(value)[:40]!r})."
        )
    return int(text)


def workers_text(workers: int) -> str:
    """BenchSpec.workers as the page's text box shows it."""
    return "auto" if workers == WORKERS_AUTO else str(workers)


#: Number boxes on the page where 0 means "none".
_ZERO_IS_NONE = ("max_concurrency", "slo_ttft_ms", "slo_ttfat_ms", "slo_tpot_ms", "slo_e2e_ms")


def from_widgets(values: Mapping[str, Any]) -> BenchForm:
    """The form of the Benchmarks page's widget values (keyed by BenchForm field, plus
    "bound": "requests" or "duration"); a widget the page did not show keeps its default.
    The page's text boxes (sweep levels, workers) are parsed here, with a message for the user."""
    chosen = dict(values)
    bound = chosen.pop("bound", "requests")
    unknown = set(chosen) - _FIELD_NAMES
    if unknown:
        raise TypeError(f"not fields of BenchForm: {', '.join(sorted(unknown))}")
    if isinstance(chosen.get("sweep_values"), str):
        chosen["sweep_values"] = parse_levels(chosen["sweep_values"])
    if "workers" in chosen:
        chosen["workers"] = parse_workers(chosen["workers"])
    for key in _ZERO_IS_NONE:
        if key in chosen and not chosen[key]:
            chosen[key] = None
    form = BenchForm(**{key: _coerce(key, value) for key, value in chosen.items()})
    if bound == "duration":
        return replace(form, requests=None, duration_s=form.duration_s or SUGGESTED_DURATION_S)
    return replace(form, duration_s=None)


_FIELD_NAMES = {f.name for f in fields(BenchForm)}


def _converter(hint: Any) -> Callable[[Any], Any]:
    """int(), float(), str(), bool() or tuple() after the field's type (None kept where allowed)."""
    if isinstance(hint, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        convert = _converter(inner)
        return lambda value: None if value in (None, "") else convert(value)
    origin = typing.get_origin(hint) or hint
    return typing.cast("Callable[[Any], Any]", origin)


_CONVERTERS = {name: _converter(hint) for name, hint in typing.get_type_hints(BenchForm).items()}


def _coerce(key: str, value: Any) -> Any:
    """Streamlit's number boxes give ints or floats after their default; the spec stores the
    field's own type, whichever widget (or test) supplied it."""
    return _CONVERTERS[key](value)
