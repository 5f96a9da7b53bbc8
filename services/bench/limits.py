"""A benchmark within the server's limits (services/team/limits.py): its answers, prompts and
steps within the per-step bounds, and a viewer's run bounded as a whole (all its requests and
minutes, its load-generator workers within the server's cores)."""

from __future__ import annotations

from dataclasses import dataclass

from services.bench.spec import BenchSpec
from services.core import processes
from services.core.errors import ValidationError
from services.team.access import Viewer
from services.team.limits import Limits, current


@dataclass(frozen=True)
class BenchmarkSize:
    """The most a benchmark can ask of the server, read from its spec before it starts."""

    #: Load levels each engine may run: a sweep's levels, or the SLO search's doublings and
    #: bisections (a sweep that stops an engine early runs fewer).
    steps: int
    #: Engine-steps run one after another (parallel engines share a step's minutes).
    sequential_steps: int
    #: Requests of every step of every engine, warm-ups included; None when the steps are
    #: bounded by their duration only.
    requests: int | None
    #: Minutes the steps' durations add up to; None when the steps are bounded by a request
    #: count only.
    minutes: float | None


def benchmark_size(spec: BenchSpec) -> BenchmarkSize:
    sweep, load = spec.sweep, spec.load
    engines = len(spec.engines)
    if sweep.kind == "slo_search":
        # As the runner counts them: start, 2 start, ... up to the maximum, then the bisections.
        doubling = 1
        while sweep.start * 2**doubling <= sweep.max_value:
            doubling += 1
        steps = doubling + sweep.search_steps
    elif sweep.active:
        steps = len(sweep.values)
    else:
        steps = 1
    # The SLO search probes one engine at a time, whatever parallel_engines says.
    parallel = spec.parallel_engines and sweep.kind != "slo_search"
    sequential_steps = steps * (1 if parallel else engines)
    requests = (
        None if load.requests is None else steps * engines * (load.requests + load.warmup_requests)
    )
    minutes = None if load.duration_s is None else sequential_steps * load.duration_s / 60
    return BenchmarkSize(steps, sequential_steps, requests, minutes)


def check_benchmark(spec: BenchSpec, viewer: Viewer) -> None:
    """A benchmark started from the page stays within the server's limits: its answers within
    SHOOTOUT_LIMIT_MAX_TOKENS, its prompts within SHOOTOUT_LIMIT_PROMPT_CHARS (at about four
    characters a token), each step bounded by a request count and a duration. A viewer's run is
    bounded as a whole as well: all its steps' requests and minutes, and its workers by the
    server's cores (more only take CPU from the server and the engines on it). The CLI on the
    server is the operator's own and is not checked."""
    limits = current()
    workload, load = spec.workload, spec.load
    longest_output = max(workload.output_len, workload.max_output_len or 0)
    if longest_output > limits.max_tokens:
        raise ValidationError(
            f"Output length {longest_output:,} tokens is over this server's limit of "
            f"{limits.max_tokens:,} (SHOOTOUT_LIMIT_MAX_TOKENS)."
        )
    prompt_tokens = max(workload.input_len, workload.max_input_len or 0) + (
        workload.prefix_len if workload.kind == "shared_prefix" else 0
    )
    if prompt_tokens > limits.prompt_chars // 4:
        raise ValidationError(
            f"Prompts of {prompt_tokens:,} tokens are over this server's limit of about "
            f"{limits.prompt_chars // 4:,} tokens (SHOOTOUT_LIMIT_PROMPT_CHARS / 4)."
        )
    if load.requests is not None and load.requests > limits.benchmark_requests:
        raise ValidationError(
            f"{load.requests:,} requests per step is over this server's limit of "
            f"{limits.benchmark_requests:,} (SHOOTOUT_LIMIT_BENCHMARK_REQUESTS)."
        )
    if load.duration_s is not None and load.duration_s > limits.benchmark_minutes * 60:
        raise ValidationError(
            f"A step of {load.duration_s / 60:,.0f} minutes is over this server's limit of "
            f"{limits.benchmark_minutes} (SHOOTOUT_LIMIT_BENCHMARK_MINUTES)."
        )
    if not viewer.is_operator:
        _check_viewers_run(spec, limits)


def _check_viewers_run(spec: BenchSpec, limits: Limits) -> None:
    size = benchmark_size(spec)
    shape = f"{size.steps} step(s) of {len(spec.engines)} engine(s)"
    if size.requests is not None and size.requests > limits.run_requests_per_viewer:
        raise ValidationError(
            f"This benchmark sends up to {size.requests:,} requests in all ({shape}, warm-ups "
            f"included); a viewer's benchmark may send {limits.run_requests_per_viewer:,} "
            "(SHOOTOUT_LIMIT_RUN_REQUESTS_PER_VIEWER). Use fewer levels or requests per step."
        )
    if size.minutes is not None and size.minutes > limits.run_minutes_per_viewer:
        raise ValidationError(
            f"This benchmark runs up to {size.minutes:,.0f} minutes in all ({shape}); a viewer's "
            f"benchmark may run {limits.run_minutes_per_viewer:,} "
            "(SHOOTOUT_LIMIT_RUN_MINUTES_PER_VIEWER). Use fewer levels or shorter steps."
        )
    cores = processes.usable_cores()
    if spec.workers > cores:
        raise ValidationError(
            f"{spec.workers} load-generator workers is more than this server's {cores} cores; a "
            f"viewer's benchmark may use at most {cores} (or auto, which stays within them)."
        )
