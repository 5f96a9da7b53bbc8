"""Demo charts: the labels and the axis of a chart of seconds agree on one unit."""

from __future__ import annotations

from services.demos.charts import figure_from_spec
from services.demos.readout import ChartSpec, Series


def _turns(*ttfts: tuple[str, list[float | None]]) -> ChartSpec:
    return ChartSpec(
        title="TTFT per chat turn",
        x_title="",
        y_title="TTFT (s)",
        kind="line",
        x_category=True,
        series=[
            # The texts as the demo stored them, each value formatted on its own.
            Series(name, [f"turn {i + 1}" for i in range(len(y))], y, ["stored"] * len(y))
            for name, y in ttfts
        ],
    )


def test_a_sub_second_chart_reads_ms_on_its_labels_and_axis() -> None:
    """Issue 36: a turn chart read "0.20 s" beside "45 ms" under an axis in seconds."""
    figure = figure_from_spec(_turns(("on", [0.2, 0.045]), ("off", [0.21, None])))
    assert [list(t.text) for t in figure.data] == [["200 ms", "45.0 ms"], ["210 ms", "—"]]
    assert list(figure.data[0].y) == [200.0, 45.0]
    assert figure.layout.yaxis.title.text == "TTFT (ms)"


def test_a_chart_with_a_value_past_a_second_is_all_seconds() -> None:
    figure = figure_from_spec(_turns(("on", [1.37, 0.97, 0.06])))
    assert list(figure.data[0].text) == ["1.37 s", "0.970 s", "0.060 s"]  # one rule too
    assert list(figure.data[0].y) == [1.37, 0.97, 0.06] and figure.layout.yaxis.title.text == "TTFT (s)"


def test_other_charts_keep_their_stored_labels() -> None:
    spec = ChartSpec(
        title="Throughput",
        x_title="engine",
        y_title="tokens/s",
        kind="bar",
        series=[Series("a", ["x"], [12.5], ["12.5 tok/s"])],
    )
    figure = figure_from_spec(spec)
    assert list(figure.data[0].text) == ["12.5 tok/s"] and list(figure.data[0].y) == [12.5]
