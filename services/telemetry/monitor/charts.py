"""The Monitor's charts: which signals each chart draws, a source's samples as arrays
(from live snapshots or a stored window), and one plotly figure per chart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go

from services.engines.signals import SIGNALS, SourceGroup
from services.telemetry.query import SampleWindow
from services.telemetry.snapshot import Snapshot

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


def axis_unit(definition: ChartDef, series: Sequence[SourceSeries]) -> tuple[str, float]:
    """The unit and scale a chart draws in: durations in ms while none reaches a second, in s
    once one does, one unit per chart; other quantities as defined. Latency p90 drew ITL's
    0.02 s and E2E's 3 s on one seconds axis that plotly labelled "20m" (issue 36)."""
    if definition.unit != "s":
        return definition.unit, definition.scale
    peaks = [
        float(np.nanmax(np.abs(values)))
        for item in series
        if item.group == definition.group
        for signal, _ in definition.signals
        if (values := item.signals.get(signal)) is not None
        and signal not in item.not_reported
        and np.isfinite(values).any()
    ]
    return ("s", 1.0) if peaks and max(peaks) >= 1 else ("ms", 1000.0)


def build_chart(
    definition: ChartDef,
    series: Sequence[SourceSeries],
    x_range: tuple[float, float] | None = None,
    key_prefix: str = "",
    webgl: bool = True,
    origin_ts: float | None = None,
) -> Chart:
    """`webgl=False` draws SVG lines: a browser keeps about 16 WebGL contexts, and a page of
    ten WebGL charts lost its first ones (drawn empty); a history has at most ~1000 points a line.
    `origin_ts`: time is drawn as seconds since then (a run's start), as the run's other charts
    are, instead of on the wall clock."""
    trace_type = go.Scattergl if webgl else go.Scatter
    figure = go.Figure()
    notes: list[str] = []
    has_data = False
    many_signals = len(definition.signals) > 1
    unit, scale = axis_unit(definition, series)
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
                    x=_times(item.ts) if origin_ts is None else item.ts - origin_ts,
                    y=values * scale,
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
        yaxis_title=unit,
        xaxis={"type": "date"},  # an empty chart still reads as time, not 0..6
    )
    # Plain numbers on the axis and in the hover: plotly's own prefixes ("20m", "12k") put a
    # second unit beside the axis title's.
    figure.update_yaxes(exponentformat="none", separatethousands=True, hoverformat=",.4~r")
    if definition.y_range:
        figure.update_yaxes(range=list(definition.y_range))
    else:
        # Every monitored quantity is a count, a rate or a size: never below zero (an all-zero
        # series drew an axis from -1 to 1).
        figure.update_yaxes(rangemode="tozero")
        if not has_data:
            figure.update_yaxes(range=[0, 1])
    if origin_ts is not None:
        figure.update_xaxes(type="linear", title_text="seconds since the run started")
        if x_range:
            figure.update_xaxes(range=[x_range[0] - origin_ts, x_range[1] - origin_ts])
    elif x_range:
        figure.update_xaxes(range=[_times(np.array([x_range[0]]))[0], _times(np.array([x_range[1]]))[0]])
    return Chart(f"{key_prefix}{definition.key}", definition.title, figure, notes, has_data)


def build_charts(
    series: Sequence[SourceSeries],
    x_range: tuple[float, float] | None = None,
    key_prefix: str = "monitor_",
    webgl: bool = True,
    origin_ts: float | None = None,
) -> list[Chart]:
    groups = {s.group for s in series}
    return [
        build_chart(d, series, x_range, key_prefix, webgl, origin_ts)
        for d in CHARTS
        if d.group in groups
    ]
