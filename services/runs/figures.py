"""The comparison as plotly figures: latency CDFs overlaid per metric, and median latency
against output throughput (a sweep draws a curve, a single load one point)."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from services.bench.results import EngineResults
from services.runs.records import LATENCY_METRICS, Comparison, Series

CDF_POINTS = 1000
#: One colour per series, the same in every figure (plotly's default qualitative palette).
SERIES_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def _cdf_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.sort(values[np.isfinite(values)])
    if values.size <= CDF_POINTS:
        return values, np.arange(1, values.size + 1) / values.size
    # Quantiles on an even grid draw the same curve as every point, at a bounded cost.
    shares = np.linspace(0, 1, CDF_POINTS)
    return np.quantile(values, shares), shares


def _finite_count(values: np.ndarray | None) -> int:
    return 0 if values is None else int(np.isfinite(values).sum())


def cdf_figure(comparison: Comparison, metric: str) -> go.Figure | None:
    """Overlaid cumulative distributions of one latency metric; None unless some series has
    two samples or more. One sample draws no line (a Playground exchange has one answer per
    engine: its Distributions box was drawn empty, issue 56), so beside a distribution a lone
    sample is a point, and alone it is no figure: the table says it all."""
    counts = [_finite_count(series.samples.get(metric)) for series in comparison.series]
    if max(counts, default=0) < 2:
        return None
    figure = go.Figure()
    for index, series in enumerate(comparison.series):
        values = series.samples.get(metric)
        if values is None or counts[index] == 0:
            continue
        x, y = _cdf_points(values)
        notes = [
            note
            for note, on in (
                ("all sweep steps", series.multi_step),
                (f"1 in {series.sampled_every} requests", series.sampled_every > 1),
            )
            if on
        ]
        name = series.label + (f" ({', '.join(notes)})" if notes else "")
        figure.add_trace(
            go.Scatter(
                x=x * 1000,
                y=y,
                mode="lines" if counts[index] > 1 else "markers",
                line={"shape": "hv", "color": SERIES_COLOURS[index % len(SERIES_COLOURS)]},
                name=name,
                hovertemplate="%{x:.1f} ms: %{y:.1%} of requests<extra>"
                + html.escape(name)
                + "</extra>",
            )
        )
    if not figure.data:
        return None
    figure.update_layout(
        title=f"{LATENCY_METRICS[metric]}: cumulative distribution",
        xaxis_title=f"{LATENCY_METRICS[metric]} (ms)",
        yaxis_title="share of requests at or below",
        yaxis_tickformat=".0%",
        # A share stops at 100%: left to autorange, one sample drew the axis to 200% (issue 47).
        yaxis_range=[0, 1.0],
        legend={"orientation": "h", "y": -0.25},
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
        height=380,
    )
    return figure


@dataclass(frozen=True)
class _Point:
    """One load of a series: its output throughput, median TTFT and E2E, and its load in words."""

    x: float
    ttft: float | None
    e2e: float | None
    label: str


def _points(series: Series) -> list[_Point]:
    # A single-load run's one point: its figures as the comparison read them.
    steps = series.sweep or [EngineResults.from_json({**series.rates, **series.stats})]
    points = []
    for step in steps:
        throughput = step.output_throughput_tok_s
        if throughput is None:
            continue
        load = []
        if step.concurrency is not None:
            load.append(f"concurrency {step.concurrency}")
        if step.rate is not None:
            load.append(f"rate {step.rate}/s")
        points.append(
            _Point(
                x=throughput,
                ttft=step.ttft_s.p50 if step.ttft_s is not None else None,
                e2e=step.e2e_s.p50 if step.e2e_s is not None else None,
                label=", ".join(load) or "whole run",
            )
        )
    return sorted(points, key=lambda point: point.x)


def latency_throughput_figure(comparison: Comparison) -> go.Figure | None:
    """Median TTFT and E2E latency against output throughput, one curve per series (a
    sweep draws a curve; a single-load run is one point)."""
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("TTFT p50 vs output throughput", "E2E p50 vs output throughput")
    )
    drawn = False
    for index, series in enumerate(comparison.series):
        points = _points(series)
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        for column, medians in ((1, [p.ttft for p in points]), (2, [p.e2e for p in points])):
            usable = [
                (p, median) for p, median in zip(points, medians, strict=True) if median is not None
            ]
            if not usable:
                continue
            drawn = True
            figure.add_trace(
                go.Scatter(
                    x=[p.x for p, _ in usable],
                    y=[median * 1000 for _, median in usable],
                    text=[p.label for p, _ in usable],
                    mode="lines+markers",
                    name=series.label,
                    legendgroup=series.key,
                    showlegend=column == 1,
                    line={"color": colour},
                    hovertemplate="%{text}<br>%{x:,.1f} tok/s, %{y:.1f} ms<extra>"
                    + html.escape(series.label)
                    + "</extra>",
                ),
                row=1,
                col=column,
            )
    if not drawn:
        return None
    figure.update_xaxes(title_text="output tokens/s")
    figure.update_yaxes(title_text="ms")
    figure.update_layout(
        height=400, legend={"orientation": "h", "y": -0.25}, margin={"l": 60, "r": 20, "t": 50, "b": 40}
    )
    return figure


def comparison_figures(comparison: Comparison) -> dict[str, go.Figure]:
    """Every figure the comparison can draw, keyed "cdf:<metric>" and "latency_throughput"."""
    figures: dict[str, go.Figure] = {}
    for metric in LATENCY_METRICS:
        figure = cdf_figure(comparison, metric)
        if figure is not None:
            figures[f"cdf:{metric}"] = figure
    curve = latency_throughput_figure(comparison)
    if curve is not None:
        figures["latency_throughput"] = curve
    return figures
