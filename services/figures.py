"""Plotly figures made inert before they reach a browser.

Plotly renders a subset of HTML in trace names, titles and annotations (`<a href>`, `<img>`
is dropped but `style=` and links are kept): an imported run's engine label or a model name
such as `<a href="http://attacker/?q=...">vllm</a>` became a live link in the legend. Every
text a figure shows goes through html.escape here, so it can only be read, not followed.
"""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go


def _safe(text: Any) -> Any:
    return html.escape(text, quote=False) if isinstance(text, str) else text


def inert(figure: go.Figure) -> go.Figure:
    """Escape trace names, legend groups' titles, hover texts, the title, axis titles and
    annotations of `figure` (in place; returned for chaining)."""
    for trace in figure.data:
        if getattr(trace, "name", None):
            trace.name = _safe(trace.name)
        for field in ("text", "hovertext"):
            value = getattr(trace, field, None) if field in trace else None
            if isinstance(value, str):
                setattr(trace, field, _safe(value))
            elif isinstance(value, (list, tuple)):
                setattr(trace, field, [_safe(v) for v in value])
    layout = figure.layout
    if layout.title and layout.title.text:
        layout.title.text = _safe(layout.title.text)
    for axis_name in [name for name in layout if name.startswith(("xaxis", "yaxis"))]:
        axis = layout[axis_name]
        if axis.title and axis.title.text:
            axis.title.text = _safe(axis.title.text)
    for annotation in layout.annotations or ():
        if annotation.text:
            annotation.text = _safe(annotation.text)
    return figure
