"""Issue 20: chart legends kept <a href> and style= from labels."""

from __future__ import annotations

import plotly.graph_objects as go

from services.core.figures import inert


def test_names_titles_and_annotations_show_as_text() -> None:
    hostile = '<a href="http://attacker.example/?q=secret" style="color:red">vllm</a>'
    figure = go.Figure(go.Scatter(x=[1], y=[2], name=hostile, text=[hostile]))
    figure.update_layout(title=hostile, xaxis_title=hostile)
    figure.add_annotation(text=hostile, x=1, y=2)
    inert(figure)
    for text in (
        figure.data[0].name,
        figure.data[0].text[0],
        figure.layout.title.text,
        figure.layout.xaxis.title.text,
        figure.layout.annotations[0].text,
    ):
        assert "<a" not in text and "&lt;a href" in text


def test_category_values_legend_titles_and_ticks_show_as_text_and_numbers_stay() -> None:
    hostile = '<img src="http://attacker.example/x.png">llama`cpp'
    figure = go.Figure(
        go.Bar(x=[hostile, "plain"], y=[1.5, 2.0], name="ok", legendgrouptitle_text=hostile)
    )
    figure.add_trace(go.Scatter(x=[1, 2], y=[3, 4], name="numbers"))
    figure.update_layout(
        legend_title_text=hostile, yaxis={"tickmode": "array", "tickvals": [1], "ticktext": [hostile]}
    )
    figure.add_annotation(text="first line<br>second <b>line</b>", x=1, y=2)
    inert(figure)
    assert figure.data[0].x == ('&lt;img src="http://attacker.example/x.png"&gt;llama`cpp', "plain")
    assert figure.data[0].y == (1.5, 2.0) and figure.data[1].x == (1, 2)
    for text in (
        figure.data[0].legendgrouptitle.text,
        figure.layout.legend.title.text,
        figure.layout.yaxis.ticktext[0],
    ):
        assert "<img" not in text and "&lt;img" in text
    # The builders' own line breaks stay; any other tag is text.
    assert figure.layout.annotations[0].text == "first line<br>second &lt;b&gt;line&lt;/b&gt;"
