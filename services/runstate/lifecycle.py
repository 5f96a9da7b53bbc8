"""What every run shares in its life: its kinds and statuses, and when a silent worker
counts as gone.

Workers (benchmark writer, playground streams, demo runner, Monitor recorder) write
`Run.heartbeat_at` while they work, at least every HEARTBEAT_INTERVAL_S. A pending or
running run whose heartbeat (or, before the first beat, its creation) is older than
STALE_AFTER_S has lost its worker: the app or the command stopped, and the run is shown as
"interrupted" with what it stored. One threshold for all of them, so a run killed with the
app is not "interrupted" on one page and "running" on another.

Every kind writes its life through the same few calls, each one short session (or a step of
the caller's session, where the write belongs with the rows it stores): `claim` (pending ->
running, once), `beat`, `cancel_requested`, `finish` and `interrupt`. What differs by kind
(the worker's body, what "interrupted" says, recovery at app start) is declared once per kind
in services/runstate/run_kinds.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import select, update

from db.models import Run
from db.session import session_scope
from services.core.errors import NotFoundError
from services.core.json_types import JsonOut

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


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
#: It ran to its end: its figures are there to compare.
FINISHED_STATUSES: tuple[RunStatus, ...] = (RunStatus.FINISHED, RunStatus.FINISHED_WITH_ERRORS)


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
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != kind:
            raise NotFoundError(f"No {noun} #{run_id}.")
        if run.status not in ACTIVE_STATUSES:
            return False
        run.status = RunStatus.CANCELLED
        return True


class Keep:
    """The default of `finish`'s optional fields: leave the stored value as it is."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = Keep()

#: Run.error holds a reason for people, not a log.
MAX_ERROR_CHARS = 2000


def now_utc() -> datetime:
    return datetime.now(UTC)


@contextmanager
def _session(session: Session | None) -> Iterator[Session]:
    """The caller's session when it has one (the write joins its transaction), else a new one."""
    if session is not None:
        with nullcontext(session) as given:
            yield given
        return

    with session_scope() as own:
        yield own


def claim(run_id: int, *, clear_error: bool = False, now: datetime | None = None) -> bool:
    """pending -> running for this process, atomically; False when the run is not pending any
    more (cancelled before its worker got going, or claimed by another)."""
    moment = now or now_utc()
    values: JsonOut = {
        "status": RunStatus.RUNNING,
        "worker_pid": os.getpid(),
        "started_at": moment,
        "heartbeat_at": moment,
    }
    if clear_error:
        values["error"] = None
    with _session(None) as session:
        result = session.execute(
            update(Run).where(Run.id == run_id, Run.status == RunStatus.PENDING).values(**values)
        )
    return getattr(result, "rowcount", 0) == 1


def status_of(run_id: int, session: Session | None = None) -> RunStatus | None:
    """The run's stored status; None when the run is gone (deleted under its worker)."""
    with _session(session) as active:
        status = active.scalar(select(Run.status).where(Run.id == run_id))
    return None if status is None else RunStatus(status)


def cancel_requested(run_id: int, session: Session | None = None) -> bool:
    """Whether the worker should stop: someone cancelled the run, or deleted it."""
    return status_of(run_id, session) in (RunStatus.CANCELLED, None)


def beat(
    run_id: int, session: Session | None = None, *, only_running: bool = False, **values: Any
) -> None:
    """The worker's sign of life (with whatever else it writes on each beat: progress, a live
    summary); `only_running` leaves an ended run's row alone."""
    condition = [Run.id == run_id]
    if only_running:
        condition.append(Run.status == RunStatus.RUNNING)
    with _session(session) as active:
        active.execute(update(Run).where(*condition).values(heartbeat_at=now_utc(), **values))


def finish(
    run_id: int,
    status: RunStatus,
    *,
    summary: Any = KEEP,
    error: str | None | Keep = KEEP,
    progress: float | None | Keep = None,
    session: Session | None = None,
    **values: Any,
) -> None:
    """The run's end: its final status, finished_at, and what it leaves (summary, error).
    `progress` None means the usual rule: complete (1.0) unless cancelled, where the bar stays
    where the run stopped; KEEP leaves it alone."""
    moment = now_utc()
    changes: JsonOut = {"status": status, "finished_at": moment, "heartbeat_at": moment}
    if summary is not KEEP:
        changes["summary"] = summary
    if not isinstance(error, Keep):
        changes["error"] = None if error is None else error[:MAX_ERROR_CHARS]
    if progress is None:
        if status != RunStatus.CANCELLED:
            changes["progress"] = 1.0
    elif not isinstance(progress, Keep):
        changes["progress"] = progress
    changes.update(values)
    with _session(session) as active:
        active.execute(update(Run).where(Run.id == run_id).values(**changes))


def interrupt(run: Run, reason: str | None, *, now: datetime | None = None) -> None:
    """Mark one loaded run as interrupted (its worker is gone), keeping what it stored; the
    reason is its kind's (services.runstate.run_kinds). The caller's session writes it."""
    run.status = RunStatus.INTERRUPTED
    run.error = reason
    run.finished_at = run.finished_at or now or now_utc()
