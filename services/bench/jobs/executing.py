"""Executing a stored run in this process (the worker's and the CLI's path), and marking
the runs whose worker is gone as interrupted."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services.bench.jobs.engine_metrics import default_metrics_url, start_engine_metrics
from services.bench.jobs.reading import stored_records
from services.bench.jobs.starting import KIND, store_reported_settings
from services.bench.jobs.summarize import build_summary
from services.bench.jobs.writer import DatabaseSink
from services.bench.runner import Benchmark, BenchOutcome
from services.bench.spec import BenchSpec
from services.bench.summary import BenchSummary
from services.bench.window_counts import WindowMeter
from services.bench.workloads import run_salt
from services.client import run_blocking
from services.core.errors import NotFoundError
from services.core.json_types import JsonOut
from services.core.processes import pid_alive
from services.runstate import lifecycle
from services.runstate.lifecycle import ACTIVE_STATUSES, STALE_AFTER_S, RunStatus, is_stale
from services.runstate.run_kinds import interrupted_text
from services.telemetry.energy.meter import EnergyMeter
from services.telemetry.gpu import remote_gpu_settings


def _now() -> datetime:
    return datetime.now(UTC)


def load_spec(run_id: int) -> BenchSpec:
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != KIND:
            raise NotFoundError(f"No benchmark run #{run_id}.")
        return BenchSpec.from_dict(run.config or {})


def execute_run(
    run_id: int,
    *,
    on_progress: Callable[[float, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    wait_for_metrics_s: float = 5.0,
) -> JsonOut:
    """Run a stored benchmark in this process (the worker's and the CLI's path); returns
    the summary it stored. Never raises for failing requests; a run that cannot go on at
    all ends "failed" with its reason in Run.error and the ShootoutError re-raised."""
    spec = load_spec(run_id).validate()
    if not lifecycle.claim(run_id, clear_error=True):
        # Cancelled before its worker got going (or started twice): nothing to run.
        summary = build_summary(spec, stored_records(run_id), None)
        if lifecycle.status_of(run_id) == RunStatus.CANCELLED:
            _finish(run_id, RunStatus.CANCELLED, summary)
        return summary
    store_reported_settings(run_id, spec)
    benchmark: Benchmark | None = None
    sink = DatabaseSink(
        run_id, progress=lambda: benchmark.phase_fraction() if benchmark else 0.0
    ).start()
    recording = start_engine_metrics(run_id, spec, wait_for_metrics_s)

    def stop() -> bool:
        return sink.should_stop() or bool(should_stop and should_stop())

    def progress(fraction: float, message: str) -> None:
        sink.message = message
        if on_progress is not None:
            on_progress(fraction, message)

    energy = energy_meter(spec)
    benchmark = Benchmark(
        spec,
        sink=sink,
        should_stop=stop,
        progress=progress,
        salt=run_salt(f"run{run_id}"),
        energy=energy,
        window_meter=window_meter(spec),
    )
    outcome: BenchOutcome | None = None
    failure: BaseException | None = None
    try:
        outcome = run_blocking(benchmark.run())
    except BaseException as error:  # noqa: BLE001 - recorded, then re-raised
        failure = error
    finally:
        sink.close()
        energy.close()
        if recording is not None:
            recording.stop()
    # The writer kept what it stored; after a write error, read the database instead.
    stored = sink.stored if sink.pending.empty() and sink.last_error is None else stored_records(run_id)
    summary = build_summary(spec, stored, outcome, run_id=run_id)
    if failure is not None:
        message = str(failure) or type(failure).__name__
        final = RunStatus.CANCELLED if isinstance(failure, KeyboardInterrupt) else RunStatus.FAILED
        _finish(run_id, final, summary, error=None if final == RunStatus.CANCELLED else message)
        raise failure
    cancelled = (outcome is not None and outcome.cancelled) or lifecycle.cancel_requested(run_id)
    failed = BenchSummary.from_json(summary).failed_requests
    status = (
        RunStatus.CANCELLED
        if cancelled
        else (RunStatus.FINISHED_WITH_ERRORS if failed else RunStatus.FINISHED)
    )
    _finish(run_id, status, summary)
    return summary


def window_meter(spec: BenchSpec) -> WindowMeter | None:
    """Each engine's own counters at each step's edges, when the run records engine metrics."""
    if not spec.record_engine_metrics:
        return None
    return WindowMeter(spec.engines, {e.name: default_metrics_url(e) for e in spec.engines})


def energy_meter(spec: BenchSpec) -> EnergyMeter:
    """Counters for each step's energy: this machine's for engines on it, a dcgm-exporter
    (SHOOTOUT_DCGM_URLS) on an engine's host for the others."""
    return EnergyMeter(
        {engine.name: engine.base_url for engine in spec.engines},
        dcgm_urls=remote_gpu_settings()[0],
    )


def _finish(run_id: int, status: RunStatus, summary: JsonOut, error: str | None = None) -> None:
    lifecycle.finish(run_id, status, summary=summary, error=lifecycle.KEEP if error is None else error)


def partial_summary(run_id: int) -> JsonOut:
    """The summary of the rows a benchmark stored, for a run whose worker ended without one."""
    return build_summary(load_spec(run_id), stored_records(run_id), None)


def mark_interrupted_runs(stale_after_s: float = STALE_AFTER_S) -> list[int]:
    """Mark benchmark runs whose worker is gone as "interrupted", with the summary of the
    rows they had stored; also finish the summary of cancelled runs whose worker died
    before writing it. Returns the ids changed. Safe to call at every app start."""
    now = _now()
    with session_scope() as session:
        candidates = session.execute(
            select(
                Run.id, Run.status, Run.heartbeat_at, Run.created_at, Run.worker_pid, Run.summary
            ).where(Run.kind == KIND, Run.status.in_((*ACTIVE_STATUSES, RunStatus.CANCELLED)))
        ).all()
    changed: list[int] = []
    for run_id, status, heartbeat, created, pid, summary in candidates:
        if not is_stale(heartbeat, created, now=now, stale_after_s=stale_after_s):
            continue
        # A worker still alive but silent (a long database lock) gets ten times longer.
        if pid_alive(pid) and not is_stale(
            heartbeat, created, now=now, stale_after_s=11 * stale_after_s
        ):
            continue
        # A cancelled run whose worker wrote its summary before it died needs nothing.
        if status == RunStatus.CANCELLED and "engines" in (summary or {}):
            continue
        partial = partial_summary(run_id)
        new_status = RunStatus.CANCELLED if status == RunStatus.CANCELLED else RunStatus.INTERRUPTED
        error = None if status == RunStatus.CANCELLED else interrupted_text(KIND)
        _finish(run_id, new_status, partial, error=error)
        changed.append(run_id)
    return changed
