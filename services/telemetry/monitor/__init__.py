"""What the Monitor page shows, built from the hub (live) or the database (recorded):
per-signal plotly charts over a bounded window, per-source states, GPU processes, and
the Runs page's replay of a run's telemetry aligned with its request latencies.

Pages call one function per refresh (`live_view`, `recorded_view`, `run_timeline_figure`)
and only render what comes back. The parts: `charts` (series and figures), `records`
(what the views return), `live`, `recorded` (stored telemetry) and `history` (Prometheus).
"""

from services.telemetry.monitor.charts import (
    CHART_HEIGHT,
    CHARTS,
    LEGEND_PX,
    Chart,
    ChartDef,
    SourceSeries,
    build_chart,
    build_charts,
    series_from_snapshots,
    series_from_window,
)
from services.telemetry.monitor.history import (
    HISTORY_CHARTS,
    HISTORY_WINDOWS,
    configured_prometheus_url,
    history_server,
    history_view,
    run_history_view,
)
from services.telemetry.monitor.live import WINDOW_CHOICES_S, gpu_indices, live_view, monitor_options
from services.telemetry.monitor.recorded import (
    RECORDED_WINDOW_S,
    TIMELINE_SIGNALS,
    recorded_view,
    recording_runs,
    recording_span,
    run_timeline_figure,
)
from services.telemetry.monitor.records import MonitorOptions, MonitorView, RecordingRun, SourceStatus

__all__ = [
    "CHARTS",
    "CHART_HEIGHT",
    "HISTORY_CHARTS",
    "HISTORY_WINDOWS",
    "LEGEND_PX",
    "RECORDED_WINDOW_S",
    "TIMELINE_SIGNALS",
    "WINDOW_CHOICES_S",
    "Chart",
    "ChartDef",
    "MonitorOptions",
    "MonitorView",
    "RecordingRun",
    "SourceSeries",
    "SourceStatus",
    "build_chart",
    "build_charts",
    "configured_prometheus_url",
    "gpu_indices",
    "history_server",
    "history_view",
    "live_view",
    "monitor_options",
    "recorded_view",
    "recording_runs",
    "recording_span",
    "run_history_view",
    "run_timeline_figure",
    "series_from_snapshots",
    "series_from_window",
]
