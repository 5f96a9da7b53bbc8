"""Issue 20: chart legends kept <a href> and style= from labels."""

from __future__ import annotations

import plotly.graph_objects as go

from services.figures import inert


def test_names_titles_and_annotations_show_as_text() -> None:
    hostile = '<a href="http://attacker.example/?q=secret" style="color:red">vllm</a>'
    figure = go.Figure(go.Scatter(x=[1], y=[2], name=hostile, text=[hostile]))
    figure.update_layout(title=hostile, xaxis_title=hostile)
    figure.add_annotation(text=hostile, x=1, y=2)
    inert(figure)
    for text in (figure.data[0].name, figure.data[0].text[0], figure.layout.title.text,
                 figure.layout.xaxis.title.text, figure.layout.annotations[0].text):
        assert "<a" not in text and "&lt;a href" in text
