"""Plotly figures made inert before they reach a browser.

Plotly renders a subset of HTML in trace names, titles, annotations, hover texts and
category tick labels (`<a href>`, `<img>` is dropped but `style=` and links are kept): an
imported run's engine label or a model name such as `<a href="http://attacker/?q=...">vllm</a>`
became a live link in the legend. Every text a figure shows goes through html.escape here,
so it can only be read, not followed; only the line break `<br>` that builders write
themselves survives. Hover templates are the builders' own (they escape what they put in).
"""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go

_LINE_BREAK = html.escape("<br>", quote=False)


def _safe(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    return html.escape(text, quote=False).replace(_LINE_BREAK, "<br>")


def _safe_values(values: Any) -> Any:
    """Category values (engine names on a bar chart's axis) escaped; numbers, dates and
    arrays of them are left as they are (never copied)."""
    if isinstance(values, str):
        return _safe(values)
    if isinstance(values, (list, tuple)) and any(isinstance(v, str) for v in values):
        return [_safe(v) for v in values]
    if getattr(values, "dtype", None) is not None and values.dtype.kind in "OUS":
        return [_safe(v) for v in values.tolist()]
    return values


def inert(figure: go.Figure) -> go.Figure:
    """Escape trace names, legend group titles, texts, hover texts, category values, the
    title, the legend's title, axis titles and annotations of `figure` (in place; returned
    for chaining)."""
    for trace in figure.data:
        if getattr(trace, "name", None):
            trace.name = _safe(trace.name)
        if "legendgrouptitle" in trace and trace.legendgrouptitle.text:
            trace.legendgrouptitle.text = _safe(trace.legendgrouptitle.text)
        for field in ("text", "hovertext", "x", "y", "labels"):
            value = getattr(trace, field, None) if field in trace else None
            if value is not None:
                setattr(trace, field, _safe_values(value))
    layout = figure.layout
    if layout.title and layout.title.text:
        layout.title.text = _safe(layout.title.text)
    if layout.legend and layout.legend.title and layout.legend.title.text:
        layout.legend.title.text = _safe(layout.legend.title.text)
    for axis_name in [name for name in layout if name.startswith(("xaxis", "yaxis"))]:
        axis = layout[axis_name]
        if axis.title and axis.title.text:
            axis.title.text = _safe(axis.title.text)
        if axis.ticktext:
            axis.ticktext = [_safe(v) for v in axis.ticktext]
    for annotation in layout.annotations or ():
        if annotation.text:
            annotation.text = _safe(annotation.text)
    return figure
