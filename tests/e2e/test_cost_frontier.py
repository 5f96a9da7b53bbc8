"""The Benchmarks page in Chromium draws the cost frontier of a priced sweep and names its
cheapest configuration meeting the SLOs (issue 33). The engines are the scripted server at two
speeds and two prices, benchmarked for real (a concurrency sweep), so the figures are the ones a
user's run stores; the page must show exactly those."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e.conftest import (
    assert_no_exception,
    assert_no_missing_words,
    plotted_traces,
    screenshot,
    wait_for_app,
)
from tests.support.scripted_server import ScriptedServer

pytestmark = pytest.mark.e2e


@pytest.fixture
def priced_sweep(app_server, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> int:  # type: ignore[no-untyped-def]
    """A finished benchmark in the app server's database: a fast dear engine and a slow cheap
    one, each at concurrency 1 and 4, with a TTFT SLO both meet."""
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    from services.bench import jobs
    from services.bench.arrivals import LoadSpec
    from services.bench.spec import BenchSpec, EngineTarget, SweepSpec
    from services.bench.stats import SloSpec
    from services.bench.workloads import WorkloadSpec

    def engine(name: str, price: float, **scenario: int) -> EngineTarget:
        return EngineTarget(
            name=name,
            base_url=scripted_server.base_url,
            kind="vllm",
            model=scripted_server.model(**scenario),
            usd_per_hour=price,
        )

    spec = BenchSpec(
        engines=(
            engine("fast-dear", 8.0, ttft=10, itl=2, tokens=16),
            engine("slow-cheap", 0.5, ttft=30, itl=12, tokens=16),
        ),
        workload=WorkloadSpec(input_len=16, output_len=16),
        load=LoadSpec(requests=8),
        slo=SloSpec(ttft_ms=2000),
        sweep=SweepSpec(kind="concurrency", values=(1, 4), stop_on_plateau=False),
        record_engine_metrics=False,
        name="e2e cost frontier",
    )
    run_id = jobs.create_run(spec)
    # In a thread of its own: Playwright's sync API may hold an event loop on this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(jobs.execute_run, run_id).result(timeout=300)
    assert jobs.get_run(run_id).status == "finished"
    return run_id


def test_the_cost_frontier_and_its_cheapest_configuration(priced_sweep, app_page, app_server) -> None:  # type: ignore[no-untyped-def]
    from services.bench import jobs
    from services.bench.view.costs import cheapest_line, cost_frontier, sweep_cost_points

    run = jobs.get_run(priced_sweep)
    summary = run.summary
    expected = cheapest_line(summary, run.spec.slo)
    assert expected is not None and expected.startswith("Cheapest meeting the SLOs: slow-cheap at ")
    points = sweep_cost_points(summary)
    front = cost_frontier(points)
    assert len(front) >= 2  # the fast engine is faster per user, the slow one cheaper

    app_page.set_viewport_size({"width": 1440, "height": 3200})
    app_page.goto(f"{app_server.url}/benchmarks?run={priced_sweep}")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    app_page.get_by_text("Cost (the price per hour the run used").wait_for()
    # The cheapest configuration is named with its step, in the words the service wrote.
    app_page.get_by_text(expected).wait_for()
    app_page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    traces = plotted_traces(app_page)
    frontier = next(t for t in traces if t["name"] == "frontier")
    assert frontier["x"] == pytest.approx([p.per_user_tok_s for p in front])
    assert frontier["y"] == pytest.approx([p.usd_per_1m for p in front])
    # One series per engine, each point a priced step, at the cost the run stored.
    for name in ("fast-dear", "slow-cheap"):
        mine = sorted((p for p in points if p.series == name), key=lambda p: p.per_user_tok_s)
        assert len(mine) == 2
        assert any(
            t["name"] == name and t["y"] == pytest.approx([p.usd_per_1m for p in mine]) for t in traces
        )
    # The cheapest named is the frontier's cheapest point: the slow engine's busier step.
    cheapest = min(front, key=lambda p: p.usd_per_1m)
    assert cheapest.series == "slow-cheap"
    assert cheapest.label.replace("slow-cheap ", "slow-cheap at ") in expected
    assert_no_missing_words(app_page)
    screenshot(app_page, "benchmarks-cost-frontier")
