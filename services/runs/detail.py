"""One run: everything stored about it, its repeats, and its notes, tags, archive and deletion."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, select
from sqlalchemy.orm import Session

from db.models import Exchange, RequestResult, Run, RunTag, Sample
from db.session import session_scope
from services.core.errors import NotFoundError, ValidationError
from services.runs.records import (
    MAX_REPEATS,
    DeleteResult,
    RunDetail,
    split_engine_names,
)
from services.runstate import blind
from services.runstate.lifecycle import FINISHED_STATUSES
from services.runstate.stored import stored_engines
from services.team import owners
from services.team.access import Viewer


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
        detail = RunDetail(
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
            engines=stored_engines(run.engines),
            request_count=int(counts["requests"]),
            exchange_count=int(counts["exchanges"]),
            sample_count=int(counts["samples"]),
            repeat_ids=_repeat_ids(session, run),
            requested_by=run.requested_by,
        )
        return _blinded(detail) if blind.run_hidden(session, run) else detail


#: What a hidden exchange's stored config may show: the prompt and the sampling, no engine.
_BLIND_CONFIG_KEYS = ("conversation_id", "turn", "prompt", "system", "params", "schema", "blind")


def _blinded(detail: RunDetail) -> RunDetail:
    """A blind exchange before its reveal, as every reader outside the Playground gets it: no
    engine names, no model (engines may serve different ones), no summary, no error text
    (it may quote an engine), the stored config without its engines or order."""
    return replace(
        detail,
        engine_names=(),
        model=None,
        error="An answer failed." if detail.error else None,
        config={key: detail.config[key] for key in _BLIND_CONFIG_KEYS if key in detail.config},
        summary={},
        engines=[],
        hidden=True,
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


def may_change(requested_by: str | None, viewer: Viewer | None) -> bool:
    """Whether `viewer` may rename, annotate or archive a run that `requested_by` started: an
    operator (or the CLI on the server, None) any run, a viewer only their own
    (services/team/owners.py, the rule of the stop buttons too)."""
    return owners.may_control(requested_by, viewer)


def _require_owner(run: Run, viewer: Viewer | None) -> None:
    if may_change(run.requested_by, viewer):
        return
    raise owners.NotOwner(
        f"{owners.whose(run.id, run.requested_by)}; a viewer may rename, annotate, tag or archive "
        "only the runs they started."
    )


def update_run(
    run_id: int,
    *,
    notes: str | None = None,
    tags: Iterable[str] | None = None,
    name: str | None = None,
    viewer: Viewer | None = None,
) -> RunDetail:
    """Change a run's notes, tags or name (None leaves a field as it is). `viewer` None: the
    CLI on the server, which may change any run."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        _require_owner(run, viewer)
        if notes is not None:
            run.notes = notes
        if tags is not None:
            run.tags = _clean_tag_list(tags)
        if name is not None:
            if len(name) > 300:
                raise ValidationError("The name is longer than 300 characters.")
            run.name = name.strip()
    return get_run(run_id)


def set_archived(run_id: int, archived: bool = True, viewer: Viewer | None = None) -> None:
    """Archive (hide from the default list, keep everything) or bring back a run."""
    archive_runs([run_id], archived, viewer)


def archive_runs(run_ids: Sequence[int], archived: bool = True, viewer: Viewer | None = None) -> None:
    """set_archived of several runs, all or none: every run is checked before any changes."""
    with session_scope() as session:
        found = []
        for run_id in run_ids:
            run = session.get(Run, run_id)
            if run is None:
                raise NotFoundError(f"Run #{run_id} does not exist.")
            _require_owner(run, viewer)
            found.append(run)
        for run in found:
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
