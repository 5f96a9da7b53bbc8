"""One run: everything stored about it, its repeats, and its notes, tags, archive and deletion."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, select
from sqlalchemy.orm import Session

from db.models import Exchange, RequestResult, Run, RunTag, Sample
from db.session import session_scope
from services.errors import NotFoundError, ValidationError
from services.runs.records import (
    FINISHED_STATUSES,
    MAX_REPEATS,
    DeleteResult,
    RunDetail,
    split_engine_names,
)


def _repeat_ids(session: Session, run: Run) -> tuple[int, ...]:
    """Finished runs with the same configuration fingerprint as `run` (itself included)."""
    if not run.config_fingerprint:
        return (run.id,)
    ids = session.scalars(
        select(Run.id)
        .where(Run.config_fingerprint == run.config_fingerprint, Run.status.in_(FINISHED_STATUSES))
        .order_by(Run.created_at.desc())
        .limit(MAX_REPEATS)
    ).all()
    return tuple(sorted(set(ids) | {run.id}))


def get_run(run_id: int) -> RunDetail:
    """Everything stored about one run (not its per-request rows: see compare_runs/reports)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        counts = {
            name: session.scalar(select(func.count()).select_from(model).where(model.run_id == run_id))
            or 0
            for name, model in (
                ("requests", RequestResult),
                ("exchanges", Exchange),
                ("samples", Sample),
            )
        }
        return RunDetail(
            id=run.id,
            kind=run.kind,
            name=run.name or "",
            status=run.status,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            model=run.model,
            workload=run.workload,
            engine_names=split_engine_names(run.engine_names),
            notes=run.notes or "",
            tags=tuple(str(tag) for tag in (run.tags or [])),
            archived=bool(run.archived),
            error=run.error,
            config=dict(run.config or {}),
            summary=dict(run.summary or {}),
            engines=list(run.engines or []),
            request_count=int(counts["requests"]),
            exchange_count=int(counts["exchanges"]),
            sample_count=int(counts["samples"]),
            repeat_ids=_repeat_ids(session, run),
        )


def _clean_tag_list(tags: Iterable[str]) -> list[str]:
    cleaned: list[str] = []
    for tag in tags:
        text = str(tag).strip()
        if not text:
            continue
        if len(text) > 100:
            raise ValidationError(f"Tag {text[:20]!r}… is longer than 100 characters.")
        if "," in text:
            raise ValidationError(f"Tag {text!r} contains a comma; use one tag per entry.")
        if text not in cleaned:
            cleaned.append(text)
    return cleaned


def update_run(
    run_id: int, *, notes: str | None = None, tags: Iterable[str] | None = None, name: str | None = None
) -> RunDetail:
    """Change a run's notes, tags or name (None leaves a field as it is)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        if notes is not None:
            run.notes = notes
        if tags is not None:
            run.tags = _clean_tag_list(tags)
        if name is not None:
            if len(name) > 300:
                raise ValidationError("The name is longer than 300 characters.")
            run.name = name.strip()
    return get_run(run_id)


def set_archived(run_id: int, archived: bool = True) -> None:
    """Archive (hide from the default list, keep everything) or bring back a run."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        run.archived = archived


def delete_run(run_id: int) -> DeleteResult:
    """Delete a run and everything recorded for it. Callers confirm with the user first."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        if run.status in ("pending", "running"):
            raise ValidationError(f"Run #{run_id} is {run.status}; cancel it before deleting it.")
        counts = {}
        # Bulk deletes: a run can own millions of request rows; never load them as objects.
        for name, model in (("requests", RequestResult), ("exchanges", Exchange), ("samples", Sample)):
            # A DML statement's result is a CursorResult, which the Result that execute() is typed to
            # return does not say.
            result = cast(
                CursorResult[Any], session.execute(delete(model).where(model.run_id == run_id))
            )
            counts[name] = result.rowcount or 0
        session.execute(delete(RunTag).where(RunTag.run_id == run_id))
        session.execute(delete(Run).where(Run.id == run_id))
    return DeleteResult(run_id=run_id, **counts)
