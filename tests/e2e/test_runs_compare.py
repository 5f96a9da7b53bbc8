"""The Runs page in Chromium: pick two runs in the history, compare them, and open the
comparison's address in a fresh page (what a colleague does with a shared link)."""

from __future__ import annotations

import numpy as np
import pytest

from services.runs import display
from tests.e2e.conftest import (
    assert_no_exception,
    assert_no_missing_words,
    plotted_traces,
    screenshot,
    wait_for_app,
)
from tests.services.runs.test_runs import engine_summary, make_run

pytestmark = pytest.mark.e2e


@pytest.fixture
def two_stored_runs(app_server, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Two benchmark runs in the app server's own database."""
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    rng = np.random.default_rng(3)
    before = make_run(
        name="e2e before: vLLM 0.10",
        engines={"vllm": engine_summary(0.120, 0.020, 2.0, 450.0)},
        requests={"vllm": list(rng.gamma(9, 0.0133, 300))},
        versions={"vllm": "0.10.2"},
        tags=["e2e"],
        info={"vllm": {"cache_config_info": {"block_size": "16", "enable_prefix_caching": "False"}}},
    )
    after = make_run(
        name="e2e after: vLLM 0.11",
        engines={"vllm": engine_summary(0.080, 0.018, 1.6, 610.0)},
        requests={"vllm": list(rng.gamma(9, 0.0089, 300))},
        versions={"vllm": "0.11.0"},
        tags=["e2e"],
        info={"vllm": {"cache_config_info": {"block_size": "16", "enable_prefix_caching": "True"}}},
    )
    return before, after


def test_compare_two_runs_from_the_history(app_page, app_server, two_stored_runs) -> None:  # type: ignore[no-untyped-def]
    before, after = two_stored_runs
    app_page.set_viewport_size({"width": 1440, "height": 2800})  # the whole comparison in one screenshot
    app_page.goto(f"{app_server.url}/runs?tag=e2e")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    select = app_page.locator(".st-key-runs_selected")
    for run_id in (before, after):
        select.locator("input").click()
        app_page.get_by_role("option", name=f"#{run_id} ").first.click()
        wait_for_app(app_page)
    app_page.keyboard.press("Escape")
    app_page.locator(".st-key-runs_compare button").click()
    wait_for_app(app_page)
    app_page.get_by_role("heading", name=f"Compare #{before}, #{after}").wait_for()
    assert f"compare={before}%2C{after}" in app_page.url or f"compare={before},{after}" in app_page.url
    assert_no_exception(app_page)
    verdict = app_page.get_by_text(f"TTFT (median): #{after} vllm is fastest")
    verdict.wait_for()
    assert "beyond within-run sampling noise" in verdict.inner_text()
    app_page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    assert_no_missing_words(app_page)
    # Issue 19: what the charts plot is what the table says. Latency against throughput puts
    # each run at its output tokens/s and its p50 TTFT, the figures of the percentile table.
    table = display.comparison_view([before, after]).table.set_index("Metric")
    traces = {t["name"]: t for t in plotted_traces(app_page) if t["x"]}
    for run_id in (before, after):
        point = next(t for name, t in traces.items() if name == f"#{run_id} vllm" and len(t["x"]) == 1)
        column = next(c for c in table.columns if c.startswith(f"#{run_id} vllm"))
        assert f"{point['x'][0]:.1f} tok/s" == table.loc["Output throughput", column]
    screenshot(app_page, "runs-compare")


def test_shared_comparison_address_opens_the_same_view(app_page, app_server, two_stored_runs) -> None:  # type: ignore[no-untyped-def]
    before, after = two_stored_runs
    app_page.goto(f"{app_server.url}/runs?compare={before},{after}&baseline={after}:vllm")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    app_page.get_by_role("heading", name=f"Compare #{before}, #{after}").wait_for()
    app_page.get_by_text(f"Changes are against the baseline, #{after} vllm").wait_for()
    app_page.get_by_role("heading", name="Engine settings").scroll_into_view_if_needed()
    charts = app_page.locator("[data-testid='stPlotlyChart'] .main-svg")
    charts.nth(1).wait_for()  # the CDF and the latency-throughput curve
    screenshot(app_page, "runs-compare-shared")
