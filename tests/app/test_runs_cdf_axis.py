"""The TTFT distribution's axis is a share: it stops at 100% (issue 47: it ran to 200%)."""

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
