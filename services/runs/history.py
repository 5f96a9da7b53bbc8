"""The history list: every stored run, filtered and counted by the database, a page at a time."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any, TypeVarTuple

from sqlalchemy import ColumnElement, Select, and_, exists, func, literal, not_, or_, select

from db.models import Run, RunTag
from db.session import session_scope
from services.bench.summary import BenchSummary
from services.core.errors import ValidationError
from services.runs.records import (
    MAX_PAGE_SIZE,
    RUN_KINDS,
    RUN_SORTS,
    FilterOptions,
    RunFilter,
    RunListItem,
    RunPage,
    RunSort,
    format_value,
    split_engine_names,
)
from services.runstate import blind
from services.runstate.run_kinds import notice_gone_workers

#: The columns a filtered query selects, kept through the filter.
_Row = TypeVarTuple("_Row")


def _utc(value: date | None, end_of_day: bool = False) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.combine(value, time.max if end_of_day else time.min, tzinfo=UTC)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _filtered(query: Select[*_Row], filters: RunFilter) -> Select[*_Row]:
    conditions: list[ColumnElement[bool]] = []
    if filters.kinds:
        unknown = set(filters.kinds) - set(RUN_KINDS)
        if unknown:
            raise ValidationError(
                f"Unknown run kind(s): {', '.join(sorted(unknown))}. Known: {', '.join(RUN_KINDS)}."
            )
        conditions.append(Run.kind.in_(filters.kinds))
    if filters.engine:
        wrapped = literal(",") + Run.engine_names + literal(",")
        conditions.append(wrapped.like(f"%,{_like_escape(filters.engine.strip())},%", escape="\\"))
    if filters.model:
        conditions.append(Run.model == filters.model)
    if filters.engine or filters.model:
        # A hidden blind exchange found by an engine's name would name that engine.
        conditions.append(not_(blind.hidden_clause()))
    if filters.workload:
        conditions.append(Run.workload == filters.workload)
    if filters.tag:
        conditions.append(
            exists().where(and_(RunTag.run_id == Run.id, RunTag.tag == filters.tag.strip()))
        )
    since, until = _utc(filters.since), _utc(filters.until, end_of_day=True)
    if since and until and since > until:
        raise ValidationError("The start date is after the end date.")
    if since:
        conditions.append(Run.created_at >= since)
    if until:
        conditions.append(Run.created_at <= until)
    if filters.text and filters.text.strip():
        pattern = f"%{_like_escape(filters.text.strip())}%"
        conditions.append(
            or_(Run.name.ilike(pattern, escape="\\"), Run.notes.ilike(pattern, escape="\\"))
        )
    if filters.archived == "hide":
        conditions.append(Run.archived.is_(False))
    elif filters.archived == "only":
        conditions.append(Run.archived.is_(True))
    return query.where(*conditions) if conditions else query


def headline(kind: str, summary: BenchSummary) -> str:
    """One short line per run for the list: each engine's median TTFT and output rate
    (a demo: the first line of its measured conclusion)."""
    summary = BenchSummary.from_json(summary)  # a stored summary passed as it is reads too
    conclusion = summary.extra.get("conclusion_headline")
    if isinstance(conclusion, str) and conclusion:
        return conclusion if len(conclusion) <= 160 else conclusion[:159] + "…"
    engines = summary.engines
    if not engines:
        return ""
    parts = []
    for name, numbers in list(engines.items())[:4]:
        if numbers.not_run:
            parts.append(f"{name}: not run")
            continue
        bits = []
        ttft = numbers.ttft_s.p50 if numbers.ttft_s is not None else None
        if ttft is not None:
            bits.append(f"TTFT p50 {format_value('ttft_s', ttft)}")
        rate = numbers.output_throughput_tok_s
        if rate is not None:
            bits.append(format_value("output_throughput_tok_s", rate))
        if numbers.failed:
            bits.append(f"{numbers.failed} failed")
        if bits:
            parts.append(f"{name}: " + ", ".join(bits))
    more = len(engines) - 4
    return "; ".join(parts) + (f"; +{more} more" if more > 0 else "")


def best_results(summary: BenchSummary) -> tuple[float | None, float | None]:
    """The run's best output rate (tokens/s, highest) and best median TTFT (s, lowest) over
    its engines; None for a figure no engine reported."""
    rates, ttfts = [], []
    for numbers in BenchSummary.from_json(summary).engines.values():
        if numbers.not_run:
            continue
        rates.append(numbers.output_throughput_tok_s)
        ttfts.append(numbers.ttft_s.p50 if numbers.ttft_s is not None else None)
    known_rates = [r for r in rates if r is not None]
    known_ttfts = [t for t in ttfts if t is not None]
    return (max(known_rates) if known_rates else None, min(known_ttfts) if known_ttfts else None)


def _ranked_ids(session: Any, filters: RunFilter, sort: RunSort) -> list[int]:
    """Every matching run's number, best result first. The figures live inside the summary's
    JSON, per engine, which SQLite and PostgreSQL would each need their own JSON functions to
    reach, so the ranking is done here over (id, summary) rows; runs without the figure keep
    the newest-first order after those with it."""
    query = _filtered(select(Run.id, Run.summary), filters).order_by(
        Run.created_at.desc(), Run.id.desc()
    )
    figures = []
    for row in session.execute(query):
        rate, ttft = best_results(BenchSummary.from_json(row.summary))
        figures.append((row.id, rate if sort == "output_tok_s" else ttft))
    # A stable sort: equal figures and the runs without one stay newest first.
    higher_first = sort == "output_tok_s"
    figures.sort(
        key=lambda pair: (
            pair[1] is None,
            0.0 if pair[1] is None else (-pair[1] if higher_first else pair[1]),
        )
    )
    return [run_id for run_id, _ in figures]


def list_runs(
    filters: RunFilter | None = None, page: int = 1, page_size: int = 50, sort: RunSort = "newest"
) -> RunPage:
    """One page of runs, newest first (or best result first, `sort`), and how many match in all."""
    filters = filters or RunFilter()
    if page_size < 1 or page_size > MAX_PAGE_SIZE:
        raise ValidationError(f"Page size must be between 1 and {MAX_PAGE_SIZE}.")
    if sort not in RUN_SORTS:
        raise ValidationError(f"Unknown order {sort!r}. Known: {', '.join(RUN_SORTS)}.")
    page = max(1, int(page))
    notice_gone_workers()  # every kind's runs whose worker is gone show interrupted
    columns = (
        Run.id,
        Run.kind,
        Run.name,
        Run.status,
        Run.created_at,
        Run.engine_names,
        Run.model,
        Run.workload,
        Run.tags,
        Run.notes,
        Run.archived,
        Run.summary,
    )
    offset = (page - 1) * page_size
    with session_scope() as session:
        total = session.scalar(_filtered(select(func.count(Run.id)), filters)) or 0
        if sort == "newest":
            query = _filtered(select(*columns), filters).order_by(Run.created_at.desc(), Run.id.desc())
            rows = list(session.execute(query.limit(page_size).offset(offset)).all())
        else:
            wanted = _ranked_ids(session, filters, sort)[offset : offset + page_size]
            found = {row.id: row for row in session.execute(select(*columns).where(Run.id.in_(wanted)))}
            rows = [found[run_id] for run_id in wanted if run_id in found]
        hidden = blind.hidden_ids(session, [row.id for row in rows])
    items = []
    for row in rows:
        if row.id in hidden:
            items.append(_hidden_item(row))
            continue
        results = BenchSummary.from_json(row.summary)
        rate, ttft = best_results(results)
        items.append(
            RunListItem(
                id=row.id,
                kind=row.kind,
                name=row.name or "",
                status=row.status,
                created_at=row.created_at,
                engine_names=split_engine_names(row.engine_names),
                model=row.model,
                workload=row.workload,
                tags=tuple(str(tag) for tag in (row.tags or [])),
                notes=row.notes or "",
                archived=bool(row.archived),
                headline=headline(row.kind, results),
                best_output_tok_s=rate,
                best_ttft_p50_s=ttft,
            )
        )
    return RunPage(items=items, total=int(total), page=page, page_size=page_size)


def _hidden_item(row: Any) -> RunListItem:
    """A blind exchange before its reveal in the list: its prompt, no engine, model or figure."""
    return RunListItem(
        id=row.id,
        kind=row.kind,
        name=row.name or "",
        status=row.status,
        created_at=row.created_at,
        engine_names=(),
        model=None,
        workload=row.workload,
        tags=tuple(str(tag) for tag in (row.tags or [])),
        notes=row.notes or "",
        archived=bool(row.archived),
        headline=f"blind exchange: {blind.HIDDEN_NOTE}",
    )


def filter_options() -> FilterOptions:
    """The values the history filters offer (distinct kinds, engines, models, workloads, tags)."""
    with session_scope() as session:
        kinds = sorted(session.scalars(select(Run.kind).distinct()).all())
        # A name offered only by a hidden blind exchange would say it took part.
        shown = not_(blind.hidden_clause())
        engine_sets = session.scalars(select(Run.engine_names).where(shown).distinct()).all()
        models = sorted(m for m in session.scalars(select(Run.model).where(shown).distinct()).all() if m)
        workloads = sorted(w for w in session.scalars(select(Run.workload).distinct()).all() if w)
        tags = sorted(session.scalars(select(RunTag.tag).distinct()).all())
    engines = sorted({name for names in engine_sets for name in split_engine_names(names)})
    return FilterOptions(kinds=kinds, engines=engines, models=models, workloads=workloads, tags=tags)
