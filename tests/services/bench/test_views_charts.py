"""Benchmarks' charts against the Runs page's: the same CDF is drawn the same way."""

from __future__ import annotations

from services.bench.view.charts import cdf_figure as bench_cdf
from services.runs import compare_runs
from services.runs.figures import cdf_figure as runs_cdf
from tests.services.runs.test_runs import engine_summary, make_run


def test_a_latency_cdf_is_drawn_as_steps_on_both_pages(db_url: str) -> None:
    """Issue 36: the same CDF was drawn as lines on Benchmarks and as steps on Runs."""
    ttfts = [0.05, 0.08, 0.12, 0.2]
    run_id = make_run(engines={"vllm": engine_summary(0.08, 0.02, 1.0, 400.0)}, requests={"vllm": ttfts})
    runs = runs_cdf(compare_runs([run_id]), "ttft_s")
    assert runs is not None
    benchmarks = bench_cdf({"vllm": ttfts}, "TTFT")
    shapes = {trace.line.shape for figure in (runs, benchmarks) for trace in figure.data}
    assert shapes == {"hv"}


def test_a_cdf_s_share_axis_stops_at_100_percent(db_url: str) -> None:
    """Issue 47: one sample autoranged "share of requests at or below" to 200%."""
    run_id = make_run(
        engines={"vllm": engine_summary(0.08, 0.02, 1.0, 400.0)}, requests={"vllm": [0.05]}
    )
    # One sample draws no line: no figure at all (issue 56's empty box), the table says it.
    assert runs_cdf(compare_runs([run_id]), "ttft_s") is None
    run_id = make_run(
        engines={"vllm": engine_summary(0.08, 0.02, 1.0, 400.0)}, requests={"vllm": [0.05, 0.06]}
    )
    runs = runs_cdf(compare_runs([run_id]), "ttft_s")
    assert runs is not None
    for figure in (runs, bench_cdf({"vllm": [0.05]}, "TTFT")):
        assert tuple(figure.layout.yaxis.range) == (0, 1)
