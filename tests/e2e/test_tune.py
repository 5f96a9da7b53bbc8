"""The Tune page in Chromium: a real 2 x 2 llama.cpp grid (tiny load, free ports) shows its
table, both throughput-against-latency charts with the Pareto front, the winner and its
launch commands; a tuning run started from the page's form runs in its worker."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import assert_no_exception, plotted_traces, screenshot, wait_for_app
from tests.support.tune import wait_until_ended

pytestmark = [pytest.mark.e2e, pytest.mark.engines]


@pytest.fixture
def app_database(app_server, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    return app_server


def test_the_page_shows_the_pareto_front_of_a_real_grid(app_page, app_database) -> None:  # type: ignore[no-untyped-def]
    from services.bench.arrivals import LoadSpec
    from services.bench.stats import SloSpec
    from services.bench.workloads import WorkloadSpec
    from services.tune import jobs
    from services.tune.spec import TuneSpec

    spec = TuneSpec(
        kind="llamacpp",
        grid={"np": ("1", "2"), "ctk": ("f16", "q8_0")},
        slo=SloSpec(ttft_ms=5000),
        workload=WorkloadSpec(input_len=16, output_len=8),
        load=LoadSpec(concurrency=2, requests=4),
    )
    run_id = jobs.start_tuning(spec)  # its worker process (Playwright holds this thread's event loop)
    view = wait_until_ended(run_id, 180)
    assert view.status == "finished", view.configs
    summary = view.summary
    app_page.goto(f"{app_database.url}/tune?run={run_id}")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    main = app_page.locator("[data-testid='stMain']")
    app_page.get_by_text("Best configuration", exact=True).wait_for()
    text = main.inner_text()
    assert summary["best"]["label"] in text and "the highest goodput" in text
    # The launch commands come after the charts; on a busy machine they land a moment later.
    app_page.locator("[data-testid='stCode']", has_text="docker run").first.wait_for()
    screenshot(app_page, "tune-pareto")
    codes = app_page.locator("[data-testid='stCode']").all_inner_texts()
    assert any(code.startswith("docker run") and "-np" in code for code in codes), codes
    traces = plotted_traces(app_page)
    fronts = [t for t in traces if t["name"] == "Pareto front"]
    assert len(fronts) == 2, traces
    for front, metric in zip(fronts, ("ttft_s", "itl_s"), strict=True):
        assert len(front["x"]) == len(summary["pareto"][metric]) >= 1
        # Along the front, lower latency never comes with higher throughput.
        assert front["x"] == sorted(front["x"]) and front["y"] == sorted(front["y"])
    points = sum(len(t["x"]) for t in traces)
    assert points == 8  # 4 configurations on each chart, on the front or dominated
    app_page.locator("[data-testid='stPlotlyChart']").first.scroll_into_view_if_needed()
    screenshot(app_page, "tune-pareto-charts")


def test_a_tuning_run_started_from_the_form_runs_in_its_worker(app_page, app_database) -> None:  # type: ignore[no-untyped-def]
    from services.core.processes import pid_alive

    app_page.goto(f"{app_database.url}/tune")
    wait_for_app(app_page)
    grid = app_page.locator(".st-key-tune_grid textarea")
    grid.fill("np=1,2")
    app_page.locator(".st-key-tune_requests input").fill("3")
    app_page.locator(".st-key-tune_requests input").press("Enter")
    wait_for_app(app_page)
    app_page.locator(".st-key-tune_start button").click()
    wait_for_app(app_page)
    deadline = time.monotonic() + 120
    while "run=" not in app_page.url and time.monotonic() < deadline:
        app_page.wait_for_timeout(300)
    run_id = int(app_page.url.split("run=")[1].split("&")[0])
    view = wait_until_ended(run_id, 120)
    assert view.status == "finished", view.configs
    assert [c["label"] for c in view.configs] == ["np=1", "np=2"]
    assert all(not pid_alive(c["pid"]) for c in view.configs)
    app_page.reload()
    wait_for_app(app_page)
    app_page.get_by_text("Best configuration", exact=True).wait_for()
    assert_no_exception(app_page)
    screenshot(app_page, "tune-from-form")
