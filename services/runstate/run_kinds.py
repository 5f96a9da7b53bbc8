"""The registry of run kinds: what a worker process executes for each kind, what stopping it
means, what "interrupted" says, and what the kind does for a run whose worker is gone.

Each feature declares its kind in its own `services/<feature>/run_kind.py` (found on disk,
as engine kinds are, so this core module names no feature), and everything that treats runs
alike iterates over the registry: the one worker entry point (`services.runstate.worker`), the
restart recovery below, and the limits' count of active runs.
"""

from __future__ import annotations

import pkgutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import import_module
from importlib.util import find_spec

from sqlalchemy import func, or_, select

import services as package
from db.models import Run
from db.session import session_scope
from services.core.processes import pid_alive, worker_exited
from services.runstate.lifecycle import (
    ACTIVE_STATUSES,
    STALE_AFTER_S,
    RunKind,
    interrupt,
    is_stale,
    now_utc,
    stale_cutoff,
)

#: The worker's body: (run id, "should I stop now?"). The stop flag is set by SIGTERM/SIGINT.
Execute = Callable[[int, Callable[[], bool]], object]


@dataclass(frozen=True)
class RunKindSpec:
    kind: RunKind
    #: How messages name one run: "benchmark run", "tuning run".
    noun: str
    #: What its worker process runs; None for a kind with no worker (imports, recordings).
    execute: Execute | None = None
    #: Called on SIGTERM/SIGINT beside setting the stop flag, for a body that does not poll it.
    stop: Callable[[int], object] | None = None
    #: Stored as the error of a run whose worker is gone; None: restart recovery leaves the
    #: kind to `recover` (or the kind never has a worker).
    interrupted: str | None = None
    #: A kind that must build what its dead worker did not write (a benchmark's summary)
    #: marks its own stale runs here and returns their ids.
    recover: Callable[[float], Sequence[int]] | None = None
    #: Called in the recovery's session for each run marked interrupted (stop the engines a
    #: tuning worker left, mark a playground exchange's streams).
    on_interrupted: Callable[[Run], object] | None = None
    #: Hundreds of concurrent streams need as many sockets.
    many_sockets: bool = False


_SPECS: dict[RunKind, RunKindSpec] = {}


def register(spec: RunKindSpec) -> RunKindSpec:
    known = _SPECS.get(spec.kind)
    if known is not None and known != spec:
        raise ValueError(f"Run kind {spec.kind!s} is declared twice.")
    _SPECS[spec.kind] = spec
    return spec


@cache
def _load() -> None:
    """Import every `services/<feature>/run_kind.py`, which registers its kind."""
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        name = f"{package.__name__}.{info.name}.run_kind"
        if info.ispkg and find_spec(name) is not None:
            import_module(name)


def specs() -> list[RunKindSpec]:
    _load()
    return [_SPECS[kind] for kind in RunKind if kind in _SPECS]


def get(kind: str) -> RunKindSpec | None:
    """The declared kind, None for a name this version does not know."""
    _load()
    try:
        return _SPECS.get(RunKind(kind))
    except ValueError:
        return None


_notice_lock = threading.Lock()
_noticing = threading.local()

#: A worker still alive but silent (a long database lock) is given this many times longer.
ALIVE_GRACE = 11


def interrupt_run(run: Run, now: datetime | None = None) -> None:
    """Mark `run` interrupted as its kind declares: the kind's hook, then its text. The kind's
    own modules call this too, so none of them imports its run_kind.py (which loads them)."""
    spec = get(run.kind)
    if spec is not None and spec.on_interrupted is not None:
        spec.on_interrupted(run)
    interrupt(run, interrupted_text(run.kind), now=now)


def interrupted_text(kind: str) -> str | None:
    """Run.error of a run of `kind` whose worker is gone, as its kind declares it."""
    spec = get(kind)
    return spec.interrupted if spec is not None else None


def _gone(
    pid: int | None, heartbeat_at: datetime | None, created_at: datetime | None, now: datetime
) -> bool:
    if worker_exited(pid):
        return True
    if not is_stale(heartbeat_at, created_at, now=now):
        return False
    return not (
        pid_alive(pid)
        and not is_stale(heartbeat_at, created_at, now=now, stale_after_s=ALIVE_GRACE * STALE_AFTER_S)
    )


def notice_gone_workers(kind: str | None = None) -> list[int]:
    """Mark the active runs (of `kind`, else of every kind with a worker) whose worker is gone
    as interrupted, keeping what they stored, while the server runs: a worker this process
    started that has ended (the OOM killer's SIGKILL), or a run silent for STALE_AFTER_S.
    Called where runs are listed, counted or drawn, so a dead worker neither shows "running"
    nor holds a limit's place until the app restarts. Returns the ids it marked. One thread at
    a time; a kind's hook that reads its runs back (and so calls this again) is not re-entered."""
    if getattr(_noticing, "active", False):
        return []
    with _notice_lock:
        _noticing.active = True
        try:
            return _notice(kind)
        finally:
            _noticing.active = False


def _notice(kind: str | None) -> list[int]:
    specs_by_kind = {
        spec.kind: spec
        for spec in specs()
        if spec.execute is not None and (kind is None or spec.kind == kind)
    }
    if not specs_by_kind:
        return []
    now = now_utc()
    with session_scope() as session:
        candidates = session.execute(
            select(Run.id, Run.worker_pid, Run.heartbeat_at, Run.created_at).where(
                Run.kind.in_(tuple(specs_by_kind)), Run.status.in_(ACTIVE_STATUSES)
            )
        ).all()
    gone = [run_id for run_id, pid, beat, created in candidates if _gone(pid, beat, created, now)]
    marked: list[int] = []
    for run_id in gone:
        with session_scope() as session:
            run = session.get(Run, run_id)
            if run is None or run.status not in ACTIVE_STATUSES:
                continue  # it ended meanwhile
            interrupt_run(run, now=now)
        marked.append(run_id)
    return marked


def count_active(kind: str, requested_by: str | None = None) -> int:
    """Runs of `kind` pending or running now (a run whose worker is gone is marked interrupted
    first), all of them or those one viewer started."""
    notice_gone_workers(kind)
    query = select(func.count(Run.id)).where(Run.kind == kind, Run.status.in_(ACTIVE_STATUSES))
    if requested_by is not None:
        query = query.where(Run.requested_by == requested_by)
    with session_scope() as session:
        return int(session.scalar(query) or 0)


def mark_interrupted_after_restart(stale_after_s: float = STALE_AFTER_S) -> list[int]:
    """Mark runs whose worker is gone as interrupted, kind by kind; returns their ids. Safe to
    call at every start, from several processes."""
    changed: list[int] = []
    generic: dict[str, RunKindSpec] = {}
    for spec in specs():
        if spec.recover is not None:
            changed.extend(spec.recover(stale_after_s))
        elif spec.interrupted is not None:
            generic[spec.kind] = spec
    if not generic:
        return changed
    now = now_utc()
    cutoff = stale_cutoff(now, stale_after_s)
    with session_scope() as session:
        stale = session.scalars(
            select(Run).where(
                Run.kind.in_(tuple(generic)),
                Run.status.in_(ACTIVE_STATUSES),
                or_(
                    Run.heartbeat_at < cutoff,
                    (Run.heartbeat_at.is_(None)) & (Run.created_at < cutoff),
                ),
            )
        ).all()
        for run in stale:
            interrupt_run(run, now=now)
            changed.append(run.id)
    return changed
