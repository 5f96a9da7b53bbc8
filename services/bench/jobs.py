"""The benchmark job service: runs stored in the database, executed by a worker that
outlives the page.

Life of a run: `start_benchmark(spec)` stores a Run (kind "benchmark", status "pending",
config = the full spec) and starts a worker process (`python -m services.bench.worker ID`,
its own session, so it goes on when the page closes or the app restarts). The worker sets
"running", executes the benchmark on its own event loop (uvloop) and hands every finished
request to a writer thread, which inserts RequestResult rows in batches about twice a
second and refreshes the run's heartbeat, progress and live figures. Any number of viewers
poll the same rows. At the end the worker writes `Run.summary` and the final status:
finished, finished_with_errors (some requests failed), cancelled, or failed (the run itself
could not go on; `Run.error` says why).

Cancelling (`cancel_run`) sets the status to "cancelled" at once; the worker sees it within
half a second, cancels the requests in flight (recorded as failed, class "cancelled") and
writes the summary of what it has. A worker that dies leaves a stale heartbeat:
`mark_interrupted_runs()` (called at app start) marks such runs "interrupted" and builds
their summary from the rows already stored. The CLI runs the same `execute_run` in its own
process, in the foreground.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from services import lifecycle
from services.bench.runner import Benchmark, BenchOutcome, StepResult
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.stats import CANCELLED, RequestRecord, summarize_engine
from services.bench.summary import BenchSummary
from services.bench.workloads import TRACE_ATTRIBUTION, workload_label
from services.config import PROJECT_ROOT, get_settings
from services.errors import NotFoundError
from services.lifecycle import (
    ACTIVE_STATUSES,
    STALE_AFTER_S,
    RunKind,
    RunStatus,
    is_stale,
    request_cancel,
)
from services.processes import launch_run_worker, pid_alive

if TYPE_CHECKING:
    from services.access import Viewer

KIND = RunKind.BENCHMARK
FLUSH_INTERVAL_S = 0.5


def _now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------------------------------
# Creating and starting runs
# ---------------------------------------------------------------------------------------


def engine_target(name: str) -> EngineTarget:
    """A registered engine as a benchmark target (NotFoundError when unknown)."""
    from services.endpoints import get_engine

    record = get_engine(name)
    return EngineTarget(
        name=record.name,
        base_url=record.base_url,
        kind=record.kind,
        model=record.model,
        api_key_env=record.api_key_env,
        metrics_url=record.resolved_metrics_url,
    )


def create_run(spec: BenchSpec, requested_by: str | None = None) -> int:
    """Validate `spec` and store it as a pending benchmark run; returns the run id."""
    from db.models import Run
    from db.session import session_scope

    spec = spec.validate()
    engines = [
        {
            "name": e.name,
            "base_url": e.base_url,
            "kind": e.kind,
            "model": e.model,
            "metrics_url": e.metrics_url,
        }
        for e in spec.engines
    ]
    models = sorted({e.model for e in spec.engines if e.model})
    with session_scope() as session:
        run = Run(
            kind=KIND,
            name=spec.label[:300],
            status="pending",
            config=spec.to_dict(),
            summary={},
            engines=engines,
            engine_names=",".join(e.name for e in spec.engines)[:1000],
            model=", ".join(models)[:300] or None,
            workload=workload_label(spec.workload)[:100],
            notes=spec.notes,
            tags=list(spec.tags),
            progress=0.0,
            requested_by=requested_by,
        )
        session.add(run)
        session.flush()
        return run.id


def start_benchmark(spec: BenchSpec, viewer: Viewer | None = None) -> int:
    """Store the run and start its worker process; returns the run id at once. Refused while
    the server's or this viewer's limit of benchmarks runs (services/limits.py)."""
    from services import limits

    if viewer is not None:  # from the page; the CLI on the server is the operator's own
        limits.check_benchmark(spec.validate())
    with limits.admitted("benchmark", viewer) as requested_by:
        run_id = create_run(spec, requested_by=requested_by)
    launch_worker(run_id)
    return run_id


def count_active(kind: str, requested_by: str | None = None) -> int:
    """Runs of `kind` pending or running now (a stale one was marked interrupted at start-up),
    all of them or those one viewer started."""
    from sqlalchemy import func, select

    from db.models import Run
    from db.session import session_scope

    query = select(func.count(Run.id)).where(Run.kind == kind, Run.status.in_(ACTIVE_STATUSES))
    if requested_by is not None:
        query = query.where(Run.requested_by == requested_by)
    with session_scope() as session:
        return int(session.scalar(query) or 0)


def launch_worker(run_id: int) -> int:
    """Start `python -m services.bench.worker RUN_ID` detached; returns its pid."""
    pid = launch_run_worker("services.bench.worker", run_id, "bench")
    _update(run_id, worker_pid=pid)
    return pid


def cancel_run(run_id: int) -> bool:
    """Ask a pending or running benchmark to stop; False when it had ended already."""
    return request_cancel(run_id, KIND, "benchmark run")


def _update(run_id: int, **values: Any) -> None:
    from sqlalchemy import update

    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        session.execute(update(Run).where(Run.id == run_id).values(**values))


def _store_reported_settings(run_id: int, spec: BenchSpec) -> None:
    """Each engine's own account of its settings, kept in Run.engines for Compare."""
    from db.models import Run
    from db.session import session_scope
    from services.engines.reported import reported_settings

    reported = {
        e.name: reported_settings(e.base_url, e.metrics_url, e.api_key_env) for e in spec.engines
    }
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            return
        run.engines = [
            {**item, "reported": reported.get(item.get("name"), {})} for item in (run.engines or [])
        ]


# ---------------------------------------------------------------------------------------
# The writer thread: rows, heartbeat, progress, the cancel flag
# ---------------------------------------------------------------------------------------


def _row(run_id: int, record: RequestRecord) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if record.step is not None:
        extra["step"] = record.step
    if record.schema_valid is not None:
        extra["schema_valid"] = record.schema_valid
    if record.requested_output_tokens is not None:
        extra["requested_output_tokens"] = record.requested_output_tokens
    return {
        "run_id": run_id,
        "engine_name": record.engine,
        "index": record.index,
        "warmup": record.warmup,
        "ok": record.ok,
        "scheduled_s": record.scheduled_s,
        "start_s": record.start_s,
        "ttft_s": record.ttft_s,
        "e2e_s": record.e2e_s,
        "tpot_s": record.tpot_s,
        "itl_s": record.itl_s,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "cached_tokens": record.cached_tokens,
        "finish_reason": record.finish_reason,
        "error_class": record.error_class,
        "error": record.error,
        "extra": extra,
    }


def record_from_row(row: Any) -> RequestRecord:
    """A stored RequestResult (ORM row or mapping) back as a statistics record."""
    get = row.get if isinstance(row, dict) else (lambda key, default=None: getattr(row, key, default))
    extra = get("extra") or {}
    return RequestRecord(
        # A stored row always has both (non-null columns); the getter's type cannot say so.
        engine=cast(str, get("engine_name")),
        index=cast(int, get("index")),
        ok=bool(get("ok")),
        warmup=bool(get("warmup")),
        scheduled_s=get("scheduled_s"),
        start_s=get("start_s"),
        ttft_s=get("ttft_s"),
        e2e_s=get("e2e_s"),
        itl_s=list(get("itl_s") or []),
        input_tokens=get("input_tokens"),
        output_tokens=get("output_tokens"),
        cached_tokens=get("cached_tokens"),
        requested_output_tokens=extra.get("requested_output_tokens"),
        error_class=get("error_class"),
        error=get("error"),
        finish_reason=get("finish_reason"),
        schema_valid=extra.get("schema_valid"),
        step=extra.get("step"),
    )


class DatabaseSink:
    """Takes records from the event loop (a deque append) and writes them from its own
    thread in batches, with the heartbeat, progress and live figures; reads the cancel
    flag (status "cancelled") on the same beat."""

    def __init__(
        self,
        run_id: int,
        progress: Callable[[], float] = lambda: 0.0,
        interval_s: float = FLUSH_INTERVAL_S,
    ) -> None:
        self.run_id = run_id
        self.progress = progress
        self.interval_s = interval_s
        self.pending: queue.SimpleQueue[RequestRecord] = queue.SimpleQueue()
        self.cancelled = threading.Event()
        self.stopped = threading.Event()
        #: Every record stored so far, in the order of its row id: the run's summary is built
        #: from exactly what the database holds without reading it back.
        self.stored: list[RequestRecord] = []
        self.counts: dict[str, dict[str, int]] = {}
        self.message = ""
        self.last_error: str | None = None
        self._thread = threading.Thread(target=self._loop, name=f"bench-writer-{run_id}", daemon=True)

    def start(self) -> DatabaseSink:
        self._thread.start()
        return self

    def add(self, record: RequestRecord) -> None:
        self.pending.put(record)

    def should_stop(self) -> bool:
        return self.cancelled.is_set()

    def _loop(self) -> None:
        while not self.stopped.wait(self.interval_s):
            self.flush()
        self.flush()

    def flush(self) -> None:
        from sqlalchemy import insert

        from db.models import RequestResult
        from db.session import session_scope

        records: list[RequestRecord] = []
        while True:
            try:
                records.append(self.pending.get_nowait())
            except queue.Empty:
                break
        for record in records:
            counts = self.counts.setdefault(
                record.engine, {"sent": 0, "completed": 0, "failed": 0, "cancelled": 0, "warmup": 0}
            )
            if record.warmup:
                counts["warmup"] += 1
            else:
                counts["sent"] += 1
                counts[
                    "completed"
                    if record.ok
                    else "cancelled"
                    if record.error_class == CANCELLED
                    else "failed"
                ] += 1
        try:
            with session_scope() as session:
                if records:
                    session.execute(insert(RequestResult), [_row(self.run_id, r) for r in records])
                status = lifecycle.status_of(self.run_id, session)
                values: dict[str, Any] = {"progress": round(self.progress(), 4)}
                if status == RunStatus.RUNNING:
                    values["summary"] = BenchSummary(
                        live={"engines": self.counts, "message": self.message, "updated": time.time()}
                    ).to_json()
                lifecycle.beat(self.run_id, session, **values)
            self.stored.extend(records)
            self.last_error = None
        except Exception as error:  # noqa: BLE001 - keep the rows and try again next beat
            self.last_error = f"{type(error).__name__}: {error}"
            for record in records:
                self.pending.put(record)
            return
        if status in (RunStatus.CANCELLED, None):
            self.cancelled.set()

    def close(self) -> None:
        self.stopped.set()
        self._thread.join(timeout=60)
        if not self.pending.empty():
            self.flush()


# ---------------------------------------------------------------------------------------
# Executing a run
# ---------------------------------------------------------------------------------------


def load_spec(run_id: int) -> BenchSpec:
    from db.models import Run
    from db.session import session_scope

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
) -> dict[str, Any]:
    """Run a stored benchmark in this process (the worker's and the CLI's path); returns
    the summary it stored. Never raises for failing requests; a run that cannot go on at
    all ends "failed" with its reason in Run.error and the ShootoutError re-raised."""
    from services.client import run_blocking

    spec = load_spec(run_id).validate()
    if not lifecycle.claim(run_id, clear_error=True):
        # Cancelled before its worker got going (or started twice): nothing to run.
        summary = build_summary(spec, _stored_records(run_id), None)
        if lifecycle.status_of(run_id) == RunStatus.CANCELLED:
            _finish(run_id, RunStatus.CANCELLED, summary)
        return summary
    _store_reported_settings(run_id, spec)
    benchmark: Benchmark | None = None
    sink = DatabaseSink(
        run_id, progress=lambda: benchmark.phase_fraction() if benchmark else 0.0
    ).start()
    recording = _start_engine_metrics(run_id, spec, wait_for_metrics_s)

    def stop() -> bool:
        return sink.should_stop() or bool(should_stop and should_stop())

    def progress(fraction: float, message: str) -> None:
        sink.message = message
        if on_progress is not None:
            on_progress(fraction, message)

    benchmark = Benchmark(spec, sink=sink, should_stop=stop, progress=progress, salt=f"run{run_id}")
    outcome: BenchOutcome | None = None
    failure: BaseException | None = None
    try:
        outcome = run_blocking(benchmark.run())
    except BaseException as error:  # noqa: BLE001 - recorded, then re-raised
        failure = error
    finally:
        sink.close()
        if recording is not None:
            recording.stop()
    # The writer kept what it stored; after a write error, read the database instead.
    stored = sink.stored if sink.pending.empty() and sink.last_error is None else _stored_records(run_id)
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


def _finish(run_id: int, status: RunStatus, summary: dict[str, Any], error: str | None = None) -> None:
    lifecycle.finish(run_id, status, summary=summary, error=lifecycle.KEEP if error is None else error)


def _stored_records(run_id: int) -> list[RequestRecord]:
    from sqlalchemy import select

    from db.models import RequestResult
    from db.session import session_scope

    with session_scope() as session:
        rows = session.scalars(
            select(RequestResult).where(RequestResult.run_id == run_id).order_by(RequestResult.id)
        ).all()
        return [record_from_row(row) for row in rows]


# ---------------------------------------------------------------------------------------
# Engine metrics recorded during the run (a child process, so that scraping and parsing
# never hold this process's GIL while it timestamps tokens)
# ---------------------------------------------------------------------------------------


def default_metrics_url(engine: EngineTarget) -> str | None:
    """The engine's metrics URL: the one given, else its kind's path on the server root."""
    if engine.metrics_url:
        return engine.metrics_url
    from services.engines import get_adapter

    path = get_adapter(engine.kind).metrics_path
    if not path:
        return None
    return engine.base_url.rstrip("/").removesuffix("/v1") + path


class _Recording:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def stop(self) -> None:
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=5)


def _start_engine_metrics(run_id: int, spec: BenchSpec, wait_ready_s: float = 0.0) -> _Recording | None:
    """Start the recording child; with `wait_ready_s`, wait (that long at most) until its
    first samples are being taken, so the run's first second has engine metrics too."""
    if not spec.record_engine_metrics:
        return None
    import json
    import select

    targets = [
        {
            "name": e.name,
            "kind": e.kind,
            "base_url": e.base_url,
            "metrics_url": default_metrics_url(e),
            "api_key_env": e.api_key_env,
        }
        for e in spec.engines
    ]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env["SHOOTOUT_DATABASE_URL"] = get_settings().database_url
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.bench.recording", str(run_id), json.dumps(targets)],
            cwd=PROJECT_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    if wait_ready_s > 0 and process.stdout is not None:
        ready, _, _ = select.select([process.stdout], [], [], wait_ready_s)
        if ready:
            process.stdout.readline()
    return _Recording(process)


def engine_metrics_for(run_id: int, engine: str, wall_start: float, wall_end: float) -> dict[str, Any]:
    """Prefix-cache hit rate (weighted by prompt tokens) and KV-cache usage of one engine
    over [wall_start, wall_end], from the samples recorded with the run."""
    from sqlalchemy import select

    from db.models import Sample
    from db.session import session_scope

    with session_scope() as session:
        rows = session.execute(
            select(Sample.ts, Sample.values).where(
                Sample.run_id == run_id,
                Sample.source == f"engine:{engine}",
                Sample.ts >= wall_start,
                Sample.ts <= wall_end + 1.5,
            )
        ).all()
    return summarize_engine_samples([values for _ts, values in rows])


def summarize_engine_samples(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    hits: list[tuple[float, float]] = []
    usage: list[float] = []
    for values in rows:
        if not isinstance(values, dict) or values.get("_error"):
            continue
        rate = values.get("prefix_cache_hit_rate")
        if isinstance(rate, (int, float)):
            weight = values.get("prompt_tokens_per_s")
            hits.append(
                (float(rate), float(weight) if isinstance(weight, (int, float)) and weight > 0 else 0.0)
            )
        kv = values.get("kv_cache_usage")
        if isinstance(kv, (int, float)):
            usage.append(float(kv))
    hit_rate = None
    if hits:
        total_weight = sum(w for _, w in hits)
        hit_rate = (
            (sum(r * w for r, w in hits) / total_weight)
            if total_weight > 0
            else sum(r for r, _ in hits) / len(hits)
        )
    return {
        "prefix_cache_hit_rate": hit_rate,
        "kv_cache_usage_max": max(usage) if usage else None,
        "kv_cache_usage_mean": sum(usage) / len(usage) if usage else None,
        "samples": len(rows),
    }


# ---------------------------------------------------------------------------------------
# The summary (format documented in the README)
# ---------------------------------------------------------------------------------------


METRIC_FIELDS = (
    "completed",
    "failed",
    "sent",
    "errors_by_class",
    "error_rate",
    "duration_s",
    "request_throughput_rps",
    "input_throughput_tok_s",
    "output_throughput_tok_s",
    "total_token_throughput_tok_s",
    "goodput_rps",
    "slo_attainment",
    "ttft_s",
    "tpot_s",
    "itl_s",
    "e2e_s",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "schema_valid_rate",
    "honoured_output_len",
    "engine_metrics",
)


def build_summary(
    spec: BenchSpec,
    records: Sequence[RequestRecord],
    outcome: BenchOutcome | None,
    *,
    run_id: int | None = None,
) -> dict[str, Any]:
    """Run.summary from the stored records (the source of truth), enriched with what the
    runner knew (unsupported options, early stops, SLO search) when it finished."""
    steps_meta: dict[tuple[str, int | None], StepResult] = {}
    if outcome is not None:
        for result in outcome.steps:
            steps_meta[(result.engine, result.step)] = result
    groups: dict[tuple[str, int | None], list[RequestRecord]] = {}
    for record in records:
        groups.setdefault((record.engine, record.step), []).append(record)
    engine_order = [e.name for e in spec.engines]
    per_step: dict[tuple[str, int | None], dict[str, Any]] = {}
    for key, group in groups.items():
        engine, step = key
        meta = steps_meta.get(key)
        window = (meta.outcome.wall_start, meta.outcome.wall_end) if meta else None
        metrics = None
        if run_id is not None and spec.record_engine_metrics and window and window[0]:
            metrics = engine_metrics_for(run_id, engine, window[0], window[1])
        block = summarize_engine(
            group,
            slo=spec.slo,
            percentiles=spec.percentiles,
            fixed_output=spec.workload.uses_fixed_output,
            engine_metrics=metrics,
        )
        if meta is not None:
            block["unsupported_options"] = meta.summary.get("unsupported_options", [])
            block["cancelled"] = meta.summary.get("cancelled", False)
            block["max_streams"] = meta.summary.get("max_streams")
            block["connections_ahead"] = meta.summary.get("connections_ahead")
            block["model"] = meta.summary.get("model")
            block["started_at_unix"] = meta.summary.get("started_at_unix")
            block["generator"] = meta.summary.get("generator") or {}
        per_step[key] = block
    engines: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    sweep = spec.sweep
    if sweep.active:
        dimension = sweep.dimension
        for (engine, step), block in sorted(
            per_step.items(),
            key=lambda item: (
                item[0][1] or 0,
                engine_order.index(item[0][0]) if item[0][0] in engine_order else 99,
            ),
        ):
            meta = steps_meta.get((engine, step))
            level = meta.level if meta else None
            rows.append(
                {
                    "engine": engine,
                    "step": step,
                    dimension: level,
                    "phase": meta.phase if meta else "sweep",
                    **block,
                }
            )
        for name in engine_order:
            candidates = [row for row in rows if row["engine"] == name]
            if not candidates:
                continue
            if (
                sweep.kind == "slo_search"
                and outcome is not None
                and outcome.slo_search.get(name, {}).get("best")
            ):
                best_level = outcome.slo_search[name]["best"]
                chosen = next((r for r in candidates if r.get(dimension) == best_level), candidates[-1])
            else:
                chosen = max(candidates, key=lambda r: r.get("request_throughput_rps") or 0.0)
            engines[name] = {
                **{k: v for k, v in chosen.items() if k not in ("engine", "phase")},
                "from_step": chosen.get("step"),
            }
    else:
        for name in engine_order:
            if (name, None) in per_step:
                engines[name] = per_step[(name, None)]
    for name in engine_order:
        if name not in engines:
            # Never started (a run cancelled before its turn): "not run", never 0 req/s.
            engines[name] = {
                **summarize_engine([], slo=spec.slo, percentiles=spec.percentiles),
                "not_run": True,
            }
    traced = spec.workload.kind == "trace" or spec.workload.length_dist in ("conversation", "code")
    return BenchSummary(
        engines=engines,
        sweep=rows,
        slo_search=dict(outcome.slo_search) if outcome is not None else {},
        stopped_early=dict(outcome.stopped_early) if outcome is not None else {},
        prompt_calibration=outcome.calibration.to_dict()
        if outcome is not None and outcome.calibration is not None
        else {},
        models=outcome.models if outcome is not None else None,
        load=spec.load.label(),
        workload=workload_label(spec.workload),
        percentiles=list(spec.percentiles),
        # Connections are opened ahead (as many as the concurrency) unless asked otherwise, so
        # TTFT excludes connecting, except for requests beyond them (an uncapped open loop).
        ttft_includes_connect=not spec.connect_ahead,
        slo=spec.slo.label() if spec.slo.active else None,
        data_attribution=TRACE_ATTRIBUTION if traced else None,
        engines_run="together" if spec.parallel_engines else "one after another",
        generator=generator_verdict(per_step),
    ).to_json()


def generator_verdict(per_step: dict[tuple[str, int | None], dict[str, Any]]) -> dict[str, Any]:
    """The run's self-check in one place: client-bound when any engine or step was, with
    the evidence of each (engine, step) that was."""
    flagged = []
    for (engine, step), block in per_step.items():
        check = block.get("generator") or {}
        if check.get("client_bound"):
            flagged.append({"engine": engine, "step": step, "evidence": check.get("evidence", [])})
    checked = sum(1 for block in per_step.values() if (block.get("generator") or {}).get("workers"))
    return {"client_bound": bool(flagged), "flagged": flagged, "checked_loads": checked}


# ---------------------------------------------------------------------------------------
# Interrupted runs
# ---------------------------------------------------------------------------------------


def mark_interrupted_runs(stale_after_s: float = STALE_AFTER_S) -> list[int]:
    """Mark benchmark runs whose worker is gone as "interrupted", with the summary of the
    rows they had stored; also finish the summary of cancelled runs whose worker died
    before writing it. Returns the ids changed. Safe to call at every app start."""
    from sqlalchemy import select

    from db.models import Run
    from db.session import session_scope

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
        spec = load_spec(run_id)
        partial = build_summary(spec, _stored_records(run_id), None)
        new_status = RunStatus.CANCELLED if status == RunStatus.CANCELLED else RunStatus.INTERRUPTED
        error = (
            None
            if status == RunStatus.CANCELLED
            else "The benchmark worker stopped without finishing (process gone)."
        )
        _finish(run_id, new_status, partial, error=error)
        changed.append(run_id)
    return changed


# ---------------------------------------------------------------------------------------
# Reading runs back (pages, CLI)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchRunView:
    id: int
    name: str
    status: str
    progress: float
    spec: BenchSpec
    summary: dict[str, Any]
    error: str | None
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    live: dict[str, Any] = field(default_factory=dict)

    @property
    def results(self) -> BenchSummary:
        """The summary, typed (`summary` is the stored JSON, as exports and the API give it)."""
        return BenchSummary.from_json(self.summary)

    @property
    def active(self) -> bool:
        # Cancelled but not yet finished: the worker is still writing what ran (its summary
        # and tables); the page keeps polling instead of showing charts without tables.
        return self.status in ACTIVE_STATUSES or (
            self.status == "cancelled" and self.finished_at is None
        )


def get_run(run_id: int) -> BenchRunView:
    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != KIND:
            raise NotFoundError(f"No benchmark run #{run_id}.")
        summary = dict(run.summary or {})
        live = summary.pop("live", {}) if run.status in ACTIVE_STATUSES else {}
        return BenchRunView(
            id=run.id,
            name=run.name,
            status=run.status,
            progress=run.progress or 0.0,
            spec=BenchSpec.from_dict(run.config or {}),
            summary=summary,
            error=run.error,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            live=live,
        )


@dataclass(frozen=True)
class BenchRunItem:
    id: int
    name: str
    status: str
    progress: float
    engine_names: str
    created_at: datetime | None


def list_runs(limit: int = 50, *, active_only: bool = False) -> list[BenchRunItem]:
    from sqlalchemy import select

    from db.models import Run
    from db.session import session_scope

    query = select(Run.id, Run.name, Run.status, Run.progress, Run.engine_names, Run.created_at).where(
        Run.kind == KIND
    )
    if active_only:
        query = query.where(Run.status.in_(ACTIVE_STATUSES))
    with session_scope() as session:
        rows = session.execute(query.order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)).all()
    return [
        BenchRunItem(r.id, r.name, r.status, r.progress or 0.0, r.engine_names, r.created_at)
        for r in rows
    ]


def load_records(run_id: int, *, with_itl: bool = True) -> list[RequestRecord]:
    """The run's request records (all engines and steps), in the order they finished."""
    if with_itl:
        return _stored_records(run_id)
    from sqlalchemy import select

    from db.models import RequestResult
    from db.session import session_scope

    columns = [
        RequestResult.engine_name,
        RequestResult.index,
        RequestResult.ok,
        RequestResult.warmup,
        RequestResult.scheduled_s,
        RequestResult.start_s,
        RequestResult.ttft_s,
        RequestResult.e2e_s,
        RequestResult.input_tokens,
        RequestResult.output_tokens,
        RequestResult.cached_tokens,
        RequestResult.error_class,
        RequestResult.extra,
    ]
    with session_scope() as session:
        rows = session.execute(
            select(*columns).where(RequestResult.run_id == run_id).order_by(RequestResult.id)
        ).all()
    return [record_from_row(dict(row._mapping)) for row in rows]
