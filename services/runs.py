"""Run history and run comparison: what a team measured, and what changed.

History: every stored run (benchmark, playground, recording, demo, import), filtered by
kind, engine, model, workload, date and tag, a page at a time (the database does the
filtering and counting; at most one page of runs is ever loaded). Notes, tags, archive
and delete.

Comparison: 1 to N runs become *series*, one per (run, engine) pair, because one
benchmark run may measure several engines. For each latency metric (TTFT, TPOT, ITL,
end-to-end) and each statistic, the table gives every series' value, its difference from
the baseline series and the per cent change, marked better or worse. One verdict line per
metric says which series wins and by how much, and whether the difference is beyond noise:

* with repeated runs (other runs of the same configuration on the same engine version),
  a Welch t-test on the per-run values says whether the gap is beyond run-to-run noise;
* without repeats but with per-request samples, a bootstrap confidence interval of the
  difference says whether it is beyond within-run sampling noise (run-to-run noise unknown);
* otherwise the noise is unknown, and the line says so.

Statistics are taken from the run's stored summary (what the benchmark or the imported
tool reported) and computed from the per-request rows only where the summary lacks them.
All times are in seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any, Literal

import numpy as np
import orjson
from sqlalchemy import Select, Text, and_, cast, delete, exists, func, literal, or_, select
from sqlalchemy.orm import Session

from db.models import Exchange, RequestResult, Run, RunTag, Sample
from db.session import session_scope
from services.errors import NotFoundError, ValidationError
from services.lifecycle import RunKind
from services.measure import describe, percentile

__all__ = [
    "LATENCY_METRICS",
    "RUN_KINDS",
    "STATS",
    "THROUGHPUT_METRICS",
    "Comparison",
    "DeleteResult",
    "FilterOptions",
    "MetricRow",
    "NoiseCheck",
    "RunDetail",
    "RunFilter",
    "RunListItem",
    "RunPage",
    "Series",
    "SettingRow",
    "Verdict",
    "compare_runs",
    "delete_run",
    "filter_options",
    "format_value",
    "get_run",
    "list_runs",
    "parse_run_ids",
    "set_archived",
    "update_run",
]

RUN_KINDS = tuple(kind.value for kind in RunKind)
LATENCY_METRICS: dict[str, str] = {
    "ttft_s": "TTFT",
    "tpot_s": "TPOT",
    "itl_s": "ITL",
    "e2e_s": "E2E latency",
}
#: Throughput-like metrics of an engine summary: label, unit. Higher is better.
THROUGHPUT_METRICS: dict[str, tuple[str, str]] = {
    "request_throughput_rps": ("Request throughput", "req/s"),
    "output_throughput_tok_s": ("Output throughput", "tok/s"),
    "total_token_throughput_tok_s": ("Total token throughput", "tok/s"),
    "goodput_rps": ("Goodput", "req/s"),
}
#: Answer quality of a parity run's engine summary (services/parity): label. Shares, higher is better.
QUALITY_METRICS: dict[str, str] = {
    "task_score": "Task score",
    "exact_match_rate": "Exact match vs the reference",
    "token_agreement_mean": "Token agreement vs the reference",
}
STATS = ("mean", "p50", "p90", "p95", "p99", "min", "max")
TABLE_STATS = ("mean", "p50", "p90", "p95", "p99")
STAT_LABELS = {
    "mean": "mean",
    "p50": "p50",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "min": "min",
    "max": "max",
}
FINISHED_STATUSES = ("finished", "finished_with_errors")
MAX_PAGE_SIZE = 500
MAX_COMPARED_RUNS = 12
MAX_REPEATS = 30
#: Below this relative difference two values are called equal, not better or worse.
EQUAL_TOLERANCE = 0.005
NOISE_P_VALUE = 0.05
BOOTSTRAP_RESAMPLES = 300
BOOTSTRAP_MAX_SAMPLES = 4000
MIN_BOOTSTRAP_SAMPLES = 20
#: Per-request values loaded per series; beyond this, every k-th request (see _load_samples).
MAX_SAMPLES_PER_SERIES = 20_000
SETTING_VALUE_MAX_CHARS = 300


# ---------------------------------------------------------------- records


@dataclass(frozen=True)
class RunFilter:
    """What the history list shows. Empty fields do not filter."""

    kinds: tuple[str, ...] = ()
    engine: str | None = None
    model: str | None = None
    workload: str | None = None
    tag: str | None = None
    since: date | None = None
    until: date | None = None
    text: str | None = None
    archived: Literal["hide", "include", "only"] = "hide"


@dataclass(frozen=True)
class RunListItem:
    id: int
    kind: str
    name: str
    status: str
    created_at: datetime
    engine_names: tuple[str, ...]
    model: str | None
    workload: str | None
    tags: tuple[str, ...]
    notes: str
    archived: bool
    headline: str

    @property
    def label(self) -> str:
        return f"#{self.id} {self.name or self.kind}"


@dataclass(frozen=True)
class RunPage:
    items: list[RunListItem]
    total: int
    page: int
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.page_size))


@dataclass(frozen=True)
class FilterOptions:
    kinds: list[str]
    engines: list[str]
    models: list[str]
    workloads: list[str]
    tags: list[str]


@dataclass(frozen=True)
class RunDetail:
    id: int
    kind: str
    name: str
    status: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    model: str | None
    workload: str | None
    engine_names: tuple[str, ...]
    notes: str
    tags: tuple[str, ...]
    archived: bool
    error: str | None
    config: dict[str, Any]
    summary: dict[str, Any]
    engines: list[dict[str, Any]]
    request_count: int
    exchange_count: int
    sample_count: int
    repeat_ids: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"#{self.id} {self.name or self.kind}"


@dataclass(frozen=True)
class DeleteResult:
    run_id: int
    requests: int
    exchanges: int
    samples: int


@dataclass
class Series:
    """One engine of one run, as the comparison sees it."""

    run_id: int
    engine: str
    label: str
    run_name: str
    kind: str
    created_at: datetime
    model: str | None
    workload: str | None
    #: metric -> statistic -> value (seconds for latencies)
    stats: dict[str, dict[str, float]]
    #: throughput metric -> value
    rates: dict[str, float]
    completed: int | None
    failed: int | None
    #: metric -> per-request values of successful, non-warm-up requests (ITL: every gap)
    samples: dict[str, np.ndarray]
    sweep: list[dict[str, Any]]
    engine_info: dict[str, Any]
    #: 1 when `samples` holds every request, k when it holds every k-th (very large runs)
    sampled_every: int = 1
    repeat_run_ids: tuple[int, ...] = ()
    #: "metric.stat" -> one value per repeated run (this run included)
    repeat_values: dict[str, list[float]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.run_id}:{self.engine}"

    @property
    def multi_step(self) -> bool:
        """A sweep: its requests span several load steps, its headline numbers one step."""
        return len(self.sweep) > 1


@dataclass(frozen=True)
class MetricRow:
    metric: str
    stat: str | None
    label: str
    unit: str
    higher_is_better: bool
    values: tuple[float | None, ...]
    #: value - baseline, per series (None for the baseline or a missing value)
    deltas: tuple[float | None, ...]
    #: per cent change against the baseline
    changes: tuple[float | None, ...]
    #: "better", "worse", "same" or None, per series
    marks: tuple[str | None, ...]


@dataclass(frozen=True)
class NoiseCheck:
    status: Literal["beyond", "within", "unknown"]
    method: Literal["repeats", "bootstrap", "none"]
    detail: str


@dataclass(frozen=True)
class Verdict:
    metric: str
    label: str
    text: str
    winner: str | None
    runner_up: str | None
    #: how many times better the winner is (latency: slower/faster; throughput: higher/lower)
    factor: float | None
    noise: NoiseCheck


@dataclass(frozen=True)
class SettingRow:
    key: str
    values: tuple[str | None, ...]
    differs: bool


@dataclass
class Comparison:
    series: list[Series]
    baseline: int
    rows: list[MetricRow]
    verdicts: list[Verdict]
    settings: list[SettingRow]
    run_ids: tuple[int, ...]

    @property
    def baseline_series(self) -> Series:
        return self.series[self.baseline]


# ---------------------------------------------------------------- helpers


def parse_run_ids(text: str | Iterable[str] | None) -> list[int]:
    """`"12,13 14"` (or repeated query values) -> [12, 13, 14], in order, without duplicates."""
    if text is None:
        return []
    parts: list[str] = []
    for chunk in [text] if isinstance(text, str) else list(text):
        parts.extend(str(chunk).replace(",", " ").split())
    ids: list[int] = []
    for part in parts:
        part = part.strip().lstrip("#")
        if not part.isdigit():
            raise ValidationError(f"{part!r} is not a run number.")
        value = int(part)
        if value not in ids:
            ids.append(value)
    return ids


def format_value(metric: str, value: float | None) -> str:
    """A value as a person reads it: latencies in ms (or s), rates with their unit."""
    if value is None or not math.isfinite(value):
        return "—"
    if metric in LATENCY_METRICS:
        milliseconds = value * 1000
        if abs(milliseconds) >= 1000:
            return f"{value:.2f} s"
        if abs(milliseconds) >= 100:
            return f"{milliseconds:.0f} ms"
        if abs(milliseconds) >= 1:
            return f"{milliseconds:.1f} ms"
        return f"{milliseconds:.3f} ms"
    if metric in THROUGHPUT_METRICS:
        unit = THROUGHPUT_METRICS[metric][1]
        return f"{value:,.1f} {unit}" if abs(value) < 1000 else f"{value:,.0f} {unit}"
    if metric in ("completed", "failed"):
        return f"{int(value):,}"
    if metric == "error_rate" or metric in QUALITY_METRICS:
        return f"{value * 100:.1f}%"
    return f"{value:,.3g}"


def _utc(value: date | None, end_of_day: bool = False) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.combine(value, time.max if end_of_day else time.min, tzinfo=UTC)


def _split_names(engine_names: str | None) -> tuple[str, ...]:
    return tuple(name for name in (engine_names or "").split(",") if name)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


# ---------------------------------------------------------------- history


def _filtered(query: Select[Any], filters: RunFilter) -> Select[Any]:
    conditions = []
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


def _headline(kind: str, summary: dict[str, Any] | None) -> str:
    """One short line per run for the list: each engine's median TTFT and output rate
    (a demo: the first line of its measured conclusion)."""
    conclusion = (summary or {}).get("conclusion_headline")
    if isinstance(conclusion, str) and conclusion:
        return conclusion if len(conclusion) <= 160 else conclusion[:159] + "…"
    engines = (summary or {}).get("engines")
    if not isinstance(engines, dict) or not engines:
        return ""
    parts = []
    for name, numbers in list(engines.items())[:4]:
        if not isinstance(numbers, dict):
            continue
        if numbers.get("not_run"):
            parts.append(f"{name}: not run")
            continue
        bits = []
        ttft = (
            _number((numbers.get("ttft_s") or {}).get("p50"))
            if isinstance(numbers.get("ttft_s"), dict)
            else None
        )
        if ttft is not None:
            bits.append(f"TTFT p50 {format_value('ttft_s', ttft)}")
        rate = _number(numbers.get("output_throughput_tok_s"))
        if rate is not None:
            bits.append(format_value("output_throughput_tok_s", rate))
        failed = _number(numbers.get("failed"))
        if failed:
            bits.append(f"{int(failed)} failed")
        if bits:
            parts.append(f"{name}: " + ", ".join(bits))
    more = len(engines) - 4
    return "; ".join(parts) + (f"; +{more} more" if more > 0 else "")


def list_runs(filters: RunFilter | None = None, page: int = 1, page_size: int = 50) -> RunPage:
    """One page of runs, newest first, and how many match in all."""
    filters = filters or RunFilter()
    if page_size < 1 or page_size > MAX_PAGE_SIZE:
        raise ValidationError(f"Page size must be between 1 and {MAX_PAGE_SIZE}.")
    page = max(1, int(page))
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
    with session_scope() as session:
        total = session.scalar(_filtered(select(func.count(Run.id)), filters)) or 0
        query = _filtered(select(*columns), filters).order_by(Run.created_at.desc(), Run.id.desc())
        rows = session.execute(query.limit(page_size).offset((page - 1) * page_size)).all()
    items = [
        RunListItem(
            id=row.id,
            kind=row.kind,
            name=row.name or "",
            status=row.status,
            created_at=row.created_at,
            engine_names=_split_names(row.engine_names),
            model=row.model,
            workload=row.workload,
            tags=tuple(str(tag) for tag in (row.tags or [])),
            notes=row.notes or "",
            archived=bool(row.archived),
            headline=_headline(row.kind, row.summary),
        )
        for row in rows
    ]
    return RunPage(items=items, total=int(total), page=page, page_size=page_size)


def filter_options() -> FilterOptions:
    """The values the history filters offer (distinct kinds, engines, models, workloads, tags)."""
    with session_scope() as session:
        kinds = sorted(session.scalars(select(Run.kind).distinct()).all())
        engine_sets = session.scalars(select(Run.engine_names).distinct()).all()
        models = sorted(m for m in session.scalars(select(Run.model).distinct()).all() if m)
        workloads = sorted(w for w in session.scalars(select(Run.workload).distinct()).all() if w)
        tags = sorted(session.scalars(select(RunTag.tag).distinct()).all())
    engines = sorted({name for names in engine_sets for name in _split_names(names)})
    return FilterOptions(kinds=kinds, engines=engines, models=models, workloads=workloads, tags=tags)


def _engine_identity(snapshot: dict[str, Any] | None) -> tuple[Any, ...]:
    """What must match for two runs of an engine to count as repeats: a new engine version
    or another model is a change to measure, not noise."""
    snapshot = snapshot or {}
    reported = snapshot.get("reported") if isinstance(snapshot.get("reported"), dict) else {}
    return (
        snapshot.get("kind"),
        snapshot.get("model"),
        snapshot.get("version") or reported.get("version"),
    )


def _snapshots(engines: Any) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = {}
    for snapshot in engines or []:
        if isinstance(snapshot, dict) and snapshot.get("name"):
            result[str(snapshot["name"])] = snapshot
    return result


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
            engine_names=_split_names(run.engine_names),
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
            counts[name] = session.execute(delete(model).where(model.run_id == run_id)).rowcount or 0
        session.execute(delete(RunTag).where(RunTag.run_id == run_id))
        session.execute(delete(Run).where(Run.id == run_id))
    return DeleteResult(run_id=run_id, **counts)


# ---------------------------------------------------------------- comparison: loading


def _empty_bucket() -> dict[str, Any]:
    return {
        "ttft_s": [],
        "tpot_s": [],
        "e2e_s": [],
        "itl_s": [],
        "ok": 0,
        "failed": 0,
        "sampled_every": 1,
    }


def _load_samples(session: Session, run_ids: Sequence[int]) -> dict[tuple[int, str], dict[str, Any]]:
    """Per (run, engine): latency arrays of successful measured requests, and counts.

    Counts cover every request; the latency arrays hold every request up to
    MAX_SAMPLES_PER_SERIES and an evenly spaced subset (every k-th request) beyond, which
    draws the same CDF and keeps a comparison of million-request runs fast."""
    collected: dict[tuple[int, str], dict[str, Any]] = {}
    measured = and_(RequestResult.run_id.in_(run_ids), RequestResult.warmup.is_(False))
    counts = session.execute(
        select(RequestResult.run_id, RequestResult.engine_name, RequestResult.ok, func.count())
        .where(measured)
        .group_by(RequestResult.run_id, RequestResult.engine_name, RequestResult.ok)
    ).all()
    for run_id, engine, ok, count in counts:
        bucket = collected.setdefault((run_id, engine), _empty_bucket())
        bucket["ok" if ok else "failed"] += int(count)
    for (run_id, engine), bucket in collected.items():
        every = max(1, math.ceil(bucket["ok"] / MAX_SAMPLES_PER_SERIES))
        bucket["sampled_every"] = every
        query = select(
            RequestResult.ttft_s,
            RequestResult.tpot_s,
            RequestResult.e2e_s,
            # Raw JSON text: most rows hold "[]", and decoding a million of them costs seconds.
            cast(RequestResult.itl_s, Text),
        ).where(
            RequestResult.run_id == run_id,
            RequestResult.engine_name == engine,
            RequestResult.warmup.is_(False),
            RequestResult.ok.is_(True),
        )
        if every > 1:
            query = query.where(RequestResult.index % every == 0)
        for ttft, tpot, e2e, itl_text in session.execute(query):
            if ttft is not None:
                bucket["ttft_s"].append(ttft)
            if tpot is not None:
                bucket["tpot_s"].append(tpot)
            if e2e is not None:
                bucket["e2e_s"].append(e2e)
            if itl_text and itl_text != "[]":
                gaps = orjson.loads(itl_text)
                if isinstance(gaps, list):
                    bucket["itl_s"].extend(gaps)
    loaded_runs = {run_id for run_id, _ in collected}
    missing = [run_id for run_id in run_ids if run_id not in loaded_runs]
    if missing:
        # Playground runs keep their timings on the exchanges, not in request rows.
        for run_id, engine, status, metrics in session.execute(
            select(Exchange.run_id, Exchange.engine_name, Exchange.status, Exchange.metrics).where(
                Exchange.run_id.in_(missing)
            )
        ):
            bucket = collected.setdefault((run_id, engine), _empty_bucket())
            if status in ("error", "failed", "cancelled"):
                bucket["failed"] += 1
                continue
            bucket["ok"] += 1
            metrics = metrics or {}
            for metric in ("ttft_s", "tpot_s", "e2e_s"):
                value = _number(metrics.get(metric))
                if value is not None:
                    bucket[metric].append(value)
            if isinstance(metrics.get("itl_s"), list):
                bucket["itl_s"].extend(v for v in metrics["itl_s"] if _number(v) is not None)
    result = {}
    for key, bucket in collected.items():
        arrays = {}
        for metric in LATENCY_METRICS:
            try:
                values = np.asarray(bucket[metric], dtype=float)  # None becomes NaN, dropped next
            except (TypeError, ValueError):  # a stray string in a hand-edited row
                values = np.asarray([_number(v) for v in bucket[metric]], dtype=float)
            arrays[metric] = values[np.isfinite(values)]
        result[key] = {
            **arrays,
            "ok": bucket["ok"],
            "failed": bucket["failed"],
            "sampled_every": bucket["sampled_every"],
        }
    return result


def _summary_stats(numbers: dict[str, Any]) -> dict[str, dict[str, float]]:
    stats: dict[str, dict[str, float]] = {}
    for metric in LATENCY_METRICS:
        block = numbers.get(metric)
        if isinstance(block, dict):
            values = {stat: v for stat in (*STATS, "std") if (v := _number(block.get(stat))) is not None}
            if values:
                stats[metric] = values
    return stats


def _build_series(run: Run, samples: dict[tuple[int, str], dict[str, Any]]) -> list[Series]:
    summary = run.summary or {}
    engine_summaries = summary.get("engines") if isinstance(summary.get("engines"), dict) else {}
    names: list[str] = list(engine_summaries)
    for name in _split_names(run.engine_names):
        if name not in names:
            names.append(name)
    for run_id, engine in samples:
        if run_id == run.id and engine not in names:
            names.append(engine)
    snapshots = _snapshots(run.engines)
    sweep = summary.get("sweep") if isinstance(summary.get("sweep"), list) else []
    result = []
    for name in names:
        numbers = engine_summaries.get(name) if isinstance(engine_summaries.get(name), dict) else {}
        sampled = samples.get((run.id, name), {})
        if numbers.get("not_run") and not sampled:
            continue  # cancelled before its turn: nothing to compare (not "0 req/s, -100%")
        stats = _summary_stats(numbers)
        for metric in LATENCY_METRICS:
            values = sampled.get(metric)
            if values is not None and values.size:
                computed = describe(values)
                # The stored summary wins; the rows fill what it lacks.
                stats[metric] = {**computed, **stats.get(metric, {})}
        rates = {
            metric: v
            for metric in (*THROUGHPUT_METRICS, *QUALITY_METRICS)
            if (v := _number(numbers.get(metric))) is not None
        }
        completed = _number(numbers.get("completed"))
        failed = _number(numbers.get("failed"))
        if completed is None and sampled:
            completed = float(sampled["ok"])
        if failed is None and sampled:
            failed = float(sampled["failed"])
        result.append(
            Series(
                run_id=run.id,
                engine=name,
                label=f"#{run.id} {name}",
                run_name=run.name or run.kind,
                kind=run.kind,
                created_at=run.created_at,
                model=(snapshots.get(name) or {}).get("model") or run.model,
                workload=run.workload,
                stats=stats,
                rates=rates,
                completed=int(completed) if completed is not None else None,
                failed=int(failed) if failed is not None else None,
                samples={metric: sampled[metric] for metric in LATENCY_METRICS if metric in sampled},
                sampled_every=int(sampled.get("sampled_every", 1)),
                sweep=[
                    step for step in sweep if isinstance(step, dict) and step.get("engine", name) == name
                ],
                engine_info=snapshots.get(name) or {"name": name},
            )
        )
    return result


def _attach_repeats(session: Session, runs: Sequence[Run], series: list[Series]) -> None:
    """Give each series the values its metrics took in repeated runs of the same setup."""
    fingerprints = {run.config_fingerprint for run in runs if run.config_fingerprint}
    if not fingerprints:
        return
    candidates = session.execute(
        select(Run.id, Run.config_fingerprint, Run.summary, Run.engines, Run.created_at)
        .where(Run.config_fingerprint.in_(fingerprints), Run.status.in_(FINISHED_STATUSES))
        .order_by(Run.created_at.desc())
        .limit(MAX_REPEATS * len(fingerprints))
    ).all()
    by_run = {run.id: run for run in runs}
    for item in series:
        run = by_run[item.run_id]
        identity = _engine_identity(item.engine_info)
        repeat_ids: list[int] = []
        values: dict[str, list[float]] = {}
        for candidate in candidates:
            if candidate.config_fingerprint != run.config_fingerprint:
                continue
            engines = (candidate.summary or {}).get("engines") or {}
            numbers = engines.get(item.engine) if isinstance(engines, dict) else None
            if not isinstance(numbers, dict):
                continue
            snapshot = _snapshots(candidate.engines).get(item.engine)
            if candidate.id != run.id and _engine_identity(snapshot) != identity:
                continue
            repeat_ids.append(candidate.id)
            for metric, block in _summary_stats(numbers).items():
                for stat, value in block.items():
                    values.setdefault(f"{metric}.{stat}", []).append(value)
            for metric in THROUGHPUT_METRICS:
                value = _number(numbers.get(metric))
                if value is not None:
                    values.setdefault(metric, []).append(value)
        if len(repeat_ids) >= 2:
            item.repeat_run_ids = tuple(sorted(repeat_ids))
            item.repeat_values = values


# ---------------------------------------------------------------- comparison: arithmetic


def _mark(
    value: float | None, base: float | None, higher_is_better: bool
) -> tuple[float | None, float | None, str | None]:
    if value is None or base is None:
        return None, None, None
    delta = value - base
    change = (delta / base * 100) if base else None
    if base == 0 and value == 0:
        return 0.0, 0.0, "same"
    relative = abs(delta) / max(abs(base), abs(value))
    if relative < EQUAL_TOLERANCE:
        return delta, change, "same"
    improved = delta > 0 if higher_is_better else delta < 0
    return delta, change, "better" if improved else "worse"


def _metric_rows(series: list[Series], baseline: int) -> list[MetricRow]:
    rows: list[MetricRow] = []

    def add(
        metric: str, stat: str | None, label: str, unit: str, higher: bool, values: list[float | None]
    ) -> None:
        if all(v is None for v in values):
            return
        base = values[baseline]
        marks = [
            _mark(v, base, higher) if i != baseline else (None, None, None) for i, v in enumerate(values)
        ]
        rows.append(
            MetricRow(
                metric=metric,
                stat=stat,
                label=label,
                unit=unit,
                higher_is_better=higher,
                values=tuple(values),
                deltas=tuple(m[0] for m in marks),
                changes=tuple(m[1] for m in marks),
                marks=tuple(m[2] for m in marks),
            )
        )

    for metric, name in LATENCY_METRICS.items():
        for stat in TABLE_STATS:
            add(
                metric,
                stat,
                f"{name} {STAT_LABELS[stat]}",
                "s",
                False,
                [s.stats.get(metric, {}).get(stat) for s in series],
            )
    for metric, (name, unit) in THROUGHPUT_METRICS.items():
        add(metric, None, name, unit, True, [s.rates.get(metric) for s in series])
    for metric, name in QUALITY_METRICS.items():
        add(metric, None, name, "%", True, [s.rates.get(metric) for s in series])
    add(
        "completed",
        None,
        "Completed requests",
        "",
        True,
        [float(s.completed) if s.completed is not None else None for s in series],
    )
    add(
        "failed",
        None,
        "Failed requests",
        "",
        False,
        [float(s.failed) if s.failed is not None else None for s in series],
    )
    error_rates = []
    for s in series:
        total = (s.completed or 0) + (s.failed or 0)
        error_rates.append((s.failed or 0) / total if total and s.failed is not None else None)
    add("error_rate", None, "Error rate", "%", False, error_rates)
    return rows


_STAT_QUANTILE = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}


def _statistic(resamples: np.ndarray, stat: str) -> np.ndarray:
    """The statistic of each row of a matrix of bootstrap resamples."""
    if stat == "mean":
        return np.mean(resamples, axis=1)
    return percentile(resamples, _STAT_QUANTILE[stat], axis=1)


def _bootstrap_difference(a: np.ndarray, b: np.ndarray, stat: str) -> tuple[float, float]:
    """95% bootstrap interval of stat(a) - stat(b). Large samples are subsampled first,
    which only widens the interval (a conservative call)."""
    rng = np.random.default_rng(20261130)
    if a.size > BOOTSTRAP_MAX_SAMPLES:
        a = rng.choice(a, BOOTSTRAP_MAX_SAMPLES, replace=False)
    if b.size > BOOTSTRAP_MAX_SAMPLES:
        b = rng.choice(b, BOOTSTRAP_MAX_SAMPLES, replace=False)
    resampled_a = _statistic(a[rng.integers(0, a.size, size=(BOOTSTRAP_RESAMPLES, a.size))], stat)
    resampled_b = _statistic(b[rng.integers(0, b.size, size=(BOOTSTRAP_RESAMPLES, b.size))], stat)
    differences = resampled_a - resampled_b
    return percentile(differences, 2.5), percentile(differences, 97.5)


def _noise(metric: str, stat: str | None, winner: Series, other: Series) -> NoiseCheck:
    key = f"{metric}.{stat}" if stat else metric
    if winner.repeat_run_ids and winner.run_id in other.repeat_run_ids and winner.engine == other.engine:
        spread = winner.repeat_values.get(key, [])
        detail = f"#{winner.run_id} and #{other.run_id} are repeats of one configuration"
        if len(spread) >= 2:
            detail += f" ({len(spread)} runs range {format_value(metric, min(spread))} to {format_value(metric, max(spread))})"
        return NoiseCheck("within", "repeats", detail + ": the difference is run-to-run noise.")
    a, b = winner.repeat_values.get(key, []), other.repeat_values.get(key, [])
    if len(a) >= 2 and len(b) >= 2:
        if np.var(a) == 0 and np.var(b) == 0:
            beyond = np.mean(a) != np.mean(b)
            p_text = "no spread within either set"
        else:
            # Imported here: scipy.stats costs half a second to import, and only this needs it.
            from scipy import stats as scipy_stats

            p_value = float(scipy_stats.ttest_ind(a, b, equal_var=False).pvalue)
            beyond = p_value < NOISE_P_VALUE
            p_text = f"Welch t-test p = {p_value:.3g}"
        status = "beyond" if beyond else "within"
        words = "beyond" if beyond else "within"
        return NoiseCheck(
            status,
            "repeats",
            f"{words} run-to-run noise ({len(a)} and {len(b)} repeated runs, {p_text})",
        )
    a_sample, b_sample = winner.samples.get(metric), other.samples.get(metric)
    if (
        stat in ("mean", *_STAT_QUANTILE)
        and not winner.multi_step
        and not other.multi_step
        and a_sample is not None
        and b_sample is not None
        and a_sample.size >= MIN_BOOTSTRAP_SAMPLES
        and b_sample.size >= MIN_BOOTSTRAP_SAMPLES
    ):
        low, high = _bootstrap_difference(a_sample, b_sample, stat)
        beyond = low > 0 or high < 0
        interval = (
            f"95% bootstrap interval of {winner.label} minus {other.label}: "
            f"{format_value(metric, low)} to {format_value(metric, high)}"
        )
        words = "beyond" if beyond else "within"
        return NoiseCheck(
            "beyond" if beyond else "within",
            "bootstrap",
            f"{words} within-run sampling noise ({interval}); no repeated runs, so run-to-run noise is unknown",
        )
    return NoiseCheck("unknown", "none", "noise unknown: no repeated runs of both setups")


def _verdict(
    metric: str,
    stat: str | None,
    label: str,
    series: list[Series],
    values: list[float | None],
    higher: bool,
    extra: str = "",
) -> Verdict | None:
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(present) < 2:
        return None
    ranked = sorted(present, key=lambda item: -item[1] if higher else item[1])
    (best_index, best), (next_index, runner) = ranked[0], ranked[1]
    winner, other = series[best_index], series[next_index]
    noise = _noise(metric, stat, winner, other)
    if best == runner or (
        max(abs(best), abs(runner))
        and abs(best - runner) / max(abs(best), abs(runner)) < EQUAL_TOLERANCE
    ):
        text = f"{label}: {winner.label} and {other.label} are level ({format_value(metric, best)})"
        return Verdict(metric, label, text + f"; {noise.detail}.", None, None, 1.0, noise)
    if higher:
        factor = best / runner if runner > 0 else None
        if factor is not None and factor >= 2:
            amount = f"{factor:.1f}× as high as"
        else:
            amount = f"{(best / runner - 1) * 100:.0f}% more than" if runner > 0 else "more than"
        text = (
            f"{label}: {winner.label} is highest, {amount} {other.label} "
            f"({format_value(metric, best)} vs {format_value(metric, runner)})"
        )
    else:
        factor = runner / best if best > 0 else None
        if factor is not None and factor >= 1.5:
            amount = f"{factor:.1f}× faster"
        else:
            amount = f"{(1 - best / runner) * 100:.0f}% faster" if runner > 0 else "faster"
        text = (
            f"{label}: {winner.label} is fastest, {amount} than {other.label} "
            f"({format_value(metric, best)} vs {format_value(metric, runner)}{extra})"
        )
    return Verdict(metric, label, f"{text}; {noise.detail}.", winner.key, other.key, factor, noise)


def _verdicts(series: list[Series]) -> list[Verdict]:
    verdicts: list[Verdict] = []
    for metric, name in LATENCY_METRICS.items():
        medians = [s.stats.get(metric, {}).get("p50") for s in series]
        tails = [s.stats.get(metric, {}).get("p99") for s in series]
        present = [i for i, v in enumerate(medians) if v is not None]
        extra = ""
        if len(present) >= 2:
            ranked = sorted(present, key=lambda i: medians[i])
            a, b = ranked[0], ranked[1]
            if tails[a] is not None and tails[b] is not None:
                extra = f" at the median; p99 {format_value(metric, tails[a])} vs {format_value(metric, tails[b])}"
        verdict = _verdict(metric, "p50", f"{name} (median)", series, medians, False, extra)
        if verdict:
            verdicts.append(verdict)
    for metric, (name, _unit) in THROUGHPUT_METRICS.items():
        verdict = _verdict(metric, None, name, series, [s.rates.get(metric) for s in series], True)
        if verdict:
            verdicts.append(verdict)
    return verdicts


def _flatten(prefix: str, value: Any, out: dict[str, str], depth: int = 0) -> None:
    if isinstance(value, dict) and depth < 6:
        for key in sorted(value, key=str):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], out, depth + 1)
        return
    if isinstance(value, (dict, list)):
        text = json.dumps(value, sort_keys=True, default=str)
    else:
        text = "" if value is None else str(value)
    if len(text) > SETTING_VALUE_MAX_CHARS:
        text = text[: SETTING_VALUE_MAX_CHARS - 1] + "…"
    out[prefix] = text


def _settings(series: list[Series]) -> list[SettingRow]:
    """The engines' own settings side by side (version, flags, /props, /server_info, ...)."""
    flattened = []
    for item in series:
        out: dict[str, str] = {}
        snapshot = dict(item.engine_info)
        info = snapshot.pop("info", None)
        # What the engine said about itself when the run started (services/engines/reported.py).
        reported = snapshot.pop("reported", None)
        for key in ("name", "kind", "version", "model", "base_url"):
            if key in snapshot:
                _flatten(key, snapshot.pop(key), out)
        for key, value in snapshot.items():
            _flatten(key, value, out)
        if isinstance(info, dict):
            _flatten("", info, out)
        if isinstance(reported, dict):
            if "version" in reported and not out.get("version"):
                out["version"] = str(reported["version"])
            _flatten("", {k: v for k, v in reported.items() if k != "version"}, out)
        flattened.append(out)
    order: list[str] = []
    for out in flattened:
        for key in out:
            if key not in order:
                order.append(key)
    head = [k for k in ("name", "kind", "version", "model", "base_url") if k in order]
    rest = sorted(k for k in order if k not in head)
    rows = []
    for key in head + rest:
        values = tuple(out.get(key) for out in flattened)
        if all(value in (None, "") for value in values):
            continue
        rows.append(SettingRow(key=key, values=values, differs=len(set(values)) > 1))
    return rows


def compare_runs(run_ids: Sequence[int], baseline: str | int | None = None) -> Comparison:
    """Compare the engines of the given runs. `baseline` is a series key ("12:vllm"), a run
    id (its first engine) or None (the first series)."""
    ids = list(dict.fromkeys(int(run_id) for run_id in run_ids))
    if not ids:
        raise ValidationError("Pick at least one run to compare.")
    if len(ids) > MAX_COMPARED_RUNS:
        raise ValidationError(f"Compare at most {MAX_COMPARED_RUNS} runs at once.")
    with session_scope() as session:
        runs = {run.id: run for run in session.scalars(select(Run).where(Run.id.in_(ids)))}
        missing = [run_id for run_id in ids if run_id not in runs]
        if missing:
            raise NotFoundError(f"Run(s) {', '.join('#' + str(m) for m in missing)} do not exist.")
        ordered = [runs[run_id] for run_id in ids]
        samples = _load_samples(session, ids)
        series = [item for run in ordered for item in _build_series(run, samples)]
        _attach_repeats(session, ordered, series)
    if not series:
        raise ValidationError("These runs hold no engine results to compare.")
    if len(ids) > 1 and len(series) < 2:
        raise ValidationError("These runs hold fewer than two engine results to compare.")
    index = 0
    if baseline is not None:
        keys = [s.key for s in series]
        text = str(baseline)
        if text in keys:
            index = keys.index(text)
        elif text.lstrip("#").isdigit() and int(text.lstrip("#")) in ids:
            index = next(i for i, s in enumerate(series) if s.run_id == int(text.lstrip("#")))
        else:
            raise ValidationError(
                f"Baseline {text!r} is not one of the compared series ({', '.join(keys)})."
            )
    return Comparison(
        series=series,
        baseline=index,
        rows=_metric_rows(series, index),
        verdicts=_verdicts(series) if len(series) > 1 else [],
        settings=_settings(series),
        run_ids=tuple(ids),
    )
