"""Stored telemetry back out of the database, fast: a time window (or a run) of samples as
a pandas DataFrame with one column per signal.

The query reads three columns through the (source, ts) or (run_id, ts) index and decodes
the JSON values in one pass; a one-hour window of 12 sources at 1 Hz (43 200 rows) loads in
well under a second from a week-long table (benchmarks/telemetry_query_window.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

import pandas as pd
from sqlalchemy import select

from db.models import RequestResult, Run, Sample
from db.session import session_scope
from services.core import stored_json
from services.core.errors import NotFoundError, ValidationError
from services.engines.signals import SourceGroup, not_reported, signal_names
from services.runstate import blind
from services.telemetry.origins import start_times
from services.telemetry.snapshot import GpuProcess, SampleRow

META_COLUMNS = ("ts", "source", "_kind", "_label", "_error")


@dataclass
class SampleWindow:
    """Samples of a window: `frame` has columns ts (unix s), source, _kind, _label,
    _error and one float column per signal (NaN: no data or not reported; `not_reported`
    tells which). `processes` holds the newest per-process GPU memory of each GPU source."""

    frame: pd.DataFrame
    not_reported: dict[str, dict[str, str]] = field(default_factory=dict)
    processes: dict[str, list[GpuProcess]] = field(default_factory=dict)

    @property
    def sources(self) -> list[str]:
        return sorted(self.frame["source"].unique()) if len(self.frame) else []

    def source_frame(self, source: str) -> pd.DataFrame:
        return self.frame[self.frame["source"] == source]


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {name: pd.Series(dtype="float64" if name == "ts" else "object") for name in META_COLUMNS}
    )


def load_window(
    start_ts: float | None = None,
    end_ts: float | None = None,
    sources: Sequence[str] | None = None,
    run_id: int | None = None,
    database_url: str | None = None,
) -> SampleWindow:
    """Samples with start_ts <= ts <= end_ts, of `sources` (all when None), of run `run_id`
    (any run or none when None), ordered by time."""
    query = select(Sample.ts, Sample.source, Sample.values)
    if run_id is not None:
        query = query.where(Sample.run_id == run_id)
    if sources is not None:
        if not sources:
            return SampleWindow(_empty())
        query = query.where(Sample.source.in_(list(sources)))
    if start_ts is not None:
        query = query.where(Sample.ts >= start_ts)
    if end_ts is not None:
        query = query.where(Sample.ts <= end_ts)
    query = query.order_by(Sample.ts)
    with session_scope(database_url) as session:
        rows = _fetch_raw(session, query)
    if not rows:
        return SampleWindow(_empty())

    decoded = _decode([row[2] for row in rows])
    frame = pd.DataFrame(decoded)
    frame.insert(0, "ts", [row[0] for row in rows])
    frame.insert(1, "source", [row[1] for row in rows])
    for column in ("_kind", "_label", "_error"):
        if column not in frame.columns:
            frame[column] = None
    processes: dict[str, list[GpuProcess]] = {}
    if "_processes" in frame.columns:
        for source, value in frame.groupby("source", sort=False)["_processes"].last().items():
            if isinstance(value, list):
                processes[str(source)] = value
        frame = frame.drop(columns="_processes")
    window = SampleWindow(frame=frame, processes=processes)
    # Which signals a source exposes: the keys of its first and last readable rows (an
    # exposed signal with no data is stored as null, an unexposed one is left out).
    readable = frame[frame["_error"].isna()]
    for source, positions in readable.groupby("source", sort=False).indices.items():
        first, last = decoded[readable.index[positions[0]]], decoded[readable.index[positions[-1]]]
        seen = set(first) | set(last)
        kind = str(first.get("_kind") or "openai")
        label = str(first.get("_label") or kind)
        group: SourceGroup = "gpu" if kind == "gpu" else "engine"
        missing = {n: not_reported(label) for n in signal_names(group) if n not in seen}
        if missing:
            window.not_reported[str(source)] = missing
    return window


def _fetch_raw(session: Any, query: Any) -> list[tuple[Any, ...]]:
    """Run `query` on the DBAPI cursor: SQLAlchemy's row objects cost about 4 us each,
    most of a one-hour window's load time, and these three columns need none of them."""
    connection = session.connection()
    compiled = query.compile(dialect=connection.dialect, compile_kwargs={"render_postcompile": True})
    params: Any = compiled.params
    if compiled.positiontup is not None:
        params = tuple(compiled.params[name] for name in compiled.positiontup)
    cursor = connection.connection.cursor()
    try:
        cursor.execute(str(compiled), params)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def _decode(texts: list[Any]) -> list[SampleRow]:
    """JSON texts -> dicts in one parser call (drivers that decode JSON themselves, like
    psycopg, hand over dicts already)."""
    if texts and all(isinstance(t, str) for t in texts):
        return json.loads("[" + ",".join(texts) + "]")
    return [json.loads(t) if isinstance(t, str) else dict(t or {}) for t in texts]


@dataclass
class RunTelemetry:
    """A run's telemetry and its requests on one clock: seconds since the run started.

    `window.frame` gains a column `t_s`; `requests` has engine_name, start_s (on that
    clock), ttft_s, e2e_s, ok."""

    run_id: int
    t0: float
    window: SampleWindow
    requests: pd.DataFrame


def run_telemetry(run_id: int) -> RunTelemetry:
    """Everything needed to replay a run's telemetry aligned with its request latencies."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        if blind.run_hidden(session, run):  # its requests' latencies are per engine
            raise ValidationError(f"Run #{run_id} is a blind exchange: {blind.HIDDEN_NOTE}.")
        started = run.started_at or run.created_at
        # Request times count from their engine's (sweep step's) own start.
        summary = stored_json.mapping(run.summary)
        origins = start_times(
            stored_json.dicts(summary.get("sweep")), stored_json.dict_values(summary.get("engines"))
        )
        request_rows = session.execute(
            select(
                RequestResult.engine_name,
                RequestResult.start_s,
                RequestResult.ttft_s,
                RequestResult.e2e_s,
                RequestResult.ok,
                RequestResult.extra,
            )
            .where(RequestResult.run_id == run_id, RequestResult.warmup.is_(False))
            .order_by(RequestResult.engine_name, RequestResult.index)
        ).all()
    window = load_window(run_id=run_id)
    if started is not None and started.tzinfo is None:
        started = started.replace(tzinfo=UTC)  # SQLite hands back naive UTC
    t0 = (
        started.timestamp()
        if started is not None
        else (float(window.frame["ts"].min()) if len(window.frame) else 0.0)
    )
    if len(window.frame):
        window.frame["t_s"] = window.frame["ts"] - t0
    aligned = []
    for engine, start_s, ttft_s, e2e_s, ok, extra in request_rows:
        step = (extra or {}).get("step") if isinstance(extra, dict) else None
        origin = origins.get((engine, step), origins.get((engine, None), t0))
        aligned.append((engine, None if start_s is None else origin + start_s - t0, ttft_s, e2e_s, ok))
    requests = pd.DataFrame(aligned, columns=["engine_name", "start_s", "ttft_s", "e2e_s", "ok"])
    return RunTelemetry(run_id=run_id, t0=t0, window=window, requests=requests)
