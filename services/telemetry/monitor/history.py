"""History views from a team's Prometheus: a past window's engine and GPU charts with
server-side latency percentiles, and a stored run's window."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from services.telemetry.gpu import remote_gpu_settings
from services.telemetry.monitor.charts import ChartDef, SourceSeries, build_chart, build_charts
from services.telemetry.monitor.records import MonitorView, SourceStatus
from services.telemetry.prom_api import PromServer, configured_server, step_for
from services.telemetry.prom_history import history, registered_names, run_window

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
    origin_ts: float | None = None,
) -> MonitorView:
    """Engine and GPU charts of a past window from a team's Prometheus (the engines' own
    series normalised like the live scraper's, dcgm-exporter GPUs), about 1000 points a series."""
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
    span = (start_ts, end_ts)
    charts = build_charts(series, span, key_prefix=key_prefix, webgl=False, origin_ts=origin_ts)
    if any(s.group == "engine" for s in series):
        charts += [
            build_chart(d, series, span, key_prefix, webgl=False, origin_ts=origin_ts)
            for d in HISTORY_CHARTS
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
    window = run_window(run_id)
    names, unknown = registered_names(window.engine_names if engine_names is None else engine_names)
    # A benchmark lasts minutes: a finer step than the Monitor's default (15 s at least).
    step = step_for(window.start_ts, window.end_ts, points=500, least_s=1.0)
    # On the run's clock, seconds since it started, as the Runs page's other charts: the page
    # mixed wall-clock and since-start axes (issue 36).
    view = history_view(
        server,
        window.start_ts,
        window.end_ts,
        names,
        key_prefix=f"run_history_{run_id}_",
        step_s=step,
        origin_ts=window.start_ts,
    )
    view.errors[:0] = [
        f"Engine {name} of this run is not registered here, so Prometheus cannot be asked for it."
        for name in unknown
    ]
    return view
