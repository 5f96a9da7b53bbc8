"""Issue 56: a run page drew empty plot boxes under Distributions (one answer per engine, as a
Playground exchange has: a cumulative distribution of one sample draws no line) and under its
telemetry (a latency row with no requests). A figure is drawn only where it has something to
show."""

from __future__ import annotations

from services import runs
from services.runs.figures import cdf_figure, latency_throughput_figure
from tests.services.runs.test_runs import engine_summary, make_run


def test_one_sample_per_engine_is_no_distribution(db_url: str) -> None:
    run_id = make_run(requests={"a": [0.10], "b": [0.20]})
    assert cdf_figure(runs.compare_runs([run_id]), "ttft_s") is None


def test_a_single_sample_beside_a_distribution_is_a_point_not_nothing(db_url: str) -> None:
    run_id = make_run(requests={"a": [0.10, 0.12, 0.11], "b": [0.20]})
    figure = cdf_figure(runs.compare_runs([run_id]), "ttft_s")
    assert figure is not None
    modes = sorted((trace.name.split()[-1], trace.mode) for trace in figure.data)
    assert modes == [("a", "lines"), ("b", "markers")]


def test_a_sweep_is_a_curve_of_its_steps_and_a_single_load_one_point(db_url: str) -> None:
    sweep = [
        {**engine_summary(ttft, 0.02, 1.0, rate), "engine": "a", "step": step, "concurrency": level}
        for step, (level, ttft, rate) in enumerate(((1, 0.05, 100.0), (8, 0.20, 400.0)))
    ]
    swept = make_run(engines={"a": {**sweep[1], "from_step": 1}}, summary={"sweep": sweep})
    single = make_run(engines={"b": engine_summary(0.10, 0.02, 1.0, 250.0)})
    figure = latency_throughput_figure(runs.compare_runs([swept, single]))
    assert figure is not None
    ttft = {trace.name: trace for trace in figure.data if trace.xaxis == "x"}
    curve, point = ttft[f"#{swept} a"], ttft[f"#{single} b"]
    assert (list(curve.x), list(curve.y)) == ([100.0, 400.0], [50.0, 200.0])
    assert list(curve.text) == ["concurrency 1", "concurrency 8"]
    assert (list(point.x), list(point.y), list(point.text)) == ([250.0], [100.0], ["whole run"])
