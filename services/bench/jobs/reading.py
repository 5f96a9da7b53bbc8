"""Reading benchmark runs back, for the pages and the CLI: one run, the list, its request records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from db.models import RequestResult, Run
from db.session import session_scope
from services.bench.jobs.starting import KIND
from services.bench.jobs.writer import record_from_row
from services.bench.spec import BenchSpec
from services.bench.stats import RequestRecord
from services.bench.summary import BenchSummary, LiveCounts, live_counts
from services.core.errors import NotFoundError
from services.core.json_types import JsonOut
from services.runstate.lifecycle import ACTIVE_STATUSES, RunStatus
from services.runstate.run_kinds import notice_gone_workers


@dataclass(frozen=True)
class BenchRunView:
    id: int
    name: str
    status: str
    progress: float
    spec: BenchSpec
    #: The stored summary as exports and the API give it (`results` reads it).
    summary: JsonOut
    error: str | None
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    live: LiveCounts = field(default_factory=LiveCounts)

    @property
    def results(self) -> BenchSummary:
        """The summary, typed (`summary` is the stored JSON, as exports and the API give it)."""
        return BenchSummary.from_json(self.summary)

    @property
    def active(self) -> bool:
        # Cancelled but not yet finished: the worker is still writing what ran (its summary
        # and tables); the page keeps polling instead of showing charts without tables.
        return self.status in ACTIVE_STATUSES or (
            self.status == RunStatus.CANCELLED and self.finished_at is None
        )


def get_run(run_id: int) -> BenchRunView:
    notice_gone_workers(KIND)  # a killed worker's run shows interrupted, not running for ever
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != KIND:
            raise NotFoundError(f"No benchmark run #{run_id}.")
        summary: JsonOut = dict(run.summary or {})
        # A running benchmark's counts are its view's, not its summary's.
        stored_live = live_counts(summary.pop("live", None)) if run.status in ACTIVE_STATUSES else None
        live = stored_live if stored_live is not None else LiveCounts()
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
    notice_gone_workers(KIND)
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
        return stored_records(run_id)

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


def stored_records(run_id: int) -> list[RequestRecord]:
    """Every stored request of the run, inter-token gaps included, in the order of its row id."""
    with session_scope() as session:
        rows = session.scalars(
            select(RequestResult).where(RequestResult.run_id == run_id).order_by(RequestResult.id)
        ).all()
        return [record_from_row(row) for row in rows]
