"""Tuning runs: stored like every run, executed by a worker that outlives the page.

A tuning run is a `Run(kind="tune")`:

- `config`: the TuneSpec (`TuneSpec.to_dict()`);
- `summary`: {"configs": [one entry per configuration, in sweep order: label, settings,
  status (not_run, starting, running, finished, finished_with_errors, failed_to_start,
  crashed, cancelled), reason, log_tail, pid, port, reported, metrics, sweep],
  "engines": {label: metrics} (what Runs lists and compares), "pareto", "best", "load",
  "workload", "slo"}; the worker rewrites it on every beat, so every viewer sees progress;
- one `RequestResult` per request, `engine_name` = the configuration's label;
- `engines`: one snapshot per configuration that ran (its settings and what it reported).

For each configuration the worker starts the engine on a free port (services/tune/launch.py),
waits until it is healthy (the spec's timeout), reads the settings the engine reports, runs
the benchmark (services/bench/runner/, the same load for each), stops the engine and goes
on. A configuration that fails to start or crashes is stored with its reason and the last
lines of its log; the sweep continues. Cancel (the page's button, `cancel_run`, SIGTERM to
the worker) stops the benchmark in flight and the engine it started; what ran is kept.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select, update

from db.models import RequestResult, Run
from db.session import session_scope
from services.bench.jobs import build_summary, request_row
from services.bench.jobs.executing import energy_meter
from services.bench.results import EngineResults, results_by_engine
from services.bench.runner import Benchmark
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.stats import summarize_engine
from services.bench.summary import BenchSummary
from services.bench.workloads import run_salt, workload_label
from services.client import run_blocking
from services.core.errors import NotFoundError, ShootoutError
from services.core.json_types import JsonOut
from services.core.processes import launch_run_worker, pid_alive
from services.engines.reported import reported_settings
from services.local_engines import state_dir
from services.runstate import lifecycle
from services.runstate.lifecycle import ACTIVE_STATUSES, RunKind, RunStatus, request_cancel
from services.runstate.run_kinds import notice_gone_workers
from services.team import access, limits, owners
from services.tune import launch, pareto
from services.tune.commands import launch_commands
from services.tune.spec import TuneSpec, config_label
from services.tune.summary import BestChoice, CheapestChoice, TuneConfigEntry, TuneSummary

if TYPE_CHECKING:
    from services.bench.stats import RequestRecord
    from services.team.access import Viewer

KIND = RunKind.TUNE
BEAT_S = 0.5
ENDED_CONFIG_STATUSES = ("finished", "finished_with_errors", "failed_to_start", "crashed", "cancelled")


def _now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- creating, starting, cancelling


def create_run(spec: TuneSpec, *, trusted: bool, requested_by: str | None = None) -> int:
    spec = spec.validate(trusted=trusted)
    configs = [_initial(i, spec, own) for i, own in enumerate(spec.expanded())]
    summary = analyse(spec, configs)
    with session_scope() as session:
        run = Run(
            kind=KIND,
            name=spec.label[:300],
            status=RunStatus.PENDING,
            config=spec.to_dict(),
            summary=summary,
            engines=[],
            engine_names=",".join(c["label"] for c in configs)[:1000],
            model=spec.model,
            workload=(TuneSummary.from_json(summary).workload or "")[:100],
            notes=spec.notes,
            tags=["tune"],
            progress=0.0,
            requested_by=requested_by,
        )
        session.add(run)
        session.flush()
        return run.id


def start_tuning(spec: TuneSpec, viewer: Viewer | None = None) -> int:
    """Store the run and start its worker; returns the run id at once. Tuning starts engines on
    the server: an operator's action; command templates also need SHOOTOUT_ALLOW_COMMANDS=1
    (`viewer` None: the CLI, always allowed)."""
    trusted = viewer is None
    if viewer is not None:
        access.require(viewer, "manage_engines")
        trusted = access.commands_allowed(viewer)
    with limits.admitted("tune", viewer) as requested_by:
        run_id = create_run(spec, trusted=trusted, requested_by=requested_by)
    pid = launch_run_worker(KIND, run_id)
    _update(run_id, worker_pid=pid)
    return run_id


def cancel_run(run_id: int, viewer: Viewer | None = None) -> bool:
    """Ask a pending or running tuning run to stop; False when it had ended already. Only its
    owner or an operator (NotOwner); `viewer` None: the CLI on the server."""
    owners.require_control(run_id, viewer, "cancel it")
    return request_cancel(run_id, KIND, "tuning run")


def _update(run_id: int, **values: Any) -> None:
    with session_scope() as session:
        session.execute(update(Run).where(Run.id == run_id).values(**values))


def load_spec(run_id: int) -> TuneSpec:
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != KIND:
            raise NotFoundError(f"No tuning run #{run_id}.")
        return TuneSpec.from_dict(run.config or {})


# ---------------------------------------------------------------- the summary


def _initial(index: int, spec: TuneSpec, own: dict[str, str]) -> TuneConfigEntry:
    return {
        "index": index,
        "label": config_label(own),
        "settings": own,
        "full_settings": spec.full_settings(own),
        "status": "not_run",
        "reason": None,
        "log_tail": None,
        "pid": None,
        "port": None,
        "reported": {},
        "metrics": None,
        "sweep": [],
        "command": None,
    }


def analyse(spec: TuneSpec, configs: list[TuneConfigEntry]) -> JsonOut:
    """The run's summary from its configurations' entries (live and final alike)."""
    engines: dict[str, JsonOut | None] = {}
    for config in configs:
        if config.get("metrics"):
            engines[config["label"]] = config["metrics"]
        else:
            engines[config["label"]] = replace(
                EngineResults.from_json(summarize_engine([], slo=spec.slo)),
                not_run=True,
                extra={"reason": config.get("reason") or config["status"]},
            ).to_json()
    fronts = {
        metric: [p.label for p in pareto.pareto_front(pareto.points_of(configs, metric))]
        for metric in ("ttft_s", "itl_s")
    }
    choice = pareto.best_configuration(configs, spec.slo)
    best: BestChoice = {"label": choice.label, "reason": choice.reason}
    if choice.label is not None:
        winner = next(c for c in configs if c["label"] == choice.label)
        best["settings"] = winner["full_settings"]
        best["launch"] = launch_commands(spec, winner["full_settings"])
    cheap = pareto.cheapest_configuration(configs, spec.slo)
    cheapest: CheapestChoice = {"label": cheap.label, "reason": cheap.reason}
    if cheap.label is not None:
        found = next(c for c in configs if c["label"] == cheap.label)
        cheapest["launch"] = launch_commands(spec, found["full_settings"])
    return TuneSummary(
        configs=configs,
        engines=results_by_engine(engines),
        pareto=fronts,
        best=best,
        kind=spec.kind,
        load=spec.load.label(),
        workload=workload_label(spec.workload),
        slo=spec.slo.label() if spec.slo.active else None,
        conclusion_headline=choice.reason,
        cheapest=cheapest,
    ).to_json()


# ---------------------------------------------------------------- the beat: rows, heartbeat, cancel


class _Beat:
    """Writes request rows, the heartbeat, progress and the live summary from its own thread,
    and reads the cancel flag on the same beat."""

    def __init__(self, run_id: int, spec: TuneSpec, configs: list[TuneConfigEntry]) -> None:
        self.run_id = run_id
        self.spec = spec
        self.configs = configs
        self.pending: queue.SimpleQueue[RequestRecord] = queue.SimpleQueue()
        self.records: dict[str, list[RequestRecord]] = {}
        self.progress = 0.0
        #: While a configuration runs, where it is (its requests answered so far): read on each
        #: beat, so the bar moves during a configuration and not only between them.
        self.live: Callable[[], float] | None = None
        self.cancelled = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"tune-beat-{run_id}", daemon=True)

    def start(self) -> _Beat:
        self._thread.start()
        return self

    def add(self, record: RequestRecord) -> None:
        self.pending.put(record)

    def _loop(self) -> None:
        while not self._stopped.wait(BEAT_S):
            self.flush()

    def flush(self, final_status: RunStatus | None = None) -> None:
        with self._lock:
            batch: list[RequestRecord] = []
            while True:
                try:
                    batch.append(self.pending.get_nowait())
                except queue.Empty:
                    break
            try:
                with session_scope() as session:
                    if batch:
                        session.execute(
                            insert(RequestResult), [request_row(self.run_id, r) for r in batch]
                        )
                    status = lifecycle.status_of(self.run_id, session)
                    summary = analyse(self.spec, self.configs)
                    live = self.live
                    progress = round(live() if live is not None else self.progress, 4)
                    if final_status is None:
                        lifecycle.beat(self.run_id, session, progress=progress, summary=summary)
                    else:
                        # Cancelled: the bar stays where the run stopped.
                        lifecycle.finish(
                            self.run_id,
                            final_status,
                            summary=summary,
                            progress=progress if final_status == RunStatus.CANCELLED else 1.0,
                            session=session,
                        )
            except Exception:  # noqa: BLE001 - keep the rows and try again on the next beat
                for record in batch:
                    self.pending.put(record)
                return
            for record in batch:
                self.records.setdefault(record.engine, []).append(record)
        if status in (RunStatus.CANCELLED, None):
            self.cancelled.set()

    def close(self, final_status: RunStatus) -> None:
        self._stopped.set()
        self._thread.join(timeout=60)
        self.flush(final_status)


# ---------------------------------------------------------------- executing a run


def log_dir() -> Path:
    return state_dir() / "tune"


def execute_run(
    run_id: int,
    *,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[TuneConfigEntry], None] | None = None,
) -> JsonOut:
    """Run a stored tuning run in this process (the worker's and the CLI's path); returns the
    summary it stored. Never raises for a configuration that fails: it is recorded."""
    spec = load_spec(run_id)
    with session_scope() as session:
        run = session.get(Run, run_id)
        configs = TuneSummary.from_json(run.summary).configs if run else []
    if not configs:
        configs = [_initial(i, spec, own) for i, own in enumerate(spec.expanded())]
    if not lifecycle.claim(run_id):
        return analyse(spec, configs)
    beat = _Beat(run_id, spec, configs).start()

    def stop() -> bool:
        return beat.cancelled.is_set() or bool(should_stop and should_stop())

    final = RunStatus.FINISHED
    try:
        for config in configs:
            if stop():
                break
            _run_config(run_id, spec, config, beat, stop, len(configs))
            beat.progress = (config["index"] + 1) / len(configs)
            if on_progress is not None:
                on_progress(config)
    except KeyboardInterrupt:
        final = RunStatus.CANCELLED
        raise
    except BaseException:
        final = RunStatus.FAILED
        raise
    finally:
        if stop() or final == RunStatus.CANCELLED:
            final = RunStatus.CANCELLED
            for config in configs:
                if config["status"] in ("starting", "running"):
                    config["status"] = "cancelled"
        elif final != RunStatus.FAILED and any(c["status"] != "finished" for c in configs):
            final = RunStatus.FINISHED_WITH_ERRORS
        beat.close(final)
    return analyse(spec, configs)


def _run_config(
    run_id: int,
    spec: TuneSpec,
    config: TuneConfigEntry,
    beat: _Beat,
    stop: Callable[[], bool],
    total: int,
) -> None:
    config["status"] = "starting"
    name = f"tune-{run_id}-{config['index']}"
    try:
        engine = launch.start(spec, config["full_settings"], name=name, log_dir=log_dir())
    except ShootoutError as error:
        config.update(
            {
                "status": "failed_to_start",
                "reason": str(error),
                "log_tail": getattr(error, "log_tail", ""),
            }
        )
        return
    config.update({"pid": engine.pid, "port": engine.port, "command": engine.argv})
    try:
        try:
            healthy = launch.wait_healthy(
                engine, spec.start_timeout_s, templated=spec.launcher == "command", should_stop=stop
            )
        except launch.StartFailed as error:
            config.update(
                {"status": "failed_to_start", "reason": error.reason, "log_tail": error.log_tail}
            )
            return
        if not healthy:
            config["status"] = "cancelled"
            return
        config["reported"] = reported_settings(engine.base_url)
        config["status"] = "running"
        bench = BenchSpec(
            engines=(
                EngineTarget(
                    name=config["label"],
                    base_url=engine.base_url,
                    kind=spec.kind,
                    model=spec.model,
                    usd_per_hour=spec.usd_per_hour,
                ),
            ),
            workload=spec.workload,
            load=spec.load,
            slo=spec.slo,
            sweep=spec.sweep,
            timeout_s=spec.request_timeout_s,
            calibrate_prompts=False,
            record_engine_metrics=False,
            name=config["label"],
        ).validate()
        energy = energy_meter(bench)  # each configuration's J per output token, beside its cost
        salt = run_salt(f"tune{run_id}-{config['index']}")
        benchmark = Benchmark(bench, sink=beat, should_stop=stop, salt=salt, energy=energy)

        def where() -> float:
            return (config["index"] + benchmark.phase_fraction()) / total

        beat.live = where  # each beat reads it: the bar moves with every answered request
        try:
            outcome = run_blocking(benchmark.run())
        finally:
            beat.progress = where()  # where a cancel stopped it
            beat.live = None
            energy.close()
        beat.flush()
        records = beat.records.get(config["label"], [])
        summary = BenchSummary.from_json(build_summary(bench, records, outcome))
        block = summary.engine(config["label"])
        # Stored as JSON in the run's summary (the record's own fields would not read back).
        config["metrics"] = None if block is None or block.not_run else block.to_json()
        dimension = bench.sweep.dimension if bench.sweep.active else None
        config["sweep"] = [
            {
                **replace(row, engine=None, phase=None).to_json(),
                "level": _level(row, dimension),
            }
            for row in summary.sweep
        ]
        crashed = engine.exited()
        if crashed is not None:
            how, _ = launch._describe_exit(crashed)
            config.update(
                {
                    "status": "crashed",
                    "reason": f"the engine exited during the benchmark ({how})",
                    "log_tail": engine.log_tail(),
                }
            )
        elif outcome.cancelled or stop():
            config["status"] = "cancelled"
        else:
            failed = block.failed if block is not None and not block.not_run else 0
            config["status"] = "finished_with_errors" if failed else "finished"
            if failed:
                config["reason"] = f"{failed} requests failed"
    finally:
        launch.stop(engine)
        _snapshot(run_id, spec, config, engine)


def _level(row: EngineResults, dimension: str | None) -> float | int | None:
    """A sweep row's load level in the dimension the sweep varied."""
    return row.concurrency if dimension == "concurrency" else row.rate if dimension == "rate" else None


def _snapshot(
    run_id: int, spec: TuneSpec, config: TuneConfigEntry, engine: launch.StartedEngine
) -> None:
    """Run.engines: each configuration as an engine snapshot (Compare's settings table)."""
    reported = config.get("reported") or {}
    snapshot = {
        "name": config["label"],
        "kind": spec.kind,
        "base_url": engine.base_url,
        "model": spec.model,
        "version": reported.get("version"),
        "settings": config["full_settings"],
        "reported": reported,
    }
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is not None:
            run.engines = [*(run.engines or []), snapshot]


# ---------------------------------------------------------------- reading runs back


@dataclass(frozen=True)
class TuneRunView:
    id: int
    name: str
    status: str
    progress: float
    spec: TuneSpec
    #: The summary as stored (`results` reads it).
    summary: JsonOut
    error: str | None
    created_at: datetime | None
    finished_at: datetime | None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES or (
            self.status == RunStatus.CANCELLED and self.finished_at is None
        )

    @property
    def results(self) -> TuneSummary:
        """The summary, typed (`summary` is the stored JSON)."""
        return TuneSummary.from_json(self.summary)

    @property
    def configs(self) -> list[TuneConfigEntry]:
        return self.results.configs


def get_run(run_id: int) -> TuneRunView:
    notice_gone_workers(KIND)  # a killed worker's run shows interrupted, its engine stopped
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != KIND:
            raise NotFoundError(f"No tuning run #{run_id}.")
        return TuneRunView(
            id=run.id,
            name=run.name,
            status=run.status,
            progress=run.progress or 0.0,
            spec=TuneSpec.from_dict(run.config or {}),
            summary=dict(run.summary or {}),
            error=run.error,
            created_at=run.created_at,
            finished_at=run.finished_at,
        )


def list_runs(limit: int = 30) -> list[tuple[int, str, str]]:
    """(id, name, status) of the latest tuning runs, newest first."""
    notice_gone_workers(KIND)
    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.name, Run.status)
            .where(Run.kind == KIND)
            .order_by(Run.created_at.desc(), Run.id.desc())
            .limit(limit)
        ).all()
    return [(r.id, r.name, r.status) for r in rows]


def stop_leftover_engines(run_id: int) -> list[int]:
    """After a tuning worker died (killed, the machine restarted the app): stop the engine it was
    running, if that process still runs and is still the one started (its command line holds
    the configuration's port, so a reused PID is left alone); returns the PIDs stopped."""

    stopped: list[int] = []
    for config in get_run(run_id).configs:
        pid, port = config.get("pid"), config.get("port")
        if (
            config.get("status") not in ("starting", "running")
            or not isinstance(pid, int)
            or not pid_alive(pid)
            or not port
        ):
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(port).encode() not in command:
            continue
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            continue
        stopped.append(pid)
    return stopped
