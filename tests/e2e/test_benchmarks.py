"""The Benchmarks page in Chromium: a small benchmark over two real local engines, started
from the form, completes in its worker and shows its tables and charts."""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.conftest import (
    assert_no_exception,
    assert_no_missing_words,
    pick_engines,
    plotted_traces,
    screenshot,
    wait_for_app,
)

pytestmark = [pytest.mark.e2e, pytest.mark.engines]


@pytest.fixture
def two_engines(app_server, all_local_engines_up, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    from services import local_engines
    from services.engines import endpoints

    registered = {e.name for e in endpoints.list_engines()}
    for spec in local_engines.specs():
        if spec.id in ("llamacpp-4slot", "vllm-cpu") and spec.id not in registered:
            endpoints.register_local(spec)
    return ["llamacpp-4slot", "vllm-cpu"]


def test_small_benchmark_over_two_local_engines(app_page, app_server, two_engines) -> None:  # type: ignore[no-untyped-def]
    from services.bench import jobs

    app_page.goto(f"{app_server.url}/benchmarks")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    # The form starts from the default pick: pick_engines clears it and types each name, as
    # the Demos test does (an option already picked is not in the list to click).
    two_engines = pick_engines(app_page, two_engines)  # the order the run follows
    app_page.keyboard.press("Escape")
    for key, value in (
        ("bench_input_len", "32"),
        ("bench_output_len", "8"),
        ("bench_requests", "3"),
        ("bench_concurrency", "2"),
        ("bench_warmup", "0"),
    ):
        field = app_page.locator(f".st-key-{key} input")
        field.fill(value)
        field.press("Enter")
        wait_for_app(app_page)
    app_page.locator(".st-key-bench_start button").click()
    wait_for_app(app_page)
    app_page.wait_for_url(re.compile(r".*run=\d+"))
    run_id = int(re.search(r"run=(\d+)", app_page.url).group(1))
    assert_no_exception(app_page)
    deadline = time.monotonic() + 300
    while jobs.get_run(run_id).active and time.monotonic() < deadline:
        time.sleep(0.5)
    assert jobs.get_run(run_id).status == "finished"
    app_page.reload()
    wait_for_app(app_page)
    assert_no_exception(app_page)
    app_page.get_by_text("Status: finished").wait_for()
    app_page.get_by_text("Latency percentiles").wait_for()
    app_page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    assert app_page.locator("[data-testid='stPlotlyChart']").count() >= 3
    summary = jobs.get_run(run_id).summary
    assert [summary["engines"][name]["completed"] for name in two_engines] == [3, 3]
    assert_no_missing_words(app_page)
    # Issue 19: the token-rate chart agrees with the table beside it. The table's output
    # tokens/s is drawn as each engine's run average; the 1 s bins add up to its output tokens.
    from services.bench import view as views

    table = views.throughput_table(summary).set_index("engine")
    traces = {t["name"]: t for t in plotted_traces(app_page)}
    for name in two_engines:
        shown = float(table.loc[name, "output tok/s"])
        average = next(t for n, t in traces.items() if n.startswith(f"{name} run average"))
        assert average["y"][0] == pytest.approx(shown, rel=0.01)
        bins = traces[f"{name} tok/s"]["y"][:-1]  # the last point only closes the last bin's step
        assert sum(bins) == summary["engines"][name]["output_tokens"]
        assert min(bins) >= 0
    # Engines run one after another are drawn one after another on the timeline.
    first_start = {name: min(t["x"]) for name, t in traces.items() if name.endswith(" tok/s") and t["x"]}
    assert first_start[f"{two_engines[1]} tok/s"] > first_start[f"{two_engines[0]} tok/s"]
    screenshot(app_page, "benchmarks-two-engines")
