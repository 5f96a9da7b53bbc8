"""One plotly figure per demo step, built from the step's stored chart spec.

Sized for a projector (large type, thick lines). No colours or template are set here:
the page lets Streamlit's theme (dark or light) style the figure, and the HTML report
uses plotly's default.
"""

from __future__ import annotations

import plotly.graph_objects as go

from services.core import units
from services.demos.readout import ChartSpec
from services.demos.records import StepView
from services.demos.summary import StepBlock

FONT_SIZE = 18
TITLE_SIZE = 22
HEIGHT = 460


#: Where each line's value labels go, by series: two engines at the same value (both 0.80 s
#: at turn 1) drew their labels on top of each other.
LABEL_POSITIONS = ("top center", "bottom center", "middle right", "middle left")


def chart_unit(spec: ChartSpec) -> tuple[units.TimeUnit | None, float]:
    """A chart of seconds in its values' one unit (units.duration_unit: ms while none reaches a
    second), with the scale of its axis; other charts in their own unit (scale 1)."""
    if not spec.y_title.endswith("(s)"):
        return None, 1.0
    unit = units.duration_unit(v for s in spec.series for v in s.y)
    return (unit, 1.0) if unit == "s" else (unit, 1000.0)


def value_labels(spec: ChartSpec) -> list[list[str] | None]:
    """Each series' value labels. On a chart of seconds, every label in the chart's one unit:
    the labels were formatted one by one, so a turn chart read "0.20 s" beside "45 ms" under
    an axis in seconds (issue 36). Other charts keep their stored texts."""
    texts: list[list[str] | None] = [list(s.text) if s.text else None for s in spec.series]
    unit, _ = chart_unit(spec)
    if not unit:
        return texts
    return [
        [units.duration(v, unit) for v in series.y] if text is not None else None
        for series, text in zip(spec.series, texts, strict=True)
    ]


def _scaled(values: list[float | None], scale: float) -> list[float | None]:
    return values if scale == 1 else [None if v is None else v * scale for v in values]


def figure_from_spec(spec: ChartSpec) -> go.Figure:
    figure = go.Figure()
    labels = value_labels(spec)
    unit, scale = chart_unit(spec)
    for number, series in enumerate(spec.series):
        if spec.kind == "bar":
            figure.add_trace(
                go.Bar(
                    name=series.name,
                    x=[str(x) for x in series.x],
                    y=_scaled(series.y, scale),
                    text=labels[number],
                    textposition="outside",
                    cliponaxis=False,
                )
            )
        else:
            figure.add_trace(
                go.Scatter(
                    name=series.name,
                    x=[str(x) for x in series.x] if spec.x_category else series.x,
                    y=_scaled(series.y, scale),
                    text=labels[number],
                    cliponaxis=False,
                    mode="lines+markers+text" if labels[number] else "lines+markers",
                    textposition=LABEL_POSITIONS[number % len(LABEL_POSITIONS)],
                    line={"width": 4},
                    marker={"size": 12},
                )
            )
    for reference in spec.references:
        figure.add_hline(
            y=reference["y"] * scale, line_dash="dash", annotation_text=reference.get("label", "")
        )
    figure.update_layout(
        title={"text": spec.title, "font": {"size": TITLE_SIZE}},
        font={"size": FONT_SIZE},
        height=HEIGHT,
        barmode="group",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
        margin={"t": 110, "b": 60, "l": 70, "r": 90},
        uniformtext={"minsize": 12, "mode": "hide"},
    )
    x_type = "category" if spec.x_category else "log" if spec.x_log else None
    figure.update_xaxes(title_text=spec.x_title, type=x_type)
    y_title = spec.y_title[: -len("(s)")] + "(ms)" if unit == "ms" else spec.y_title
    figure.update_yaxes(title_text=y_title, type="log" if spec.y_log else None, rangemode="tozero")
    return figure


def step_figure(step: StepView | StepBlock) -> go.Figure | None:
    """The figure of a step (a `StepView` or a stored step dict); None when it has no chart yet."""
    chart = step.get("chart") if isinstance(step, dict) else step.chart
    if chart is None:
        return None
    spec = ChartSpec.from_dict(chart) if isinstance(chart, dict) else chart
    if not any(any(v is not None for v in s.y) for s in spec.series):
        return None
    return figure_from_spec(spec)
