"""After a restart: no run is left "running" forever.

A worker (benchmark, playground stream, demo, recording) writes a heartbeat while it
works. When the app starts, runs that still say running or pending but whose heartbeat
stopped are marked "interrupted"; what they stored (request rows, partial answers,
samples, finished demo steps) stays.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import or_, select, update

from db.models import Exchange, Run
from db.session import session_scope
from services.lifecycle import ACTIVE_STATUSES, STALE_AFTER_S, RunKind, RunStatus, stale_cutoff

REASONS = {
    RunKind.PLAYGROUND: "The app stopped while this exchange was streaming; the partial answers are kept.",
    RunKind.DEMO: "The demo's worker stopped (the app was restarted); the steps measured so far are kept.",
    RunKind.RECORDING: "The recording stopped with the app; the samples recorded so far are kept.",
    RunKind.TUNE: "The tuning worker stopped without finishing; the configurations measured so far are kept.",
    RunKind.PARITY: "The parity run's worker stopped (the app was restarted); the answers stored so far are kept.",
}


def recover_interrupted_runs(stale_after_s: float = STALE_AFTER_S) -> list[int]:
    """Mark runs whose worker is gone as interrupted; returns their ids. Safe to call at
    every start, from several processes."""
    from services.bench.jobs import mark_interrupted_runs

    changed = list(mark_interrupted_runs(stale_after_s))
    now = datetime.now(UTC)
    cutoff = stale_cutoff(now, stale_after_s)
    with session_scope() as session:
        stale = session.scalars(
            select(Run).where(
                Run.kind.in_(tuple(REASONS)),
                Run.status.in_(ACTIVE_STATUSES),
                or_(Run.heartbeat_at < cutoff, (Run.heartbeat_at.is_(None)) & (Run.created_at < cutoff)),
            )
        ).all()
        for run in stale:
            if run.kind == RunKind.TUNE:
                from services.tune.jobs import stop_leftover_engines

                stop_leftover_engines(run.id)  # a dead tuning worker leaves no engine running
            run.status = RunStatus.INTERRUPTED
            run.error = REASONS[RunKind(run.kind)]
            run.finished_at = run.finished_at or now
            changed.append(run.id)
        if stale:
            session.execute(
                update(Exchange)
                .where(Exchange.run_id.in_([r.id for r in stale]), Exchange.status == "streaming")
                .values(status="interrupted")
            )
    return changed
