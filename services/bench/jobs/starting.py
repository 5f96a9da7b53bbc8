"""Creating and starting benchmark runs: the stored run, its worker process, the cancel request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from db.models import Run
from db.session import session_scope
from services.bench import limits as bench_limits
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.workloads import workload_label
from services.core.processes import launch_run_worker
from services.engines.endpoints import get_engine
from services.engines.reported import reported_settings
from services.runstate.lifecycle import RunKind, RunStatus, request_cancel
from services.team import limits, owners

if TYPE_CHECKING:
    from services.team.access import Viewer

KIND = RunKind.BENCHMARK


def engine_target(name: str) -> EngineTarget:
    """A registered engine as a benchmark target (NotFoundError when unknown)."""
    return EngineTarget.from_record(get_engine(name))


def create_run(spec: BenchSpec, requested_by: str | None = None) -> int:
    """Validate `spec` and store it as a pending benchmark run; returns the run id."""
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
            status=RunStatus.PENDING,
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
    the server's or this viewer's limit of benchmarks runs (services/team/limits.py)."""
    if viewer is not None:  # from the page; the CLI on the server is the operator's own
        bench_limits.check_benchmark(spec.validate(), viewer)
    with limits.admitted("benchmark", viewer) as requested_by:
        run_id = create_run(spec, requested_by=requested_by)
    launch_worker(run_id)
    return run_id


def launch_worker(run_id: int) -> int:
    """Start its worker process (`python -m services.runstate.worker benchmark RUN_ID`); returns its pid."""
    pid = launch_run_worker(KIND, run_id)
    update_run(run_id, worker_pid=pid)
    return pid


def cancel_run(run_id: int, viewer: Viewer | None = None) -> bool:
    """Ask a pending or running benchmark to stop; False when it had ended already. Only its
    owner or an operator (NotOwner); `viewer` None: the CLI on the server."""
    owners.require_control(run_id, viewer, "cancel it")
    return request_cancel(run_id, KIND, "benchmark run")


def update_run(run_id: int, **values: Any) -> None:
    """Set these columns of one stored run, in one session."""
    with session_scope() as session:
        session.execute(update(Run).where(Run.id == run_id).values(**values))


def store_reported_settings(run_id: int, spec: BenchSpec) -> None:
    """Each engine's own account of its settings, kept in Run.engines for Compare. Its
    reads end within the run's request timeout too, where that is under their own 5 s."""
    deadline_s = min(5.0, spec.timeout_s)
    reported = {
        e.name: reported_settings(e.base_url, e.metrics_url, e.api_key_env, deadline_s)
        for e in spec.engines
    }
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            return
        run.engines = [
            {**item, "reported": reported.get(item.get("name"), {})} for item in (run.engines or [])
        ]
