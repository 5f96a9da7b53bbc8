"""One run's page in Chromium, opened by its address as a colleague would from a shared link:
the figures come with what qualifies them, and so does the HTML report downloaded from it."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, assert_no_missing_words, screenshot, wait_for_app
from tests.services.runs.test_caveats import caveated_run

pytestmark = pytest.mark.e2e


@pytest.fixture
def stored_run(app_server, monkeypatch: pytest.MonkeyPatch) -> int:  # type: ignore[no-untyped-def]
    """A client-bound llama.cpp benchmark (concurrency 4, 2 warm-up, min_tokens ignored) in
    the app server's own database."""
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    return caveated_run("e2e caveats")


def test_a_shared_run_shows_its_load_verdict_and_notes(app_page, app_server, stored_run) -> None:  # type: ignore[no-untyped-def]
    app_page.set_viewport_size({"width": 1440, "height": 2400})
    app_page.goto(f"{app_server.url}/runs?run={stored_run}")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    app_page.get_by_role("heading", name=f"Run #{stored_run}: e2e caveats").wait_for()
    app_page.get_by_role("heading", name="What qualifies these figures").wait_for()
    main = app_page.locator("[data-testid='stMain']")
    text = main.inner_text()
    for words in (
        "Client-bound: the load generator, not the engine, limited some of these figures.",
        "Load: concurrency 4, 20 requests per engine.",
        "Warm-up: 2 request(s) per engine before the measured ones",
        "Generator self-check: TTFT and ITL percentiles may be up to ~6.0 ms too high",
        "Self-check evidence: llamacpp: CLIENT-BOUND (event-loop lag p99 6.0 ms > 2 ms)",
        "llamacpp ignores min_tokens (its kind does not take them).",
        "Input length: 64 tokens asked per request, before the chat template",
    ):
        assert words in text, words
    assert_no_missing_words(app_page)
    screenshot(app_page, "runs-run-caveats")
    export = app_page.get_by_role("link", name="HTML report", exact=True)
    report = app_page.request.get(f"{app_server.url}/{export.get_attribute('href')}").text()
    for words in (
        "<h2>What qualifies these figures</h2>",
        "Client-bound: the load generator, not the engine, limited some of these figures.",
        "Load: concurrency 4, 20 requests per engine.",
        "Warm-up: 2 request(s) per engine",
        "llamacpp: CLIENT-BOUND (event-loop lag p99 6.0 ms &gt; 2 ms)",
        "llamacpp ignores min_tokens",
    ):
        assert words in report, words


def test_a_shared_comparison_keeps_each_runs_caveats(app_page, app_server, stored_run) -> None:  # type: ignore[no-untyped-def]
    other = caveated_run("e2e caveats, again")
    app_page.set_viewport_size({"width": 1440, "height": 2800})
    app_page.goto(f"{app_server.url}/runs?compare={stored_run},{other}")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    app_page.get_by_role("heading", name="What qualifies these figures").wait_for()
    text = app_page.locator("[data-testid='stMain']").inner_text()
    assert text.count("Load: concurrency 4, 20 requests per engine.") == 2
    assert text.count("llamacpp ignores min_tokens (its kind does not take them).") == 2
    assert_no_missing_words(app_page)
    screenshot(app_page, "runs-compare-caveats")
