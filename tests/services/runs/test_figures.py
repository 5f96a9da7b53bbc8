"""Issue 56: a run page drew empty plot boxes under Distributions (one answer per engine, as a
Playground exchange has: a cumulative distribution of one sample draws no line) and under its
telemetry (a latency row with no requests). A figure is drawn only where it has something to
show."""

from __future__ import annotations

from services import runs
from services.runs.figures import cdf_figure
from tests.services.runs.test_runs import make_run


def test_one_sample_per_engine_is_no_distribution(db_url: str) -> None:
    run_id = make_run(requests={"a": [0.10], "b": [0.20]})
    assert cdf_figure(runs.compare_runs([run_id]), "ttft_s") is None


def test_a_single_sample_beside_a_distribution_is_a_point_not_nothing(db_url: str) -> None:
    run_id = make_run(requests={"a": [0.10, 0.12, 0.11], "b": [0.20]})
    figure = cdf_figure(runs.compare_runs([run_id]), "ttft_s")
    assert figure is not None
    modes = sorted((trace.name.split()[-1], trace.mode) for trace in figure.data)
    assert modes == [("a", "lines"), ("b", "markers")]
