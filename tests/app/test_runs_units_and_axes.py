"""The Runs page reads its figures one way: one unit per sentence, shares that stop at 100%
(issue 47)."""

from __future__ import annotations

import json

from services.bench.view.charts import cdf_figure
from tests.app.test_runs_page import runs_page
from tests.services.runs.test_runs import engine_summary, make_run


def test_the_share_axis_stops_at_100_percent(db_url: str) -> None:
    # One request per engine: left to autorange, Plotly padded a lone point to 0-200%.
    run_id = make_run(
        engines={"a": engine_summary(0.1, 0.01, 0.5, 100.0), "b": engine_summary(0.2, 0.01, 0.5, 90.0)},
        requests={"a": [0.1], "b": [0.2]},
    )
    at = runs_page(run=str(run_id))
    assert not at.exception, at.exception
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    cdfs = [s for s in specs if "at or below" in json.dumps(s["layout"].get("yaxis", {}))]
    assert cdfs, [s["layout"].get("title") for s in specs]
    for spec in cdfs:
        assert spec["layout"]["yaxis"]["range"] == [0, 1.0]


def test_the_benchmarks_page_distribution_stops_at_100_percent_too() -> None:
    figure = cdf_figure({"a": [0.1]}, "TTFT")
    assert tuple(figure.layout.yaxis.range) == (0, 1.0) and figure.layout.yaxis.tickformat == ".0%"


def test_a_verdict_gives_one_unit_per_sentence(db_url: str) -> None:
    """Issue 47: "E2E latency (median): ... (500 ms vs 2.00 s at the median; p99 1.00 s vs
    4.00 s)": the same kind of figure in ms and in s in one sentence."""
    run_id = make_run(
        engines={
            "a": engine_summary(0.05, 0.01, 0.5, 900.0),
            "b": engine_summary(0.2, 0.04, 2.0, 300.0),
        },
        requests={"a": [0.04, 0.05], "b": [0.19, 0.2]},
    )
    at = runs_page(run=str(run_id))
    assert not at.exception, at.exception
    e2e = next(
        line for m in at.markdown for line in m.value.splitlines() if "E2E latency (median)" in line
    )
    assert "0.500 s vs 2.00 s at the median; p99 1.00 s vs 4.00 s" in e2e and " ms" not in e2e
