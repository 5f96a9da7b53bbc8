"""What the Monitor page shows, built from the hub (live) or the database (recorded):
per-signal plotly charts over a bounded window, per-source states, GPU processes, and
the Runs page's replay of a run's telemetry aligned with its request latencies.

Pages call one function per refresh (`live_view`, `recorded_view`, `run_timeline_figure`)
and only render what comes back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from services.telemetry.gpu import GpuState, remote_gpu_settings
from services.telemetry.hub import get_hub
from services.telemetry.query import SampleWindow, load_window, run_telemetry
from services.telemetry.recorder import RecorderInfo, active_recordings
from services.telemetry.scraper import ScrapeTarget, scrape_targets_for
from services.telemetry.signals import SIGNALS, SourceGroup
from services.telemetry.snapshot import Snapshot

WINDOW_CHOICES_S = (60, 300, 900)
CHART_HEIGHT = 250


@dataclass(frozen=True)
class ChartDef:
    key: str
    title: str
    group: SourceGroup
    signals: tuple[tuple[str, str], ...]  # (signal, trace suffix)
    scale: float = 1.0
    unit: str = ""
    y_range: tuple[float, float] | None = None


#: Room under a chart for its legend (one or two rows of engine names).
LEGEND_PX = 64

CHARTS: tuple[ChartDef, ...] = (
    ChartDef("gpu_memory", "GPU memory used", "gpu", (("gpu_memory_used_bytes", ""),), 1 / 2**30, "GiB"),
    ChartDef(
        "gpu_utilization", "GPU utilisation", "gpu", (("gpu_utilization_pct", ""),), 1.0, "%", (0, 100)
    ),
    ChartDef("kv_cache", "KV-cache usage", "engine", (("kv_cache_usage", ""),), 100.0, "%", (0, 100)),
    ChartDef(
        "prefix_hit",
        "Prefix-cache hit rate (window)",
        "engine",
        (("prefix_cache_hit_rate", ""),),
        100.0,
        "%",
        (0, 100),
    ),
    ChartDef(
        "queue",
        "Requests running / waiting",
        "engine",
        (("requests_running", "running"), ("requests_waiting", "waiting")),
        unit="requests",
    ),
    ChartDef(
        "tokens",
        "Token rates",
        "engine",
        (("prompt_tokens_per_s", "prompt"), ("generation_tokens_per_s", "generated")),
        unit="tokens/s",
    ),
    ChartDef(
        "latency",
        "Latency p90 (window)",
        "engine",
        (("ttft_p90_s", "TTFT"), ("itl_p90_s", "ITL"), ("e2e_p90_s", "E2E")),
        unit="s",
    ),
)


@dataclass
class SourceSeries:
    """One source's samples as parallel arrays (ts and one array per signal)."""

    source: str
    kind: str
    label: str
    ts: np.ndarray
    signals: dict[str, np.ndarray]
    not_reported: dict[str, str]
    error: str | None = None

    @property
    def group(self) -> SourceGroup:
        return "gpu" if self.kind == "gpu" else "engine"

    @property
    def name(self) -> str:
        kind, _, rest = self.source.partition(":")
        return f"GPU {rest}" if kind == "gpu" else rest


def series_from_snapshots(snapshots: Sequence[Snapshot]) -> SourceSeries | None:
    if not snapshots:
        return None
    last = snapshots[-1]
    names = {n for s in snapshots for n in s.values}
    ts = np.fromiter((s.ts for s in snapshots), dtype=float, count=len(snapshots))
    signals = {
        n: np.array([np.nan if (v := s.values.get(n)) is None else v for s in snapshots], dtype=float)
        for n in names
    }
    reporting = next((s for s in reversed(snapshots) if not s.error), last)
    return SourceSeries(
        last.source, last.kind, last.label, ts, signals, dict(reporting.missing), last.error
    )


def series_from_window(window: SampleWindow) -> dict[str, SourceSeries]:
    result: dict[str, SourceSeries] = {}
    frame = window.frame
    if not len(frame):
        return result
    signal_columns = [c for c in frame.columns if c in SIGNALS]
    for source, part in frame.groupby("source", sort=True):
        last = part.iloc[-1]
        kind = str(last["_kind"] or "openai")
        result[str(source)] = SourceSeries(
            source=str(source),
            kind=kind,
            label=str(last["_label"] or kind),
            ts=part["ts"].to_numpy(dtype=float),
            signals={c: part[c].to_numpy(dtype=float) for c in signal_columns if part[c].notna().any()},
            not_reported=window.not_reported.get(str(source), {}),
            error=last["_error"] if isinstance(last["_error"], str) else None,
        )
    return result


@dataclass
class Chart:
    key: str
    title: str
    figure: go.Figure
    notes: list[str] = field(default_factory=list)
    has_data: bool = False


def _times(ts: np.ndarray) -> np.ndarray:
    return (ts * 1000).astype("datetime64[ms]")


def build_chart(
    definition: ChartDef,
    series: Sequence[SourceSeries],
    x_range: tuple[float, float] | None = None,
    key_prefix: str = "",
    webgl: bool = True,
) -> Chart:
    """`webgl=False` draws SVG lines: a browser keeps about 16 WebGL contexts, and a page of
    ten WebGL charts lost its first ones (drawn empty); a history has at most ~1000 points a line."""
    trace_type = go.Scattergl if webgl else go.Scatter
    figure = go.Figure()
    notes: list[str] = []
    has_data = False
    many_signals = len(definition.signals) > 1
    for item in series:
        if item.group != definition.group:
            continue
        missing = [(s, item.not_reported[s]) for s, _ in definition.signals if s in item.not_reported]
        if missing and len(missing) == len(definition.signals):
            notes.append(f"{item.name}: {missing[0][1]}")
        elif missing:
            notes.append(
                f"{item.name}: " + "; ".join(f"{SIGNALS[s].title} {reason}" for s, reason in missing)
            )
        for signal, suffix in definition.signals:
            values = item.signals.get(signal)
            if values is None or signal in item.not_reported:
                continue
            has_data = has_data or bool(np.isfinite(values).any())
            figure.add_trace(
                trace_type(
                    x=_times(item.ts),
                    y=values * definition.scale,
                    name=f"{item.name} · {suffix}" if many_signals and suffix else item.name,
                    mode="lines",
                    connectgaps=False,
                )
            )
    figure.update_layout(
        height=CHART_HEIGHT + LEGEND_PX,
        # The legend sits at the figure's bottom edge, below the axis's two-line date labels:
        # placed in plot coordinates it covered the date ("Dec 1, 2026") under the times.
        margin={"l": 10, "r": 10, "t": 30, "b": LEGEND_PX},
        title={"text": definition.title, "font": {"size": 14}},
        uirevision=f"{key_prefix}{definition.key}",  # keeps zoom and legend clicks across refreshes
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
        showlegend=True,
        yaxis_title=definition.unit,
        xaxis={"type": "date"},  # an empty chart still reads as time, not 0..6
    )
    if definition.y_range:
        figure.update_yaxes(range=list(definition.y_range))
    else:
        # Every monitored quantity is a count, a rate or a size: never below zero (an all-zero
        # series drew an axis from -1 to 1).
        figure.update_yaxes(rangemode="tozero")
        if not has_data:
            figure.update_yaxes(range=[0, 1])
    if x_range:
        figure.update_xaxes(range=[_times(np.array([x_range[0]]))[0], _times(np.array([x_range[1]]))[0]])
    return Chart(f"{key_prefix}{definition.key}", definition.title, figure, notes, has_data)


def build_charts(
    series: Sequence[SourceSeries],
    x_range: tuple[float, float] | None = None,
    key_prefix: str = "monitor_",
    webgl: bool = True,
) -> list[Chart]:
    groups = {s.group for s in series}
    return [build_chart(d, series, x_range, key_prefix, webgl) for d in CHARTS if d.group in groups]


@dataclass
class SourceStatus:
    source: str
    name: str
    label: str
    ok: bool
    message: str


@dataclass
class MonitorOptions:
    engines: list[tuple[str, str]]  # (name, kind label)
    gpu_state: GpuState
    dcgm_urls: list[str]
    prometheus_url: str | None
    prometheus_selector: str = ""


@dataclass
class MonitorView:
    charts: list[Chart]
    statuses: list[SourceStatus]
    processes: list[dict[str, Any]]
    recordings: list[RecorderInfo]
    gpu_message: str | None = None
    errors: list[str] = field(default_factory=list)
    span: tuple[float, float] | None = None  # recorded views: the whole recording
    window: tuple[float, float] | None = None  # recorded views: what is shown


def monitor_options() -> MonitorOptions:
    """What the Monitor page offers: registered engines and the GPUs this machine sees."""
    from services.endpoints import list_engines

    dcgm_urls, prometheus_url = remote_gpu_settings()
    engines = [(e.name, e.label) for e in list_engines()]
    selector = os.environ.get("SHOOTOUT_PROMETHEUS_SELECTOR", "").strip()
    return MonitorOptions(engines, get_hub().gpu_state(), dcgm_urls, prometheus_url, selector)


def _status(snapshot: Snapshot) -> SourceStatus:
    name = snapshot.source.partition(":")[2]
    if snapshot.kind == "gpu":
        name = f"GPU {name}"
    if snapshot.error:
        return SourceStatus(snapshot.source, name, snapshot.label, False, snapshot.error)
    reported = [n for n, v in snapshot.values.items() if v is not None]
    if not snapshot.values:
        return SourceStatus(
            snapshot.source,
            name,
            snapshot.label,
            True,
            next(iter(snapshot.missing.values()), "no signals"),
        )
    return SourceStatus(
        snapshot.source, name, snapshot.label, True, f"{len(reported)} signal(s) with data"
    )


def _processes(snapshots: Sequence[Snapshot]) -> list[dict[str, Any]]:
    rows = []
    for snapshot in snapshots:
        if snapshot.kind != "gpu":
            continue
        for process in snapshot.processes:
            used = process.get("used_bytes")
            rows.append(
                {
                    "GPU": snapshot.source.partition(":")[2],
                    "process": process.get("name") or "",
                    "pid": process.get("pid"),
                    "engine": process.get("engine") or "",
                    "memory (GiB)": None if used is None else round(used / 2**30, 2),
                }
            )
    return rows


def live_view(
    engine_names: Sequence[str],
    gpu_sources: Sequence[str] | None = None,
    window_s: float = 300.0,
    dcgm_urls: Sequence[str] = (),
) -> MonitorView:
    """Sample now (sharing fresh snapshots with any recording) and chart the live window.
    `gpu_sources`: local GPU sources to show ("gpu:0"...); None = all."""
    hub = get_hub()
    targets: list[ScrapeTarget] = scrape_targets_for(list(engine_names))
    gpu_state = hub.gpu_state()
    if gpu_sources is None:
        indices: list[int] | bool = [g.index for g in gpu_state.gpus]
    else:
        indices = [g.index for g in gpu_state.gpus if g.source in set(gpu_sources)]
    snapshots = hub.sample(
        targets, gpus=indices if indices else False, dcgm_urls=dcgm_urls, max_age_s=0.5
    )
    now = time.time()
    sources = [s.source for s in snapshots]
    history = hub.history(sources, window_s, now)
    series = [
        item
        for source in sources
        if (item := series_from_snapshots(history.get(source, []))) is not None
    ]
    errors = [e for url in dcgm_urls if (e := hub.dcgm(url).error)]
    return MonitorView(
        charts=build_charts(series, (now - window_s, now)),
        statuses=[_status(s) for s in snapshots],
        processes=_processes(snapshots),
        recordings=active_recordings(),
        gpu_message=None if gpu_state.available else gpu_state.message,
        errors=errors,
    )


RECORDED_WINDOW_S = 3600.0


def recording_span(run_id: int) -> tuple[float, float] | None:
    """First and last sample time of a run (two index lookups, however long the run)."""
    from sqlalchemy import func, select

    from db.models import Sample
    from db.session import session_scope

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
    processes = [
        {
            "GPU": source.partition(":")[2],
            "process": p.get("name"),
            "pid": p.get("pid"),
            "engine": p.get("engine") or "",
            "memory (GiB)": None if p.get("used_bytes") is None else round(p["used_bytes"] / 2**30, 2),
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


def run_timeline_figure(run_id: int) -> tuple[go.Figure, list[str]]:
    """The Runs page's replay: request latencies (E2E and TTFT at each request's start)
    on top, then the recorded telemetry, all on seconds since the run started. Returns the
    figure and notes (signals not reported, no telemetry recorded)."""
    data = run_telemetry(run_id)
    frame, requests = data.window.frame, data.requests
    present = [
        row for row in TIMELINE_SIGNALS if row[0] in frame.columns and frame[row[0]].notna().any()
    ]
    rows = 1 + len(present)
    figure = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.03,
        subplot_titles=["Request latency (s)"] + [f"{title} ({unit})" for _, title, _, unit in present],
    )
    notes: list[str] = []
    if len(requests):
        for engine, part in requests.groupby("engine_name", sort=True):
            ok = part[part["ok"].astype(bool)]
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
    else:
        notes.append("This run has no request results.")
    if not len(frame):
        notes.append("No telemetry was recorded with this run.")
    for position, (signal, title, scale, _) in enumerate(present, start=2):
        for source, part in frame.groupby("source", sort=True):
            if part[signal].notna().any():
                figure.add_trace(
                    go.Scattergl(
                        x=part["t_s"],
                        y=part[signal] * scale,
                        mode="lines",
                        name=f"{source.partition(':')[2]} · {title}",
                    ),
                    row=position,
                    col=1,
                )
    for source, missing in data.window.not_reported.items():
        shown = [title for signal, title, _, _ in TIMELINE_SIGNALS if signal in missing]
        if shown:
            notes.append(
                f"{source.partition(':')[2]}: {', '.join(shown)} {next(iter(missing.values()))}"
            )
    figure.update_layout(
        height=220 * rows, margin={"l": 10, "r": 10, "t": 40, "b": 10}, uirevision=f"run_{run_id}"
    )
    figure.update_xaxes(title_text="seconds since the run started", row=rows, col=1)
    return figure, notes


@dataclass(frozen=True)
class RecordingRun:
    run_id: int
    name: str
    status: str
    started_at: Any
    engine_names: str


def recording_runs(limit: int = 30) -> list[RecordingRun]:
    """The newest runs of kind "recording" (the Monitor page's replay list)."""
    from sqlalchemy import select

    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.name, Run.status, Run.started_at, Run.engine_names)
            .where(Run.kind == "recording")
            .order_by(Run.id.desc())
            .limit(limit)
        ).all()
    return [RecordingRun(*row) for row in rows]


def gpu_indices(gpu_sources: Sequence[str]) -> list[int]:
    """Local GPU indices of sources like "gpu:0" (remote ones are read from their exporter)."""
    indices = []
    for source in gpu_sources:
        _, _, rest = source.partition(":")
        if rest.isdigit():
            indices.append(int(rest))
    return indices


#: The History view's windows ending now (label, seconds); "Custom" takes dates.
HISTORY_WINDOWS: tuple[tuple[str, float], ...] = (
    ("15 min", 900.0),
    ("1 h", 3600.0),
    ("6 h", 21600.0),
    ("24 h", 86400.0),
    ("7 days", 604800.0),
)

#: Server-side latency percentiles over time, shown by the History views.
HISTORY_CHARTS: tuple[ChartDef, ...] = tuple(
    ChartDef(
        f"{base}_percentiles",
        f"{title} p50 / p90 / p99 (server side)",
        "engine",
        ((f"{base}_p50_s", "p50"), (f"{base}_p90_s", "p90"), (f"{base}_p99_s", "p99")),
        unit="s",
    )
    for base, title in (("ttft", "TTFT"), ("itl", "ITL"), ("e2e", "E2E latency"))
)


def configured_prometheus_url() -> str | None:
    """The operator's Prometheus URL (SHOOTOUT_PROMETHEUS_URL), if any."""
    return remote_gpu_settings()[1]


def history_server(url: str, selector: str | None = None) -> Any:
    """The Prometheus to ask: the operator's (with its selector and token) when `url` is
    theirs or empty; another URL gets no token (a token is never sent where it was not meant)."""
    from services.telemetry.prom_api import PromServer, configured_server

    configured = configured_server()
    text = (url or "").strip()
    if configured is not None and (not text or PromServer.from_input(text).url == configured.url):
        chosen_selector = configured.selector if selector is None else selector
        return PromServer.from_input(configured.url, chosen_selector, configured.token_env)
    return PromServer.from_input(text, selector or "")


def _history_source(item: Any) -> SourceSeries:
    return SourceSeries(
        item.source, item.kind, item.label, item.ts, item.signals, item.not_reported, item.error
    )


def history_view(
    server: Any,
    start_ts: float,
    end_ts: float,
    engine_names: Sequence[str] = (),
    job: str | None = None,
    key_prefix: str = "history_",
    step_s: float | None = None,
) -> MonitorView:
    """Engine and GPU charts of a past window from a team's Prometheus (the engines' own
    series normalised like the live scraper's, dcgm-exporter GPUs), about 1000 points a series."""
    from services.telemetry.prom_history import history

    result = history(server, start_ts, end_ts, step_s=step_s, engine_names=engine_names, job=job or None)
    series = [_history_source(item) for item in result.series]
    statuses = [
        SourceStatus(
            item.source,
            s.name,
            s.label,
            True,
            f"{int(np.isfinite(np.column_stack(list(item.signals.values()))).any(axis=1).sum()) if item.signals else 0}"
            f" of {len(item.ts)} step(s) with data"
            + (f" · {item.matched_by}" if item.matched_by else ""),
        )
        for item, s in zip(result.series, series, strict=True)
    ]
    errors = list(result.messages)
    if not series:
        errors.append(
            f"Prometheus at {server.url} has no engine or dcgm-exporter series in this window."
        )
    charts = build_charts(series, (start_ts, end_ts), key_prefix=key_prefix, webgl=False)
    if any(s.group == "engine" for s in series):
        charts += [
            build_chart(d, series, (start_ts, end_ts), key_prefix, webgl=False) for d in HISTORY_CHARTS
        ]
    return MonitorView(
        charts=charts,
        statuses=statuses,
        processes=[],
        recordings=[],
        errors=errors,
        window=(start_ts, end_ts),
    )


def run_history_view(server: Any, run_id: int, engine_names: Sequence[str] | None = None) -> MonitorView:
    """A stored run's window (imported runs too) from Prometheus: its registered engines
    (or `engine_names`) and the GPUs."""
    from services.telemetry.prom_api import step_for
    from services.telemetry.prom_history import registered_names, run_window

    window = run_window(run_id)
    names, unknown = registered_names(window.engine_names if engine_names is None else engine_names)
    # A benchmark lasts minutes: a finer step than the Monitor's default (15 s at least).
    step = step_for(window.start_ts, window.end_ts, points=500, least_s=1.0)
    view = history_view(
        server, window.start_ts, window.end_ts, names, key_prefix=f"run_history_{run_id}_", step_s=step
    )
    view.errors[:0] = [
        f"Engine {name} of this run is not registered here, so Prometheus cannot be asked for it."
        for name in unknown
    ]
    return view
