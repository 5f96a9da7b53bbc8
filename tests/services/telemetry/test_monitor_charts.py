"""The Monitor's charts: one unit per chart, stated once, on the axis."""

from __future__ import annotations

import numpy as np

from services.telemetry.monitor import CHARTS, SourceSeries, build_chart

LATENCY = next(d for d in CHARTS if d.key == "latency")


def _engine(name: str, **signals: list[float]) -> SourceSeries:
    ts = np.arange(len(next(iter(signals.values()))), dtype=float) + 1_700_000_000
    return SourceSeries(
        f"engine:{name}",
        "vllm",
        "vLLM",
        ts,
        {k: np.array(v, dtype=float) for k, v in signals.items()},
        {},
    )


def test_a_latency_chart_under_a_second_is_drawn_in_ms() -> None:
    """Issue 36: ITL's 0.02 s on a seconds axis read "20m" beside the axis title "s"."""
    chart = build_chart(LATENCY, [_engine("a", itl_p90_s=[0.02, 0.03], ttft_p90_s=[0.25, 0.4])])
    layout = chart.figure.layout
    assert layout.yaxis.title.text == "ms"
    assert layout.yaxis.exponentformat == "none"  # no "20m", no "12k"
    assert [list(trace.y) for trace in chart.figure.data] == [[250.0, 400.0], [20.0, 30.0]]


def test_one_latency_past_a_second_puts_the_whole_chart_in_seconds() -> None:
    series = [_engine("a", itl_p90_s=[0.02]), _engine("b", e2e_p90_s=[3.5], ttft_p90_s=[np.nan])]
    chart = build_chart(LATENCY, series)
    assert chart.figure.layout.yaxis.title.text == "s"
    assert sorted(float(trace.y[0]) for trace in chart.figure.data if np.isfinite(trace.y[0])) == [
        0.02,
        3.5,
    ]


def test_other_charts_keep_their_own_unit() -> None:
    kv = next(d for d in CHARTS if d.key == "kv_cache")
    chart = build_chart(kv, [_engine("a", kv_cache_usage=[0.5])])
    assert chart.figure.layout.yaxis.title.text == "%" and list(chart.figure.data[0].y) == [50.0]


def test_a_runs_chart_counts_seconds_from_the_runs_start() -> None:
    """Issue 36: the Runs page drew its telemetry in seconds since the start and its Prometheus
    history on the wall clock."""
    series = [_engine("a", kv_cache_usage=[0.1, 0.2, 0.3])]
    start = float(series[0].ts[0]) - 5
    kv = next(d for d in CHARTS if d.key == "kv_cache")
    chart = build_chart(kv, series, (start, start + 60), origin_ts=start)
    xaxis = chart.figure.layout.xaxis
    assert list(chart.figure.data[0].x) == [5.0, 6.0, 7.0]
    assert xaxis.type == "linear" and xaxis.title.text == "seconds since the run started"
    assert list(xaxis.range) == [0, 60]
    assert build_chart(kv, series).figure.layout.xaxis.type == "date"  # Monitor: the wall clock
