"""Views of stored telemetry: a recording's charts over a window, the Runs page's replay
of a run's telemetry under its request latencies, and the list of recordings."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots
from sqlalchemy import exists, func, or_, select

from db.models import Run, Sample
from db.session import session_scope
from services.runstate.lifecycle import RunKind
from services.telemetry.monitor.charts import build_charts, series_from_window
from services.telemetry.monitor.records import MonitorView, ProcessRow, RecordingRun, SourceStatus
from services.telemetry.query import load_window, run_telemetry
from services.telemetry.recorder import active_recordings

RECORDED_WINDOW_S = 3600.0


def recording_span(run_id: int) -> tuple[float, float] | None:
    """First and last sample time of a run (two index lookups, however long the run)."""
    with session_scope() as session:
        first = session.scalar(select(func.min(Sample.ts)).where(Sample.run_id == run_id))
        last = session.scalar(select(func.max(Sample.ts)).where(Sample.run_id == run_id))
    return None if first is None or last is None else (float(first), float(last))


def recorded_view(
    run_id: int, start_ts: float | None = None, end_ts: float | None = None
) -> MonitorView:
    """The charts of a stored recording (or any run that recorded telemetry) over a
    window: by default its last hour. `span` and `window` tell the page what to offer."""
    span = recording_span(run_id)
    if span is None:
        return MonitorView([], [], [], active_recordings(), span=None, window=None)
    end = min(end_ts, span[1]) if end_ts is not None else span[1]
    start = max(start_ts, span[0]) if start_ts is not None else max(span[0], end - RECORDED_WINDOW_S)
    window = load_window(start, end, run_id=run_id)
    series = list(series_from_window(window).values())
    statuses = [
        SourceStatus(
            s.source, s.name, s.label, s.error is None, s.error or f"{len(s.ts)} sample(s) in the window"
        )
        for s in series
    ]
    processes: list[ProcessRow] = [
        {
            "GPU": source.partition(":")[2],
            "process": p.get("name"),
            "pid": p.get("pid"),
            "engine": p.get("engine") or "",
            "memory (GiB)": None if (used := p.get("used_bytes")) is None else round(used / 2**30, 2),
        }
        for source, procs in window.processes.items()
        for p in procs
    ]
    return MonitorView(
        charts=build_charts(series, (start, end), key_prefix=f"recorded_{run_id}_"),
        statuses=statuses,
        processes=processes,
        recordings=active_recordings(),
        span=span,
        window=(start, end),
    )


TIMELINE_SIGNALS: tuple[tuple[str, str, float, str], ...] = (
    ("kv_cache_usage", "KV-cache usage", 100.0, "%"),
    ("requests_running", "Running", 1.0, "requests"),
    ("requests_waiting", "Waiting", 1.0, "requests"),
    ("generation_tokens_per_s", "Generated tokens/s", 1.0, "tokens/s"),
    ("gpu_memory_used_bytes", "GPU memory", 1 / 2**30, "GiB"),
    ("gpu_utilization_pct", "GPU utilisation", 1.0, "%"),
)


def run_timeline_figure(run_id: int) -> tuple[go.Figure | None, list[str]]:
    """The Runs page's replay: request latencies (E2E and TTFT at each request's start)
    on top, then the recorded telemetry, all on seconds since the run started. Returns the
    figure and notes (signals not reported, no telemetry recorded). A row is drawn only with
    something in it, and no figure without any row (issue 56: a recording's empty latency
    row was an empty box on the run page)."""
    data = run_telemetry(run_id)
    frame, requests = data.window.frame, data.requests
    present = [
        row for row in TIMELINE_SIGNALS if row[0] in frame.columns and frame[row[0]].notna().any()
    ]
    done = requests[requests["ok"].astype(bool)] if len(requests) else requests
    latency = 1 if len(done) else 0
    rows = latency + len(present)
    notes: list[str] = []
    if not len(requests):
        notes.append("This run has no request results.")
    elif not len(done):
        notes.append("None of this run's requests succeeded: no latency to draw.")
    if not len(frame):
        notes.append("No telemetry was recorded with this run.")
    notes += _not_reported_notes(data.window.not_reported)
    if not rows:
        return None, notes
    figure = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.03,
        subplot_titles=(["Request latency (s)"] if latency else [])
        + [f"{title} ({unit})" for _, title, _, unit in present],
    )
    if latency:
        for engine, ok in done.groupby("engine_name", sort=True):
            figure.add_trace(
                go.Scattergl(
                    x=ok["start_s"],
                    y=ok["e2e_s"],
                    mode="markers",
                    name=f"{engine} · E2E",
                    marker={"size": 4},
                ),
                row=1,
                col=1,
            )
            figure.add_trace(
                go.Scattergl(
                    x=ok["start_s"],
                    y=ok["ttft_s"],
                    mode="markers",
                    name=f"{engine} · TTFT",
                    marker={"size": 3},
                ),
                row=1,
                col=1,
            )
    for position, (signal, title, scale, _) in enumerate(present, start=1 + latency):
        for source, part in frame.groupby("source", sort=True):
            readings = int(part[signal].notna().sum())
            if readings:
                figure.add_trace(
                    go.Scattergl(
                        x=part["t_s"],
                        y=part[signal] * scale,
                        # One reading draws no line: a point, not an empty row.
                        mode="lines" if readings > 1 else "markers",
                        name=f"{source.partition(':')[2]} · {title}",
                    ),
                    row=position,
                    col=1,
                )
    figure.update_layout(
        height=220 * rows, margin={"l": 10, "r": 10, "t": 40, "b": 10}, uirevision=f"run_{run_id}"
    )
    figure.update_xaxes(title_text="seconds since the run started", row=rows, col=1)
    return figure, notes


def _not_reported_notes(not_reported: dict[str, dict[str, str]]) -> list[str]:
    notes = []
    for source, missing in not_reported.items():
        shown = [title for signal, title, _, _ in TIMELINE_SIGNALS if signal in missing]
        if shown:
            notes.append(
                f"{source.partition(':')[2]}: {', '.join(shown)} {next(iter(missing.values()))}"
            )
    return notes


def recording_runs(limit: int = 30) -> list[RecordingRun]:
    """The newest runs that recorded telemetry: the Monitor's recordings and every benchmark (or
    other run) with samples of its own. Only "recording" runs were listed, so a benchmark's
    recorded engine metrics were reachable from the Runs page alone (issue 36)."""
    recorded = exists().where(Sample.run_id == Run.id)
    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.name, Run.status, Run.started_at, Run.engine_names, Run.kind)
            .where(or_(Run.kind == RunKind.RECORDING, recorded))
            .order_by(Run.id.desc())
            .limit(limit)
        ).all()
    return [RecordingRun(*row) for row in rows]
