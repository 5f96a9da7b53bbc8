"""What every run shares in its life: its kinds and statuses, and when a silent worker
counts as gone.

Workers (benchmark writer, playground streams, demo runner, Monitor recorder) write
`Run.heartbeat_at` while they work, at least every HEARTBEAT_INTERVAL_S. A pending or
running run whose heartbeat (or, before the first beat, its creation) is older than
STALE_AFTER_S has lost its worker: the app or the command stopped, and the run is shown as
"interrupted" with what it stored. One threshold for all of them, so a run killed with the
app is not "interrupted" on one page and "running" on another.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum

#: The longest any worker goes between two heartbeats (the demo's beat thread, the
#: playground's idle beat); the slowest other writers beat every second or faster.
HEARTBEAT_INTERVAL_S = 5.0
#: Six missed beats: long enough for a loaded 2-core machine or a long database write,
#: short enough that a crashed run stops saying "running" within half a minute.
STALE_AFTER_S = 30.0


class RunKind(StrEnum):
    BENCHMARK = "benchmark"
    PLAYGROUND = "playground"
    RECORDING = "recording"
    DEMO = "demo"
    IMPORT = "import"
    TUNE = "tune"
    PARITY = "parity"


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    FINISHED_WITH_ERRORS = "finished_with_errors"
    CANCELLED = "cancelled"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


#: A worker is (or should be) on it.
ACTIVE_STATUSES: tuple[RunStatus, ...] = (RunStatus.PENDING, RunStatus.RUNNING)


def utc(moment: datetime | None) -> datetime | None:
    """A stored time as an aware UTC datetime (SQLite hands back naive ones)."""
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def last_sign_of_life(heartbeat_at: datetime | None, created_at: datetime | None) -> datetime | None:
    return utc(heartbeat_at) or utc(created_at)


def stale_cutoff(now: datetime | None = None, stale_after_s: float = STALE_AFTER_S) -> datetime:
    """Heartbeats before this moment are stale."""
    return (now or datetime.now(UTC)) - timedelta(seconds=stale_after_s)


def is_stale(
    heartbeat_at: datetime | None,
    created_at: datetime | None,
    *,
    now: datetime | None = None,
    stale_after_s: float = STALE_AFTER_S,
) -> bool:
    """Whether a run's worker has been silent for longer than the threshold (a run with
    neither time has never shown a sign of life: stale)."""
    last = last_sign_of_life(heartbeat_at, created_at)
    return last is None or last < stale_cutoff(now, stale_after_s)


def request_cancel(run_id: int, kind: str, noun: str) -> bool:
    """Ask a pending or running run of `kind` to stop: its worker sees the status at its next
    check, stops, and keeps what it measured. False when it had ended already; NotFoundError
    ("No {noun} #N.") when there is no such run of that kind."""
    from db.models import Run
    from db.session import session_scope
    from services.errors import NotFoundError

    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != kind:
            raise NotFoundError(f"No {noun} #{run_id}.")
        if run.status not in ACTIVE_STATUSES:
            return False
        run.status = RunStatus.CANCELLED
        return True
