"""Issue 45 in Chromium: a blind exchange no operator revealed names no engine and no
per-engine figure on any served screen that takes its run id: the run page, compare, a
follower's view of it (shown as a run and as an exchange) and the session's HTML report made
before the reveal. After the reveal the run page names them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def _main(page) -> str:  # type: ignore[no-untyped-def]
    # text_content, not inner_text: a dataframe's cells (under its canvas) and closed
    # expanders (the stored config) count too.
    return page.locator("[data-testid='stMain']").text_content() or ""


def test_a_hidden_exchange_names_no_engine_on_any_served_screen(  # type: ignore[no-untyped-def]
    app_page, app_server, browser, browser_context_args, monkeypatch
) -> None:
    from db.session import dispose_all
    from services import sessions
    from services.playground import votes
    from services.sessions.records import Shown
    from tests.services.runstate.test_blind_surfaces import OPERATOR, _leaks, hidden_exchange

    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    dispose_all()
    run_id = hidden_exchange()
    page = app_page
    url = app_server.url

    page.goto(f"{url}/runs?run={run_id}")
    wait_for_app(page)
    page.get_by_text("engines hidden until revealed").first.wait_for()
    text = _main(page)
    screenshot(page, "blind-run-page")
    assert_no_exception(page)
    assert "Answer A" in text and "Answer B" in text
    assert not _leaks(text), _leaks(text)

    page.goto(f"{url}/runs?compare={run_id}")
    wait_for_app(page)
    page.get_by_text("blind exchange").first.wait_for()
    assert not _leaks(_main(page)), _leaks(_main(page))

    info, presenter = sessions.start(OPERATOR, "presenter-tab", "Blind demo")
    follower = browser.new_context(**browser_context_args).new_page()
    follower.set_default_timeout(60_000)
    try:
        for kind in ("run", "exchange"):
            sessions.publish(presenter, Shown(kind=kind, run_ids=(run_id,)))
            follower.goto(f"{url}/session?join={info.join_code}")
            wait_for_app(follower)
            follower.get_by_text("Answer A").first.wait_for()
            assert_no_exception(follower)
            assert not _leaks(_main(follower)), (kind, _leaks(_main(follower)))
        screenshot(follower, "blind-follower")

        page.goto(f"{url}/session?session={info.id}")
        wait_for_app(page)
        with page.expect_download() as download:
            page.locator(f".st-key-session_report_{info.id} button").click()
        report = Path(download.value.path()).read_text()
        assert "Answer A" in report
        assert not _leaks(report), _leaks(report)
    finally:
        follower.context.close()

    votes.reveal(run_id, OPERATOR)
    page.goto(f"{url}/runs?run={run_id}")
    wait_for_app(page)
    page.get_by_text("zebra-engine").first.wait_for()
    assert re.search("yak-engine", _main(page))
    dispose_all()
