"""The Monitor page's form answers as values: the dcgm-exporter URLs typed in one field, and the
time span a History window names."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from services.team.access import describe as describe_action
from services.telemetry.monitor import (
    HISTORY_WINDOWS,
    RECORDED_WINDOW_S,
    WINDOW_CHOICES_S,
    MonitorOptions,
    MonitorView,
    gpu_indices,
    history_server,
    history_view,
    live_view,
    monitor_options,
    recorded_view,
    recording_runs,
)
from services.telemetry.recorder import begin_recording_run, stop_recording

#: What the page reads: this module's own, and what it passes on from the feature's others.
__all__ = [
    "CUSTOM_WINDOW",
    "RECORDED_WINDOW_S",
    "WINDOW_CHOICES_S",
    "MonitorOptions",
    "MonitorView",
    "begin_recording_run",
    "describe_action",
    "gpu_indices",
    "history_server",
    "history_span",
    "history_view",
    "history_window_labels",
    "live_view",
    "monitor_options",
    "parse_urls",
    "recorded_view",
    "recording_runs",
    "stop_recording",
]

CUSTOM_WINDOW = "Custom"


def history_window_labels() -> list[str]:
    return [label for label, _ in HISTORY_WINDOWS] + [CUSTOM_WINDOW]


def parse_urls(text: str) -> list[str]:
    """Comma-separated URLs, blanks dropped."""
    return [url.strip() for url in text.split(",") if url.strip()]


def history_span(
    window_label: str,
    now: datetime,
    start: tuple[date, time] | None = None,
    end: tuple[date, time] | None = None,
) -> tuple[float, float]:
    """(start, end) as Unix seconds: the named window up to now, or the custom dates (UTC)."""
    if window_label == CUSTOM_WINDOW:
        if start is None or end is None:
            raise ValueError("A custom window needs its start and end.")
        return (datetime.combine(*start, UTC).timestamp(), datetime.combine(*end, UTC).timestamp())
    end_ts = now.timestamp()
    return end_ts - dict(HISTORY_WINDOWS)[window_label], end_ts
